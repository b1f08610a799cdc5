"""The Space's offline default: the sentence-level model shipped in training/default_model, its
card, ``vilbias train sentence`` on a tiny BABE-format file, and (real-data tier) its quality on
BABE sentences it never saw."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.real_data import shared_data

WEIGHTS_SHA256 = "dadd4711efccdf5d6af34e08b73fe9c65ed7ac9008b8cd305c1e60d82d2f814b"
"""The shipped weights, unchanged since the card's figures were measured on them."""


@pytest.fixture
def no_runtime_evidence(monkeypatch):
    """``train_sentence`` without its last step, the runtime evidence (each faster path exported,
    quantised and scored on the test split: ~5 s a model, most of a tiny training's time), for the
    tests of what changes nothing of it. What ``train_sentence`` writes there is checked once, on
    the model whose graphs hold most (:func:`test_an_ensemble_trains_scores_and_serves_as_one_model`:
    every member); ``runtime_evidence`` on a plain checkpoint in
    ``tests/models/test_sentence_precision.py``."""
    monkeypatch.setattr("vilbias.training.sentence.runtime_evidence", lambda *args, **kwargs: None)


@pytest.fixture(scope="module")
def shipped():
    """The shipped model as any transformers user loads it: ``AutoModel`` after ``import vilbias``."""
    from transformers import AutoModel

    from vilbias.models.catalogue import shipped_sentence_model

    return shipped_sentence_model(), AutoModel.from_pretrained(shipped_sentence_model())


def test_shipped_model_loads_through_auto_model_with_every_weight_in_place(shipped):
    import hashlib

    import torch
    from transformers import AutoModel

    from vilbias.models.sentence_bias import SentenceBiasModel

    folder, model = shipped
    assert hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest() == WEIGHTS_SHA256
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    assert config["model_type"] == "vilbias-sentence-bias" and config["architectures"] == ["SentenceBiasModel"]
    assert isinstance(model, SentenceBiasModel)
    _, info = AutoModel.from_pretrained(folder, output_loading_info=True)
    assert not any(info.values())  # no missing, unexpected or mismatched key
    texts = ["Radical activists rammed through a disastrous, reckless scheme.", "The council approved the budget on Tuesday."]
    assert torch.equal(model.sentence_logits(texts)[0], SentenceBiasModel.from_pretrained(folder).sentence_logits(texts)[0])


def test_shipped_model_is_an_adapter_and_heads_not_a_copy_of_minilm(shipped):
    from safetensors import safe_open

    folder, model = shipped
    assert (folder / "model.safetensors").stat().st_size < 3_000_000  # MiniLM itself is ~90 MB
    with safe_open(str(folder / "model.safetensors"), "pt") as f:
        keys = list(f.keys())
    assert keys and all(k.startswith(("lora.", "word_head.", "sentence_head.")) for k in keys)
    layers = {int(m) for m in re.findall(r"encoder\.layer\.(\d+)\.", " ".join(keys))}
    assert layers == set(model.config.trained_layers)
    assert model.config.encoder == "sentence-transformers/all-MiniLM-L6-v2" and "peft" not in type(model.encoder).__module__


def test_shipped_model_scores_sentences_and_labels_articles(shipped):
    _, model = shipped
    loaded = "Radical activists rammed through a disastrous, reckless scheme that will destroy our economy."
    plain = "The city council approved the budget on Tuesday by a vote of seven to two."
    article = model.score_article([plain, loaded, plain])
    by_text = {s.text: s for s in article.sentences}
    assert by_text[loaded].probability > 0.5 > by_text[plain].probability
    assert {w.text.lower() for w in by_text[loaded].words} & {"radical", "disastrous", "reckless", "destroy"}
    assert all(loaded[w.start:w.end] == w.text for w in by_text[loaded].words)
    assert not by_text[plain].words
    # label and confidence come from the same statistic: they can never disagree
    rule = model.config.article_rule
    assert (article.label == "biased") == (rule.value([s.probability for s in article.sentences]) >= rule.threshold)
    assert article.confidence >= 0.5
    assert model.score_article([plain, plain]).label == "not_biased"


