"""The shipped sentence model's figures, reproduced through ``vilbias train sentence``.

    python benchmarks/bench_sentence_reproduce.py --sentences ../shared/data/babe/final_labels_SG2_public.csv --out outputs/sentence-repro
    python benchmarks/bench_sentence_reproduce.py --out outputs/sentence-repro --report-only     # compare a finished run

Runs the command the shipped card names (``vilbias train sentence --sentences FILE --cv --threads
1 --output OUT``: 5-fold CV over whole articles, the final model, its calibration and article
rule; about 30 min on a quiet 2-core machine, hours on a busy one) unless ``OUT/metrics.json``
is there, then prints each figure beside the shipped card's (``training/default_model/metrics.json``)
with its tolerance, and exits 1 when one is outside it. The run is deterministic with one torch
thread and the same torch, so every figure should match to the last digit; the tolerances are
what may move on another CPU or library version (float summation order), not what training noise
allows: a fold's macro-F1 moves by 1/300 when one sentence of its ~600 flips.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from vilbias.models.catalogue import shipped_sentence_model

TOLERANCES = {
    "CV macro-F1 mean": 0.005,
    "CV macro-F1 std": 0.005,
    "test sentence macro-F1": 0.007,
    "test ECE before calibration": 0.005,
    "test ECE after calibration": 0.005,
    "temperature": 0.02,
    "article rule macro-F1 (test articles)": 0.013,
    "article rule threshold": 0.02,
}
"""How far each figure may sit from the card's and still count as reproduced (see the module docstring)."""


def figures(m: dict) -> dict[str, float | str]:
    """The figures the card states, from a run's ``metrics.json``."""
    out = {}
    if m.get("cv"):
        out["CV macro-F1 mean"] = m["cv"]["summary"]["f1_macro"]["mean"]
        out["CV macro-F1 std"] = m["cv"]["summary"]["f1_macro"]["std"]
    out |= {
        "test sentence macro-F1": m["test"]["f1_macro"],
        "test ECE before calibration": m["test"]["ece_before"],
        "test ECE after calibration": m["test"]["ece"],
        "temperature": m["validation"]["temperature"],
        "article rule macro-F1 (test articles)": m["article_rule_on_test_links"]["f1_macro"],
        "article rule threshold": m["article_rule"]["threshold"],
        "article rule statistic": m["article_rule"]["statistic"],
    }
    return out


def compare(run: dict, card: dict) -> list[tuple[str, object, object, float | None, bool]]:
    """``(figure, run's value, card's value, tolerance, within it)`` for every figure the run has."""
    got, want = figures(run), figures(card)
    rows = []
    for name, value in got.items():
        tolerance = TOLERANCES.get(name)
        ok = value == want[name] if tolerance is None else abs(value - want[name]) <= tolerance
        rows.append((name, value, want[name], tolerance, ok))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=Path, help="BABE's final_labels_SG2_public.csv (what the shipped model was trained on).")
    parser.add_argument("--out", type=Path, help="Where the run writes its model folder (required, except with --smoke).")
    parser.add_argument("--report-only", action="store_true", help="Compare the run already in --out; train nothing.")
    parser.add_argument("--smoke", action="store_true", help="A tiny run of every step, in seconds, for the test suite (tests/test_benchmarks.py); its figures mean nothing.")
    args = parser.parse_args(argv)
    extra = []
    if args.smoke:  # the first 40 sentences of BABE SG2, one step of 4 sentences, in a temporary folder
        work = Path(tempfile.mkdtemp(prefix="bench-reproduce-smoke-"))
        babe = args.sentences or Path(__file__).resolve().parents[2] / "shared" / "data" / "babe" / "final_labels_SG2_public.csv"
        with open(babe, encoding="utf-8-sig", newline="") as f:
            head = list(csv.reader(f, delimiter=";"))[:41]
        with open(work / "head.csv", "w", encoding="utf-8-sig", newline="") as f:
            csv.writer(f, delimiter=";").writerows(head)
        args.sentences, args.out, extra = work / "head.csv", work / "model", ["--max-steps", "1", "--per-device-train-batch-size", "4"]
    elif args.out is None:
        parser.error("--out is required")
    if not (args.out / "metrics.json").is_file():
        if args.report_only or not args.sentences:
            parser.error(f"{args.out / 'metrics.json'} not found: pass --sentences to train it")
        cmd = [sys.executable, "-m", "vilbias.cli", "train", "sentence", "--sentences", str(args.sentences), "--cv", "--threads", "1",
               "--output", str(args.out), *extra]
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}
        subprocess.run(cmd, env=env, check=True)
    run = json.loads((args.out / "metrics.json").read_text(encoding="utf-8"))
    card = json.loads((shipped_sentence_model() / "metrics.json").read_text(encoding="utf-8"))
    rows = compare(run, card)
    print(f"{'figure':<40} {'this run':>10} {'card':>10} {'tolerance':>10}")
    for name, value, want, tolerance, ok in rows:
        fmt = (lambda v: f"{v:>10.4f}") if tolerance is not None else (lambda v: f"{v:>10}")
        print(f"{name:<40} {fmt(value)} {fmt(want)} {'' if tolerance is None else f'± {tolerance:g}':>10}  {'ok' if ok else 'OUTSIDE'}")
    print(f"wall time: {run['wall_time_s'] / 60:.0f} min with {run['settings']['threads']} thread(s) (the card's run: "
          f"{card['wall_time_s'] / 60:.0f} min)")
    return 0 if args.smoke or all(ok for *_, ok in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
