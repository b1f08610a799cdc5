"""Labelled sentence corpora (BABE and its layouts) -> a text-only dataset repo.

    vilbias build --sentences final_labels_SG1.csv --output ./babe
    vilbias build --sentences final_labels_SG2.xlsx --output ./babe-sg2
    vilbias build --sentences mediabiasgroup/BABE --output ./babe-hub     # a Hub dataset (or a local copy of one)
    vilbias train classifier --dataset ./babe --recipe babe --cv

Inputs, one reader for all of them:

- **BABE's CSV** as published (Spinde et al., 2021): semicolon-separated, UTF-8 with a byte-order
  mark, header ``text;news_link;outlet;topic;type;label_bias;label_opinion;biased_words``;
  ``label_bias`` is ``Biased``, ``Non-biased`` or ``No agreement``; ``biased_words`` a Python list
  literal (``['word', 'other']`` or ``[]``). A comma- or tab-separated file with the same columns
  reads the same way (the delimiter is taken from the header line).
- **BABE's XLSX** (``final_labels_SG1.xlsx``, ``final_labels_SG2.xlsx``): the first sheet, the
  header in its first non-empty row (read with ``openpyxl``).
- **The Hub layout** of ``mediabiasgroup/BABE``: columns ``text``, ``label`` (``1`` biased,
  ``0`` not biased), ``outlet``, ``topic``, ``news_link``, ``biased_words`` (the list literal as a
  string), ``type``, ``label_opinion``, ``uuid``; splits ``train`` and ``test``, read one after the
  other (the corpus makes its own folds). As ``ORG/NAME`` or a local dataset folder (through
  ``datasets.load_dataset``), or a local ``.parquet``, ``.json``/``.jsonl`` or ``.csv`` export.

Column names are matched without regard to case; ``sentence`` is read as ``text`` and
``label_bias`` is preferred over ``label``. Labels: ``Biased``/``Non-biased`` (any case; also
``biased``/``not_biased``) or ``1``/``0``.

Rules. ``No agreement`` rows and rows without a label are left out (BABE's own protocol drops
them). An exact repeat of a sentence (same text, link and label) is merged into one row. The
same sentence and link given different labels is a *conflict*: every copy is left out. Each
row left out or merged is listed with its line in ``build_report.json`` (``exclusions``: line,
reason, unique_id) and in the card; the file is never refused for them. A file that cannot be
read, a missing text or label column, an unknown label value, an empty text or a malformed
``biased_words`` stops the build with one line naming the line. "Line" is the line of the
record's first line in a CSV, the sheet row in an XLSX, and the 1-based record number (over
the splits, in order) for Parquet, JSON and Hub datasets.

Output: the same layout as the main corpus (:mod:`vilbias.corpus.writer`): every row stored once
in ``data/{split}-fold{k}-…``, configs ``default`` (train/validation/test, 80/10/10) and
``fold_0`` ... ``fold_4`` (train/test) reading those files, a README.md whose YAML carries
``configs:`` and ``dataset_info:``. Columns: ``unique_id``, ``text``, ``news_link``, ``outlet``,
``topic``, ``type``, ``label`` (ClassLabel ``["not_biased", "biased"]``), ``label_opinion``,
``biased_words``. Splits and folds come from :func:`vilbias.corpus.splits.assign_splits`:
stratified by label, deterministic from the data (rows ordered by ``unique_id``), and the same
sentence text (after case and space normalisation) never straddles two cells.
"""

from __future__ import annotations

import ast
import hashlib
import logging
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from datasets import ClassLabel, DatasetInfo, Features, List, Value, load_dataset
from huggingface_hub import DatasetCard, DatasetCardData

from vilbias.corpus.card import loading_block
from vilbias.corpus.config import CardNames
from vilbias.corpus.protocol import BuildPlan, CellKey
from vilbias.corpus.release import read_cells
from vilbias.corpus.splits import (
    MEANINGFUL_ROWS,
    Cell,
    SplitItem,
    assign_splits,
    group_keys,
    split_size_note,
    straddling_groups,
)
from vilbias.corpus.tables import (
    cell_text,
    csv_records,
    parquet_records,
    table_records,
    xlsx_records,
)
from vilbias.corpus.writer import card_metadata, corpus_views
from vilbias.task import (
    ANSWER_LABELS,
    BIASED,
    BIASED_NAME,
    FOLDS,
    LABEL_NAMES,
    N_FOLDS,
    NOT_BIASED_NAME,
    SPLITS,
    read_label,
)

