"""The numbers: closed-ended metrics through the packaged ``evaluate`` modules, open-ended
percentages with bootstrap intervals, and mean ± std over folds.

The closed-ended metrics are local ``evaluate`` modules shipped in ``metrics/<name>/<name>.py``
and loaded by path, so they work offline (``evaluate.load("f1")`` would fetch from the Hub)::

    from vilbias.metrics.scores import closed_metrics, load_metric
    load_metric("f1").compute(predictions=[1, 0], references=[1, 1], average="macro")
    closed_metrics(references=[1, 0, 1], predictions=[1, 1, None])   # None = unparseable = wrong
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Sequence
from pathlib import Path

METRICS_DIR = Path(__file__).parent
METRIC_NAMES = ("accuracy", "precision", "recall", "f1", "confusion_matrix", "closed_ended")
AVERAGES = ("binary", "macro", "weighted")
CLOSED_KEYS = ("accuracy",) + tuple(f"{m}_{a}" for a in AVERAGES for m in ("precision", "recall", "f1"))
"""Scalar closed-ended metrics, in report order."""
OPEN_KEYS = ("reasoning_accuracy", "faithfulness")


@functools.cache
def load_metric(name: str):
    """The packaged ``evaluate`` module ``name`` (one of :data:`METRIC_NAMES`), loaded by path."""
    import evaluate

    if name not in METRIC_NAMES:
        raise ValueError(f"unknown metric {name!r}; packaged metrics: {', '.join(METRIC_NAMES)}")
    # keep_in_memory: no Arrow cache files, so parallel runs never share a lock.
    return evaluate.load(str(METRICS_DIR / name), keep_in_memory=True)


def as_scored(references: Sequence[int], predictions: Sequence[int | None]) -> list[int]:
    """Predictions with every unparseable answer (``None``) replaced by the wrong label.

    An answer the parser could not read is counted as wrong, never dropped: a gold ``biased``
    item becomes a false negative, a gold ``not_biased`` one a false positive.
    """
    return [(1 - int(r)) if p is None else int(p) for r, p in zip(references, predictions, strict=True)]


def closed_metrics(references: Sequence[int], predictions: Sequence[int | None]) -> dict:
    """Accuracy, precision/recall/F1 (``binary`` for ``biased``, ``macro``, ``weighted``) and the
    confusion matrix, from the packaged ``evaluate`` module ``closed_ended`` (one computation).

    Args:
        references: gold class ids (1 = biased).
        predictions: predicted class ids; ``None`` for an unparseable answer (scored as wrong).

    Returns:
        ``{"n", "accuracy", "precision_binary", ..., "f1_weighted", "confusion_matrix":
        [[TN, FP], [FN, TP]], "unparseable", "unparseable_rate"}``.
    """
    if len(references) != len(predictions):
        raise ValueError(f"{len(references)} references but {len(predictions)} predictions")
    if not references:
        raise ValueError("cannot score an empty set of predictions")
    refs = [int(r) for r in references]
    preds = as_scored(refs, predictions)
    # one computation (closed_ended/): the same scikit-learn calls as the single-score modules
    out: dict = {"n": len(refs), **load_metric("closed_ended").compute(predictions=preds, references=refs, averages=list(AVERAGES))}
    unparseable = sum(p is None for p in predictions)
    out["unparseable"] = unparseable
    out["unparseable_rate"] = unparseable / len(refs)
    return out


def bootstrap_ci(values: Sequence[float], *, resamples: int = 1000, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values``."""
    if not values:
        return (math.nan, math.nan)
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(values[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    lo = means[int(math.floor((1 - level) / 2 * (resamples - 1)))]
    hi = means[int(math.ceil((1 + level) / 2 * (resamples - 1)))]
    return (lo, hi)


def open_scores(verdicts: Sequence[dict], *, resamples: int = 1000, seed: int = 0) -> dict:
    """Reasoning accuracy and faithfulness as percentages with bootstrap 95% intervals.

    Args:
        verdicts: one dict per answer with ``status`` (``"ok"``, or ``"failed"`` when the
            judge never returned valid JSON) and, when ok, ``reasoning_accuracy`` and
            ``faithfulness`` in {0, 1}.

    Returns:
        ``{"n", "judged", "judge_failures", "judge_failure_rate", "reasoning_accuracy": {"percent",
        "ci95"}, "faithfulness": {...}, "rule_zero"}``. Percentages are over judged answers; judge
        failures are the judge's, not the model's, so they are reported, not scored.
    """
    judged = [v for v in verdicts if v["status"] == "ok"]
    out: dict = {
        "n": len(verdicts),
        "judged": len(judged),
        "judge_failures": len(verdicts) - len(judged),
        "judge_failure_rate": (len(verdicts) - len(judged)) / len(verdicts) if verdicts else 0.0,
        "rule_zero": sum(v.get("source") == "rule" for v in judged),
    }
    for key in OPEN_KEYS:
        values = [float(v[key]) for v in judged]
        if not values:
            out[key] = {"percent": None, "ci95": [None, None]}
            continue
        lo, hi = bootstrap_ci(values, resamples=resamples, seed=seed)
        out[key] = {"percent": 100.0 * sum(values) / len(values), "ci95": [100.0 * lo, 100.0 * hi]}
    return out


def mean_std(values: Sequence[float]) -> dict[str, float]:
    """Mean and sample standard deviation (ddof=1; 0 for a single value)."""
    values = [float(v) for v in values]
    if not values:
        raise ValueError("no values to summarise")
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / (len(values) - 1) if len(values) > 1 else 0.0
    return {"mean": mean, "std": math.sqrt(var)}


def summarize(per_view: Sequence[dict]) -> dict:
    """Mean ± std over views (folds) of the closed metrics and, where present, the open ones.

    Args:
        per_view: ``{"closed": closed_metrics(...), "open": open_scores(...) or None}`` per fold.

    Returns:
        ``{"closed": {metric: {"mean", "std"}}, "open": {metric: {"mean", "std"}} | None,
        "confusion_matrix": summed over views, "unparseable_rate": {"mean", "std"}}``.
    """
    closed = {key: mean_std([v["closed"][key] for v in per_view]) for key in CLOSED_KEYS}
    closed["unparseable_rate"] = mean_std([v["closed"]["unparseable_rate"] for v in per_view])
    matrix = [[sum(v["closed"]["confusion_matrix"][i][j] for v in per_view) for j in range(2)] for i in range(2)]
    opened = None
    if all(v.get("open") for v in per_view):
        opened = {}
        for key in OPEN_KEYS:
            values = [v["open"][key]["percent"] for v in per_view if v["open"][key]["percent"] is not None]
            if values:
                opened[key] = mean_std(values)
        opened["judge_failure_rate"] = mean_std([v["open"]["judge_failure_rate"] for v in per_view])
    return {"views": len(per_view), "closed": closed, "open": opened, "confusion_matrix": matrix}


def summarize_folds(per_fold: Sequence[dict]) -> dict[str, dict[str, float]]:
    """Mean and sample standard deviation (ddof=1, 0 for one fold) of each closed metric over folds.

    Returns:
        ``{metric: {"mean": float, "std": float}}`` for every key of :data:`CLOSED_KEYS`.
    """
    if not per_fold:
        raise ValueError("no folds to summarise")
    return {key: mean_std([m[key] for m in per_fold]) for key in CLOSED_KEYS}


def format_table(summary: dict[str, dict[str, float]], per_fold: Sequence[dict] = ()) -> str:
    """A plain-text table: one row per metric, ``mean ± std`` then the per-fold values."""
    header = f"{'metric':<20} {'mean ± std':>17}" + "".join(f" {'fold_' + str(i):>8}" for i in range(len(per_fold)))
    lines = [header, "-" * len(header)]
    for key in CLOSED_KEYS:
        s = summary[key]
        row = f"{key:<20} {s['mean']:>8.4f} ± {s['std']:<6.4f}"
        row += "".join(f" {m[key]:>8.4f}" for m in per_fold)
        lines.append(row)
    return "\n".join(lines)


def article_majorities(links: Sequence[str], labels: Sequence[int], probabilities: Sequence[float], *,
                       min_sentences: int = 1) -> list[tuple[list[float], int]]:
    """``(sentence probabilities, majority label)`` per article of a sentence corpus: sentences
    grouped by their article link (a sentence without one is its own article, keyed by its
    position), an article's label the majority of its sentences' expert labels; articles whose
    labels split evenly have no majority and are left out, as are those with fewer than
    ``min_sentences`` labelled sentences. Training (the article rule, the card) and ``vilbias
    evaluate`` group articles with this one function."""
    by_link: dict[str, list[tuple[float, int]]] = {}
    for position, (link, label, p) in enumerate(zip(links, labels, probabilities, strict=True)):
        by_link.setdefault(link or f"#{position}", []).append((p, label))
    groups = []
    for items in by_link.values():
        biased = sum(y for _, y in items)
        if len(items) >= min_sentences and 2 * biased != len(items):
            groups.append(([p for p, _ in items], int(2 * biased > len(items))))
    return groups


def article_metrics(groups: Sequence[tuple[list[float], int]], decide) -> dict:
    """Macro-F1 and accuracy of ``decide(sentence probabilities) -> 0/1`` (an article rule) over
    :func:`article_majorities`' groups, with their count."""
    labels = [y for _, y in groups]
    out = closed_metrics(labels, [int(decide(p)) for p, _ in groups])
    return {"groups": len(groups), "f1_macro": out["f1_macro"], "accuracy": out["accuracy"]}