def test_card_states_data_terms_provenance_scores_and_calibration(shipped):
    folder, model = shipped
    card = (folder / "README.md").read_text(encoding="utf-8")
    metrics = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
    from vilbias.corpus.sentence_datasets import BABE_TERMS

    assert "license: cc-by-nc-4.0" in card and "non-commercial research use" in card
    assert BABE_TERMS in card and "Spinde et al., 2021" in card and "No agreement" in card and "@inproceedings{spinde2021babe" in card
    # the data by its file name and hash, never a path of the machine that trained it
    assert "final_labels_SG2_public.csv" in card and "/work/" not in card and "/home/" not in card
    cv = metrics["cv"]["summary"]["f1_macro"]["mean"]
    assert f"{cv:.3f}" in card and f"{metrics['test']['f1_macro']:.3f}" in card
    assert f"{metrics['test']['ece_before']:.3f} → {metrics['test']['ece']:.3f}" in card
    assert "(reliability.png)" in card and (folder / "reliability.png").stat().st_size > 5_000
    assert model.config.temperature == pytest.approx(metrics["validation"]["temperature"])
    assert model.config.article_rule.statistic == metrics["article_rule"]["statistic"]
    assert "vilbias train sentence --sentences" in card
    record = json.loads((folder / "training_data.json").read_text(encoding="utf-8"))
    ids = (folder / "training_ids.txt").read_text(encoding="utf-8").split()
    assert record["rows"] == len(ids) == metrics["corpus"]["rows_kept"] - metrics["test"]["n"] - metrics["validation"]["rows"]


def test_lora_deltas_fold_into_the_encoder_exactly(tmp_path):
    """What training computes (peft's LoRA layers; cached lower layers) is what serving computes
    (a plain encoder with the deltas folded in)."""
    import torch

    from vilbias.models.sentence_bias import SentenceBiasConfig, SentenceBiasModel

    torch.manual_seed(0)
    model = SentenceBiasModel(SentenceBiasConfig(trained_layers=[5], lora_r=4, lora_alpha=8)).eval()
    for name, p in model.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(p, std=0.05)  # B starts at zero; make the adapter do something
    texts = ["Critics slammed the reckless plan.", "The council met on Tuesday to discuss the budget."]
    enc = model.tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        full = model(attention_mask=enc["attention_mask"], input_ids=enc["input_ids"])["logits"]
        cached = model(attention_mask=enc["attention_mask"], layer_input=model.layer_input(enc["input_ids"], enc["attention_mask"]))["logits"]
    assert torch.allclose(full, cached, atol=1e-5)
    model.save_pretrained(tmp_path / "m")
    served = SentenceBiasModel.from_pretrained(tmp_path / "m")
    assert torch.allclose(served.sentence_logits(texts)[0], full, atol=1e-4)


def test_article_rule_choice_and_token_word_labels():
    from vilbias.training.sentence_data import token_word_labels
    from vilbias.training.sentence_rules import choose_article_rule

    # Articles whose label follows the share of flagged sentences, not their single highest one.
    groups = [([0.9, 0.1, 0.1, 0.1], 0), ([0.95, 0.2, 0.1], 0), ([0.8, 0.7, 0.6], 1), ([0.7, 0.6, 0.1], 1),
              ([0.2, 0.1], 0), ([0.9, 0.8], 1)]
    rule, candidates = choose_article_rule(groups)
    assert rule.statistic == "share" and 0.25 < rule.threshold <= 0.5 and candidates["share"]["f1_macro"] == 1.0
    assert candidates["max"]["f1_macro"] < 1.0 and rule.slope > 1
    assert [rule.value(p) >= rule.threshold for p, _ in groups] == [bool(y) for _, y in groups]
    text = "A “disastrous” plan, critics said."
    offsets = [(0, 0), (0, 1), (2, 3), (3, 13), (13, 14), (15, 19), (19, 20), (21, 28), (29, 33), (33, 34), (0, 0)]
    assert token_word_labels(text, offsets, ["disastrous"], 1) == [-100, 0, 1, 1, 1, 0, 0, 0, 0, 0, -100]
    assert token_word_labels(text, offsets, [], 1) == [-100] * len(offsets)  # biased, words not given
    assert token_word_labels(text, offsets, [], 0)[1:-1] == [0] * 9


