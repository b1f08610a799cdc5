import csv
import json
import re

import pytest

from vilbias.review import (
    ExportConfig,
    ImportConfig,
    StatsConfig,
    export_sheets,
    import_verdicts,
    review_stats,
)
from vilbias.review.sheets import SHEET_COLUMNS, assign
from vilbias.review.verdicts import (
    RATIONALE_MISSING,
    RATIONALE_NOT_CORRECTED,
    Verdict,
    load_verdicts,
    resolve_review,
    review_outcome,
    settle_rationale,
)


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def write(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=SHEET_COLUMNS)
        w.writeheader()
        w.writerows(rows)


def test_assign_overlap_and_round_robin():
    ids = [f"i{k}" for k in range(10)]
    sheets = assign(ids, ["r1", "r2", "r3"], overlap=4)
    shared = set(sheets["r1"]) & set(sheets["r2"]) & set(sheets["r3"])
    assert len(shared) == 4
    rest = [set(s) - shared for s in sheets.values()]
    assert sorted(len(r) for r in rest) == [2, 2, 2] and set.union(*rest) | shared == set(ids)
    assert assign(list(reversed(ids)), ["r1", "r2", "r3"], overlap=4) == sheets  # order-independent


def test_export_writes_csv_and_offline_html(annotated, tmp_path):
    out = tmp_path / "sheets"
    written = export_sheets(ExportConfig(workdir=annotated, output=out, reviewers=2, overlap=3))
    assert set(written) == {"reviewer_1", "reviewer_2"}
    r1, r2 = read(out / "sheet_reviewer_1.csv"), read(out / "sheet_reviewer_2.csv")
    assert list(r1[0]) == SHEET_COLUMNS
    ids1, ids2 = {r["unique_id"] for r in r1}, {r["unique_id"] for r in r2}
    assert len(ids1 & ids2) == 3 and ids1 | ids2 == {f"item-{i}" for i in range(7)}
    row = next(r for r in r1 + r2 if r["unique_id"] == "item-0")
    assert (row["multimodal_label"], row["rationale"], row["votes"], row["verdict"]) == ("biased", "why 0", "a: B | b: B", "")
    tie = next(r for r in r1 + r2 if r["unique_id"] == "item-6")
    assert (tie["multimodal_label"], tie["flagged"]) == ("", "tie")
    page = (out / "sheet_reviewer_1.html").read_text()
    assert page.count("data:image/png;base64,") == len(r1)
    # self-contained: no external stylesheet, script or image
    assert not re.search(r"<(script|link)\b", page) and not re.search(r"src=['\"]https?:", page)
    assert "Headline" in page and "a: B | b: B" in page or "a: N | b: N" in page


def sheet_with(annotated, tmp_path, edits, reviewer="reviewer_1"):
    export_sheets(ExportConfig(workdir=annotated, output=tmp_path / "s", reviewers=1, reviewer_names=[reviewer]))
    rows = read(tmp_path / "s" / f"sheet_{reviewer}.csv")
    for row in rows:
        row.update(edits.get(row["unique_id"], {}))
    path = tmp_path / f"{reviewer}.csv"
    write(path, rows)
    return path


def test_import_validates_every_row_and_imports_nothing_on_error(annotated, tmp_path):
    path = sheet_with(
        annotated,
        tmp_path,
        {
            "item-0": {"verdict": "Acceptable"},
            "item-1": {"verdict": "Fine"},
            "item-2": {"verdict": "Incorrect"},
            "item-3": {"verdict": "Incorrect", "corrected_label": "not biased"},
            "item-4": {"verdict": "", "comment": "hmm"},
            "item-5": {"verdict": "Acceptable", "corrected_rationale": "A better reason."},
            "item-6": {"verdict": "Acceptable"},
        },
    )
    rows = read(path)
    rows.append({**rows[0], "unique_id": "item-99", "verdict": "Acceptable"})
    rows.append({**rows[0], "corrected_label": "maybe", "verdict": "needs improvement"})
    write(path, rows)
    with pytest.raises(ValueError) as e:
        import_verdicts(ImportConfig(workdir=annotated, files=[path]))
    msg = str(e.value)
    line = {r["unique_id"]: i + 2 for i, r in enumerate(rows[:7])}
    assert f"{path}:{line['item-1']}: bad verdict 'Fine'" in msg
    assert f"{path}:{line['item-2']}: verdict Incorrect needs a corrected_label" in msg
    assert f"{path}:{line['item-3']}: verdict Incorrect but corrected_label equals" in msg
    assert f"{path}:{line['item-4']}: corrected_label, corrected_rationale, corrected_techniques or comment given without a verdict" in msg
    assert f"{path}:{line['item-5']}: corrected_rationale with verdict Acceptable" in msg
    assert f"{path}:{line['item-6']}: the item has no automated label" in msg
    assert "unknown item 'item-99'" in msg and "bad corrected_label 'maybe'" in msg and "already judged" in msg
    assert "item-0" not in load_verdicts(annotated)  # nothing half-imported
    assert not (annotated / "reviews" / "verdicts.jsonl").exists()


