"""Every benchmark runs: each script in ``benchmarks/`` takes ``--smoke``, a tiny run of every step
(seconds, its figures meaningless), and runs here as ``python SCRIPT --smoke`` runs it, so a change
that breaks a benchmark fails the suite instead of the next measurement. Scratch goes to the test's
folder (the scripts' temporary folders, through ``TMPDIR``; their working directory).

Each runs in a process forked from one that has imported the third-party libraries they share
(the ``forks`` fixture, :mod:`tests.forks`: half of the smoke runs' time was those imports), and
so do the ``vilbias`` commands it starts (``python -m vilbias.cli``: a training run, a demo); its
own imports, vilbias's among them, are fresh. So do the contenders a benchmark starts as
``python SCRIPT --child...`` (peak memory of an import, a build, a training: meaningless in a fork,
as every figure of a smoke run is); any other interpreter it starts is fresh.
``VILBIAS_TESTS_FRESH=1`` runs each in a new interpreter instead, and the scripts that check CUDA
always do."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.real_data import shared_data

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
HELPERS = {"demo_process.py"}
"""Modules the benchmarks import (a running ``vilbias demo``); they run inside bench_space and bench_sentence_speed."""
REAL_DATA = {
    "bench_babe.py": ("babe", "final_labels_SG1.csv"),
    "bench_sentence_int8.py": ("babe", "final_labels_SG2_public.csv"),
    "bench_sentence_reproduce.py": ("babe", "final_labels_SG2_public.csv"),
    "bench_sentence_speed.py": ("news",),
}
"""Scripts that read ``../shared/data`` (real BABE sentences, real news pages): the real-data tier."""
GPU = {"gpu_check_sft.py"}
"""Scripts that check CUDA paths (4-bit QLoRA): they run where a GPU is."""
SCRIPTS = sorted(p.name for p in BENCHMARKS.glob("*.py") if p.name not in HELPERS)


def _param(script: str):
    marks = [pytest.mark.slow]
    if script in REAL_DATA:
        marks.append(pytest.mark.real_data)
    return pytest.param(script, marks=marks, id=script.removesuffix(".py"))


def test_every_benchmark_has_a_smoke_run():
    assert len(SCRIPTS) >= 14
    missing = [s for s in SCRIPTS if '"--smoke"' not in (BENCHMARKS / s).read_text(encoding="utf-8")]
    assert not missing, f"give these a --smoke flag (a tiny run of every step): {missing}"


@pytest.mark.parametrize("script", [_param(s) for s in SCRIPTS])
def test_benchmark_runs(script, tmp_path, forks):
    if script in REAL_DATA:
        shared_data(*REAL_DATA[script])
    if script in GPU:
        import torch

        if not torch.cuda.is_available():
            pytest.skip(f"{script} checks CUDA paths; it runs on a GPU machine")
    env = {**os.environ, "TMPDIR": str(tmp_path), "TQDM_DISABLE": "1"}
    if forks is None or script in GPU:
        done = subprocess.run([sys.executable, str(BENCHMARKS / script), "--smoke"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=540)
    else:
        done = forks.run(BENCHMARKS / script, ["--smoke"], cwd=tmp_path, env=env, timeout=540)
    assert done.returncode == 0, f"{script} --smoke failed:\n{done.stdout[-4000:]}\n{done.stderr[-6000:]}"
    assert done.stdout.strip(), f"{script} --smoke printed nothing"
