"""Build benchmark: peak memory flat in corpus size, wall time against plain pyarrow.

    .venv/bin/python benchmarks/bench_build.py                       # 40,945 vs 4,000 rows
    .venv/bin/python benchmarks/bench_build.py --rows 8000 --small-rows 2000 --skip-speed

A synthetic annotated workdir of ``--rows`` items with unique photo-like JPEGs (640x427,
60-150 KB) and their language recorded (as ingest records it) is generated once under ``--scratch`` (cached; the ``--small-rows`` workdir is its
prefix, sharing image files by hard link). Then:

* memory: ``vilbias build`` runs on each workdir in a fresh subprocess; the peak RSS of the
  main process (``ru_maxrss``), of its largest pool worker and of the whole tree (sampled) are
  printed with ``peak RSS ratio <rows>/<small-rows>`` (target <= 1.5);
* speed, in one process: what the build stores, written straight to Parquet with
  ``pyarrow.parquet.ParquetWriter`` -- each row once, into its cell file
  ``data/{split}-fold{k}-00000-of-00001.parquet`` (15 cells: train/validation/test x folds 0-4),
  with the ``STORED_FEATURES`` schema (the ``default`` columns plus the ``sft`` ``messages``),
  row groups of 100 rows, votes read from the sqlite store the simple way -- then ``build`` on
  the same workdir. The build validates every image (decode, limits, perceptual hash), which the
  plain writer does not, so the target ratio is against the plain way to do the whole job --
  decode every image with Pillow in a pool of the build's size, then the pyarrow write --
  printed as ``build / (decode every image + pyarrow write)`` in CPU time (target <= 1.1; the
  wall ratio beside it moves with other load on the machine); the ratio against
  the write alone and the bytes each wrote are printed too;
* size: ``repo bytes / corpus bytes`` (target <= 1.05), where repo bytes are every file of the
  built folder (``README.md``, ``build_report.json``, ``build_config.yaml``, ``assets/``, ``data/``) and corpus bytes
  one copy of each row's Parquet data (the shards' total, the report's ``corpus_bytes``). Every
  config (``default``, ``fold_0`` ... ``fold_4``, ``sft``) reads its splits from the same cell
  files (``configs:`` data_files and ``columns:`` in the card), so nothing is stored twice.

Each output (about the image bytes, ~4.5 GB at 40,945 rows) is deleted right after it is
measured; ``--speed-corpus small`` runs the pyarrow comparison on the small corpus where disk or
time is short. Each memory run leaves ``memory-<rows>.log`` (the build's log) and
``memory-<rows>.tsv`` (main and tree RSS each second) under ``--scratch``. Wall times are
printed with the load average and the CPU time: on a shared machine the CPU ratio is the steadier
figure.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from multiprocessing import Pool
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

# The synthetic workdir writer lives with the test fakes, importable from the repository root.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

WIDTH, HEIGHT = 640, 427
MIN_KB, MAX_KB = 60, 150
CHUNK = 1000
"""Rows per ``make_workdir`` call; the small workdir uses the same chunks, so its labels equal
the big one's prefix."""
ROW_GROUP = 100
_NOISE: np.ndarray | None = None


# -- corpus -----------------------------------------------------------------------------------


def _noise_field() -> np.ndarray:
    # One sensor-noise field per process, cropped at a per-image offset: drawing fresh Gaussian
    # noise for every 640x427 image would triple the generation time.
    global _NOISE
    if _NOISE is None:
        rng = np.random.default_rng(12345)
        shape = (HEIGHT + 64, WIDTH + 64)
        _NOISE = (rng.normal(0, 1, (*shape, 1)) * 0.75 + rng.normal(0, 1, (*shape, 3)) * 0.35).astype(np.float32)
    return _NOISE


