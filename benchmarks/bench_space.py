"""The Space on the offline default: cold start to first label, and warm `predict` latency.

    .venv/bin/python benchmarks/bench_space.py [--runs 20] [--threads N]

- Cold start: `vilbias demo` in a fresh process (torch threads: --threads, else the app's
  choice, CPU cores // concurrency), timed from the
  process start until a `gradio_client` call on `predict` returns its first update (the label,
  with the evidence and the evidence-built rationale).
- Warm latency: in this process, the same app is called --runs times on the sample's examples
  (text and image) through `gradio_client`; the time to the first streamed update is measured,
  and each call is let finish before the next starts.
- Baseline: the plain model call (`SentenceBiasModel.score_article` on the same sentences) in
  the same process; the ratio says what the app (HTTP, queue, validation, sentence splitting,
  highlights, rationale) adds.

Targets: cold start <= 20 s, median label latency <= 300 ms on 2 cores. The machine's load
counts: the script prints the load average before each measurement.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


def _load() -> str:
    return " ".join(f"{v:.1f}" for v in os.getloadavg())


def cold_start(threads: int | None, example) -> float:
    from gradio_client import Client

    port = _free_port()
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1"}
    flags = ["--threads", str(threads)] if threads else []
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "vilbias.cli", "-q", "demo", "--port", str(port), *flags],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = start + 120
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if time.perf_counter() > deadline or proc.poll() is not None:
                    raise RuntimeError("vilbias demo did not start") from None
                time.sleep(0.05)
        client = Client(f"http://127.0.0.1:{port}/", verbose=False)
        _first_update(client, example, finish=False)
        return time.perf_counter() - start
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: the app's choice, cores // concurrency).")
    parser.add_argument("--skip-cold", action="store_true", help="Only the warm latency.")
    args = parser.parse_args()
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

    from gradio_client import Client
    from vilbias.spaces.app import SpaceConfig, build_demo, launch_kwargs, sample_examples
    from vilbias.spaces.predictors import Item, item_sentences

    examples = sample_examples(4)
    if not args.skip_cold:
        print(f"load average before the cold start: {_load()}")
        cold = cold_start(args.threads, examples[0])
        print(f"cold start to first label: {cold:.1f} s (target <= 20 s)")

    config = SpaceConfig(threads=args.threads)
    demo = build_demo(config)
    app = demo.vilbias_app
    app.warm_up()
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=_free_port(), quiet=True, **launch_kwargs(config))
    try:
        client = Client(demo.local_url, verbose=False)
        _first_update(client, examples[0])  # warm-up
        print(f"load average before the warm runs: {_load()}; torch threads {config.torch_threads()} on {os.cpu_count()} cores")
        latencies = []
        for i in range(args.runs):
            first, last = _first_update(client, examples[i % len(examples)])
            latencies.append(first)
        model = app.predictors.get(app.default_model).model
        items = [[t for t, _, _ in item_sentences(Item(None, e[1], e[2]))] for e in examples]
        model.score_article(items[0])
        plain = []
        for i in range(args.runs):
            start = time.perf_counter()
            model.score_article(items[i % len(items)])
            plain.append(time.perf_counter() - start)
    finally:
        demo.close()
    app_ms, plain_ms = statistics.median(latencies) * 1000, statistics.median(plain) * 1000
    sentences = statistics.median(len(i) for i in items)
    print(f"warm predict, median time to label over {args.runs} calls: {app_ms:.0f} ms (target <= 300 ms); "
          f"max {max(latencies) * 1000:.0f} ms")
    print(f"plain model call ({sentences:.0f} sentences, median): {plain_ms:.0f} ms; app / plain = {app_ms / plain_ms:.2f}x")
    print(f"last answer: label {last[0]['label']!r}, rationale {last[2][:120]!r}")


if __name__ == "__main__":
    main()
