"""The house's conventions that a reader relies on (CONTRIBUTING.md): every stage's configs in its
``config.py`` under names that are unique."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def config_classes() -> list[tuple[str, Path]]:
    """``(name, file)`` of every ``*Config`` class of the library and the Space (the model configs,
    ``PretrainedConfig`` subclasses in ``configs.py`` and the checkpoint's own code, aside)."""
    found = []
    for root in ("src/vilbias", "spaces"):
        for path in sorted((ROOT / root).rglob("*.py")):
            if path.name == "configs.py" or "custom_code" in path.parts:
                continue
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if isinstance(node, ast.ClassDef) and node.name.endswith("Config"):
                    found.append((node.name, path))
    return found


def test_every_stage_keeps_its_configs_in_its_config_py():
    outside = [f"{name} in {path.relative_to(ROOT)}" for name, path in config_classes() if path.name != "config.py"]
    assert not outside, outside


def test_config_names_are_unique():
    twice = [name for name, n in Counter(name for name, _ in config_classes()).items() if n > 1]
    assert not twice, twice


LABEL_SPELLINGS = {"biased", "not_biased", "not biased", "Biased", "Not biased", "Not Biased"}
"""The task's labels as code might spell them."""


def test_the_task_s_labels_are_spelled_only_in_task_py():
    """Code reads the labels from vilbias.task (LABEL_NAMES, BIASED_NAME, ANSWER_LABELS); docstrings may
    name them. Exempt: the checkpoint's own code (it runs without vilbias) and the import presets (a
    published release's own label strings, mapped to ours)."""
    spelled = []
    for path in sorted((ROOT / "src/vilbias").rglob("*.py")):
        if path.name in ("task.py", "presets.py") or "custom_code" in path.parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(getattr(n, "value", None), ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in LABEL_SPELLINGS and id(node) not in docstrings:
                spelled.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value!r}")
    assert not spelled, spelled


def test_one_module_opens_sqlite():
    """The resumable call ledger (vilbias.ledger) is the one place that opens SQLite files; stores
    and the stop line go through it."""
    opening = sorted({str(path.relative_to(ROOT)) for root in ("src/vilbias", "spaces", "training")
                      for path in (ROOT / root).rglob("*.py") if "sqlite3.connect(" in path.read_text(encoding="utf-8")})
    assert opening == ["src/vilbias/ledger.py"], opening


LONG = 500
"""Lines past which a module says why it is one module."""


def test_a_module_over_500_lines_says_why_in_its_docstring():
    long = []
    for root in ("src/vilbias", "spaces", "training", "loading_script"):
        for path in sorted((ROOT / root).rglob("*.py")):
            if "default_model" in path.parts:  # a copy of custom_code's file, checked there
                continue
            text = path.read_text(encoding="utf-8")
            doc = ast.get_docstring(ast.parse(text)) or ""
            if text.count("\n") > LONG and "Why this module is long:" not in doc:
                long.append(f"{path.relative_to(ROOT)} ({text.count(chr(10))} lines)")
    assert not long, long
