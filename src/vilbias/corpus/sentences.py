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
from vilbias.corpus.splits import MEANINGFUL_ROWS, Cell, SplitItem, assign_splits, split_size_note
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


def _dataset_records(name: str) -> Iterator[tuple[int, dict]]:
    splits = load_dataset(name)
    number = 0
    for split in sorted(splits, key=lambda s: (list(SPLITS) + [s]).index(s)):
        for record in splits[split]:
            number += 1
            yield number, record


def read_records(source: str | Path) -> Iterator[tuple[int, dict]]:
    """``(line, record)`` for every non-empty record of a sentence file, folder or Hub dataset.

    Raises:
        FileNotFoundError: ``source`` is neither a file, a folder nor an ``ORG/NAME`` id.
        ValueError: the file cannot be read (names the line where that applies).
    """
    path = Path(source)
    if path.is_file():
        suffix = path.suffix.lower()
        if suffix == ".xlsx":
            return xlsx_records(path)
        if suffix in TABLE_SUFFIXES:
            return _table_records(path)
        return csv_records(path)
    if path.is_dir() or HUB_ID.match(str(source)):
        return _dataset_records(str(source))
    raise FileNotFoundError(f"sentence source {source} is neither a file, a dataset folder nor a Hub id ORG/NAME")


# ---------------------------------------------------------------- one record -> one row


def _columns(source: str | Path, record: dict) -> dict[str, str]:
    """field -> the record's column holding it; fails when text or label has none."""
    lower = {str(k).strip().lower(): k for k in record}
    found = {}
    for name in (*ALIASES, *OPTIONAL_COLUMNS, "biased_words"):
        for alias in ALIASES.get(name, (name,)):
            if alias in lower:
                found[name] = lower[alias]
                break
    for name in ALIASES:
        if name not in found:
            raise ValueError(
                f"{source}: no {' or '.join(ALIASES[name])} column (found {list(record)}); BABE's header is "
                f"{';'.join(BABE_COLUMNS)}"
            )
    return found


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


def read_sentences(source: str | Path) -> tuple[list[dict], dict, list[dict]]:
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
    columns = None
    by_uid: dict[str, list[tuple[int, dict]]] = {}
    exclusions: list[dict] = []
    rows_read = 0
    for line, record in read_records(source):
        columns = columns or _columns(source, record)
        row = _row(record, columns, line)
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

    def __init__(self, source: str | Path):
        self.source = source
        self.name = str(source)
        self._rows: list[dict] = []
        self._cells: dict[str, Cell] = {}
        self._details: dict = {}
        self._exclusions: list[dict] = []

    def plan(self, scratch: Path, pinned: Mapping[str, Cell]) -> BuildPlan:
        rows, counts, exclusions = read_sentences(self.source)
        if not rows:
            raise ValueError(f"{self.source}: no labelled sentences left after leaving out {len(exclusions)} rows")
        cells, split_report = _assign(rows, pinned)
        rows.sort(key=lambda r: r["unique_id"])
        placed = _placement(rows, cells)
        self._rows, self._cells = rows, cells
        self._details = {
            **counts,
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
        card_data = DatasetCardData(license=BABE_LICENSE)
        card_metadata(card_data, self.views, infos, list(self.features))
        source = Path(str(self.source)).name if Path(str(self.source)).exists() else str(self.source)
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


def _assign(rows: list[dict], pinned: Mapping[str, Cell] | None = None):
    items = [
        SplitItem(
            unique_id=r["unique_id"],
            label=r["label"],
            order=r["unique_id"],
            story_keys=("text:" + hashlib.sha1(_norm_text(r["text"]).encode()).hexdigest(),),
        )
        for r in rows
    ]
    return assign_splits(items, pinned=dict(pinned or {}))


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


BABE_LICENSE = "cc-by-nc-sa-4.0"
"""BABE's licence (its Hub card and paper): the card's ``license:`` for a sentence corpus."""
BABE_LICENSE_NAME = "CC BY-NC-SA 4.0"
BABE_CITATION = """@inproceedings{spinde2021babe,
  title     = {Neural Media Bias Detection Using Distant Supervision With {BABE} -- Bias Annotations By Experts},
  author    = {Spinde, Timo and Plank, Manuel and Krieger, Jan-David and Ruas, Terry and Gipp, Bela and Aizawa, Akiko},
  booktitle = {Findings of the Association for Computational Linguistics: EMNLP 2021},
  year      = {2021}
}"""


def _card_body(source: str, report: dict, label_counts: dict[str, int], exclusions: list[dict], load_name: str,
               version: str | None = None, thin: dict[str, str] | None = None) -> str:
    lines = [
        "# Sentence-level media bias corpus",
        "",
        f"Built by `vilbias build --sentences {source}` from labelled sentences in BABE's format.",
        "Text only: one sentence per row with its label (and the source's biased words); no images, no rationales, "
        "so no `sft` config. Labels are the source's own annotation, as published.",
        "",
        f"{report['rows_kept']} sentences kept of {report['rows_read']} rows read ({label_counts[BIASED_NAME]} {ANSWER_LABELS[BIASED]}, "
        f"{label_counts[NOT_BIASED_NAME]} {ANSWER_LABELS[1 - BIASED]}).",
        "",
    ]
    by_reason: dict[str, list[int]] = {}
    for e in exclusions:
        by_reason.setdefault(e["reason"], []).append(e["line"])
    for reason, at in by_reason.items():
        lines.append(f"- {len(at)} rows: {REASON_TEXT[reason]}; lines {', '.join(map(str, at))}.")
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
        "Folds are stratified by label and deterministic from the data; identical sentences never "
        "sit in two folds. BABE's protocol (stratified 5-fold, macro-F1): "
        f"`vilbias train classifier --dataset {load_name} --recipe babe --cv`.",
        "",
        "## Loading",
        "",
        loading_block(load_name, sft=False, version=version),
        "",
        "## License",
        "",
        f"BABE (Spinde et al., 2021) is released under **{BABE_LICENSE_NAME}** (attribution, non-commercial, share-alike): "
        "a corpus built from it keeps those terms, stated in this card's `license:`. Sentences from another source in "
        "BABE's format keep that source's terms instead. The code that builds the corpus is Apache-2.0.",
        "",
        "## Citation",
        "",
        "```bibtex",
        BABE_CITATION,
        "```",
        "",
    ]
    return "\n".join(lines)
