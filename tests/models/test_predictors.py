"""The predictor protocol: ``load_predictor(spec).predict(item) -> ModelOutput`` for the sentence
model (the shipped offline one), a tiny fusion classifier and a VLM (with a stand-in generation),
and evaluation's classifiers built on the same predictors."""

from __future__ import annotations

import importlib.resources
import io
import subprocess
import sys

import pytest
from PIL import Image

from vilbias.images import grey_image
from vilbias.metrics.calibration import scale_probabilities
from vilbias.models.catalogue import (
    PREDICTORS,
    ClassifierModel,
    load_model,
    load_predictor,
    predictor_kind,
)
from vilbias.models.predictors import (
    ModelOutput,
    NoLabelError,
    VLMPredictor,
    item_sentences,
)
from vilbias.task import BIASED_NAME, LABEL_NAMES, Answer, Item

DEFAULT_MODEL = str(importlib.resources.files("vilbias.training") / "default_model")
LOADED = ("The senator's reckless, disgraceful scheme will ruin families. Critics slammed the shameful stunt.\n\n"
          "The vote is on Tuesday.")


def _item(image=None, headline="Radical scheme rammed through", text=LOADED) -> Item:
    return Item("id-1", headline, text, 1, image=image)


def _png(color=(200, 30, 30)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (64, 64), color).save(buffer, format="PNG")
    return buffer.getvalue()


def test_importing_the_catalogue_and_the_predictors_imports_no_torch():
    code = "import sys, vilbias.models.catalogue, vilbias.models.predictors; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


def _check_output(out: ModelOutput) -> None:
    assert out.label in LABEL_NAMES and out.label_id == LABEL_NAMES.index(out.label)
    assert set(out.probabilities) == set(LABEL_NAMES) and sum(out.probabilities.values()) == pytest.approx(1)
    assert out.confidence == pytest.approx(out.probabilities[out.label]) and out.confidence >= 0.5
    assert out.confidence_kind


@pytest.fixture(scope="module")
def sentence_predictor():
    return load_predictor(DEFAULT_MODEL)  # kind read from its config.json


def test_the_sentence_predictor_on_the_shipped_model(sentence_predictor):
    p = sentence_predictor
    assert predictor_kind(DEFAULT_MODEL) == "sentence" and p.kind == "sentence"
    assert (p.reads_text, p.reads_image) == (True, False)
    item = _item()
    out = p.predict(item)
    _check_output(out)
    assert not out.reads_image and out.reasoning is None and out.unread_sentences == 0
    # the same numbers as one call of the model on the item's sentences
    sentences = item_sentences(item)
    assert sentences == ["Radical scheme rammed through", "The senator's reckless, disgraceful scheme will ruin families.",
                         "Critics slammed the shameful stunt.", "The vote is on Tuesday."]
    article = p.model.score_article(sentences)
    assert (out.label, out.probabilities[BIASED_NAME]) == (article.label, pytest.approx(article.probability, abs=1e-6))
    assert [s.text for s in out.sentences] == sentences and out.statistic == pytest.approx(article.statistic, abs=1e-6)
    assert out.rule == p.model.config.article_rule
    assert all(0 <= w.start < w.end <= len(s.text) and s.text[w.start:w.end] == w.text for s in out.sentences for w in s.words)
    # what the confidence is: the temperature and where it was fitted, and the article rule
    assert out.confidence_kind.startswith("the model's calibrated probability for the article (temperature 1.36 fitted on")
    assert "held-out BABE sentences" in out.confidence_kind and p.model.config.article_rule.describe() in out.confidence_kind


def test_the_sentence_predictor_splits_as_ingest_does_and_takes_a_budget():
    """The default splitter is pysbd's (vilbias.text, the one ingest counts with): "Dr.", "U.S."
    and "Jan. 5" end no sentence. Another splitter can be passed."""
    text = "Dr. Smith met the U.S. envoy on Jan. 5. It went badly."
    p = load_predictor(DEFAULT_MODEL, "sentence", max_sentences=2)
    out = p.predict(_item(text=text))
    assert [s.text for s in out.sentences] == ["Radical scheme rammed through", "Dr. Smith met the U.S. envoy on Jan. 5."]
    assert out.unread_sentences == 1
    whole = load_predictor(DEFAULT_MODEL, "sentence", split_sentences=lambda t: [t]).predict(_item(text=text))
    assert [s.text for s in whole.sentences][1:] == [text]


def test_sentence_probabilities_are_raw_and_temperature_scaled(sentence_predictor):
    raw, calibrated = sentence_predictor.sentence_probabilities(["Critics slammed the shameful stunt.", "The vote is on Tuesday."])
    t = sentence_predictor.model.config.temperature
    assert calibrated == pytest.approx([scale_probabilities([1 - r, r], t)[1] for r in raw], abs=1e-5)
    scores = sentence_predictor.model.score_sentences(["Critics slammed the shameful stunt.", "The vote is on Tuesday."])
    assert calibrated == pytest.approx([s.probability for s in scores], abs=1e-6)


def test_evaluation_loads_a_sentence_model_as_a_classifier(sentence_predictor):
    model = load_model(DEFAULT_MODEL)
    assert isinstance(model, ClassifierModel) and (model.uses_text, model.uses_image) == (True, False)
    items = [_item(), _item(headline="Council approves harbour budget", text="The council approved the budget on Tuesday.")]
    assert model.predict(items) == [sentence_predictor.predict(i).label_id for i in items]


