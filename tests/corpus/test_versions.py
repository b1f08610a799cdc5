"""Version sequences: whatever happens to other rows, no existing row ever changes split or fold.

Each test builds v1 with :func:`assign_splits`, changes the corpus the way a real release does
(append, relabel, drop, reorder, a new row joining an existing image or story group), builds v2
with v1's cells as ``pinned`` — what ``vilbias build`` does with the previous release — and
asserts zero moved rows and the stratification bound (every split and fold within 1.5 points of
the corpus's biased share). A few thousand rows: the size where a reshuffle would show.
"""

from __future__ import annotations

import dataclasses
import random

from vilbias.corpus.splits import Cell, SplitItem, assign_splits
from vilbias.task import N_FOLDS, SPLITS

N = 4000
BOUND = 0.015


def corpus(n: int, *, seed: int = 0, start: int = 0) -> list[SplitItem]:
    rng = random.Random(seed)
    return [
        SplitItem(f"id{i:06d}", int(rng.random() < 0.56), f"2025-01-01T00:00:00#{i:08d}", f"sha{i}", rng.getrandbits(64), (f"url:{i}",))
        for i in range(start, start + n)
    ]


def moved(v1: dict[str, Cell], v2: dict[str, Cell]) -> int:
    return sum(1 for uid, cell in v1.items() if uid in v2 and v2[uid] != cell)


def worst_gap(cells: dict[str, Cell], items: list[SplitItem]) -> float:
    labels = {it.unique_id: it.label for it in items}
    share = sum(labels.values()) / len(labels)
    gaps = []
    for pred in [lambda c, s=s: c.split == s for s in SPLITS] + [lambda c, k=k: c.fold == k for k in range(N_FOLDS)]:
        members = [labels[u] for u, c in cells.items() if pred(c)]
        gaps.append(abs(sum(members) / len(members) - share))
    return max(gaps)


def release(items: list[SplitItem], previous: dict[str, Cell] | None = None) -> dict[str, Cell]:
    present = {it.unique_id for it in items}
    cells, _ = assign_splits(items, pinned={u: c for u, c in (previous or {}).items() if u in present})
    return cells


def test_append():
    v1_items = corpus(N)
    v1 = release(v1_items)
    v2_items = v1_items + corpus(1500, seed=1, start=N)
    v2 = release(v2_items, v1)
    assert moved(v1, v2) == 0 and len(v2) == N + 1500
    assert worst_gap(v2, v2_items) < BOUND


def test_relabel_then_append():
    """Review verdicts and new votes flip labels of existing rows; none of them moves."""
    v1_items = corpus(N)
    v1 = release(v1_items)
    rng = random.Random(5)
    flip = set(rng.sample([it.unique_id for it in v1_items], 40))
    relabelled = [dataclasses.replace(it, label=1 - it.label) if it.unique_id in flip else it for it in v1_items]
    v2_items = relabelled + corpus(800, seed=2, start=N)
    v2 = release(v2_items, v1)
    assert moved(v1, v2) == 0
    assert worst_gap(v2, v2_items) < BOUND


def test_drop_early_rows():
    v1_items = corpus(N)
    v1 = release(v1_items)
    v2_items = [it for i, it in enumerate(v1_items) if i % 97 != 3] + corpus(300, seed=3, start=N)
    v2 = release(v2_items, v1)
    assert moved(v1, v2) == 0 and len(v2) == len(v2_items)
    assert worst_gap(v2, v2_items) < BOUND


def test_reorder():
    """Rows arrive in another order (re-ingested, clock skew): order keys change, cells do not."""
    v1_items = corpus(N)
    v1 = release(v1_items)
    rng = random.Random(7)
    reordered = [dataclasses.replace(it, order=f"2026-{rng.random():.12f}") for it in v1_items]
    rng.shuffle(reordered)
    v2_items = reordered + corpus(500, seed=4, start=N)
    v2 = release(v2_items, v1)
    assert moved(v1, v2) == 0
    assert worst_gap(v2, v2_items) < BOUND


def test_group_join_and_a_changed_group_elsewhere():
    """A new row sharing an existing row's image joins that row's cell, even when it sorts
    earlier; an existing row whose story key changed (a group elsewhere) stays put."""
    v1_items = corpus(N)
    v1 = release(v1_items)
    early = dataclasses.replace(v1_items[1234], unique_id="joiner-early", order="2000-01-01", story_keys=())
    late = dataclasses.replace(v1_items[42], unique_id="joiner-late", order="2099-01-01", image_sha256=None, phash=None)
    regrouped = [dataclasses.replace(it, story_keys=("url:shared",)) if i in (10, 2000, 3000) else it for i, it in enumerate(v1_items)]
    v2_items = regrouped + [early, late] + corpus(400, seed=6, start=N)
    v2 = release(v2_items, v1)
    assert moved(v1, v2) == 0
    assert v2["joiner-early"] == v1[v1_items[1234].unique_id]  # same image bytes
    assert v2["joiner-late"] == v1[v1_items[42].unique_id]  # same story
    assert worst_gap(v2, v2_items) < BOUND


def test_first_build_ignores_file_order():
    items = corpus(N)
    shuffled = list(items)
    random.Random(9).shuffle(shuffled)
    assert release(items) == release(shuffled)
