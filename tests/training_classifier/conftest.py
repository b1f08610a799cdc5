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
