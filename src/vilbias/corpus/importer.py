"""``vilbias build --from``: a published release as a build's source (:class:`ReleaseSource`).

    vilbias build --from vector-institute/newsmediabias-plus --output ./nmb-plus       # Hub, 2025 layout
    vilbias build --from nmb_plus_v1.parquet --images nmb_images/ --output ./nmb-plus  # v1 table + images
    vilbias build --from dataset.zip --images vilbias_images/ --output ./vilbias-paper
    vilbias build --from items.csv --column unique_id=id --column image=img \\
        --label-map "yes=biased,no=not_biased" --output ./mine

Two streaming passes over the source (:mod:`vilbias.corpus.source`), so memory holds one record
batch plus a few small facts per row, whatever the corpus size:

1. **scan** — map every record through its layout (:mod:`vilbias.corpus.presets`), map its
   label, check its text, validate its image (:func:`vilbias.images.validate_image`: decodes,
   sane size; gives the sha256 and perceptual hash that group identical and near-identical
   images) and detect its language (:func:`vilbias.languages.item_language`: a release records
   none the corpus could trust). What is excluded is counted by reason; the same ``unique_id``
   twice with different labels is left out whole and listed. The images and languages are
   checked in worker threads (``num_proc``; decoding and hashing release the GIL), in order, a
   few chunks ahead of the reading.
2. **write** — :func:`vilbias.corpus.splits.assign_splits` gives every kept row its cell (rows
   of the previous build in the output keep theirs: a newer release of the source moves no
   row), then the rows are read again and handed to the build (:mod:`vilbias.corpus.pipeline`),
   which writes each once into its cell, image bytes as they are.

Rows are keyed by the source's ``unique_id`` and ordered by it (never by file order, which
changes between releases). Fields the source lacks stay null or empty: no votes, no agreement,
``review`` = ``unreviewed``; the source's label strings are kept verbatim in ``source_label`` and
``source_text_label``.
"""

from __future__ import annotations

import logging
import os
from collections import Counter, deque
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from datasets import DatasetInfo, Features
from huggingface_hub import DatasetCardData
from tqdm.auto import tqdm

from vilbias import task
from vilbias.corpus.card import (
    PLOT_PATH,
    plot_label_by_outlet,
    render_card,
    row_languages,
    row_statistics,
    size_category,
)
from vilbias.corpus.config import CardNames
from vilbias.corpus.presets import Layout, resolve_layout, restricted_license
from vilbias.corpus.protocol import BuildPlan, CellKey
from vilbias.corpus.source import Source, open_source
from vilbias.corpus.splits import Cell, SplitItem, assign_splits, story_keys
from vilbias.corpus.tables import cell_text
from vilbias.corpus.writer import ConfigView, card_metadata, corpus_views
from vilbias.images import InvalidImage, validate_image
from vilbias.languages import ITEM_CHARS, item_language, load_detector
from vilbias.loading_script.biascorpus import features, rationale_check
from vilbias.loading_script.schema import DEFAULT, RELEASE, SFT, columns
from vilbias.task import ANSWER_LABELS
from vilbias.workdir import iso_date

logger = logging.getLogger(__name__)

SOURCE_AUTHOR = "the source"
"""Who wrote an imported row's rationale, as the card and report name it."""
MAX_LISTED = 1000
"""Exclusions listed one by one in the report (all are counted)."""


@dataclass(slots=True)
class _Kept:
    """What the write pass needs of a kept row (a few fields; never its text or image)."""

    position: int
    label: int
    outlet: str
    sha256: str
    ext: str
    has_reasoning: bool
    split: str = ""
    fold: int = -1
    language: str = ""
    """Detected in the scan (pass 1), with the image's check: the row's ``language`` and the card's ``language:``."""


@dataclass
class _Scan:
    kept: dict[str, _Kept]
    items: list[SplitItem]
    exclusions: list[dict[str, Any]]
    reasons: Counter
    unknown_labels: Counter
    unknown_text_labels: Counter
    records: int
    image_bytes: int
    no_text_label: int
    unparsed_dates: int


