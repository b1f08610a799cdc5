"""The Space on the offline default: cold start to first label, and warm `predict` latency.

    .venv/bin/python benchmarks/bench_space.py [--runs 10] [--threads 2]

- Cold start: `vilbias demo` in a fresh process (OMP/torch threads = --threads), timed from the
  process start until a `gradio_client` call on `predict` returns its first update (the label).
  The real SmolLM2 starts loading in the background at the same time, as it does on a Space.
- Warm latency: in this process, the same app (real SmolLM2 rationale) is called --runs times
  on the sample's examples through `gradio_client`; the time to the first streamed update (the
  label) is measured, and each call is let finish (its rationale) before the next starts.
- Baseline: the plain classifier call (`FusionForClassification.predict`) on the same items in
  the same process; the ratio says what the app (HTTP, queue, validation, calibration) adds.

Targets (ISSUE 9): cold start <= 20 s, median label latency <= 300 ms on 2 cores.
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


def cold_start(threads: int, example) -> float:
    from gradio_client import Client

    port = _free_port()
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
           "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1"}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "vilbias.cli", "-q", "demo", "--port", str(port)],
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
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

    import torch
    from gradio_client import Client
    from PIL import Image
    from vilbias.spaces.app import SpaceConfig, build_demo, launch_kwargs, sample_examples

    from vilbias.models.fusion import compose_text

    torch.set_num_threads(args.threads)
    examples = sample_examples(4)
    cold = cold_start(args.threads, examples[0])
    print(f"cold start to first label: {cold:.1f} s (target <= 20 s)")

    config = SpaceConfig()
    demo = build_demo(config)
    app = demo.vilbias_app
    app.warm_up()
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=_free_port(), quiet=True, **launch_kwargs(config))
    try:
        client = Client(demo.local_url, verbose=False)
        app.rationale.wait(300)
        _first_update(client, examples[0])  # warm-up
        latencies, full = [], []
        for i in range(args.runs):
            start = time.perf_counter()
            first, last = _first_update(client, examples[i % len(examples)])
            latencies.append(first)
            full.append(time.perf_counter() - start)
        model = app.predictors.get(app.default_model).model
        items = [(Image.open(e[0]).convert("RGB"), compose_text(e[1], e[2])) for e in examples]
        model.predict(*items[0])
        plain = []
        for i in range(args.runs):
            start = time.perf_counter()
            model.predict(*items[i % len(items)])
            plain.append(time.perf_counter() - start)
    finally:
        demo.close()
    app_ms, plain_ms = statistics.median(latencies) * 1000, statistics.median(plain) * 1000
    print(f"warm predict, median time to label over {args.runs} calls: {app_ms:.0f} ms (target <= 300 ms)")
    print(f"plain classifier call, median: {plain_ms:.0f} ms; app / plain = {app_ms / plain_ms:.2f}x")
    print(f"full answer incl. SmolLM2 rationale, median: {statistics.median(full):.1f} s")
    print(f"last rationale: {last[2][:200]!r}")


if __name__ == "__main__":
    main()