def photo_jpeg(seed: int) -> bytes:
    """A unique photo-like JPEG (smooth gradient, blurred shapes, grain) of roughly 85-130 KB."""
    rng = np.random.default_rng(seed)
    sw, sh = WIDTH // 4, HEIGHT // 4 + 1
    y, x = np.mgrid[0:sh, 0:sw].astype(np.float32)
    c0, c1 = rng.uniform(0, 255, 3), rng.uniform(0, 255, 3)
    angle = rng.uniform(0, np.pi)
    t = ((x * np.cos(angle) + y * np.sin(angle)) / (sw + sh) + 0.5)[..., None]
    small = Image.fromarray(np.clip(c0 * (1 - t) + c1 * t, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(small)
    for _ in range(int(rng.integers(8, 20))):
        x0, y0 = int(rng.integers(-25, sw)), int(rng.integers(-25, sh))
        box = [x0, y0, x0 + int(rng.integers(5, 75)), y0 + int(rng.integers(5, 75))]
        fill = tuple(int(v) for v in rng.integers(0, 256, 3))
        (draw.ellipse if rng.random() < 0.5 else draw.rectangle)(box, fill=fill)
    # Upscaling the quarter-size drawing gives the soft edges of a real photo.
    img = small.resize((WIDTH, HEIGHT), Image.BICUBIC)
    ox, oy = int(rng.integers(0, 64)), int(rng.integers(0, 64))
    grain = _noise_field()[oy : oy + HEIGHT, ox : ox + WIDTH] * rng.uniform(9, 19)
    img = Image.fromarray(np.clip(np.asarray(img, dtype=np.float32) + grain, 0, 255).astype(np.uint8))
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=90)
    return buf.getvalue()


def _write_photo(args: tuple[Path, int]) -> tuple[str, int]:
    """Worker: write image ``i`` where ``store_image`` would put it and return (path, bytes).

    ``store_image`` then finds the file and skips its fsync'd write, which would otherwise be
    the serial bottleneck of generating tens of thousands of images.
    """
    root, i = args
    data = photo_jpeg(i)
    rel = f"images/{hashlib.sha256(data).hexdigest()}.jpg"
    (root / rel).write_bytes(data)
    return rel, len(data)


def _image_paths(workdir: Path, n: int) -> list[str]:
    paths = []
    with open(workdir / "articles.jsonl", encoding="utf-8") as f:
        for line in f:
            paths.append(json.loads(line)["image_path"])
            if len(paths) == n:
                break
    return paths


def _generator() -> str:
    """A digest of the code that writes the synthetic workdirs (the fake corpus and this file):
    a cache written by other code (an older answer format, say) is generated again."""
    import tests.fakes.corpus as fake

    return hashlib.sha256(Path(fake.__file__).read_bytes() + Path(__file__).read_bytes()).hexdigest()[:16]


def _cached(done: Path) -> bool:
    try:
        return json.loads(done.read_text()).get("generator") == _generator()
    except (OSError, ValueError):
        return False


def ensure_corpus(scratch: Path, rows: int) -> Path:
    """The cached ``rows``-item workdir under ``scratch``, generated on first use (and again when
    the code that generates it has changed)."""
    from tests.fakes.corpus import make_workdir
    from vilbias.workdir import init_workdir

    root = scratch / f"workdir-{rows}"
    done = root / ".bench-complete"
    if _cached(done):
        return root
    shutil.rmtree(root, ignore_errors=True)
    started = time.perf_counter()
    init_workdir(root)  # a workdir before its images are written: ingest's claim refuses a folder that holds others' files
    sizes: list[int] = []
    with Pool(os.cpu_count()) as pool:
        # imap runs ahead of make_workdir, so encoding overlaps the (serial) workdir writes.
        written = pool.imap(_write_photo, ((root, i) for i in range(rows)), chunksize=25)
        for start in range(0, rows, CHUNK):
            n = min(CHUNK, rows - start)
            chunk = [next(written) for _ in range(n)]
            sizes += [size for _, size in chunk]
            make_workdir(root, n, start=start, image_fn=lambda i, s=start, c=chunk: (root / c[i - s][0]).read_bytes(), language="en")
            print(f"\r  generated {start + n}/{rows} rows", end="", flush=True)
    print()
    kb = np.array(sizes) / 1000
    print(f"  {rows} images: {kb.min():.1f}-{kb.max():.1f} KB (mean {kb.mean():.1f} KB, {kb.sum() / 1e6:.2f} GB) in {time.perf_counter() - started:.0f} s")
    if kb.min() < MIN_KB or kb.max() > MAX_KB:
        raise RuntimeError(f"image sizes {kb.min():.1f}-{kb.max():.1f} KB fall outside {MIN_KB}-{MAX_KB} KB")
    if len(set(_image_paths(root, rows))) != rows:
        raise RuntimeError("generated images are not unique")
    done.write_text(json.dumps({"rows": rows, "min_kb": kb.min(), "max_kb": kb.max(), "mean_kb": kb.mean(), "generator": _generator()}))
    return root


def ensure_prefix(scratch: Path, big: Path, rows: int) -> Path:
    """The first ``rows`` items of ``big`` as a workdir of their own, images hard-linked."""
    from tests.fakes.corpus import make_workdir
    from vilbias.workdir import init_workdir

    root = scratch / f"workdir-{rows}-of-{big.name.split('-')[1]}"
    done = root / ".bench-complete"
    if _cached(done):
        return root
    shutil.rmtree(root, ignore_errors=True)
    paths = _image_paths(big, rows)
    init_workdir(root)
    for rel in paths:
        # make_workdir skips an image whose content-addressed file exists: the link stays.
        os.link(big / rel, root / rel)
    for start in range(0, rows, CHUNK):
        n = min(CHUNK, rows - start)
        make_workdir(root, n, start=start, image_fn=lambda i: (big / paths[i]).read_bytes(), language="en")
    if _image_paths(root, rows) != paths:
        raise RuntimeError(f"{root} is not a prefix of {big}")
    done.write_text(json.dumps({"rows": rows, "prefix_of": str(big), "generator": _generator()}))
    return root


# -- memory -----------------------------------------------------------------------------------


def child_build(workdir: Path, output: Path) -> None:
    """Entry point of the memory subprocess: build, then print peak RSS as JSON."""
    import logging

    from vilbias.corpus import BuildConfig, build

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    started = time.perf_counter()
    report = build(BuildConfig(workdir=workdir, output=output))
    seconds = time.perf_counter() - started
    # ru_maxrss is in KiB on Linux; RUSAGE_CHILDREN is the largest single reaped child.
    print(json.dumps({
        "rows": report["rows"],
        "seconds": seconds,
        "repo_bytes": _folder_bytes(output),
        "corpus_bytes": report["corpus_bytes"],
        "self_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "children_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
    }))


def _folder_bytes(folder: Path) -> int:
    """Bytes of every file under ``folder``."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _tree_rss(proc) -> int:
    import psutil

    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def measure_memory(workdir: Path, output: Path, trace: Path) -> dict:
    """Build ``workdir`` in a fresh interpreter; peak RSS of main process, largest child, tree.

    The child's log (one line per config) and a trace of the tree's RSS every second go to
    ``trace`` (``.log`` / ``.tsv``), so a long run can be followed while it runs.
    """
    import psutil

    cmd = [sys.executable, __file__, "--child-build", str(workdir), str(output)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TQDM_DISABLE": "1"}
    with open(trace.with_suffix(".log"), "w") as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, env=env, text=True)
        peak = [0]
        stop = threading.Event()

        def sample() -> None:
            ps, started, last = psutil.Process(proc.pid), time.perf_counter(), 0.0
            with open(trace.with_suffix(".tsv"), "w") as tsv:
                tsv.write("seconds\tmain_mib\ttree_mib\n")
                while not stop.wait(0.25):
                    try:
                        main, tree = ps.memory_info().rss, _tree_rss(ps)
                    except psutil.Error:
                        return
                    peak[0] = max(peak[0], tree)
                    if time.perf_counter() - last >= 1:
                        last = time.perf_counter()
                        tsv.write(f"{last - started:.0f}\t{main / 2**20:.0f}\t{tree / 2**20:.0f}\n")
                        tsv.flush()

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        out, _ = proc.communicate()
        stop.set()
        sampler.join()
    shutil.rmtree(output, ignore_errors=True)
    if proc.returncode != 0:
        raise RuntimeError(f"build of {workdir} failed: see {trace.with_suffix('.log')}")
    result = json.loads(out.strip().splitlines()[-1])
    result["tree_peak_kib"] = peak[0] // 1024
    return result


# -- speed ------------------------------------------------------------------------------------


def _votes(workdir: Path) -> dict[str, dict]:
    """Majority labels and ballots per item, straight from the calls table (no hierarchy)."""
    by_item: dict[str, dict[str, list]] = defaultdict(lambda: {"text": [], "multimodal": []})
    db = sqlite3.connect(workdir / "annotations.sqlite")
    query = "SELECT item_id, prompt, annotator, sample, label, rationale, techniques_json FROM calls ORDER BY item_id, prompt, annotator, sample"
    for item, prompt, annotator, sample, label, rationale, techniques in db.execute(query):
        by_item[item][prompt].append((annotator, sample, label, rationale, techniques))
    db.close()
    resolved = {}
    for item, prompts in by_item.items():
        mm, text = prompts["multimodal"], prompts["text"]
        counts = Counter(v[2] for v in mm if v[2])
        label, n = counts.most_common(1)[0]
        first = next(v for v in mm if v[2] == label)
        text_label = Counter(v[2] for v in text if v[2]).most_common(1)[0][0]
        resolved[item] = {
            "label": label,
            "text_label": text_label,
            "reasoning": first[3],
            "techniques": [k for k, on in json.loads(first[4] or "{}").items() if on],
            "votes": [{"annotator": a, "sample": s, "label": lab} for a, s, lab, _, _ in mm],
            "text_votes": [{"annotator": a, "sample": s, "label": lab} for a, s, lab, _, _ in text],
            "agreement": n / len(mm),
        }
    return resolved


def _cells(uid: str) -> tuple[str, int]:
    """A stable 80/10/10 split and a fold in 0-4 from the id (same shares as the build)."""
    h = int(uid, 16)
    r = h % 10
    return ("train" if r < 8 else "validation" if r == 8 else "test"), (h // 10) % 5


def _decode(path: str) -> tuple[int, int]:
    with Image.open(path) as im:
        im.load()
        return im.size


def decode_all(workdir: Path) -> int:
    """Decode every image once with Pillow, in a pool of the build's size: the irreducible part of
    validating images (the build also checks limits and hashes)."""
    paths = [str(p) for p in (workdir / "images").iterdir()]
    with Pool(min(os.cpu_count() or 1, 8)) as pool:
        return sum(1 for _ in pool.imap_unordered(_decode, paths, chunksize=256))


def decode_and_write_baseline(workdir: Path, output: Path) -> int:
    """The plain way to do the build's whole job: decode every image, then write with pyarrow."""
    decode_all(workdir)
    return pyarrow_baseline(workdir, output)


def pyarrow_baseline(workdir: Path, output: Path) -> int:
    """Write what the build stores -- each row once, into its cell file, with the
    ``STORED_FEATURES`` schema and the same columns -- using pyarrow alone.

    Returns the bytes written.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq
    from vilbias.loading_script.biascorpus import STORED_FEATURES

    from vilbias.task import LABEL_NAMES, N_FOLDS, SPLITS, messages

    resolved = _votes(workdir)
    schema = STORED_FEATURES.arrow_schema
    folder = output / "data"
    folder.mkdir(parents=True)
    cells = [(s, k) for s in SPLITS for k in range(N_FOLDS)]
    writers = {c: pq.ParquetWriter(folder / f"{c[0]}-fold{c[1]}-00000-of-00001.parquet", schema) for c in cells}
    buffers: dict[tuple[str, int], list] = {c: [] for c in cells}
    with open(workdir / "articles.jsonl", encoding="utf-8") as f:
        for line in f:
            art = json.loads(line)
            uid = art["unique_id"]
            res = resolved[uid]
            cell = _cells(uid)
            label = LABEL_NAMES.index(res["label"])
            buffers[cell].append({
                "unique_id": uid, "outlet": art["outlet"], "headline": art["headline"],
                "article_text": art["article_text"], "url": art["url"], "published": art.get("published"),
                "image": {"bytes": (workdir / art["image_path"]).read_bytes(), "path": Path(art["image_path"]).name},
                "image_url": art.get("image_url", ""), "image_caption": art.get("image_caption", ""),
                "text_label": LABEL_NAMES.index(res["text_label"]), "multimodal_label": label,
                "reasoning": res["reasoning"], "techniques": res["techniques"], "votes": res["votes"],
                "text_votes": res["text_votes"], "agreement": res["agreement"], "review": "unreviewed",
                "messages": messages(art["headline"], art["article_text"], label, res["reasoning"]),
            })
            if len(buffers[cell]) == ROW_GROUP:
                writers[cell].write_table(pa.Table.from_pylist(buffers[cell], schema=schema))
                buffers[cell].clear()
    for c, w in writers.items():
        if buffers[c]:
            w.write_table(pa.Table.from_pylist(buffers[c], schema=schema))
        w.close()
    return _folder_bytes(output)


def _warm(workdir: Path) -> None:
    # Both contenders then read images from the page cache: the one run first is not penalised.
    for p in (workdir / "images").iterdir():
        p.read_bytes()


def _cpu_seconds() -> float:
    """User + system CPU of this process and its reaped children (the build's pool)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _timed(fn, *args) -> tuple[float, float, object]:
    wall, cpu = time.perf_counter(), _cpu_seconds()
    value = fn(*args)
    return time.perf_counter() - wall, _cpu_seconds() - cpu, value


def measure_speed(workdir: Path, scratch: Path) -> dict[str, dict]:
    """``{"baseline": ..., "build": ...}``, each with ``wall``, ``cpu`` and ``written`` (bytes of
    every file written); the build's also with ``corpus_bytes`` (its report's shard total)."""
    import vilbias.corpus.plan
    import vilbias.corpus.writer  # noqa: F401  (the build's modules loaded before the clock starts, as the baselines' pyarrow is)
    from vilbias.corpus import BuildConfig, build

    _warm(workdir)
    results = {}
    for name, run in (
        ("pyarrow baseline", lambda out: pyarrow_baseline(workdir, out)),
        ("decode+write base", lambda out: decode_and_write_baseline(workdir, out)),
        ("vilbias build", lambda out: build(BuildConfig(workdir=workdir, output=out))),
    ):
        out = scratch / f"out-{name.split()[-1]}"
        shutil.rmtree(out, ignore_errors=True)
        # Flush the previous contender's dirty pages so their writeback is not billed to this one.
        os.sync()
        wall, cpu, value = _timed(run, out)
        written = _folder_bytes(out)
        shutil.rmtree(out)
        print(f"  {name:<17} {wall:7.1f} s wall, {cpu:7.1f} s CPU ({written / 1e9:.2f} GB written, load {os.getloadavg()[0]:.2f})", flush=True)
        result = {"wall": wall, "cpu": cpu, "written": written}
        if isinstance(value, dict):
            result["corpus_bytes"] = value["corpus_bytes"]
        results[{"vilbias build": "build", "pyarrow baseline": "baseline"}.get(name, "decode_baseline")] = result
    return results


# -- main -------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=40_945, help="Rows of the large corpus.")
    parser.add_argument("--small-rows", type=int, default=4_000, help="Rows of the small corpus (a prefix of the large one).")
    parser.add_argument("--scratch", type=Path, default=Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "vilbias-bench" / "build",
                        help="Where corpora (cached) and outputs (deleted) go (default: a cache folder).")
    parser.add_argument("--skip-memory", action="store_true", help="Skip the peak-RSS comparison.")
    parser.add_argument("--skip-speed", action="store_true", help="Skip the pyarrow comparison.")
    parser.add_argument("--speed-corpus", choices=("large", "small"), default="large", help="Corpus the pyarrow comparison runs on (small: when time or disk is short).")
    parser.add_argument("--child-build", nargs=2, type=Path, metavar=("WORKDIR", "OUTPUT"), help=argparse.SUPPRESS)
    parser.add_argument("--smoke", action="store_true", help="A tiny run of every step, in seconds, for the test suite (tests/test_benchmarks.py); its figures mean nothing.")
    args = parser.parse_args()
    if args.smoke:
        args.rows, args.small_rows, args.scratch = 40, 20, Path(tempfile.mkdtemp(prefix="bench-build-smoke-"))
    if args.child_build:
        child_build(*args.child_build)
        return 0

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("TQDM_DISABLE", "1")
    args.scratch.mkdir(parents=True, exist_ok=True)
    print(f"cpus {os.cpu_count()}, load average {os.getloadavg()[0]:.2f}, free disk {shutil.disk_usage(args.scratch).free / 1e9:.0f} GB")
    big = ensure_corpus(args.scratch, args.rows)
    small = ensure_prefix(args.scratch, big, args.small_rows)
    image_gb = sum(p.stat().st_size for p in (big / "images").iterdir()) / 1e9
    free_gb = shutil.disk_usage(args.scratch).free / 1e9
    # Rows are stored once: an output is about the image bytes (plus text and metadata), and
    # each is deleted before the next is written.
    print(f"corpus {big} ({image_gb:.2f} GB of images); each output is about {image_gb:.1f} GB, {free_gb:.0f} GB free")
    if 1.5 * image_gb + 1 > free_gb:
        raise SystemExit(f"not enough disk for one output of {args.rows} rows: use a smaller --rows")

    if not args.skip_memory:
        print("memory (fresh subprocess per build):", flush=True)
        peaks = {}
        for rows, workdir in ((args.small_rows, small), (args.rows, big)):
            r = measure_memory(workdir, args.scratch / "out-memory", args.scratch / f"memory-{rows}")
            peaks[rows] = r
            print(
                f"  {rows:>6} rows: main {r['self_kib'] / 1024:.0f} MiB, largest worker {r['children_kib'] / 1024:.0f} MiB, "
                f"tree {r['tree_peak_kib'] / 1024:.0f} MiB (build {r['seconds']:.0f} s, load {os.getloadavg()[0]:.2f})",
                flush=True,
            )
        s, b = peaks[args.small_rows], peaks[args.rows]
        print(f"peak RSS ratio {args.rows}/{args.small_rows} = {b['self_kib'] / s['self_kib']:.2f} (target <= 1.5)")
        worker = f"{b['children_kib'] / s['children_kib']:.2f}" if s["children_kib"] else "n/a (no pool at the small size)"
        print(f"  (whole tree {b['tree_peak_kib'] / s['tree_peak_kib']:.2f}, largest worker {worker})")
        _print_size(args.rows, b["repo_bytes"], b["corpus_bytes"])

    if not args.skip_speed:
        rows, workdir = (args.rows, big) if args.speed_corpus == "large" else (args.small_rows, small)
        print(f"speed ({rows} rows, one process, load {os.getloadavg()[0]:.2f}):", flush=True)
        r = measure_speed(workdir, args.scratch)
        baseline, built = r["baseline"], r["build"]
        decoding = r["decode_baseline"]
        print(f"build / (decode every image + pyarrow write) = {built['cpu'] / decoding['cpu']:.2f} CPU time (target <= 1.1), "
              f"{built['wall'] / decoding['wall']:.2f} wall (the wall time is shared with other jobs on {os.cpu_count()} cores)")
        print(f"build / pyarrow write alone = {built['wall'] / baseline['wall']:.2f} (CPU {built['cpu'] / baseline['cpu']:.2f}): "
              "the rest is validating every image, which writing alone does not do")
        print(
            f"  bytes written: build {built['written']:,} ({built['written'] / 1e9:.2f} GB), "
            f"baseline {baseline['written']:,} ({baseline['written'] / 1e9:.2f} GB); build / baseline = {built['written'] / baseline['written']:.3f}"
        )
        _print_size(rows, built["written"], built["corpus_bytes"])
    return 0


def _print_size(rows: int, repo_bytes: int, corpus_bytes: int) -> None:
    print(
        f"repo bytes / corpus bytes ({rows} rows) = {repo_bytes / corpus_bytes:.4f} (target <= 1.05): "
        f"repo {repo_bytes:,} B ({repo_bytes / 1e9:.3f} GB), corpus {corpus_bytes:,} B ({corpus_bytes / 1e9:.3f} GB)",
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
