"""The ``vilbias`` command: every stage answers --help, and expected failures are one line."""

from __future__ import annotations

import pytest

from vilbias.cli import STAGES, main


@pytest.mark.parametrize("stage", list(STAGES))
def test_every_stage_answers_help(stage, capsys):
    with pytest.raises(SystemExit) as e:
        main([stage, "--help"])
    assert e.value.code == 0
    assert f"vilbias {stage}" in capsys.readouterr().out


def test_top_level_help_lists_the_stages(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert all(stage in out for stage in STAGES)


def test_an_expected_failure_is_one_clear_line(tmp_path, capsys):
    assert main(["build", "--workdir", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("vilbias build: error:") and "Traceback" not in err