logger = logging.getLogger(__name__)

BABE_COLUMNS = ("text", "news_link", "outlet", "topic", "type", "label_bias", "label_opinion", "biased_words")
"""The header of BABE's published CSV."""
OPTIONAL_COLUMNS = ("news_link", "outlet", "topic", "type", "label_opinion")
ALIASES = {"text": ("text", "sentence"), "label": ("label_bias", "label")}
"""Where each field may be found, in order of preference (names compared lower-cased)."""
NO_AGREEMENT = "No agreement"
HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+$")
TABLE_SUFFIXES = {".parquet", ".json", ".jsonl"}


def _features() -> Features:
    return Features(
        {
            "unique_id": Value("string"),
            "text": Value("string"),
            "news_link": Value("string"),
            "outlet": Value("string"),
            "topic": Value("string"),
            "type": Value("string"),
            "label": ClassLabel(names=LABEL_NAMES),
            "label_opinion": Value("string"),
            "biased_words": List(Value("string")),
        }
    )


# ---------------------------------------------------------------- reading records


def _table_records(source: Path) -> Iterator[tuple[int, dict]]:
    if source.suffix.lower() == ".parquet":
        # Sentence files are small; one batch per file keeps the record numbering simple.
        return parquet_records(source, batch_size=4096)
    return table_records(source)


OFFICIAL_SPLITS = {"train": ("train", "validation"), "validation": ("validation",), "dev": ("validation",), "test": ("test",)}
"""A source's own split -> the corpus splits its rows may go to. BABE's Hub release ships train and
test (published results are reported on its test split): its test rows stay the test split, and
the validation split that early stopping and calibration need is drawn from its train rows."""


def _split_order(name: str) -> tuple[int, str]:
    return (list(OFFICIAL_SPLITS).index(name) if name in OFFICIAL_SPLITS else len(OFFICIAL_SPLITS), name)


def _dataset_records(name: str, source_split: str | None = None) -> Iterator[tuple[int, dict, str | None]]:
    """Records of a dataset folder or Hub id with the source's split of each: its own split
    when its splits are train/validation/test (kept by the corpus), None when ``source_split``
    picks one split of another kind (MBIB's splits are its tasks) and the corpus draws its own."""
    from datasets import get_dataset_split_names

    names = sorted(get_dataset_split_names(name), key=_split_order)
    if source_split is not None:
        if source_split not in names:
            raise ValueError(f"{name} has no split {source_split!r}; its splits: {', '.join(names)}")
        chosen, official = [source_split], False
    elif set(names) <= set(OFFICIAL_SPLITS):
        chosen, official = names, len(names) > 1 or names != ["train"]
    else:
        raise ValueError(f"{name}'s splits are {', '.join(names)}, not train/test: pass --source-split NAME to build "
                         "one of them (MBIB's splits are its tasks, e.g. --source-split linguistic_bias)")
    number = 0
    for split in chosen:
        for record in load_dataset(name, split=split):
            number += 1
            yield number, record, split if official else None


def _plain(records: Iterator[tuple[int, dict]]) -> Iterator[tuple[int, dict, None]]:
    for line, record in records:
        yield line, record, None


def read_records(source: str | Path, source_split: str | None = None) -> Iterator[tuple[int, dict, str | None]]:
    """``(line, record, split)`` for every non-empty record of a sentence file, folder or Hub
    dataset; ``split`` is the source's own split where it ships train/test (else None).

    Raises:
        FileNotFoundError: ``source`` is neither a file, a folder nor an ``ORG/NAME`` id.
        ValueError: the file cannot be read (names the line where that applies), or a dataset's
            splits are not train/test and ``source_split`` names none of them.
    """
    path = Path(source)
    if path.is_file():
        if source_split is not None:
            raise ValueError(f"--source-split picks a split of a dataset folder or Hub id; {path.name} is a file")
        suffix = path.suffix.lower()
        if suffix == ".xlsx":
            return _plain(xlsx_records(path))
        if suffix in TABLE_SUFFIXES:
            return _plain(_table_records(path))
        return _plain(csv_records(path))
    if path.is_dir() or HUB_ID.match(str(source)):
        return _dataset_records(str(source), source_split)
    raise FileNotFoundError(f"sentence source {source} is neither a file, a dataset folder nor a Hub id ORG/NAME")


