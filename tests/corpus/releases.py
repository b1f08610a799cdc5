"""Small releases in the three published layouts of NewsMediaBias-Plus / ViLBias.

The column names, types and label strings follow the authors' cards exactly (see
``docs/import.md``); the content is synthetic and small. Each item has its own photo-like JPEG
(random low-frequency pattern, so perceptual hashes differ) unless a test makes two share one.

- :func:`write_v1` — NewsMediaBias-Plus v1 (2024): ``unique_id, outlet, headline, article_text,
  image_description, image, date_published, source_url, canonical_link, new_categories,
  news_categories_confidence_scores, text_label, multimodal_label``, labels ``Likely`` /
  ``Unlikely``; ``image`` a path into an images folder, or embedded bytes.
- :func:`write_2025` — the Hub release of 2025 (``data/dataset_cleaned.parquet``): ``unique_id,
  outlet, headline, article_text, img_description, image, url, nlp_label, nlp_img_label``, labels
  ``Likely to Bias`` / ``Likely to UnBias``; images embedded as ``datasets`` writes them.
- :func:`write_paper_zip` — the paper's ``dataset.zip``: ``unique_id, headline, url,
  article_text, image, multimodal_label, reasoning``, labels ``Biased`` / ``Not Biased``, the
  images in a folder inside the zip (or kept apart, "on request").
"""

from __future__ import annotations

import io
import random
import zipfile
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

_LOADED = ["radical", "disastrous", "shameful", "outrageous", "reckless", "corrupt"]
_NEUTRAL = ["announced", "reported", "said", "released", "scheduled", "confirmed"]
OUTLETS = ["CNN", "The Guardian", "Forbes", "USA TODAY", "Financial Times"]


