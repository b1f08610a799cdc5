"""A review sheet read back as a spreadsheet program saved it.

Reviewers open the exported CSV in Excel, LibreOffice or Google Sheets and save it again; what
comes back depends on the program and the locale it runs in:

- Excel: "CSV UTF-8" is UTF-8 with a byte order mark; "CSV (Comma delimited)" is the Windows code
  page (cp1252 in Western Europe, Mac Roman on a Mac) with ``;`` between columns wherever the
  decimal mark is a comma; "Unicode Text" is UTF-16 with a BOM and tabs; and its own workbook, ``.xlsx``;
- LibreOffice: the encoding and separator chosen in its dialog (by default UTF-8, with ``,`` or ``;``);
- Google Sheets: UTF-8 and ``,``.

:func:`read_sheet` reads each of them: a BOM decides the encoding, else UTF-8 when the bytes are
UTF-8, else the encoding `charset-normalizer <https://github.com/jawah/charset_normalizer>`_ reads
them as; the delimiter is the one of ``,`` ``;`` tab ``|`` that splits the first line into the
sheet's column names (an Excel ``sep=;`` first line is followed); a workbook (its content, whatever
its name) is read with openpyxl. What cannot be read is refused with its cause in one line naming
the file (:class:`UnreadableSheet`).
"""

from __future__ import annotations

import codecs
import csv
import io
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

