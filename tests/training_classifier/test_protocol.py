"""Evaluation protocol of the classifier baselines: recipes, the group-aware validation
carve-out, nested training fractions, provenance in checkpoints and cards, distant supervision."""

from __future__ import annotations

import json

import pytest
from vilbias.training.classifier import (
    ClassifierConfig,
    _current_spellings,
    parse_config,
    train_classifier,
)
from vilbias.training.classifier_config import read_recipe
from vilbias.training.classifier_data import group_ids, load_splits, stratified_group_prefix

from vilbias.provenance import read_training_data

FAST = {"per_device_train_batch_size": 8, "num_train_epochs": 1, "learning_rate": 5e-3, "patience": 0}


# ---------------------------------------------------------------- recipes


def test_recipe_values_are_defaults_and_flags_override_them(tmp_path):
    babe = read_recipe("babe")
    assert babe["learning_rate"] == 5e-5 and babe["metric_for_best_model"] == "loss" and babe["patience"] == 1
    parse = lambda *flags: parse_config(["--dataset", "d", *flags])  # noqa: E731
    cfg = parse("--recipe", "babe", "--num-train-epochs", "3")
    assert (cfg.learning_rate, cfg.per_device_train_batch_size, cfg.num_train_epochs, cfg.recipe) == (5e-5, 32, 3, "babe")
    assert not cfg.greater_is_better  # early stopping on the validation loss
    # A flag given explicitly wins even when it equals the built-in default.
    assert parse("--recipe", "babe", "--learning-rate", "2e-5").learning_rate == 2e-5
    assert parse("--recipe", "babe", "--weight-decay", "0.01").weight_decay == 0.01
    assert parse().learning_rate == 2e-5 and parse().recipe is None  # no recipe: the paper's defaults
    minilm = parse("--recipe", "babe-minilm")
    assert minilm.architecture == "fusion" and minilm.modality == "text" and minilm.max_length == 128
    # --config FILE.yaml over the recipe, flags over both.
    options = tmp_path / "options.yaml"
    options.write_text("learning_rate: 1.0e-4\nnum_train_epochs: 4\n", encoding="utf-8")
    cfg = parse("--recipe", "babe", "--config", str(options), "--num-train-epochs", "2")
    assert (cfg.learning_rate, cfg.num_train_epochs, cfg.patience) == (1e-4, 2, 1)


def test_paper_defaults_are_training_arguments_fields():
    from transformers import TrainingArguments

    cfg = ClassifierConfig(dataset="d")
    assert isinstance(cfg, TrainingArguments)
    assert (cfg.per_device_train_batch_size, cfg.num_train_epochs, cfg.learning_rate, cfg.weight_decay, cfg.patience, cfg.seed) == (
        32, 15, 2e-5, 0.01, 5, 0)
    assert (cfg.lr_scheduler_type, cfg.metric_for_best_model, cfg.greater_is_better, cfg.modality) == ("linear", "f1_binary", True, "text")


def test_old_spellings_still_work_with_a_deprecation_line(capsys):
    cfg = parse_config(_current_spellings(
        ["--dataset", "d", "--config", "fold_2", "--batch-size", "8", "--epochs", "2", "--lr-scheduler", "constant",
         "--warmup-ratio", "0.1", "--output-dir", "out/x", "--revision", "v1.0.0", "--early-stopping-metric", "loss",
         "--no-group-by-length"], "vilbias train classifier"))
    assert (cfg.dataset_config, cfg.per_device_train_batch_size, cfg.num_train_epochs, cfg.lr_scheduler_type, cfg.warmup_steps,
            cfg.output_dir, cfg.dataset_revision, cfg.metric_for_best_model, cfg.train_sampling_strategy) == (
        "fold_2", 8, 2, "constant", 0.1, "out/x", "v1.0.0", "loss", "random")
    err = capsys.readouterr().err
    for old, new in (("--config fold_2", "--dataset-config"), ("--batch-size", "--per-device-train-batch-size"),
                     ("--output-dir", "--output"), ("--revision", "--dataset-revision"), ("--no-group-by-length", "--train-sampling-strategy")):
        assert f"{old} " in err and f"use {new}" in err
    assert parse_config(["--dataset", "d", "--output", "out/y"]).output_dir == "out/y"