def test_train_sentence_on_a_tiny_babe_file(tmp_path, babe_csv, no_runtime_evidence):
    import yaml
    from vilbias.training.cli import main
    from vilbias.training.sentence import train_sentence
    from vilbias.training.sentence_config import SentenceConfig

    from vilbias.models.sentence_bias import SentenceBiasModel

    out = tmp_path / "model"
    metrics = train_sentence(SentenceConfig(sentences=babe_csv, output_dir=str(out), work_dir=tmp_path / "work", num_train_epochs=2))
    assert metrics["cv"] is None and metrics["article_rule"]["chosen_on"] == "validation"
    assert len(metrics["log"]) == 1 and len(metrics["log"][0]) <= 2 and metrics["test"]["n"] > 0 and 0 <= metrics["test"]["ece"] <= 1
    assert {p.name for p in out.iterdir()} >= {"config.json", "model.safetensors", "metrics.json", "README.md", "reliability.png",
                                               "training_data.json", "training_ids.txt", "vilbias_card.json", "train_sentence_config.yaml",
                                               "int8_calibration.json"}  # runtime_evidence.json: see no_runtime_evidence
    assert metrics["settings"]["num_train_epochs"] == 2 and metrics["settings"]["learning_rate"] == 5e-4
    card = (out / "README.md").read_text(encoding="utf-8")
    # the command that ran, files by their names; no path of this machine anywhere
    assert "vilbias train sentence --sentences babe.csv --num-train-epochs 2 --output model\n" in card
    assert str(tmp_path) not in card + (out / "training_data.json").read_text() + (out / "config.json").read_text() \
        + (out / "vilbias_card.json").read_text()
    model = SentenceBiasModel.from_pretrained(out)
    assert model.config.temperature == metrics["validation"]["temperature"]
    from vilbias.corpus.sentences import corpus_splits

    trained = set((out / "training_ids.txt").read_text().split())
    splits = corpus_splits(tmp_path / "work" / "corpus")["default"]  # the corpus's own, as stored
    assert trained == set(splits["train"]) and splits["test"] and not trained & set(splits["test"] + splits["validation"])
    assert metrics["test"]["n"] == len(splits["test"])  # the test split is never trained on
    # the options it ran with, written beside it, run it again: the same weights (torch seeds each
    # process at random otherwise)
    written = yaml.safe_load((out / "train_sentence_config.yaml").read_text(encoding="utf-8"))
    assert written["sentences"] == str(babe_csv) and written["num_train_epochs"] == 2 and written["cv"] is False
    again = tmp_path / "again"
    assert main(["sentence", "--config", str(out / "train_sentence_config.yaml"), "--output", str(again)]) == 0
    assert (again / "model.safetensors").read_bytes() == (out / "model.safetensors").read_bytes()
    with pytest.raises(FileNotFoundError, match="final_labels_SG1"):
        SentenceConfig(sentences=tmp_path / "missing.csv")


