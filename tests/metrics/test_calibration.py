"""vilbias.metrics.calibration: temperature scaling, reliability bins, ECE and the diagram, on
hand-made numbers and against direct computations (the sentence model and the Space use these)."""

from __future__ import annotations

import math
import random

import pytest

from vilbias.metrics.calibration import (
    expected_calibration_error,
    fit_temperature,
    plot_reliability,
    reliability_bins,
    scale_probabilities,
)


def test_scaling_a_softmax_equals_scaling_its_logits():
    logits = [0.3, 2.1]
    probs = [math.exp(v) / sum(math.exp(u) for u in logits) for v in logits]
    for t in (0.5, 1.0, 1.7):
        direct = [math.exp(v / t) / sum(math.exp(u / t) for u in logits) for v in logits]
        assert scale_probabilities(probs, t) == pytest.approx(direct, abs=1e-12)
    assert scale_probabilities([1.0, 0.0], 2.0)[0] > 0.999  # a zero probability does not raise


def test_fit_temperature_recovers_an_overconfident_models_temperature():
    """Labels drawn from softmax(z); the model reports softmax(2.5 z): the fit finds T close to 2.5."""
    rng = random.Random(0)
    rows, labels = [], []
    for _ in range(4000):
        z = rng.gauss(0, 1.5)
        p_true = 1 / (1 + math.exp(-z))
        labels.append(int(rng.random() < p_true))
        p_model = 1 / (1 + math.exp(-2.5 * z))
        rows.append([1 - p_model, p_model])
    t = fit_temperature(rows, labels)
    assert 2.2 < t < 2.8
    with pytest.raises(ValueError, match="one label per probability row"):
        fit_temperature(rows, labels[:-1])


def test_reliability_bins_and_ece_by_hand():
    probs, labels = [0.95, 0.95, 0.55, 0.45, 0.05], [1, 0, 1, 0, 0]
    bins = reliability_bins(probs, labels, n_bins=10)
    top = bins[9]  # confidences 0.95 (three: 0.95, 0.95, 1-0.05)
    assert top["count"] == 3 and top["accuracy"] == pytest.approx(2 / 3) and top["confidence"] == pytest.approx(0.95)
    mid = bins[5]  # 0.55 and 1-0.45
    assert mid["count"] == 2 and mid["accuracy"] == 1.0 and mid["confidence"] == pytest.approx(0.55)
    assert sum(b["count"] for b in bins) == len(probs) and bins[0]["confidence"] is None
    expected = 3 / 5 * abs(2 / 3 - 0.95) + 2 / 5 * abs(1.0 - 0.55)
    assert expected_calibration_error(probs, labels) == pytest.approx(expected)
    with pytest.raises(ValueError):
        expected_calibration_error([], [])


def test_a_perfectly_calibrated_model_has_small_ece_and_scaling_keeps_it():
    rng = random.Random(1)
    probs = [rng.random() for _ in range(20000)]
    labels = [int(rng.random() < p) for p in probs]
    assert expected_calibration_error(probs, labels) < 0.02
    # Exactly calibrated: at each confidence j/20, j of its 20 rows are positive. The likelihood's
    # slope in 1/T is then exactly 0 at T = 1 (it sums (1-p) log(1-p) + p log p - log p_y over the
    # rows), and it is convex: the fit must land on T = 1 itself, and the ECE is 0. (20 000 rows
    # drawn at random move the fit by about 0.015; its grid search takes ~2 s per 1 000 rows.)
    exact = [(j / 20, int(i < j)) for j in range(1, 20) for i in range(20)]
    assert expected_calibration_error([p for p, _ in exact], [y for _, y in exact]) == pytest.approx(0, abs=1e-12)
    assert fit_temperature([[1 - p, p] for p, _ in exact], [y for _, y in exact]) == 1.0
    fewer = [(j / 20, int(i < j - (j > 10))) for j in range(1, 20) for i in range(20)]  # one positive fewer above 0.5
    assert fit_temperature([[1 - p, p] for p, _ in fewer], [y for _, y in fewer]) > 1.0  # overconfident: T above 1


def test_reliability_diagram_is_written(tmp_path):
    probs, labels = [0.9, 0.8, 0.3, 0.6], [1, 0, 0, 1]
    bins = reliability_bins(probs, labels)
    out = tmp_path / "reliability.png"
    plot_reliability(bins, reliability_bins([0.7, 0.6, 0.4, 0.55], labels), out, "test")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 5_000