def test_help_shows_the_current_spellings_only(capsys):
    with pytest.raises(SystemExit):
        parse_config(["--help"])
    out = capsys.readouterr().out
    assert "--output " in out and "--dataset-config" in out and "--per-device-train-batch-size" in out
    assert "--output-dir" not in out and "--batch-size" not in out and "--early-stopping-metric" not in out


def test_a_missing_local_dataset_is_one_line_before_anything_loads(tmp_path, capsys):
    from vilbias.training.cli import main

    assert main(["classifier", "--dataset", "./BiasCorpsu"], "vilbias train") == 2
    err = capsys.readouterr().err
    assert err.startswith("vilbias train classifier: error: --dataset ./BiasCorpsu was taken for a local folder and does not exist")
    assert err.count("\n") == 1
    with pytest.raises(FileNotFoundError, match="taken for a local folder"):
        ClassifierConfig(dataset=str(tmp_path / "nope"))


def test_recipe_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="babe-minilm"):
        read_recipe("no-such-recipe")
    bad = tmp_path / "bad.yaml"
    bad.write_text("learning_rate: 1.0e-4\nlearnig_rate: 2\n", encoding="utf-8")
    with pytest.raises(ValueError, match="learnig_rate"):
        ClassifierConfig.from_recipe(bad, dataset="d")
    ok = tmp_path / "ok.yaml"
    ok.write_text("learning_rate: 1.0e-4\nnum_train_epochs: 2\n", encoding="utf-8")
    assert ClassifierConfig.from_recipe(ok, dataset="d", num_train_epochs=5).learning_rate == 1e-4


# ---------------------------------------------------------------- validation carve-out and fractions


def test_stratified_group_prefix_keeps_groups_whole_and_nests():
    keys = [(f"g{i // 4}",) for i in range(200)]  # groups of 4 rows
    labels = [1 if i % 10 < 3 else 0 for i in range(200)]  # 30% biased
    groups = group_ids(keys)
    small, large = (set(stratified_group_prefix(labels, groups, share, 7)) for share in (0.1, 0.5))
    assert small < large  # nested
    for chosen in (small, large):
        assert all((i in chosen) == (j in chosen) for i in range(200) for j in range(200) if groups[i] == groups[j])
    assert abs(len(small) - 20) <= 4
    # A different seed draws another slice.
    assert set(stratified_group_prefix(labels, groups, 0.1, 8)) != small


def test_group_ids_join_rows_sharing_any_key():
    assert group_ids([("a",), ("b",), ("a", "c"), ("c",), ("d",), ("b",)]) == [0, 1, 0, 0, 4, 1]


def _sentence_corpus(tmp_path, n=120):
    from tests.training_classifier.conftest import BABE_HEADER
    from vilbias.corpus.pipeline import build_sentences

    lines = [BABE_HEADER]
    for i in range(n):
        label = "Biased" if i % 3 == 0 else "Non-biased"
        # Every sentence twice, once shouting: two links, one normalised text, one group.
        lines.append(f"Sentence number {i} about things;https://x/{i};o;t;left;{label};;[]")
        lines.append(f"SENTENCE  number {i} ABOUT things;https://y/{i};o;t;left;{label};;[]")
    (tmp_path / "s.csv").write_bytes(("\n".join(lines) + "\n").encode("utf-8-sig"))
    build_sentences(tmp_path / "s.csv", tmp_path / "corpus")
    return tmp_path / "corpus"


def test_fold_validation_is_stratified_and_keeps_same_text_together(tmp_path):
    import re

    corpus = _sentence_corpus(tmp_path)
    splits, label = load_splits(str(corpus), "fold_2", revision=None, label=None, seed=0)
    norm = lambda t: re.sub(r"\s+", " ", t.lower())  # noqa: E731
    train_texts, val_texts = {norm(t) for t in splits["train"]["text"]}, {norm(t) for t in splits["validation"]["text"]}
    assert not train_texts & val_texts and not val_texts & {norm(t) for t in splits["test"]["text"]}
    n_val, n_train = len(splits["validation"]), len(splits["train"])
    assert abs(n_val / (n_val + n_train) - 0.1) < 0.03
    share = lambda split: sum(split[label]) / len(split)  # noqa: E731
    assert abs(share(splits["validation"]) - share(splits["train"])) < 0.05


