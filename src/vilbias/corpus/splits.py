"""The split policy, as pure functions.

Every row gets a *cell*: a split (train/validation/test, 80/10/10) and a cross-validation fold
(0-4). ``default`` uses the split, ``fold_K`` uses the fold (test = fold K, train = the rest).

- **Deterministic from the data alone**: rows are visited in a canonical order — the time they
  entered the corpus (``fetched_at``), then ``unique_id`` — and nothing random is drawn.
- **Stable across versions**: a row's cell is decided when it first appears and never changes.
  The build passes the previous release's cells as ``pinned``: those rows keep their cells
  whatever happened to other rows (appends, relabels, drops, reorders, group changes), and are
  visited *first*, so the label counts the new rows balance against include them and a new row
  that joins an existing image or story group finds the group's cell already there.
- **Label-stratified**: a new group goes to the cell whose share of its label stratum is
  furthest below target (largest deficit), so every split and every fold tracks the corpus's
  label balance row by row, not just in expectation.
- **Group-aware**: a row that shares an image (same bytes, or perceptual hashes within
  :data:`PHASH_MAX_DISTANCE` bits) or a story (canonical URL, normalised headline) with an
  earlier row joins that row's cell. If it links rows that already sit in different cells
  (possible only when a late row bridges two groups, or with pins), it follows the earliest one
  and the group is reported as not kept whole.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from vilbias.task import N_FOLDS, SPLIT_SHARES

PHASH_MAX_DISTANCE = 4
"""Near-identical images: re-encodes, small crops and resizes of one photo land within 4 of
64 bits; unrelated photos sit around 32."""
_PHASH_BANDS = PHASH_MAX_DISTANCE + 1  # pigeonhole: within d bits => some band of d+1 matches


@dataclass(frozen=True)
class SplitItem:
    unique_id: str
    label: int
    """The stratum (the task label's class id)."""
    order: str = ""
    """Canonical order key, normally ``fetched_at``."""
    image_sha256: str | None = None
    phash: int | None = None
    story_keys: tuple[str, ...] = ()
    """Keys of the story the row tells (canonical URL, normalised headline)."""
    allowed_splits: tuple[str, ...] = ()
    """The splits this row may go to (empty: any). A source that ships its own splits keeps them:
    its ``test`` rows may go to ``test`` only, its ``train`` rows to ``train`` or ``validation``."""


@dataclass(frozen=True)
class Cell:
    split: str
    fold: int


@dataclass
class SplitReport:
    groups: int = 0
    multi_row_groups: int = 0
    largest_group: int = 0
    rows_linked_by: dict[str, int] = field(default_factory=lambda: {"image": 0, "near_image": 0, "story": 0})
    not_kept_whole: list[list[str]] = field(default_factory=list)
    pinned: int = 0


MEANINGFUL_ROWS = 10
"""A split with fewer rows than this, or with one label only, is too small to mean anything: one
row moves an accuracy by 10 points or more, and a split of one label has no F1 for the other and
teaches a classifier nothing. The build summary and the card name such splits; they still load."""


def split_size_note(rows: int, biased: int) -> str | None:
    """Why a split of ``rows`` rows (``biased`` of them biased) means little, or None when it is
    large enough: ``empty``, ``1 row``, ``7 rows``, ``one label``."""
    if rows == 0:
        return "empty"
    if rows < MEANINGFUL_ROWS:
        return f"{rows} row{'s' if rows != 1 else ''}"
    if biased in (0, rows):
        return "one label"
    return None


def story_keys(url: str, headline: str) -> tuple[str, ...]:
    """Story identity of a row: its canonical URL and its headline with case, punctuation and
    spacing normalised (the same wire story republished under two URLs shares a headline)."""
    norm = re.sub(r"[^a-z0-9]+", " ", headline.lower()).strip()
    keys = [f"url:{url}"] if url else []
    if len(norm.split()) >= 4:  # too-short headlines ("Live updates") are not an identity
        keys.append("headline:" + hashlib.sha1(norm.encode()).hexdigest())
    return tuple(keys)


def _informative(phash: int | None) -> bool:
    # Flat or near-flat images hash to (almost) all zeros or ones; they are not "the same photo".
    return phash is not None and 4 <= phash.bit_count() <= 60


def _bands(phash: int) -> list[tuple[int, int]]:
    width = 64 // _PHASH_BANDS + 1
    return [(i, (phash >> (i * width)) & ((1 << width) - 1)) for i in range(_PHASH_BANDS)]


def _tiebreak(unique_id: str, cell: Cell) -> str:
    return hashlib.sha256(f"{unique_id}|{cell.split}|{cell.fold}".encode()).hexdigest()


class _Assignment:
    """The state of one pass over the rows: label counts per cell, the link indexes (image
    bytes, story keys, perceptual-hash bands) and the groups found so far."""

    def __init__(self, pinned: Mapping[str, Cell], shares: Mapping[str, float], n_folds: int):
        self.pinned = pinned
        self.cells = [Cell(s, f) for s in shares for f in range(n_folds)]
        self.target = {c: shares[c.split] / n_folds for c in self.cells}
        self.target_list = list(self.target.values())
        self.positions = range(len(self.cells))
        self.counts: dict[int, dict[Cell, int]] = defaultdict(lambda: dict.fromkeys(self.cells, 0))
        self.totals: dict[int, int] = defaultdict(int)
        self.by_sha: dict[str, int] = {}
        self.by_story: dict[str, int] = {}
        self.by_band: dict[tuple[int, int], list[int]] = defaultdict(list)
        self.rows: list[SplitItem] = []
        self.group_of: list[int] = []  # row index -> group id (the index of the group's first row)
        self.cell_of_row: list[Cell] = []
        self.group_size: dict[int, int] = defaultdict(int)
        self.report = SplitReport()

    def links(self, it: SplitItem) -> dict[int, str]:
        """Earlier rows ``it`` shares an image, a near-identical image or a story with -> how."""
        linked: dict[int, str] = {}
        if it.image_sha256 and it.image_sha256 in self.by_sha:
            linked.setdefault(self.by_sha[it.image_sha256], "image")
        for key in it.story_keys:
            if key in self.by_story:
                linked.setdefault(self.by_story[key], "story")
        if _informative(it.phash):
            for band in _bands(it.phash):
                for j in self.by_band.get(band, ()):
                    if j not in linked and (self.rows[j].phash ^ it.phash).bit_count() <= PHASH_MAX_DISTANCE:
                        linked[j] = "near_image"
        return linked

    def choose(self, it: SplitItem, linked: dict[int, str]) -> Cell:
        """A pinned row keeps its cell; a linked row joins its earliest link's cell (among the
        splits it may go to); a new group goes to the cell whose share of its label stratum is
        furthest below target."""
        if it.unique_id in self.pinned:
            self.report.pinned += 1
            return self.pinned[it.unique_id]
        # Cells by position in ``self.cells`` (the order of ``target_list`` and of each label's
        # counts), not dicts keyed by Cell: hashing the frozen dataclass ~60 times a row was most
        # of this method's time.
        positions = self.positions
        if it.allowed_splits:
            positions = [i for i in positions if self.cells[i].split in it.allowed_splits] or self.positions
        if linked:
            allowed = {self.cells[i] for i in positions}
            joinable = [j for j in sorted(linked) if self.cell_of_row[j] in allowed]
            if joinable:
                return self.cell_of_row[joinable[0]]
        n, counts = self.totals[it.label] + 1, list(self.counts[it.label].values())
        deficit = [self.target_list[i] * n - counts[i] for i in positions]
        best = max(deficit)
        tied = [self.cells[i] for i, d in zip(positions, deficit, strict=True) if d >= best - 1e-9]
        return tied[0] if len(tied) == 1 else min(tied, key=lambda c: _tiebreak(it.unique_id, c))

    def join(self, i: int, it: SplitItem, linked: dict[int, str], cell: Cell) -> int:
        """Merge the groups ``it`` links (rows keep their cells; only identity merges) and report
        a group that ends up in more than one cell."""
        groups = {self.group_of[j] for j in linked}
        group = min(groups) if groups else i
        if len(groups) > 1:
            for j in range(i):
                if self.group_of[j] in groups:
                    self.group_of[j] = group
            for g in groups - {group}:
                self.group_size[group] += self.group_size.pop(g)
        if {self.cell_of_row[j] for j in linked} - {cell}:
            members = [self.rows[j].unique_id for j in range(i) if self.group_of[j] == group] + [it.unique_id]
            self.report.not_kept_whole.append(members)
        for how in set(linked.values()):
            self.report.rows_linked_by[how] += 1
        return group

    def add(self, it: SplitItem) -> Cell:
        i = len(self.rows)
        linked = self.links(it)
        cell = self.choose(it, linked)
        group = self.join(i, it, linked, cell)
        self.rows.append(it)
        self.group_of.append(group)
        self.group_size[group] += 1
        self.cell_of_row.append(cell)
        self.counts[it.label][cell] += 1
        self.totals[it.label] += 1
        if it.image_sha256:
            self.by_sha.setdefault(it.image_sha256, i)
        for key in it.story_keys:
            self.by_story.setdefault(key, i)
        if _informative(it.phash):
            for band in _bands(it.phash):
                self.by_band[band].append(i)
        return cell


def group_keys(keys: Mapping[str, Iterable[str]]) -> dict[str, str]:
    """``{unique_id: group}``: rows sharing any key (transitively) form one group, named by its
    smallest key, so the name depends on the data and never on the order of the rows.

    A sentence corpus keys a row by its article link and its normalised text: every sentence of an
    article is one group, and two articles that repeat a sentence are one group too. Giving
    :func:`assign_splits` the group as the rows' only story key (and ordering rows by it) places
    each group in one cell, whole.
    """
    parent: dict[str, str] = {}

    def root(key: str) -> str:
        while parent.setdefault(key, key) != key:
            parent[key] = key = parent[parent[key]]
        return key

    first: dict[str, str] = {}
    for uid, row_keys in keys.items():
        row_keys = list(row_keys) or [f"row:{uid}"]
        first[uid] = row_keys[0]
        for key in row_keys[1:]:
            a, b = root(row_keys[0]), root(key)
            if a != b:
                parent[a] = b
        root(row_keys[0])
    name: dict[str, str] = {}
    for key in parent:
        r = root(key)
        name[r] = min(name.get(r, key), key)
    return {uid: name[root(key)] for uid, key in first.items()}


def straddling_groups(groups: Mapping[str, str], cells: Mapping[str, Cell]) -> dict[str, int]:
    """How many multi-row groups sit in more than one split, and in more than one fold: an
    earlier build whose rows keep their cells may hold articles split across train and test."""
    splits: dict[str, set[str]] = defaultdict(set)
    folds: dict[str, set[int]] = defaultdict(set)
    for uid, group in groups.items():
        if uid in cells:
            splits[group].add(cells[uid].split)
            folds[group].add(cells[uid].fold)
    return {"splits": sum(len(s) > 1 for s in splits.values()), "folds": sum(len(f) > 1 for f in folds.values())}


def assign_splits(
    items: Iterable[SplitItem],
    *,
    pinned: Mapping[str, Cell] | None = None,
    shares: Mapping[str, float] = SPLIT_SHARES,
    n_folds: int = N_FOLDS,
) -> tuple[dict[str, Cell], SplitReport]:
    """Assign every item a :class:`Cell`. Returns ``({unique_id: Cell}, SplitReport)``."""
    pinned = pinned or {}
    ordered = sorted(items, key=lambda it: (it.unique_id not in pinned, it.order or "", it.unique_id))
    state = _Assignment(pinned, shares, n_folds)
    out = {it.unique_id: state.add(it) for it in ordered}
    report = state.report
    report.groups = len(state.group_size)
    report.multi_row_groups = sum(1 for n in state.group_size.values() if n > 1)
    report.largest_group = max(state.group_size.values(), default=0)
    return out, report