def test_an_ensemble_trains_scores_and_serves_as_one_model(tmp_path, babe_csv):
    """--ensemble 2: two members per fold and for the final model; CV reports what one member
    alone scores beside the ensemble; the saved folder serves the averaged logits."""
    import torch
    from vilbias.training.sentence import train_sentence
    from vilbias.training.sentence_config import SentenceConfig

    from vilbias.models.sentence_bias import SentenceBiasModel

    out = tmp_path / "model"
    metrics = train_sentence(SentenceConfig(sentences=babe_csv, output_dir=str(out), work_dir=tmp_path / "work", num_train_epochs=1,
                                            cv=True, ensemble=2, trained_layers=[4, 5], lora_r=4))
    assert len(metrics["log"]) == 2 and metrics["settings"]["ensemble"] == 2
    assert all(len(f["members_f1_macro"]) == 2 and len(f["epochs_run"]) == 2 for f in metrics["cv"]["per_fold"])
    assert "member_f1_macro" in metrics["cv"]["summary"]
    # the exact float32 path: the members' arithmetic is compared by hand below (auto may pick bfloat16)
    exact = {"inference_runtime": "torch", "inference_precision": "float32"}
    model = SentenceBiasModel.from_pretrained(out, **exact)
    assert model.config.members == 2 and len(model.members) == 2
    assert len(model.bert.encoder.layer) == 4  # the members carry their own copies of layers 4-5
    sentences = ["The council approved the budget on Tuesday.", "Critics slammed the reckless, radical scheme."]
    logits, _ = model.sentence_logits(sentences)
    # each member alone, through the full encoder with its deltas: the ensemble is their mean
    alone = []
    for member in model.members:
        single = SentenceBiasModel.from_pretrained(out, **exact)
        single.members = None
        enc = single.tokenizer(sentences, padding=True, return_tensors="pt")
        with torch.no_grad():
            hidden = single.layer_input(enc["input_ids"], enc["attention_mask"])
            from transformers.masking_utils import create_bidirectional_mask

            mask = create_bidirectional_mask(config=single.bert.config, inputs_embeds=hidden, attention_mask=enc["attention_mask"])
            alone.append(member(hidden, mask, enc["attention_mask"])[0])
    assert torch.allclose(logits, torch.stack(alone).mean(0), atol=1e-5)
    # the runtime evidence, written last: on the test split, int8 ranges kept, every member in the exported graphs
    evidence = json.loads((out / "runtime_evidence.json").read_text(encoding="utf-8"))
    assert evidence["rows"] == metrics["test"]["n"] and evidence["int8_ranges"]
    assert set(evidence["paths"]) == {"onnxruntime/float32", "onnxruntime/int8", "torch/bfloat16"}
    with pytest.raises(ValueError, match="--ensemble"):
        SentenceConfig(sentences=babe_csv, ensemble=0)


def test_distant_pretraining_drops_held_out_rows_and_records_them(tmp_path, babe_csv, no_runtime_evidence):
    """--distant-dataset: every model pre-trains on the distant rows first, minus those sharing a
    text or link with the split's validation/test rows; the provenance and log say so."""
    import csv
    import json

    from vilbias.training.sentence import train_sentence
    from vilbias.training.sentence_config import SentenceConfig

    with open(babe_csv, encoding="utf-8-sig", newline="") as f:
        babe = list(csv.DictReader(f, delimiter=";"))
    distant = tmp_path / "headlines.csv"
    with open(distant, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["headline", "outlet", "news_link"])
        for i in range(40):
            w.writerow([f"Headline number {i} about the {'outrageous' if i % 2 else 'scheduled'} plan", "left" if i % 2 else "wire", f"https://x.example/{i}"])
        for i, row in enumerate(babe):  # the corpus's own sentences: those held out must be dropped
            w.writerow([row["text"], "left" if i % 2 else "wire", f"https://x.example/same-text/{i}"])
        w.writerow(["A headline from the same article as a sentence", "wire", babe[1]["news_link"]])
    outlets = tmp_path / "outlets.yaml"
    outlets.write_text("left: biased\nwire: not_biased\n", encoding="utf-8")
    out = tmp_path / "model"
    metrics = train_sentence(SentenceConfig(sentences=babe_csv, output_dir=str(out), work_dir=tmp_path / "work", num_train_epochs=1,
                                            distant_dataset=str(distant), distant_outlet_labels=outlets, trained_layers=[5], lora_r=4))
    n = 41 + len(babe)
    assert metrics["settings"]["distant"]["rows_read"] == n
    assert [e.get("phase") for e in metrics["log"][0]] == ["distant", None]
    record = json.loads((out / "training_data.json").read_text())["extra"]["distant"]
    from datasets import load_dataset

    from vilbias.corpus.sentences import sentence_splits

    rows = list(load_dataset(str(tmp_path / "work" / "corpus"), "default", split="train+validation+test"))
    split = sentence_splits(rows)["default"]
    held_ids = set(split["validation"] + split["test"])
    held = {"text": [r["text"] for r in rows if r["unique_id"] in held_ids], "news_link": [r["news_link"] for r in rows if r["unique_id"] in held_ids]}
    expected = sum(r["text"].strip() in held["text"] for r in babe) + int(babe[1]["news_link"] in held["news_link"])
    assert expected >= len(held) and record["dropped_as_held_out"] == expected and record["rows"] == n - expected