def _field(record: dict, layout: Layout, target: str) -> Any:
    column = layout.columns.get(target)
    return None if column is None else record.get(column)


def _exclude(scan: _Scan, uid: str, reason: str, where: str, **extra: Any) -> None:
    scan.reasons[reason.split(":")[0] if not reason.startswith("invalid_image") else ":".join(reason.split(":")[:2])] += 1
    if len(scan.exclusions) < MAX_LISTED:
        scan.exclusions.append({"unique_id": uid, "reason": reason, "where": where, **extra})


CHUNK = 16
"""Rows a worker thread checks per task."""


def _check(data: bytes, headline: str, text: str) -> tuple[str | None, int | None, str | None, str, str]:
    """One row's image and language: ``(sha256, phash, ext, error, language)`` (error "" when valid)."""
    try:
        info = validate_image(data)
    except InvalidImage as e:
        return None, None, None, str(e), ""
    return info.sha256, info.phash, info.ext, "", item_language(headline, text)


def _check_chunk(chunk: list[tuple[bytes | None, str, str]]) -> list[tuple | None]:
    return [None if job[0] is None else _check(*job) for job in chunk]


def _checked(jobs: Iterable[tuple[Any, bytes | None, str, str]], num_proc: int | None) -> Iterator[tuple[Any, int, tuple | None]]:
    """``(context, image bytes, headline, text)`` -> ``(context, bytes, _check's result)``, in order
    (a job without bytes passes through, its result None), checked in ``num_proc`` worker threads
    (default: every core, at most 8; 1: here), at most two chunks a worker ahead of the reading, so
    memory holds a few chunks' images whatever the source's size.

    Threads, not processes: decoding an image, resizing it for its perceptual hash and its sha256
    run with the GIL released, so they run side by side on every core, and the image bytes are
    not copied to another process and back (a workdir build's pool sends paths, not bytes: there
    processes cost less CPU than threads contending for the GIL)."""
    workers = num_proc if num_proc is not None else min(os.cpu_count() or 1, 8)
    if workers <= 1:
        for context, data, headline, text in jobs:
            yield context, 0 if data is None else len(data), None if data is None else _check(data, headline, text)
        return
    # once, in a thread of its own while the workers check the first images (a worker's first
    # detection waits for it): on a core the scan would otherwise leave idle for a second
    load_detector()
    pending: deque = deque()
    chunk: list = []

    def done(entry):
        contexts, future = entry
        return ((context, size, result) for (context, size), result in zip(contexts, future.result(), strict=True))

    with ThreadPoolExecutor(workers, thread_name_prefix="import-check") as pool:

        def submit(chunk: list) -> None:
            pending.append(([c for c, _ in chunk], pool.submit(_check_chunk, [j for _, j in chunk])))

        try:
            for context, data, headline, text in jobs:
                chunk.append(((context, 0 if data is None else len(data)), (data, headline, text)))
                if len(chunk) == CHUNK:
                    submit(chunk)
                    chunk = []
                    while len(pending) > 2 * workers:
                        yield from done(pending.popleft())
            if chunk:
                submit(chunk)
            while pending:
                yield from done(pending.popleft())
        finally:
            for _, future in pending:  # a stop or an error: no check left running after the scan
                future.cancel()


