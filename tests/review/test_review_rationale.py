"""The rationale check in review: failing rationales first in the sheets, corrected ones checked on import."""

from __future__ import annotations

import logging

import pytest

from tests.annotate.conftest import StubBackend, answer, stub_spec
from tests.fakes.workdirs import make_workdir
from tests.review.test_review import read, write
from vilbias.annotate.pipeline import AnnotateConfig, annotate
from vilbias.rationale import ARGUES_OTHER_LABEL, CUT_OFF, QUOTE_NOT_IN_ARTICLE
from vilbias.review import ExportConfig, ImportConfig, export_sheets, import_verdicts

TEXT = "The council approved what critics call a reckless gamble. The mayor said it would pay off. The vote was 7-2."
RATIONALES = {  # item -> (label, rationale)
    0: ("biased", "It calls the plan a \u201creckless gamble\u201d and quotes only its critics."),
    1: ("biased", "It calls the plan a \"total disaster\" and quotes only its critics."),
    2: ("not_biased", "The report gives the vote and the mayor's view without loaded words."),
    3: ("not_biased", "The report is one-sided and emotive throughout."),
    4: ("biased", "It calls the plan a \"reckless gamble\" and"),
    5: ("not_biased", "The report gives the vote and both sides plainly."),
}


@pytest.fixture
def annotated(tmp_path):
    workdir = make_workdir(tmp_path / "work", n=len(RATIONALES), texts=dict.fromkeys(RATIONALES, TEXT))

    def script(item, prompt, sample, request):
        label, rationale = RATIONALES[item]
        return answer(label.replace("_", " "), rationale=rationale, prompt=prompt)

    backends = {"a": StubBackend(script), "b": StubBackend(script)}
    annotate(AnnotateConfig(workdir=workdir, samples=1, annotator_specs=[stub_spec("a", vision=True), stub_spec("b", vision=True)],
                            backends=backends, progress=False))
    return workdir


def test_export_puts_failing_rationales_first_with_their_problems(annotated, tmp_path):
    written = export_sheets(ExportConfig(workdir=annotated, output=tmp_path / "s", reviewers=1, overlap=0))
    rows = read(tmp_path / "s" / "sheet_reviewer_1.csv")
    assert written["reviewer_1"]["failing_rationales"] == 3
    assert {r["unique_id"] for r in rows[:3]} == {"item-1", "item-3", "item-4"}
    problems = {r["unique_id"]: r["rationale_problems"] for r in rows}
    assert problems["item-1"] == f"{QUOTE_NOT_IN_ARTICLE}: “total disaster”"
    assert problems["item-3"].startswith(f"{ARGUES_OTHER_LABEL}: “The report is one-sided")
    assert problems["item-4"].startswith(f"{CUT_OFF}: ")
    assert all(problems[f"item-{i}"] == "" for i in (0, 2, 5))
    page = (tmp_path / "s" / "sheet_reviewer_1.html").read_text()
    assert "3 of 6 items come first" in page and "<code>quote_not_in_article</code> total disaster" in page
    assert page.index("item-1") < page.index("item-0") and page.index("item-4") < page.index("item-5")


def test_a_failing_corrected_rationale_is_imported_with_a_warning(annotated, tmp_path, caplog):
    export_sheets(ExportConfig(workdir=annotated, output=tmp_path / "s", reviewers=1, overlap=0))
    rows = read(tmp_path / "s" / "sheet_reviewer_1.csv")
    edits = {
        "item-1": {"verdict": "Needs Improvement", "corrected_rationale": "It calls the plan a \u201cRECKLESS  gamble\u201d."},
        "item-3": {"verdict": "Needs Improvement", "corrected_rationale": "It quotes \"a total disaster\" plainly and is neutral."},
        "item-4": {"verdict": "Incorrect", "corrected_label": "not biased",
                   "corrected_rationale": "It reports the 7-2 vote and the mayor's view, but it is emotive."},
    }
    for row in rows:
        row.update(edits.get(row["unique_id"], {}))
    write(tmp_path / "filled.csv", rows)
    with caplog.at_level(logging.WARNING, logger="vilbias.review.sheets"):
        result = import_verdicts(ImportConfig(workdir=annotated, files=[tmp_path / "filled.csv"]))
    assert result["imported"] == 3 and result["corrected_rationales"] == 3
    assert result["failing_corrected_rationales"] == 2
    assert result["rationale_problems"] == {QUOTE_NOT_IN_ARTICLE: 1, ARGUES_OTHER_LABEL: 1}
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 2 and any("item-3" in w and "total disaster" in w for w in warned)
    assert any("item-4" in w and ARGUES_OTHER_LABEL in w for w in warned)
