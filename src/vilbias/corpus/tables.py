"""Read tables of records — CSV, XLSX, Parquet, JSON Lines, JSON — one record at a time.

Both importers read through here: the sentence corpus (:mod:`vilbias.corpus.sentences`) and the
import of a published release (:mod:`vilbias.corpus.source`). Every reader yields
``(line, record)``: ``line`` is the record's first line in a CSV, its sheet row in an XLSX and
its 1-based record number in Parquet and JSON files, so an error can name where it is.

Memory stays flat in file size for CSV, XLSX (``openpyxl``'s read-only mode), JSON Lines and
Parquet (read in record batches: a release with embedded images is never loaded whole). A
``.json`` file holding one array or one object of columns is parsed whole; that is its format.
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

TABLE_SUFFIXES = (".parquet", ".csv", ".tsv", ".jsonl", ".json", ".xlsx")

# A CSV export of a news corpus holds whole articles in one field; csv's default limit (128 KiB)
# would refuse a long one.
csv.field_size_limit(min(sys.maxsize, 2**31 - 1))


def cell_text(value: Any) -> str:
    """A table cell as stripped text: None and NaN are empty, and a float that is a whole number
    is written without ``.0`` (spreadsheets and pandas turn ``1`` into ``1.0``)."""
    if value is None or (isinstance(value, float) and value != value):
        return ""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip()


def decode_text(data: bytes, source: Path, first_line: int = 1) -> str:
    """UTF-8 (with or without a byte-order mark) or one line naming where it is not."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = first_line + data[: e.start].count(b"\n")
        raise ValueError(f"{source}: line {line}: not UTF-8 text ({e.reason} at byte {e.start}); save the file as UTF-8") from None


def _text_lines(source: Path) -> Iterator[str]:
    """The file's lines, decoded one at a time (a decoding error names its line)."""
    with open(source, "rb") as f:
        for number, raw in enumerate(f, start=1):
            text = decode_text(raw, source, number)
            yield text if number > 1 else text.lstrip("\ufeff")


def csv_records(source: Path) -> Iterator[tuple[int, dict]]:
    """A CSV (or TSV) file, its delimiter taken from the header line (``;``, ``,`` or tab)."""
    lines = _text_lines(source)
    try:
        header = next(lines)
    except StopIteration:
        raise ValueError(f"{source}: line 1: the file is empty (expected a header row)") from None
    delimiter = max(";,\t", key=header.count)

    def all_lines() -> Iterator[str]:
        yield header
        yield from lines

    reader = csv.reader(all_lines(), delimiter=delimiter)
    columns = next(reader)
    start = reader.line_num + 1
    for values in reader:
        if any(v.strip() for v in values):
            yield start, dict(zip(columns, values, strict=False))
        start = reader.line_num + 1


def xlsx_records(source: Path) -> Iterator[tuple[int, dict]]:
    """The first sheet of a workbook; the header is its first non-empty row."""
    try:
        import openpyxl  # optional: only .xlsx files need it
    except ModuleNotFoundError as e:
        raise ModuleNotFoundError(f"{source}: reading .xlsx needs openpyxl (pip install openpyxl)") from e
    try:
        book = openpyxl.load_workbook(source, read_only=True, data_only=True)
    except Exception as e:  # openpyxl raises several unrelated types for a file that is not a workbook
        raise ValueError(f"{source}: not a readable .xlsx workbook ({e})") from None
    try:
        columns = None
        for number, values in enumerate(book.worksheets[0].iter_rows(values_only=True), start=1):
            if not any(v is not None and str(v).strip() for v in values):
                continue
            if columns is None:
                columns = ["" if v is None else str(v) for v in values]
                continue
            yield number, dict(zip(columns, values, strict=False))
    finally:
        book.close()


def parquet_records(source: Path, batch_size: int = 64) -> Iterator[tuple[int, dict]]:
    """A Parquet file in record batches (``batch_size`` rows in memory at a time)."""
    try:
        # pre_buffer would read ahead across the file's row groups (a whole shard of embedded
        # images, ~1 GB, in memory at once); without it one row group is read at a time.
        file = pq.ParquetFile(source, pre_buffer=False)
    except Exception as e:  # pyarrow's errors for a file that is not Parquet vary by version
        raise ValueError(f"{source}: not a readable Parquet file ({e})") from None
    number = 0
    with file:
        for batch in file.iter_batches(batch_size=batch_size):
            for record in batch.to_pylist():
                number += 1
                yield number, record


def jsonl_records(source: Path) -> Iterator[tuple[int, dict]]:
    number = 0
    for line_number, line in enumerate(_text_lines(source), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{source}: line {line_number}: not a JSON object ({e.msg})") from None
        number += 1
        yield number, record


def json_records(source: Path) -> Iterator[tuple[int, dict]]:
    """A JSON array of objects, or one object of equal-length columns."""
    data = json.loads(decode_text(source.read_bytes(), source))
    records = data if isinstance(data, list) else [dict(zip(data, row, strict=True)) for row in zip(*data.values(), strict=True)]
    yield from enumerate(records, start=1)


def table_records(source: Path, batch_size: int = 64) -> Iterator[tuple[int, dict]]:
    """``(line, record)`` of one table file, by its suffix (anything unknown is read as CSV)."""
    suffix = source.suffix.lower()
    if suffix == ".parquet":
        return parquet_records(source, batch_size)
    if suffix == ".xlsx":
        return xlsx_records(source)
    if suffix == ".jsonl":
        return jsonl_records(source)
    if suffix == ".json":
        return json_records(source)
    return csv_records(source)


def table_columns(source: Path) -> list[str]:
    """The column names of a table file, reading no more than its header (or first record)."""
    if source.suffix.lower() == ".parquet":
        try:
            return pq.read_schema(source).names
        except Exception as e:
            raise ValueError(f"{source}: not a readable Parquet file ({e})") from None
    if source.suffix.lower() == ".xlsx":
        import openpyxl

        try:
            book = openpyxl.load_workbook(source, read_only=True, data_only=True)
        except Exception as e:
            raise ValueError(f"{source}: not a readable .xlsx workbook ({e})") from None
        try:
            for values in book.worksheets[0].iter_rows(values_only=True):
                if any(v is not None and str(v).strip() for v in values):
                    return ["" if v is None else str(v) for v in values]
            return []
        finally:
            book.close()
    if source.suffix.lower() in (".jsonl", ".json"):
        for _, record in table_records(source):
            return list(record)
        return []
    lines = _text_lines(source)
    header = next(lines, "")
    return next(csv.reader([header], delimiter=max(";,\t", key=header.count)), [])