def scan_source(source: Source, layout: Layout, num_proc: int | None = None) -> _Scan:
    """Pass 1: decide which records become rows, and gather what the split policy needs."""
    scan = _Scan({}, [], [], Counter(), Counter(), Counter(), 0, 0, 0, 0)
    first: dict[str, tuple[str, str]] = {}  # unique_id -> (source label, where) of its first copy
    conflicts: dict[str, list[dict[str, str]]] = {}

    def jobs() -> Iterator[tuple[tuple, bytes | None, str, str]]:
        """The records whose image is to be checked, with what the scan needs of them afterwards;
        an exclusion decided here passes through the checks (no bytes), so the report lists every
        exclusion in the source's order."""
        for position, file, line, record in tqdm(source.records(), desc="scanning", unit=" rows"):
            scan.records += 1
            where = f"{file}:{line}"
            uid = cell_text(_field(record, layout, "unique_id"))
            raw_label = cell_text(_field(record, layout, "multimodal_label"))
            if not uid:
                yield (where, "missing_unique_id", where, {}), None, "", ""
                continue
            if uid in first:
                if first[uid][0] != raw_label:
                    conflicts.setdefault(uid, [{"where": first[uid][1], "source_label": first[uid][0]}])
                    conflicts[uid].append({"where": where, "source_label": raw_label})
                else:
                    yield (uid, "duplicate_unique_id", where, {"kept": first[uid][1]}), None, "", ""
                continue
            first[uid] = (raw_label, where)
            label = layout.label_map.get(raw_label.lower())
            if label is None:
                scan.unknown_labels[raw_label] += 1
                yield (uid, "unknown_label", where, {"source_label": raw_label}), None, "", ""
                continue
            headline = cell_text(_field(record, layout, "headline"))
            article = cell_text(_field(record, layout, "article_text"))
            if not headline and not article:
                yield (uid, "empty_text", where, {}), None, "", ""
                continue
            data, name = source.images.read(_field(record, layout, "image"))
            if data is None:
                yield (uid, "missing_image", where, {"detail": name}), None, "", ""
                continue
            published = _field(record, layout, "published") if "published" in layout.columns else None
            context = (uid, where, position, label, headline, cell_text(_field(record, layout, "text_label")), published,
                       cell_text(_field(record, layout, "outlet")), bool(cell_text(_field(record, layout, "reasoning"))),
                       cell_text(_field(record, layout, "url")))
            yield context, data, headline, article[:ITEM_CHARS]

    for context, size, checked in _checked(jobs(), num_proc):
        if checked is None:  # excluded before its image was read
            uid, reason, where, extra = context
            _exclude(scan, uid, reason, where, **extra)
            continue
        sha256, phash, ext, error, language = checked
        uid, where, position, label, headline, raw_text, published, outlet, has_reasoning, url = context
        if error:
            _exclude(scan, uid, f"invalid_image:{error}", where)
            continue
        if raw_text and raw_text.lower() not in layout.label_map:
            scan.unknown_text_labels[raw_text] += 1
        if not raw_text or raw_text.lower() not in layout.label_map:
            scan.no_text_label += 1
        if cell_text(published) and iso_date(published) is None:
            scan.unparsed_dates += 1
        scan.image_bytes += size
        scan.kept[uid] = _Kept(position, label, outlet, sha256, ext, has_reasoning, language=language)
        scan.items.append(SplitItem(uid, label, "", sha256, phash, story_keys(url, headline)))
    for uid, copies in conflicts.items():
        scan.kept.pop(uid, None)
        for copy in copies:
            _exclude(scan, uid, "conflicting_labels", copy["where"], source_label=copy["source_label"])
    if conflicts:
        scan.items = [it for it in scan.items if it.unique_id not in conflicts]
    return scan