def test_opinion_head_trains_on_babe_label_opinion_and_is_not_saved(tmp_path, babe_csv, no_runtime_evidence):
    import torch
    from safetensors.torch import load_file
    from vilbias.training.sentence import train_sentence
    from vilbias.training.sentence_config import SentenceConfig
    from vilbias.training.sentence_data import opinion_index

    from vilbias.models.sentence_bias import OPINIONS, SentenceBiasConfig, SentenceBiasModel

    assert opinion_index("Expresses writer’s opinion") == OPINIONS.index("Expresses writer's opinion")
    assert opinion_index("No agreement") == opinion_index(None) == -100
    torch.manual_seed(0)
    model = SentenceBiasModel(SentenceBiasConfig(trained_layers=[5], lora_r=4, lora_alpha=8, opinion_loss_weight=1.0)).train()
    enc = model.tokenizer(["A plain sentence.", "A reckless scheme."], padding=True, return_tensors="pt")
    args = {"attention_mask": enc["attention_mask"], "input_ids": enc["input_ids"], "labels": torch.tensor([0, 1])}
    torch.manual_seed(1)
    without = model(**args, opinion_labels=torch.tensor([-100, -100]))["loss"]
    torch.manual_seed(1)
    with_ = model(**args, opinion_labels=torch.tensor([0, 2]))["loss"]
    assert with_ > without  # the opinion loss is added, and only for rows that have an opinion label
    out = tmp_path / "m"
    metrics = train_sentence(SentenceConfig(sentences=babe_csv, output_dir=str(out), num_train_epochs=1, opinion_loss_weight=0.5,
                                            trained_layers=[5], lora_r=4))
    assert metrics["settings"]["opinion_loss_weight"] == 0.5
    assert not any(k.startswith("opinion_head") for k in load_file(str(out / "model.safetensors")))
    assert not hasattr(SentenceBiasModel.from_pretrained(out), "opinion_head")


def test_article_splits_keep_every_article_whole_in_every_config():
    """BABE labels several sentences per article: no article may sit on both sides of a split,
    in ``default`` or in any fold, and a text repeated in two articles joins them."""
    import random

    from vilbias.corpus.sentences import sentence_splits
    from vilbias.task import FOLDS

    rng = random.Random(0)
    rows, n = [], 0
    for a in range(300):
        for _ in range(rng.randint(1, 6)):
            rows.append({"unique_id": f"u{n:05d}", "text": f"Sentence {n} of article {a}.", "news_link": f"https://news.example/{a}",
                         "label": rng.random() < 0.5})
            n += 1
    rows.append({"unique_id": "bridge", "text": "Sentence 0 of article 0.", "news_link": "https://news.example/other", "label": 1})
    rows.append({"unique_id": "nolink", "text": "No link at all.", "news_link": "", "label": 0})
    splits = sentence_splits(rows)
    assert set(splits) == {"default", *FOLDS}
    link = {r["unique_id"]: r["news_link"] or r["unique_id"] for r in rows}
    for parts in splits.values():
        assert sorted(u for ids in parts.values() for u in ids) == sorted(link)  # a partition of every row
        links = {split: {link[u] for u in ids} for split, ids in parts.items()}
        assert not links["train"] & links["validation"] and not links["train"] & links["test"] and not links["validation"] & links["test"]
        side = {u: split for split, ids in parts.items() for u in ids}
        assert side["bridge"] == side["u00000"]  # the repeated text pulled its second article along
    assert 0.7 < len(splits["default"]["train"]) / len(rows) < 0.9 and 0.15 < len(splits["fold_0"]["test"]) / len(rows) < 0.25
    assert {u for f in FOLDS for u in splits[f]["test"]} == set(link)  # every row is tested in exactly one fold
    assert sum(len(splits[f]["test"]) for f in FOLDS) == len(rows)
    assert sentence_splits(list(reversed(rows))) == splits  # deterministic from the data, not its order


