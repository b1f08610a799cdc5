"""Every verdict reaches the data: the build's review columns and rationale, and the card."""

from __future__ import annotations

import csv

from datasets import load_dataset

from tests.review.test_review import read, write
from vilbias.corpus import BuildConfig, build
from vilbias.review import ExportConfig, ImportConfig, export_sheets, import_verdicts


def all_rows(out, config="default") -> dict[str, dict]:
    """Every row of a built config, whichever of its splits a small corpus has."""
    return {r["unique_id"]: r for split in load_dataset(str(out), config).values() for r in split}


def review(annotated, tmp_path, reviewer, edits):
    export_sheets(ExportConfig(workdir=annotated, output=tmp_path / reviewer, reviewers=1, reviewer_names=[reviewer]))
    path = tmp_path / reviewer / f"sheet_{reviewer}.csv"
    rows = read(path)
    assert "corrected_rationale" in rows[0]
    for row in rows:
        row.update(edits.get(row["unique_id"], {}))
    write(path, rows)
    return path


def test_review_columns_in_the_built_dataset(annotated, tmp_path):
    # automated multimodal labels: items 0, 1, 4 biased; 2, 3, 5 not biased; 6 a tie
    r1 = review(annotated, tmp_path, "ann", {
        "item-0": {"verdict": "Needs Improvement", "corrected_rationale": "Loaded verbs in the headline.", "comment": "too vague"},
        "item-1": {"verdict": "Needs Improvement", "comment": "cite the photo"},
        "item-2": {"verdict": "Incorrect", "corrected_label": "biased", "corrected_rationale": "The photo stages the protest."},
        "item-3": {"verdict": "Incorrect", "corrected_label": "biased"},
        "item-6": {"verdict": "Acceptable", "corrected_label": "not biased", "corrected_rationale": "Both sides are quoted."},
    })
    r2 = review(annotated, tmp_path, "bob", {"item-0": {"verdict": "Acceptable", "comment": "fine by me"}, "item-5": {"verdict": "Acceptable"}})
    import_verdicts(ImportConfig(workdir=annotated, files=[r1, r2]))
    build(BuildConfig(workdir=annotated, output=tmp_path / "out"))
    rows = all_rows(tmp_path / "out")
    assert len(rows) == 7  # the tie was settled

    def cols(i):
        r = rows[f"item-{i}"]
        return r["review"], r["reasoning"], r["corrected_rationale"], r["review_comments"], r["n_reviewers"], r["review_flag"]

    # Needs Improvement with a corrected rationale: it replaces the rationale (ties go to the more severe verdict)
    assert cols(0) == ("needs_improvement", "Loaded verbs in the headline.", "Loaded verbs in the headline.", ["too vague", "fine by me"], 2, None)
    # ... without one: the annotators' rationale stays, and the row says so
    assert cols(1) == ("needs_improvement", "why 1", None, ["cite the photo"], 1, "rationale_not_corrected")
    # an overturned label: the reviewer's rationale, or none (flagged), never the annotators' for the other label
    assert cols(2) == ("incorrect", "The photo stages the protest.", "The photo stages the protest.", [], 1, None)
    assert cols(3) == ("incorrect", "", None, [], 1, "rationale_missing")
    assert rows["item-3"]["multimodal_label"] == 1
    assert cols(6) == ("acceptable", "Both sides are quoted.", "Both sides are quoted.", [], 1, None)
    assert cols(5) == ("acceptable", "why 5", None, [], 1, None) and cols(4) == ("unreviewed", "why 4", None, [], 0, None)
    sft = all_rows(tmp_path / "out", "sft")
    assert sft["item-2"]["messages"][1]["content"][0]["text"].endswith("Reasoning: The photo stages the protest.")
    card = (tmp_path / "out" / "README.md").read_text()
    assert "3 reviewer-corrected rationales" in card and "1 Needs Improvement without a corrected rationale" in card
    assert "1 label set by review without a rationale" in card and "ties 14.3% (1," in card


def test_sheets_without_the_new_column_still_import(annotated, tmp_path):
    path = review(annotated, tmp_path, "old", {"item-0": {"verdict": "Acceptable"}})
    rows = read(path)
    with open(path, "w", newline="") as f:
        fields = [c for c in rows[0] if c != "corrected_rationale"]
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    assert import_verdicts(ImportConfig(workdir=annotated, files=[path]))["imported"] == 1