# ---------------------------------------------------------------- one record -> one row


SENTENCE_FIELDS = ("text", "label", *OPTIONAL_COLUMNS, "biased_words")
"""What ``--column FIELD=COLUMN`` may map for a sentence corpus."""


def parse_sentence_columns(pairs: list[str]) -> dict[str, str]:
    """``["text=sentence_text", ...]`` -> ``{"text": "sentence_text"}``: ``--column`` for ``build --sentences``."""
    out = {}
    for pair in pairs:
        target, sep, column = pair.partition("=")
        if not sep or not target.strip() or not column.strip():
            raise ValueError(f"--column {pair!r} is not FIELD=COLUMN")
        if target.strip() not in SENTENCE_FIELDS:
            raise ValueError(f"--column {pair!r}: {target.strip()!r} is not a sentence field; fields: {', '.join(SENTENCE_FIELDS)}")
        out[target.strip()] = column.strip()
    return out


def _columns(source: str | Path, record: dict, mapped: Mapping[str, str] | None = None) -> dict[str, str]:
    """field -> the record's column holding it (``mapped`` first, as ``--column`` gave it); fails
    when text or label has none, or a mapped column is not in the source."""
    lower = {str(k).strip().lower(): k for k in record}
    found = {}
    for name, column in (mapped or {}).items():
        if column.strip().lower() not in lower:
            raise ValueError(f"--column {name}={column}: {_display(source)} has no column {column!r} (found {list(record)})")
        found[name] = lower[column.strip().lower()]
    for name in (*ALIASES, *OPTIONAL_COLUMNS, "biased_words"):
        if name in found:
            continue
        for alias in ALIASES.get(name, (name,)):
            if alias in lower:
                found[name] = lower[alias]
                break
    for name in ALIASES:
        if name not in found:
            raise ValueError(
                f"{_display(source)}: no {' or '.join(ALIASES[name])} column (found {list(record)}); BABE's header is "
                f"{';'.join(BABE_COLUMNS)}, and --column {name}=COLUMN names another"
            )
    return found


def _display(source: str | Path) -> str:
    """How artifacts name a source: a local file or folder by its name (never a path of the
    machine that built it), a Hub dataset by its id."""
    path = Path(str(source))
    return path.name if path.exists() else str(source)


def recognise_layout(source: str | Path, columns: list[str]) -> str | None:
    """``"babe"`` or ``"mbib"`` when the data is BABE or an MBIB task (from the Hub id, or from BABE's
    own columns: ``biased_words`` with ``news_link`` and ``label_opinion``), else None: a file of
    one's own is credited to nobody."""
    name = str(source).split("@")[0].lower()
    if name in KNOWN_SOURCES:
        return KNOWN_SOURCES[name]
    lower = {c.strip().lower() for c in columns}
    if {"biased_words", "news_link", "label_opinion"} <= lower and ({"label_bias", "label"} & lower):
        return "babe"
    return None


def _parse_label(raw, line: int) -> int | str | None:
    """Class id, ``NO_AGREEMENT``, or None for an empty cell."""
    value = cell_text(raw)
    if not value:
        return None
    if value.lower() == NO_AGREEMENT.lower():
        return NO_AGREEMENT
    label = read_label(value)
    if label is None:
        raise ValueError(f"line {line}: label {value!r} is not one of Biased, Non-biased, {NO_AGREEMENT}, 1, 0")
    return label


