"""The embedded sample (``vilbias.sample``) is a complete, well-formed workdir for the build."""

from __future__ import annotations

import hashlib
import importlib.resources
import itertools
import json
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from vilbias.annotate.prompts import parse_annotation
from vilbias.annotate.voting import Vote, hierarchical_vote
from vilbias.images import hamming, validate_image
from vilbias.review.verdicts import VERDICTS, load_verdicts, resolve_review, review_outcome
from vilbias.task import MULTIMODAL_CRITERIA, TEXT_TECHNIQUES
from vilbias.workdir import Article, read_articles, read_jsonl

SAMPLE = Path(str(importlib.resources.files("vilbias.sample")))
SHARED_PAIRS = [
    ("lowmarsh-flood-defences-breached", "abandoned-lowmarsh-drowns"),
    ("election-debate-ends-without-knockout", "crane-crushes-whitfield-in-debate"),
    ("rail-strike-halts-services", "commuters-held-to-ransom-again"),
]
NEAR_PAIRS = [
    ("wildfire-forces-evacuations-near-ashby", "ashby-inferno-climate-wake-up-call"),
    ("bank-profits-rise-on-interest", "bankers-bonanza-as-savers-robbed"),
]


def _slug(article: Article) -> str:
    return article.url.rstrip("/").rsplit("/", 1)[-1]


def _sentences(text: str) -> list[str]:
    return re.findall(r"[^.!?]+[.!?]+[\"”’)]*", text)


@pytest.fixture(scope="module")
def articles() -> dict[str, Article]:
    return {_slug(a): a for a in read_articles(SAMPLE)}


@pytest.fixture(scope="module")
def image_info(articles):
    return {p: validate_image((SAMPLE / p).read_bytes()) for p in {a.image_path for a in articles.values()}}


@pytest.fixture(scope="module")
def calls() -> list[dict]:
    return list(read_jsonl(SAMPLE / "annotations.jsonl"))


def test_articles_are_complete_and_unique(articles):
    raw = [json.loads(line) for line in (SAMPLE / "articles.jsonl").read_text().splitlines()]
    assert len(raw) == len(articles) >= 64
    assert all(set(r) == set(Article.__dataclass_fields__) for r in raw)
    assert len({a.url for a in articles.values()}) == len(articles)
    for a in articles.values():
        assert a.url.startswith("https://") and ".example/" in a.url
        assert a.image_url.startswith("https://") and a.feed_url.startswith("https://")
        assert a.unique_id == hashlib.sha256(a.url.encode()).hexdigest()[:16]
    assert len({a.outlet for a in articles.values()}) >= 8
    fetched = [r["fetched_at"] for r in raw]
    assert fetched == sorted(fetched) and len(set(fetched)) == len(fetched)
    assert 1 <= sum(a.published is None for a in articles.values()) <= 4
    assert 1 <= sum(a.image_caption == "" for a in articles.values()) <= 5


def test_articles_are_long_enough(articles):
    long_enough = [a for a in articles.values() if len(_sentences(a.article_text)) >= 20]
    assert len(long_enough) >= 0.85 * len(articles)
    assert all("\n\n" in a.article_text for a in articles.values())


def test_images_exist_validate_and_are_content_addressed(articles, image_info):
    total = 0
    for path, info in image_info.items():
        data = (SAMPLE / path).read_bytes()
        total += len(data)
        assert path == f"images/{hashlib.sha256(data).hexdigest()}.{info.ext}"
    assert total <= 5 * 1024 * 1024
    assert {p.name for p in (SAMPLE / "images").iterdir()} == {p.split("/")[1] for p in image_info}
    modes = Counter((i.format, i.mode) for i in image_info.values())
    assert modes[("JPEG", "CMYK")] >= 1 and modes[("PNG", "P")] >= 1


def test_shared_and_near_duplicate_images(articles, image_info):
    for a, b in SHARED_PAIRS:
        assert articles[a].image_path == articles[b].image_path
        assert articles[a].outlet != articles[b].outlet
    for a, b in NEAR_PAIRS:
        pa, pb = articles[a].image_path, articles[b].image_path
        assert pa != pb
        assert hamming(image_info[pa].phash, image_info[pb].phash) <= 6


def test_distinct_scenes_are_far_apart_in_phash(articles, image_info):
    near = {frozenset((articles[a].image_path, articles[b].image_path)) for a, b in NEAR_PAIRS}
    for (pa, ia), (pb, ib) in itertools.combinations(image_info.items(), 2):
        if frozenset((pa, pb)) not in near:
            assert hamming(ia.phash, ib.phash) > 12, (pa, pb)


