"""The model-free rationale check beside the judge: pass rate, problems, agreement with faithfulness."""

from __future__ import annotations

import json

import pytest

from tests.evaluate.conftest import ScriptedBackend, headline_of, two_questions
from vilbias.evaluate import EvaluateConfig, evaluate
from vilbias.evaluate.judge import rationale_check_scores
from vilbias.models.catalogue import GenerativeModel
from vilbias.rationale import ARGUES_OTHER_LABEL, QUOTE_NOT_IN_ARTICLE
from vilbias.task import Item


def _rationale(n: int, item: Item, word: str) -> str:
    """Items 0, 4, 8 quote the headline; 1, 5, 9 misquote; 2, 6 argue the other label; 3, 7 pass unquoted."""
    return [f'The headline reads "{item.headline.upper()}", in its own words.',
            'It writes "a shocking betrayal of voters" about the plan.',
            "The report is neutral and balanced." if word == "biased" else "The report is one-sided and loaded.",
            "The headline sets out the facts of the story."][n % 4]


def test_evaluate_reports_the_check_beside_the_judge(sample_dataset_dir, test_items, tmp_path):
    ovqa, faithful = {}, {}
    for n, item in enumerate(test_items):
        word = "biased" if item.label else "not biased"
        ovqa[item.headline] = f"Label: {word}\nReasoning: {_rationale(n, item, word)}"
        faithful[item.headline] = int(n % 4 in (0, 1))  # the judge misses the misquote and the unquoted 3, 7
    model = GenerativeModel(ScriptedBackend(two_questions(lambda m: "biased", lambda m: ovqa[headline_of(m)])), name="stub")
    judge = GenerativeModel(ScriptedBackend(lambda m: json.dumps(
        {"reasoning_accuracy": 1, "faithfulness": faithful[headline_of(m)], "justification": "scripted"})), name="judge")
    results = evaluate(EvaluateConfig(dataset=str(sample_dataset_dir), model="stub", judge="judge", output=tmp_path / "run",
                                      bootstrap=50), model=model, judge=judge)

    check = results["evaluations"][0]["rationale_check"]
    assert (check["n"], check["passed"], check["pass_percent"]) == (10, 5, 50.0)
    assert check["problems"] == {QUOTE_NOT_IN_ARTICLE: 3, ARGUES_OTHER_LABEL: 2}
    assert check["judged"] == 10 and check["agreement_percent"] == pytest.approx(50.0)
    assert (check["check_passes_judge_unfaithful"], check["check_fails_judge_faithful"]) == (2, 3)
    assert json.loads((tmp_path / "run" / "results.json").read_text())["evaluations"][0]["rationale_check"] == check
    report = (tmp_path / "run" / "report.md").read_text()
    assert "## Rationale check (model-free)" in report
    assert "| default/test | 0-shot | none | 50.0 | 60.0 | 50.0 | 2 | 3 | quote_not_in_article 3, argues_other_label 2 |" in report


def test_scores_use_the_models_label_and_skip_failed_verdicts():
    item = Item("x", "Council backs plan", "The council backed the plan by seven votes to two.", label=1)
    answers = [{"label": 0, "reasoning": "The report gives the vote plainly and attributes it."},
               {"label": None, "reasoning": "The report is neutral and balanced."},  # no label given: the gold one
               {"label": 1, "reasoning": ""}]
    verdicts = [{"status": "ok", "faithfulness": 1}, {"status": "failed"}, {"status": "ok", "faithfulness": 0, "source": "rule"}]
    scores = rationale_check_scores([item] * 3, answers, verdicts)
    assert scores["passed"] == 1 and scores["problems"] == {"empty": 1, ARGUES_OTHER_LABEL: 1}
    assert scores["judged"] == 2 and scores["agreement_percent"] == 100.0