def _parse_words(raw, line: int) -> list[str]:
    if isinstance(raw, (list, tuple)):
        value = raw
    else:
        raw = cell_text(raw)
        if not raw:
            return []
        try:
            value = ast.literal_eval(raw)
        except (ValueError, SyntaxError) as e:
            raise ValueError(f"line {line}: biased_words is not a list literal: {raw[:80]!r}") from e
    if not isinstance(value, (list, tuple)) or not all(isinstance(w, str) for w in value):
        raise ValueError(f"line {line}: biased_words must be a list of strings, got {str(raw)[:80]!r}")
    return list(value)


def _norm_text(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower())


def _uid(link: str, text: str) -> str:
    return hashlib.sha256(f"{link}\n{text}".encode()).hexdigest()[:20]


def _row(record: dict, columns: dict[str, str], line: int) -> dict:
    """One record as a corpus row (``label`` may still be ``NO_AGREEMENT`` or None)."""
    text = cell_text(record.get(columns["text"]))
    link = cell_text(record.get(columns.get("news_link")))
    label = _parse_label(record.get(columns["label"]), line)
    if not text and label is not None:
        raise ValueError(f"line {line}: empty text")
    row = {"unique_id": _uid(link, text), "text": text, "news_link": link, "label": label}
    for name in ("outlet", "topic", "type", "label_opinion"):
        row[name] = cell_text(record.get(columns.get(name)))
    row["biased_words"] = _parse_words(record.get(columns.get("biased_words")), line) if "biased_words" in columns else []
    return row


# ---------------------------------------------------------------- rules


def read_sentences(source: str | Path, columns: Mapping[str, str] | None = None,
                   source_split: str | None = None) -> tuple[list[dict], dict, list[dict]]:
    """Parse a sentence file (CSV, XLSX, Parquet, JSON) or dataset into rows (label as class id),
    counts, and what was left out or merged.

    Returns:
        ``(rows, counts, exclusions)``: ``counts`` has ``rows_read``, ``excluded_no_agreement``,
        ``excluded_no_label``, ``excluded_conflicting``, ``duplicates_merged``; every exclusion is
        ``{"unique_id", "line", "reason"}`` with reason ``no_agreement``, ``no_label``,
        ``conflicting_labels`` or ``duplicate`` (an exact repeat, merged into an earlier line).

    Raises:
        ValueError: an unreadable file, a missing text or label column, an unknown label, an
            empty text or a malformed ``biased_words`` (naming the line).
    """
    found = None
    by_uid: dict[str, list[tuple[int, dict]]] = {}
    exclusions: list[dict] = []
    rows_read = 0
    source_columns: list[str] = []
    for line, record, split in read_records(source, source_split):
        if found is None:
            found, source_columns = _columns(source, record, columns), [str(k) for k in record]
        row = _row(record, found, line)
        row["source_split"] = split
        rows_read += 1
        if row["label"] in (None, NO_AGREEMENT):
            reason = "no_label" if row["label"] is None else "no_agreement"
            exclusions.append({"unique_id": row["unique_id"], "line": line, "reason": reason})
            continue
        by_uid.setdefault(row["unique_id"], []).append((line, row))
    rows = []
    for uid, copies in by_uid.items():
        if len({r["label"] for _, r in copies}) > 1:
            lines = [line for line, _ in copies]
            exclusions += [{"unique_id": uid, "line": line, "reason": "conflicting_labels", "lines": lines} for line in lines]
            continue
        rows.append(copies[0][1])
        first = copies[0][0]
        exclusions += [{"unique_id": uid, "line": line, "reason": "duplicate", "kept_line": first} for line, _ in copies[1:]]
    exclusions.sort(key=lambda e: e["line"])
    reasons = Counter(e["reason"] for e in exclusions)
    counts = {
        "layout": recognise_layout(source, source_columns),
        "columns": source_columns,
        "official_splits": sorted({r["source_split"] for r in rows if r["source_split"]}, key=_split_order) or None,
        "rows_read": rows_read,
        "excluded_no_agreement": reasons["no_agreement"],
        "excluded_no_label": reasons["no_label"],
        "excluded_conflicting": reasons["conflicting_labels"],
        "duplicates_merged": reasons["duplicate"],
    }
    return rows, counts, exclusions


