"""Closed-ended metrics from the packaged evaluate modules: hand-computed values, scikit-learn agreement."""

from __future__ import annotations

import os

import pytest
from sklearn.metrics import accuracy_score, confusion_matrix, precision_recall_fscore_support

from vilbias.metrics.scores import (
    METRICS_DIR,
    as_scored,
    bootstrap_ci,
    closed_metrics,
    load_metric,
    mean_std,
    open_scores,
    summarize,
)

# Gold: five biased, three not. Two answers unparseable (None), scored as wrong:
# scored predictions [1,1,1,0,0,0,1,1] -> TP=3, FN=2, TN=1, FP=2.
REFS = [1, 1, 1, 1, 1, 0, 0, 0]
PREDS = [1, 1, 1, 0, None, 0, 1, None]


def test_hand_computed_values():
    m = closed_metrics(REFS, PREDS)
    assert m["n"] == 8 and m["unparseable"] == 2 and m["unparseable_rate"] == 0.25
    assert m["accuracy"] == pytest.approx(4 / 8)
    assert m["precision_binary"] == pytest.approx(3 / 5) and m["recall_binary"] == pytest.approx(3 / 5)
    assert m["f1_binary"] == pytest.approx(3 / 5)
    # not_biased: P = 1/3, R = 1/3, F1 = 1/3
    assert m["precision_macro"] == pytest.approx((3 / 5 + 1 / 3) / 2)
    assert m["f1_macro"] == pytest.approx((3 / 5 + 1 / 3) / 2)
    assert m["f1_weighted"] == pytest.approx((5 * 3 / 5 + 3 * 1 / 3) / 8)
    assert m["confusion_matrix"] == [[1, 2], [2, 3]]


@pytest.mark.parametrize("seed", range(5))
def test_agrees_with_scikit_learn(seed):
    import random

    rng = random.Random(seed)
    refs = [rng.randint(0, 1) for _ in range(37)]
    preds = [rng.choice([0, 1, None]) for _ in range(37)]
    scored = as_scored(refs, preds)
    m = closed_metrics(refs, preds)
    assert m["accuracy"] == pytest.approx(accuracy_score(refs, scored))
    for average in ("binary", "macro", "weighted"):
        p, r, f, _ = precision_recall_fscore_support(refs, scored, average=average, labels=[0, 1], zero_division=0)
        assert (m[f"precision_{average}"], m[f"recall_{average}"], m[f"f1_{average}"]) == pytest.approx((p, r, f))
    assert m["confusion_matrix"] == confusion_matrix(refs, scored, labels=[0, 1]).tolist()
    # closed_ended/ (one computation) gives to the last digit what the single-score modules give
    single = {"accuracy": load_metric("accuracy").compute(predictions=scored, references=refs)["accuracy"],
              "confusion_matrix": load_metric("confusion_matrix").compute(predictions=scored, references=refs)["confusion_matrix"]}
    for average in ("binary", "macro", "weighted"):
        single |= {f"{name}_{average}": load_metric(name).compute(predictions=scored, references=refs, average=average)[name]
                   for name in ("precision", "recall", "f1")}
    assert {key: m[key] for key in single} == single


def test_unparseable_is_wrong_never_dropped():
    assert as_scored([1, 0], [None, None]) == [0, 1]
    m = closed_metrics([1, 0], [None, None])
    assert m["accuracy"] == 0.0 and m["n"] == 2 and m["unparseable_rate"] == 1.0


def test_modules_load_offline_by_path():
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    import evaluate

    f1 = evaluate.load(str(METRICS_DIR / "f1"))
    assert f1.compute(predictions=[1, 0, 1, 1], references=[1, 1, 0, 1])["f1"] == pytest.approx(2 / 3)
    assert load_metric("recall").compute(predictions=[0, 0], references=[1, 0], average="macro")["recall"] == 0.5
    with pytest.raises(ValueError, match="unknown metric"):
        load_metric("bleu")
    with pytest.raises(ValueError, match="empty"):
        closed_metrics([], [])


def test_open_scores_bootstrap_and_failures():
    verdicts = [{"status": "ok", "reasoning_accuracy": 1, "faithfulness": i % 2} for i in range(8)]
    verdicts += [{"status": "ok", "source": "rule", "reasoning_accuracy": 0, "faithfulness": 0},
                 {"status": "failed", "error": "not JSON"}]
    o = open_scores(verdicts, resamples=500, seed=0)
    assert (o["n"], o["judged"], o["judge_failures"], o["rule_zero"]) == (10, 9, 1, 1)
    assert o["judge_failure_rate"] == 0.1
    assert o["reasoning_accuracy"]["percent"] == pytest.approx(800 / 9)
    assert o["faithfulness"]["percent"] == pytest.approx(400 / 9)
    lo, hi = o["faithfulness"]["ci95"]
    assert 0 <= lo < 400 / 9 < hi <= 100
    assert bootstrap_ci([1.0] * 5) == (1.0, 1.0)


def test_mean_std_and_fold_summary():
    assert mean_std([0.5, 0.7, 0.6]) == pytest.approx({"mean": 0.6, "std": 0.1})
    assert mean_std([0.4]) == {"mean": 0.4, "std": 0.0}
    views = [{"closed": closed_metrics(REFS, PREDS), "open": None}, {"closed": closed_metrics(REFS, REFS), "open": None}]
    s = summarize(views)
    assert s["closed"]["accuracy"]["mean"] == pytest.approx(0.75)
    assert s["confusion_matrix"] == [[4, 2], [2, 8]] and s["open"] is None
