"""The sample's generators live in tools/sample (not in the wheel) and reproduce the shipped sample."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "src" / "vilbias" / "sample"


def _script(name: str):
    path = ROOT / "tools" / "sample" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_sample_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_regenerating_reproduces_the_shipped_sample(tmp_path):
    copy = tmp_path / "sample"
    shutil.copytree(SAMPLE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    for image in (copy / "images").iterdir():
        image.unlink()  # drawn again from the scene descriptions, not kept from the copy
    (copy / "annotations.jsonl").unlink()
    assert _script("make_images").main(copy) == 0
    assert _script("make_annotations").main(copy) == 0
    shipped = {k: v for k, v in _files(SAMPLE).items() if "__pycache__" not in k}
    assert _files(copy) == shipped


def test_the_generators_are_not_in_the_package():
    assert not list(SAMPLE.glob("make_*.py"))
    assert importlib.util.find_spec("vilbias.sample.make_images") is None
