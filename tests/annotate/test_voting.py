import random

import pytest

from vilbias.annotate.voting import Vote, hierarchical_vote, majority_vote

B, N = "biased", "not_biased"


@pytest.mark.parametrize(
    "ballots, expected",
    [
        ([B, B, B], B),
        ([B, B, N], B),
        ([B, N, N], N),
        ([B, B, None], B),  # an abstention does not stop a 2-of-3 majority
        ([B, None, None], None),  # one vote of three is no majority
        ([B, N, None], None),  # tie among the votes cast
        ([None, None, None], None),
        ([B, N], None),
        ([], None),
    ],
)
def test_majority_vote(ballots, expected):
    assert majority_vote(ballots) == expected


def votes(**labels):
    """votes(a="BBN", b="N-N") -> Votes; '-' is an abstention."""
    out = []
    for annotator, s in labels.items():
        for k, c in enumerate(s):
            out.append(Vote(annotator, k, {"B": B, "N": N, "-": None}[c], {}, f"{annotator}{k}"))
    return out


def test_unanimous():
    r = hierarchical_vote(votes(a="BBB", b="BBB", c="BBB"))
    assert (r.label, r.flagged, r.reason, r.agreement) == (B, False, None, 1.0)


def test_majority_of_annotator_majorities_and_agreement():
    r = hierarchical_vote(votes(a="BBN", b="NNB", c="BBB"))
    assert r.annotator_labels == {"a": B, "b": N, "c": B}
    assert r.label == B and not r.flagged
    assert r.agreement == pytest.approx(6 / 9)


def test_annotator_level_abstention_still_decides():
    # a's samples are mostly unparseable -> a has no majority; b and c still make 2 of 3.
    r = hierarchical_vote(votes(a="B--", b="NNN", c="NN-"))
    assert r.annotator_labels == {"a": None, "b": N, "c": N}
    assert r.label == N
    assert r.agreement == pytest.approx(5 / 6)


def test_tie_between_annotators_is_flagged():
    r = hierarchical_vote(votes(a="BBB", b="NNN"))
    assert (r.label, r.flagged, r.reason) == (None, True, "tie")
    assert r.rationale == "" and r.techniques == []


def test_tie_with_an_abstaining_annotator():
    r = hierarchical_vote(votes(a="BBB", b="NNN", c="---"))
    assert (r.flagged, r.reason) == (True, "tie")


def test_sample_level_tie_makes_annotator_abstain():
    r = hierarchical_vote(votes(a="BN", b="BN", c="BB"))
    assert r.annotator_labels == {"a": None, "b": None, "c": B}
    assert (r.flagged, r.reason) == (True, "no_majority")


def test_too_many_abstentions_is_no_majority():
    r = hierarchical_vote(votes(a="---", b="---", c="BBB"))
    assert (r.label, r.flagged, r.reason) == (None, True, "no_majority")


def test_all_abstain_and_no_votes():
    assert hierarchical_vote(votes(a="---", b="---", c="---")).reason == "no_majority"
    assert hierarchical_vote([]).reason == "no_votes"


def test_rationale_rule_strongest_then_config_order():
    # b and c both in the majority; c has 3 biased samples, b 2 -> c's first biased sample.
    r = hierarchical_vote(votes(a="NNN", b="BBN", c="BBB"))
    assert (r.rationale_from, r.rationale) == ("c", "c0")
    # equal strength -> the annotator listed first in the config order wins
    r = hierarchical_vote(votes(a="BBB", b="BBB", c="NNN"), annotators=["b", "a", "c"])
    assert (r.rationale_from, r.rationale) == ("b", "b0")
    # the first sample *with the final label and a rationale* is used
    vs = [Vote("a", 0, N, {}, "wrong side"), Vote("a", 1, B, {}, ""), Vote("a", 2, B, {}, "the one")]
    assert hierarchical_vote(vs).rationale == "the one"


def test_techniques_need_a_majority_of_annotators():
    def v(a, k, label, present):
        return Vote(a, k, label, {"framing": "framing" in present, "word_choice": "word_choice" in present}, "r")

    vs = [
        v("a", 0, B, {"framing", "word_choice"}), v("a", 1, B, {"framing"}), v("a", 2, B, set()),
        v("b", 0, B, {"framing"}), v("b", 1, B, {"framing", "word_choice"}), v("b", 2, B, set()),
        v("c", 0, B, {"word_choice"}), v("c", 1, B, set()), v("c", 2, B, set()),
    ]
    # framing: a (2/3) and b (2/3) judge it present -> 2 of 3 annotators; word_choice: only b... a has 1/3
    assert hierarchical_vote(vs).techniques == ["framing"]


def test_ballot_entry():
    assert Vote("m", 2, None).ballot() == {"annotator": "m", "sample": 2, "label": None}


def test_techniques_agree_with_majority_vote_of_majorities():
    """The counted technique vote is majority_vote over each annotator's present/absent/abstain
    ballots, then over the annotators (random votes, M=3, K=1..4)."""
    rng = random.Random(0)
    for _ in range(300):
        k = rng.randint(1, 4)
        votes = [
            Vote(a, s, rng.choice(["biased", "biased", None]), {t: rng.random() < 0.5 for t in ("framing", "tone") if rng.random() < 0.9})
            for a in ("a", "b", "c") for s in range(k)
        ]
        by = {a: [v for v in votes if v.annotator == a] for a in ("a", "b", "c")}
        expected = []
        for t in ("framing", "tone"):
            judged = [majority_vote([("present" if v.techniques.get(t) else "absent") if v.label else None for v in vs]) for vs in by.values()]
            if sum(j == "present" for j in judged) * 2 > 3 and any(t in v.techniques for v in votes):
                expected.append(t)
        result = hierarchical_vote(votes, ["a", "b", "c"])
        if not result.flagged:
            assert sorted(result.techniques) == sorted(expected)