DELIMITERS = {",": "','", ";": "';'", "\t": "tabs", "|": "'|'"}
"""What a sheet's columns may be separated by, and how a message names each."""
_BOMS = (  # the UTF-32 marks first: UTF-32 LE's starts with UTF-16 LE's
    (codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"),
)
SPREADSHEET_CODE_PAGES = ("cp1252", "mac_roman")
"""What Excel writes "CSV" in on Windows in Western Europe and the Americas, and on a Mac: preferred
when a sheet reads equally well in another code page."""
_ZIP, _OLE2 = b"PK\x03\x04", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_SAVE_AS = "save it as CSV (UTF-8) or as an Excel workbook (.xlsx)"


class UnreadableSheet(ValueError):
    """A file that cannot be read as a review sheet; the message names the file and the cause."""


@dataclass
class Sheet:
    """A sheet's rows as its program saved them."""

    path: Path
    columns: list[str]
    rows: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    """``(line, row)``: the line (row number in a workbook) where the row starts, and its cells by column."""
    encoding: str = "utf-8"
    """The text encoding it was read as (``xlsx`` for a workbook)."""
    delimiter: str | None = ","

    @property
    def read_as(self) -> str:
        """How the file was read, in words, when it is not the exported form (UTF-8 and commas): ""
        otherwise."""
        if self.encoding == "xlsx":
            return "an Excel workbook"
        parts = [] if self.encoding in ("utf-8", "ascii") else [self.encoding]
        if self.delimiter != ",":
            parts.append(f"{DELIMITERS[self.delimiter]} between columns")
        return ", ".join(parts)


def read_sheet(path: str | Path, required: Iterable[str]) -> Sheet:
    """Read the sheet at ``path`` (see the module docstring); its first row must name the
    ``required`` columns.

    Raises:
        UnreadableSheet: the file is missing or empty, a format other than CSV/TSV text or ``.xlsx``,
            text in no encoding that can be told, or its first row lacks required columns.
    """
    path, required = Path(path), list(required)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UnreadableSheet(f"{path}: file not found") from None
    except OSError as e:
        raise UnreadableSheet(f"{path}: cannot be read ({e.strerror or e})") from None
    if not data.strip():
        raise UnreadableSheet(f"{path}: the file is empty")
    if data.startswith(_ZIP):
        if b"opendocument" in data[:100]:
            raise UnreadableSheet(f"{path}: an OpenDocument spreadsheet (.ods): {_SAVE_AS}")
        return _read_workbook(path, required)
    if data.startswith(_OLE2):
        raise UnreadableSheet(f"{path}: an Excel 97-2003 workbook (.xls): {_SAVE_AS}")
    text, encoding = _decode(path, data)
    return _read_text(path, text, encoding, required)


def _decode(path: Path, data: bytes) -> tuple[str, str]:
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(encoding), encoding.removesuffix("-sig")
            except UnicodeDecodeError as e:
                raise UnreadableSheet(f"{path}: it starts with the byte order mark of {encoding.removesuffix('-sig').upper()} "
                                      f"but is not {encoding.removesuffix('-sig').upper()} text (byte {e.start}): {_SAVE_AS}") from None
    if b"\x00" not in data:  # UTF-16 without a mark has NUL bytes; UTF-8 text has none
        try:
            return data.decode("utf-8"), "utf-8"
        except UnicodeDecodeError:
            pass
    from charset_normalizer import from_bytes

    matches = list(from_bytes(data))
    if not matches:
        raise UnreadableSheet(f"{path}: not text in an encoding that can be told (is it a spreadsheet saved as CSV?): {_SAVE_AS}")
    # A short sheet reads equally well in several code pages (cp1250 and cp1252 differ in a few
    # letters): among the best readings, the code page spreadsheet programs write wins.
    best = matches[0]
    tied = [m for m in matches if (m.chaos, m.coherence) == (best.chaos, best.coherence)]
    for name in SPREADSHEET_CODE_PAGES:
        for m in tied:
            if name in (m.encoding, *m.could_be_from_charset):
                return str(m), name.replace("_", "-")
    return str(best), best.encoding.replace("_", "-")


def _header(line: str, delimiter: str) -> list[str]:
    return [c.strip().lstrip("\ufeff") for c in next(csv.reader([line], delimiter=delimiter), [])]


def _read_text(path: Path, text: str, encoding: str, required: list[str]) -> Sheet:
    lines = text.splitlines()
    first = lines[0] if lines else ""
    sep = re.fullmatch(r'"?sep=(.)"?,*', first.strip())  # Excel's hint line: "sep=;"
    if sep is not None and sep.group(1) in DELIMITERS:
        delimiter, skip = sep.group(1), 1
        found = _header(lines[1] if len(lines) > 1 else "", delimiter)
    else:
        skip = 0
        found, delimiter = max(((_header(first, d), d) for d in DELIMITERS), key=lambda hd: len(set(hd[0]) & set(required)))
    missing = [c for c in required if c not in found]
    if len(missing) == len(required):
        raise UnreadableSheet(f"{path}: not a review sheet: its first line names none of the columns {', '.join(required)} "
                              f"(read as {encoding}, with ',', ';', tabs or '|' between columns)")
    if missing:
        how = f" (read as {encoding}, {DELIMITERS[delimiter]} between columns)"
        raise UnreadableSheet(f"{path}: missing columns {missing}{how}")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    sheet = Sheet(path, found, encoding=encoding, delimiter=delimiter)
    for n, cells in enumerate(reader):
        if n < skip + 1:
            continue
        if not any(c.strip() for c in cells):
            continue  # a blank line (spreadsheets keep empty rows at the end)
        start = reader.line_num - sum(c.count("\n") for c in cells)  # where a row with line breaks in a cell starts
        sheet.rows.append((start, dict(zip(found, cells, strict=False))))
    return sheet


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _read_workbook(path: Path, required: list[str]) -> Sheet:
    import openpyxl

    try:
        workbook = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as e:  # openpyxl raises several unrelated types for a file it cannot read
        raise UnreadableSheet(f"{path}: a zip file that is not an Excel workbook openpyxl can read ({type(e).__name__}): "
                              f"{_SAVE_AS}") from None
    try:
        rows = workbook.worksheets[0].iter_rows(values_only=True)
        found = [_cell(c).strip() for c in next(rows, ())]
        missing = [c for c in required if c not in found]
        if missing:
            raise UnreadableSheet(f"{path}: missing columns {missing} in the first row of its first worksheet")
        sheet = Sheet(path, found, encoding="xlsx", delimiter=None)
        for n, values in enumerate(rows, 2):
            cells = [_cell(v) for v in values]
            if any(c.strip() for c in cells):
                sheet.rows.append((n, dict(zip(found, cells, strict=False))))
        return sheet
    finally:
        workbook.close()


__all__ = ["Sheet", "UnreadableSheet", "read_sheet"]