def photo(seed: int, size: tuple[int, int] = (96, 64), quality: int = 85) -> bytes:
    """A photo-like JPEG: a smooth random field (distinct perceptual hash per seed) plus grain."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    coarse = rng.integers(0, 256, (6, 8, 3), dtype=np.uint8)
    img = Image.fromarray(coarse).resize(size, Image.Resampling.BICUBIC)
    arr = np.asarray(img, dtype=np.int16) + rng.integers(-12, 13, (size[1], size[0], 3))
    buf = io.BytesIO()
    Image.fromarray(arr.clip(0, 255).astype(np.uint8)).save(buf, format="JPEG", quality=quality)
    return buf.getvalue()


@dataclass
class Item:
    unique_id: str
    outlet: str
    headline: str
    article_text: str
    url: str
    published: str
    label: int
    text_label: int
    reasoning: str
    image: bytes


def items(n: int, *, seed: int = 0, start: int = 0) -> list[Item]:
    """``n`` items whose label shows in their words (so a classifier can learn it)."""
    rng = random.Random(seed)
    out = []
    for i in range(start, start + n):
        label = int(rng.random() < 0.56)
        words = _LOADED if label else _NEUTRAL
        out.append(Item(
            unique_id=f"nmb-{i:05d}",
            outlet=OUTLETS[i % len(OUTLETS)],
            headline=f"Officials {rng.choice(words)} plan number {i} {rng.choice(words)}",
            article_text=" ".join(rng.choice(words) for _ in range(30)),
            url=f"https://news.example/{i}",
            published=f"2024-0{1 + i % 9}-1{i % 10}T08:00:00",
            label=label,
            text_label=label if rng.random() < 0.9 else 1 - label,
            reasoning=f"The wording is {'loaded' if label else 'neutral'} ({i}).",
            image=photo(i),
        ))
    return out


V1_LABELS = {1: "Likely", 0: "Unlikely"}
HUB_2025_LABELS = {1: "Likely to Bias", 0: "Likely to UnBias"}
PAPER_LABELS = {1: "Biased", 0: "Not Biased"}


def _image_files(folder: Path, rows: list[Item]) -> dict[str, str]:
    folder.mkdir(parents=True, exist_ok=True)
    names = {}
    for it in rows:
        name = f"{it.unique_id}.jpg"
        (folder / name).write_bytes(it.image)
        names[it.unique_id] = name
    return names


def v1_records(rows: list[Item], *, images: Path | None = None, prefix: str = "images/") -> list[dict]:
    """v1 records; ``images``: write the images there and reference them by path, else embed."""
    names = _image_files(images, rows) if images is not None else {}
    return [
        {
            "unique_id": it.unique_id,
            "outlet": it.outlet,
            "headline": it.headline,
            "article_text": it.article_text,
            "image_description": f"A photo for story {it.unique_id}",
            "image": prefix + names[it.unique_id] if images is not None else {"bytes": it.image, "path": f"{it.unique_id}.jpg"},
            "date_published": it.published,
            "source_url": f"https://news.google.com/rss/articles/{it.unique_id}",
            "canonical_link": it.url,
            "new_categories": ["politics", "economy"],
            "news_categories_confidence_scores": [0.8, 0.2],
            "text_label": V1_LABELS[it.text_label],
            "multimodal_label": V1_LABELS[it.label],
        }
        for it in rows
    ]


def write_v1(path: Path, rows: list[Item], *, images: Path | None = None) -> Path:
    """The v1 layout as Parquet (image paths when ``images`` is given, else embedded), CSV or XLSX
    (lists written as their string form, as an export of the table does)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    records = v1_records(rows, images=images)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".parquet":
        pq.write_table(pa.Table.from_pylist(records), path)
    elif path.suffix == ".csv":
        import csv

        with open(path, "w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=list(records[0]))
            writer.writeheader()
            writer.writerows({k: str(v) if isinstance(v, list) else v for k, v in r.items()} for r in records)
    elif path.suffix == ".xlsx":
        import openpyxl

        book = openpyxl.Workbook()
        sheet = book.active
        sheet.append(list(records[0]))
        for r in records:
            sheet.append([str(v) if isinstance(v, list) else v for v in r.values()])
        book.save(path)
    else:
        raise ValueError(path.suffix)
    return path


def write_2025(path: Path, rows: list[Item], *, shards: int = 1) -> list[Path]:
    """The 2025 Hub layout, images embedded as ``datasets`` writes an ``Image`` column; ``shards``
    Parquet files named like the Hub's (one, ``data/dataset_cleaned.parquet``, by default)."""
    from datasets import Dataset, Features, Image, Value

    features = Features({
        "unique_id": Value("string"), "outlet": Value("string"), "headline": Value("string"),
        "article_text": Value("string"), "img_description": Value("string"), "image": Image(),
        "url": Value("string"), "nlp_label": Value("string"), "nlp_img_label": Value("string"),
    })
    path.parent.mkdir(parents=True, exist_ok=True)
    out = []
    for k in range(shards):
        part = rows[k::shards]
        ds = Dataset.from_dict({
            "unique_id": [it.unique_id for it in part],
            "outlet": [it.outlet for it in part],
            "headline": [it.headline for it in part],
            "article_text": [it.article_text for it in part],
            "img_description": [f"A photo for story {it.unique_id}" for it in part],
            "image": [{"bytes": it.image, "path": f"{it.unique_id}.jpg"} for it in part],
            "url": [it.url for it in part],
            "nlp_label": [HUB_2025_LABELS[it.text_label] for it in part],
            "nlp_img_label": [HUB_2025_LABELS[it.label] for it in part],
        }, features=features)
        target = path if shards == 1 else path.with_name(f"{path.stem}-{k:05d}-of-{shards:05d}.parquet")
        ds.to_parquet(str(target))
        out.append(target)
    return out


def paper_records(rows: list[Item]) -> list[dict]:
    return [
        {"unique_id": it.unique_id, "headline": it.headline, "url": it.url, "article_text": it.article_text,
         "image": f"{it.unique_id}.jpg", "multimodal_label": PAPER_LABELS[it.label], "reasoning": it.reasoning}
        for it in rows
    ]


def write_paper_zip(path: Path, rows: list[Item], *, images_inside: bool = True, images_dir: Path | None = None) -> Path:
    """``dataset.zip``: ``dataset/dataset.csv`` and, when ``images_inside``, ``dataset/images/<file>``;
    otherwise the images go to ``images_dir`` ("on request")."""
    import csv

    buf = io.StringIO(newline="")
    records = paper_records(rows)
    writer = csv.DictWriter(buf, fieldnames=list(records[0]))
    writer.writeheader()
    writer.writerows(records)
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("dataset/dataset.csv", buf.getvalue())
        if images_inside:
            for it in rows:
                zf.writestr(f"dataset/images/{it.unique_id}.jpg", it.image)
    if not images_inside and images_dir is not None:
        _image_files(images_dir, rows)
    return path


def relabel(it: Item) -> Item:
    return replace(it, label=1 - it.label, text_label=1 - it.text_label)