# ---------------------------------------------------------------- the source


@dataclass(slots=True)
class _Placed:
    """What the report reads of a kept sentence."""

    label: int
    outlet: str
    split: str = ""
    fold: int = -1


class SentenceSource:
    """Labelled sentences (a BABE-format file, an export of the Hub layout, a dataset folder or
    ``ORG/NAME``) as a build's source: a text-only corpus, configs ``default`` and ``fold_K``."""

    kind = "sentences"
    features = _features()
    views = corpus_views(features)

    def __init__(self, source: str | Path, columns: list[str] | None = None, source_split: str | None = None):
        self.source = source
        self.columns = parse_sentence_columns(list(columns or []))
        self.source_split = source_split
        self.name = _display(source) + (f" ({source_split})" if source_split else "")
        self._rows: list[dict] = []
        self._cells: dict[str, Cell] = {}
        self._details: dict = {}
        self._exclusions: list[dict] = []

    def plan(self, scratch: Path, pinned: Mapping[str, Cell]) -> BuildPlan:
        rows, counts, exclusions = read_sentences(self.source, self.columns, self.source_split)
        if not rows:
            raise ValueError(f"{_display(self.source)}: no labelled sentences left after leaving out {len(exclusions)} rows")
        groups = article_groups(rows)
        cells, split_report = _assign(rows, groups, pinned)
        rows.sort(key=lambda r: r["unique_id"])
        placed = _placement(rows, cells)
        self._rows, self._cells = rows, cells
        self._details = {
            **counts,
            "source_sha256": _sha256(self.source),
            "splits_from": "source" if counts["official_splits"] else "vilbias",
            "articles": len(set(groups.values())),
            "articles_straddling": straddling_groups(groups, cells),
            "rows_kept": len(rows),
            "default": {s: _share(labels) for s, labels in placed["default"].items()},
            "folds": {name: _share(placed[name]["test"]) for name in FOLDS},
        }
        planned = {r["unique_id"]: _Placed(r["label"], r["outlet"], cells[r["unique_id"]].split, cells[r["unique_id"]].fold) for r in rows}
        self._exclusions = exclusions
        logger.info(
            "%d sentences kept (%d rows left out, %d duplicates merged)",
            len(rows), len(exclusions) - counts["duplicates_merged"], counts["duplicates_merged"],
        )
        return BuildPlan(planned, asdict(split_report), exclusions, dict(Counter(e["reason"] for e in exclusions)), self._details)

    def examples(self) -> Iterator[tuple[CellKey, dict]]:
        """Cell by cell (in ``unique_id`` order within each): the sentences fit in memory, and a cell's
        rows arriving together fill whole row groups instead of a sliver of each cell per batch."""
        def cell(r: dict) -> CellKey:
            c = self._cells[r["unique_id"]]
            return c.split, c.fold

        for r in sorted(self._rows, key=cell):
            yield cell(r), {name: r[name] for name in self.features}

    def rationale_author(self, example: dict) -> str | None:
        """Sentences carry no rationale."""
        return None

    def card(self, repo: Path, infos: dict[str, DatasetInfo], names: CardNames, changelog: str,
             rationales: dict | None = None) -> str:
        known = DATASETS.get(self._details.get("layout") or "")
        card_data = DatasetCardData(license=known.license if known else "unknown")
        if known:
            card_data.source_datasets = [known.hub_id]
        card_metadata(card_data, self.views, infos, list(self.features))
        source = self.name
        labels = Counter(r["label"] for r in self._rows)
        body = _card_body(source, self._details, {name: labels[i] for i, name in enumerate(LABEL_NAMES)}, self._exclusions,
                          names.load_name, version=f"v{names.version}" if names.repo_id else None, thin=self._thin())
        return str(DatasetCard(f"---\n{card_data.to_yaml()}\n---\n\n{body}"))

    def _thin(self) -> dict[str, str]:
        """``config/split`` -> why it means little (:func:`vilbias.corpus.splits.split_size_note`)."""
        labels = {r["unique_id"]: r["label"] for r in self._rows}
        out = {}
        for name, view in self.views.items():
            for split, cells in view.splits.items():
                members = [uid for uid, c in self._cells.items() if (c.split, c.fold) in cells]
                note = split_size_note(len(members), sum(labels[uid] == BIASED for uid in members))
                if note:
                    out[f"{name}/{split}"] = note
        return out

    def close(self) -> None:
        """Nothing to release: the sentences are read in :meth:`plan`."""