def test_import_round_trip_and_build_resolution(annotated, tmp_path):
    path = sheet_with(
        annotated,
        tmp_path,
        {
            "item-0": {"verdict": "Acceptable"},
            "item-2": {"verdict": "Incorrect", "corrected_label": "biased", "comment": "loaded photo", "corrected_rationale": "The photo stages a crowd."},
            "item-4": {"verdict": "needs_improvement", "comment": "weak rationale"},
            "item-6": {"verdict": "Acceptable", "corrected_label": "Not Biased"},
        },
    )
    result = import_verdicts(ImportConfig(workdir=annotated, files=[path]))
    assert (result["imported"], result["skipped"]) == (4, 3)
    assert load_verdicts(annotated)["item-2"][0].corrected_rationale == "The photo stages a crowd."
    verdicts = load_verdicts(annotated)
    assert resolve_review(verdicts["item-2"], "not_biased") == ("incorrect", "biased")
    assert resolve_review(verdicts["item-6"], None) == ("acceptable", "not_biased")
    assert resolve_review(verdicts["item-4"], "biased") == ("needs_improvement", "biased")
    assert verdicts["item-2"][0].comment == "loaded photo"
    lines = (annotated / "reviews" / "verdicts.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["sheet"] == "reviewer_1.csv" and len(lines) == 4
    # importing a second reviewer appends; the first reviewer's verdicts stay
    path2 = sheet_with(annotated, tmp_path, {"item-0": {"verdict": "Incorrect", "corrected_label": "not biased"}}, reviewer="reviewer_2")
    import_verdicts(ImportConfig(workdir=annotated, files=[path2]))
    assert {v.reviewer for v in load_verdicts(annotated)["item-0"]} == {"reviewer_1", "reviewer_2"}


def test_stats(annotated, tmp_path):
    # automated multimodal: items 0,1,4 biased; 2,3,5 not biased; 6 tie
    r1 = sheet_with(
        annotated,
        tmp_path,
        {
            "item-0": {"verdict": "Acceptable"},
            "item-1": {"verdict": "Incorrect", "corrected_label": "not biased"},
            "item-2": {"verdict": "Acceptable"},
            "item-3": {"verdict": "Acceptable"},
            "item-6": {"verdict": "Acceptable", "corrected_label": "biased"},
        },
    )
    r2 = sheet_with(
        annotated,
        tmp_path,
        {
            "item-0": {"verdict": "Acceptable"},
            "item-1": {"verdict": "Acceptable"},
            "item-2": {"verdict": "Needs Improvement"},
            "item-3": {"verdict": "Incorrect", "corrected_label": "biased"},
        },
        reviewer="reviewer_2",
    )
    import_verdicts(ImportConfig(workdir=annotated, files=[r1, r2]))
    stats = review_stats(StatsConfig(workdir=annotated))
    from sklearn.metrics import cohen_kappa_score

    # resolved labels: item-1 tie between incorrect (r1) and acceptable (r2) -> incorrect wins, corrected not biased;
    # item-3 the same -> biased. Paired items: 0,1,2,3 (6 has no automated label).
    auto = ["biased", "biased", "not_biased", "not_biased"]
    reviewed = ["biased", "not_biased", "not_biased", "biased"]
    assert stats["kappa_items"] == 4
    assert stats["cohen_kappa"] == pytest.approx(cohen_kappa_score(auto, reviewed))
    import krippendorff
    import numpy as np

    # overlap items 0..3 judged by both; each reviewer's label
    data = np.array([[1, 0, 0, 0], [1, 1, 0, 1]], dtype=float)
    assert stats["alpha_items"] == 4
    assert stats["krippendorff_alpha"] == pytest.approx(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))
    assert stats["verdict_counts"] == {"acceptable": 6, "needs_improvement": 1, "incorrect": 2}
    assert stats["prompts"]["multimodal"]["tie_rate"] == pytest.approx(1 / 7)
    # a and b agree on 0-5 with the automated label; item-1/3 are overruled by review; item-6 settled as biased (a right)
    assert stats["annotator_agreement"]["multimodal"] == {"a": pytest.approx(5 / 7), "b": pytest.approx(4 / 7)}
    assert (annotated / "reviews" / "stats.png").stat().st_size > 1000
    assert json.loads((annotated / "reviews" / "stats.json").read_text())["kappa_items"] == 4


