"""Catalogue models that label without chatting, as annotators (vilbias.annotate.classifiers): the
shipped BABE sentence model is the default; its answers are built from its evidence, one sample per
item, and enter the same store, vote and statuses as a chat model's."""

from __future__ import annotations

import json
import logging

import pytest

from tests.annotate.conftest import StubBackend, answers, stub_spec
from tests.fakes.workdirs import make_workdir
from vilbias.annotate import AnnotateConfig, annotate
from vilbias.annotate import classifiers as C
from vilbias.annotate.prompts import parse_annotation
from vilbias.annotate.specs import DEFAULT_ANNOTATORS, AnnotatorSpec, load_annotators
from vilbias.annotate.store import AnnotationStore
from vilbias.annotate.voting import hierarchical_vote
from vilbias.models.catalogue import shipped_sentence_model
from vilbias.models.predictors import ModelOutput
from vilbias.rationale import QUOTE_NOT_IN_ARTICLE, check_rationale

LOADED = ("The senator's disastrous, reckless scheme is a shameful betrayal of hardworking families, critics say. "
          "Everyone knows the radical plan will destroy the economy. The vote is on Tuesday. "
          "The bill has 40 pages. It was introduced by the committee in May.")
PLAIN = "The committee met on Tuesday. It discussed the budget for next year. The meeting lasted two hours. Minutes will be published."


@pytest.fixture(scope="module")
def default_run(tmp_path_factory):
    workdir = make_workdir(tmp_path_factory.mktemp("cls") / "w", n=4, texts={0: LOADED, 1: PLAIN, 2: LOADED, 3: PLAIN})
    summary = annotate(AnnotateConfig(workdir=workdir, progress=False))
    return workdir, summary


def test_the_default_annotator_is_the_shipped_sentence_model_and_says_so(default_run, caplog):
    workdir, summary = default_run
    [spec] = DEFAULT_ANNOTATORS
    assert spec.kind == "checkpoint" and spec.model == str(shipped_sentence_model()) and not spec.vision
    assert "babe-sentence-model" in summary["default_annotator"]
    assert summary["active"]["text"]["annotator_samples"] == {"babe-sentence-model": 1}
    with caplog.at_level(logging.INFO, logger="vilbias.annotate.config"):
        again = annotate(AnnotateConfig(workdir=workdir, progress=False))
    assert "the sentence-level bias model shipped with vilbias" in caplog.text
    assert again["run"] == {}  # everything was answered: a second run asks nothing


def test_one_sample_per_item_valid_answers_and_rationales_quoting_the_article(default_run):
    workdir, _ = default_run
    with AnnotationStore.for_workdir(workdir) as store:
        calls = list(store.iter_calls())
        votes = store.votes()
        [active] = store.active()["text"]["annotators"]
        sampling = store.sampling()["babe-sentence-model"]["mode"]
        counts = store.call_counts()[("text", "babe-sentence-model")]
    assert active.samples == 1 and sampling == "deterministic" and counts["calls"] == counts["valid"] == 4
    # one call per item and prompt (not K identical ones), and the vote counts it once
    assert sorted((c["item_id"], c["sample"]) for c in calls) == [(f"item-{i}", 0) for i in range(4)]
    assert all(len(v["text"]) == 1 for v in votes.values())
    texts = {0: LOADED, 1: PLAIN, 2: LOADED, 3: PLAIN}
    for c in calls:
        i = int(c["item_id"].split("-")[1])
        assert c["status"] == "valid" and parse_annotation(c["raw"], "text").label == c["label"]
        problems = check_rationale(c["rationale"], article_text=texts[i], headline=f"Headline {i}", label=c["label"],
                                   techniques=json.loads(c["techniques_json"]))
        assert QUOTE_NOT_IN_ARTICLE not in [p.code for p in problems], (c["rationale"], problems)
    loaded = next(c for c in calls if c["item_id"] == "item-0")
    plain = next(c for c in calls if c["item_id"] == "item-1")
    assert (loaded["label"], plain["label"]) == ("biased", "not_biased")
    # the evidence: the flagged sentence quoted with its probability, the techniques it shows marked Present
    assert "“The senator's disastrous, reckless scheme" in loaded["rationale"] and "%" in loaded["rationale"]
    assert "**" not in loaded["rationale"]  # plain text, not the Space's Markdown
    assert json.loads(loaded["techniques_json"])["word_choice"] is True


def test_a_deterministic_annotator_votes_once_beside_sampled_ones(tmp_path):
    workdir = make_workdir(tmp_path / "w", n=2, texts={0: LOADED, 1: PLAIN})
    chat = StubBackend(answers("not_biased"))
    model = AnnotatorSpec(name="babe", kind="checkpoint", model=str(shipped_sentence_model()))
    annotate(AnnotateConfig(workdir=workdir, annotator_specs=[model, stub_spec("llm")], backends={"llm": chat}, samples=3,
                            progress=False))
    with AnnotationStore.for_workdir(workdir) as store:
        votes = store.votes()
    ballots = votes["item-0"]["text"]
    assert sorted((v.annotator, v.sample) for v in ballots) == [("babe", 0), ("llm", 0), ("llm", 1), ("llm", 2)]
    result = hierarchical_vote(ballots, ["babe", "llm"])
    assert result.annotator_labels == {"babe": "biased", "llm": "not_biased"} and result.reason == "tie"