def article_groups(rows: list[dict]) -> dict[str, str]:
    """``{unique_id: group}``: a sentence's article (its ``news_link``) and its normalised text are
    its keys, so every sentence of an article is one group, and articles repeating a sentence join
    (:func:`~vilbias.corpus.splits.group_keys`). A source without links groups identical texts."""
    keys = {}
    for r in rows:
        link = (r.get("news_link") or "").strip()
        text = "text:" + hashlib.sha1(_norm_text(r["text"]).encode()).hexdigest()
        keys[r["unique_id"]] = [text] + ([f"link:{link}"] if link else [])
    return group_keys(keys)


def _assign(rows: list[dict], groups: Mapping[str, str], pinned: Mapping[str, Cell] | None = None):
    """Cells by the corpus's one split policy (:func:`~vilbias.corpus.splits.assign_splits`), each
    group as one story: groups are visited in the order of a hash of their name (each group's rows
    together, no outlet's URLs in a block) and a source's own splits bound where its rows go."""
    items = [
        SplitItem(
            unique_id=r["unique_id"],
            label=r["label"],
            order=hashlib.sha1(groups[r["unique_id"]].encode()).hexdigest(),
            story_keys=(groups[r["unique_id"]],),
            allowed_splits=OFFICIAL_SPLITS.get(r.get("source_split") or "", ()),
        )
        for r in rows
    ]
    return assign_splits(items, pinned=dict(pinned or {}))


def sentence_splits(rows: list[dict]) -> dict[str, dict[str, list[str]]]:
    """``{config: {split: [unique_id, ...]}}`` of a fresh sentence corpus of ``rows`` (as
    :func:`read_sentences` gives them), computed as ``vilbias build --sentences`` computes them:
    ``default`` (train/validation/test) and ``fold_0`` … ``fold_4``, whose test split is the fold
    and whose validation split (early stopping, calibration) is the ``validation`` split's rows
    outside the fold. A built corpus's own splits are :func:`corpus_splits`."""
    cells, _ = _assign(rows, article_groups(rows))
    return splits_of_cells(cells)


def splits_of_cells(cells: Mapping[str, Cell]) -> dict[str, dict[str, list[str]]]:
    """The configs' membership of a corpus whose rows sit in ``cells`` (see :func:`sentence_splits`)."""
    uids = sorted(cells)
    out = {"default": {s: [u for u in uids if cells[u].split == s] for s in SPLITS}}
    for k in range(N_FOLDS):
        out[FOLDS[k]] = {"train": [u for u in uids if cells[u].fold != k and cells[u].split != "validation"],
                         "validation": [u for u in uids if cells[u].fold != k and cells[u].split == "validation"],
                         "test": [u for u in uids if cells[u].fold == k]}
    return out


def corpus_splits(corpus: str | Path) -> dict[str, dict[str, list[str]]]:
    """The splits of a built sentence corpus (a folder), read from where its rows are stored
    (:func:`vilbias.corpus.release.read_cells`), never drawn again: what training, calibration and
    ``vilbias evaluate`` all use."""
    return splits_of_cells(read_cells(corpus))


def _sha256(source: str | Path) -> str | None:
    path = Path(str(source))
    if not path.is_file():
        return None
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _placement(rows: list[dict], cells: dict) -> dict[str, dict[str, list[int]]]:
    """config -> split -> the labels of its rows."""
    placed: dict[str, dict[str, list[int]]] = {"default": {s: [] for s in SPLITS}}
    placed.update({name: {"train": [], "test": []} for name in FOLDS})
    for r in rows:
        cell = cells[r["unique_id"]]
        placed["default"][cell.split].append(r["label"])
        for k in range(N_FOLDS):
            placed[FOLDS[k]]["test" if cell.fold == k else "train"].append(r["label"])
    return placed