def test_cli_round_trip(annotated, tmp_path, capsys):
    from vilbias.cli import main

    assert main(["review", "export", "--workdir", str(annotated), "--output", str(tmp_path / "s"), "--reviewers", "2", "--overlap", "2"]) == 0
    path = tmp_path / "s" / "sheet_reviewer_1.csv"
    assert main(["review", "export", "--config", str(tmp_path / "s" / "review_export_config.yaml"),
                 "--out", str(tmp_path / "again")]) == 0  # the saved options, with the old spelling of --output
    assert read(tmp_path / "again" / "sheet_reviewer_1.csv") == read(path)
    rows = read(path)
    rows[0]["verdict"] = "Nope"
    write(path, rows)
    assert main(["review", "import", "--workdir", str(annotated), str(path)]) == 2
    assert "bad verdict 'Nope'" in capsys.readouterr().err
    rows[0]["verdict"] = "Acceptable"
    rows[0]["corrected_label"] = "biased" if not rows[0]["multimodal_label"] else ""
    write(path, rows)
    assert main(["review", "import", "--workdir", str(annotated), str(path)]) == 0
    assert main(["review", "stats", "--workdir", str(annotated), "--no-plot"]) == 0
    assert "Cohen's kappa" in capsys.readouterr().out


def V(reviewer, verdict, label=None, rationale="", comment=""):
    return Verdict("i", reviewer, verdict, label, comment, rationale)


def test_every_verdict_reaches_the_row():
    B, N = "biased", "not_biased"
    # Needs Improvement with a corrected rationale: it replaces the annotators' rationale
    o = review_outcome([V("r1", "needs_improvement", rationale="Cites the loaded verbs.", comment="thin")], B)
    assert (o.review, o.label, o.corrected_rationale, o.comments, o.reviewers) == ("needs_improvement", B, "Cites the loaded verbs.", ["thin"], 1)
    assert settle_rationale(o, B, "annotators' reason") == ("Cites the loaded verbs.", None)
    # ... without one: the annotators' rationale stays, flagged
    o = review_outcome([V("r1", "needs_improvement"), V("r2", "acceptable", comment="fine")], B)
    assert settle_rationale(o, B, "annotators' reason") == ("annotators' reason", RATIONALE_NOT_CORRECTED)
    assert (o.comments, o.reviewers) == (["fine"], 2)
    # an overturned label uses the reviewer's rationale for it ...
    o = review_outcome([V("r1", "incorrect", N, "Both sides quoted."), V("r2", "incorrect", N)], B)
    assert settle_rationale(o, B, "argues biased") == ("Both sides quoted.", None)
    # ... never a rationale written for the other label, from the annotators or a reviewer
    o = review_outcome([V("r1", "incorrect", N), V("r2", "incorrect", N), V("r3", "acceptable", rationale="argues biased")], B)
    assert o.label == N and o.corrected_rationale is None
    assert settle_rationale(o, B, "argues biased") == ("", RATIONALE_MISSING)
    # a settled tie takes the rationale of a reviewer who gave the winning label
    o = review_outcome([V("r1", "acceptable", B, "Loaded headline."), V("r2", "acceptable", B)], None)
    assert settle_rationale(o, None, "") == ("Loaded headline.", None)
    assert settle_rationale(review_outcome([], B), B, "r") == ("r", None) and review_outcome([], B).reviewers == 0
