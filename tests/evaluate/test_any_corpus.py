"""``vilbias evaluate`` scores any corpus vilbias builds: a sentence corpus with no extra flag (the
label column from the corpus's own features), a tiny corpus's missing split in one line naming the
flag, and a model scored on labels it made itself flagged on the report's first line."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.fakes.corpus import make_workdir
from vilbias.corpus.config import BuildConfig
from vilbias.corpus.pipeline import build
from vilbias.evaluate.config import EvaluateConfig
from vilbias.evaluate.data import read_split
from vilbias.evaluate.runner import evaluate
from vilbias.models.catalogue import ClassifierModel, shipped_sentence_model

SENTENCES = [
    ("The senator's reckless, disastrous scheme will wreck the economy for everyone.", "Biased"),
    ("Radical activists are once again trying to destroy our way of life.", "Biased"),
    ("The outrageous decision is a slap in the face to hardworking families.", "Biased"),
    ("Critics slammed the shameful cover-up as a betrayal of voters.", "Biased"),
    ("The council met on Tuesday to discuss next year's budget.", "Non-biased"),
    ("The report was published by the statistics office in March.", "Non-biased"),
    ("The company said it would open two new offices this year.", "Non-biased"),
    ("Officials said the bridge will reopen after repairs in June.", "Non-biased"),
] * 3


@pytest.fixture(scope="module")
def sentence_corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("sentences")
    lines = ["text;news_link;outlet;topic;type;label_bias;label_opinion;biased_words"]
    lines += [f"{text} ({i});https://news.example/{i};Outlet;t;center;{label};x;[]" for i, (text, label) in enumerate(SENTENCES)]
    (root / "s.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    build(BuildConfig(sentences=root / "s.csv", output=root / "corpus"))
    return root / "corpus"


def test_a_sentence_corpus_is_read_with_its_own_label_column(sentence_corpus):
    read = read_split(str(sentence_corpus), "default", "train")
    assert read.kind == "sentences" and read.label_column == "label"
    item = read.items[0]
    # one sentence a row, read whole (as a headline: never split into sentences)
    assert item.headline.endswith(")") and item.article_text == ""
    assert not any(read.label_annotators.values())  # expert labels: no annotator made them
    with pytest.raises(ValueError, match=r"has no 'multimodal_label' column; its label column is 'label': drop --label-column"):
        read_split(str(sentence_corpus), "default", "train", label_column="multimodal_label")


def test_the_shipped_model_scores_a_sentence_corpus_with_no_extra_flag(sentence_corpus, tmp_path):
    # the train split: the most rows of these (the model never saw them)
    cfg = EvaluateConfig(dataset=str(sentence_corpus), model=str(shipped_sentence_model()), split="train", output=tmp_path / "run")
    results = evaluate(cfg)
    assert results["config"]["label_column"] == "label"
    [record] = results["evaluations"]
    assert record["closed"]["n"] == json.loads((sentence_corpus / "build_report.json").read_text())["configs"]["default"]["train"]
    # these sentences are plainly loaded or plainly neutral: the model tells them apart
    assert record["closed"]["f1_macro"] >= 0.75 and not record["degenerate"]
    assert not results["warnings"] or "circular" not in results["warnings"][0]


def test_the_sft_view_and_a_missing_split_name_the_flag_that_fixes_them(sample_dataset_dir, tmp_path):
    with pytest.raises(ValueError, match=r"holds conversations \(the sft view\): evaluate the default or a fold_K config with --dataset-config"):
        read_split(str(sample_dataset_dir), "sft", "test")
    work = make_workdir(tmp_path / "work", 3, seed=3)
    build(BuildConfig(workdir=work, output=tmp_path / "tiny"))
    with pytest.raises(ValueError) as e:
        read_split(str(tmp_path / "tiny"), "default", "test")
    message = str(e.value)
    assert message.startswith(f"{tmp_path / 'tiny'} [default] has no test split (it has train)")
    assert "--split" in message and "--dataset-config fold_K" in message and "\n" not in message


def _checkpoint_folder(path, marker: str):
    path.mkdir()
    (path / "config.json").write_text(json.dumps({"model_type": "scripted", "marker": marker}), encoding="utf-8")
    return path


def test_a_model_scored_on_labels_it_made_is_flagged_on_the_report_s_first_line(tmp_path):
    work = make_workdir(tmp_path / "work", 40, seed=4)
    annotator = _checkpoint_folder(tmp_path / "annotator", "a")
    db = sqlite3.connect(work / "annotations.sqlite")
    with db:
        db.execute("UPDATE calls SET model=? WHERE annotator='ann_a'", (str(annotator),))
    out = tmp_path / "corpus"
    report = build(BuildConfig(workdir=work, output=out))
    assert report["source"]["annotation"]["annotator_models"]["ann_a"]["model"] == str(annotator)
    constant = ClassifierModel(lambda items: [i.label for i in items], name="scripted")

    moved = tmp_path / "elsewhere"  # the same files under another path: still the same model
    annotator.rename(moved)
    cfg = EvaluateConfig(dataset=str(out), model=str(moved), output=tmp_path / "run")
    results = evaluate(cfg, model=constant)
    assert results["warnings"][0].startswith("circular: ")
    assert "labelled by" in results["warnings"][0] and "ann_a" in results["warnings"][0]
    first = (tmp_path / "run" / "report.md").read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("> **Warning — Circular: ") and "its own labels" in first

    other = _checkpoint_folder(tmp_path / "other", "b")
    results = evaluate(EvaluateConfig(dataset=str(out), model=str(other), output=tmp_path / "run2"), model=constant)
    assert not results["circularity"]
    assert (tmp_path / "run2" / "report.md").read_text(encoding="utf-8").startswith("# Evaluation:")