def _share(labels: list[int]) -> dict:
    n = len(labels)
    return {"rows": n, "biased_share": round(sum(labels) / n, 4) if n else None}


REASON_TEXT = {
    "no_agreement": "`No agreement` (left out)",
    "no_label": "no label (left out)",
    "conflicting_labels": "the same sentence and link with different labels (every copy left out)",
    "duplicate": "exact repeat of an earlier line (merged into it)",
}


@dataclass(frozen=True)
class SentenceDataset:
    """A published sentence dataset vilbias recognises, and what its publishers state about it."""

    name: str
    hub_id: str
    license: str
    """The Hub's ``license:`` id for a corpus built from it (``unknown`` where the publishers state none)."""
    terms: str
    """What the publishers state for the data, and where (one text for every card and doc)."""
    citation: str


BABE_TERMS = (
    "BABE's publishers (the Media Bias Group) state no licence for its data: the Hub card of "
    "`mediabiasgroup/BABE` (huggingface.co/datasets/mediabiasgroup/BABE) declares none, and the README of the repository "
    "that publishes the CSV files (github.com/Media-Bias-Group/Neural-Media-Bias-Detection-Using-Distant-Supervision-With-BABE) "
    "gives no terms for them. The group's MBIB, which redistributes BABE, states CC BY-NC-ND 4.0 on its Hub card "
    "(huggingface.co/datasets/mediabiasgroup/mbib-base). The sentences remain their outlets' text. Until the publishers "
    "state terms, use BABE for non-commercial research and cite the BABE paper."
)
"""BABE's terms as its publishers state them (checked 2026-11): the model card, the sentence corpus's
card and ``docs/classifiers.md`` all say this (a test keeps them equal)."""

BABE_CITATION = """@inproceedings{spinde2021babe,
  title     = {Neural Media Bias Detection Using Distant Supervision With {BABE} -- Bias Annotations By Experts},
  author    = {Spinde, Timo and Plank, Manuel and Krieger, Jan-David and Ruas, Terry and Gipp, Bela and Aizawa, Akiko},
  booktitle = {Findings of the Association for Computational Linguistics: EMNLP 2021},
  year      = {2021},
  pages     = {1166--1177},
  doi       = {10.18653/v1/2021.findings-emnlp.101}
}"""

MBIB_TERMS = (
    "MBIB's publishers (the Media Bias Group) state CC BY-NC-ND 4.0 on its Hub card "
    "(huggingface.co/datasets/mediabiasgroup/mbib-base): attribution, non-commercial, no derivatives. Each task "
    "aggregates earlier datasets whose own terms also apply."
)

MBIB_CITATION = """@inproceedings{wessel2023mbib,
  title     = {Introducing {MBIB} -- the First Media Bias Identification Benchmark Task and Dataset Collection},
  author    = {Wessel, Martin and Horych, Tom{\'a}{\v{s}} and Ruas, Terry and Aizawa, Akiko and Gipp, Bela and Spinde, Timo},
  booktitle = {Proceedings of the 46th International ACM SIGIR Conference on Research and Development in Information Retrieval},
  year      = {2023},
  doi       = {10.1145/3539618.3591882}
}"""

DATASETS = {
    "babe": SentenceDataset("BABE (Spinde et al., 2021)", "mediabiasgroup/BABE", "unknown", BABE_TERMS, BABE_CITATION),
    "mbib": SentenceDataset("MBIB (Wessel et al., 2023)", "mediabiasgroup/mbib-base", "cc-by-nc-nd-4.0", MBIB_TERMS, MBIB_CITATION),
}
KNOWN_SOURCES = {d.hub_id.lower(): key for key, d in DATASETS.items()}
"""Hub ids whose data is known by name: ``mediabiasgroup/babe`` -> ``babe``."""

OWN_DATA_TERMS = ("These sentences are not a dataset vilbias recognises: their terms are their owner's, and this card "
                  "credits nobody for them.")