def test_contrastive_stage_pulls_same_label_sentences_together(tmp_path, babe_csv, no_runtime_evidence):
    """--contrastive-epochs: SetFit's pair objective on the adapter raises the cosine of
    same-label pairs over different-label pairs, and only the LoRA weights move."""
    import torch
    from datasets import load_dataset
    from vilbias.training.sentence import train_sentence
    from vilbias.training.sentence_config import SentenceConfig
    from vilbias.training.sentence_data import cache_examples, collate
    from vilbias.training.sentence_fit import contrastive_fit

    from vilbias.corpus.pipeline import build_sentences
    from vilbias.models.fusion import mean_pool
    from vilbias.models.sentence_bias import SentenceBiasConfig, SentenceBiasModel

    build_sentences(babe_csv, tmp_path / "babe")
    rows = list(load_dataset(str(tmp_path / "babe"), "default", split="train+validation+test"))
    torch.manual_seed(0)
    model = SentenceBiasModel(SentenceBiasConfig(trained_layers=[4, 5], lora_r=4, lora_alpha=8))
    examples = list(cache_examples(model, rows).values())

    def gap() -> float:
        model.eval()
        with torch.no_grad():
            b = collate(examples)
            emb = torch.nn.functional.normalize(mean_pool(model.run_trained_layers(b["layer_input"], b["attention_mask"]), b["attention_mask"]), dim=-1)
        sim, same = emb @ emb.T, b["labels"][:, None] == b["labels"][None, :]
        return float(sim[same].mean() - sim[~same].mean())

    heads = {k: v.clone() for k, v in model.state_dict().items() if "head" in k}
    before = gap()
    args = SentenceConfig(sentences=babe_csv, output_dir=str(tmp_path / "unused"), per_device_train_batch_size=16, learning_rate=1e-3,
                          warmup_steps=0.0, weight_decay=0.0, patience=0, seed=0, max_length=64)
    log = contrastive_fit(model, examples, args, epochs=3)
    assert [e["phase"] for e in log] == ["contrastive"] * 3 and log[-1]["train_loss"] < log[0]["train_loss"]
    assert gap() > before + 0.05
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in heads.items())
    metrics = train_sentence(SentenceConfig(sentences=babe_csv, output_dir=str(tmp_path / "m"), num_train_epochs=1, contrastive_epochs=1,
                                            trained_layers=[5], lora_r=4))
    assert metrics["settings"]["contrastive_epochs"] == 1 and [e.get("phase") for e in metrics["log"][0]] == ["contrastive", None]


FLOOR_SENTENCE_F1 = 0.79
"""Just under what the shipped model measures on the held-out sentences (0.800, as its card states)."""
FLOOR_ARTICLE_F1 = 0.78
"""Just under what it measures on the held-out articles (0.792 on 164 articles)."""


@pytest.fixture(scope="module")
def babe_sg2_rows(tmp_path_factory):
    """Every row of the public SG2 file, as ``vilbias build --sentences`` stores it (built once for
    the module's real-data tests)."""
    from datasets import load_dataset

    from vilbias.corpus.pipeline import build_sentences

    root = tmp_path_factory.mktemp("babe")
    build_sentences(shared_data("babe", "final_labels_SG2_public.csv"), root / "babe")
    return list(load_dataset(str(root / "babe"), "default", split="train+validation+test"))


@pytest.fixture(scope="module")
def unseen(babe_sg2_rows, shipped):
    """Sentence and article macro-F1 of the shipped model on the held-out test split of the
    public SG2 file: whole articles, none of whose sentences is in its training ids (recomputed
    here through the model's own forward pass, not read from the card)."""
    from collections import defaultdict

    from vilbias.corpus.sentences import sentence_splits
    from vilbias.metrics.scores import closed_metrics

    folder, model = shipped
    rows = babe_sg2_rows
    splits = sentence_splits(rows)["default"]
    trained = set((folder / "training_ids.txt").read_text().split())
    assert trained == set(splits["train"])
    test_ids = set(splits["test"])
    test = [r for r in rows if r["unique_id"] in test_ids]
    links = lambda part: {r["news_link"] for r in rows if r["unique_id"] in set(part) and r["news_link"]}  # noqa: E731
    assert len(test) > 250 and not links(splits["test"]) & (links(splits["train"]) | links(splits["validation"]))
    scores = model.score_sentences([r["text"] for r in test])
    sentence_f1 = closed_metrics([r["label"] for r in test], [int(s.probability >= 0.5) for s in scores])["f1_macro"]
    by_link = defaultdict(list)
    for r, s in zip(test, scores, strict=True):
        by_link[r["news_link"] or r["unique_id"]].append((s.probability, r["label"]))
    rule = model.config.article_rule
    # an article's label: the majority of its expert labels (ties left out), as training scores it
    groups = [g for g in by_link.values() if 2 * sum(y for _, y in g) != len(g)]
    article_f1 = closed_metrics([int(2 * sum(y for _, y in g) > len(g)) for g in groups],
                                [int(rule.value([p for p, _ in g]) >= rule.threshold) for g in groups])["f1_macro"]
    return {"sentence_f1": sentence_f1, "article_f1": article_f1, "articles": len(groups)}


