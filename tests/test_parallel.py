"""The suite's own tables in tests/conftest.py name tests that exist, and its units keep a file's
tests together: a renamed test or file must not silently leave the fast tier or the scheduling."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from tests import conftest

ROOT = Path(__file__).resolve().parents[1]


@functools.cache
def _source(file: str) -> str | None:
    """A test file's text (read once: the durations record names each file's tests)."""
    path = ROOT / file
    return path.read_text(encoding="utf-8") if path.is_file() else None


def _defined(entry: str) -> bool:
    """Whether ``file`` or ``file::function[param]`` names a file, and a test function in it."""
    file, _, rest = entry.partition("::")
    source = _source(file)
    if source is None:
        return False
    function = rest.split("[")[0]
    return not function or re.search(rf"^def {re.escape(function)}\(", source, re.M) is not None


def _files_asking_for(fixtures: str, under: str = "tests") -> set[str]:
    """The test files under ``under`` with a test or fixture function that takes one of the
    fixtures the regular expression ``fixtures`` matches."""
    return {str(p.relative_to(ROOT)) for p in (ROOT / under).rglob("test_*.py")
            if re.search(rf"^def \w*\((.*\W)?({fixtures})\W", p.read_text(encoding="utf-8"), re.M)}


@pytest.mark.parametrize("table", ["SLOW", "SHARED_FILES"])
def test_every_entry_names_a_test_that_exists(table):
    entries = [e for e in getattr(conftest, table) if e not in conftest.SHARED_FILES.values()]
    assert entries
    missing = [e for e in entries if not _defined(e)]
    assert not missing, f"{table} in tests/conftest.py names tests that are not there: {missing}"


def test_a_file_is_one_unit_unless_shared():
    assert conftest.xdist_unit("tests/corpus/test_build.py::test_a[x]") == "tests/corpus/test_build.py"
    assert conftest.xdist_unit("tests/corpus/test_build.py::test_b") == "tests/corpus/test_build.py"
    assert conftest.xdist_unit("tests/annotate/test_smollm2.py::test_a") == conftest.xdist_unit("tests/audit/test_annotators.py::test_b")


def test_the_files_using_the_fork_server_are_one_unit():
    """One test process starts the fork server (tests/forks.py): every file whose tests ask for it
    (``forks``, or ``command_python``, which uses it) runs in the process that holds it."""
    users = _files_asking_for("forks|command_python")
    assert len(users) >= 5
    assert {conftest.xdist_unit(f"{file}::test_x") for file in users} == {"forks"}


def test_units_are_costed_by_their_tests_recorded_seconds():
    durations = {"tests/a.py::test_1": 2.0, "tests/a.py::test_2": 3.0, "tests/test_stops.py::test_x": 40.0,
                 "tests/test_benchmarks.py::test_y[z]": 30.0}
    nodeids = [*durations, "tests/b.py::test_new"]
    assert conftest.unit_costs(nodeids, durations) == {"tests/a.py": 5.0, "forks": 70.0, "tests/b.py": conftest.UNKNOWN_DURATION}


def test_the_recorded_durations_name_most_of_the_tests():
    """tests/durations.json is refreshed when it no longer describes the suite (CONTRIBUTING.md)."""
    recorded = conftest._recorded_durations()
    assert len(recorded) > 1000
    stale = [nodeid for nodeid in recorded if not _defined(nodeid.split("[")[0])]
    assert len(stale) < 0.05 * len(recorded), f"refresh tests/durations.json: {len(stale)} of its tests are gone, e.g. {stale[:3]}"


def test_the_files_using_the_running_space_are_one_unit():
    """The Space's server is built once and closed when its package is done (tests/spaces/conftest.py):
    every file whose tests ask for it runs in the one process that holds it."""
    users = _files_asking_for("(strict_)?space", under="tests/spaces")
    assert len(users) >= 5
    assert {conftest.xdist_unit(f"{file}::test_x") for file in users} == {"space"}


def test_slow_marks_a_listed_function_with_all_its_parameters_and_nothing_beside_it():
    class Item:
        def __init__(self, nodeid, fixturenames=()):
            self.nodeid, self.fixturenames = nodeid, fixturenames

    entry = next(e for e in conftest.SLOW if "::" in e and "[" not in e)
    assert conftest._is_slow(Item(entry)) and conftest._is_slow(Item(entry + "[a-1]"))
    assert not conftest._is_slow(Item(entry + "_and_more"))
    assert conftest._is_slow(Item("tests/test_task.py::test_x", fixturenames=("tmp_path", "_smollm2_loaded")))
    assert not conftest._is_slow(Item("tests/test_task.py::test_x", fixturenames=("tmp_path",)))


def test_auto_starts_a_worker_per_core_and_one_more_unless_told(monkeypatch):
    """``-n auto``: the cores this process may use plus EXTRA_WORKERS; the variable pytest-xdist
    reads, and ``-n logical``, are left to pytest-xdist's own hook (None: the next hook answers)."""
    from types import SimpleNamespace

    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    monkeypatch.setattr(conftest.os, "sched_getaffinity", lambda pid: {0, 1})
    auto = SimpleNamespace(option=SimpleNamespace(numprocesses="auto"))
    assert conftest.pytest_xdist_auto_num_workers(auto) == 2 + conftest.EXTRA_WORKERS == 3
    assert conftest.pytest_xdist_auto_num_workers(SimpleNamespace(option=SimpleNamespace(numprocesses="logical"))) is None
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "2")
    assert conftest.pytest_xdist_auto_num_workers(auto) is None
