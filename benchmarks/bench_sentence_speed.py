"""The shipped sentence model on real-length articles: the plain fp32 call, the shipped path and the
Space under N concurrent users, with FLOPs, the CPU's measured peak and each variant's accuracy.

    .venv/bin/python benchmarks/bench_sentence_speed.py [--users 20] [--per-user 5] [--articles 40]

What it prints, in one run (ratios are against the plain fp32 call measured in the same run):

- **plain fp32**: ``AutoModel.from_pretrained(training/default_model, inference_runtime="torch")``
  and ``score_article`` on each article's sentences, 2 torch threads, one process, no sentence
  cache: today's model called as a user would call it (sentence splitting not timed).
- **int8 on torch**: the same with ``inference_precision="int8"`` (PyTorch dynamic quantisation).
- **ONNX Runtime fp32**: ``inference_runtime="onnxruntime"``, its slices on 2 single-core passes.
- **shipped path**: the model as the checkpoint's ``config.json`` says to run it (``auto``: the
  path :func:`vilbias.models.sentence_runtime.choose_runtime` picks for this CPU, printed with its
  reason), through the catalogue's predictor (``load_predictor``), one article at a time
  (splitting timed) and in annotation's batches of 32 articles, every article new to it (its cache
  cleared); then the same articles again (the cache). From the batch rate: the time to annotate
  300 such articles offline (target <= 30 s on a CPU with VNNI).
- **the Space**: a real ``vilbias demo`` process (its own defaults), driven by ``--users`` threads of
  ``gradio_client``, each sending ``--per-user`` articles back to back: articles/s, p50/p95
  latency, errors; once with distinct articles, once with ``--distinct`` articles sent again and
  again (target on a CPU with VNNI, distinct articles: >= 3x the plain call, p95 <= 4 s, 0 errors);
  and the CPU each article cost the Space's process and the ``gradio_client`` threads measuring it
  (they share the machine: on 2 cores the harness's CPU is taken from the app's). The clients share
  one SSL context (gradio_client makes one per request otherwise, ~60 ms of CPU an article on
  plain HTTP); ``--stock-client`` drives it with gradio_client as it comes, as an outside check does.
  ``--space-only``: the plain call on the very articles the Space is sent, then the Space with
  distinct articles, and nothing else (a few minutes).
- **FLOPs per article**: multiply-adds of the encoder's linear layers and attention for the tokens
  actually run (padding included, as the batches run them), x2; the share of this CPU's peak that
  the plain call and the shipped path reach, the peak measured with the library kernels each
  runs on (:func:`kernel_peaks`: PyTorch fp32 and bf16, ONNX Runtime fp32 and int8, one core by
  CPU time; 2 cores' peak is twice one core's); and, by CPU time on one core, the plain call's,
  ONNX Runtime's and the shipped path's share of their kernel's peak, which bounds what any path
  on that kernel can gain per core.
- **accuracy**: sentence macro-F1 of each variant on the held-out test split of BABE SG2
  (``vilbias.corpus.sentences.sentence_splits``, the split the shipped card reports).

The articles are real text read from ``../shared/data`` (this benchmark is not product code): the
English news pages of ``../shared/data/news`` through the ingest extractor (cut at 15,000
characters), and BABE SG2 sentences of one outlet joined into articles of log-normal length
(median ~4,000 characters, 15,000 at most), seeded. The machine's load is printed beside each
measurement: on a shared machine absolute numbers move; the ratios, taken in one run, are the result.
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import statistics
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
BABE = SHARED / "babe" / "final_labels_SG2_public.csv"
THREADS = 2
PEAK_N = 2048
"""The side of the matrices :func:`kernel_peaks` multiplies (``--smoke``: a small one)."""
PEAK_SECONDS = 1.0
"""CPU seconds :func:`kernel_peaks` runs each kernel for (``--smoke``: a few runs)."""
SMOKE_CHARS = 600
"""``--smoke``: each article cut to about this many characters (a few sentences), so every path runs on little."""

sys.path.insert(0, str(Path(__file__).resolve().parent))
from demo_process import cpu_seconds, load_average, running_demo  # noqa: E402  (the benchmarks' own helper)


def real_articles(n: int, seed: int = 0, pages: int | None = None) -> list[dict]:
    """``{"headline", "text"}`` of real-length articles (see the module docstring); ``pages``: read
    at most this many news pages (``--smoke``: one; reading them all until n are articles takes
    seconds), the rest from BABE's sentences."""
    from vilbias.ingest.extract import extract_article

    articles = []
    for page in sorted((SHARED / "news").glob("*.html"))[:pages]:
        if len(articles) >= n:
            break  # the first n in this order, as articles[:n] below would keep
        got = extract_article(page.read_text(encoding="utf-8", errors="replace"), f"https://{page.stem}.example/")
        if got.language == "en" and got.page_kind == "article" and len(got.text) > 1500:
            articles.append({"headline": got.headline, "text": got.text[:15000]})
    by_outlet = defaultdict(list)
    with open(BABE, encoding="utf-8-sig", newline="") as f:
        for row in csv.DictReader(f, delimiter=";"):
            by_outlet[row["outlet"]].append(row["text"])
    rng = random.Random(seed)
    outlets = sorted(by_outlet)
    while len(articles) < n:
        pool = list(by_outlet[rng.choice(outlets)])
        rng.shuffle(pool)
        target, text = min(15000, max(1200, int(rng.lognormvariate(8.3, 0.5)))), []
        while pool and sum(len(s) + 1 for s in text) < target:
            text.append(pool.pop())
        articles.append({"headline": text.pop(0)[:100], "text": " ".join(text)})
    return articles[:n]


