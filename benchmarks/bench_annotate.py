"""Annotation throughput and memory against a local OpenAI-compatible server.

    .venv/bin/python benchmarks/bench_annotate.py [--calls 20000] [--latency 0.05] [--concurrency 32]

The fake server (tests/fakes/openai_server.py) runs in its own process and answers each call
after ``--latency`` seconds, with a complete answer in the schema the request's
``response_format`` asks for (as a structured-output server would). The ideal rate is
concurrency / latency (640 calls/s for 32 / 50 ms); the target is a ratio of at least 0.9 of it.
Two runs in the same process: the backend alone (requests streamed into ``OpenAIBackend.chat``)
and the whole ``vilbias annotate`` stage (prompt rendering, the structured-output request, the
strict schema check of every answer, grouped SQLite commits, the counting pass and the summary).
Each also prints the client's CPU time per call, a figure that other load on the machine
disturbs less than the rate. Memory: peak RSS after the first quarter of the calls against peak
RSS at the end (flat means the difference does not grow with the calls).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes.workdirs import make_workdir  # noqa: E402
from vilbias.annotate.pipeline import AnnotateConfig, annotate  # noqa: E402
from vilbias.annotate.specs import AnnotatorSpec  # noqa: E402
from vilbias.models.chat import ChatRequest  # noqa: E402
from vilbias.models.chat_openai import OpenAIBackend  # noqa: E402

TARGET = 0.9
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

server = FakeOpenAIServer(responder, latency_s=float(sys.argv[1]), record=False).start()
print(server.base_url, flush=True)
threading.Event().wait()
"""


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


def bench_pipeline(url: str, calls: int, concurrency: int, workdir: Path) -> tuple[float, float, RssWatcher, dict]:
    samples = 3
    items = -(-calls // (2 * samples))
    make_workdir(workdir, n=items, shared_image=True)
    # A vision annotator (as the paper's VLMs): both prompts, the image in the multimodal one.
    spec = AnnotatorSpec(name="fake", kind="openai", model="fake-model", base_url=url, concurrency=concurrency, vision=True, params={"temperature": 0.7})
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
    start, cpu = time.perf_counter(), time.process_time()
    try:
        summary = annotate(AnnotateConfig(workdir=workdir, annotator_specs=[spec], samples=samples, progress=False))
    finally:
        store_mod.AnnotationStore.record_calls = original
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    watcher.stop()
    return count[0] / elapsed, cpu / count[0], watcher, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    ideal = args.concurrency / args.latency
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(args.latency)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        url = server.stdout.readline().strip()
        rate, cpu, mem = bench_backend(url, args.calls, args.concurrency)
        print(f"backend : {args.calls} calls, {rate:7.1f} calls/s, ideal {ideal:.0f}/s -> ratio {rate / ideal:.3f} (target >= {TARGET})")
        print(f"          client CPU {cpu * 1e3:.3f} ms per call")
        print(f"          RSS peak after 1/4 of the calls {mem.early:.1f} MB, at the end {mem.peak:.1f} MB (+{mem.peak - mem.early:.1f} MB)")
        with tempfile.TemporaryDirectory() as tmp:
            rate, cpu_stage, mem, summary = bench_pipeline(url, args.calls, args.concurrency, Path(tmp) / "work")
        print(f"pipeline: {sum(summary['run'].values())} calls, {rate:7.1f} calls/s, ideal {ideal:.0f}/s -> ratio {rate / ideal:.3f} (target >= {TARGET})")
        print(f"          client CPU {cpu_stage * 1e3:.3f} ms per call ({(cpu_stage - cpu) * 1e3:+.3f} ms over the backend alone)")
        print(f"          RSS peak after 1/4 of the calls {mem.early:.1f} MB, at the end {mem.peak:.1f} MB (+{mem.peak - mem.early:.1f} MB)")
        print(json.dumps({"run": summary["run"]}))
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
