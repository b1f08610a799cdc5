"""Every docstring example in the product runs (``>>>`` lines are doctests, not decoration)."""

from __future__ import annotations

import doctest
import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HOMES = ("src/vilbias", "training", "spaces", "loading_script")
WITH_EXAMPLES = sorted(p for home in HOMES for p in (ROOT / home).rglob("*.py") if re.search(r"^\s*>>> ", p.read_text(encoding="utf-8"), re.M))


PACKAGES = {"src/vilbias": "vilbias", "training": "vilbias.training", "spaces": "vilbias.spaces",
            "loading_script": "vilbias.loading_script"}


def _module(path: Path):
    # a module of the package by its own name (a second copy would register its model kinds twice);
    # a file outside any package (an evaluate metric script) by its path
    for home, package in PACKAGES.items():
        rel = path.relative_to(ROOT)
        if rel.is_relative_to(home) and all((ROOT / home / part).joinpath("__init__.py").is_file()
                                             for part in [Path(*rel.relative_to(home).parts[:i]) for i in range(len(rel.parts) - len(Path(home).parts))]):
            dotted = ".".join([package, *rel.relative_to(home).with_suffix("").parts])
            return importlib.import_module(dotted)
    spec = importlib.util.spec_from_file_location(f"_doctest_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_examples_are_found():
    assert {p.name for p in WITH_EXAMPLES} >= {"f1.py", "accuracy.py", "argparser.py"}


@pytest.mark.parametrize("path", WITH_EXAMPLES, ids=lambda p: str(p.relative_to(ROOT)))
def test_docstring_examples_run(path):
    result = doctest.testmod(_module(path), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.attempted > 0 and result.failed == 0