@pytest.mark.real_data
def test_shipped_model_on_babe_articles_it_never_saw(shipped, unseen):
    folder, _ = shipped
    metrics = json.loads((folder / "metrics.json").read_text())
    assert unseen["sentence_f1"] >= FLOOR_SENTENCE_F1 and unseen["article_f1"] >= FLOOR_ARTICLE_F1
    # the card's figures, reproduced (float16 weights on disk move probabilities by < 1e-4)
    assert unseen["sentence_f1"] == pytest.approx(metrics["test"]["f1_macro"], abs=1e-6)
    assert unseen["article_f1"] == pytest.approx(metrics["article_rule_on_test_links"]["f1_macro"], abs=1e-6)
    assert unseen["articles"] == metrics["article_rule_on_test_links"]["groups"]


FIRST_EPOCH = Path(__file__).with_name("babe_first_epoch.json")
"""The shipped run's first epoch step by step (each step's loss and batch size) and the figures
after its first steps, written by ``record_babe_first_epoch.py`` (which checks them against the
shipped metrics.json; run again, it writes the same file)."""


def test_the_recorded_first_epoch_is_the_shipped_runs():
    """The step-by-step reference below adds up to the shipped model's epoch-1 figures."""
    from vilbias.models.catalogue import shipped_sentence_model

    shipped_epoch = json.loads((shipped_sentence_model() / "metrics.json").read_text(encoding="utf-8"))["log"][0][0]
    reference = json.loads(FIRST_EPOCH.read_text(encoding="utf-8"))
    steps = reference["first_epoch"]["steps"]
    assert len(steps) == 154 and sum(w for _, w in steps) == 2455  # every batch of the 2455 training sentences, once
    mean = sum(loss * w for loss, w in steps) / sum(w for _, w in steps)
    assert mean == pytest.approx(reference["first_epoch"]["train_loss"], abs=1e-12)
    assert mean == pytest.approx(shipped_epoch["train_loss"], abs=1e-5)
    assert reference["first_epoch"]["validation_loss"] == pytest.approx(shipped_epoch["validation_loss"], abs=1e-5)
    first = steps[:reference["first_steps"]["steps"]]
    assert reference["first_steps"]["train_loss"] == pytest.approx(sum(loss * w for loss, w in first) / sum(w for _, w in first), abs=1e-12)


