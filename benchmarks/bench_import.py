"""Import benchmark: ``vilbias build --from`` against plain pyarrow, in one run.

    .venv/bin/python benchmarks/bench_import.py                      # 40,945 vs 4,000 rows, layouts 2 and 3
    .venv/bin/python benchmarks/bench_import.py --rows 3000 --small-rows 600   # a quick run

A synthetic release of ``--rows`` news items (the ViLBias paper's 40,945 by default) is
generated once under ``--scratch`` (cached; never in the repository): photo-like JPEGs of a
news site's size (1024x683, smooth shapes plus sensor grain, 118-150 KB each, mean 142 KB,
5.83 GB at 40,945; every one unique) and articles of 350-650 pseudo-words drawn Zipf-like from a 6,000-word vocabulary (so
text compresses like text, not like a repeated phrase). Two layouts of it:

* **layout 2** — the Hub release of 2025 (``nmb-plus-2025`` columns), as several Parquet shards
  with the images embedded the way ``datasets`` writes an ``Image`` column (row groups of 100);
* **layout 3** — NewsMediaBias-Plus v1 (``nmb-plus-v1`` columns) as one CSV whose ``image``
  column holds paths into an images folder (``--images``).

For each layout, each contender runs in a fresh interpreter (so peak RSS is its own):

* ``baseline`` — the plain way to do the job in one pass: read the source record batch by
  record batch, decode and validate every image with :func:`vilbias.images.validate_image`
  (what the import does to each image), and write the same rows with ``pyarrow.parquet`` (one
  ``ParquetWriter``, image bytes embedded, nothing else);
* ``import`` — ``vilbias build --from`` at ``--rows`` and at ``--small-rows`` (a prefix).

Measured on the 2-core development machine (shared with other jobs, load about 4), 40,945 rows:

| layout | import / baseline wall (CPU) | bytes written / source image bytes | peak RSS 40,945 / 4,000 |
|---|---|---|---|
| 2: 8 Parquet shards, embedded images | 148 s / 124 s = 1.20 (1.14) | 1.0171 | 696 / 561 MiB = 1.24 |
| 3: CSV + images folder | 131 s / 116 s = 1.13 (1.22) | 1.0172 | 588 / 487 MiB = 1.21 |

At ``--rows 8000 --small-rows 2000``, alone under the CPU lock (load 1.0-1.9), with row groups
written by a write-ahead thread: layout 2 0.87 wall (CPU 1.39), layout 3 0.79 (CPU 1.34); see
``docs/import.md``.

Printed per layout: ``import wall / baseline wall`` (target <= 1.1, with the CPU-time ratio,
steadier on a shared machine; the import checks images and languages in worker threads and
writes row groups in another while it reads the next, so its wall can beat the one-thread
baseline while its CPU time stays above it: it reads the source twice, tells every row's
language and converts every row to the corpus's columns, which the baseline does not; the
baseline's ``ParquetWriter`` defaults snappy-compress the image bytes, which the import stores
plain, so its write is the dearer of the two),
``bytes written / source image bytes`` (target <= 1.02: the
corpus is written once, images as they were) and ``peak RSS at rows / at small rows`` (target
<= 1.3: memory flat in corpus size). Outputs are deleted after they are measured.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from multiprocessing import Pool
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

WIDTH, HEIGHT = 1024, 683
VOCABULARY = 6000
SHARDS = 8
ROW_GROUP = 100
GENERATOR = "bench_import-v2"
"""Bumped when the synthetic release changes, so a stale cache is generated again."""


# -- the synthetic release ----------------------------------------------------------------------


_GRAIN: np.ndarray | None = None


def _grain() -> np.ndarray:
    # One sensor-grain field per process, cropped at a per-image offset: drawing fresh Gaussian
    # noise for every 1024x683 image would double the generation time.
    global _GRAIN
    if _GRAIN is None:
        rng = np.random.default_rng(12345)
        _GRAIN = rng.normal(0, 9, (HEIGHT + 64, WIDTH + 64, 3)).astype(np.int16)
    return _GRAIN


def photo(seed: int) -> bytes:
    """A unique photo-like JPEG at a news site's size: gradient, soft shapes and sensor grain."""
    from PIL import Image, ImageDraw

    rng = np.random.default_rng(seed)
    sw, sh = WIDTH // 4, HEIGHT // 4 + 1
    y, x = np.mgrid[0:sh, 0:sw].astype(np.float32)
    c0, c1 = rng.uniform(0, 255, 3), rng.uniform(0, 255, 3)
    angle = rng.uniform(0, np.pi)
    t = ((x * np.cos(angle) + y * np.sin(angle)) / (sw + sh) + 0.5)[..., None]
    small = Image.fromarray(np.clip(c0 * (1 - t) + c1 * t, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(small)
    for _ in range(int(rng.integers(10, 25))):
        x0, y0 = int(rng.integers(-25, sw)), int(rng.integers(-25, sh))
        box = [x0, y0, x0 + int(rng.integers(5, 110)), y0 + int(rng.integers(5, 110))]
        fill = tuple(int(v) for v in rng.integers(0, 256, 3))
        (draw.ellipse if rng.random() < 0.5 else draw.rectangle)(box, fill=fill)
    # Upscaling the quarter-size drawing gives the soft edges of a real photo.
    img = np.asarray(small.resize((WIDTH, HEIGHT), Image.BILINEAR), dtype=np.int16)
    ox, oy = int(rng.integers(0, 64)), int(rng.integers(0, 64))
    img = img + _grain()[oy : oy + HEIGHT, ox : ox + WIDTH]
    buf = io.BytesIO()
    Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).save(buf, "JPEG", quality=85)
    return buf.getvalue()


def _vocabulary() -> list[str]:
    rng = np.random.default_rng(7)
    letters = np.array(list("etaoinshrdlcumwfgypbvkjxqz"))
    weights = np.array([12.7, 9.1, 8.2, 7.5, 7.0, 6.7, 6.3, 6.1, 6.0, 4.3, 4.0, 2.8, 2.8, 2.4, 2.4, 2.2, 2.0, 2.0, 1.9, 1.5, 1.0, 0.8, 0.2, 0.2, 0.1, 0.1])
    weights /= weights.sum()
    return ["".join(rng.choice(letters, size=int(rng.integers(2, 11)), p=weights)) for _ in range(VOCABULARY)]


_WORDS: list[str] | None = None
_ZIPF: np.ndarray | None = None


def item(i: int) -> dict:
    """Item ``i`` of the release: text fields and label (the image is ``photo(i)``)."""
    global _WORDS, _ZIPF
    if _WORDS is None:
        _WORDS = _vocabulary()
        ranks = np.arange(1, VOCABULARY + 1)
        _ZIPF = (1 / ranks) / (1 / ranks).sum()
    rng = np.random.default_rng(1_000_000 + i)
    words = rng.choice(VOCABULARY, size=int(rng.integers(350, 650)), p=_ZIPF)
    text = " ".join(_WORDS[w] for w in words)
    return {
        "unique_id": f"{i:016x}",
        "outlet": f"Outlet {i % 97}",
        "headline": " ".join(_WORDS[w] for w in rng.choice(VOCABULARY, size=10, p=_ZIPF)).capitalize(),
        "article_text": text[0].upper() + text[1:] + ".",
        "url": f"https://news.example/{i % 97}/{i:08d}",
        "date": f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:00:00",
        "label": int(rng.random() < 0.561),
        "text_label": int(rng.random() < 0.5),
    }


def _write_photo(args: tuple[Path, int]) -> int:
    folder, i = args
    data = photo(i)
    (folder / f"{i:08d}.jpg").write_bytes(data)
    return len(data)


def ensure_images(scratch: Path, rows: int) -> Path:
    folder = scratch / f"images-{WIDTH}x{HEIGHT}"
    done = folder / f".complete-{rows}"
    if done.exists() and done.read_text() == GENERATOR:
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    missing = [i for i in range(rows) if not (folder / f"{i:08d}.jpg").exists()]
    started = time.perf_counter()
    with Pool(os.cpu_count()) as pool:
        for n, _ in enumerate(pool.imap_unordered(_write_photo, ((folder, i) for i in missing), chunksize=32), start=1):
            if n % 1000 == 0:
                print(f"\r  images {n}/{len(missing)}", end="", flush=True)
    print(f"\r  {len(missing)} images generated in {time.perf_counter() - started:.0f} s", flush=True)
    done.write_text(GENERATOR)
    return folder


def _features():
    from datasets import Features, Image, Value

    return Features({
        "unique_id": Value("string"), "outlet": Value("string"), "headline": Value("string"),
        "article_text": Value("string"), "img_description": Value("string"), "image": Image(),
        "url": Value("string"), "nlp_label": Value("string"), "nlp_img_label": Value("string"),
    })


LABELS_2025 = {1: "Likely to Bias", 0: "Likely to UnBias"}
LABELS_V1 = {1: "Likely", 0: "Unlikely"}


def ensure_layout2(scratch: Path, images: Path, rows: int) -> Path:
    """Layout 2: the 2025 Hub columns in ``SHARDS`` Parquet shards, images embedded as
    ``datasets`` writes them (its Arrow schema and ``huggingface`` metadata, row groups of 100)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = scratch / f"layout2-{rows}"
    done = root / ".complete"
    if done.exists() and done.read_text() == GENERATOR:
        return root
    shutil.rmtree(root, ignore_errors=True)
    (root / "data").mkdir(parents=True)
    features = _features()
    schema = features.arrow_schema.with_metadata({"huggingface": json.dumps({"info": {"features": features.to_dict()}})})
    per_shard = -(-rows // SHARDS)
    for k in range(SHARDS):
        with pq.ParquetWriter(root / f"data/train-{k:05d}-of-{SHARDS:05d}.parquet", schema) as writer:
            for start in range(k * per_shard, min(rows, (k + 1) * per_shard), ROW_GROUP):
                batch = []
                for i in range(start, min(rows, (k + 1) * per_shard, start + ROW_GROUP)):
                    it = item(i)
                    batch.append({
                        "unique_id": it["unique_id"], "outlet": it["outlet"], "headline": it["headline"],
                        "article_text": it["article_text"], "img_description": f"Photo accompanying {it['headline'][:40]}",
                        "image": {"bytes": (images / f"{i:08d}.jpg").read_bytes(), "path": f"{i:08d}.jpg"},
                        "url": it["url"], "nlp_label": LABELS_2025[it["text_label"]], "nlp_img_label": LABELS_2025[it["label"]],
                    })
                writer.write_table(pa.Table.from_pylist(batch, schema=schema), row_group_size=ROW_GROUP)
    done.write_text(GENERATOR)
    return root


V1_COLUMNS = ["unique_id", "outlet", "headline", "article_text", "image_description", "image", "date_published", "source_url",
              "canonical_link", "new_categories", "news_categories_confidence_scores", "text_label", "multimodal_label"]


def ensure_layout3(scratch: Path, rows: int) -> Path:
    """Layout 3: the v1 columns as one CSV; ``image`` is a path into the images folder."""
    root = scratch / f"layout3-{rows}"
    table = root / "nmb_plus_v1.csv"
    done = root / ".complete"
    if done.exists() and done.read_text() == GENERATOR:
        return table
    root.mkdir(parents=True, exist_ok=True)
    with open(table, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(V1_COLUMNS)
        for i in range(rows):
            it = item(i)
            writer.writerow([
                it["unique_id"], it["outlet"], it["headline"], it["article_text"], f"Photo accompanying {it['headline'][:40]}",
                f"images/{i:08d}.jpg", it["date"], f"https://news.google.com/rss/articles/{it['unique_id']}", it["url"],
                "['politics', 'economy']", "[0.7, 0.3]", LABELS_V1[it["text_label"]], LABELS_V1[it["label"]],
            ])
    done.write_text(GENERATOR)
    return table


# -- the contenders (each in a fresh interpreter) ------------------------------------------------


def _usage() -> dict:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"cpu": me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime, "max_rss_kib": me.ru_maxrss}


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def child_import(source: str, images: str, output: str) -> None:
    from vilbias.corpus import BuildConfig, build

    started = time.perf_counter()
    report = build(BuildConfig(source=source, images=Path(images) if images else None, output=Path(output)))
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, **_usage(), "rows": report["rows"], "written": _folder_bytes(Path(output)),
                      "corpus_bytes": report["corpus_bytes"], "source_image_bytes": report["source"]["image_bytes"]}))


def _layout2_batches(source: Path):
    import pyarrow.parquet as pq

    for path in sorted((source / "data").glob("*.parquet")):
        with pq.ParquetFile(path) as f:
            yield from f.iter_batches(batch_size=64)


def _layout3_batches(source: Path, images: Path):
    import pyarrow as pa

    def flush(rows):
        return pa.Table.from_pylist(rows).to_batches()[0]

    with open(source, newline="", encoding="utf-8") as f:
        rows = []
        for record in csv.DictReader(f):
            record["image"] = {"bytes": (images / Path(record["image"]).name).read_bytes(), "path": record["image"]}
            rows.append(record)
            if len(rows) == 64:
                yield flush(rows)
                rows = []
        if rows:
            yield flush(rows)


def child_baseline(layout: str, source: str, images: str, output: str) -> None:
    """Read, decode-and-validate every image, write the same rows with plain pyarrow."""
    import pyarrow.parquet as pq

    from vilbias.images import validate_image

    started = time.perf_counter()
    Path(output).mkdir(parents=True)
    batches = _layout2_batches(Path(source)) if layout == "2" else _layout3_batches(Path(source), Path(images))
    writer = None
    rows = 0
    for batch in batches:
        for cell in batch.column("image").to_pylist():
            validate_image(cell["bytes"])
        if writer is None:
            writer = pq.ParquetWriter(Path(output) / "rows.parquet", batch.schema)
        writer.write_batch(batch)
        rows += batch.num_rows
    writer.close()
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, **_usage(), "rows": rows, "written": _folder_bytes(Path(output))}))


def run_child(args: list[str], output: Path) -> dict:
    shutil.rmtree(output, ignore_errors=True)
    os.sync()  # the previous contender's dirty pages are not billed to this one
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TQDM_DISABLE": "1", "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, env=env)
    shutil.rmtree(output, ignore_errors=True)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:2])} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _warm(paths: list[Path]) -> None:
    # Every contender then reads the source from the page cache: the first one run is not penalised.
    for root in paths:
        for p in (root.rglob("*") if root.is_dir() else [root]):
            if p.is_file():
                with open(p, "rb") as f:
                    while f.read(1 << 24):
                        pass


def bench_layout(layout: str, scratch: Path, images: Path, rows: int, small_rows: int) -> dict:
    if layout == "2":
        big, small, image_arg = ensure_layout2(scratch, images, rows), ensure_layout2(scratch, images, small_rows), ""
    else:
        big, small, image_arg = ensure_layout3(scratch, rows), ensure_layout3(scratch, small_rows), str(images)
    _warm([big] + ([images] if layout == "3" else []))
    out = scratch / "out"
    base = run_child(["--child-baseline", layout, str(big), image_arg, str(out)], out)
    print(f"  baseline      {rows:>6} rows: {base['seconds']:7.1f} s wall, {base['cpu']:7.1f} s CPU, peak RSS {base['max_rss_kib'] / 1024:6.0f} MiB, "
          f"{base['written'] / 1e9:.2f} GB written (load {os.getloadavg()[0]:.2f})", flush=True)
    imp = run_child(["--child-import", str(big), image_arg, str(out)], out)
    print(f"  import        {rows:>6} rows: {imp['seconds']:7.1f} s wall, {imp['cpu']:7.1f} s CPU, peak RSS {imp['max_rss_kib'] / 1024:6.0f} MiB, "
          f"{imp['written'] / 1e9:.2f} GB written (load {os.getloadavg()[0]:.2f})", flush=True)
    _warm([small])
    imp_small = run_child(["--child-import", str(small), image_arg, str(out)], out)
    print(f"  import        {small_rows:>6} rows: {imp_small['seconds']:7.1f} s wall, peak RSS {imp_small['max_rss_kib'] / 1024:6.0f} MiB", flush=True)
    ratios = {
        "wall": imp["seconds"] / base["seconds"],
        "cpu": imp["cpu"] / base["cpu"],
        "bytes": imp["written"] / imp["source_image_bytes"],
        "corpus_bytes": imp["corpus_bytes"] / imp["source_image_bytes"],
        "rss": imp["max_rss_kib"] / imp_small["max_rss_kib"],
    }
    print(f"layout {layout}: import wall / (decode-and-validate + pyarrow write) = {ratios['wall']:.2f} (target <= 1.1; CPU {ratios['cpu']:.2f})")
    print(f"layout {layout}: bytes written / source image bytes = {ratios['bytes']:.4f} (target <= 1.02; shards alone {ratios['corpus_bytes']:.4f}; "
          f"{imp['written']:,} B / {imp['source_image_bytes']:,} B)")
    print(f"layout {layout}: peak RSS {rows} / {small_rows} rows = {ratios['rss']:.2f} (target <= 1.3)", flush=True)
    return ratios


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=40_945, help="Rows of the large release (the ViLBias paper's 40,945).")
    parser.add_argument("--small-rows", type=int, default=4_000, help="Rows of the small release (a prefix) for the memory ratio.")
    parser.add_argument("--scratch", type=Path, default=Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "vilbias-bench" / "import",
                        help="Where the releases (cached) and outputs (deleted) go (default: a cache folder).")
    parser.add_argument("--layouts", nargs="+", choices=("2", "3"), default=["2", "3"], help="Layouts to run.")
    parser.add_argument("--child-import", nargs=3, metavar=("SOURCE", "IMAGES", "OUTPUT"), help=argparse.SUPPRESS)
    parser.add_argument("--child-baseline", nargs=4, metavar=("LAYOUT", "SOURCE", "IMAGES", "OUTPUT"), help=argparse.SUPPRESS)
    parser.add_argument("--smoke", action="store_true", help="A tiny run of every step, in seconds, for the test suite (tests/test_benchmarks.py); its figures mean nothing.")
    args = parser.parse_args()
    if args.smoke:  # 16 and 8 rows: one or two a shard, every one of the 8 shards written
        args.rows, args.small_rows, args.scratch = 16, 8, Path(tempfile.mkdtemp(prefix="bench-import-smoke-"))
    if args.child_import:
        child_import(*args.child_import)
        return 0
    if args.child_baseline:
        child_baseline(*args.child_baseline)
        return 0
    args.scratch.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(args.scratch).free / 1e9
    need = args.rows * 0.21e6 * (2 + len(args.layouts)) / 1e9
    print(f"cpus {os.cpu_count()}, load {os.getloadavg()[0]:.2f}, free disk {free:.0f} GB (this run needs about {need:.0f} GB)", flush=True)
    if need > free:
        raise SystemExit(f"not enough disk for {args.rows} rows: use a smaller --rows")
    images = ensure_images(args.scratch, args.rows)
    sizes = np.array([(images / f"{i:08d}.jpg").stat().st_size for i in range(args.rows)]) / 1000
    print(f"images: {args.rows} JPEGs {WIDTH}x{HEIGHT}, {sizes.min():.0f}-{sizes.max():.0f} KB (mean {sizes.mean():.0f} KB, {sizes.sum() / 1e6:.2f} GB)", flush=True)
    for layout in args.layouts:
        print(f"layout {layout} ({'Parquet shards, images embedded' if layout == '2' else 'CSV + images folder'}):", flush=True)
        bench_layout(layout, args.scratch, images, args.rows, args.small_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