def _card_body(source: str, report: dict, label_counts: dict[str, int], exclusions: list[dict], load_name: str,
               version: str | None = None, thin: dict[str, str] | None = None) -> str:
    known = DATASETS.get(report.get("layout") or "")
    lines = [
        "# Sentence-level media bias corpus",
        "",
        f"Built by `vilbias build --sentences {source}`"
        + (f" (sha256 `{report['source_sha256'][:12]}`)" if report.get("source_sha256") else "")
        + (f" from {known.name}." if known else " from labelled sentences of one's own (not a dataset vilbias recognises)."),
        "Text only: one sentence per row with its label (and the source's biased words where it has them); no images, "
        "no rationales, so no `sft` config. Labels are the source's own annotation, as published.",
        "",
    ]
    # the rows read, each accounted for: kept, or left out / merged for a stated reason
    by_reason: dict[str, list[int]] = {}
    for e in exclusions:
        by_reason.setdefault(e["reason"], []).append(e["line"])
    parts = [f"{len(at)} {REASON_TEXT[reason]}" for reason, at in by_reason.items()]
    lines.append(f"{report['rows_read']:,} rows read" + (f" − {' − '.join(parts)}" if parts else "")
                 + f" = **{report['rows_kept']:,} sentences** ({label_counts[BIASED_NAME]:,} {ANSWER_LABELS[BIASED]}, "
                 f"{label_counts[NOT_BIASED_NAME]:,} {ANSWER_LABELS[1 - BIASED]}).")
    lines.append("")
    for reason, at in by_reason.items():
        lines.append(f"- {REASON_TEXT[reason]}: line{'s' if len(at) != 1 else ''} {', '.join(map(str, at))}.")
    lines += ["", "## Splits", ""]
    if report.get("splits_from") == "source":
        lines.append(f"The test split is the source's own ({', '.join(report['official_splits'])} as published"
                     + (f" in `{known.hub_id}`" if known else "") + "): results on it compare with results reported on "
                     "that split. Validation is drawn from the source's train rows by vilbias's policy.")
    else:
        lines.append("The source ships no splits of its own: train/validation/test (80/10/10) and the five folds follow "
                     "vilbias's policy (label-stratified, deterministic from the data, a row's cell never moves once published).")
    lines.append(f"Whole articles stay together: the {report['articles']:,} groups (sentences sharing an article link, and "
                 "articles sharing a sentence) each sit in one split and one fold, as `vilbias train sentence` and "
                 "`vilbias evaluate` read them.")
    straddle = report.get("articles_straddling") or {}
    if straddle.get("splits") or straddle.get("folds"):
        lines.append(f"**{straddle['splits']} articles straddle two splits and {straddle['folds']} two folds**: rows keep the "
                     "cells of the earlier build they first appeared in, and that build split articles. A model trained on "
                     "`train` has read parts of those test articles. To start a clean release, build into a new folder "
                     "(`--output NEW`), where every article is placed whole.")
    lines += ["", "| config | split | rows | biased share |", "|---|---|---|---|"]

    def share(s: dict) -> str:
        return "—" if s["biased_share"] is None else f"{s['biased_share']}"

    for split, s in report["default"].items():
        lines.append(f"| default | {split} | {s['rows']} | {share(s)} |")
    for fold, s in report["folds"].items():
        lines.append(f"| {fold} | test | {s['rows']} | {share(s)} |")
    if thin:
        lines += ["", f"Splits too small to mean anything (empty ones are left out of their config, which loads without them; "
                      f"under {MEANINGFUL_ROWS} rows or one label, figures mean little): "
                      + ", ".join(f"`{name}` ({note})" for name, note in thin.items()) + "."]
    lines += [
        "",
        "BABE's protocol (stratified 5-fold, macro-F1): "
        f"`vilbias train classifier --dataset {load_name} --recipe babe --cv`; the sentence model: "
        f"`vilbias train sentence --dataset {load_name}`.",
        "",
        "## Loading",
        "",
        loading_block(load_name, sft=False, version=version),
        "",
        "## License",
        "",
        (known.terms if known else OWN_DATA_TERMS) + " The code that builds the corpus is Apache-2.0.",
        "",
    ]
    if known:
        lines += ["## Citation", "", "```bibtex", known.citation, "```", ""]
    return "\n".join(lines)
