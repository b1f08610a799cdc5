"""The Space on the offline default: cold start to first label, and warm `predict` latency.

    .venv/bin/python benchmarks/bench_space.py [--runs 20] [--threads N]

- Cold start: `vilbias demo` in a fresh process (torch threads: --threads, else the app's
  choice, CPU cores // concurrency), timed from the
  process start until a `gradio_client` call on `predict` returns its first update (the label,
  with the evidence and the evidence-built rationale).
- Warm latency: in this process, the same app is called --runs times on the sample's examples
  (text and image); the time to the first streamed update (the label) is measured, and each
  call is let finish before the next starts. Two clients, both over HTTP through Gradio's queue:
  - **the browser's protocol** (what the ratio is taken on): one kept-alive HTTP connection
    does what Gradio's JavaScript client does — the image is uploaded when it is picked (timed
    apart), then the click joins the queue (`queue/join`) and the event stream
    (`queue/data`, server-sent events) is read as it arrives, until the first
    `process_generating` message of that event;
  - **`gradio_client`** (Python), as before, for comparison: it uploads the file inside the
    call over a fresh connection and polls its message queue every 50 ms, which adds its own
    wait to each message; that is the client's cost, not the app's.
- Baseline: the plain model call (`SentenceBiasModel.score_article` on the same sentences) in
  the same process; the ratio says what the app (HTTP, queue, validation, sentence splitting,
  highlights, rationale, the response's serialisation) adds.

Targets: cold start <= 20 s, median label latency <= 300 ms on 2 cores, app / plain <= 1.5.
The machine's load counts: the script prints the load average before each measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from demo_process import free_port, load_average, running_demo  # noqa: E402  (the benchmarks' own helper)


def _first_update(client, example, model="offline-default", *, finish=True):
    """Seconds until the first streamed update (the label) and the last update; with
    ``finish`` the call is also let run to its end (the rationale)."""
    from gradio_client import handle_file

    start = time.perf_counter()
    job = client.submit(handle_file(example[0]), example[1], example[2], "", model, api_name="/predict")
    first = None
    while first is None or (finish and not job.done()):
        if first is None and job.outputs():
            first = time.perf_counter() - start
        if job.done() and first is None:
            job.result()  # raises the app's error
            first = time.perf_counter() - start
        time.sleep(0.002)
    return first, job.outputs()[-1]


class BrowserClient:
    """Gradio's browser protocol over one kept-alive connection (``httpx``): upload, then
    ``queue/join`` and the server-sent events of ``queue/data``, read as they arrive."""

    def __init__(self, url: str, api_name: str = "predict"):
        import uuid

        import httpx

        self.http = httpx.Client(timeout=60)
        config = self.http.get(url.rstrip("/") + "/config").json()
        self.root = url.rstrip("/") + "/" + config.get("api_prefix", "/gradio_api").strip("/") + "/"
        self.fn_index = next(i for i, d in enumerate(config["dependencies"]) if d.get("api_name") == api_name)
        self.session = uuid.uuid4().hex

    def upload(self, path: str) -> dict:
        with open(path, "rb") as f:
            r = self.http.post(self.root + "upload", files=[("files", (os.path.basename(path), f))])
        r.raise_for_status()
        return {"path": r.json()[0], "orig_name": os.path.basename(path), "meta": {"_type": "gradio.FileData"}}

    def predict(self, data: list) -> tuple[float, list]:
        """Seconds from the click to the first update of this event, and the last update's data."""
        start = time.perf_counter()
        # as the JavaScript client does: join first, then read the session's stream (the server
        # keeps the event's messages until it is opened)
        r = self.http.post(self.root + "queue/join", json={"data": data, "fn_index": self.fn_index, "session_hash": self.session,
                                                           "event_data": None, "trigger_id": None})
        r.raise_for_status()
        event_id, first, last = r.json()["event_id"], None, None
        with self.http.stream("GET", self.root + "queue/data", params={"session_hash": self.session}) as stream:
            for line in stream.iter_lines():
                if not line.startswith("data:"):
                    continue
                msg = json.loads(line[5:])
                if msg.get("event_id") != event_id:
                    continue
                if msg["msg"] == "process_generating" and first is None:
                    first = time.perf_counter() - start
                if msg["msg"] in ("process_generating", "process_completed") and msg.get("output", {}).get("data"):
                    last = msg["output"]["data"]
                if msg["msg"] == "process_completed":
                    if not msg.get("success", True):
                        raise RuntimeError(f"predict failed: {msg.get('output')}")
                    break
        return (first if first is not None else time.perf_counter() - start), last



