"""Review of a text-only annotation, and one computation from the sheet to the card.

Three text-only annotators (no vision annotator: the items' labels come from the text prompt, as
with the offline default) vote once each. The sheet shows that vote; an ``Acceptable`` needs no
label; after review the row's ``agreement`` is the share of votes for the *final* label, its
techniques follow the reviewer, and κ and the annotators' agreement read the same in
``review stats`` and on the card.
"""

from __future__ import annotations

import pytest
from sklearn.metrics import cohen_kappa_score

from tests.annotate.conftest import StubBackend, answer, stub_spec
from tests.fakes.workdirs import make_workdir
from tests.review.test_review import read, write
from tests.review.test_review_columns import all_rows
from vilbias.annotate.pipeline import AnnotateConfig, annotate
from vilbias.corpus import BuildConfig, build
from vilbias.rationale import check_rationale
from vilbias.review import (
    ExportConfig,
    ImportConfig,
    StatsConfig,
    export_sheets,
    import_verdicts,
    review_stats,
)
from vilbias.review.stats import format_stats

TEXT = "The council approved what critics call a reckless gamble. The mayor said it would pay off. The vote was 7-2."
# item -> ballots of annotators a, b, c (B biased, N not biased, - a failed call: an abstention)
BALLOTS = {0: "BBB", 1: "BBN", 2: "NNN", 3: "NNB", 4: "NNN", 5: "BN-"}
BIASED_WHY = "It calls the plan a \u201creckless gamble\u201d, loaded Word Choice that takes the critics' side."
NEUTRAL_WHY = "The report gives the 7-2 vote and the mayor's view plainly, without taking a side."


@pytest.fixture
def text_only(tmp_path):
    workdir = make_workdir(tmp_path / "work", n=len(BALLOTS), texts=dict.fromkeys(BALLOTS, TEXT))

    def script_for(pos):
        def script(item, prompt, sample, request):
            mark = BALLOTS[item][pos]
            if mark == "-":
                return None
            if mark == "B":
                return answer("biased", rationale=BIASED_WHY, prompt=prompt,
                              techniques={"Word Choice": "Present", "Repetition": "Present"})
            return answer("not biased", rationale=NEUTRAL_WHY, prompt=prompt)

        return script

    backends = {name: StubBackend(script_for(i)) for i, name in enumerate("abc")}
    annotate(AnnotateConfig(workdir=workdir, samples=1, annotator_specs=[stub_spec(n) for n in "abc"], backends=backends,
                            progress=False))
    return workdir


def fill(path, edits):
    rows = read(path)
    for row in rows:
        row.update(edits.get(row["unique_id"], {}))
    write(path, rows)
    return path


def test_the_sheet_shows_the_text_prompts_vote(text_only, tmp_path):
    export_sheets(ExportConfig(workdir=text_only, output=tmp_path / "s"))
    rows = {r["unique_id"]: r for r in read(tmp_path / "s" / "sheet_reviewer_1.csv")}
    assert {r["label_source"] for r in rows.values()} == {"text"}
    assert {i: r["flagged"] for i, r in rows.items()} == {**{f"item-{i}": "" for i in range(5)}, "item-5": "tie"}
    one = rows["item-1"]
    assert (one["text_label"], one["multimodal_label"], one["agreement"], one["votes"]) == ("biased", "biased", "0.67", "a: B | b: B | c: N")
    assert (one["rationale"], one["techniques"]) == (BIASED_WHY, "repetition, word_choice, tone")
    assert rows["item-2"]["rationale"] == NEUTRAL_WHY and rows["item-5"]["votes"] == "a: B | b: N | c: -"
    page = (tmp_path / "s" / "sheet_reviewer_1.html").read_text()
    assert "Label (the text prompt's vote): <span class='label'>biased</span>" in page
    assert "no label (tie)" in page and "no majority" not in page