@pytest.fixture(scope="module")
def tiny_fusion(tmp_path_factory):
    """A fusion classifier over the packaged MiniLM + EfficientNet-Lite0 with a random head (as tests/spaces builds one)."""
    import torch

    from vilbias.models.fusion import FusionConfig, FusionForClassification

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("fusion") / "model"
    FusionForClassification(FusionConfig(hidden_size=8, freeze_text_encoder=True)).save_pretrained(folder)
    return str(folder)


def test_the_fusion_predictor_scales_its_softmax_and_reads_any_image_form(tiny_fusion):
    from vilbias.task import classifier_text

    assert predictor_kind(tiny_fusion) == "fusion"
    plain = load_predictor(tiny_fusion)
    assert (plain.kind, plain.reads_text, plain.reads_image) == ("fusion", True, True)
    item = _item(image=_png())
    out = plain.predict(item)
    _check_output(out)
    assert out.reads_image and out.confidence_kind == "the classifier's softmax probability (not calibrated)"
    pil = Image.open(io.BytesIO(_png())).convert("RGB")
    raw = plain.model.predict(image=pil, text=classifier_text(item.headline, item.article_text))["probabilities"]
    assert out.probabilities == pytest.approx(raw)
    # the same item with its image as a PIL image (the Space's item) gives the same output
    space_item = type("SpaceItem", (), {"headline": item.headline, "article_text": item.article_text, "image": pil})()
    assert plain.predict(space_item).probabilities == pytest.approx(out.probabilities)
    # a removed image is read as uniform grey, not refused
    _check_output(plain.predict(_item(image=None)))

    scaled = load_predictor({"model": tiny_fusion}, "fusion", temperature=2.0, calibration="fitted on 100 validation items")
    hot = scaled.predict(item)
    names = list(raw)
    assert hot.probabilities == pytest.approx(dict(zip(names, scale_probabilities([raw[n] for n in names], 2.0), strict=True)))
    assert hot.label == out.label and hot.confidence_kind == "the classifier's calibrated probability (fitted on 100 validation items)"
    with pytest.raises(ValueError, match="positive temperature"):
        load_predictor(tiny_fusion, "fusion", temperature=0)


def test_evaluation_classifies_with_the_fusion_predictor(tiny_fusion):
    model = load_model(tiny_fusion)
    predictor = load_predictor(tiny_fusion)
    items = [_item(image=_png()), _item(image=None, headline="Council approves budget", text="The council met on Tuesday.")]
    assert isinstance(model, ClassifierModel) and (model.uses_text, model.uses_image) == (True, True)
    assert model.predict(items) == [predictor.predict(i).label_id for i in items]


def test_the_vlm_predictor_takes_the_majority_and_its_vote_share():
    calls = []

    def generate(model, processor, items, samples, max_new_tokens):
        calls.append((len(items), samples, max_new_tokens, items[0][0].size))
        return [Answer("biased", "Loaded words.", "raw"), Answer(None, "", "raw", error="no Label: line"),
                Answer("not_biased", "Even.", "raw"), Answer("biased", "Emotive.", "raw")]

    p = VLMPredictor("model", "processor", samples=4, max_new_tokens=12, generate=generate)
    out = p.predict(_item(image=None))  # no image: the VLM sees uniform grey
    assert calls == [(1, 4, 12, Image.open(io.BytesIO(grey_image())).size)]
    assert (out.label, out.confidence, out.reasoning) == ("biased", 0.5, "Loaded words.")
    assert out.probabilities == {"not_biased": 0.25, "biased": 0.5}  # vote shares: the unreadable answer counts for neither
    assert out.confidence_kind == "vote share: 2 of 4 sampled answers" and len(out.answers) == 4 and out.reads_image

    one = VLMPredictor("m", "p", samples=1, generate=lambda *a: [Answer("not_biased", "Plain.", "raw")]).predict(_item())
    assert (one.label, one.confidence, one.confidence_kind) == ("not_biased", 1.0, "a single greedy answer (no confidence)")
    with pytest.raises(NoLabelError, match="cannot parse") as e:
        VLMPredictor("m", "p", samples=2, generate=lambda *a: [Answer(None, "", "x", error="cannot parse")] * 2).predict(_item())
    assert e.value.reason == "cannot parse"


def test_the_registry_is_where_a_kind_is_added(tiny_fusion, monkeypatch):
    assert set(PREDICTORS) == {"sentence", "fusion", "vlm"}
    with pytest.raises(ValueError, match="unknown predictor kind 'llm'"):
        load_predictor(tiny_fusion, "llm")
    with pytest.raises(ValueError, match="chat backend"):
        load_predictor("smollm2")
    with pytest.raises(TypeError):
        load_predictor(tiny_fusion, "fusion", samples=3)  # another kind's option

    class Constant:
        kind, model, reads_text, reads_image = "constant", None, True, False

        def predict(self, item):
            return ModelOutput(BIASED_NAME, {"not_biased": 0.0, "biased": 1.0}, 1.0, "always biased", reads_image=False)

    monkeypatch.setitem(PREDICTORS, "constant", lambda spec, **options: Constant())
    assert load_predictor(tiny_fusion, "constant").predict(_item()).label == BIASED_NAME


def test_a_folder_that_is_no_checkpoint_has_no_predictor_kind(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a model checkpoint"):
        load_predictor(str(tmp_path))
