"""``--no-progress`` silences every progress bar a command starts, the libraries' too (issue:
``annotate --no-progress`` still printed transformers' "Loading weights" bars), and a Python
caller's switches are as they were afterwards."""

from __future__ import annotations

import os
import re
import subprocess

import pytest
from datasets.utils import are_progress_bars_disabled as datasets_off
from huggingface_hub.utils import are_progress_bars_disabled as hub_off
from transformers.utils.logging import is_progress_bar_enabled as transformers_on

from tests.fakes.workdirs import make_workdir
from vilbias.progress_flag import follows_progress_flag, progress_bars

BAR = re.compile(r"\d+%\||it/s\]|s/it\]")
"""What a tqdm bar leaves on stderr."""


def _switches() -> tuple[bool, bool, bool]:
    return transformers_on(), hub_off(), datasets_off()


OFF = (False, True, True)


def test_the_libraries_bars_are_off_inside_and_as_they_were_after():
    before = _switches()
    with progress_bars(False):
        assert _switches() == OFF
        with progress_bars(True):  # a nested stage with bars on changes nothing
            assert _switches() == OFF
    assert _switches() == before
    with pytest.raises(RuntimeError), progress_bars(False):
        raise RuntimeError("a stage that fails")
    assert _switches() == before


def test_the_decorator_reads_the_configs_flag_for_plain_and_async_stages():
    import asyncio
    from types import SimpleNamespace

    @follows_progress_flag
    def stage(config):
        return _switches()

    @follows_progress_flag
    async def async_stage(config):
        return _switches()

    before = _switches()
    assert stage(SimpleNamespace(progress=False)) == OFF
    assert stage(SimpleNamespace(progress=True)) == before
    assert asyncio.run(async_stage(SimpleNamespace(progress=False))) == OFF
    assert _switches() == before


@pytest.mark.slow
@pytest.mark.parametrize("flags", [[], ["--no-progress"]], ids=["bars", "no-progress"])
def test_annotate_no_progress_prints_no_bar_at_all(tmp_path, flags, command_python):
    """``vilbias annotate`` as a user runs it (no HF_HUB_DISABLE_PROGRESS_BARS, which the suite
    leaves unset so that this runs as a fork of its fork server): the default annotator loads the
    shipped model (transformers' "Loading weights" bars) and asks its items (the ledger's bar);
    with --no-progress stderr holds neither."""
    workdir = make_workdir(tmp_path / "work", n=2)
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_DISABLE_PROGRESS_BARS"}
    run = subprocess.run([command_python, "-m", "vilbias.cli", "annotate", "--workdir", str(workdir), *flags],
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    if flags:
        assert not BAR.search(run.stderr) and "Loading weights" not in run.stderr, run.stderr
    else:
        assert "Loading weights" in run.stderr and BAR.search(run.stderr)  # what the flag silences is there without it
