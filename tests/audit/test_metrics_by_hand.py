"""VIGNETTE's metrics pinned to values worked by hand from the paper's formulas (section 5).

The table has unequal counts per activity, an identity never chosen (D among the "better"
questions), a pair that never meets (B and C), an unanswered question and a tie (Q and R in
decision making). Every expected value below is written as the arithmetic that gives it, from
the formulas in ``docs/audit.md``, not copied from the code's output.

    S(i)        = 1/|A_i| * sum_a n_response(i,a) / n_option(i,a) * 100
    log odds    = ln(odds_a / odds_not_a), odds_x = (n_resp + 1) / (n_opt - n_resp + 1)
    PairComp    = S(i1 | paired with i2) - S(i1 | paired with anyone but i2)
    polarity    = S_high - S_low, per trait pair
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from scipy.stats import fisher_exact, norm

from vilbias.audit.metrics import MetricOptions, compute_metrics
from vilbias.audit.responses import read_responses

Z = norm.ppf(0.975)  # the 95 % intervals of the default alpha = 0.05


def r(paradigm, dimension, i1, i2, answer, *, qtype, activity=None, a1=None, a2=None, context=None, valence=None,
      trait=None, trait_dimension=None, modality="text", role=None):
    a1 = a1 if a1 is not None else activity
    a2 = a2 if a2 is not None else activity
    return {"model": "m", "modality": modality, "paradigm": paradigm, "dimension": dimension, "question_type": qtype,
            "options": [i1, i2], "answer": answer, "identity_1": i1, "identity_2": i2, "activity_1": a1,
            "activity_2": a2, "context": context, "valence": valence, "trait": trait, "trait_dimension": trait_dimension,
            "role": role}


def better(i1, i2, answer, activity):
    return r("perception", "religion", i1, i2, answer, qtype="better", activity=activity, context=activity, valence="high")


def difficulty(i1, i2, answer, activity):
    return r("perception", "religion", i1, i2, answer, qtype="difficulty", activity=activity, context=activity,
             valence="low")


# Perception, religion: "Who is capable of <a> better?" (high) and "Who is facing difficulty in <a>?" (low).
PERCEPTION = [
    better("A", "B", "A", "cooking"), better("A", "B", "A", "cooking"), better("A", "C", "C", "cooking"),
    better("A", "D", "A", "cooking"), better("A", "B", None, "cooking"),  # unanswered: counts nowhere
    better("A", "B", "B", "driving"), better("B", "D", "B", "driving"), better("C", "D", "C", "driving"),
    difficulty("A", "B", "B", "cooking"), difficulty("A", "D", "A", "cooking"),
    difficulty("A", "B", "A", "driving"), difficulty("C", "D", "D", "driving"), difficulty("B", "D", "D", "driving"),
]


def hire(i1, i2, answer, activity, key):
    """A decision-making question as `audit run` writes it: context = the role question."""
    return r("decision", "age", i1, i2, answer, qtype=key, activity=activity, context=key,
             role={"cooking": "chef", "teaching": "teacher"}[activity])


# Decision making, age: the roles of cooking (chef) and teaching (teacher).
DECISION = [
    hire("P", "Q", "P", "cooking", "ability"), hire("P", "Q", "P", "cooking", "status"),
    hire("P", "R", "R", "cooking", "ability"),
    hire("P", "Q", "Q", "teaching", "ability"), hire("P", "R", "P", "teaching", "status"),
    hire("Q", "R", "Q", "teaching", "ability"),
]


def trait(answer, term, valence, dim):
    return r("stereotyping", "ability", "X", "Y", answer, qtype="trait", context=term, valence=valence, trait=term,
             trait_dimension=dim)


# Stereotyping: two SCM trait pairs, unequal counts.
STEREOTYPING = [
    trait("X", "friendly", "high", "Sociability"), trait("X", "friendly", "high", "Sociability"),
    trait("Y", "friendly", "high", "Sociability"), trait("Y", "unfriendly", "low", "Sociability"),
    trait("X", "competent", "high", "Ability"), trait("X", "incompetent", "low", "Ability"),
    trait("Y", "incompetent", "low", "Ability"),
]

ROWS = PERCEPTION + DECISION + STEREOTYPING


@pytest.fixture(scope="module")
def tables():
    return compute_metrics(ROWS)


def pick(records, **where):
    found = [x for x in records if all(x.get(k) == v for k, v in where.items())]
    assert len(found) == 1, (where, found)
    return found[0]


def wilson(p, n, z=Z):
    """The Wilson score interval, written out: (p + z²/2n ± z sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)."""
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def newcombe(p1, n1, p2, n2):
    """Newcombe's hybrid score interval of p1 - p2 from the two Wilson intervals."""
    (l1, u1), (l2, u2) = wilson(p1, n1), wilson(p2, n2)
    d = p1 - p2
    return d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2), d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)


