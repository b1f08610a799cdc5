"""`python -m vilbias.spaces.calibrate` recomputes, from the shipped folder alone, the calibration
the model card states (real-data tier: it needs the public SG2 file of BABE)."""

from __future__ import annotations

import json

import pytest

from tests.real_data import shared_data


@pytest.mark.real_data
def test_calibration_on_babe_matches_the_card(capsys):
    from vilbias.spaces.calibrate import main
    from vilbias.training.train_default import DEFAULT_MODEL_DIR

    assert main(["--sentences", str(shared_data("babe", "final_labels_SG2_public.csv"))]) == 0
    report = json.loads(capsys.readouterr().out)
    card = json.loads((DEFAULT_MODEL_DIR / "metrics.json").read_text(encoding="utf-8"))
    assert report["refitted_temperature"] == pytest.approx(report["shipped_temperature"], rel=0.02)
    assert report["shipped_temperature"] == pytest.approx(card["validation"]["temperature"])
    assert report["test"]["rows"] == card["test"]["n"]
    assert report["test"]["ece_before"] == pytest.approx(card["test"]["ece_before"], abs=2e-3)
    assert report["test"]["ece_after"] == pytest.approx(card["test"]["ece"], abs=2e-3)
    assert report["validation"]["ece_after"] <= report["validation"]["ece_before"]