def test_train_fractions_are_nested_and_scored_on_one_test_split(tmp_path, tiny_bert):
    corpus = _sentence_corpus(tmp_path, n=60)
    cfg = ClassifierConfig(dataset=str(corpus), model=tiny_bert, dataset_config="fold_0", output_dir=tmp_path / "out",
                           train_fractions=[1.0, 0.25, 0.5], **FAST)
    result = train_classifier(cfg)
    rows = [p["train_rows"] for p in result["points"]]
    assert [p["fraction"] for p in result["points"]] == [0.25, 0.5, 1.0] and rows[0] < rows[1] < rows[2]
    ids = [set(read_training_data(tmp_path / "out" / f"fraction_{f:g}").ids) for f in (0.25, 0.5, 1)]
    assert ids[0] < ids[1] < ids[2]
    assert abs(len(ids[0]) / len(ids[2]) - 0.25) < 0.05
    tested = [[json.loads(line)["unique_id"] for line in (tmp_path / "out" / f"fraction_{f:g}" / "predictions.jsonl").open()] for f in (0.25, 1)]
    assert tested[0] == tested[1]
    assert (tmp_path / "out" / "train_fractions.png").stat().st_size > 1000
    assert json.loads((tmp_path / "out" / "train_fractions.json").read_text())["points"][0]["summary"]["f1_macro"]["mean"] >= 0


# ---------------------------------------------------------------- provenance


def test_checkpoint_records_its_training_rows_and_the_card_says_so(tmp_path, babe_csv, tiny_bert):
    from datasets import load_dataset

    from vilbias.corpus.pipeline import build_sentences
    from vilbias.publish.model import ModelCardInfo, render_model_card

    build_sentences(babe_csv, tmp_path / "babe")
    cfg = ClassifierConfig(dataset=str(tmp_path / "babe"), model=tiny_bert, cv=True, output_dir=tmp_path / "out", **FAST)
    train_classifier(cfg)
    for k in range(5):
        fold_dir = tmp_path / "out" / f"fold_{k}"
        record = read_training_data(fold_dir)
        fold = load_dataset(str(tmp_path / "babe"), f"fold_{k}")
        test_ids = set(fold["test"]["unique_id"])
        assert record.config == f"fold_{k}" and record.split == "train" and record.dataset == "babe"
        assert not record.overlap(test_ids)  # never the rows it is scored on
        assert set(record.ids) < set(fold["train"]["unique_id"])  # the fold's train split minus the validation slice
        assert record.rows + record.extra["validation_rows"] == len(fold["train"])
        card = render_model_card(ModelCardInfo.load(fold_dir), "org/m")
        text = str(card)
        assert f"**{record.rows} rows**" in text and record.ids_sha256 in text and "validation rows held out" in text


# ---------------------------------------------------------------- distant supervision


