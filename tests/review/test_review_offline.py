"""Review after the offline default annotator, end to end: ``vilbias annotate`` with no annotators
file (the shipped BABE sentence model: text prompt, one deterministic vote, rationales quoting the
sentences it flagged; it reads English and abstains on other languages) → ``review export`` →
an ``Acceptable`` verdict, an overturned label and a German item settled by the reviewer →
``review import`` → ``review stats`` → ``vilbias build``.
"""

from __future__ import annotations

import pytest

from tests.fakes.workdirs import make_workdir
from tests.review.test_review import read, write
from tests.review.test_review_columns import all_rows
from vilbias.annotate import AnnotateConfig, annotate
from vilbias.cli import main
from vilbias.corpus import BuildConfig, build
from vilbias.rationale import check_rationale

pytestmark = pytest.mark.slow  # the shipped model annotates offline (about 30 s with its load)

TEXTS = {
    0: "The reckless mayor rammed through a disastrous tax hike that will crush hardworking families. "
       "Critics called it a shameless power grab. The council voted 7-2.",
    1: "The council approved the budget on Tuesday by a vote of 7 to 2. The mayor said the plan funds road repairs. "
       "Two members voted against it.",
    2: "Radical leftists are destroying our great nation with their insane open-border policies. "
       "Only fools believe their lies. The bill passed the Senate.",
    3: "The central bank held interest rates steady on Wednesday. Officials said inflation had eased slightly. "
       "Markets were little changed.",
    4: "Die Stadtverwaltung hat am Dienstag den Haushalt für das kommende Jahr beschlossen. Der Bürgermeister sagte, "
       "das Geld fließe vor allem in die Sanierung von Straßen und Schulen. Zwei Mitglieder stimmten dagegen.",
}
MODEL = "babe-sentence-model"
OVERTURNED = "The article reports that the bill passed the Senate; it quotes the claims made about it."


@pytest.fixture(scope="module")
def offline(tmp_path_factory):
    workdir = make_workdir(tmp_path_factory.mktemp("offline") / "work", n=len(TEXTS), texts=TEXTS)
    annotate(AnnotateConfig(workdir=workdir, progress=False))
    return workdir


def test_offline_annotation_reviewed_end_to_end(offline, tmp_path, capsys):
    sheets = tmp_path / "sheets"
    assert main(["review", "export", "--workdir", str(offline), "--output", str(sheets)]) == 0
    path = sheets / "sheet_reviewer_1.csv"
    rows = {r["unique_id"]: r for r in read(path)}
    # every item shows the model's vote and rationale: none is "no_votes"
    english = [rows[f"item-{i}"] for i in range(4)]
    assert [r["multimodal_label"] for r in english] == ["biased", "not_biased", "biased", "not_biased"]
    for r in english:
        assert (r["label_source"], r["flagged"], r["agreement"]) == ("text", "", "1.00")
        assert r["votes"] == f"{MODEL}: {r['multimodal_label'][0].upper()}"
        assert r["rationale"].startswith(("Biased (", "Not biased (")) and r["text_label"] == r["multimodal_label"]
    assert "“The reckless mayor rammed through" in rows["item-0"]["rationale"] and "word_choice" in rows["item-0"]["techniques"]
    # the German item: the English model abstained, and the sheet says so
    german = rows["item-4"]
    assert (german["flagged"], german["multimodal_label"]) == ("other_language", "")
    assert german["votes"] == f"{MODEL}: abstained, does not read German (de)"

    rows["item-0"].update(verdict="Acceptable")  # no label needed: the model's label is the automated one
    rows["item-2"].update(verdict="Incorrect", corrected_label="not biased", corrected_rationale=OVERTURNED,
                          corrected_techniques="none")
    rows["item-4"].update(verdict="Acceptable", corrected_label="not biased")
    write(path, list(rows.values()))
    filled = path.read_bytes()
    # exporting again over the filled sheet keeps it: the new one goes beside it
    assert main(["review", "export", "--workdir", str(offline), "--output", str(sheets)]) == 0
    assert path.read_bytes() == filled and (sheets / "sheet_reviewer_1.2.csv").exists()

    assert main(["review", "import", "--workdir", str(offline), str(path)]) == 0
    capsys.readouterr()
    assert main(["review", "stats", "--workdir", str(offline), "--no-plot"]) == 0
    printed = capsys.readouterr().out
    # reviewed with an automated label: item-0 (biased, kept) and item-2 (biased -> not biased): kappa 0
    assert "Cohen's kappa (automated text label vs final label, 2 reviewed items): 0.000" in printed
    # the model's own label against the final one: right on items 0, 1, 3, wrong on 2; it did not judge item-4
    assert f"agreement with final label (text prompt): {MODEL} 75.0% of 4" in printed

    build(BuildConfig(workdir=offline, output=tmp_path / "out"))
    built = all_rows(tmp_path / "out")
    assert set(built) == {f"item-{i}" for i in range(5)}
    overturned = built["item-2"]
    assert (overturned["multimodal_label"], overturned["label_source"], overturned["agreement"]) == (0, "review", 0.0)
    assert overturned["techniques"] == [] and overturned["reasoning"] == OVERTURNED
    assert overturned["rationale_problems"] == []
    assert check_rationale(OVERTURNED, article_text=TEXTS[2], label="not_biased", techniques=overturned["techniques"]) == []
    assert (built["item-0"]["review"], built["item-0"]["agreement"], built["item-0"]["label_source"]) == ("acceptable", 1.0, "text")
    assert (built["item-4"]["label_source"], built["item-4"]["agreement"]) == ("review", None)
    card = (tmp_path / "out" / "README.md").read_text()
    assert "Cohen's κ between automated and reviewed labels: **0.000** (n = 2)" in card
    assert f"text prompt: {MODEL} 75.0% of 4." in card
