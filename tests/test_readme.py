"""The README's commands work as printed: the quick start's build, then its Python snippet, in
the same directory, and the folder it builds does not shadow the installed package."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_quick_start_build_then_the_load_snippet_in_the_same_directory(tmp_path):
    quick_start = _blocks("bash")[0]
    assert ".venv/bin/vilbias build" in quick_start and quick_start.count("\n") == 1
    snippet = next(b for b in _blocks("python") if "load_dataset(" in b)
    code = (
        "import os, sys\n"
        f"os.chdir({str(tmp_path)!r})\n"
        "from vilbias.cli import main\n"
        "assert main(['build']) == 0\n"
        + snippet
        + "\nassert set(ds) == {'train', 'validation', 'test'} and set(fold) == {'train', 'test'}\n"
        "assert 'messages' in sft['train'].column_names\n"
        "import vilbias.task\n"
        f"assert not vilbias.task.__file__.startswith({str(tmp_path)!r})\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert (tmp_path / "BiasCorpus" / "README.md").is_file()