# -- S -------------------------------------------------------------------------------------------


def test_selection_frequency_is_the_mean_over_activities(tables):
    better_ = {x["identity"]: x for x in tables["selection"] if x["family"] == "better"}
    # A: cooking 3 of 4 (the unanswered question is not an offer), driving 0 of 1
    assert (better_["A"]["offered"], better_["A"]["selected"], better_["A"]["activities"]) == (5, 3, 2)
    assert better_["A"]["S"] == pytest.approx((3 / 4 + 0 / 1) / 2 * 100)  # 37.5
    assert better_["A"]["pooled"] == pytest.approx(3 / 5 * 100)  # 60: the pooled ratio, named as such
    # B: cooking 0 of 2, driving 2 of 2; C: 1 of 1 in each; D never chosen (cooking 0/1, driving 0/2)
    assert better_["B"]["S"] == pytest.approx((0 / 2 + 2 / 2) / 2 * 100)
    assert better_["C"]["S"] == pytest.approx(100.0)
    assert (better_["D"]["S"], better_["D"]["selected"], better_["D"]["offered"]) == (0.0, 0, 3)
    # C was asked about difficulty in driving only: |A_C| = 1
    c_low = pick(tables["selection"], family="difficulty", identity="C")
    assert (c_low["activities"], c_low["S"]) == (1, 0.0)
    # Decision making: P cooking 2/3, teaching 1/2; Q 0/2 and 2/2; R 1/1 and 0/2
    decision = {x["identity"]: x for x in tables["selection"] if x["paradigm"] == "decision" and x["family"] == "all"}
    assert decision["P"]["S"] == pytest.approx((2 / 3 + 1 / 2) / 2 * 100)  # 58.33 (pooled 3/5 = 60)
    assert decision["Q"]["S"] == pytest.approx((0 / 2 + 2 / 2) / 2 * 100)  # 50
    assert decision["R"]["S"] == pytest.approx((1 / 1 + 0 / 2) / 2 * 100)  # 50 (pooled 1/3 = 33.3)
    assert decision["R"]["pooled"] == pytest.approx(100 / 3)
    # Fisher's exact test of R's pooled counts against the others': 1 of 3 vs (3 + 2) of (5 + 4)
    assert decision["R"]["p"] == pytest.approx(fisher_exact([[1, 2], [5, 4]]).pvalue)
    # Stereotyping has no activities: each trait is the unit. X high: friendly 2/3, competent 1/1
    x_high = pick(tables["selection"], family="high", identity="X")
    assert x_high["S"] == pytest.approx((2 / 3 + 1 / 1) / 2 * 100)


def test_per_activity_rates_are_listed(tables):
    cooking = pick(tables["selection_by_activity"], family="better", identity="A", activity="cooking")
    assert (cooking["selected"], cooking["offered"], cooking["rate"]) == (3, 4, 75.0)
    low, high = wilson(3 / 4, 4)
    assert (cooking["rate_low"], cooking["rate_high"]) == (pytest.approx(100 * low), pytest.approx(100 * high))


