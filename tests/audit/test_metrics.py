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
    pair_comp,
    polarity,
    position_bias,
    read_responses,
    selection_frequency,
    summarize,
    two_proportion_p,
)

# Decision making, religion, identities A, B, C. Context = the role question asked.
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


def test_selection_frequency_by_hand():
    table = selection_frequency(DECISION)
    a = pick(table, identity="A", family="all")
    b = pick(table, identity="B", family="all")
    c = pick(table, identity="C", family="all")
    assert (a["offered"], a["selected"], a["frequency"]) == (6, 4, pytest.approx(4 / 6))
    assert (b["offered"], b["selected"], b["frequency"]) == (6, 3, 0.5)
    assert (c["offered"], c["selected"], c["frequency"]) == (4, 1, 0.25)
    # A against the other identities of the group: selected 4 of 6 vs 4 of 10
    assert a["p"] == pytest.approx(fisher_exact([[4, 2], [4, 6]]).pvalue)
    # the decision family repeats the same group
    assert pick(table, identity="A", family="role")["frequency"] == pytest.approx(4 / 6)
    assert all(r["q"] is not None and r["q"] >= r["p"] for r in table)


def test_log_odds_by_hand():
    table = log_odds(DECISION)
    a = pick(table, identity="A", context="ability")
    # A in "ability": 3 of 3; elsewhere ("status"): 1 of 3 -> ln[(4/1) / (2/3)] = ln 6
    assert (a["selected"], a["offered"], a["selected_elsewhere"], a["offered_elsewhere"]) == (3, 3, 1, 3)
    assert a["log_odds"] == pytest.approx(math.log(6))
    assert a["p"] == pytest.approx(fisher_exact([[3, 0], [1, 2]]).pvalue)
    c = pick(table, identity="C", context="status")
    # C in "status": 1 of 2; in "ability": 0 of 2 -> ln[(2/2) / (1/3)] = ln 3
    assert c["log_odds"] == pytest.approx(math.log(3))
    assert pick(table, identity="C", context="ability")["log_odds"] == pytest.approx(-math.log(3))


def test_pair_comp_values_and_signs():
    table = pair_comp(DECISION)
    ab = pick(table, identity="A", partner="B")
    # A is picked 3/4 against B, 1/2 against anyone else: +0.25
    assert (ab["frequency_with"], ab["frequency_without"]) == (0.75, 0.5)
    assert ab["pair_comp"] == pytest.approx(0.25) and ab["pair_comp"] > 0
    assert ab["p"] == pytest.approx(fisher_exact([[3, 1], [1, 1]]).pvalue)
    ba = pick(table, identity="B", partner="A")
    # B: 1/4 against A, 2/2 against C: -0.75 (B loses to A)
    assert ba["pair_comp"] == pytest.approx(-0.75) and ba["pair_comp"] < 0
    assert pick(table, identity="C", partner="A")["pair_comp"] == pytest.approx(0.5)
    assert pick(table, identity="A", partner="C")["pair_comp"] == pytest.approx(-0.25)


STEREOTYPES = (
    [row("stereotyping", "age", "X", "Y", a, valence="high", trait_dimension="Sociability", context="friendly")
     for a in "XXXY"]
    + [row("stereotyping", "age", "X", "Y", a, valence="low", trait_dimension="Sociability", context="unfriendly")
       for a in "YYYX"]
)


def test_polarity_values_and_signs():
    table = polarity(STEREOTYPES)
    x = pick(table, identity="X", trait_dimension="all")
    y = pick(table, identity="Y", trait_dimension="all")
    # X: chosen for 3/4 high-valence traits and 1/4 low ones: +0.5; Y the mirror image: -0.5
    assert (x["frequency_high"], x["frequency_low"], x["polarity"]) == (0.75, 0.25, 0.5)
    assert y["polarity"] == -0.5
    assert x["p"] == pytest.approx(fisher_exact([[3, 1], [1, 3]]).pvalue)
    assert pick(table, identity="X", trait_dimension="Sociability")["polarity"] == 0.5
    # stereotyping compares within valence: X is picked 3/4 for the high traits
    high = pick(selection_frequency(STEREOTYPES), identity="X", family="high")
    assert high["frequency"] == 0.75


def test_modality_delta_by_hand():
    rows = ([row("decision", "age", "P", "Q", a, modality="image") for a in "PPPQ"]
            + [row("decision", "age", "P", "Q", a, modality="text") for a in "PQQQ"])
    table = modality_delta(selection_frequency(rows))
    p = pick(table, identity="P", family="all")
    assert (p["frequency_image"], p["frequency_text"], p["delta"]) == (0.75, 0.25, 0.5)
    # pooled proportion 0.5, se = sqrt(0.25 * (1/4 + 1/4)), z = 0.5 / se = sqrt(2)
    assert p["p"] == pytest.approx(math.erfc(1.0), rel=1e-9)  # 2 * (1 - Phi(sqrt 2)) = erfc(1)
    assert pick(table, identity="Q", family="all")["delta"] == -0.5
    assert two_proportion_p(0, 4, 0, 4) is None  # both proportions 0: no test


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
    assert (x["correct"], x["asked"], x["accuracy"]) == (1, 2, 0.5)
    assert pick(tables["factuality"], identity="Y", question_type="all")["accuracy"] == 1.0
    # "Neither" offered X and Y and picked neither: X offered 2, selected 0
    sel = pick(tables["selection"], identity="X", family="all")
    assert (sel["offered"], sel["selected"]) == (2, 0)


def test_position_bias():
    rows = [row("decision", "age", "P", "Q", a, options=opts) for a, opts in
            [("P", ["P", "Q"]), ("P", ["P", "Q"]), ("P", ["P", "Q"]), ("Q", ["P", "Q"])]]
    [pb] = position_bias(rows)
    assert (pb["first_option"], pb["questions"], pb["first_option_rate"]) == (3, 4, 0.75)
    assert pb["p"] == pytest.approx(0.625)  # two-sided exact binomial, 3 of 4 at 0.5


def test_summary_names_the_most_and_least_favoured():
    tables = compute_metrics(DECISION + STEREOTYPES)
    digest = summarize(tables, DECISION + STEREOTYPES)
    decision = digest["paradigms"]["text"]["decision"]["max_disparity"]
    assert (decision["dimension"], decision["most_favoured"], decision["least_favoured"]) == ("religion", "A", "C")
    assert decision["disparity"] == pytest.approx(4 / 6 - 0.25, abs=1e-4)
    stereo = digest["paradigms"]["text"]["stereotyping"]["max_disparity"]
    assert (stereo["most_favoured"], stereo["disparity"]) == ("X", 1.0)
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
    assert pick(from_csv["selection"], identity="A", family="all")["frequency"] == pytest.approx(4 / 6)


def test_a_row_without_the_required_fields_is_refused(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"paradigm": "decision", "answer": "A"}) + "\n")
    with pytest.raises(ValueError, match="lacks"):
        read_responses(path)
