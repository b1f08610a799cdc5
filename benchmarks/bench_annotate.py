"""Annotation as server work, throughput and memory against a local OpenAI-compatible server.

    .venv/bin/python benchmarks/bench_annotate.py [--calls 20000] [--latency 0.05] [--concurrency 32] [--n-support full]

The fake server (tests/fakes/openai_server.py) runs in its own process and answers each request
after ``--latency`` seconds, with a complete answer in the schema the request's
``response_format`` asks for (as a structured-output server would), ``n`` choices for a request
for ``n`` samples (as vLLM does; ``--n-support refuse|ignore`` plays a server without ``n``).

- **Server work.** The whole ``vilbias annotate`` stage (three vision annotators, both prompts,
  K = 3, ``--calls`` samples in all) is run against the server, which counts the requests and the
  prompt tokens it prefilled (no prefix cache). Printed per item, and the prefill against the
  minimum (each distinct prompt once per annotator and item; the image descriptions included):
  the target ratio is 1.00 (one request per item, prompt and annotator, for its K samples).
- **Throughput.** The ideal rate is concurrency / latency requests per second (640/s for 32 /
  50 ms): the three annotators (both prompts each) and the image description are asked together,
  their requests streamed through the server's one budget of ``concurrency`` requests in flight
  (shared by every backend that sends to it; the text prompts wait for no description), so no
  more than that is ever at the server, and no annotator's ramp-up or tail leaves it short while
  work remains. The target is a ratio of at least 0.95 of
  it, for the backend alone (requests streamed
  into ``OpenAIBackend.chat``) and for the whole stage (prompt rendering, the structured-output
  request, the strict schema check of every sample, grouped SQLite commits, the counting pass
  and the summary; every item shares one image, as articles with the same wire photo do, so the
  stage reads and encodes it once; a warm-up run of the stage on one item comes first, uncounted,
  so what a process pays once is not billed to the rate). Each also prints the client's CPU time per request, a figure that other load
  on the machine disturbs less than the rate; the stage also prints the server's own time per
  answer (its latency plus its event loop serving the other connections) and the ratio to the
  bound that time allowed. Beside each ratio, the most of the bound any client could reach at
  this size: with ``concurrency`` in flight some connection carries ceil(requests / concurrency)
  answers one after another, so a short run whose last wave is part-full cannot reach 1 (at
  ``--calls 2000`` the stage asks 673 requests, 22 waves of 32 for 21.03 waves' work: 0.948 at
  the server's 50.4 ms).
- **Resume.** The last sample of every tenth item, prompt and annotator is deleted and the stage
  run again: it asks only those (one request for one sample each).
- **Memory.** Peak RSS after the first quarter of the samples against peak RSS at the end (flat
  means the difference does not grow with the run).
"""

from __future__ import annotations

import argparse
import json
import math
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes.workdirs import make_workdir  # noqa: E402
from vilbias.annotate.pipeline import AnnotateConfig, annotate  # noqa: E402
from vilbias.annotate.specs import AnnotatorSpec  # noqa: E402
from vilbias.models.chat import ChatRequest  # noqa: E402
from vilbias.models.chat_openai import OpenAIBackend  # noqa: E402

TARGET = 0.95
"""Requests/s against the concurrency bound, for the backend alone and for the whole stage."""
ANNOTATORS, SAMPLES, PROMPTS = 3, 3, 2
# The server process: a FakeOpenAIServer whose answer fills the schema a request asks for.
SERVER = """
import json, sys, threading
from tests.fakes.openai_server import FakeOpenAIServer

answers = {}

def responder(body):
    rf = body.get("response_format")
    if rf is None:
        return "plain text"
    name = rf["json_schema"]["name"]
    if name not in answers:
        schema = rf["json_schema"]["schema"]
        names = schema["properties"]["techniques"]["required"]
        answers[name] = json.dumps({"techniques": dict.fromkeys(names, "Absent"), "tone": "Neutral",
                                    "label": "not biased", "rationale": "Plain reporting with both sides quoted."})
    return answers[name]

server = FakeOpenAIServer(responder, latency_s=float(sys.argv[1]), record=False, n_support=sys.argv[2]).start()
print(server.base_url, flush=True)
threading.Event().wait()
"""


def server_stats(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url + "/stats") as f:
        return json.load(f)


