"""`review import` reads a sheet as the reviewer's spreadsheet program saved it (issue #48).

An exported sheet is filled in (verdicts, a corrected label, comments with umlauts, curly quotes, a
euro sign and a line break in a cell) and saved the way each program writes CSV, byte for byte:
Excel in a German locale ("CSV (Trennzeichen-getrennt)": cp1252, ``;``, CRLF), Excel's "CSV UTF-8"
(a BOM), Excel's "Unicode Text" (UTF-16 with a BOM, tabs), Excel for Mac (Mac Roman), LibreOffice
(UTF-8, ``;``), Google Sheets (UTF-8, ``,``, CRLF), a ``sep=;`` first line, and an .xlsx workbook.
Each imports the same verdicts as the sheet saved by vilbias itself. Each file is judged on its
own: a good sheet imports beside a bad one, and what was imported is said per file.
"""

from __future__ import annotations

import csv
import io
import json
import zipfile

import pytest

from vilbias.cli import main
from vilbias.review import ExportConfig, ImportConfig, export_sheets, import_verdicts
from vilbias.review.sheets import SheetsRefused
from vilbias.review.spreadsheets import UnreadableSheet, read_sheet

EDITS = {
    "item-0": {"verdict": "Acceptable", "comment": "Überschrift zu reißerisch – „Chaos“ übertreibt; l’article dit « non » (5 €)"},
    "item-1": {"verdict": "Needs Improvement", "corrected_rationale": "The caption’s words “surge” and “flood” frame it.\nSecond line.",
               "comment": "naïve café"},
    "item-2": {"verdict": "Incorrect", "corrected_label": "biased", "corrected_rationale": "Loaded framing: “regime”."},
    "item-6": {"verdict": "Acceptable", "corrected_label": "not biased"},
}