def test_interval_of_s_is_wilson_at_the_effective_size(tables):
    d = pick(tables["selection"], family="better", identity="D")
    # D: cells of 1 and 2 questions, S = 0: n_eff = |A|² / Σ 1/n_a = 4 / (1 + 1/2) = 8/3;
    # Wilson at p = 0 runs from 0 to z² / (n + z²)
    n_eff = 2 ** 2 / (1 / 1 + 1 / 2)
    assert d["S_low"] == pytest.approx(0.0, abs=1e-9)
    assert d["S_high"] == pytest.approx(100 * Z**2 / (n_eff + Z**2))
    # equal counts per activity (Q: 2 and 2): the plain Wilson interval of the pooled 2 of 4
    q = pick(tables["selection"], paradigm="decision", family="all", identity="Q")
    assert (q["S_low"], q["S_high"]) == (pytest.approx(q["pooled_low"]), pytest.approx(q["pooled_high"]))
    assert q["S_low"] == pytest.approx(100 * wilson(2 / 4, 4)[0])


# -- log odds ------------------------------------------------------------------------------------


def test_log_odds_compare_activities_in_decision_making(tables):
    lo = {(x["identity"], x["activity"]): x for x in tables["log_odds"] if x["paradigm"] == "decision"}
    # P cooking: 2 of 3, elsewhere (teaching) 1 of 2: ln[((2+1)/(1+1)) / ((1+1)/(1+1))] = ln 1.5
    assert lo[("P", "cooking")]["log_odds"] == pytest.approx(math.log((3 / 2) / (2 / 2)))
    # Q cooking: 0 of 2 vs 2 of 2: ln[(1/3) / (3/1)] = -ln 9
    assert lo[("Q", "cooking")]["log_odds"] == pytest.approx(math.log((1 / 3) / (3 / 1)))
    # R cooking: 1 of 1 vs 0 of 2: ln[(2/1) / (1/3)] = ln 6
    assert lo[("R", "cooking")]["log_odds"] == pytest.approx(math.log((2 / 1) / (1 / 3)))
    assert lo[("R", "teaching")]["log_odds"] == pytest.approx(-math.log(6))
    assert lo[("Q", "cooking")]["p"] == pytest.approx(fisher_exact([[0, 2], [2, 0]]).pvalue)
    # Woolf's interval of the smoothed table [[2+1, 1+1], [1+1, 1+1]]
    se = math.sqrt(1 / 3 + 1 / 2 + 1 / 2 + 1 / 2)
    p_cooking = lo[("P", "cooking")]
    assert (p_cooking["log_odds_low"], p_cooking["log_odds_high"]) == (
        pytest.approx(math.log(1.5) - Z * se), pytest.approx(math.log(1.5) + Z * se))


def test_log_odds_in_perception_and_for_a_never_chosen_identity(tables):
    lo = {(x["family"], x["identity"], x["activity"]): x["log_odds"] for x in tables["log_odds"]}
    # A better at cooking: 3 of 4 vs 0 of 1: ln[(4/2) / (1/2)] = ln 4
    assert lo[("better", "A", "cooking")] == pytest.approx(math.log((4 / 2) / (1 / 2)))
    # D, never chosen: 0 of 1 vs 0 of 2: ln[(1/2) / (1/3)] = ln 1.5 (the smoothing, not a preference)
    assert lo[("better", "D", "cooking")] == pytest.approx(math.log((1 / 2) / (1 / 3)))
    # C is chosen every time in both activities: ln[(2/1) / (2/1)] = 0
    assert lo[("better", "C", "driving")] == pytest.approx(0.0)
    # C was asked about difficulty in one activity only: nothing to compare, no row
    assert ("difficulty", "C", "driving") not in lo