def test_review_reaches_row_stats_and_card_as_one_computation(text_only, tmp_path, capsys):
    export_sheets(ExportConfig(workdir=text_only, output=tmp_path / "s"))
    sheet = fill(tmp_path / "s" / "sheet_reviewer_1.csv", {
        "item-0": {"verdict": "Acceptable"},  # no label needed: the text prompt's vote is the automated label
        "item-1": {"verdict": "Incorrect", "corrected_label": "not biased", "corrected_rationale": NEUTRAL_WHY,
                   "corrected_techniques": "none"},
        "item-2": {"verdict": "Incorrect", "corrected_label": "biased", "corrected_rationale": BIASED_WHY,
                   "corrected_techniques": "Word Choice"},
        "item-4": {"verdict": "Incorrect", "corrected_label": "biased", "corrected_rationale": BIASED_WHY},
        "item-5": {"verdict": "Acceptable", "corrected_label": "biased"},
    })
    result = import_verdicts(ImportConfig(workdir=text_only, files=[sheet]))
    assert (result["imported"], result["corrected_techniques"], result["failing_corrected_rationales"]) == (5, 2, 0)

    stats = review_stats(StatsConfig(workdir=text_only, plot=False))
    # automated (text prompt) vs final, over reviewed items with an automated label (item-5 was a tie)
    auto, final = ["biased", "biased", "not_biased", "not_biased"], ["biased", "not_biased", "biased", "biased"]
    assert stats["label_prompt"] == "text" and stats["kappa_items"] == 4
    assert stats["cohen_kappa"] == pytest.approx(cohen_kappa_score(auto, final))
    # final labels: 0 B, 1 N, 2 B, 3 N, 4 B, 5 B; annotators' own labels a BBNNNB, b BBNNNN, c BNNBN-
    assert stats["annotator_agreement"]["text"] == {"a": pytest.approx(3 / 6), "b": pytest.approx(2 / 6), "c": pytest.approx(2 / 6)}
    assert "multimodal" not in stats["annotator_agreement"]
    printed = format_stats(stats)

    build(BuildConfig(workdir=text_only, output=tmp_path / "out"))
    rows = all_rows(tmp_path / "out")
    # agreement: the share of votes for the final label, the reviewed one where review changed it
    assert {i: pytest.approx(rows[f"item-{i}"]["agreement"]) for i in range(6)} == {
        0: 1.0, 1: pytest.approx(1 / 3), 2: 0.0, 3: pytest.approx(2 / 3), 4: 0.0, 5: 0.5}
    # techniques follow the reviewer; a label review set without techniques keeps none of the annotators'
    assert rows["item-1"]["techniques"] == [] and rows["item-2"]["techniques"] == ["word_choice"]
    assert rows["item-4"]["techniques"] == [] and rows["item-3"]["techniques"] == []
    assert rows["item-0"]["techniques"] == ["repetition", "word_choice", "tone"]
    for i in (1, 2, 4):
        r = rows[f"item-{i}"]
        assert (r["label_source"], r["rationale_problems"]) == ("review", []), i
    assert check_rationale(rows["item-2"]["reasoning"], article_text=TEXT, label="biased", techniques=rows["item-2"]["techniques"]) == []

    card = (tmp_path / "out" / "README.md").read_text()
    kappa = f"{stats['cohen_kappa']:.3f}"
    assert f"Cohen's kappa (automated text label vs final label, 4 reviewed items): {kappa}" in printed
    assert f"Cohen's κ between automated and reviewed labels: **{kappa}** (n = 4)" in card
    shares = ", ".join(f"{a} {100 * v:.1f}% of 6" for a, v in stats["annotator_agreement"]["text"].items())
    assert f"agreement with final label (text prompt): {shares}" in printed
    assert f"text prompt: {shares}." in card
    mean = sum(r["agreement"] for r in rows.values()) / len(rows)
    assert f"mean share of votes for the final label {mean:.3f}" in card
    assert "1 row with reviewer-corrected techniques" not in card and "2 rows with reviewer-corrected techniques" in card
    assert "2 labels set by review without techniques (empty `techniques`)" in card
    report = (tmp_path / "out" / "build_report.json").read_text()
    assert f'"cohen_kappa": {stats["cohen_kappa"]}' in report


def test_an_overturned_rationale_that_names_a_technique_the_reviewer_did_not_give_is_flagged(text_only, tmp_path, caplog):
    export_sheets(ExportConfig(workdir=text_only, output=tmp_path / "s"))
    sheet = fill(tmp_path / "s" / "sheet_reviewer_1.csv", {
        "item-2": {"verdict": "Incorrect", "corrected_label": "biased", "corrected_rationale": BIASED_WHY,
                   "corrected_techniques": "framing"},
    })
    assert import_verdicts(ImportConfig(workdir=text_only, files=[sheet]))["rationale_problems"] == {"names_absent_technique": 1}


def test_bad_corrected_techniques_are_refused_by_name(text_only, tmp_path):
    export_sheets(ExportConfig(workdir=text_only, output=tmp_path / "s"))
    sheet = fill(tmp_path / "s" / "sheet_reviewer_1.csv", {
        "item-0": {"verdict": "Acceptable", "corrected_techniques": "framing"},
        "item-2": {"verdict": "Incorrect", "corrected_label": "biased", "corrected_techniques": "word choice, spin"},
    })
    with pytest.raises(ValueError) as e:
        import_verdicts(ImportConfig(workdir=text_only, files=[sheet]))
    assert "corrected_techniques with verdict Acceptable: use Needs Improvement" in str(e.value)
    assert "unknown technique(s) 'spin' in corrected_techniques (use emotional_appeal," in str(e.value)
