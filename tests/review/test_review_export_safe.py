"""``review export`` never overwrites a reviewer's work, nor anything it did not write.

A sheet holding verdicts not imported yet is left byte for byte and the new one goes beside it;
a new sheet shows the verdicts already imported, so re-importing it changes nothing; a file of a
sheet's name that is not a sheet, and every other file in the folder, is left alone.
"""

from __future__ import annotations

from tests.review.test_review import read, write
from vilbias.cli import main
from vilbias.review import ExportConfig, ImportConfig, export_sheets, import_verdicts
from vilbias.review.verdicts import load_verdicts

EDITS = {
    "item-0": {"verdict": "Acceptable"},
    "item-2": {"verdict": "Incorrect", "corrected_label": "biased", "corrected_rationale": "The photo stages a crowd.",
               "corrected_techniques": "visual cues, Framing"},
    "item-6": {"verdict": "Needs Improvement", "corrected_label": "not biased", "comment": "a tie"},
}


def fill(path, edits=EDITS):
    rows = read(path)
    for row in rows:
        row.update(edits.get(row["unique_id"], {}))
    write(path, rows)
    return path.read_bytes()


def plant(folder):
    """A user's files in the sheets folder: each must survive every export byte for byte."""
    (folder / "sub").mkdir(parents=True)
    (folder / ".git").mkdir()
    files = {
        folder / "notes.txt": b"my notes\n",
        folder / "sub" / "keep.md": b"# keep\n",
        folder / ".git" / "HEAD": b"ref: refs/heads/main\n",
        folder / "sheet_reviewer_2.csv": b"name,score\nann,3\n",  # a sheet's name, not a sheet
        folder / "review_export_config.yaml": b"owner: me\n",  # the saved options' name, not ours
    }
    for path, data in files.items():
        path.write_bytes(data)
    return files


def test_reexport_keeps_a_filled_sheet_and_shows_imported_verdicts(annotated, tmp_path):
    out = tmp_path / "sheets"
    export_sheets(ExportConfig(workdir=annotated, output=out))
    first = out / "sheet_reviewer_1.csv"
    filled = fill(first)

    again = export_sheets(ExportConfig(workdir=annotated, output=out))["reviewer_1"]
    assert first.read_bytes() == filled  # the reviewer's work, untouched
    assert again["csv"] == str(out / "sheet_reviewer_1.2.csv") and again["html"] == str(out / "sheet_reviewer_1.2.html")
    assert again["kept"] == {"path": str(first), "foreign": False, "verdicts": 3, "not_imported": 3}
    assert again["prefilled"] == 0 and not any(r["verdict"] for r in read(out / "sheet_reviewer_1.2.csv"))
    assert "sheet_reviewer_1.2.csv" in (out / "sheet_reviewer_1.2.html").read_text()  # the page names its own CSV

    import_verdicts(ImportConfig(workdir=annotated, files=[first]))
    lines = (annotated / "reviews" / "verdicts.jsonl").read_text()
    third = export_sheets(ExportConfig(workdir=annotated, output=out))["reviewer_1"]
    # the unfilled sheet beside it is vilbias's own and holds nothing: replaced, now showing the verdicts
    assert third["csv"] == str(out / "sheet_reviewer_1.2.csv") and third["prefilled"] == 3
    assert third["kept"] == {"path": str(first), "foreign": False, "verdicts": 3, "not_imported": 0}
    assert first.read_bytes() == filled
    shown = {r["unique_id"]: r for r in read(out / "sheet_reviewer_1.2.csv")}
    assert {k: shown["item-2"][k] for k in EDITS["item-2"]} == {
        "verdict": "Incorrect", "corrected_label": "biased", "corrected_rationale": "The photo stages a crowd.",
        "corrected_techniques": "visual_cues, framing"}
    assert (shown["item-6"]["verdict"], shown["item-6"]["corrected_label"], shown["item-6"]["comment"]) == ("Needs Improvement", "not biased", "a tie")
    assert "3 of 7 items show your verdict already imported" in (out / "sheet_reviewer_1.2.html").read_text()

    # importing the new sheet (or the old one again) changes nothing: its verdicts are already in
    result = import_verdicts(ImportConfig(workdir=annotated, files=[out / "sheet_reviewer_1.2.csv"]))
    assert (result["imported"], result["unchanged"]) == (0, 3)
    assert (annotated / "reviews" / "verdicts.jsonl").read_text() == lines
    assert load_verdicts(annotated)["item-2"][0].corrected_techniques == ("visual_cues", "framing")

    # a re-export that changes nothing finds its sheet as it would write it: no new file
    shown_bytes = (out / "sheet_reviewer_1.2.csv").read_bytes()
    assert export_sheets(ExportConfig(workdir=annotated, output=out))["reviewer_1"]["csv"] == str(out / "sheet_reviewer_1.2.csv")
    assert (out / "sheet_reviewer_1.2.csv").read_bytes() == shown_bytes and not (out / "sheet_reviewer_1.3.csv").exists()
    # a verdict changed since (here: imported from another sheet) makes the next sheet differ: beside, never over it
    other = tmp_path / "copy.csv"
    other.write_bytes(shown_bytes)
    fill(other, {"item-3": {"verdict": "Acceptable"}})
    import_verdicts(ImportConfig(workdir=annotated, files=[other]))
    fourth = export_sheets(ExportConfig(workdir=annotated, output=out))["reviewer_1"]
    assert fourth["csv"] == str(out / "sheet_reviewer_1.3.csv") and fourth["prefilled"] == 4
    assert (out / "sheet_reviewer_1.2.csv").read_bytes() == shown_bytes


