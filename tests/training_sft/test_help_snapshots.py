"""`vilbias train classifier|sft --help` print the parsers' help rendered ahead of time (their
parsers import torch); the snapshots equal the live help for the installed versions, and a
snapshot for other versions is never printed."""

from __future__ import annotations

import subprocess
import sys

import pytest
from vilbias.training import cli

COMMANDS = sorted(cli.COMMANDS)


SEPARATOR = "\n--- vilbias help snapshot test: next command ---\n"


@pytest.fixture(scope="module")
def live_help():
    """``{command: cli.render_help(command)}``, the live help of every command: the script and
    environment ``render_help`` runs each in a fresh process, run for all of them in one process
    (each import of torch, transformers and trl costs seconds; every parser is built anew, with
    the same ``COLUMNS``, so the help is the same)."""
    from unittest import mock

    calls = []

    def record(argv, **kwargs):
        calls.append((argv, kwargs))
        return subprocess.CompletedProcess(argv, 0, stdout="", stderr="")

    with mock.patch.object(subprocess, "run", record):
        assert all(cli.render_help(command) == "" for command in COMMANDS)
    (python, flag, _), kwargs = calls[0]
    assert len(calls) == len(COMMANDS) and all(argv[:2] == [python, flag] and kw == kwargs for argv, kw in calls)
    code = f"\nprint({SEPARATOR!r}, end='')\n".join(argv[2] for argv, _ in calls)
    out = subprocess.run([python, flag, code], **kwargs).stdout
    return dict(zip(COMMANDS, out.split(SEPARATOR), strict=True))


@pytest.mark.parametrize("command", COMMANDS)
def test_the_snapshot_is_the_live_help(command, live_help):
    header, _, text = (cli.HELP_DIR / f"{command}.txt").read_text(encoding="utf-8").partition("\n")
    assert header == cli.versions_line(), "regenerate: python -m vilbias.training.cli --render-help"
    assert text == live_help[command]
    assert text.startswith(f"usage: vilbias train {command} ")


@pytest.mark.parametrize("command", COMMANDS)
def test_help_imports_no_torch(command):
    code = ("import sys\nfrom vilbias.cli import main\n"
            f"assert main(['train', {command!r}, '--help']) == 0\n"
            "print('imported:', *(m for m in ('torch', 'trl', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == "imported:" and f"usage: vilbias train {command}" in out


def test_a_snapshot_for_other_versions_is_not_printed(tmp_path, monkeypatch):
    (tmp_path / "classifier.txt").write_text("# vilbias 0.0.0, transformers 1.0\nstale help\n", encoding="utf-8")
    monkeypatch.setattr(cli, "HELP_DIR", tmp_path)
    assert cli._help_snapshot("classifier", ["--help"]) is None
    assert cli._help_snapshot("classifier", ["--dataset", "x"]) is None
