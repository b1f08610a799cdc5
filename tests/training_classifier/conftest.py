"""Fixtures for the classifier tests: a BABE-format CSV, a tiny multimodal repo, tiny encoders."""

from __future__ import annotations

import io
import random

import pytest

BABE_HEADER = "text;news_link;outlet;topic;type;label_bias;label_opinion;biased_words"
_LOADED = ["radical", "disastrous", "shameful", "outrageous", "reckless", "corrupt"]
_NEUTRAL = ["announced", "reported", "said", "released", "scheduled", "confirmed"]


def write_babe_csv(path, n_biased=30, n_neutral=20, n_no_agreement=4, seed=0):
    """A CSV in BABE's published format: ';'-separated, UTF-8 with BOM, list-literal words."""
    rng = random.Random(seed)
    lines = [BABE_HEADER]
    for i in range(n_biased):
        w = rng.choice(_LOADED)
        lines.append(
            f"The {w} policy number {i} hurts families;https://example.com/a{i};Outlet{i % 3};"
            f"topic{i % 4};left;Biased;Expresses writer's opinion;['{w}']"
        )
    for i in range(n_neutral):
        w = rng.choice(_NEUTRAL)
        lines.append(
            f"The agency {w} item {i} on Tuesday;https://example.com/n{i};Outlet{i % 3};"
            f"topic{i % 4};center;Non-biased;Entirely factual;[]"
        )
    for i in range(n_no_agreement):
        lines.append(f"Unclear sentence {i};https://example.com/u{i};Outlet0;topic0;right;No agreement;;[]")
    path.write_bytes(("\n".join(lines) + "\n").encode("utf-8-sig"))
    return path


@pytest.fixture
def babe_csv(tmp_path):
    return write_babe_csv(tmp_path / "babe.csv")


def _jpeg(color, size=(40, 30)):
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format="JPEG")
    return buf.getvalue()


def write_multimodal_repo(root, n=40, seed=0):
    """A tiny repo in the corpus layout whose label is learnable from
    both the words and the image colour (every row its own image, as in a real corpus)."""
    from datasets import ClassLabel, Features, Image, List, Value


    rng = random.Random(seed)
    features = Features(
        {
            "unique_id": Value("string"),
            "outlet": Value("string"),
            "headline": Value("string"),
            "article_text": Value("string"),
            "url": Value("string"),
            "published": Value("string"),
            "image": Image(),
            "image_url": Value("string"),
            "image_caption": Value("string"),
            "text_label": ClassLabel(names=["not_biased", "biased"]),
            "multimodal_label": ClassLabel(names=["not_biased", "biased"]),
            "reasoning": Value("string"),
            "techniques": List(Value("string")),
            "agreement": Value("float32"),
            "review": Value("string"),
        }
    )
    rows = []
    for i in range(n):
        label = i % 2
        words = _LOADED if label else _NEUTRAL
        rows.append(
            {
                "unique_id": f"id{i:03d}",
                "outlet": f"Outlet{i % 3}",
                "headline": f"Headline {rng.choice(words)} {i}",
                "article_text": " ".join(rng.choice(words) for _ in range(12)),
                "url": f"https://example.com/{i}",
                "published": None,
                "image": {"bytes": _jpeg((200, 30 + i, 30) if label else (30, 30 + i, 200)), "path": None},
                "image_url": f"https://example.com/{i}.jpg",
                "image_caption": "",
                "text_label": label,
                "multimodal_label": label,
                "reasoning": "r",
                "techniques": [],
                "agreement": 1.0,
                "review": "unreviewed",
            }
        )

    from huggingface_hub import DatasetCard, DatasetCardData

    from vilbias.corpus.writer import RepoWriter, card_metadata, corpus_views

    views = corpus_views(features)
    writer = RepoWriter(root, features, views)
    for i, row in enumerate(rows):
        cell = ("train" if i < 28 else "validation" if i < 34 else "test", i % 5)
        writer.add_rows([(cell, row)])
    card_data = DatasetCardData()
    card_metadata(card_data, views, writer.close(), list(features))
    DatasetCard(f"---\n{card_data.to_yaml()}\n---\n\n# tiny test corpus\n").save(root / "README.md")
    return root


@pytest.fixture(scope="session")
def multimodal_repo(tmp_path_factory):
    return write_multimodal_repo(tmp_path_factory.mktemp("repo") / "tiny")


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory):
    """A random 2-layer BERT (hidden 32) with a word-level tokenizer trained in the test."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    path = tmp_path_factory.mktemp("tiny_bert")
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    corpus = [" ".join(_LOADED + _NEUTRAL), "Headline The policy number hurts families agency item on Tuesday 0 1 2 3 4 5 6 7 8 9"]
    tok.train_from_iterator(corpus, trainers.WordLevelTrainer(special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]"]))
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]", model_max_length=64
    )
    fast.save_pretrained(path)
    config = BertConfig(
        vocab_size=fast.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=37, max_position_embeddings=64,
    )
    torch.manual_seed(0)  # the same tiny model in every session, whatever ran before
    BertModel(config).save_pretrained(path)
    return str(path)


@pytest.fixture(scope="session")
def tiny_clip(tmp_path_factory):
    """A random CLIP vision tower (hidden 32) with its image processor, saved as a folder."""
    from transformers import CLIPImageProcessor, CLIPVisionConfig, CLIPVisionModel

    path = tmp_path_factory.mktemp("tiny_clip")
    config = CLIPVisionConfig(
        hidden_size=32, intermediate_size=37, num_hidden_layers=2, num_attention_heads=2, image_size=32, patch_size=8
    )
    CLIPVisionModel(config).save_pretrained(path)
    CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}).save_pretrained(path)
    return str(path)