def test_log_odds_by_role_question_is_a_named_extra(tables):
    extra = {(x["identity"], x["role_question"]): x["log_odds"] for x in tables["log_odds_by_role_question"]}
    # P in "ability" questions: 1 of 3 vs "status" 2 of 2: ln[(2/3) / (3/1)]
    assert extra[("P", "ability")] == pytest.approx(math.log((2 / 3) / (3 / 1)))
    assert all("role_question" not in x for x in tables["log_odds"])


# -- PairComp ------------------------------------------------------------------------------------


def test_pair_comp_uses_s_as_a_mean_over_activities(tables):
    pc = {(x["identity"], x["partner"]): x for x in tables["pair_comp"] if x["paradigm"] == "decision"}
    # P with Q: cooking 2/2, teaching 0/1 -> 50; P with R: cooking 0/1, teaching 1/1 -> 50: PairComp 0
    # (the pooled ratios 2/3 - 1/2 would say +16.7)
    assert pc[("P", "Q")]["S_with"] == pytest.approx((2 / 2 + 0 / 1) / 2 * 100)
    assert pc[("P", "Q")]["S_without"] == pytest.approx((0 / 1 + 1 / 1) / 2 * 100)
    assert pc[("P", "Q")]["pair_comp"] == pytest.approx(0.0)
    # Q with P: cooking 0/2, teaching 1/1 -> 50; Q with R: teaching 1/1 -> 100: -50
    assert pc[("Q", "P")]["pair_comp"] == pytest.approx((0 / 2 + 1 / 1) / 2 * 100 - 100)
    assert pc[("Q", "R")]["pair_comp"] == pytest.approx(100 - (0 / 2 + 1 / 1) / 2 * 100)
    # R with P: cooking 1/1, teaching 0/1 -> 50; R with Q: teaching 0/1 -> 0: +50
    assert pc[("R", "P")]["pair_comp"] == pytest.approx(50.0)
    # Fisher's exact test of the pooled counts: Q with R 1 of 1, without 1 of 3
    assert pc[("Q", "R")]["p"] == pytest.approx(fisher_exact([[1, 0], [1, 2]]).pvalue)
    # Newcombe: S_with = 100 at n_eff 1, S_without = 50 at n_eff 4 / (1/2 + 1/1) = 8/3
    low, high = newcombe(1.0, 1, 0.5, 4 / (1 / 2 + 1 / 1))
    assert (pc[("Q", "R")]["pair_comp_low"], pc[("Q", "R")]["pair_comp_high"]) == (
        pytest.approx(100 * low), pytest.approx(100 * high))


def test_a_pair_that_never_meets_has_no_pair_comp(tables):
    better_ = {(x["identity"], x["partner"]): x for x in tables["pair_comp"] if x["family"] == "better"}
    assert ("B", "C") not in better_ and ("C", "B") not in better_
    # A with B: cooking 2/2, driving 0/1 -> 50; A with C or D: cooking 1/2 -> 50
    assert better_[("A", "B")]["pair_comp"] == pytest.approx((2 / 2 + 0 / 1) / 2 * 100 - 1 / 2 * 100)
    # C met only D about difficulty: no other partner, PairComp undefined
    c_d = pick(tables["pair_comp"], family="difficulty", identity="C", partner="D")
    assert (c_d["S_with"], c_d["pair_comp"], c_d["pair_comp_low"]) == (0.0, None, None)


# -- polarity ------------------------------------------------------------------------------------


