"""The training loop's parts are connected: early stopping, the best-checkpoint reload, the focal
loss and the class weighting each change what happens (each test fails with its part unplugged)."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F
from vilbias.training.classifier import ClassifierConfig, train_classifier
from vilbias.training.classifier_data import featurize, load_splits
from vilbias.training.engine import build_model, make_trainer
from vilbias.training.losses import balanced_class_weights, focal_loss


def _cfg(tmp_path, dataset, model, **kw):
    base = {"per_device_train_batch_size": 8, "num_train_epochs": 2, "learning_rate": 5e-3, "patience": 0}
    return ClassifierConfig(dataset=str(dataset), model=model, output_dir=tmp_path / "out", feature_cache=tmp_path / "cache", **{**base, **kw})


def _evals(metrics):
    return [h["eval_loss"] for h in metrics["log_history"] if "eval_loss" in h]


def test_early_stopping_ends_training_when_validation_loss_stops_improving(tmp_path, multimodal_repo, tiny_bert):
    # At learning rate 0 the validation loss never changes: with patience 1 the run stops after
    # the second evaluation instead of running all 6 epochs.
    metrics = train_classifier(_cfg(tmp_path, multimodal_repo, tiny_bert, learning_rate=0.0, num_train_epochs=6, patience=1, metric_for_best_model="loss"))
    assert len(_evals(metrics)) == 2 and metrics["epochs_run"] == pytest.approx(2.0)
    no_patience = train_classifier(_cfg(tmp_path, multimodal_repo, tiny_bert, learning_rate=0.0, num_train_epochs=3, patience=0, metric_for_best_model="loss"))
    assert len(_evals(no_patience)) == 3


def test_the_best_validation_checkpoint_is_the_one_kept(tmp_path, multimodal_repo, tiny_bert):
    # At a constant 0.1 this (seeded) tiny model overshoots: its validation loss is lowest at epoch 1.
    cfg = _cfg(tmp_path, multimodal_repo, tiny_bert, learning_rate=0.1, num_train_epochs=4, metric_for_best_model="loss", lr_scheduler_type="constant")
    metrics = train_classifier(cfg)
    evals = _evals(metrics)
    assert min(evals) < evals[-1] - 1e-3, f"precondition: the last epoch must not be the best ({evals})"
    # The model scored and saved is the best epoch's, not the last one's.
    assert metrics["validation"]["loss"] == pytest.approx(min(evals), abs=1e-5)
    assert metrics["best_checkpoint_metric"] == pytest.approx(min(evals), abs=1e-5)


def _trainer_and_full_batch(tmp_path, cfg):
    splits, label = load_splits(cfg.dataset, "fold_0", revision=None, label=None, seed=0)
    model, tokenizer, max_length = build_model(cfg)
    data = {name: featurize(cfg, split, label, model, tokenizer, max_length) for name, split in splits.items()}
    trainer = make_trainer(cfg, model, tokenizer, data, tmp_path / "run", seed=0)
    train = data["train"].remove_columns(["unique_id"])
    batch = trainer.data_collator([train[i] for i in range(len(train))])
    model.eval()
    with torch.no_grad():
        logits = model(**{k: v for k, v in batch.items() if k != "labels"}).logits
        loss = trainer.compute_loss(model, dict(batch))
    return loss, logits, batch["labels"], data


@pytest.fixture
def babe_repo(tmp_path, babe_csv):
    from vilbias.corpus.pipeline import build_sentences

    build_sentences(babe_csv, tmp_path / "babe")  # 30 biased, 20 not biased: imbalanced on purpose
    return tmp_path / "babe"


def test_focal_loss_is_the_loss_trained_on(tmp_path, babe_repo, tiny_bert):
    cfg = _cfg(tmp_path, babe_repo, tiny_bert, loss="focal", focal_gamma=2.0)
    loss, logits, labels, _ = _trainer_and_full_batch(tmp_path, cfg)
    assert loss.item() == pytest.approx(focal_loss(logits, labels, alpha=1.0, gamma=2.0).item(), rel=1e-5)
    assert loss.item() < F.cross_entropy(logits, labels).item() - 1e-4


def test_class_weighting_weights_the_loss_by_class_frequency(tmp_path, babe_repo, tiny_bert):
    cfg = _cfg(tmp_path, babe_repo, tiny_bert, class_weighting="balanced")
    loss, logits, labels, data = _trainer_and_full_batch(tmp_path, cfg)
    counts = torch.bincount(labels, minlength=2).tolist()
    assert counts[0] != counts[1]
    weights = balanced_class_weights(data["train"]["labels"], 2)
    assert weights == pytest.approx([len(labels) / (2 * counts[0]), len(labels) / (2 * counts[1])])
    expected = F.cross_entropy(logits, labels, weight=torch.tensor(weights))
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)
    assert abs(loss.item() - F.cross_entropy(logits, labels).item()) > 1e-5
    # Both at once: the focal loss with the class weights.
    cfg = _cfg(tmp_path, babe_repo, tiny_bert, class_weighting="balanced", loss="focal")
    loss, logits, labels, _ = _trainer_and_full_batch(tmp_path, cfg)
    assert loss.item() == pytest.approx(focal_loss(logits, labels, weight=torch.tensor(weights)).item(), rel=1e-5)


def test_weighted_focal_loss_reduces_to_weighted_cross_entropy():
    gen = torch.Generator().manual_seed(0)
    logits, labels = torch.randn(12, 2, generator=gen), torch.randint(0, 2, (12,), generator=gen)
    w = torch.tensor([0.7, 1.9])
    assert torch.allclose(focal_loss(logits, labels, gamma=0.0, weight=w), F.cross_entropy(logits, labels, weight=w), atol=1e-6)


def test_metrics_record_the_loss_settings(tmp_path, babe_repo, tiny_bert):
    metrics = train_classifier(_cfg(tmp_path, babe_repo, tiny_bert, dataset_config="fold_0", loss="focal", class_weighting="balanced", num_train_epochs=1))
    settings = json.loads((tmp_path / "out" / "metrics.json").read_text())["settings"]
    assert settings["loss"] == "focal" and settings["class_weighting"] == "balanced" and metrics["test"]["n"] == 10


def test_each_prediction_belongs_to_its_test_row(tmp_path, babe_repo, tiny_bert):
    # Length-grouped batching (on by default) reorders the Trainer's evaluation batches too; the
    # test predictions must still be each row's own.
    from datasets import load_dataset
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    train_classifier(_cfg(tmp_path, babe_repo, tiny_bert, dataset_config="fold_0", num_train_epochs=1))
    out = tmp_path / "out"
    model, tok = AutoModelForSequenceClassification.from_pretrained(out).eval(), AutoTokenizer.from_pretrained(out)
    test = load_dataset(str(babe_repo), "fold_0")["test"]
    rows = {r["unique_id"]: r for r in test}
    predictions = [json.loads(line) for line in (out / "predictions.jsonl").open()]
    assert sorted(p["unique_id"] for p in predictions) == sorted(rows)
    for p in predictions:
        row = rows[p["unique_id"]]
        with torch.no_grad():
            prob = model(**tok(row["text"], return_tensors="pt")).logits.softmax(-1)[0, 1].item()
        assert p["probability_biased"] == pytest.approx(prob, abs=1e-5)
        assert p["label"] == ("biased" if row["label"] == 1 else "not_biased")