def test_every_item_has_18_valid_calls(articles, calls):
    ids = {a.unique_id for a in articles.values()}
    per_item = Counter(c["item_id"] for c in calls)
    assert set(per_item) == ids and set(per_item.values()) == {18}
    keys = {(c["item_id"], c["prompt"], c["annotator"], c["sample"]) for c in calls}
    assert len(keys) == len(calls)
    for c in calls:
        assert c["label"] in ("biased", "not_biased", None)
        # every raw answer is what the strict parser says it is: the annotate stage would store the same
        checked = parse_annotation(c["raw"], c["prompt"])
        assert checked.status == c["status"] and checked.label == c["label"]
        if c["label"] is None:
            assert c["tone"] is None and c["techniques"] == {} and c["status"] in ("unparseable", "invalid")
            continue
        assert c["tone"] == ("Biased" if c["label"] == "biased" else "Neutral")
        names = TEXT_TECHNIQUES if c["prompt"] == "text" else MULTIMODAL_CRITERIA
        assert list(c["techniques"]) == names
        assert c["rationale"].strip() and checked.rationale == c["rationale"]
        assert {t: v for t, v in checked.techniques.items() if t in names} == c["techniques"]
    assert 0.03 <= sum(c["label"] is None for c in calls) / len(calls) <= 0.08
    statuses = Counter(c["status"] for c in calls)
    assert statuses["unparseable"] >= 10 and statuses["invalid"] >= 5  # both kinds of abstention


def test_votes_are_realistic(articles, calls):
    votes = defaultdict(list)
    for c in calls:
        votes[(c["item_id"], c["prompt"])].append(Vote(c["annotator"], c["sample"], c["label"], c["techniques"], c["rationale"]))
    results = {k: hierarchical_vote(v) for k, v in votes.items()}
    ids = [a.unique_id for a in articles.values()]
    text = {i: results[(i, "text")] for i in ids}
    mm = {i: results[(i, "multimodal")] for i in ids}
    labels = Counter(r.label for r in mm.values())
    assert labels["biased"] >= 0.4 * len(ids) and labels["not_biased"] >= 0.4 * len(ids)
    assert 2 <= sum(r.flagged for r in mm.values()) <= 3
    assert not any(r.flagged for r in text.values())
    disagree = [i for i in ids if not mm[i].flagged and text[i].label != mm[i].label]
    assert 1 <= len(disagree) <= 6
    unanimous = sum(r.agreement == 1.0 for r in mm.values() if not r.flagged)
    assert 0.6 * len(ids) <= unanimous < len(ids)
    split_annotators = sum(len({lab for lab in r.annotator_labels.values()}) > 1 for r in mm.values() if not r.flagged)
    assert split_annotators >= 3


def test_reviews_reference_items_and_settle_a_tie(articles, calls):
    ids = {a.unique_id for a in articles.values()}
    verdicts = load_verdicts(SAMPLE)
    assert 12 <= len(verdicts) <= 20 and set(verdicts) <= ids
    all_v = [v for vs in verdicts.values() for v in vs]
    assert {v.reviewer for v in all_v} == {"reviewer_1", "reviewer_2"}
    assert all(v.verdict in VERDICTS for v in all_v)
    assert sum(len(vs) == 2 for vs in verdicts.values()) >= 2
    assert len({v.unique_id for v in all_v if v.verdict == "incorrect" and v.corrected_label}) >= 2
    # every label the review sets comes with a reviewer's rationale for it; one Needs Improvement
    # is left without a corrected rationale (the build flags it)
    for item, vs in verdicts.items():
        if any(v.verdict == "incorrect" for v in vs) or any(v.corrected_label for v in vs):
            assert review_outcome(vs, None if item in flagged_ids(calls) else "x").corrected_rationale
    outcomes = [review_outcome(vs, "automated") for vs in verdicts.values()]
    assert any(o.review == "needs_improvement" and o.corrected_rationale for o in outcomes)
    assert any(o.review == "needs_improvement" and not o.corrected_rationale for o in outcomes)
    mm_votes = defaultdict(list)
    for c in calls:
        if c["prompt"] == "multimodal":
            mm_votes[c["item_id"]].append(Vote(c["annotator"], c["sample"], c["label"]))
    flagged = {i for i, v in mm_votes.items() if hierarchical_vote(v).flagged}
    settled = [i for i in flagged & set(verdicts) if resolve_review(verdicts[i], None)[1] is not None]
    assert len(settled) == 1


def flagged_ids(calls: list[dict]) -> set[str]:
    votes = defaultdict(list)
    for c in calls:
        if c["prompt"] == "multimodal":
            votes[c["item_id"]].append(Vote(c["annotator"], c["sample"], c["label"]))
    return {i for i, v in votes.items() if hierarchical_vote(v).flagged}
