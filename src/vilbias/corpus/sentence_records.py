"""Reading labelled sentences: one reader for BABE's CSV and XLSX, its Hub layouts, MBIB's tasks and
any table of text and label columns (``--column FIELD=COLUMN``), into corpus rows with the rules
of :func:`read_sentences` (what is left out or merged, and why). The formats are described in
:mod:`vilbias.corpus.sentences`, which builds a corpus from these rows."""

from __future__ import annotations

import ast
import hashlib
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path

from datasets import get_dataset_split_names, load_dataset

from vilbias.corpus.sentence_datasets import recognise_layout
from vilbias.corpus.tables import (
    cell_text,
    csv_records,
    parquet_records,
    table_records,
    xlsx_records,
)
from vilbias.task import read_label

BABE_COLUMNS = ("text", "news_link", "outlet", "topic", "type", "label_bias", "label_opinion", "biased_words")
"""The header of BABE's published CSV."""


OPTIONAL_COLUMNS = ("news_link", "outlet", "topic", "type", "label_opinion")


ALIASES = {"text": ("text", "sentence"), "label": ("label_bias", "label")}
"""Where each field may be found, in order of preference (names compared lower-cased)."""


NO_AGREEMENT = "No agreement"


HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+$")


TABLE_SUFFIXES = {".parquet", ".json", ".jsonl"}


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
    names = sorted(get_dataset_split_names(name), key=_split_order)
    if source_split is not None:
        if source_split not in names:
            raise ValueError(f"{name} has no split {source_split!r}; its splits: {', '.join(names)}")
        chosen, official = [source_split], False
    elif set(names) <= set(OFFICIAL_SPLITS):
        chosen, official = names, names != ["train"]  # a lone train split is no split of the source's
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
            raise ValueError(f"--column {name}={column}: {source_name(source)} has no column {column!r} (found {list(record)})")
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
                f"{source_name(source)}: no {' or '.join(ALIASES[name])} column (found {list(record)}); BABE's header is "
                f"{';'.join(BABE_COLUMNS)}, and --column {name}=COLUMN names another"
            )
    return found


def source_name(source: str | Path) -> str:
    """How artifacts name a source: a local file or folder by its name (never a path of the
    machine that built it), a Hub dataset by its id."""
    path = Path(str(source))
    return path.name if path.exists() else str(source)


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


def normalised_text(text: str) -> str:
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


REASON_TEXT = {
    "no_agreement": "`No agreement` (left out)",
    "no_label": "no label (left out)",
    "conflicting_labels": "the same sentence and link with different labels (every copy left out)",
    "duplicate": "exact repeat of an earlier line (merged into it)",
}
