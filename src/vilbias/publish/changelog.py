"""The release changelog: rows added, removed and relabelled since the previous version.

Pure functions over ``{unique_id: (split, label)}`` maps, so the numbers are trivially testable;
:func:`read_release_rows` is the I/O edge that builds such a map from a dataset folder (the
``default`` config's Parquet files, two columns only, never the images).

The card carries the changelog between two markers the card template writes::

    <!-- changelog:start -->
    ...
    <!-- changelog:end -->

:func:`insert_changelog` replaces what is between them (or appends the section when a card has
none), keeping earlier releases' entries below the new one.
"""

from __future__ import annotations

import fnmatch
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from vilbias.corpus.card import CHANGELOG_END as END
from vilbias.corpus.card import CHANGELOG_START as START
from vilbias.task import LABEL_NAMES

LABEL_COLUMNS = ("multimodal_label", "label")

Rows = Mapping[str, tuple[str, int]]
"""``unique_id -> (split, label id)`` for one release's ``default`` config."""


@dataclass(frozen=True)
class SplitChange:
    """One split's counts: rows before and after, and what happened in between."""

    previous: int
    current: int
    added: int
    removed: int
    relabelled: int


@dataclass(frozen=True)
class Changelog:
    """What changed between two releases (``previous`` is ``None`` for the first one).

    ``moved`` counts rows whose split changed; the split policy keeps it at 0 and the card says
    so when it is not.
    """

    version: str
    previous: str | None
    added: int
    removed: int
    relabelled: int
    moved: int
    total: int
    splits: dict[str, SplitChange] = field(default_factory=dict)
    label_counts: dict[str, dict[int, int]] = field(default_factory=dict)
    moved_allowed: bool = False
    """Rows changed split or fold and the release was published with ``--allow-moved-rows``."""
    visibility: str | None = None
    """Why the repo has the visibility it has, when the data's licence decided or was overridden
    (a source licence that forbids derivatives or commercial use, and ``--private false``)."""


def compute_changelog(old: Rows | None, new: Rows, *, version: str, previous: str | None = None, moved_allowed: bool = False,
                      visibility: str | None = None) -> Changelog:
    """Compare two releases' rows.

    Args:
        old: the previous release's rows, ``None`` for a first release.
        new: the release being published.
        version: its tag (``v1.1.0``).
        previous: the previous release's tag.
        moved_allowed: rows changed split or fold and the publisher allowed it explicitly.
        visibility: a sentence on the repo's visibility to record (see :class:`Changelog`).

    Returns:
        A :class:`Changelog`. A row is *added* when its id is new, *removed* when its id is gone,
        *relabelled* when its label changed; added and relabelled rows count in their new split,
        removed ones in their old split.
    """
    old = old or {}
    added = [uid for uid in new if uid not in old]
    removed = [uid for uid in old if uid not in new]
    kept = [uid for uid in new if uid in old]
    relabelled = [uid for uid in kept if new[uid][1] != old[uid][1]]
    moved = sum(1 for uid in kept if new[uid][0] != old[uid][0])

    before = Counter(split for split, _ in old.values())
    after = Counter(split for split, _ in new.values())
    n_added = Counter(new[uid][0] for uid in added)
    n_removed = Counter(old[uid][0] for uid in removed)
    n_relabelled = Counter(new[uid][0] for uid in relabelled)
    order = list(dict.fromkeys([*after, *before]))
    splits = {
        s: SplitChange(before[s], after[s], n_added[s], n_removed[s], n_relabelled[s]) for s in order
    }
    labels: dict[str, Counter] = {s: Counter() for s in after}
    for split, label in new.values():
        labels[split][label] += 1
    return Changelog(
        version=version,
        previous=previous if old else None,
        added=len(added),
        removed=len(removed),
        relabelled=len(relabelled),
        moved=moved,
        total=len(new),
        splits=splits,
        label_counts={s: dict(sorted(c.items())) for s, c in labels.items()},
        moved_allowed=moved_allowed,
        visibility=visibility,
    )


def render_changelog(changelog: Changelog, label_names: Sequence[str] = tuple(LABEL_NAMES)) -> str:
    """The changelog entry for one release, as Markdown (a ``### vX.Y.Z`` heading and a table)."""
    c = changelog
    if c.previous is None:
        head = f"### {c.version}\n\nFirst release: {c.total} rows."
    else:
        head = (
            f"### {c.version}\n\nChanges since {c.previous}: **{c.added} rows added, {c.removed} removed, "
            f"{c.relabelled} relabelled** ({c.total} rows in all)."
        )
        if c.moved_allowed:
            head += (" **Rows of the previous release changed split or fold** (published with "
                     "`--allow-moved-rows`): scores on this release are not comparable with earlier ones.")
        elif c.moved:
            head += f" {c.moved} rows changed split."
    if c.visibility:
        head += f" {c.visibility}"
    names = list(label_names)
    lines = [head, "", "| split | rows | previous | added | removed | relabelled | " + " | ".join(names) + " |",
             "|---|---|---|---|---|---|" + "---|" * len(names)]
    for split, s in c.splits.items():
        counts = c.label_counts.get(split, {})
        lines.append(
            f"| {split} | {s.current} | {s.previous} | {s.added} | {s.removed} | {s.relabelled} | "
            + " | ".join(str(counts.get(i, 0)) for i in range(len(names)))
            + " |"
        )
    return "\n".join(lines) + "\n"


