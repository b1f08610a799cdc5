"""Closed-ended metrics (DESIGN §1 Protocol) and their cross-validation summary.

Pure functions over label ids, computed with scikit-learn so the numbers match what other
papers report: accuracy, precision, recall and F1 under the ``binary`` (positive class =
``biased``), ``macro`` and ``weighted`` averages, and the confusion matrix.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

AVERAGES = ("binary", "macro", "weighted")
SUMMARY_KEYS = ("accuracy",) + tuple(f"{m}_{a}" for a in AVERAGES for m in ("precision", "recall", "f1"))


def summarize_folds(per_fold: Sequence[dict]) -> dict[str, dict[str, float]]:
    """Mean and sample standard deviation (ddof=1, 0 for one fold) of each metric over folds.

    Returns:
        ``{metric: {"mean": float, "std": float}}`` for every key of :data:`SUMMARY_KEYS`.
    """
    if not per_fold:
        raise ValueError("no folds to summarise")
    summary = {}
    for key in SUMMARY_KEYS:
        values = [float(m[key]) for m in per_fold]
        mean = sum(values) / len(values)
        var = sum((v - mean) ** 2 for v in values) / (len(values) - 1) if len(values) > 1 else 0.0
        summary[key] = {"mean": mean, "std": math.sqrt(var)}
    return summary


def format_table(summary: dict[str, dict[str, float]], per_fold: Sequence[dict] = ()) -> str:
    """A plain-text table: one row per metric, ``mean ± std`` then the per-fold values."""
    header = f"{'metric':<20} {'mean ± std':>17}" + "".join(f" {'fold_' + str(i):>8}" for i in range(len(per_fold)))
    lines = [header, "-" * len(header)]
    for key in SUMMARY_KEYS:
        s = summary[key]
        row = f"{key:<20} {s['mean']:>8.4f} ± {s['std']:<6.4f}"
        row += "".join(f" {m[key]:>8.4f}" for m in per_fold)
        lines.append(row)
    return "\n".join(lines)
