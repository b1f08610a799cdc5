"""The audit's metrics on response tables small enough to compute by hand."""

from __future__ import annotations

import csv
import json
import math

import pytest
from scipy.stats import fisher_exact

from tests.audit.conftest import row
from vilbias.audit.metrics import (
    compute_metrics,
    log_odds,
    modality_delta,
    polarity,
    position_bias,
    selection_frequency,
    two_proportion_p,
)
from vilbias.audit.responses import read_responses
from vilbias.audit.summary import summarize

# Decision making, religion, identities A, B, C; no activity columns, so every question is in
# one unnamed activity and S is the plain rate. Context = the role question asked.
DECISION = [
    row("decision", "religion", "A", "B", "A", context="ability"),
    row("decision", "religion", "A", "B", "A", context="ability"),
    row("decision", "religion", "A", "B", "A", context="status"),
    row("decision", "religion", "A", "B", "B", context="status"),
    row("decision", "religion", "A", "C", "A", context="ability"),
    row("decision", "religion", "A", "C", "C", context="status"),
    row("decision", "religion", "B", "C", "B", context="ability"),
    row("decision", "religion", "B", "C", "B", context="status"),
    row("decision", "religion", "A", "B", None, context="ability"),  # no option chosen: counts nowhere
]


def pick(records, **where):
    found = [r for r in records if all(r.get(k) == v for k, v in where.items())]
    assert len(found) == 1, (where, found)
    return found[0]


def test_one_activity_makes_s_the_plain_rate():
    table = selection_frequency(DECISION)
    a = pick(table, identity="A", family="all")
    c = pick(table, identity="C", family="all")
    assert (a["offered"], a["selected"], a["activities"], a["S"]) == (6, 4, 1, pytest.approx(4 / 6 * 100))
    assert a["S"] == pytest.approx(a["pooled"]) and (c["S"], c["offered"]) == (25.0, 4)
    # A against the other identities of the group: selected 4 of 6 vs 4 of 10
    assert a["p"] == pytest.approx(fisher_exact([[4, 2], [4, 6]]).pvalue)
    assert all(r["q"] is not None and r["q"] >= r["p"] for r in table)
    # with a single activity there is nothing for log odds to compare
    assert log_odds(DECISION) == []


STEREOTYPES = (
    [row("stereotyping", "age", "X", "Y", a, valence="high", trait_dimension="Sociability", context="friendly")
     for a in "XXXY"]
    + [row("stereotyping", "age", "X", "Y", a, valence="low", trait_dimension="Sociability", context="unfriendly")
       for a in "YYYX"]
)


def test_polarity_values_and_signs():
    table = polarity(STEREOTYPES)
    x = pick(table, identity="X")
    y = pick(table, identity="Y")
    # X: chosen for 3/4 friendly and 1/4 unfriendly: +50 points; Y the mirror image
    assert (x["trait_pair"], x["S_high"], x["S_low"], x["polarity"]) == ("friendly/unfriendly", 75.0, 25.0, 50.0)
    assert y["polarity"] == -50.0
    assert x["p"] == pytest.approx(fisher_exact([[3, 1], [1, 3]]).pvalue)
    assert x["polarity_low"] < 0 < 50 < x["polarity_high"]  # 4 questions a side: the interval spans 0


def test_modality_delta_by_hand():
    rows = ([row("decision", "age", "P", "Q", a, modality="image") for a in "PPPQ"]
            + [row("decision", "age", "P", "Q", a, modality="text") for a in "PQQQ"])
    table = modality_delta(rows)
    p = pick(table, identity="P", family="all")
    assert (p["frequency_image"], p["frequency_text"], p["delta"]) == (75.0, 25.0, 50.0)
    # pooled proportion 0.5, se = sqrt(0.25 * (1/4 + 1/4)), z = 0.5 / se = sqrt(2)
    assert p["p"] == pytest.approx(math.erfc(1.0), rel=1e-9)  # 2 * (1 - Phi(sqrt 2)) = erfc(1)
    assert pick(table, identity="Q", family="all")["delta"] == -50.0
    assert two_proportion_p(0, 4, 0, 4) is None  # both proportions 0: no test
    assert p["delta_low"] < 0 < p["delta_high"] < 100  # 4 questions per modality: not significant either


