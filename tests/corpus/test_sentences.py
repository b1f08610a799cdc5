"""Sentence corpora: BABE's CSV and XLSX, the Hub layout, the rules on duplicates, conflicts and
``No agreement``, and the one-line errors; the real SG1 file in the real-data tier."""

from __future__ import annotations

import json

import pytest

from tests.real_data import shared_data
from tests.training_classifier.conftest import BABE_HEADER, write_babe_csv
from vilbias.corpus.pipeline import build_sentences
from vilbias.corpus.sentences import read_sentences


@pytest.fixture
def babe_csv(tmp_path):
    return write_babe_csv(tmp_path / "babe.csv")


def _csv(path, lines, *, bom=True):
    path.write_bytes(("\n".join([BABE_HEADER, *lines]) + "\n").encode("utf-8-sig" if bom else "utf-8"))
    return path


# Line numbers below count the header as line 1; line 3's quoted text spans two lines.
QUIRKS = [
    "Plain one;https://x/1;reuters;t;center;Non-biased;Entirely factual;[]",  # line 2
    '"A quoted sentence; with a semicolon\nand a line break";https://x/2;breitbart;t;right;Biased;;[\'quoted\']',  # 3-4
    "Plain one;https://x/1;reuters;t;center;Non-biased;Entirely factual;[]",  # 5: exact repeat of 2
    "Torn sentence;https://x/3;msnbc;t;left;Biased;;[]",  # 6
    "Unclear;https://x/4;msnbc;t;left;No agreement;No agreement;[]",  # 7
    "Torn sentence;https://x/3;msnbc;t;left;Non-biased;;[]",  # 8: conflicts with 6
    "Torn sentence;https://x/other;msnbc;t;left;Non-biased;;[]",  # 9: another link, kept
    "Loaded words here;https://x/5;alternet;t;left;Biased;;['loaded']",  # 10
]


def test_quirks_are_merged_or_left_out_with_their_lines(tmp_path):
    report = build_sentences(_csv(tmp_path / "q.csv", QUIRKS), tmp_path / "out")
    assert report["source"]["rows_read"] == 8 and report["source"]["rows_kept"] == 4
    got = {(e["line"], e["reason"]) for e in report["exclusions"]}
    assert got == {(5, "duplicate"), (6, "conflicting_labels"), (7, "no_agreement"), (8, "conflicting_labels")}
    assert report["source"]["duplicates_merged"] == 1 and report["source"]["excluded_conflicting"] == 2 and report["source"]["excluded_no_agreement"] == 1
    on_disk = json.loads((tmp_path / "out" / "build_report.json").read_text())
    assert on_disk["exclusions"] == report["exclusions"]
    card = (tmp_path / "out" / "README.md").read_text(encoding="utf-8")
    assert "different labels (every copy left out): lines 6, 8." in card
    assert "merged into it): line 5." in card and "(left out): line 7." in card
    assert "8 rows read − " in card and "= **4 sentences**" in card  # the counts add up
    rows, _, _ = read_sentences(tmp_path / "q.csv")
    quoted = next(r for r in rows if r["news_link"] == "https://x/2")
    assert quoted["text"] == "A quoted sentence; with a semicolon\nand a line break" and quoted["biased_words"] == ["quoted"]


def test_comma_separated_without_bom_reads_the_same(tmp_path):
    comma = tmp_path / "c.csv"
    header = BABE_HEADER.replace(";", ",")
    comma.write_text(f'{header}\n"Hello, world",https://x/1,o,t,left,Biased,,"[\'a\', \'b\']"\n', encoding="utf-8")
    rows, counts, _ = read_sentences(comma)
    assert counts["rows_read"] == 1 and rows[0]["text"] == "Hello, world" and rows[0]["biased_words"] == ["a", "b"]


def test_xlsx_with_its_own_column_names(tmp_path):
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append([])  # a blank first row: the header is the first non-empty one
    sheet.append(["sentence", "news_link", "outlet", "topic", "type", "Label_bias", "label_opinion", "biased_words"])
    sheet.append(["First sentence", "https://x/1", "reuters", "t", "center", "Non-biased", "Entirely factual", "[]"])  # row 3
    sheet.append(["Second sentence", "https://x/2", "breitbart", "t", "right", "Biased", None, "['x']"])  # row 4
    sheet.append(["Third sentence", "https://x/3", "breitbart", "t", "right", None, None, None])  # row 5: no label
    sheet.append([None] * 8)  # trailing empty rows, as saved sheets have
    book.save(tmp_path / "sg.xlsx")
    report = build_sentences(tmp_path / "sg.xlsx", tmp_path / "out")
    assert report["source"]["rows_kept"] == 2 and report["label_counts"] == {"not_biased": 1, "biased": 1}
    assert [(e["line"], e["reason"]) for e in report["exclusions"]] == [(5, "no_label")]


def _hub_records():
    return [
        {"text": f"Sentence {i}", "outlet": "reuters", "label": i % 2, "topic": "t", "news_link": f"https://x/{i}",
         "biased_words": "['w']" if i % 2 else "[]", "uuid": f"u{i}", "type": "center", "label_opinion": ""}
        for i in range(12)
    ]