def test_export_leaves_every_planted_file(annotated, tmp_path, capsys):
    out = tmp_path / "sheets"
    planted = plant(out)
    argv = ["review", "export", "--workdir", str(annotated), "--output", str(out), "--reviewers", "2", "--overlap", "2"]
    assert main(argv) == 0
    assert main(argv) == 0  # twice: the second run finds its own sheets too
    printed = capsys.readouterr().out
    assert {p: p.read_bytes() for p in planted} == planted
    assert f"kept {out / 'sheet_reviewer_2.csv'}: it is not this reviewer's review sheet" in printed
    assert f"reviewer_2: 4 items -> {out / 'sheet_reviewer_2.2.csv'}" in printed
    assert f"options not saved: {out / 'review_export_config.yaml'} is not a file vilbias wrote" in printed
    assert sorted(p.name for p in out.iterdir()) == [
        ".git", "notes.txt", "review_export_config.yaml", "sheet_reviewer_1.csv", "sheet_reviewer_1.html",
        "sheet_reviewer_2.2.csv", "sheet_reviewer_2.2.html", "sheet_reviewer_2.csv", "sub"]


def test_the_cli_names_the_kept_sheet_and_what_is_not_imported(annotated, tmp_path, capsys):
    out = tmp_path / "sheets"
    argv = ["review", "export", "--workdir", str(annotated), "--output", str(out)]
    assert main(argv) == 0
    fill(out / "sheet_reviewer_1.csv", {"item-0": {"verdict": "Acceptable"}})
    capsys.readouterr()
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert (f"kept {out / 'sheet_reviewer_1.csv'}: it holds 1 filled-in row(s), 1 not imported yet "
            "(run `vilbias review import` on it)") in printed
    assert {r["unique_id"]: r["verdict"] for r in read(out / "sheet_reviewer_1.csv")}["item-0"] == "Acceptable"
    assert (out / "review_export_config.yaml").read_text().startswith("# The options `vilbias review export` ran with")


def test_a_reviewer_named_like_a_second_sheet_keeps_their_own(annotated, tmp_path):
    out = tmp_path / "sheets"
    names = ["bob", "bob.2"]
    export_sheets(ExportConfig(workdir=annotated, output=out, reviewers=2, reviewer_names=names, overlap=7))
    filled = fill(out / "sheet_bob.csv")
    written = export_sheets(ExportConfig(workdir=annotated, output=out, reviewers=2, reviewer_names=names, overlap=7))
    assert (written["bob"]["csv"], written["bob.2"]["csv"]) == (str(out / "sheet_bob.3.csv"), str(out / "sheet_bob.2.csv"))
    assert (out / "sheet_bob.csv").read_bytes() == filled
    assert {r["reviewer"] for r in read(out / "sheet_bob.2.csv")} == {"bob.2"}
    assert {r["reviewer"] for r in read(out / "sheet_bob.3.csv")} == {"bob"}