def _distant_csv(tmp_path, sentences):
    from vilbias.training.distant import read_distant

    lines = ["headline,outlet,news_link"]
    for i in range(40):
        outlet = ("breitbart", "reuters", "alternet", "usa-today")[i % 4]
        word = "outrageous radical scheme" if outlet in ("breitbart", "alternet") else "agency reported figures"
        lines.append(f"Headline {i} {word},{outlet},https://h/{i}")
    lines.append(f"{sentences[0]},breitbart,https://h/leak")  # an evaluated sentence: must be left out
    lines.append("Headline from an unrated outlet,some-blog,https://h/x")
    (tmp_path / "distant.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "outlets.yaml").write_text("Breitbart: biased\nalternet: biased\nreuters: not_biased\nusa-today: not_biased\n", encoding="utf-8")
    return read_distant


def test_distant_corpus_reading_and_the_leak_guard(tmp_path):
    from vilbias.training.distant import drop_held_out, read_outlet_labels

    read_distant = _distant_csv(tmp_path, ["The sentence under test"])
    outlets = read_outlet_labels(tmp_path / "outlets.yaml")
    assert outlets == {"breitbart": 1, "alternet": 1, "reuters": 0, "usa-today": 0}
    rows, counts = read_distant(str(tmp_path / "distant.csv"), outlets)
    assert counts["rows_read"] == 42 and counts["unmapped_outlet"] == 1 and len(rows) == 41
    kept, dropped = drop_held_out(rows, ["the sentence  under TEST"], ["https://h/3"])
    assert dropped == 2 and all(r["link"] != "https://h/3" and r["text"] != "The sentence under test" for r in kept)
    labelled = tmp_path / "labelled.csv"
    labelled.write_text("title,label\nA,biased\nB,0\nA,biased\nC,1\nC,not_biased\n", encoding="utf-8")
    rows, counts = read_distant(str(labelled), None)
    assert sorted((r["text"], r["label"]) for r in rows) == [("A", 1), ("B", 0)] and counts["duplicates"] == 1 and counts["conflicting"] == 1
    with pytest.raises(ValueError, match="outlet column with --distant-outlet-labels"):
        read_distant(str(tmp_path / "distant.csv"), None)


def test_distant_pretraining_one_command_and_two(tmp_path, babe_csv, tiny_bert):
    import torch
    from transformers import AutoModel
    from vilbias.training.engine import build_model

    from vilbias.corpus.pipeline import build_sentences
    from vilbias.corpus.sentences import read_sentences

    build_sentences(babe_csv, tmp_path / "babe")
    sentences = [r["text"] for r in read_sentences(babe_csv)[0]]
    _distant_csv(tmp_path, sentences)
    common = dict(dataset=str(tmp_path / "babe"), model=tiny_bert, distant_dataset=str(tmp_path / "distant.csv"),
                  distant_outlet_labels=str(tmp_path / "outlets.yaml"), distant_batch_size=8, **FAST)
    one = train_classifier(ClassifierConfig(dataset_config="fold_0", output_dir=tmp_path / "one", **common))
    record = one["training_data"]["extra"]["distant"]
    assert record["rows"] >= 39 and record["label_counts"]["biased"] > 0
    splits, _ = load_splits(str(tmp_path / "babe"), "fold_0", revision=None, label=None, seed=0)
    held_out = set(splits["validation"]["text"]) | set(splits["test"]["text"])
    assert record["dropped_as_held_out"] == int(sentences[0] in held_out)  # only this fold's held-out rows
    assert "pre-trained on" in json.loads((tmp_path / "one" / "vilbias_card.json").read_text())["summary"]

    two = train_classifier(ClassifierConfig(dataset_config="fold_0", output_dir=tmp_path / "pre", distant_only=True, **common))
    assert two["distant"]["dropped_as_held_out"] == 1  # with --distant-only every row of --dataset is held out
    encoder = AutoModel.from_pretrained(two["encoder"])
    base = AutoModel.from_pretrained(tiny_bert)
    key = "encoder.layer.0.attention.self.query.weight"
    assert not torch.equal(encoder.state_dict()[key], base.state_dict()[key]), "pre-training did not move the encoder"
    cfg = ClassifierConfig(dataset=str(tmp_path / "babe"), model=tiny_bert, init_encoder=two["encoder"], dataset_config="fold_0", output_dir=tmp_path / "ft", **FAST)
    model, _, _ = build_model(cfg, cfg.init_encoder)
    assert torch.equal(model.base_model.state_dict()[key], encoder.state_dict()[key])
    assert train_classifier(cfg)["test"]["n"] == 10


def test_a_model_that_predicts_one_class_says_so_in_the_last_line():
    from vilbias.training.classifier import _single_class_line

    cfg = ClassifierConfig(dataset="d", output_dir="out/fusion")
    test = {"f1_binary": 0.0, "f1_macro": 0.3333}
    line = _single_class_line({"single_class_prediction": "not_biased", "test": test}, cfg)
    assert line.startswith("the model predicts not_biased for every test row") and "out/fusion" in line
    assert _single_class_line({"single_class_prediction": None, "test": test}, cfg) is None
    cv = ClassifierConfig(dataset="d", cv=True)
    assert "in 2 of 5 folds (fold_0, fold_3)" in _single_class_line({"single_class_folds": ["fold_0", "fold_3"]}, cv)