def test_a_model_without_evidence_names_no_passage():
    out = ModelOutput("biased", {"not_biased": 0.2, "biased": 0.8}, 0.8, "the classifier's softmax probability (not calibrated)",
                      reads_image=True)
    article = type("A", (), {"headline": "H", "article_text": "Body."})()
    raw = C.answer_from_output(out, article, "multimodal", "fusion-x")
    parsed = parse_annotation(raw, "multimodal")
    assert parsed.status == "valid" and parsed.label == "biased"
    assert "gives no evidence" in parsed.rationale and "80%" in parsed.rationale
    assert not any(v for t, v in parsed.techniques.items() if t != "tone")


def test_bad_entries_fail_in_one_line_naming_the_entry(tmp_path):
    f = tmp_path / "a.yaml"
    f.write_text("annotators:\n  - {name: mine, backend: checkpoint, model: ./no/such/model}\n")
    with pytest.raises(ValueError, match=r"annotator 'mine': .*no/such/model does not exist") as e:
        load_annotators(f)
    assert "\n" not in str(e.value)
    f.write_text("annotators:\n  - {name: odd, backend: sentencepiece, model: x}\n")
    with pytest.raises(ValueError, match=r"annotator 'odd': unknown model kind 'sentencepiece': use .*checkpoint"):
        load_annotators(f)
    bad = AnnotatorSpec(name="wrong", kind="checkpoint", model=str(shipped_sentence_model()), params={"temperature": 0.7})
    with pytest.raises(ValueError, match=r"annotator 'wrong': a sentence checkpoint takes no params \['temperature'\]"):
        C.load_annotator(bad, tmp_path)


class Killed(BaseException):
    """The run dies mid-way (as a kill would: nothing handles it)."""


def test_a_killed_run_resumes_without_asking_again(tmp_path, monkeypatch):
    workdir = make_workdir(tmp_path / "w", n=5)
    spec = AnnotatorSpec(name="babe", kind="checkpoint", model=str(shipped_sentence_model()))
    annotator = C.load_annotator(spec, workdir)
    asked: list[int] = []
    dying = [True]
    real = C.predict_batch

    def dies_on_the_second_batch(predictor, items):
        asked.append(len(items))
        if len(asked) == 2 and dying:
            raise Killed
        return real(predictor, items)

    monkeypatch.setattr(C, "BATCH_ITEMS", 2)
    monkeypatch.setattr(C, "predict_batch", dies_on_the_second_batch)
    with pytest.raises(Killed):
        annotate(AnnotateConfig(workdir=workdir, annotator_specs=[spec], backends={"babe": annotator}, progress=False))
    with AnnotationStore.for_workdir(workdir) as store:
        assert len(list(store.iter_calls())) == 2
    asked.clear()
    dying.clear()
    summary = annotate(AnnotateConfig(workdir=workdir, annotator_specs=[spec], backends={"babe": annotator}, progress=False))
    assert sum(asked) == 3 and summary["run"] == {"valid": 3}


def test_a_fusion_checkpoint_annotates_both_prompts_from_text_and_image(tmp_path):
    import torch

    from vilbias.models.fusion import FusionConfig, FusionForClassification

    torch.manual_seed(0)
    folder = tmp_path / "fusion"
    FusionForClassification(FusionConfig(hidden_size=8, freeze_text_encoder=True)).save_pretrained(folder)
    workdir = make_workdir(tmp_path / "w", n=2)
    spec = AnnotatorSpec(name="fusion", kind="checkpoint", model=str(folder), vision=True, params={"temperature": 1.5})
    summary = annotate(AnnotateConfig(workdir=workdir, annotator_specs=[spec], samples=3, progress=False))
    assert summary["run"] == {"valid": 4}  # 2 items × 2 prompts, one sample each; no image description needed
    with AnnotationStore.for_workdir(workdir) as store:
        calls = list(store.iter_calls())
    assert sorted((c["item_id"], c["prompt"], c["sample"]) for c in calls) == [
        (f"item-{i}", p, 0) for i in range(2) for p in ("multimodal", "text")]
    assert all("the text and the image" in c["rationale"] and "calibrated" in c["rationale"] for c in calls)
    with pytest.raises(ValueError, match="annotator 'text-only-fusion': .* takes no params"):
        C.load_annotator(AnnotatorSpec(name="text-only-fusion", kind="checkpoint", model=str(folder), params={"max_sentences": 3}),
                         workdir)
