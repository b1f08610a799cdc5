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


def classification_metrics(y_true: Sequence[int], y_pred: Sequence[int], *, positive_label: int = 1) -> dict:
    """Accuracy, precision/recall/F1 under each of :data:`AVERAGES`, and the confusion matrix.

    Args:
        y_true: gold class ids.
        y_pred: predicted class ids, same length.
        positive_label: the class that ``binary`` scores treat as positive (1 = ``biased``).

    Returns:
        ``{"accuracy": float, "precision_binary": float, ..., "f1_weighted": float,
        "confusion_matrix": [[tn, fp], [fn, tp]], "n": int}``. Undefined ratios (no predicted
        positives, say) are 0.0, as scikit-learn's ``zero_division=0`` gives.
    """
    from sklearn.metrics import accuracy_score, confusion_matrix, precision_recall_fscore_support

    if len(y_true) != len(y_pred):
        raise ValueError(f"y_true has {len(y_true)} labels but y_pred has {len(y_pred)}")
    if not len(y_true):
        raise ValueError("cannot score an empty set of predictions")
    out: dict = {"n": len(y_true), "accuracy": float(accuracy_score(y_true, y_pred))}
    for average in AVERAGES:
        p, r, f, _ = precision_recall_fscore_support(
            y_true, y_pred, average=average, pos_label=positive_label, labels=[0, 1], zero_division=0
        )
        out[f"precision_{average}"] = float(p)
        out[f"recall_{average}"] = float(r)
        out[f"f1_{average}"] = float(f)
    out["confusion_matrix"] = confusion_matrix(y_true, y_pred, labels=[0, 1]).tolist()
    return out


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