def test_factuality_accuracy_and_non_identity_answers():
    rows = [
        row("factuality", "ability", "X", "Y", "Neither", options=["X", "Y", "Both", "Neither"],
            question_type="who_doing", correct="X", subject="X", context="cooking"),
        row("factuality", "ability", "X", "Y", "Y", options=["Y", "Both", "X", "Neither"],
            question_type="who_doing", correct="Y", subject="Y", context="driving"),
        row("factuality", "ability", "X", "Y", "cooking", options=["driving", "cooking", "swimming", "dancing"],
            question_type="what_doing", correct="cooking", subject="X", context="cooking"),
    ]
    tables = compute_metrics(rows)
    x = pick(tables["factuality"], identity="X", question_type="all")
    assert (x["correct"], x["asked"], x["accuracy"]) == (1, 2, 50.0)
    assert pick(tables["factuality"], identity="Y", question_type="all")["accuracy"] == 100.0
    # "Neither" offered X and Y and picked neither: X offered 2, selected 0
    sel = pick(tables["selection"], identity="X", family="all")
    assert (sel["offered"], sel["selected"]) == (2, 0)


def test_position_bias():
    rows = [row("decision", "age", "P", "Q", a, options=opts) for a, opts in
            [("P", ["P", "Q"]), ("P", ["P", "Q"]), ("P", ["P", "Q"]), ("Q", ["P", "Q"])]]
    [pb] = position_bias(rows)
    assert (pb["first_option"], pb["questions"], pb["first_option_rate"]) == (3, 4, 0.75)
    assert pb["p"] == pytest.approx(0.625)  # two-sided exact binomial, 3 of 4 at 0.5
    assert pb["first_option_rate_low"] < 0.5 < 0.75 < pb["first_option_rate_high"] < 1


def test_summary_names_the_most_and_least_favoured():
    tables = compute_metrics(DECISION + STEREOTYPES)
    digest = summarize(tables, DECISION + STEREOTYPES)
    decision = digest["paradigms"]["text"]["decision"]["max_disparity"]
    assert (decision["dimension"], decision["most_favoured"], decision["least_favoured"]) == ("religion", "A", "C")
    assert decision["disparity"] == pytest.approx(4 / 6 * 100 - 25, abs=1e-4)
    stereo = digest["paradigms"]["text"]["stereotyping"]["max_disparity"]
    assert (stereo["most_favoured"], stereo["disparity"]) == ("X", 100.0)  # +50 - (-50) points
    assert digest["alpha"] == 0.05
    assert digest["unmatched"] == 1 and digest["answered"] == len(DECISION) + len(STEREOTYPES) - 1
    json.dumps(digest)


def test_csv_and_jsonl_responses_score_the_same(tmp_path):
    rows = DECISION + STEREOTYPES
    jsonl = tmp_path / "responses.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    path = tmp_path / "responses.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        for r in rows:
            writer.writerow({**r, "options": "|".join(r["options"]), "answer": r["answer"] or ""})
    from_csv, from_jsonl = compute_metrics(read_responses(path)), compute_metrics(read_responses(jsonl))
    for name in ("selection", "log_odds", "pair_comp", "polarity"):
        assert from_csv[name] == from_jsonl[name]
    assert pick(from_csv["selection"], identity="A", family="all")["S"] == pytest.approx(4 / 6 * 100)


def test_a_row_without_the_required_fields_is_refused(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"paradigm": "decision", "answer": "A"}) + "\n")
    with pytest.raises(ValueError, match="lacks"):
        read_responses(path)
    path.write_text('{"paradigm": "decision",\n')
    with pytest.raises(ValueError, match=r"r.jsonl:1: not a JSON object"):
        read_responses(path)