def cold_start(threads: int | None, example) -> float:
    from gradio_client import Client

    start = time.perf_counter()
    with running_demo(["--threads", str(threads)] if threads else [], timeout=120) as url:
        _first_update(Client(url, verbose=False), example, finish=False)
        return time.perf_counter() - start


def _stub_rationale():
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.fakes.rationale import StubRationale

    return StubRationale()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: the app's choice, cores // concurrency).")
    parser.add_argument("--skip-cold", action="store_true", help="Only the warm latency.")
    parser.add_argument("--smoke", action="store_true", help="A tiny run of every step, in seconds, for the test suite (tests/test_benchmarks.py); its figures mean nothing.")
    args = parser.parse_args()
    if args.smoke:  # one run of each client, without the warm-ups that keep first-call costs out of a median
        args.runs = 1
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

    from gradio_client import Client
    from vilbias.spaces.app import SpaceConfig, build_demo, launch_kwargs, sample_examples
    from vilbias.spaces.inputs import Item
    from vilbias.spaces.predictors import item_sentences

    examples = sample_examples(4)
    if not args.skip_cold:
        print(f"load average before the cold start: {load_average()}")
        cold = cold_start(args.threads, examples[0])
        print(f"cold start to first label: {cold:.1f} s (target <= 20 s)")

    config = SpaceConfig(threads=args.threads)
    # --smoke: the rationale written by a stand-in, not the embedded SmolLM2 (its load alone is ~8 s
    # of CPU on an AVX-512 Xeon, more elsewhere); every step of the benchmark still runs.
    demo = build_demo(config, rationale_backend=_stub_rationale() if args.smoke else None)
    app = demo.vilbias_app
    app.warm_up()
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=free_port(), quiet=True, **launch_kwargs(config))
    try:
        browser = BrowserClient(demo.local_url)
        uploads = [browser.upload(e[0]) for e in examples]
        if not args.smoke:
            browser.predict([uploads[0], *examples[0][1:3], "", app.default_model])  # warm-up
        model = app.predictors.get(app.default_model).model
        items = [[t for t, _, _ in item_sentences(Item(None, e[1], e[2]))] for e in examples]
        if not args.smoke:
            model.score_article(items[0])
        print(f"load average before the warm runs: {load_average()}; torch threads {config.torch_threads()} on {os.cpu_count()} cores")
        # app call and plain call alternate, so that other load on the machine weighs on both alike
        latencies, upload_s, plain = [], [], []
        for i in range(args.runs):
            example = examples[i % len(examples)]
            model._cache.clear()  # every call reads its article anew (the model keeps what it has read)
            started = time.perf_counter()
            browser.upload(example[0])
            upload_s.append(time.perf_counter() - started)
            first, last = browser.predict([uploads[i % len(examples)], example[1], example[2], "", app.default_model])
            latencies.append(first)
            model._cache.clear()
            started = time.perf_counter()
            model.score_article(items[i % len(items)])
            plain.append(time.perf_counter() - started)
        client = Client(demo.local_url, verbose=False)
        if not args.smoke:
            _first_update(client, examples[0])  # warm-up
        python_client = []
        for i in range(args.runs):
            model._cache.clear()
            python_client.append(_first_update(client, examples[i % len(examples)])[0])
    finally:
        demo.close()
    app_ms, plain_ms = statistics.median(latencies) * 1000, statistics.median(plain) * 1000
    sentences = statistics.median(len(i) for i in items)
    print(f"warm predict (browser protocol), median time from click to label over {args.runs} calls: {app_ms:.0f} ms "
          f"(target <= 300 ms); max {max(latencies) * 1000:.0f} ms; the image's upload before it, median "
          f"{statistics.median(upload_s) * 1000:.0f} ms")
    print(f"plain model call ({sentences:.0f} sentences, median): {plain_ms:.0f} ms; app / plain = {app_ms / plain_ms:.2f}x "
          "(target <= 1.5x)")
    print(f"gradio_client (upload inside the call, 50 ms polling), median: {statistics.median(python_client) * 1000:.0f} ms")
    print(f"last answer: label {last[0]['label']!r}, rationale {last[2][:120]!r}")

if __name__ == "__main__":
    main()