def babe_test_split() -> list[dict]:
    """The held-out test split of BABE SG2 (whole articles), as the shipped card scores it."""
    from vilbias.corpus.sentences import read_sentences, sentence_splits

    rows = read_sentences(BABE)[0]
    test = set(sentence_splits(rows)["default"]["test"])
    return [r for r in rows if r["unique_id"] in test]


def macro_f1(model, test: list[dict]) -> float:
    from vilbias.metrics.scores import closed_metrics

    scores = model.score_sentences([r["text"] for r in test])
    return closed_metrics([r["label"] for r in test], [int(s.flagged) for s in scores])["f1_macro"]


def encoder_flops(model, sentences: list[list[str]], batch_size: int = 16) -> float:
    """Mean FLOPs per article (2 x multiply-adds) of the encoder as ``score_article`` batches it:
    the linear layers and attention of every layer for every token run, padding included; the
    embeddings, layer norms and the heads are left out (well under 1 %)."""
    config = model.bert.config
    d, ff, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    per_token = 2 * layers * (4 * d * d + 2 * d * ff)
    total = 0
    for article in sentences:
        lengths = sorted(len(ids) for ids in model.tokenizer(article, truncation=True, max_length=model.config.max_length)["input_ids"])
        for start in range(0, len(lengths), batch_size):
            batch = lengths[start:start + batch_size]
            width = max(batch)
            total += len(batch) * width * per_token + 2 * layers * 2 * len(batch) * width * width * d
    return total / len(sentences)


