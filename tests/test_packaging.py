"""The wheel carries what an installed vilbias needs: builder, card template, sample, recipes."""

from __future__ import annotations

import os
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(ROOT)],
        check=True, capture_output=True, env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    (whl,) = dist.glob("vilbias-*.whl")
    return whl


def test_wheel_contents(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in [
        "vilbias/cli.py",
        "vilbias/loading_script/biascorpus.py",
        "vilbias/dataset_card/README.md.jinja",
        "vilbias/sample/articles.jsonl",
        "vilbias/sample/annotations.jsonl",
        "vilbias/training/cli.py",
        "vilbias/spaces/__init__.py",
        "vilbias/annotate/prompts/text.txt",
        "vilbias/annotate/prompts/multimodal.txt",
        "vilbias/publish/templates/model_card.md",
        "vilbias/publish/templates/sentence/summary.md",
        "vilbias/publish/templates/classifier/usage_fusion.py.jinja",
        "vilbias/publish/templates/generic/usage_vlm.py.jinja",
        "vilbias/training/default_model/config.json",
        "vilbias/training/recipes/SmolVLM-Instruct/lora.yaml",
        "vilbias/metrics/f1/f1.py",
        "vilbias/metrics/closed_ended/closed_ended.py",
        "vilbias/audit/probeset/space.json",
        "vilbias/audit/prompts/system.txt",
        "vilbias/annotate/annotators/paper.yaml",
        "vilbias/evaluate/prompts/judge.txt",
    ]:
        assert required in names, required
    assert any(n.startswith("vilbias/sample/images/") for n in names)
    assert not any(n.startswith(("tests/", "benchmarks/")) for n in names)


def test_installed_wheel_builds_outside_the_checkout(wheel, tmp_path):
    venv = tmp_path / "venv"
    # A bare venv (seeding it with its own pip takes ~6 s), installed into by this environment's pip.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True)
    # Dependencies come from this environment's site-packages as a plain path entry: its
    # editable-install hook (a .pth inside it) is not run, so only the wheel provides vilbias.
    purelib = subprocess.check_output([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True).strip()
    Path(purelib, "deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    where = subprocess.check_output([str(py), "-c", "import vilbias; print(vilbias.__file__)"], cwd=work, env=env, text=True)
    assert where.startswith(str(venv))
    out = subprocess.run([str(venv / "bin" / "vilbias"), "build"], cwd=work, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    assert 'load_dataset("BiasCorpus")' in out.stdout
    assert (work / "BiasCorpus" / "README.md").exists() and len(list((work / "BiasCorpus" / "data").glob("*.parquet"))) == 15
    # the built folder does not shadow the installed package, in its own directory
    where = subprocess.check_output([str(py), "-c", "import vilbias.task; print(vilbias.task.__file__)"], cwd=work, env=env, text=True)
    assert where.startswith(str(venv))