def _previous_entries(section: str) -> str:
    """Earlier releases' entries (from the first ``### v`` heading on) of a card's section."""
    m = re.search(r"^### v\d", section, flags=re.M)
    return section[m.start():].strip() if m else ""


def changelog_section(card_text: str) -> str:
    """The text between the changelog markers of ``card_text`` ('' when there are none)."""
    start, end = card_text.find(START), card_text.find(END)
    if start < 0 or end < start:
        return ""
    return card_text[start + len(START) : end].strip()


def insert_changelog(card_text: str, entry: str, previous_card: str | None = None) -> str:
    """Put ``entry`` between the changelog markers of ``card_text``.

    Args:
        card_text: the card being published (what the build wrote).
        entry: this release's entry from :func:`render_changelog`.
        previous_card: the previous release's card; its entries are kept below ``entry``.

    Returns:
        The card with the section replaced, or with a ``## Changelog`` section appended when the
        card has no markers.
    """
    history = _previous_entries(changelog_section(previous_card)) if previous_card else ""
    body = entry.strip() + ("\n\n" + history if history else "")
    block = f"{START}\n{body}\n{END}"
    start, end = card_text.find(START), card_text.find(END)
    if start >= 0 and end > start:
        return card_text[:start] + block + card_text[end + len(END) :]
    return card_text.rstrip("\n") + f"\n\n## Changelog\n\n{block}\n"


def card_metadata(card_text: str) -> dict:
    """The YAML front matter of a card as a dict ({} when it has none)."""
    import yaml

    if not card_text.startswith("---"):
        return {}
    end = card_text.find("\n---", 3)
    if end < 0:
        return {}
    return yaml.safe_load(card_text[3:end]) or {}


def default_data_files(card_text: str) -> dict[str, list[str]]:
    """``split -> path patterns`` of the ``default`` config in a card's ``configs:``.

    Raises:
        ValueError: when the card declares no ``default`` config.
    """
    configs = card_metadata(card_text).get("configs") or []
    for cfg in configs:
        if cfg.get("config_name", "default") == "default":
            files = cfg.get("data_files")
            if isinstance(files, str):
                return {"train": [files]}
            out: dict[str, list[str]] = {}
            for item in files or []:
                paths = item["path"]
                out[item["split"]] = [paths] if isinstance(paths, str) else list(paths)
            return out
    raise ValueError("the card's YAML has no `configs:` entry for the default config")


def read_release_rows(folder: str | Path) -> dict[str, tuple[str, int]]:
    """Read ``unique_id -> (split, label)`` from a dataset folder's ``default`` config.

    Only the id and label columns are read (``multimodal_label``, or ``label`` for text-only
    builds), so images never leave the disk.

    Raises:
        FileNotFoundError: when the folder has no README.md or a split matches no file.
        ValueError: when ids repeat or the columns are missing.
    """
    import pyarrow.parquet as pq

    folder = Path(folder)
    readme = folder / "README.md"
    if not readme.is_file():
        raise FileNotFoundError(f"{readme} not found: is {folder} a built dataset folder?")
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.parquet"))
    rows: dict[str, tuple[str, int]] = {}
    for split, patterns in default_data_files(readme.read_text(encoding="utf-8")).items():
        matched = [f for f in files if any(fnmatch.fnmatch(f, pat) for pat in patterns)]
        if not matched:
            raise FileNotFoundError(f"{folder}: split {split!r} ({patterns}) matches no Parquet file")
        for rel in matched:
            schema = pq.read_schema(folder / rel)
            label = next((c for c in LABEL_COLUMNS if c in schema.names), None)
            if "unique_id" not in schema.names or label is None:
                raise ValueError(f"{rel}: needs a unique_id column and one of {LABEL_COLUMNS}")
            table = pq.read_table(folder / rel, columns=["unique_id", label])
            for uid, lab in zip(table.column("unique_id").to_pylist(), table.column(label).to_pylist(), strict=True):
                if uid in rows:
                    raise ValueError(f"{rel}: unique_id {uid!r} appears twice in the default config")
                rows[uid] = (split, lab)
    return rows