@pytest.mark.real_data
def test_train_sentence_retraces_the_shipped_run_on_babe(tmp_path, shipped, babe_sg2_rows, monkeypatch):
    """The shipped model's figures come back through ``vilbias train sentence``: the same articles
    in each split (the provenance's digests), and the shipped run's first 10 optimizer steps to the
    last digit: each step's training loss, their mean and the validation loss after them, to 1e-5,
    with the schedule of the full run, one torch thread as shipped (:data:`FIRST_EPOCH`, which adds
    up to the shipped epoch-1 figures). Another seed moves them by 2e-2, half the warm-up steps by
    1.8e-3 (training) and 7e-3 (validation). The whole first epoch is the same run for 154 steps (``FIRST_EPOCH``'s ``about``); the whole run (5-fold CV, final model,
    calibration, article rule) against the card, with its tolerances:
    ``benchmarks/bench_sentence_reproduce.py`` (about 30 min on a quiet 2-core machine).

    Only the sentences the first 10 batches and the validation split read go through the frozen
    layers; every other training sentence keeps its token count (which is all the batching reads)
    and NaN hidden states, so a step or a score that read one would be NaN."""
    import torch
    from transformers import TrainerCallback
    from vilbias.training.sentence_config import SentenceConfig
    from vilbias.training.sentence_data import Example, cache_examples
    from vilbias.training.sentence_fit import EpochLog, LengthGroupedBatches, fit

    from vilbias.corpus.sentences import sentence_splits
    from vilbias.models.sentence_bias import SentenceBiasModel
    from vilbias.provenance import ids_digest

    folder, _ = shipped
    metrics = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
    record = json.loads((folder / "training_data.json").read_text(encoding="utf-8"))
    recorded = json.loads(FIRST_EPOCH.read_text(encoding="utf-8"))
    reference = recorded["first_steps"]
    sentences = shared_data("babe", "final_labels_SG2_public.csv")
    cfg = SentenceConfig(sentences=sentences, output_dir=str(tmp_path / "out"))
    assert {k: metrics["settings"][k] for k in ("learning_rate", "patience", "seed", "max_length", "trained_layers", "lora_r")} == {
        "learning_rate": cfg.learning_rate, "patience": cfg.patience, "seed": cfg.seed, "max_length": cfg.max_length,
        "trained_layers": cfg.trained_layers, "lora_r": cfg.lora_r}  # the command's defaults are the shipped run's settings
    rows = babe_sg2_rows
    split = sentence_splits(rows)["default"]
    assert ids_digest(split["train"]) == record["ids_sha256"]
    assert ids_digest(split["validation"]) == record["extra"]["validation_ids_sha256"]
    assert ids_digest(split["test"]) == record["extra"]["test_ids_sha256"]

    class FirstSteps(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step >= reference["steps"]:
                control.should_training_stop = True  # the epoch ends here: validation, then the end

    threads = torch.get_num_threads()
    torch.set_num_threads(metrics["settings"]["threads"])
    try:
        torch.manual_seed(cfg.seed)  # as run_split seeds before the adapter and heads are drawn
        model = SentenceBiasModel(cfg.model_config())
        by_id = {r["unique_id"]: r for r in rows}
        tokens = {uid: len(ids) for uid, ids in zip(split["train"], model.tokenizer(
            [by_id[u]["text"] for u in split["train"]], truncation=True, max_length=model.config.max_length)["input_ids"], strict=True)}
        sized = [Example(u, "", 0, "", [], torch.empty(tokens[u], 0), [], []) for u in split["train"]]
        first = {e.uid for batch in list(LengthGroupedBatches(sized, cfg.per_device_train_batch_size, cfg.seed))[:reference["steps"]]
                 for e in (sized[i] for i in batch)}
        examples = cache_examples(model, [by_id[u] for u in [*first, *split["validation"]]])
        hidden = next(iter(examples.values())).layer_input.shape[1]
        train = [examples[u] if u in first else Example(u, by_id[u]["text"], by_id[u]["label"], by_id[u]["news_link"], [],
                                                        torch.full((tokens[u], hidden), float("nan")), [(0, 0)] * tokens[u],
                                                        [-100] * tokens[u]) for u in split["train"]]
        assert all(e.layer_input.shape[0] == tokens[e.uid] for e in train if e.uid in first)  # the batching sees the same lengths
        steps, add = [], EpochLog.add
        monkeypatch.setattr(EpochLog, "add", lambda self, loss, weight: steps.append((loss, weight)) or add(self, loss, weight))
        log = fit(model, train, [examples[u] for u in split["validation"]], cfg, callbacks=(FirstSteps(),))
    finally:
        torch.set_num_threads(threads)
    assert len(log) == 1
    # each step as the shipped run took it: its batch (by size) and its loss
    assert [w for _, w in steps] == [w for _, w in recorded["first_epoch"]["steps"][:reference["steps"]]]
    assert [loss for loss, _ in steps] == pytest.approx([loss for loss, _ in recorded["first_epoch"]["steps"][:reference["steps"]]], abs=1e-5)
    # another CPU rounds its float sums differently (measured: 6e-8 on the validation loss)
    assert log[0]["train_loss"] == pytest.approx(reference["train_loss"], abs=1e-5)
    assert log[0]["validation_loss"] == pytest.approx(reference["validation_loss"], abs=1e-5)