def _example(record: dict, layout: Layout, uid: str, kept: _Kept, data: bytes) -> dict[str, Any]:
    """One stored row: the source's fields where it has them, null or empty where it does not."""

    def text(target: str) -> str | None:
        return cell_text(_field(record, layout, target)) if target in layout.columns else None

    headline, article = text("headline") or "", text("article_text") or ""
    reasoning = text("reasoning") or None
    raw_text = text("text_label")
    text_label = layout.label_map.get((raw_text or "").lower(), -1)
    messages = task.messages(headline, article, kept.label, reasoning or "")
    if not reasoning:
        # No rationale in the source: the answer is the label alone, never an empty "Reasoning:".
        messages[-1]["content"][0]["text"] = f"Label: {ANSWER_LABELS[kept.label]}"
    # what the importer works out itself; every other column is the source's column mapped to it
    # (a target), else what the column's declaration says an import stores (vilbias.loading_script.schema)
    computed = {
        "unique_id": uid,
        "headline": headline,
        "article_text": article,
        "published": iso_date(_field(record, layout, "published")) if "published" in layout.columns else None,
        "image": {"bytes": data, "path": f"{kept.sha256}.{kept.ext}"},
        "text_label": text_label,
        "multimodal_label": kept.label,
        "reasoning": reasoning,
        # detected as ingest does, in the scan (a release records no language the corpus could trust)
        "language": kept.language,
        "source_label": text("multimodal_label"),
        "source_text_label": raw_text,
        "messages": messages,
    }
    example = {c.name: computed[c.name] if c.name in computed else text(c.name) if c.target else
               list(c.imported) if isinstance(c.imported, tuple) else c.imported for c in columns(RELEASE)}
    # The source records no techniques: the check compares quotations, label and completeness only.
    example["rationale_problems"] = rationale_check(example, None)
    return example


def label_map_hint(unknown: Counter, layout: Layout) -> str:
    """The ``--label-map`` that would take the unknown values as well (their mapping to fill in)."""
    entries = [f"{k}={v}" for k, v in layout.label_map_spelled.items()] + [f"{value}=biased|not_biased" for value, _ in unknown.most_common()]
    return "--label-map \"" + ",".join(entries) + "\""


def _details(source: Source, layout: Layout, scan: _Scan) -> dict[str, Any]:
    """The report's ``source`` section of an import: where it came from, its layout and licence, what reading it found."""
    no_rationale = sum(1 for k in scan.kept.values() if not k.has_reasoning)
    return {
        "origin": source.kind,
        "repo_id": source.repo_id,
        "revision": source.revision,
        "commit": source.commit,
        "files": [p.name for p in source.tables],
        "layout": layout.name,
        "title": layout.title,
        "columns": layout.columns,
        "label_map": layout.label_map_spelled,
        "label_meaning": layout.label_meaning,
        "license": layout.license,
        "license_note": layout.license_note,
        "restricted": restricted_license(layout.license),
        "citation": layout.citation,
        "records": scan.records,
        "kept": len(scan.kept),
        "excluded": scan.records - len(scan.kept),
        "exclusions_listed": len(scan.exclusions),
        "unknown_labels": dict(scan.unknown_labels),
        "label_map_hint": label_map_hint(scan.unknown_labels, layout) if scan.unknown_labels else None,
        "unknown_text_labels": dict(scan.unknown_text_labels),
        "no_text_label": scan.no_text_label,
        "no_rationale": no_rationale,
        "unparsed_dates": scan.unparsed_dates,
        "image_bytes": scan.image_bytes,
    }


