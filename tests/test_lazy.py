"""Laziness is declared once (CONTRIBUTING.md): each package's lazy map hands on real names, and an
import of a vilbias module inside a function is a rare exception that says why it is there."""

from __future__ import annotations

import ast
import importlib
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

from vilbias.lazy import attach

ROOT = Path(__file__).resolve().parents[1]
# src/vilbias, and the folders setuptools maps into the package (vilbias.training, ...)
SOURCES = ["src/vilbias", "training", "spaces", "loading_script", "dataset_card"]
LAZY_PACKAGES = ["vilbias.models", "vilbias.corpus", "vilbias.evaluate", "vilbias.spaces", "vilbias.ingest", "vilbias.audit",
                 "vilbias.annotate", "vilbias.review"]
MOST_LOCAL_IMPORTS = 10
"""The house's ceiling on function-local imports of vilbias modules outside the cli.py files."""


def local_vilbias_imports() -> list[tuple[Path, int]]:
    """``(file, line)`` of every import of a vilbias module inside a function, cli.py files aside
    (a command's module imports its stage when the command runs)."""
    found = []
    for root in SOURCES:
        for path in sorted((ROOT / root).rglob("*.py")):
            if path.name == "cli.py":
                continue
            for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                for node in ast.walk(fn):
                    if isinstance(node, ast.ImportFrom) and node.module and (node.module.startswith("vilbias") or node.level):
                        found.append((path, node.lineno))
                    elif isinstance(node, ast.Import) and any(a.name.startswith("vilbias") for a in node.names):
                        found.append((path, node.lineno))
    return found


def says_why(lines: list[str], lineno: int) -> bool:
    """A ``# why:`` comment on the import's line or among the comments and imports just above it
    (an import block the sorter splits into groups by blank lines counts as one)."""
    if "# why:" in lines[lineno - 1]:
        return True
    for line in reversed(lines[:lineno - 1]):
        text = line.strip()
        if text.startswith("# why:"):
            return True
        if text and not text.startswith(("#", "from ", "import ")):
            return False
    return False


def test_function_local_imports_are_few_and_each_says_why():
    found = local_vilbias_imports()
    where = [f"{path.relative_to(ROOT)}:{line}" for path, line in found]
    assert len(found) <= MOST_LOCAL_IMPORTS, f"{len(found)} function-local vilbias imports: {where}"
    unexplained = [w for w, (path, line) in zip(where, found, strict=True)
                   if not says_why(path.read_text(encoding="utf-8").splitlines(), line)]
    assert not unexplained, f"a function-local import without a '# why:' comment: {unexplained}"


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_importing_a_lazy_package_imports_none_of_its_modules(package):
    code = (f"import sys, {package} as p\n"
            "print(*sorted(m for m in sys.modules if m.startswith(p.__name__ + '.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == [], f"importing {package} imported {out}"


def test_every_declared_name_resolves_to_its_modules_object():
    for package in LAZY_PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            value = getattr(module, name)
            assert value is not None and name in dir(module)
            if inspect.isclass(value) or inspect.isfunction(value):  # defined in the package, not re-exported
                assert value.__module__.startswith(package.rsplit(".", 1)[0]), (package, name, value.__module__)


def test_a_map_refuses_a_name_declared_twice_and_an_unknown_name():
    with pytest.raises(ValueError, match="'build' is declared by both 'pipeline' and 'plan'"):
        attach("vilbias.corpus", {"pipeline": ["build"], "plan": ["build"]})
    import vilbias.corpus

    with pytest.raises(AttributeError, match="has no attribute 'nothing_here'"):
        vilbias.corpus.nothing_here  # noqa: B018
    from vilbias.corpus import pipeline  # a submodule is still found as one

    assert pipeline.__name__ == "vilbias.corpus.pipeline"


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_the_type_checking_twin_names_exactly_the_lazy_map(package):
    """Editors and type checkers read the package's ``if TYPE_CHECKING:`` imports; run time reads
    ``_import_structure``: the two name the same modules and names."""
    module = importlib.import_module(package)
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    guard = next(n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", None) == "TYPE_CHECKING")
    twin = {node.module.removeprefix(package + "."): sorted(a.name for a in node.names) for node in guard.body
            if isinstance(node, ast.ImportFrom)}
    assert twin == {m: sorted(names) for m, names in module._import_structure.items()}


def test_one_way_to_be_lazy():
    """No package keeps a hand-written export table or a module ``__getattr__`` of its own: the lazy
    map (vilbias.lazy.attach) is the one mechanism. (The Space's app builds its gradio ``demo`` on
    first access, gradio's reload convention, not an import.)"""
    offenders = []
    for root in SOURCES:
        for path in sorted((ROOT / root).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in tree.body:
                if isinstance(node, ast.FunctionDef) and node.name == "__getattr__" and path.name != "app.py":
                    offenders.append(f"{path.relative_to(ROOT)}: module __getattr__")
                if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "_EXPORTS" for t in node.targets):
                    offenders.append(f"{path.relative_to(ROOT)}: _EXPORTS")
    assert not offenders, offenders
