"""`python -m vilbias.spaces.calibrate` recomputes, from the shipped folder alone, the calibration
the model card states (real-data tier: it needs the public SG2 file of BABE)."""

from __future__ import annotations

import json

import pytest

from tests.real_data import shared_data


@pytest.mark.real_data
def test_calibration_on_babe_matches_the_card(capsys, cpu_with):
    """On a CPU with VNNI and no AMX too, where the model alone would run int8 (temperature 1.32)."""
    from vilbias.spaces.calibrate import main

    cpu_with("avx2", "avx512f", "avx512_vnni")

    from vilbias.models.catalogue import shipped_sentence_model

    assert main(["--sentences", str(shared_data("babe", "final_labels_SG2_public.csv"))]) == 0
    report = json.loads(capsys.readouterr().out)
    card = json.loads((shipped_sentence_model() / "metrics.json").read_text(encoding="utf-8"))
    assert report["refitted_temperature"] == pytest.approx(report["shipped_temperature"], rel=0.02)
    assert report["shipped_temperature"] == pytest.approx(card["validation"]["temperature"])
    assert report["test"]["rows"] == card["test"]["n"]
    assert report["test"]["ece_before"] == pytest.approx(card["test"]["ece_before"], abs=2e-3)
    assert report["test"]["ece_after"] == pytest.approx(card["test"]["ece"], abs=2e-3)
    assert report["validation"]["ece_after"] <= report["validation"]["ece_before"]


def test_temperature_scaling_recovers_a_known_temperature_and_lowers_ece():
    """vilbias.metrics.calibration on a model whose logits are exactly twice too confident."""
    import math
    import random

    from vilbias.metrics.calibration import (
        expected_calibration_error,
        fit_temperature,
        reliability_bins,
        scale_probabilities,
    )

    rng = random.Random(0)
    overconfident, labels = [], []
    for _ in range(4000):
        z = rng.gauss(0, 2)
        true_p = 1 / (1 + math.exp(-z / 2))  # what the label follows
        labels.append(int(rng.random() < true_p))
        overconfident.append(1 / (1 + math.exp(-z)))  # what the model says
    t = fit_temperature([[1 - p, p] for p in overconfident], labels)
    assert 1.8 < t < 2.2
    scaled = [scale_probabilities([1 - p, p], t)[1] for p in overconfident]
    before, after = expected_calibration_error(overconfident, labels), expected_calibration_error(scaled, labels)
    assert before > 0.05 and after < 0.02
    assert sum(b["count"] for b in reliability_bins(scaled, labels)) == len(labels)
    assert scale_probabilities([0.2, 0.8], 1.0) == pytest.approx([0.2, 0.8])