def delta(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    return {k: after[k] - before[k] for k in after}


def wave_ceiling(requests: int, concurrency: int, latency: float, served: float) -> float:
    """The most of the bound (``concurrency / latency`` requests/s) that any client reaches for
    ``requests`` answered in ``served`` seconds each with ``concurrency`` in flight: some connection
    carries ceil(requests / concurrency) of them one after another, so the run takes at least that
    many answers' time (a short run whose last wave is part-full cannot reach 1)."""
    return requests * latency / (concurrency * math.ceil(requests / concurrency) * served)


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


class RssWatcher:
    """Samples RSS; ``mark()`` remembers the peak so far (the 'early' reading)."""

    def __init__(self):
        self.peak = 0.0
        self.early = None
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self):
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, rss_mb())

    def mark(self):
        self.early = self.peak = max(self.peak, rss_mb())

    def stop(self):
        self._stop.set()
        self._t.join()
        self.peak = max(self.peak, rss_mb())


def bench_backend(url: str, calls: int, concurrency: int) -> tuple[float, float, RssWatcher]:
    backend = OpenAIBackend("fake-model", url, concurrency=concurrency)
    watcher = RssWatcher()
    done = [0]

    def on_result(i, r):
        if r.text is None:
            raise RuntimeError(r.error)
        done[0] += 1
        if done[0] == calls // 4:
            watcher.mark()

    requests = (ChatRequest([{"role": "user", "content": f"item {i} " + "word " * 300}]) for i in range(calls))
    start, cpu = time.perf_counter(), time.process_time()
    backend.chat(requests, on_result=on_result)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    watcher.stop()
    return calls / elapsed, cpu / calls, watcher


