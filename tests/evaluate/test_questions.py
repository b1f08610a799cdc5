"""The paper's two questions: closed (label only, strictly parsed) and oVQA (label + reasoning), asked
as separate generations; closed metrics come from the first, judge scores from the second."""

from __future__ import annotations

import json

import pytest

from tests.evaluate.conftest import (
    ScriptedBackend,
    headline_of,
    is_closed,
    last_user_text,
    two_questions,
)
from vilbias.evaluate import EvaluateConfig, evaluate
from vilbias.models.catalogue import GenerativeModel
from vilbias.task import CLOSED_QUESTION, QUESTION, parse_closed_answer


@pytest.mark.parametrize("text, label", [
    ("biased", "biased"), ("Not biased.", "not_biased"), ("  not_biased\n", "not_biased"), ("**Label:** Biased", "biased"),
    ("unbiased", "not_biased"), ('"biased"', "biased"), ("Label = not-biased", "not_biased"),
])
def test_closed_answer_is_the_label_alone(text, label):
    answer = parse_closed_answer(text)
    assert (answer.label, answer.reasoning, answer.error) == (label, None, None)


@pytest.mark.parametrize("text", [
    "Label: biased\nReasoning: loaded words",  # the oVQA format is not a label-only answer
    "The article is biased.", "biased, because of the headline", "yes", "neutral", "maybe", "", "biased\nnot biased",
])
def test_closed_answer_with_anything_more_is_unparseable(text):
    answer = parse_closed_answer(text)
    assert answer.label is None and "not a label-only answer" in answer.error and answer.raw == text


def test_closed_and_ovqa_come_from_separate_generations(sample_dataset_dir, test_items, tmp_path):
    """The closed question is answered right for every item, the oVQA question wrong for every item: the
    closed metrics must be 1.0 and the judge must see only the oVQA rationales. Parsing the closed label
    out of the oVQA answer (one generation serving both) gives 0.0 and fails here."""
    gold = {i.headline: i.label for i in test_items}
    word = {1: "biased", 0: "not biased"}
    model = GenerativeModel(ScriptedBackend(two_questions(
        lambda m: word[gold[headline_of(m)]],
        lambda m: f"Label: {word[1 - gold[headline_of(m)]]}\nReasoning: oVQA rationale for {headline_of(m)}")), name="stub")
    judge = ScriptedBackend(lambda m: '{"reasoning_accuracy": 0, "faithfulness": 1, "justification": "j"}')
    cfg = EvaluateConfig(dataset=str(sample_dataset_dir), model="stub", judge="j", output=tmp_path / "run", bootstrap=20,
                         max_new_tokens=99, closed_max_new_tokens=7)
    results = evaluate(cfg, model=model, judge=GenerativeModel(judge, name="j"))

    (plain,) = results["evaluations"]
    assert plain["closed"]["accuracy"] == 1.0 and plain["closed"]["unparseable"] == 0
    assert plain["open"]["reasoning_accuracy"]["percent"] == 0.0 and plain["open"]["faithfulness"]["percent"] == 100.0
    requests = model.backend.requests
    assert len(requests) == 2 * len(test_items)
    for item in test_items:
        asked = [r for r in requests if headline_of(r.messages) == item.headline]
        assert sorted(is_closed(r.messages) for r in asked) == [False, True]  # one generation per question
        closed, ovqa = sorted(asked, key=lambda r: not is_closed(r.messages))
        assert last_user_text(closed.messages).endswith(CLOSED_QUESTION) and last_user_text(ovqa.messages).endswith(QUESTION)
        assert (closed.params["max_tokens"], ovqa.params["max_tokens"]) == (7, 99)
    judged = [last_user_text(r.messages) for r in judge.requests]
    assert len(judged) == len(test_items) and all("oVQA rationale for" in text for text in judged)
    assert all("Model's predicted label: " + word[1 - gold[h]] in t for t in judged for h in gold if h in t)
    saved = json.loads((tmp_path / "run" / "results.json").read_text())
    assert saved["questions"] == {"closed": "label only (generated, strictly parsed)", "ovqa": "label + reasoning (judged)"}
    assert "separate generations" in (tmp_path / "run" / "report.md").read_text()


def test_without_a_judge_only_the_closed_question_is_asked(sample_dataset_dir, test_items, tmp_path):
    backend = ScriptedBackend(two_questions(lambda m: "biased", lambda m: pytest.fail("oVQA asked without a judge")))
    results = evaluate(EvaluateConfig(dataset=str(sample_dataset_dir), model="stub", output=tmp_path / "run"),
                       model=GenerativeModel(backend, name="stub"))
    assert len(backend.requests) == len(test_items) and all(is_closed(r.messages) for r in backend.requests)
    assert results["evaluations"][0]["open"] is None and results["questions"]["ovqa"] is None
    assert results["closed_vs_open"] is None


def test_pearson_r_over_a_runs_settings(sample_dataset_dir, test_items, tmp_path):
    """Regimes × probes of one run give the points of the closed-vs-open correlation."""
    gold = {i.headline: i.label for i in test_items}
    order = [i.headline for i in test_items]

    def closed(messages):  # k-shot answers more items right than zero-shot; headline_only fewer
        text = last_user_text(messages)
        right = (3 if len(messages) == 1 else 8) - (2 if "Article: \n" in text else 0)
        headline = headline_of(messages)
        return ["not biased", "biased"][gold[headline] if order.index(headline) < right else 1 - gold[headline]]

    def judge(messages):
        text = last_user_text(messages)
        return json.dumps({"reasoning_accuracy": int("RATIONALE-OK" in text), "faithfulness": 1, "justification": "j"})

    def ovqa(messages):
        return f"Label: biased\nReasoning: {closed(messages) == ['not biased', 'biased'][gold[headline_of(messages)]] and 'RATIONALE-OK' or 'RATIONALE-OFF'}"

    cfg = EvaluateConfig(dataset=str(sample_dataset_dir), model="stub", judge="j", shots=[0, 2], probes=["headline_only"],
                         output=tmp_path / "run", bootstrap=20)
    results = evaluate(cfg, model=GenerativeModel(ScriptedBackend(two_questions(closed, ovqa)), name="stub"),
                       judge=GenerativeModel(ScriptedBackend(judge), name="j"))
    c = results["closed_vs_open"]
    assert [p["label"] for p in c["points"]] == ["0-shot none", "0-shot headline_only", "2-shot none", "2-shot headline_only"]
    assert [p["accuracy"] for p in c["points"]] == [30.0, 10.0, 80.0, 60.0]
    assert c["pearson"]["n"] == 4 and c["pearson"]["r"] == pytest.approx(1.0)
    assert "closed_vs_open.png" in results["plots"] and "Pearson r = 1.000" in (tmp_path / "run" / "report.md").read_text()