def test_hub_layout_as_folder_parquet_jsonl_and_csv_exports(tmp_path):
    import pandas as pd
    from datasets import Dataset

    records = _hub_records()
    folder = tmp_path / "BABE"
    Dataset.from_list(records[:9]).to_parquet(str(folder / "data" / "train-00000-of-00001.parquet"))
    Dataset.from_list(records[9:]).to_parquet(str(folder / "data" / "test-00000-of-00001.parquet"))
    # A local copy of the Hub repo goes through datasets.load_dataset, as `--sentences ORG/NAME` does.
    report = build_sentences(folder, tmp_path / "from-folder")
    assert report["source"]["rows_kept"] == 12 and report["label_counts"] == {"not_biased": 6, "biased": 6}
    expected = sorted(r["unique_id"] for r in read_sentences(folder)[0])

    pd.DataFrame(records).to_parquet(tmp_path / "babe.parquet")
    (tmp_path / "babe.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    pd.DataFrame(records).assign(label=["Biased" if r["label"] else "Non-biased" for r in records]).to_csv(tmp_path / "babe.csv", index=False)
    for name in ("babe.parquet", "babe.jsonl", "babe.csv"):
        rows, counts, _ = read_sentences(tmp_path / name)
        assert sorted(r["unique_id"] for r in rows) == expected, name
        assert next(r for r in rows if r["label"] == 1)["biased_words"] == ["w"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("A sentence;https://x/1;O;t;left;Maybe;;[]", "line 3: label 'Maybe' is not one of"),
        ("A sentence;https://x/1;O;t;left;Biased;;['unclosed", "line 3: biased_words is not a list literal"),
        ("A sentence;https://x/1;O;t;left;Biased;;{'a': 1}", "line 3: biased_words must be a list of strings"),
        (";https://x/1;O;t;left;Biased;;[]", "line 3: empty text"),
    ],
)
def test_bad_rows_are_one_line_errors_naming_the_line(tmp_path, line, message):
    path = _csv(tmp_path / "bad.csv", ["Fine;https://x/0;O;t;left;Biased;;[]", line])
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("(", r"\(")) as info:
        build_sentences(path, tmp_path / "out")
    assert "\n" not in str(info.value)


def test_unreadable_files_and_missing_label_column(tmp_path):
    latin = tmp_path / "latin.csv"
    latin.write_bytes(f"{BABE_HEADER}\nFine;l;o;t;left;Biased;;[]\nCaf\xe9;l;o;t;left;Biased;;[]\n".encode("latin-1"))
    with pytest.raises(ValueError, match="line 3: not UTF-8"):
        build_sentences(latin, tmp_path / "out")
    fake = tmp_path / "fake.xlsx"
    fake.write_bytes(b"not a workbook")
    pytest.importorskip("openpyxl")
    with pytest.raises(ValueError, match="not a readable .xlsx"):
        build_sentences(fake, tmp_path / "out")
    no_label = tmp_path / "nolabel.csv"
    no_label.write_text("text;outlet\nA sentence;o\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no label_bias or label column"):
        build_sentences(no_label, tmp_path / "out")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        build_sentences(tmp_path / "missing.csv", tmp_path / "out")


def test_layout_folds_and_determinism(tmp_path, babe_csv):
    from datasets import load_dataset

    report = build_sentences(babe_csv, tmp_path / "babe")
    assert report["source"]["rows_read"] == 54 and report["source"]["excluded_no_agreement"] == 4 and report["source"]["rows_kept"] == 50
    assert report["label_counts"] == {"not_biased": 20, "biased": 30}
    out = tmp_path / "babe"
    assert (out / "data" / "train-fold0-00000-of-00001.parquet").is_file()
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert "configs:" in readme and "dataset_info:" in readme and "class_label" in readme
    test_ids = []
    for k in range(5):
        fold = load_dataset(str(out), f"fold_{k}")
        ids_train, ids_test = set(fold["train"]["unique_id"]), set(fold["test"]["unique_id"])
        assert not ids_train & ids_test and len(ids_train | ids_test) == 50
        test_ids += fold["test"]["unique_id"]
        biased = sum(fold["test"]["label"])
        assert abs(biased - 30 / 5) <= 1 and abs(len(fold["test"]) - biased - 20 / 5) <= 1  # stratified
    assert len(set(test_ids)) == 50  # the test folds partition the rows
    build_sentences(babe_csv, tmp_path / "again")
    for k in range(5):
        a = load_dataset(str(out), f"fold_{k}")["test"]["unique_id"]
        assert sorted(a) == sorted(load_dataset(str(tmp_path / "again"), f"fold_{k}")["test"]["unique_id"])


def test_build_cli_sentences(tmp_path, babe_csv, capsys):
    from vilbias.cli import main

    assert main(["build", "--sentences", str(babe_csv), "--output", str(tmp_path / "babe")]) == 0
    out = capsys.readouterr().out
    assert "fold_4" in out and "no_agreement 4" in out
    report = json.loads((tmp_path / "babe" / "build_report.json").read_text())
    assert report["rows"] == 50 and report["configs"]["fold_0"]["train"] + report["configs"]["fold_0"]["test"] == 50


@pytest.mark.real_data
def test_real_sg1_rows_kept_merged_and_left_out(tmp_path):
    report = build_sentences(shared_data("babe", "final_labels_SG1.csv"), tmp_path / "sg1")
    assert report["source"]["rows_read"] == 1700
    assert report["source"]["excluded_no_agreement"] == 154 and report["source"]["excluded_conflicting"] == 0 and report["source"]["duplicates_merged"] == 0
    assert report["source"]["rows_kept"] == 1546 and report["label_counts"] == {"not_biased": 800, "biased": 746}
    # The published file's first `No agreement` row (Ingraham, Breitbart) sits on line 4.
    assert report["exclusions"][0] == {"unique_id": report["exclusions"][0]["unique_id"], "line": 4, "reason": "no_agreement"}
    assert sum(report["configs"][f"fold_{k}"]["test"] for k in range(5)) == 1546
    assert all(abs(s["biased_share"] - 746 / 1546) < 0.015 for s in report["source"]["folds"].values())
