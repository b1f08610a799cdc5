"""Tiny workdirs for annotate/review tests: a few articles with small real images."""

from __future__ import annotations

import io
from pathlib import Path

from vilbias.workdir import ARTICLES, Article, append_jsonl, init_workdir, store_image


def png_bytes(color: tuple[int, int, int], size: int = 64) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (size, size), color).save(buf, format="PNG")
    return buf.getvalue()


def make_workdir(root: str | Path, n: int = 4, *, shared_image: bool = False, texts: dict[int, str] | None = None,
                 language: str = "") -> Path:
    """A workdir with ``n`` articles ``item-0`` ... (headline ``Headline i``). With
    ``shared_image`` every article uses the same image; ``texts`` overrides article texts;
    ``language`` is recorded as ingest records it (default: none, as a schema 1.0 workdir)."""
    root = init_workdir(root)
    for i in range(n):
        color = (10, 20, 30) if shared_image else (i * 40 % 256, 100, 200 - i * 10 % 200)
        rel = store_image(root, png_bytes(color), "png")
        article = Article(
            unique_id=f"item-{i}",
            url=f"https://news.example/{i}",
            outlet="Example Times",
            headline=f"Headline {i}",
            article_text=(texts or {}).get(i, f"Body of article {i}. " * 5),
            image_path=rel,
            image_caption=f"Caption {i}" if i % 2 == 0 else "",
            fetched_at=f"2026-01-01T00:00:0{i % 10}+00:00",
            language=language,
        )
        append_jsonl(root / ARTICLES, article.to_dict())
    return root
