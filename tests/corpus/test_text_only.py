"""A text-only annotation builds a corpus: its rows say their label came from the text prompt (the
card says plainly that the labels did not see the images), and a later run with vision annotators
replaces those labels in place, each row keeping its split and fold."""

from __future__ import annotations

import pyarrow.parquet as pq

from tests.annotate.conftest import StubBackend, answers, stub_spec
from tests.fakes.workdirs import make_workdir
from vilbias.annotate import AnnotateConfig, annotate
from vilbias.corpus import BuildConfig, build
from vilbias.corpus.release import read_cells
from vilbias.review.verdicts import VERDICTS_FILE
from vilbias.workdir import REVIEWS, append_jsonl


def rows(out) -> dict[str, dict]:
    table = pq.ParquetDataset(sorted((out / "data").glob("*.parquet"))).read(
        columns=["unique_id", "multimodal_label", "label_source", "votes", "text_votes"])
    return {r["unique_id"]: r for r in table.to_pylist()}


def test_text_votes_build_then_vision_votes_replace_them_in_place(tmp_path):
    workdir = make_workdir(tmp_path / "w", n=20)
    text_only = StubBackend(answers("biased"))
    annotate(AnnotateConfig(workdir=workdir, annotator_specs=[stub_spec("reader")], backends={"reader": text_only}, samples=1,
                            progress=False))
    out = tmp_path / "out"
    report = build(BuildConfig(workdir=workdir, output=out))
    first = rows(out)
    assert len(first) == 20 and report["rows"] == 20
    assert {r["label_source"] for r in first.values()} == {"text"}
    assert all(r["multimodal_label"] == 1 and r["votes"] == [] and len(r["text_votes"]) == 1 for r in first.values())
    card = (out / "README.md").read_text()
    assert "The labels did not see the images." in card and "20 rows `text`" in card
    cells = read_cells(out)

    vision = StubBackend(answers("not_biased"))
    annotate(AnnotateConfig(workdir=workdir, annotator_specs=[stub_spec("viewer", vision=True)], backends={"viewer": vision},
                            samples=1, progress=False))
    build(BuildConfig(workdir=workdir, output=out))
    second = rows(out)
    assert set(second) == set(first)
    assert {r["label_source"] for r in second.values()} == {"multimodal"}
    assert all(r["multimodal_label"] == 0 and len(r["votes"]) == 1 for r in second.values())
    assert read_cells(out) == cells  # the labels changed in place: every row kept its split and fold
    card = (out / "README.md").read_text()
    assert "did not see the images" not in card and "20 rows `multimodal`" in card

    # a reviewer overturns one label: that row's label is the review's
    (workdir / REVIEWS).mkdir(exist_ok=True)
    append_jsonl(workdir / REVIEWS / VERDICTS_FILE, {"unique_id": "item-0", "reviewer": "ann", "verdict": "incorrect",
                                                       "corrected_label": "biased", "corrected_rationale": "It says “Body of article 0”."})
    build(BuildConfig(workdir=workdir, output=out))
    third = rows(out)
    assert (third["item-0"]["label_source"], third["item-0"]["multimodal_label"]) == ("review", 1)
    assert {r["label_source"] for u, r in third.items() if u != "item-0"} == {"multimodal"}
