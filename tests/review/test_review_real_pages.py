"""Review of real pages annotated offline: the real news pages of ``../shared/data/news`` (English,
German and French) go through ingest → ``vilbias annotate`` with the shipped model → ``review
export`` → an ``Acceptable`` verdict and an overturned label → import → build.

Every sheet row shows the model's vote: a rationale for each English page, and for each page in a
language the model does not read, an abstention naming that language (never ``no_votes``).

Real-data tier: skips on a bare clone without ``../shared``, fails in CI when it is missing.
"""

from __future__ import annotations

import shutil

import pytest

from tests.review.test_review import read, write
from tests.review.test_review_columns import all_rows
from vilbias.corpus import BuildConfig, build
from vilbias.languages import describe_languages
from vilbias.review import ExportConfig, ImportConfig, export_sheets, import_verdicts
from vilbias.workdir import read_articles

pytestmark = [pytest.mark.real_data, pytest.mark.slow]


def test_real_pages_reviewed_after_offline_annotation(tmp_path, real_pages_annotated):
    workdir = shutil.copytree(real_pages_annotated, tmp_path / "work")  # ingested, then annotated offline
    language = {a.unique_id: a.language for a in read_articles(workdir)}
    export_sheets(ExportConfig(workdir=workdir, output=tmp_path / "s"))
    path = tmp_path / "s" / "sheet_reviewer_1.csv"
    rows = read(path)
    assert len(rows) >= 15 and "no_votes" not in {r["flagged"] for r in rows}
    english = [r for r in rows if language[r["unique_id"]] == "en"]
    other = [r for r in rows if language[r["unique_id"]] != "en"]
    assert len(english) >= 5 and {language[r["unique_id"]] for r in other} >= {"de", "fr"}
    for r in english:
        assert (r["flagged"], r["label_source"]) == ("", "text") and r["rationale"].strip() and r["multimodal_label"]
    for r in other:
        code = language[r["unique_id"]]
        assert (r["flagged"], r["multimodal_label"], r["rationale"]) == ("other_language", "", "")
        assert r["votes"] == f"babe-sentence-model: abstained, does not read {describe_languages([code])}"

    biased = next(r for r in english if r["multimodal_label"] == "biased")
    neutral = next(r for r in english if r["multimodal_label"] == "not_biased")
    biased["verdict"] = "Acceptable"
    neutral.update(verdict="Incorrect", corrected_label="biased", corrected_techniques="none",
                   corrected_rationale="The reviewer reads a one-sided account in this article.")
    write(path, rows)
    assert import_verdicts(ImportConfig(workdir=workdir, files=[path]))["imported"] == 2
    build(BuildConfig(workdir=workdir, output=tmp_path / "out"))
    built = all_rows(tmp_path / "out")
    assert built[biased["unique_id"]]["agreement"] == 1.0 and built[biased["unique_id"]]["review"] == "acceptable"
    overturned = built[neutral["unique_id"]]
    assert (overturned["agreement"], overturned["label_source"], overturned["techniques"]) == (0.0, "review", [])
