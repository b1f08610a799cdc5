"""The Space's cost per sentence: how long one request takes, and how much memory it holds, as an
article grows; the numbers ``MAX_SENTENCES`` (``spaces/predictors.py``) is chosen from.

    .venv/bin/python benchmarks/bench_article_length.py [--sizes 25 50 100 200 400 800] [--runs 3] [--threads N]

- Articles: the embedded sample's article texts (real news prose) joined one after another and
  cut at N sentences, so every size is real sentences of real lengths, none repeated.
- The app: :meth:`DemoApp._predict` (the Space's request without HTTP: input checks, splitting,
  the model's pass, the evidence placed in the text, the explanation, the outputs), with its
  sentence limit lifted so every size is read whole. Baseline: the plain model call
  (``SentenceBiasModel.score_sentences``) on the same sentences, in the same process.
- Every call reads its article anew (the model's sentence cache is cleared before each).
- Memory: the process's resident size sampled every 5 ms during the calls; the figure is the
  peak above the resident size before the first call of that size (the runtime's buffers are
  already grown by the warm-up).

The per-sentence figures are the slope of a least-squares line through (sentences, seconds) and
(sentences, MB), which leaves out the fixed cost of a request.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import threading
import time


def _articles_text() -> list[str]:
    from vilbias.workdir import sample_workdir

    with open(sample_workdir() / "articles.jsonl", encoding="utf-8") as f:
        return [json.loads(line)["article_text"] for line in f]


class PeakRSS:
    """Peak resident set size (bytes) while the block runs, sampled every ``interval`` seconds."""

    def __init__(self, interval: float = 0.005):
        import psutil

        self.process, self.interval, self.peak = psutil.Process(), interval, 0
        self._stop = threading.Event()

    def __enter__(self):
        self.peak = self.process.memory_info().rss
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self.process.memory_info().rss)
            time.sleep(self.interval)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.process.memory_info().rss)


def slope(xs: list[float], ys: list[float]) -> float:
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[25, 50, 100, 200, 400, 800])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: the app's choice, every core).")
    parser.add_argument("--smoke", action="store_true", help="A tiny run of every step, in seconds, for the test suite (tests/test_benchmarks.py); its figures mean nothing.")
    args = parser.parse_args()
    if args.smoke:
        args.sizes, args.runs = [5, 10], 1
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

    import psutil
    from vilbias.spaces.app import DemoApp, SpaceConfig
    from vilbias.spaces.inputs import Limits

    from vilbias.text import split_sentences

    config = SpaceConfig(threads=args.threads, limits=Limits(max_article_chars=10**7))
    app = DemoApp(config)
    app.warm_up()
    view = app.predictors.get(app.default_model)
    view.predictor.inner.max_sentences = None  # every size read whole
    model = view.model

    sentences = [s for text in _articles_text() for s in split_sentences(text)]
    if len(sentences) < max(args.sizes):
        raise SystemExit(f"the sample has {len(sentences)} sentences; the largest size asked is {max(args.sizes)}")
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    print(f"CPU: {cpu}; {os.cpu_count()} cores; torch threads {config.torch_threads()}; load average "
          + " ".join(f"{v:.1f}" for v in os.getloadavg()))
    print(f"{'sentences':>9} {'chars':>7} {'app s':>7} {'plain s':>8} {'app/plain':>9} {'peak MB':>8}")
    rows = []
    for n in args.sizes:
        text = " ".join(sentences[:n])
        app_s, plain_s = [], []
        rss_before = psutil.Process().memory_info().rss
        with PeakRSS() as peak:
            for _ in range(args.runs):
                model._cache.clear()
                start = time.perf_counter()
                *_, outputs = app._predict(None, "", text, "", app.default_model)
                app_s.append(time.perf_counter() - start)
                model._cache.clear()
                start = time.perf_counter()
                model.score_sentences(sentences[:n])
                plain_s.append(time.perf_counter() - start)
        a, p = statistics.median(app_s), statistics.median(plain_s)
        mb = (peak.peak - rss_before) / 2**20
        rows.append((n, a, p, mb))
        print(f"{n:>9} {len(text):>7,} {a:>7.2f} {p:>8.2f} {a / p:>9.2f} {mb:>8.1f}")
    ns = [r[0] for r in rows]
    per_app, per_plain, per_mb = slope(ns, [r[1] for r in rows]), slope(ns, [r[2] for r in rows]), slope(ns, [r[3] for r in rows])
    chars = statistics.fmean(len(s) + 1 for s in sentences)
    print(f"per sentence: app {per_app * 1000:.2f} ms, plain model call {per_plain * 1000:.2f} ms; memory: peak "
          f"{max(r[3] for r in rows):.1f} MB above the warm process at any size, slope {per_mb * 1024:.0f} kB a sentence "
          f"(the runtime's buffers follow the batch, not the article); mean sentence {chars:.0f} characters "
          f"(a 30,000-character article of these: ~{30_000 / chars:.0f} sentences)")
    for budget in (1.0, 2.0, 3.0):
        print(f"sentences read within {budget:.0f} s (one request alone, the line's fixed cost included): "
              f"{int((budget - (rows[0][1] - per_app * rows[0][0])) / per_app)}")


if __name__ == "__main__":
    main()
