"""One split, one truth: a sentence corpus, the model trained on it and ``vilbias evaluate`` read the
same splits; a source's own splits are kept; every card says only what holds."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from datasets import load_dataset

from tests.real_data import shared_data
from vilbias.corpus.config import BuildConfig
from vilbias.corpus.pipeline import build
from vilbias.corpus.release import read_cells
from vilbias.corpus.sentence_datasets import BABE_TERMS, recognise_layout
from vilbias.corpus.sentence_records import read_sentences
from vilbias.corpus.sentences import article_groups, corpus_splits, sentence_splits

REPO = Path(__file__).resolve().parents[2]
LOADED = ["reckless", "disgraceful", "radical", "corrupt", "shameful"]


def _sentence(i: int, biased: bool) -> str:
    return (f"The {LOADED[i % 5]} plan number {i} will ruin the town, critics said." if biased
            else f"The council published budget item {i} on Tuesday.")


def articles(n_articles: int = 40, per_article: int = 3, seed: int = 0) -> list[dict]:
    """Rows of a BABE-like source: several labelled sentences per article, one text shared by two articles."""
    rng = random.Random(seed)
    rows = []
    for a in range(n_articles):
        for s in range(per_article):
            i = a * per_article + s
            biased = rng.random() < 0.5
            rows.append({"text": _sentence(i, biased), "news_link": f"https://news.example/{a}", "outlet": f"O{a % 4}",
                         "topic": "t", "type": "left", "label": int(biased), "label_opinion": "", "biased_words": "[]",
                         "uuid": f"id{i}"})
    rows.append(dict(rows[0], news_link="https://news.example/shared", uuid="dup"))  # a wire sentence in a second article
    return rows


def hub_layout(folder: Path, splits: dict[str, list[dict]]) -> Path:
    """A dataset folder as the Hub stores one (Parquet under data/, README with configs): BABE's
    Hub release (v2: train and test; v0: train only) or MBIB (its splits are its tasks)."""
    (folder / "data").mkdir(parents=True)
    files = []
    for split, rows in splits.items():
        pq.write_table(pa.Table.from_pylist(rows), folder / "data" / f"{split}-00000-of-00001.parquet")
        files.append({"split": split, "path": f"data/{split}-*"})
    card = {"configs": [{"config_name": "default", "data_files": files}]}
    (folder / "README.md").write_text(f"---\n{yaml.safe_dump(card)}---\n", encoding="utf-8")
    return folder


def _groups_whole(folder: Path) -> None:
    """Every group of the corpus (article link, shared text) sits in one split and one fold."""
    rows = [r | {"label": r["label"]} for r in load_dataset(str(folder), "default", split="train+validation+test")]
    groups = article_groups(rows)
    cells = read_cells(folder)
    by_group: dict[str, set] = {}
    for uid, group in groups.items():
        by_group.setdefault(group, set()).add(cells[uid])
    assert all(len(c) == 1 for c in by_group.values())


def test_a_fresh_sentence_corpus_keeps_articles_whole_and_is_what_training_reads(tmp_path):
    source = hub_layout(tmp_path / "src", {"train": articles()})
    out = tmp_path / "corpus"
    report = build(BuildConfig(sentences=source, output=out))
    _groups_whole(out)
    assert report["source"]["articles_straddling"] == {"splits": 0, "folds": 0}
    assert report["source"]["splits_from"] == "vilbias"  # one split only: not the source's own
    # one computation: the splits a fresh build stores are those sentence_splits computes
    rows, _, _ = read_sentences(source)
    assert corpus_splits(out) == sentence_splits(rows)
    assert corpus_splits(out)["default"]["test"] and corpus_splits(out)["default"]["validation"]


def test_babe_v2_keeps_its_own_test_split_and_the_card_says_whose(tmp_path):
    rows = articles(60)
    train, test = rows[:150], rows[150:]
    out = tmp_path / "corpus"
    report = build(BuildConfig(sentences=hub_layout(tmp_path / "babe-v2", {"train": train, "test": test}), output=out))
    cells = read_cells(out)
    official_test = {(r["news_link"], r["text"]) for r in test}
    stored = {(r["news_link"], r["text"]): r["unique_id"] for r in load_dataset(str(out), "default", split="train+validation+test")}
    assert {cells[stored[k]].split for k in official_test} == {"test"}
    assert all(cells[v].split != "test" for k, v in stored.items() if k not in official_test)
    assert report["source"]["splits_from"] == "source" and report["source"]["official_splits"] == ["train", "test"]
    assert report["source"]["layout"] == "babe"  # BABE's own columns
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "The test split is the source's own (train, test as published" in card and BABE_TERMS in card


def test_mbib_is_built_one_task_at_a_time(tmp_path):
    task = [{"text": _sentence(i, i % 2 == 0), "label": i % 2, "dataset_id": 10} for i in range(40)]
    source = hub_layout(tmp_path / "mbib-base", {"linguistic_bias": task, "cognitive_bias": task[:20]})
    with pytest.raises(ValueError, match="--source-split NAME"):
        build(BuildConfig(sentences=source, output=tmp_path / "refused"))
    report = build(BuildConfig(sentences=source, output=tmp_path / "mbib", source_split="linguistic_bias"))
    assert report["rows"] == 40 and report["source"]["splits_from"] == "vilbias" and report["source"]["name"] == "mbib-base (linguistic_bias)"
    # credited by name only: the Hub id says MBIB, a folder of text and label columns says nothing
    assert recognise_layout("mediabiasgroup/mbib-base", ["text", "label", "dataset_id"]) == "mbib"
    assert recognise_layout("mediabiasgroup/BABE@v2", ["text", "label"]) == "babe"
    assert report["source"]["layout"] is None
    card = (tmp_path / "mbib" / "README.md").read_text(encoding="utf-8")
    assert "credits nobody" in card and "spinde" not in card.lower() and "license: unknown" in card


def test_other_column_names_map_with_column(tmp_path):
    source = tmp_path / "mine.csv"
    source.write_text("sentence_text,bias,article\n" + "".join(
        f"\"{_sentence(i, i % 2 == 0)}\",{i % 2},https://x.example/{i // 2}\n" for i in range(30)), encoding="utf-8")
    with pytest.raises(ValueError, match="no text or sentence column.*--column text=COLUMN"):
        build(BuildConfig(sentences=source, output=tmp_path / "refused"))
    out = tmp_path / "mine"
    report = build(BuildConfig(sentences=source, output=out, columns=["text=sentence_text", "label=bias", "news_link=article"]))
    assert report["rows"] == 30 and report["source"]["name"] == "mine.csv" and report["source"]["layout"] is None
    _groups_whole(out)
    with pytest.raises(ValueError, match="has no column 'nope'"):
        build(BuildConfig(sentences=source, output=tmp_path / "bad", columns=["text=nope", "label=bias"]))
    # nothing of this machine's paths in what is uploaded with the corpus
    assert str(tmp_path) not in (out / "build_report.json").read_text() + (out / "README.md").read_text()


def test_an_older_build_keeps_its_rows_and_its_card_counts_the_articles_it_split(tmp_path):
    from vilbias.corpus.sentences import SentenceSource, _card_body
    from vilbias.corpus.splits import Cell

    linked = hub_layout(tmp_path / "babe", {"train": articles(40)})
    rows = read_sentences(linked)[0]
    # the cells an older build gave (it kept only identical texts together): sentences of one article apart
    pinned = {r["unique_id"]: Cell("test" if i % 3 == 0 else "train", i % 5) for i, r in enumerate(rows)}
    plan = SentenceSource(linked).plan(tmp_path / "plan", pinned)
    assert {uid: Cell(p.split, p.fold) for uid, p in plan.rows.items()} == pinned  # rows never move
    straddle = plan.details["articles_straddling"]
    assert straddle["splits"] > 0 and straddle["folds"] > 0
    card = _card_body("babe", plan.details, {"biased": 1, "not_biased": 1}, [], "corpus")
    assert f"{straddle['splits']} articles straddle two splits and {straddle['folds']} two folds" in card and "--output NEW" in card


def _no_runtime_evidence(monkeypatch) -> None:
    """``train sentence`` without its runtime evidence (each faster path exported, quantised and
    scored: most of a tiny training's time; checked in tests/training_classifier/test_default_model.py):
    the model loads on its exact float32 path, the one its card's figures were computed on."""
    monkeypatch.setattr("vilbias.training.sentence.runtime_evidence", lambda *args, **kwargs: None)


def test_a_sentence_model_trained_on_a_corpus_is_evaluated_on_it_with_its_card_s_figures(tmp_path, monkeypatch):
    _no_runtime_evidence(monkeypatch)
    from vilbias.training.sentence import train_sentence
    from vilbias.training.sentence_config import SentenceConfig

    from vilbias.evaluate.config import EvaluateConfig
    from vilbias.evaluate.runner import evaluate

    corpus = tmp_path / "corpus"
    build(BuildConfig(sentences=hub_layout(tmp_path / "babe-v2", {"train": articles(50)[:120], "test": articles(50)[120:]}), output=corpus))
    model = tmp_path / "model"
    metrics = train_sentence(SentenceConfig(dataset=str(corpus), output_dir=str(model), num_train_epochs=1, threads=1))
    record = json.loads((model / "training_data.json").read_text())
    assert record["dataset"] == "corpus" and set((model / "training_ids.txt").read_text().split()) == set(corpus_splits(corpus)["default"]["train"])
    assert metrics["command"] == "vilbias train sentence --dataset corpus --num-train-epochs 1 --output model --threads 1"
    results = evaluate(EvaluateConfig(dataset=str(corpus), model=str(model), output=tmp_path / "results"))
    protocol = results["evaluations"][0]["sentence_protocol"]  # nothing refused: the test split is the model's own
    assert protocol["f1_macro"] == pytest.approx(metrics["test"]["f1_macro"], abs=1e-9)
    assert protocol["ece"] == pytest.approx(metrics["test"]["ece"], abs=5e-4)
    assert protocol["article"]["f1_macro"] == pytest.approx(metrics["article_rule_on_test_links"]["f1_macro"], abs=1e-9)


def test_evaluate_on_a_file_says_how_to_build_it_first(tmp_path):
    from vilbias.evaluate.data import check_dataset

    (tmp_path / "babe.csv").write_text("text,label\na,1\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"build it first with `vilbias build --sentences .*babe.csv --output babe`"):
        check_dataset(str(tmp_path / "babe.csv"))


def test_babe_s_terms_are_stated_once_and_alike_everywhere():
    shipped = (REPO / "training" / "default_model" / "README.md").read_text(encoding="utf-8")
    docs = (REPO / "docs" / "classifiers.md").read_text(encoding="utf-8")
    assert BABE_TERMS in shipped
    # the docs quote them wrapped: the same words
    assert BABE_TERMS in " ".join(" ".join(line.removeprefix(">").split()) for line in docs.splitlines())


def test_the_shipped_card_is_what_the_hub_reads():
    from huggingface_hub import ModelCard, metadata_load

    path = REPO / "training" / "default_model" / "README.md"
    meta = metadata_load(path)
    card = ModelCard.load(path)
    assert meta["datasets"] == ["mediabiasgroup/BABE"] and meta["library_name"] and meta["pipeline_tag"] == "text-classification"
    results = card.data.eval_results
    assert {r.dataset_type for r in results} == {"mediabiasgroup/BABE"}
    names = [r.metric_name for r in results]
    assert any("article macro-F1" in n for n in names) and any("sentence macro-F1" in n for n in names)
    assert len(re.findall(r"^## Evaluation$", card.text, re.M)) == 1 and "```bibtex" in card.text
    assert not re.search(r"/(work|home|tmp|Users)/", path.read_text(encoding="utf-8"))
    metrics = json.loads((path.parent / "metrics.json").read_text())
    assert f"{metrics['corpus']['rows_read']:,} rows read − 1 `No agreement` (left out) − 1 exact repeat" in card.text
    assert f"= {metrics['corpus']['rows_kept']:,} sentences" in card.text


@pytest.mark.real_data
def test_the_shipped_card_s_figures_are_one_evaluate_away(tmp_path, capsys, cpu_with):
    """vilbias build --sentences SG2 + vilbias evaluate on the shipped model: the card's figures,
    on a CPU with VNNI and no AMX too, where the model alone would run int8 (its test ECE 0.034)."""
    from vilbias.cli import main

    cpu_with("avx2", "avx512f", "avx512_vnni")

    sg2 = shared_data("babe", "final_labels_SG2_public.csv")
    folder = REPO / "training" / "default_model"
    metrics = json.loads((folder / "metrics.json").read_text())
    assert main(["build", "--sentences", str(sg2), "--output", str(tmp_path / "babe")]) == 0
    assert main(["evaluate", "--dataset", str(tmp_path / "babe"), "--model", str(folder), "--output", str(tmp_path / "ev")]) == 0
    results = json.loads((tmp_path / "ev" / "results.json").read_text())
    protocol = results["evaluations"][0]["sentence_protocol"]
    card = (folder / "README.md").read_text(encoding="utf-8")
    for got, want in ((protocol["f1_macro"], metrics["test"]["f1_macro"]), (protocol["ece"], metrics["test"]["ece"]),
                      (protocol["article"]["f1_macro"], metrics["article_rule_on_test_links"]["f1_macro"])):
        assert f"{got:.3f}" == f"{want:.3f}" and f"{want:.3f}" in card  # to the last printed digit
    assert protocol["sentences"] == metrics["test"]["n"] and protocol["article"]["groups"] == metrics["article_rule_on_test_links"]["groups"]
    assert "sentence-level protocol" in capsys.readouterr().out
    assert results["model"]["runtime"].startswith("float32 on ONNX Runtime: asked for")


def test_a_file_too_small_for_a_validation_split_trains_without_one_and_says_so(tmp_path, capsys, monkeypatch):
    _no_runtime_evidence(monkeypatch)
    from vilbias.training.cli import main

    def tiny(n: int) -> Path:
        path = tmp_path / f"tiny{n}.csv"
        path.write_text("text,label\n" + "".join(f"\"{_sentence(i, i < 3)}\",{int(i < 3)}\n" for i in range(n)), encoding="utf-8")
        return path

    # the smallest such file whose split policy fills test but not validation (few of one label)
    source = next(tiny(n) for n in range(8, 30)
                  if (lambda d: d["test"] and not d["validation"])(sentence_splits(read_sentences(tiny(n))[0])["default"]))
    assert main(["sentence", "--sentences", str(source), "--num-train-epochs", "1", "--output", str(tmp_path / "model")]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("warning: ") and "no validation split" in last and "uncalibrated" in last
    metrics = json.loads((tmp_path / "model" / "metrics.json").read_text())
    assert metrics["validation"]["rows"] == 0 and metrics["validation"]["temperature"] == 1.0
    card = (tmp_path / "model" / "README.md").read_text(encoding="utf-8")
    assert card.index("> **Warning:") < card.index("## Data and its terms") and "There was no validation split" in card
    # too few for a test split: one line, nothing written
    (tmp_path / "six.csv").write_text("text,label\n" + "".join(f"\"{_sentence(i, i % 2 == 0)}\",{i % 2}\n" for i in range(6)))
    with pytest.raises(ValueError, match="6 sentences, 6 in train and 0 in test"):
        main(["sentence", "--sentences", str(tmp_path / "six.csv"), "--output", str(tmp_path / "six")])