def kernel_peaks(seconds: float | None = None) -> dict[str, float]:
    """One core's measured peak (GFLOP/s, or GOP/s for int8), by CPU time, of each library kernel the
    model's paths run its matrix products on: a 2048 x 2048 x 2048 product in PyTorch fp32 (MKL /
    oneDNN, AVX-512 where the CPU has it), PyTorch bf16 (oneDNN: AMX tiles where the CPU has them,
    else avx512_bf16 or emulation), ONNX Runtime fp32 (MLAS ``MatMul``) and ONNX Runtime int8 (MLAS
    ``QLinearMatMul`` u8 x s8, the op the static int8 graph runs: VNNI or AMX where the CPU has them).
    Measured, not computed from the CPU's datasheet, so "a share of the peak" is of what this CPU's
    libraries reach, whatever instructions it has; two cores' peak is twice one core's."""
    import numpy as np
    import onnxruntime as ort
    import torch
    from onnx import TensorProto, helper, numpy_helper

    n, seconds = PEAK_N, PEAK_SECONDS if seconds is None else seconds
    rng = np.random.default_rng(0)
    a, b = torch.randn(n, n), torch.randn(n, n)

    def session(nodes, inputs, output, initializers):
        graph = helper.make_graph(nodes, "peak", inputs, [output], initializers)
        options = ort.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads, options.log_severity_level = 1, 1, 3
        return ort.InferenceSession(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString(),
                                    options, providers=["CPUExecutionProvider"])

    fp32 = session([helper.make_node("MatMul", ["x", "w"], ["y"])], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, n])],
                   helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, n]),
                   [numpy_helper.from_array(rng.standard_normal((n, n), dtype=np.float32), "w")])
    scale = [numpy_helper.from_array(np.array(v, dtype=t), name) for name, v, t in
             (("xs", 0.02, np.float32), ("xz", 128, np.uint8), ("ws", 0.01, np.float32), ("wz", 0, np.int8),
              ("ys", 0.5, np.float32), ("yz", 128, np.uint8))]
    int8 = session([helper.make_node("QLinearMatMul", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"])],
                   [helper.make_tensor_value_info("x", TensorProto.UINT8, [n, n])], helper.make_tensor_value_info("y", TensorProto.UINT8, [n, n]),
                   [numpy_helper.from_array(rng.integers(-127, 127, (n, n), dtype=np.int8), "w"), *scale])
    x32, x8 = rng.standard_normal((n, n), dtype=np.float32), rng.integers(0, 255, (n, n), dtype=np.uint8)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        kernels = {"fp32 (PyTorch)": lambda: a @ b, "bf16 (PyTorch)": (lambda x, y: lambda: x @ y)(a.bfloat16(), b.bfloat16()),
                   "fp32 (ONNX Runtime)": lambda: fp32.run(None, {"x": x32}), "int8 (ONNX Runtime)": lambda: int8.run(None, {"x": x8})}
        out = {}
        for name, fn in kernels.items():
            fn()
            runs, start = 0, time.process_time()
            while time.process_time() - start < seconds:
                fn()
                runs += 1
            out[name] = 2 * n ** 3 * runs / (time.process_time() - start) / 1e9
    finally:
        torch.set_num_threads(before)
    return out


KERNEL = {"float32": "fp32", "bfloat16": "bf16", "int8": "int8"}
"""A path's precision -> the kernel that runs most of its FLOPs (with its runtime: :func:`kernel_of`)."""


def kernel_of(runtime: str, precision: str) -> str:
    """The key of :func:`kernel_peaks` a path's matrix products run on."""
    return f"{KERNEL[precision]} ({'PyTorch' if runtime == 'torch' else 'ONNX Runtime'})"


def _rate(fn, items) -> float:
    start = time.perf_counter()
    fn(items)
    return len(items) / (time.perf_counter() - start)



def space_under_load(articles: list[dict], users: int, per_user: int, flags: list[str], stock_client: bool = False) -> dict:
    """A ``vilbias demo`` process (with ``flags``) driven by ``users`` threads of ``gradio_client``,
    each sending ``per_user`` articles back to back (each user starts at its own article).

    gradio_client makes an ``httpx`` client for each request's join and its event stream, and each
    makes an SSL context (reading the CA bundle: ~20 ms of CPU) although the Space is plain HTTP on
    loopback; the clients here share one context (``ssl_verify`` is handed to httpx as its
    ``verify``), so that less of the 2 cores goes to measuring. ``stock_client``: gradio_client as
    it comes, as an outside check of the Space runs it."""
    import ssl

    from gradio_client import Client

    shared = {} if stock_client else {"ssl_verify": ssl.create_default_context()}
    with running_demo(flags) as url:
        Client(url, verbose=False).predict(None, articles[0]["headline"], articles[0]["text"], "", "offline-default", api_name="/predict")
        latencies, errors, lock = [], [], threading.Lock()

        def user(k: int) -> None:
            client = Client(url, verbose=False, **shared)
            for j in range(per_user):
                a = articles[(k * per_user + j) % len(articles)]
                start = time.perf_counter()
                try:
                    client.predict(None, a["headline"], a["text"], "", "offline-default", api_name="/predict")
                except Exception as e:  # counted and reported: an error is a result here
                    with lock:
                        errors.append(f"{type(e).__name__}: {str(e)[:80]}")
                    continue
                with lock:
                    latencies.append(time.perf_counter() - start)

        threads = [threading.Thread(target=user, args=(k,)) for k in range(users)]
        start, server, client = time.perf_counter(), cpu_seconds(url.pid), time.process_time()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - start
        server, client = cpu_seconds(url.pid) - server, time.process_time() - client
    latencies.sort()
    done = max(1, len(latencies))
    return {"articles_s": len(latencies) / wall, "p50": statistics.median(latencies) if latencies else float("nan"),
            "p95": latencies[max(0, int(0.95 * len(latencies)) - 1)] if latencies else float("nan"), "errors": errors,
            "server_cpu": server / done, "client_cpu": client / done}


def _fresh(model) -> None:
    """Forget what ``model`` has scored, so that a timed run reads every article anew."""
    if getattr(model, "_cache", None) is not None:
        model._cache.clear()


def per_core(folder, sentences: list[list[str]], flops: float, rounds: int = 3) -> None:
    """CPU seconds per article on one core: the plain fp32 torch call against ONNX Runtime fp32 and
    the path ``auto`` chooses here (best of ``rounds``), and the share each reaches of one core's
    measured peak of the kernel it runs on (:func:`kernel_peaks`)."""
    import torch
    from transformers import AutoModel

    torch.set_num_threads(1)
    try:
        chosen = AutoModel.from_pretrained(folder)
        models = {"plain fp32 torch": (AutoModel.from_pretrained(folder, inference_runtime="torch"), "fp32 (PyTorch)"),
                  "ONNX Runtime fp32": (AutoModel.from_pretrained(folder, inference_runtime="onnxruntime"), "fp32 (ONNX Runtime)"),
                  f"the shipped path ({chosen.runtime.choice.path})": (chosen, kernel_of(chosen.runtime.choice.runtime, chosen.runtime.choice.precision))}
        peaks = kernel_peaks()
        cpu: dict[str, list[float]] = {k: [] for k in models}
        for m, _ in models.values():
            m._cache = None
            if rounds > 1:  # first-call costs out of the best of several (one round, --smoke: nothing to leave out)
                m.score_article(sentences[0])
        for _ in range(rounds):
            for name, (m, _) in models.items():
                start = time.process_time()
                for article in sentences:
                    m.score_article(article)
                cpu[name].append((time.process_time() - start) / len(sentences))
    finally:
        torch.set_num_threads(THREADS)
    base = min(cpu["plain fp32 torch"])
    print(f"one core (CPU time, best of {rounds}; one core's measured peak " + ", ".join(f"{k} {v:.0f}" for k, v in peaks.items()) + " G(FL)OP/s):")
    for name, runs in cpu.items():
        kernel = models[name][1]
        print(f"  {name:72s} {1 / min(runs):6.2f} articles/s per core  {base / min(runs):5.2f}x  "
              f"{flops / min(runs) / 1e9 / peaks[kernel]:4.0%} of the {kernel} peak")
    fp32 = max(peaks["fp32 (PyTorch)"], peaks["fp32 (ONNX Runtime)"])
    print(f"  => at these FLOPs no fp32 path can exceed {fp32 / (flops / base / 1e9):.2f}x the plain call per core "
          f"(bf16 {peaks['bf16 (PyTorch)'] / (flops / base / 1e9):.1f}x, int8 {peaks['int8 (ONNX Runtime)'] / (flops / base / 1e9):.1f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--articles", type=int, default=40, help="Real-length articles timed per variant.")
    parser.add_argument("--users", type=int, default=20, help="Concurrent Space users.")
    parser.add_argument("--per-user", type=int, default=5, help="Articles each Space user sends.")
    parser.add_argument("--distinct", type=int, default=20,
                        help="Distinct articles in the Space's second run (sent again and again, as a demo's popular pages are).")
    parser.add_argument("--skip-space", action="store_true", help="Only the in-process variants.")
    parser.add_argument("--space-only", action="store_true",
                        help="Only the plain fp32 call (the baseline) and the Space with distinct articles, side by side in one run.")
    parser.add_argument("--space-path", default=None, metavar="RUNTIME/PRECISION",
                        help="With --space-only: also run the Space with the default model on this path (e.g. onnxruntime/float32, "
                             "the path a CPU without VNNI or AMX gets), its models.yaml otherwise the shipped one.")
    parser.add_argument("--stock-client", action="store_true",
                        help="Drive the Space with gradio_client as it comes (an SSL context made per request), as an outside "
                             "check does; by default its clients share one SSL context, so the harness takes less of the CPU.")
    parser.add_argument("--smoke", action="store_true", help="A tiny run of every step, in seconds, for the test suite (tests/test_benchmarks.py); its figures mean nothing.")
    args = parser.parse_args()
    if args.smoke:
        global PEAK_N, PEAK_SECONDS, THREADS  # one thread: the suite runs a process a core
        args.articles, args.users, args.per_user, args.distinct, PEAK_N, PEAK_SECONDS, THREADS = 2, 2, 1, 1, 256, 0.01, 1
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import torch
    from transformers import AutoModel

    from vilbias.models.catalogue import load_predictor, shipped_sentence_model
    from vilbias.models.predictors import item_sentences, predict_batch
    from vilbias.models.sentence_runtime import describe_cpu
    from vilbias.task import Item

    torch.set_num_threads(THREADS)
    folder = shipped_sentence_model()
    articles = real_articles(max(args.articles, args.users * args.per_user), pages=1 if args.smoke else None)
    if args.smoke:
        articles = [{**a, "text": a["text"][:SMOKE_CHARS]} for a in articles]
    timed = articles[:args.articles]
    items = [Item("", a["headline"], a["text"], -1, None) for a in timed]
    sentences = [item_sentences(i)[:120] for i in items]
    chars = sorted(len(a["text"]) for a in timed)
    print(f"{len(timed)} articles: median {statistics.median(chars):,.0f} characters (max {chars[-1]:,}), "
          f"{statistics.mean(map(len, sentences)):.1f} sentences on average (at most 120 read); CPU: {describe_cpu()}")

    plain = AutoModel.from_pretrained(folder, inference_precision="float32", inference_runtime="torch")
    plain._cache = None  # today's model: every sentence through the encoder
    if args.space_only:  # the plain call on the very articles the Space is sent, every sentence the Space reads
        sent = articles[:args.users * args.per_user]
        read = [item_sentences(Item("", a["headline"], a["text"], -1, None)) for a in sent]
        plain.score_article(read[0])
        print(f"{len(sent)} articles sent to the Space: median {statistics.median(len(a['text']) for a in sent):,.0f} characters, "
              f"{statistics.mean(map(len, read)):.1f} sentences on average; load average before the plain call: {load_average()}")
        cpu = time.process_time()
        base = _rate(lambda xs: [plain.score_article(s) for s in xs], read)
        print(f"  plain fp32 (AutoModel + score_article, torch, 2 threads) on them: {base:.2f} articles/s, "
              f"{(time.process_time() - cpu) / len(read) * 1000:.0f} ms CPU per article (load after {load_average()})")
        del plain
        space_step(sent, args, base)
        if args.space_path:
            space_step(sent, args, base, path=args.space_path)
        return
    onnx = AutoModel.from_pretrained(folder, inference_runtime="onnxruntime")
    predictor = load_predictor(str(folder), "sentence", max_sentences=120)
    choice = predictor.model.runtime.choice
    print(f"the shipped path (config auto) here: {choice.reason}")
    shipped = choice.path
    int8 = AutoModel.from_pretrained(folder, inference_precision="int8", inference_runtime="torch")
    PLAIN = "plain fp32 (AutoModel + score_article, torch, 2 threads)"
    variants = {PLAIN: lambda xs: [plain.score_article(s) for s in xs],
                "int8 on torch (dynamic), score_article": lambda xs: [int8.score_article(s) for s in xs],
                f"ONNX Runtime fp32, score_article, {THREADS} passes side by side": lambda xs: [onnx.score_article(s) for s in xs]}
    variants[f"shipped path ({shipped}), one article per call, splitting timed"] = \
        lambda xs: [predictor.predict(items[sentences.index(s)]) for s in xs]
    variants[f"shipped path ({shipped}), annotation batches of 32"] = \
        lambda xs: [predict_batch(predictor, [items[sentences.index(s)] for s in xs[i:i + 32]]) for i in range(0, len(xs), 32)]
    for fn in variants.values() if not args.smoke else ():  # --smoke: one round, its figures meaningless anyway
        fn(sentences[:2])  # first-call costs
    rates: dict[str, list[float]] = {k: [] for k in variants}
    print(f"load average before the in-process runs: {load_average()}")
    for _ in range(1 if args.smoke else 2):  # alternated, so that other load on the machine weighs on each alike
        for name, fn in variants.items():
            for model in (int8, onnx, predictor.model):
                _fresh(model)  # every article new to every variant
            rates[name].append(_rate(fn, sentences))
    repeat = f"shipped path ({shipped}), one article per call, articles read before (cache)"
    rates[repeat] = [_rate(variants[f"shipped path ({shipped}), one article per call, splitting timed"], sentences)]
    print(f"load average after: {load_average()}")
    base = statistics.median(rates[PLAIN])
    for name, r in rates.items():
        print(f"  {name:72s} {statistics.median(r):6.2f} articles/s  {statistics.median(r) / base:5.2f}x")

    flops = encoder_flops(plain, sentences)
    peaks = kernel_peaks()
    shipped_rate = statistics.median(rates[f"shipped path ({shipped}), annotation batches of 32"])
    kernel = kernel_of(choice.runtime, choice.precision)
    print(f"offline annotation of 300 such articles on the shipped path (its batch rate): {300 / shipped_rate:.0f} s "
          f"(target <= 30 s on a CPU with VNNI); the plain call {300 / base:.0f} s")
    print(f"FLOPs per article (encoder, as batched): {flops / 1e9:.1f} GFLOP; {THREADS} cores' measured peak ({THREADS} x one core's): "
          + ", ".join(f"{k} {THREADS * v:.0f}" for k, v in peaks.items()) + f" G(FL)OP/s (load {load_average()})")
    print(f"  plain fp32 reaches {base * flops / 1e9:.0f} GFLOP/s = {base * flops / 1e9 / (THREADS * peaks['fp32 (PyTorch)']):.0%} of the "
          f"fp32 (PyTorch) peak; the shipped path in annotation batches {shipped_rate * flops / 1e9:.0f} G(FL)OP/s = "
          f"{shipped_rate * flops / 1e9 / (THREADS * peaks[kernel]):.0%} of the {kernel} peak")
    per_core(folder, sentences[:12], encoder_flops(plain, sentences[:12]), rounds=1 if args.smoke else 3)

    test = babe_test_split()[:8 if args.smoke else None]
    for model in (plain, int8, onnx, predictor.model):
        _fresh(model)
    print(f"macro-F1 on the held-out test split ({len(test)} BABE SG2 sentences): plain fp32 {macro_f1(plain, test):.4f}, "
          f"int8 on torch {macro_f1(int8, test):.4f}, ONNX Runtime fp32 {macro_f1(onnx, test):.4f}; "
          f"the shipped path ({shipped}) {macro_f1(predictor.model, test):.4f}")

    if not args.skip_space:
        space_step(articles[:args.users * args.per_user], args, base)
        if not args.smoke:
            space_step(articles[:args.distinct], args, base)


def space_step(sent: list[dict], args, base: float, path: str | None = None) -> None:
    """The Space under ``args.users`` users sending ``sent`` (distinct, or fewer articles sent again), against the plain call's
    rate ``base``; with ``path`` (``runtime/precision``) its default model asked to run on that path."""
    import tempfile

    import yaml
    from vilbias.spaces.config import MODELS_YAML

    total = args.users * args.per_user
    name = f"{total} distinct articles" if len(sent) >= total else f"{len(sent)} distinct articles, each sent {total // len(sent)} times"
    print(f"load average before the Space ({name}{f', {path}' if path else ''}): {load_average()}")
    with tempfile.TemporaryDirectory(prefix="bench-space-") as tmp:
        flags = []
        if path:
            models = yaml.safe_load(MODELS_YAML.read_text(encoding="utf-8"))
            models["models"][0]["inference_runtime"], models["models"][0]["inference_precision"] = path.split("/")
            (Path(tmp) / "models.yaml").write_text(yaml.safe_dump(models), encoding="utf-8")
            flags = ["--models-config", str(Path(tmp) / "models.yaml")]
        space = space_under_load(sent, args.users, args.per_user, flags, stock_client=args.stock_client)
    print(f"the Space ({f'default model on {path}' if path else 'its defaults'}), {args.users} users x {args.per_user} articles, {name}: {space['articles_s']:.2f} articles/s = "
          f"{space['articles_s'] / base:.2f}x plain fp32; p50 {space['p50']:.1f} s, p95 {space['p95']:.1f} s; "
          f"{len(space['errors'])} errors {space['errors'][:3]} (target on a CPU with VNNI: >= 3x, p95 <= 4 s, 0 errors; "
          f"load after {load_average()})")
    print(f"  CPU per article: the Space's process {space['server_cpu'] * 1000:.0f} ms, the {args.users} gradio_client "
          f"threads measuring it {space['client_cpu'] * 1000:.0f} ms "
          f"({'stock gradio_client' if args.stock_client else 'gradio_client sharing one SSL context'})")


if __name__ == "__main__":
    main()