def rows_of(annotated, tmp_path, reviewer="reviewer_1") -> tuple[list[str], list[dict]]:
    export_sheets(ExportConfig(workdir=annotated, output=tmp_path / "s", reviewers=1, reviewer_names=[reviewer]))
    with open(tmp_path / "s" / f"sheet_{reviewer}.csv", newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        rows = [{**r, **EDITS.get(r["unique_id"], {})} for r in reader]
        return list(reader.fieldnames), rows


def csv_bytes(columns, rows, *, delimiter=",", encoding="utf-8", newline="\r\n", bom=b"", first_line="") -> bytes:
    buf = io.StringIO()
    # a cell with a line break is quoted whatever the program's line ends (csv quotes only its own)
    writer = csv.writer(buf, delimiter=delimiter, lineterminator=newline, quoting=csv.QUOTE_MINIMAL if "\n" in newline else csv.QUOTE_ALL)
    writer.writerow(columns)
    writer.writerows([r[c] for c in columns] for r in rows)
    return bom + (first_line + buf.getvalue()).encode(encoding)


def xlsx_bytes(columns, rows) -> bytes:
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.append(columns)
    for r in rows:
        sheet.append([float(r[c]) if c == "agreement" and r[c] else r[c] for c in columns])  # Excel keeps numbers as numbers
    buf = io.BytesIO()
    workbook.save(buf)
    return buf.getvalue()


SAVED_BY = {
    # name: (how the program writes the sheet, what the import says it read)
    "excel-de": (lambda c, r: csv_bytes(c, [{**x, "comment": x["comment"].replace("«", '"').replace("»", '"')} for x in r],
                                        delimiter=";", encoding="cp1252"), "cp1252, ';' between columns"),
    "excel-csv-utf8": (lambda c, r: csv_bytes(c, r, bom=b"\xef\xbb\xbf"), ""),
    "excel-unicode-text": (lambda c, r: csv_bytes(c, r, delimiter="\t", encoding="utf-16-le", bom=b"\xff\xfe"), "utf-16, tabs between columns"),
    "excel-mac": (lambda c, r: csv_bytes(c, [{**x, "comment": x["comment"].replace("€", "EUR").replace("„", '"')} for x in r],
                                         encoding="mac_roman", newline="\r"), "mac-roman"),
    "libreoffice-de": (lambda c, r: csv_bytes(c, r, delimiter=";", newline="\n"), "';' between columns"),
    "google-sheets": (lambda c, r: csv_bytes(c, r), ""),
    "excel-sep-line": (lambda c, r: csv_bytes(c, r, delimiter=";", bom=b"\xef\xbb\xbf", first_line="sep=;\r\n"), "';' between columns"),
    "excel-workbook": (xlsx_bytes, "an Excel workbook"),
}


def imported(workdir) -> list[dict]:
    keep = ("unique_id", "reviewer", "verdict", "corrected_label", "corrected_rationale", "corrected_techniques", "comment")
    lines = (workdir / "reviews" / "verdicts.jsonl").read_text(encoding="utf-8").splitlines()
    return sorted(({k: json.loads(x)[k] for k in keep} for x in lines), key=lambda r: r["unique_id"])


@pytest.mark.parametrize("program", SAVED_BY)
def test_a_sheet_imports_as_each_program_saves_it(annotated, tmp_path, program, capsys):
    columns, rows = rows_of(annotated, tmp_path)
    write, read_as = SAVED_BY[program]
    sheet = tmp_path / ("sheet.xlsx" if program == "excel-workbook" else "sheet.csv")
    sheet.write_bytes(write(columns, rows))
    assert main(["review", "import", "--workdir", str(annotated), str(sheet)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{sheet}: 4 verdicts (3 rows not reviewed yet") and out[-1].startswith("4 verdicts imported into ")
    if read_as is not None:
        assert out[0].endswith(f"; read as {read_as})" if read_as else "yet)")
    got = imported(annotated)
    assert [r["unique_id"] for r in got] == ["item-0", "item-1", "item-2", "item-6"]
    by_id = {r["unique_id"]: r for r in got}
    assert by_id["item-1"]["corrected_rationale"] == EDITS["item-1"]["corrected_rationale"]  # a line break in a cell survives
    assert (by_id["item-2"]["verdict"], by_id["item-2"]["corrected_label"]) == ("incorrect", "biased")
    assert by_id["item-6"]["corrected_label"] == "not_biased"
    expected = EDITS["item-0"]["comment"]
    if program == "excel-de":  # cp1252 has no « »
        expected = expected.replace("«", '"').replace("»", '"')
    if program == "excel-mac":  # Mac Roman has no € or „
        expected = expected.replace("€", "EUR").replace("„", '"')
    assert by_id["item-0"]["comment"] == expected


def test_each_sheet_is_judged_on_its_own(annotated, tmp_path, capsys):
    columns, rows = rows_of(annotated, tmp_path)
    good = tmp_path / "ann.csv"
    good.write_bytes(csv_bytes(columns, rows, delimiter=";", encoding="cp1252") .replace("«".encode("cp1252"), b'"').replace(
        "»".encode("cp1252"), b'"'))
    _, bob_rows = rows_of(annotated, tmp_path / "b", reviewer="bob")
    bad = tmp_path / "bob.csv"
    bob_rows[0]["verdict"] = "fine"
    bad.write_bytes(csv_bytes(columns, bob_rows))
    ods = tmp_path / "cy.ods"
    with zipfile.ZipFile(ods, "w") as z:
        z.writestr("mimetype", "application/vnd.oasis.opendocument.spreadsheet")
    assert main(["review", "import", "--workdir", str(annotated), str(good), str(bad), str(ods)]) == 2
    out, err = capsys.readouterr()
    assert out.splitlines() == [f"{good}: 4 verdicts (3 rows not reviewed yet; read as cp1252, ';' between columns)",
                                f"4 verdicts imported into {annotated / 'reviews' / 'verdicts.jsonl'}"]
    assert err.splitlines() == [
        f"vilbias review import: error: nothing imported from {bad}: 1 problem(s) (fix them and import it again):",
        f"  {bad}:2: bad verdict 'fine' (use Acceptable, Needs Improvement or Incorrect)",
        f"nothing imported from {ods}: an OpenDocument spreadsheet (.ods): save it as CSV (UTF-8) or as an Excel workbook (.xlsx)",
        f"imported 4 verdicts from the other 1 sheet ({good.name}) into {annotated / 'reviews' / 'verdicts.jsonl'}",
    ]
    assert {r["reviewer"] for r in imported(annotated)} == {"reviewer_1"}
    # the same from Python: the good sheet imported, the exception says which were not
    bad.write_bytes(csv_bytes(columns, bob_rows))
    with pytest.raises(SheetsRefused) as e:
        import_verdicts(ImportConfig(workdir=annotated, files=[good, bad]))
    assert [f["problems"] == [] for f in e.value.result["files"]] == [True, False] and e.value.result["unchanged"] == 4


@pytest.mark.parametrize(("content", "cause"), [
    (b"", "the file is empty"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 600, "an Excel 97-2003 workbook (.xls): save it as CSV (UTF-8) or as an Excel workbook (.xlsx)"),
    (b"name;age\nann;3\n", "not a review sheet: its first line names none of the columns unique_id, reviewer, verdict, corrected_label, comment "
                           "(read as utf-8, with ',', ';', tabs or '|' between columns)"),
    ("unique_id;reviewer;verdict\nitem-0;ann;ok\n".encode("utf-16-le"), None),  # UTF-16 without a BOM: read, then its columns
    (b"unique_id;reviewer;verdict\n", "missing columns ['corrected_label', 'comment'] (read as utf-8, ';' between columns)"),
    (b"\xff\xfeu\x00\xd8", "it starts with the byte order mark of UTF-16 but is not UTF-16 text"),
    (bytes(range(256)) * 4, None),
])
def test_what_cannot_be_read_is_refused_in_one_line_naming_the_file(tmp_path, content, cause):
    path = tmp_path / "sheet.csv"
    path.write_bytes(content)
    with pytest.raises(UnreadableSheet) as e:
        read_sheet(path, ("unique_id", "reviewer", "verdict", "corrected_label", "comment"))
    message = str(e.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    if cause is not None:
        assert message.startswith(f"{path}: {cause}"), message


def test_utf16_without_a_bom_is_read(tmp_path):
    path = tmp_path / "sheet.txt"
    path.write_bytes("unique_id\treviewer\tverdict\nitem-0\tann\tAcceptable\n".encode("utf-16-le"))
    sheet = read_sheet(path, ("unique_id", "reviewer", "verdict"))
    assert sheet.rows == [(2, {"unique_id": "item-0", "reviewer": "ann", "verdict": "Acceptable"})]
    assert sheet.read_as.endswith("tabs between columns") and sheet.encoding.startswith("utf-16")


def test_a_filled_sheet_saved_by_excel_is_recognised_and_kept_by_a_re_export(annotated, tmp_path, capsys):
    """The export's own reading of an existing sheet is the import's: a reviewer's sheet saved back
    as cp1252 with ';' is their sheet, holding verdicts (not "someone else's file")."""
    columns, rows = rows_of(annotated, tmp_path)
    sheet = tmp_path / "s" / "sheet_reviewer_1.csv"
    sheet.write_bytes(csv_bytes(columns, [{**r, "comment": r["comment"].replace("«", "").replace("»", "")} for r in rows],
                                delimiter=";", encoding="cp1252"))
    saved = sheet.read_bytes()
    assert main(["review", "export", "--workdir", str(annotated), "--output", str(tmp_path / "s")]) == 0
    assert f"kept {sheet}: it holds 4 filled-in row(s), 4 not imported yet" in capsys.readouterr().out
    assert sheet.read_bytes() == saved
