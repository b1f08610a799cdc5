"""docs/architecture.md is drawn from today's code: it names every package and module of the
library, and every folder the package maps in, so a newcomer's map is the house."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def test_every_package_and_module_of_the_library_is_named():
    lib = ROOT / "src" / "vilbias"
    packages = sorted(p.name for p in lib.iterdir() if (p / "__init__.py").is_file())
    modules = sorted(p.name for p in lib.glob("*.py") if p.name != "__init__.py")
    missing = [f"{name}/" for name in packages if f"{name}/" not in DOC] + [m for m in modules if m not in DOC]
    assert not missing, f"docs/architecture.md does not name {missing}"


def test_every_mapped_folder_and_the_models_modules_are_named():
    mapped = re.findall(r'"vilbias\.[\w.]+" = "(\w+)"', (ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert mapped and all(f"{folder}/" in DOC for folder in mapped), mapped
    models = sorted(p.name for p in (ROOT / "src/vilbias/models").glob("*.py") if p.name != "__init__.py")
    assert [m for m in models if m not in DOC] == []
    assert all(f"{name}/" in DOC for name in ("tools", "benchmarks", "tests"))


def test_the_repository_stands_alone():
    """Nothing in the docs, the tests or the code cites a text outside the repository: every
    upper-case markdown file named (README.md, CONTRIBUTING.md, …) is one the repository holds, and
    no numbered rule of a text a maintainer does not have is cited."""
    held = {p.name for p in ROOT.rglob("*.md") if not {".git", ".venv"} & set(p.parts)}
    cited = []
    for path in [*ROOT.glob("*.md"), *(ROOT / "docs").rglob("*.md"), *(ROOT / "tests").rglob("*.py"), *(ROOT / "src").rglob("*.py")]:
        text = path.read_text(encoding="utf-8")
        missing = {name for name in re.findall(r"\b([A-Z][A-Z_]+\.md)\b", text) if name not in held}
        if missing or re.search(r"\bhabits? \d+\b", text):
            cited.append(f"{path.relative_to(ROOT)}: {sorted(missing) or 'a numbered habit'}")
    assert not cited, cited