def bench_pipeline(url: str, calls: int, concurrency: int, workdir: Path) -> tuple[dict, float, float, RssWatcher, dict, int]:
    """The stage over ``calls`` samples: its server work, requests/s, CPU per request, memory,
    summary and the number of items."""
    items = -(-calls // (ANNOTATORS * PROMPTS * SAMPLES))
    make_workdir(workdir, n=items, shared_image=True, language="en")  # as ingest records it (workdir 1.1)
    # Vision annotators (as the paper's VLMs): both prompts, the image in the multimodal one.
    specs = [
        AnnotatorSpec(name=f"fake-{i}", kind="openai", model=f"fake-model-{i}", base_url=url, concurrency=concurrency, vision=True,
                      params={"temperature": 0.7})
        for i in range(ANNOTATORS)
    ]
    # A warm-up run of the stage on one item first (its own workdir, not counted): what a process
    # pays once (the first imports of the stage's modules, the HTTP client's set-up) is not billed
    # to the run's rate, as the backend's set-up is not to the backend's.
    warm = workdir.parent / "warm-up"
    make_workdir(warm, n=1, texts={0: "An article the run does not have. " * 5}, language="en")  # its own text and image
    annotate(AnnotateConfig(workdir=warm, annotator_specs=specs, samples=SAMPLES, progress=False))
    watcher = RssWatcher()
    import vilbias.annotate.store as store_mod

    original = store_mod.AnnotationStore.record_calls
    count = [0]

    def counting(self, rows):
        original(self, rows)
        before, count[0] = count[0], count[0] + len(rows)
        if before < calls // 4 <= count[0]:
            watcher.mark()

    store_mod.AnnotationStore.record_calls = counting
    stats = server_stats(url)
    start, cpu = time.perf_counter(), time.process_time()
    try:
        summary = annotate(AnnotateConfig(workdir=workdir, annotator_specs=specs, samples=SAMPLES, progress=False))
    finally:
        store_mod.AnnotationStore.record_calls = original
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    watcher.stop()
    work = delta(server_stats(url), stats)
    return work, work["requests"] / elapsed, cpu / work["requests"], watcher, summary, items


def bench_resume(url: str, workdir: Path, items: int) -> tuple[int, int, int]:
    """Delete the last sample of every tenth item (each prompt and annotator), run again: the
    samples deleted, the requests and the samples the re-run asked for."""
    db = sqlite3.connect(workdir / "annotations.sqlite")
    with db:
        lost = db.execute("DELETE FROM calls WHERE sample = ? AND CAST(substr(item_id, 6) AS INTEGER) % 10 = 0", (SAMPLES - 1,)).rowcount
    db.close()
    specs = [AnnotatorSpec(name=f"fake-{i}", kind="openai", model=f"fake-model-{i}", base_url=url, vision=True, params={"temperature": 0.7})
             for i in range(ANNOTATORS)]
    stats = server_stats(url)
    annotate(AnnotateConfig(workdir=workdir, annotator_specs=specs, samples=SAMPLES, progress=False))
    work = delta(server_stats(url), stats)
    return lost, work["requests"], work["choices"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000, help="samples the stage stores (backend: requests)")
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--n-support", choices=("full", "refuse", "ignore"), default="full",
                        help="how the server takes requests for n > 1 samples")
    parser.add_argument("--smoke", action="store_true", help="A tiny run of every step, in seconds, for the test suite (tests/test_benchmarks.py); its figures mean nothing.")
    args = parser.parse_args()
    if args.smoke:
        args.calls, args.latency, args.concurrency = 36, 0.001, 4
    ideal = args.concurrency / args.latency
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(args.latency), args.n_support], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        url = server.stdout.readline().strip()
        stats = server_stats(url)
        rate, cpu, mem = bench_backend(url, args.calls, args.concurrency)
        alone = delta(server_stats(url), stats)
        ceiling = wave_ceiling(args.calls, args.concurrency, args.latency, alone["service_s"] / alone["answered"])
        print(f"backend : {args.calls} requests, {rate:7.1f} requests/s, ideal {ideal:.0f}/s -> ratio {rate / ideal:.3f} (target >= {TARGET}; "
              f"at most {ceiling:.3f} at this size: {math.ceil(args.calls / args.concurrency)} answers one after another per connection)")
        print(f"          client CPU {cpu * 1e3:.3f} ms per request")
        print(f"          RSS peak after 1/4 of the requests {mem.early:.1f} MB, at the end {mem.peak:.1f} MB (+{mem.peak - mem.early:.1f} MB)")
        with tempfile.TemporaryDirectory() as tmp:
            workdir = Path(tmp) / "work"
            work, rate, cpu_stage, mem, summary, items = bench_pipeline(url, args.calls, args.concurrency, workdir)
            lost, resumed, resumed_samples = bench_resume(url, workdir, items)
        stored = sum(summary["run"].values()) - summary["run"].get("described", 0)
        minimum = items * ANNOTATORS * PROMPTS
        print(f"server  : {items} items x {PROMPTS} prompts x {ANNOTATORS} annotators x K={SAMPLES} ({args.n_support} n): "
              f"{work['requests']} requests ({work['requests'] / items:.2f} per item, minimum {minimum / items:.2f} + descriptions), "
              f"{stored} samples stored")
        print(f"          prompt tokens prefilled {work['prompt_tokens']} ({work['prompt_tokens'] / items:.0f} per item), "
              f"minimum {work['distinct_prompt_tokens']} ({work['distinct_prompt_tokens'] / items:.0f} per item) "
              f"-> ratio {work['prompt_tokens'] / work['distinct_prompt_tokens']:.2f} (target 1.00)")
        print(f"pipeline: {work['requests']} requests, {rate:7.1f} requests/s ({rate * stored / work['requests']:.0f} samples/s), "
              f"ideal {ideal:.0f}/s -> ratio {rate / ideal:.3f} (target >= {TARGET})")
        served = work["service_s"] / work["answered"]
        print(f"          at most {wave_ceiling(work['requests'], args.concurrency, args.latency, served):.3f} at this size "
              f"({math.ceil(work['requests'] / args.concurrency)} answers one after another per connection, at the server's time per answer)")
        print(f"          the server took {served * 1e3:.2f} ms per answer (asked {args.latency * 1e3:.0f}; the rest is its event loop serving the others), "
              f"so it allowed {args.concurrency / served:.0f}/s -> {rate * served / args.concurrency:.3f} of that")
        print(f"          client CPU {cpu_stage * 1e3:.3f} ms per request ({(cpu_stage - cpu) * 1e3:+.3f} ms over the backend alone)")
        print(f"          RSS peak after 1/4 of the samples {mem.early:.1f} MB, at the end {mem.peak:.1f} MB (+{mem.peak - mem.early:.1f} MB)")
        print(f"resume  : {lost} samples deleted -> the re-run asked {resumed} requests for {resumed_samples} samples")
        print(json.dumps({"run": summary["run"], "server": work,
                          "sampling": {name: a.get("sampling", {}).get("mode") for name, a in summary["annotators"].items()}}))
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
