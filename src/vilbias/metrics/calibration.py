"""Calibration of a classifier's probabilities: temperature scaling (Guo et al., 2017, *On
Calibration of Modern Neural Networks*), top-label reliability bins, expected calibration error
(ECE) and the reliability diagram. Training fits and reports them; the Space shows them.

Plain lists of probabilities in, numbers out (numpy, no torch), so any model's outputs can be checked.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from vilbias.metrics.plots import pyplot


def scale_probabilities(probabilities: Sequence[float], temperature: float) -> list[float]:
    """Temperature-scale a softmax output: ``softmax(log p / T)`` equals ``softmax(logits / T)``."""
    logs = [math.log(max(p, 1e-12)) / temperature for p in probabilities]
    top = max(logs)
    exps = [math.exp(v - top) for v in logs]
    return [v / sum(exps) for v in exps]


def fit_temperature(probabilities: Sequence[Sequence[float]], labels: Sequence[int]) -> float:
    """The temperature minimising the negative log-likelihood of ``labels`` (Guo et al., 2017).

    A grid over log T from 0.05 to 20 (a one-parameter fit needs no optimiser and is exact to
    the grid's 1% steps); ties go to the value nearest 1.
    """
    if not labels or len(labels) != len(probabilities):
        raise ValueError("fit_temperature needs one label per probability row")
    logs = np.log(np.maximum(np.asarray(probabilities, dtype=np.float64), 1e-12))
    picked = logs[np.arange(len(labels)), np.asarray(labels)]
    grid = sorted((math.exp(k / 100) for k in range(-300, 301)), key=lambda t: abs(math.log(t)))

    def nll(t: float) -> float:  # the summed cross-entropy of softmax(log p / t), every row at once
        scaled = logs / t
        top = scaled.max(axis=1)
        return float(np.sum(top + np.log(np.exp(scaled - top[:, None]).sum(axis=1)) - picked / t))

    return round(min(grid, key=nll), 4)


def reliability_bins(probabilities: Sequence[float], labels: Sequence[int], n_bins: int = 10) -> list[dict]:
    """Top-label reliability: per equal-width confidence bin, the count, mean confidence and
    accuracy of the predicted label (``probabilities`` are P(positive) of a binary model)."""
    bins = [{"count": 0, "confidence": 0.0, "correct": 0} for _ in range(n_bins)]
    for p, y in zip(probabilities, labels, strict=True):
        predicted = int(p >= 0.5)
        confidence = p if predicted else 1.0 - p
        # top-label confidence lies in [0.5, 1]; bins span [0, 1] as in Guo et al.
        b = bins[min(int(confidence * n_bins), n_bins - 1)]
        b["count"] += 1
        b["confidence"] += confidence
        b["correct"] += int(predicted == y)
    out = []
    for i, b in enumerate(bins):
        n = b["count"]
        out.append({"low": i / n_bins, "high": (i + 1) / n_bins, "count": n,
                    "confidence": b["confidence"] / n if n else None, "accuracy": b["correct"] / n if n else None})
    return out


def expected_calibration_error(probabilities: Sequence[float], labels: Sequence[int], n_bins: int = 10) -> float:
    """ECE (Guo et al., 2017): the count-weighted mean gap between confidence and accuracy."""
    n = len(labels)
    if not n:
        raise ValueError("expected_calibration_error needs at least one prediction")
    bins = reliability_bins(probabilities, labels, n_bins)
    return sum(b["count"] / n * abs(b["accuracy"] - b["confidence"]) for b in bins if b["count"])


def plot_reliability(before: list[dict], after: list[dict], path: Path, title: str) -> None:
    """Reliability diagram: accuracy against confidence per bin, before and after calibration
    (the number of sentences in each bin beside the calibrated points)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.0, 4.2))
    ax.plot([0.5, 1], [0.5, 1], ls="--", color="grey", lw=1, label="perfectly calibrated")
    for bins, name, colour in ((before, "before", "C3"), (after, "after", "C0")):
        used = [b for b in bins if b["count"]]
        ax.plot([b["confidence"] for b in used], [b["accuracy"] for b in used], marker="o", color=colour, label=f"{name} calibration")
    for b in (b for b in after if b["count"]):
        ax.annotate(f"n={b['count']}", (b["confidence"], b["accuracy"]), textcoords="offset points", xytext=(5, -10), fontsize=6, color="C0")
    ax.set_xlim(0.45, 1.02)
    ax.set_ylim(0.0, 1.02)
    ax.set_xlabel("confidence (probability of the predicted label)")
    ax.set_ylabel("accuracy")
    ax.set_title(title, fontsize=8, wrap=True)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