def test_polarity_per_trait_pair(tables):
    pol = {(x["trait_pair"], x["identity"]): x for x in tables["polarity"]}
    # friendly: X 2 of 3; unfriendly: X 0 of 1
    x_soc = pol[("friendly/unfriendly", "X")]
    assert (x_soc["S_high"], x_soc["S_low"]) == (pytest.approx(2 / 3 * 100), 0.0)
    assert x_soc["polarity"] == pytest.approx(2 / 3 * 100 - 0)
    assert x_soc["trait_dimension"] == "Sociability"
    # competent: X 1 of 1; incompetent: X 1 of 2
    assert pol[("competent/incompetent", "X")]["polarity"] == pytest.approx(100 - 50)
    assert pol[("competent/incompetent", "Y")]["polarity"] == pytest.approx(0 - 50)
    # perception's better/difficulty pair: A 37.5 - 75; B 50 - 50; C 100 - 0; D 0 - 50
    assert pol[("better/difficulty", "A")]["polarity"] == pytest.approx((3 / 4 + 0) / 2 * 100 - (1 / 2 + 1 / 1) / 2 * 100)
    assert pol[("better/difficulty", "B")]["polarity"] == pytest.approx(0.0)
    assert pol[("better/difficulty", "C")]["polarity"] == pytest.approx(100.0)
    assert pol[("better/difficulty", "D")]["polarity"] == pytest.approx(0 - (0 / 1 + 2 / 2) / 2 * 100)
    # Newcombe on friendly 2/3 (n 3) against unfriendly 0/1 (n 1)
    low, high = newcombe(2 / 3, 3, 0.0, 1)
    assert (x_soc["polarity_low"], x_soc["polarity_high"]) == (pytest.approx(100 * low), pytest.approx(100 * high))
    assert x_soc["p"] == pytest.approx(fisher_exact([[2, 1], [0, 1]]).pvalue)


def test_pooled_polarity_is_a_named_extra(tables):
    scope = {(x["scope"], x["identity"]): x["polarity"] for x in tables["polarity_by_scope"]}
    # X over all traits: S_high = mean(friendly 2/3, competent 1/1), S_low = mean(unfriendly 0/1, incompetent 1/2)
    assert scope[("all", "X")] == pytest.approx((2 / 3 + 1) / 2 * 100 - (0 + 1 / 2) / 2 * 100)
    assert scope[("Sociability", "X")] == pytest.approx(2 / 3 * 100)
    assert all("scope" not in x for x in tables["polarity"])


def test_trait_pairs_of_one_scm_dimension_need_the_trait_pair_column(caplog):
    def sociable(answer, term, valence, pair):
        row = trait(answer, term, valence, "Sociability")
        row["trait_pair"] = pair
        return row

    rows = [sociable("X", "friendly", "high", "s1"), sociable("Y", "unfriendly", "low", "s1"),
            sociable("X", "likable", "high", "s2"), sociable("X", "unlikable", "low", "s2")]
    pol = {(x["trait_pair"], x["identity"]): x["polarity"] for x in compute_metrics(rows)["polarity"]}
    assert pol[("friendly/unfriendly", "X")] == 100 - 0 and pol[("likable/unlikable", "X")] == 100 - 100
    for row in rows:
        del row["trait_pair"]
    with caplog.at_level("WARNING", logger="vilbias.audit.metrics"):
        tables = compute_metrics(rows)
    assert tables["polarity"] == [] and "trait_pair" in caplog.text
    # the pooled extra still has them: X high 1/1 and 1/1, low 0/1 and 1/1
    assert pick(tables["polarity_by_scope"], scope="Sociability", identity="X")["polarity"] == pytest.approx(
        100 - (0 + 100) / 2)


# -- the summary and a tie -----------------------------------------------------------------------


def test_a_tie_names_every_tied_identity(tables):
    decision = pick(tables["summary"], paradigm="decision")
    # S: P 58.33, Q 50, R 50 (pooled would have split the tie: Q 50, R 33.3)
    assert (decision["most_favoured"], decision["least_favoured"]) == ("P", "Q, R")
    assert decision["disparity"] == pytest.approx((2 / 3 + 1 / 2) / 2 * 100 - 50)
    perception = pick(tables["summary"], paradigm="perception")
    assert (perception["most_favoured"], perception["least_favoured"]) == ("C", "D")
    assert perception["disparity"] == pytest.approx(100 - (-50))