class ReleaseSource:
    """A published release (a Hub dataset, a file, a folder or a zip) as a build's source.

    Args:
        spec: what ``--from`` names (see :func:`vilbias.corpus.source.open_source`).
        images: ``--images``, the folder the table's image paths are relative to.
        preset, columns, label_map, license: ``--preset``, ``--column``, ``--label-map`` and
            ``--source-license`` (:func:`vilbias.corpus.presets.resolve_layout`).
        num_proc: threads checking images and languages (default: every core, at most 8; 1: none).

    :meth:`plan` raises :class:`vilbias.corpus.source.SourceError` when the source cannot be read
    or the Hub refused it, and ``ValueError`` for an unrecognised layout, a bad ``--column`` /
    ``--label-map``, or nothing left to import (nothing is written).
    """

    kind = "release"

    @property
    def features(self) -> Features:
        return features(RELEASE)

    @property
    def views(self) -> dict[str, ConfigView]:
        return corpus_views(features(RELEASE, DEFAULT), features(RELEASE, SFT))

    def __init__(self, spec: str, *, images: str | os.PathLike | None = None, preset: str | None = None,
                 columns: list[str] | None = None, label_map: str | None = None, license: str | None = None,
                 num_proc: int | None = None):
        self.spec, self.images, self.num_proc = spec, images, num_proc
        self.preset, self.columns, self.label_map, self.license = preset, list(columns or []), label_map, license
        self.name = spec
        self._source: Source | None = None
        self._layout: Layout | None = None
        self._scan: _Scan | None = None
        self._split_report: dict[str, Any] = {}
        self._details: dict[str, Any] = {}

    def plan(self, scratch: Path, pinned: Mapping[str, Cell]) -> BuildPlan:
        scratch.mkdir(parents=True, exist_ok=True)
        source = self._source = open_source(self.spec, images=self.images, scratch=scratch)
        self.name = source.describe()
        layout = self._layout = resolve_layout(
            source.describe(), source.columns(), preset=self.preset, column_args=self.columns,
            label_map=self.label_map, license=self.license or source.hub_license,
        )
        logger.info("importing %s as layout %s", source.describe(), layout.name)
        scan = self._scan = scan_source(source, layout, self.num_proc)
        if not scan.kept:
            common = ", ".join(f"{n} {r}" for r, n in scan.reasons.most_common(3))
            hint = f"; {label_map_hint(scan.unknown_labels, layout)} would map the labels" if scan.unknown_labels else ""
            raise ValueError(f"nothing to import: all {scan.records} records were excluded ({common}){hint}")
        cells, split_report = assign_splits(scan.items, pinned=dict(pinned))
        for uid, cell in cells.items():
            scan.kept[uid].split, scan.kept[uid].fold = cell.split, cell.fold
        scan.items = []  # the cells are on the rows now
        self._split_report, self._details = asdict(split_report), _details(source, layout, scan)
        return BuildPlan(scan.kept, self._split_report, scan.exclusions, dict(scan.reasons), self._details)

    def examples(self) -> Iterator[tuple[CellKey, dict[str, Any]]]:
        """Pass 2: the source read again, every kept row once (its image bytes as they are)."""
        source, layout, scan = self._source, self._layout, self._scan
        at = {k.position: uid for uid, k in scan.kept.items()}
        for position, file, line, record in source.records():
            uid = at.get(position)
            if uid is None:
                continue
            kept = scan.kept[uid]
            data, _ = source.images.read(_field(record, layout, "image"))
            if data is None:
                raise RuntimeError(f"{file}:{line}: the image of {uid} was readable in the first pass and is gone: is the source changing?")
            yield (kept.split, kept.fold), _example(record, layout, uid, kept, data)

    def rationale_author(self, example: dict[str, Any]) -> str | None:
        """Every imported rationale is the source's."""
        return SOURCE_AUTHOR if example["reasoning"] else None

    def card(self, repo: Path, infos: dict[str, DatasetInfo], names: CardNames, changelog: str,
             rationales: dict[str, Any] | None) -> str:
        source, layout, scan = self._source, self._layout, self._scan
        if any(k.outlet for k in scan.kept.values()):  # no plot of a single "(unknown)" bar
            plot_label_by_outlet(scan.kept.values(), repo / PLOT_PATH)
        card_data = DatasetCardData(
            pretty_name=names.pretty_name,
            license=layout.license,
            language=row_languages(scan.kept.values()),
            task_categories=["image-text-to-text", "image-classification", "text-classification"],
            tags=["media-bias", "multimodal", "news", "vilbias", "newsmediabias-plus"],
            size_categories=[size_category(len(scan.kept))],
            source_datasets=[source.repo_id] if source.repo_id else None,
        )
        card_metadata(card_data, self.views, infos, list(self.features))
        imported = {"source": source.describe(), "kind": source.kind, "exclusion_counts": dict(scan.reasons), **self._details}
        card = render_card(card_data, {**row_statistics(scan.kept.values(), self._split_report), "imported": imported},
                           names=names, changelog=changelog, is_sample=False, rationales=rationales)
        return str(card)

    def close(self) -> None:
        if self._source is not None:
            self._source.close()
