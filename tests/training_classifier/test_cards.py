"""The classifiers' and the shipped sentence model's cards, rendered from templates: the shipped
card re-renders from its own metrics, and the classifiers' prose follows their settings."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from vilbias.provenance import TrainingData
from vilbias.task import ANSWER_LABELS, BIASED, classifier_text


def test_shipped_sentence_card_re_renders_from_its_metrics():
    from vilbias.training.sentence_card import card_summary, limitations, reliability_title

    from vilbias.models.catalogue import shipped_sentence_model
    from vilbias.publish.model import ModelCardInfo, render_model_card

    folder = shipped_sentence_model()
    metrics = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
    training_data = TrainingData(**json.loads((folder / "training_data.json").read_text(encoding="utf-8")))
    shipped = ModelCardInfo.load(folder)
    assert card_summary(metrics, training_data) == shipped.summary
    assert limitations(metrics) == shipped.limitations
    assert render_model_card(shipped).text == (folder / "README.md").read_text(encoding="utf-8").split("---\n", 2)[2]
    t = metrics["test"]
    assert reliability_title(metrics["source"], t["n"], t["articles"], t["ece_before"], t["ece"]) == (
        f"BABE SG2 test split ({t['n']} sentences of {t['articles']} articles never seen)\n"
        f"ECE {t['ece_before']:.3f} before, {t['ece']:.3f} after calibration")


class _Param:
    def __init__(self, n: int, grad: bool):
        self.n, self.requires_grad = n, grad

    def numel(self) -> int:
        return self.n


class _Model:
    def parameters(self):
        return iter([_Param(100, True), _Param(900, False)])


def _card(cfg, training_data):
    from vilbias.training.classifier import card_info

    test = {f"{n}_{a}": 0.5 for a in ("binary", "macro") for n in ("f1", "precision", "recall")} | {"accuracy": 0.5}
    settings = {k: str(v) if isinstance(v, Path) else v for k, v in vars(cfg).items()}
    return card_info(cfg, cfg.dataset_config, {"settings": settings, "max_length": 128, "train_runtime_s": 1.0, "test": test}, _Model(), training_data)


def test_classifier_card_summary_follows_the_run():
    from vilbias.training.classifier_config import ClassifierConfig

    record = TrainingData.from_ids("org/BiasCorpus", ["a", "b"], config="default", split="train", fraction=0.25, validation_rows=7,
                                   distant={"rows": 99, "dataset": "org/distant", "ids_sha256": "ab" * 32, "dropped_as_held_out": 3})
    info = _card(ClassifierConfig(dataset="org/BiasCorpus", model="FacebookAI/roberta-base"), record)
    assert info.summary == (
        f"FacebookAI/roberta-base fine-tuned as a sequence classifier on headline + article text ({ANSWER_LABELS[BIASED]} / "
        f"{ANSWER_LABELS[1 - BIASED]}). Early stopping on 7 validation rows held out of the training split (not trained on). "
        "This run used a 0.25 fraction of the training split. Before fine-tuning, the encoder was pre-trained on 99 distantly "
        f"labelled headlines of `org/distant` (ids sha256 {'ab' * 6}; 3 held-out rows left out).")
    assert info.usage_snippet == ""  # the text classifier's snippet is the generic pipeline one


def test_fusion_card_names_its_encoders_and_feeds_the_classifier_text():
    from vilbias.training.classifier_config import ClassifierConfig

    record = TrainingData.from_ids("org/BiasCorpus", ["a"], config="default", split="train", validation_rows=5)
    cfg = ClassifierConfig(dataset="org/BiasCorpus", architecture="fusion", modality="image", hub_model_id="org/fusion")
    info = _card(cfg, record)
    assert info.summary.startswith("Fusion classifier (image): pooled features of efficientnet-lite0 concatenated into an MLP head "
                                   "(text encoder fine-tuned, image encoder frozen)")
    assert info.summary.endswith("Early stopping on 5 validation rows held out of the training split (not trained on).")
    strings = [n.value for n in ast.walk(ast.parse(info.usage_snippet)) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    assert "org/fusion" in strings and classifier_text("Headline", "Article text ...") in strings
