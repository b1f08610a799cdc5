"""Fixtures for the SFT tests: tiny VLMs built once (the built sample comes from tests/conftest.py)."""

from __future__ import annotations

import pytest

from tests.fakes.tiny_vlm import build_tiny_vlm


@pytest.fixture(scope="session")
def sft_train_texts(sample_dataset_dir):
    """Every text of the ``sft`` train split, to train the tiny tokenizers on."""
    from datasets import load_dataset

    ds = load_dataset(str(sample_dataset_dir), "sft", split="train")
    return [item["text"] for row in ds["messages"] for message in row for item in message["content"]
            if item["text"]]


@pytest.fixture(scope="session")
def tiny_vlm_dirs(tmp_path_factory, sft_train_texts):
    """family -> folder of a tiny random VLM of that family (built lazily, once per session)."""
    root = tmp_path_factory.mktemp("tiny_vlms")
    cache = {}

    def get(family):
        if family not in cache:
            cache[family] = build_tiny_vlm(family, root / family, extra_text=sft_train_texts)
        return cache[family]

    return get
