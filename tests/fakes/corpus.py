"""Synthetic pipeline workdirs: articles, images and annotation calls, for tests and benchmarks.

``make_workdir(root, n)`` writes ``n`` annotated items; calling it again with ``start=n`` appends
more, exactly as a later ingest + annotate run would (a growing corpus).
"""

from __future__ import annotations

import io
import json
import random
import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image

from vilbias.annotate.store import ActiveAnnotator, AnnotationStore
from vilbias.workdir import (
    ARTICLES,
    Article,
    append_jsonl,
    init_workdir,
    store_image,
    unique_id_for,
)

ANNOTATORS = ["ann_a", "ann_b", "ann_c"]
OUTLETS = ["Harbor Ledger", "Midland Courier", "Capital Dispatch", "Northwind Times", "Civic Wire"]
_SENTENCE = "Officials said the plan would change how the district funds its services next year."


def noise_jpeg(seed: int, size: tuple[int, int] = (96, 64), quality: int = 70) -> bytes:
    """A small, unique, perceptually distinct image."""
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, (size[1] // 8, size[0] // 8, 3), dtype=np.uint8)
    img = Image.fromarray(pixels).resize(size, Image.NEAREST)
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=quality)
    return buf.getvalue()


def make_workdir(
    root: Path,
    n: int,
    *,
    start: int = 0,
    biased_share: float = 0.56,
    seed: int = 0,
    image_fn: Callable[[int], bytes] = noise_jpeg,
    shared_image_pairs: int = 0,
    sentences: int = 22,
    language: str = "",
) -> Path:
    """Append items ``start .. start+n-1`` to the workdir at ``root`` (created if needed).

    Each item gets a unanimous label (biased with probability ``biased_share``) from 3
    annotators x 1 sample on both prompts. The first ``shared_image_pairs`` pairs of items
    reuse one image (as two outlets running the same wire photo). ``language`` is recorded as
    ingest records it (default: none, as a workdir of schema 1.0, whose build detects it).
    """
    root = init_workdir(root)
    rng = random.Random(seed * 1_000_003 + start)
    calls = []
    for i in range(start, start + n):
        url = f"https://news{i % 7}.example/story/{i}"
        if shared_image_pairs and i < start + 2 * shared_image_pairs and (i - start) % 2 == 1:
            image_key = i - 1
        else:
            image_key = i
        rel = store_image(root, image_fn(image_key), "jpg")
        label = "biased" if rng.random() < biased_share else "not_biased"
        article = Article(
            unique_id=unique_id_for(url),
            url=url,
            outlet=OUTLETS[i % len(OUTLETS)],
            headline=f"Synthetic headline number {i} about district budgets",
            article_text=" ".join([_SENTENCE] * sentences),
            image_path=rel,
            published=f"2025-01-{1 + i % 28:02d}T08:00:00+00:00",
            image_url=f"https://news{i % 7}.example/img/{image_key}.jpg",
            fetched_at=f"2025-02-01T00:00:00+00:00#{i:09d}",
            language=language,
        )
        append_jsonl(root / ARTICLES, article.to_dict())
        for prompt in ("text", "multimodal"):
            for a in ANNOTATORS:
                raw = json.dumps({"label": label.replace("_", " "), "rationale": f"{a} on item {i}"})
                calls.append((article.unique_id, prompt, a, "fp", 0, "v1", "m", raw, label, "Neutral", json.dumps({"framing": label == "biased"}), f"{a} on item {i}", None, 0.01, "2025-02-01T00:00:00+00:00"))
    with AnnotationStore.for_workdir(root) as store:
        for prompt in ("text", "multimodal"):
            store.set_active(prompt, "v1", [ActiveAnnotator(a, "fp") for a in ANNOTATORS], 1)
    db = sqlite3.connect(root / "annotations.sqlite")
    with db:
        db.executemany("INSERT OR REPLACE INTO calls VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", calls)
    db.close()
    return root
