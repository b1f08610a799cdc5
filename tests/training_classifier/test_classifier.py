"""Classifier baselines: text models, fusion models, CV, outputs (tiny random encoders)."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file
from vilbias.training.classifier import ClassifierConfig, train_classifier

FAST = {"per_device_train_batch_size": 8, "num_train_epochs": 2, "learning_rate": 5e-3, "patience": 0}


def _cfg(tmp_path, dataset, model, **kw):
    return ClassifierConfig(dataset=str(dataset), model=model, output_dir=tmp_path / "out", feature_cache=tmp_path / "cache", **{**FAST, **kw})


def _assert_outputs(run_dir):
    for name in ("metrics.json", "predictions.jsonl", "confusion_matrix.png", "training_curves.png", "config.json", "model.safetensors"):
        assert (run_dir / name).is_file(), name
    assert not (run_dir / "checkpoints").exists()
    metrics = json.loads((run_dir / "metrics.json").read_text())
    test = metrics["test"]
    for key in ("accuracy", "precision_binary", "recall_macro", "f1_weighted"):
        assert 0.0 <= test[key] <= 1.0
    assert sum(map(sum, test["confusion_matrix"])) == test["n"]
    preds = [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
    assert len(preds) == test["n"]
    assert all(0.0 <= p["probability_biased"] <= 1.0 for p in preds)
    assert any(h.get("eval_loss") is not None for h in metrics["log_history"])
    return metrics


def test_text_classifier_trains_and_saves(tmp_path, multimodal_repo, tiny_bert):
    from transformers import AutoModelForSequenceClassification

    metrics = train_classifier(_cfg(tmp_path, multimodal_repo, tiny_bert))
    run_dir = tmp_path / "out"
    _assert_outputs(run_dir)
    assert metrics["rows"] == {"train": 28, "validation": 6, "test": 6}
    before = load_file(f"{tiny_bert}/model.safetensors")
    after = load_file(str(run_dir / "model.safetensors"))
    key = "encoder.layer.0.attention.self.query.weight"
    assert not torch.equal(before[key], after["bert." + key]), "encoder weights did not change"
    reloaded = AutoModelForSequenceClassification.from_pretrained(run_dir)
    assert reloaded.config.id2label == {0: "not_biased", 1: "biased"}


def test_focal_loss_option_trains(tmp_path, multimodal_repo, tiny_bert):
    metrics = train_classifier(_cfg(tmp_path, multimodal_repo, tiny_bert, loss="focal", num_train_epochs=1))
    losses = [h["loss"] for h in metrics["log_history"] if "loss" in h]
    assert losses and all(loss == loss for loss in losses)  # finite, not NaN


def test_fusion_end_to_end_and_round_trip(tmp_path, multimodal_repo, tiny_bert, tiny_clip):
    from PIL import Image

    from vilbias.models.fusion import FusionForClassification

    cfg = _cfg(tmp_path, multimodal_repo, tiny_bert, architecture="fusion", image_encoder=tiny_clip, freeze_image_encoder=False, hidden_size=16)
    train_classifier(cfg)
    run_dir = tmp_path / "out"
    _assert_outputs(run_dir)
    saved = load_file(str(run_dir / "model.safetensors"))
    # Both encoders were trained, so both are saved, and they moved away from their sources.
    clip_before = load_file(f"{tiny_clip}/model.safetensors")
    key = "encoder.layers.0.mlp.fc1.weight"
    (saved_key,) = [k for k in saved if k.startswith("image_encoder.") and k.endswith(key)]
    assert not torch.equal(clip_before[key], saved[saved_key])
    assert any(k.startswith("text_encoder.") for k in saved)

    model = FusionForClassification.from_pretrained(run_dir)
    image = Image.new("RGB", (40, 30), (200, 30, 30))
    out = model.predict(image, "Headline radical\n\nreckless corrupt shameful")
    assert out["label"] in ("biased", "not_biased")
    assert abs(sum(out["probabilities"].values()) - 1) < 1e-5
    assert out["score"] == max(out["probabilities"].values())
    again = FusionForClassification.from_pretrained(run_dir).predict(image, "Headline radical\n\nreckless corrupt shameful")
    assert again["probabilities"] == pytest.approx(out["probabilities"])


def test_frozen_fusion_caches_image_features_and_saves_head_only(tmp_path, multimodal_repo, tiny_bert, tiny_clip):
    from vilbias.training.feature_cache import FeatureCache, encoder_identity

    cfg = _cfg(tmp_path, multimodal_repo, tiny_bert, architecture="fusion", image_encoder=tiny_clip, freeze_text_encoder=True, hidden_size=16)
    train_classifier(cfg)
    saved = load_file(str(tmp_path / "out" / "model.safetensors"))
    assert saved and all(k.startswith("head.") for k in saved), sorted(saved)[:3]
    cache = FeatureCache(encoder_identity(tiny_clip), tmp_path / "cache")
    files = sorted(cache.dir.glob("*.npy"))
    assert len(files) == 40  # every row of the fixture has its own image
    # A second run reads every image feature from the cache.
    from vilbias.training import engine
    from vilbias.training.classifier_data import load_splits

    cfg2 = _cfg(tmp_path, multimodal_repo, tiny_bert, architecture="fusion", image_encoder=tiny_clip, freeze_text_encoder=True, hidden_size=16)
    model, tokenizer, max_length = engine.build_model(cfg2)
    splits, label = load_splits(cfg2.dataset, "default", revision=None, label=None, seed=0)
    cache2 = FeatureCache(encoder_identity(tiny_clip), tmp_path / "cache")
    engine.featurize(cfg2, splits["train"], label, model, tokenizer, max_length, cache2)
    assert cache2.misses == 0 and cache2.hits >= 2


@pytest.mark.parametrize("modality", ["text", "image"])
def test_unimodal_controls(tmp_path, multimodal_repo, tiny_bert, tiny_clip, modality):
    from vilbias.models.fusion import FusionForClassification

    cfg = _cfg(tmp_path, multimodal_repo, tiny_bert, architecture="fusion", image_encoder=tiny_clip, modality=modality, hidden_size=16, num_train_epochs=1)
    metrics = train_classifier(cfg)
    assert metrics["settings"]["modality"] == modality
    model = FusionForClassification.from_pretrained(tmp_path / "out")
    assert model.config.modality == modality
    assert (model.text_encoder is None) == (modality == "image")
    assert (model.image_encoder is None) == (modality == "text")


def test_cv_on_babe_format_corpus(tmp_path, babe_csv, tiny_bert):
    from vilbias.corpus.pipeline import build_sentences

    build_sentences(babe_csv, tmp_path / "babe")
    cfg = _cfg(tmp_path, tmp_path / "babe", tiny_bert, cv=True, num_train_epochs=1, metric_for_best_model="f1_macro")
    result = train_classifier(cfg)
    assert len(result["per_fold"]) == 5
    assert sum(m["n"] for m in result["per_fold"]) == 50  # test folds partition the kept rows
    f1s = [m["f1_macro"] for m in result["per_fold"]]
    mean = sum(f1s) / 5
    assert result["summary"]["f1_macro"]["mean"] == pytest.approx(mean)
    assert result["summary"]["f1_macro"]["std"] == pytest.approx((sum((f - mean) ** 2 for f in f1s) / 4) ** 0.5)
    saved = json.loads((tmp_path / "out" / "cv_metrics.json").read_text())
    assert saved["summary"].keys() == result["summary"].keys()
    assert "fold_4" in result["table"] and "±" in result["table"]
    for k in range(5):
        fold = json.loads((tmp_path / "out" / f"fold_{k}" / "metrics.json").read_text())
        # What was trained: the text architecture reads text, whatever a fusion default would be.
        assert (fold["architecture"], fold["modality"], fold["settings"]["modality"]) == ("text", "text", "text")
    assert (saved["architecture"], saved["modality"]) == ("text", "text")
    # The resolved options beside the outputs run again as they are.
    from vilbias.training.classifier import parse_config

    again = parse_config(["--config", str(tmp_path / "out" / "train_config.yaml")])
    assert again.to_dict() == cfg.to_dict()


def test_cli_dispatch(tmp_path, multimodal_repo, tiny_bert, capsys):
    from vilbias.cli import main

    rc = main([
        "train", "classifier", "--dataset", str(multimodal_repo), "--model", tiny_bert, "--config", "fold_1",
        "--output-dir", str(tmp_path / "cli"), "--epochs", "1", "--batch-size", "8", "--patience", "0",
    ])
    assert rc == 0
    out = capsys.readouterr().out
    assert "f1_macro" in out
    assert json.loads((tmp_path / "cli" / "metrics.json").read_text())["config"] == "fold_1"


def test_config_rejects_bad_combinations(tmp_path):
    with pytest.raises(ValueError, match="hub-model-id"):
        ClassifierConfig(dataset="x", push_to_hub=True)
    with pytest.raises(ValueError, match="--cv"):
        ClassifierConfig(dataset="x", cv=True, dataset_config="fold_1")
    with pytest.raises(ValueError, match="fusion"):
        ClassifierConfig(dataset="x", modality="image")


def test_push_to_hub_with_model_card(tmp_path, multimodal_repo, tiny_bert, monkeypatch):
    from tests.fakes.hub_server import hub_server

    with hub_server(tmp_path / "hub") as hub:
        monkeypatch.setenv("HF_TOKEN", hub.token)
        cfg = _cfg(tmp_path, multimodal_repo, tiny_bert, num_train_epochs=1, push_to_hub=True, hub_model_id="org/tiny-classifier")
        metrics = train_classifier(cfg)
        tree = hub.tree_at("model", "org/tiny-classifier")
    assert metrics["pushed"]
    assert {"README.md", "model.safetensors", "config.json", "metrics.json", "vilbias_card.json"} <= set(tree)
    card = tree["README.md"].decode()
    assert "model-index" in card and "f1" in card and str(multimodal_repo) in card