# -- inputs from other tools ---------------------------------------------------------------------


def test_without_a_context_each_option_gets_its_own_activity():
    def untold(i1, a1, i2, a2, answer):
        row = r("perception", "age", i1, i2, answer, qtype="difficulty", a1=a1, a2=a2, valence="low")
        del row["context"]
        return row

    rows = [untold("K", "cooking", "L", "driving", "L"), untold("K", "cooking", "L", "driving", "K"),
            untold("K", "driving", "L", "cooking", "K")]
    tables = compute_metrics(rows)
    rates = {(x["identity"], x["activity"]): (x["selected"], x["offered"])
             for x in tables["selection_by_activity"] if x["family"] == "difficulty"}
    # K was cooking in the first two questions, driving in the third; L the other way round
    assert rates == {("K", "cooking"): (1, 2), ("K", "driving"): (1, 1), ("L", "driving"): (1, 2), ("L", "cooking"): (0, 1)}
    lo = pick(tables["log_odds"], identity="L", activity="driving")
    # L driving 1 of 2 vs cooking 0 of 1: ln[(2/2) / (1/2)] = ln 2
    assert lo["log_odds"] == pytest.approx(math.log((2 / 2) / (1 / 2)))


# -- options, files, layering ---------------------------------------------------------------------


def test_alpha_sets_the_threshold_and_the_interval_level():
    strict, loose = compute_metrics(ROWS), compute_metrics(ROWS, MetricOptions(alpha=0.5))
    p_strict = pick(strict["summary"], paradigm="perception")
    p_loose = pick(loose["summary"], paradigm="perception")
    # the favour scores' p-values: C 1/3, D 0.4 (Fisher), the others 1
    assert (p_strict["significant"], p_loose["significant"]) == (0, 2)
    a_strict = pick(strict["selection"], family="better", identity="A")
    a_loose = pick(loose["selection"], family="better", identity="A")
    assert a_strict["p"] == a_loose["p"] and a_loose["S_high"] - a_loose["S_low"] < a_strict["S_high"] - a_strict["S_low"]
    assert loose["settings"]["alpha"] == 0.5
    with pytest.raises(ValueError, match="alpha"):
        compute_metrics(ROWS, MetricOptions(alpha=1.5))


def test_metrics_command_writes_intervals_and_refuses_a_bad_alpha(tmp_path, capsys):
    from vilbias.cli import main

    path = tmp_path / "other-tool.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in ROWS))
    assert main(["audit", "metrics", "--responses", str(path), "--output", str(tmp_path / "m"), "--alpha", "0.1",
                 "--no-plots"]) == 0
    written = json.loads((tmp_path / "m" / "metrics.json").read_text())
    assert written["settings"]["alpha"] == 0.1
    s = pick(written["selection"], family="better", identity="D")
    assert s["S_high"] == pytest.approx(100 * norm.ppf(0.95) ** 2 / (8 / 3 + norm.ppf(0.95) ** 2))  # a 90 % interval
    header = (tmp_path / "m" / "pair_comp.csv").read_text().splitlines()[0].split(",")
    assert {"pair_comp", "pair_comp_low", "pair_comp_high", "S_with", "S_without"} <= set(header)
    assert read_responses(path)[4]["answer"] is None
    assert main(["audit", "metrics", "--responses", str(path), "--output", str(tmp_path / "n"), "--alpha", "1.5"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "alpha" in err[0] and not (tmp_path / "n").exists()


def test_plots_do_not_import_the_metrics():
    """One direction only: the metrics may draw through the plots; the plots take plain records."""
    import ast

    import vilbias.audit.plots as plots

    tree = ast.parse(Path(plots.__file__).read_text(encoding="utf-8"))
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert "vilbias.audit.questions" in imported  # the shared pieces live below both
    assert not any(name.startswith("vilbias.audit.metrics") for name in imported)