def _summary_the_long_way(store, item_ids=None):
    """The run summary's item and call figures as they were computed before one scan gave both:
    hierarchical_vote over iter_votes, and call_counts."""
    active = store.active()
    per_prompt = {p: {"items": 0, "decided": 0, "flagged": {}, "labels": {}} for p in active}
    names = {p: [a.name for a in cfg["annotators"]] for p, cfg in active.items()}
    for item_id, by_prompt in store.iter_votes(techniques=False):
        if item_ids is not None and item_id not in item_ids:
            continue
        for prompt, votes_ in by_prompt.items():
            if prompt not in per_prompt or not votes_:
                continue
            s = per_prompt[prompt]
            result = hierarchical_vote(votes_, names[prompt], details=False)
            s["items"] += 1
            if result.flagged:
                s["flagged"][result.reason] = s["flagged"].get(result.reason, 0) + 1
            else:
                s["decided"] += 1
                s["labels"][result.label] = s["labels"].get(result.label, 0) + 1
    return per_prompt, store.call_counts()


@pytest.mark.parametrize("seed", range(6))
def test_vote_outcome_and_the_one_scan_summary_match_hierarchical_vote(tmp_path, seed):
    """summarize counts labels from counts (vote_outcome over AnnotationStore.active_calls): the
    same items, flags, labels and call counts as hierarchical_vote over iter_votes and
    call_counts, on stores with every status, missing samples, abstentions on the language,
    stale fingerprints and prompt versions, samples past K, a deterministic annotator (K=1),
    calls without a status row and status rows without a call."""
    from collections import Counter

    from vilbias.annotate.store import STATUSES, ActiveAnnotator, AnnotationStore, CallKey, call_row
    from vilbias.annotate.summary import summarize
    from vilbias.annotate.voting import OTHER_LANGUAGE, vote_outcome

    rng = random.Random(seed)
    store = AnnotationStore(tmp_path / "a.sqlite")
    k = rng.choice([1, 2, 3, 5])
    active = [ActiveAnnotator("a", "fa"), ActiveAnnotator("b", "fb"), ActiveAnnotator("det", "fd", 1)]
    store.set_active("text", "t2", active, k)
    store.set_active("multimodal", "m1", active[:2], k)
    labels = [B, N, "neither"]
    rows = []
    for i in range(150):
        language_unread = rng.random() < 0.15
        for prompt, version, annotators in (("text", "t2", active), ("multimodal", "m1", active[:2])):
            if rng.random() < 0.1:
                continue  # never asked this prompt
            for a in annotators:
                fp = a.fingerprint if rng.random() < 0.9 else "stale"
                v = version if rng.random() < 0.95 else "old"
                for sample in range(a.samples_of(k) + rng.choice([0, 0, 1])):
                    if rng.random() < 0.1:
                        continue  # a missing sample
                    key = CallKey(f"item-{i:03d}", prompt, a.name, fp, sample, v)
                    if language_unread and rng.random() < 0.9:
                        rows.append(call_row(key, raw="abstains", status=OTHER_LANGUAGE))
                        continue
                    status = rng.choice(["valid", "valid", "valid", "invalid", "unparseable", "refused", "failed"])
                    label = rng.choice(labels) if status == "valid" else None
                    rows.append(call_row(key, raw=None if status == "failed" else "{}", label=label, status=status))
    store.record_calls(rows)
    if seed % 2:  # another tool's rows: a call without its status row, a status row without its call
        for table in ("call_status", "calls"):  # 40 rows each, chosen by the seed (not SQLite's random())
            rowids = [r for (r,) in store.query(f"SELECT rowid FROM {table} ORDER BY rowid")]
            for rowid in rng.sample(rowids, 40):
                store.query(f"DELETE FROM {table} WHERE rowid = ?", (rowid,))
    item_ids = None if seed % 3 else {f"item-{i:03d}" for i in range(0, 150, 2)}
    per_prompt, counts = _summary_the_long_way(store, item_ids)
    summary = summarize(store, item_ids)
    assert sum(s["items"] for s in per_prompt.values()) > 100
    seen = Counter()
    for prompt, s in per_prompt.items():
        out = summary["prompts"][prompt]
        assert (out["items"], out["decided"], out["flagged"]) == (s["items"], s["decided"], s["flagged"])
        assert out["label_shares"] == {lab: c / s["decided"] for lab, c in sorted(s["labels"].items())}
        seen.update(s["flagged"])
    assert seen["tie"] and seen["no_majority"] and seen[OTHER_LANGUAGE]
    for (prompt, name), c in counts.items():
        assert {s: summary["annotators"][name][prompt][s] for s in ("calls", "answered", *STATUSES)} == c
    assert vote_outcome([([B, B], 0, 3), ([N], 0, 3), ((), 3, 3)]) == (None, "no_majority")
    assert vote_outcome([((), 2, 2)]) == (None, OTHER_LANGUAGE)
