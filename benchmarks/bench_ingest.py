"""Ingest benchmark: concurrent, per-host-limited fetching against one request at a time.

    .venv/bin/python benchmarks/bench_ingest.py                      # 2,000 articles, 20 hosts
    .venv/bin/python benchmarks/bench_ingest.py --articles 400 --baseline-items 40

A loopback web server (``tests/fakes/web_server.py``) runs in a child process and adds
``--latency`` (100 ms) to every response. It serves ``--hosts`` host names (mapped to 127.0.0.1
by the ingest resolver hook), each with one RSS feed and ``articles / hosts`` article pages of
24 sentences, each page with its own JPEG. Then, in this process:

* **concurrent**: ``ingest`` with ``--per-host`` (4) requests in flight per host, no rate
  limit and ``--workers`` (2) extraction processes, over all articles;
* **baseline**: ``ingest`` with one request in flight in total (``concurrency=1``), stopped after
  ``--baseline-items`` articles; its time is extrapolated to all articles as
  ``feeds time + items time x articles / kept`` (pass ``--baseline-items`` equal to
  ``--articles`` to time the whole baseline: about 7 minutes at the defaults).

It prints both times, the ratio ``baseline / concurrent`` (target >= 10) and the server's
highest observed number of requests in flight per host, and fails if that exceeds the limit.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.fakes and tests.ingest


def _host(i: int) -> str:
    return f"host-{i:02d}.bench.test"


def _serve(conn, hosts: int, per_host: int, latency: float) -> None:
    """Child process: build the site, serve it, answer "stats" and "stop" over the pipe."""
    from tests.fakes.web_server import Page, WebServer
    from tests.ingest import site

    web = WebServer(latency=latency).start()
    for h in range(hosts):
        host = _host(h)
        links = []
        for i in range(per_host):
            seed = h * per_host + i
            web.add(host, f"/news/{i}.jpg", Page(site.jpeg(240, 160, seed=seed), content_type="image/jpeg"))
            web.add(host, f"/news/{i}.html", Page(site.og_page(f"Story {seed}", site.paragraphs(seed), web.url(host, f"/news/{i}.jpg"))))
            links.append({"link": web.url(host, f"/news/{i}.html")})
        web.add(host, "/feed.xml", Page(site.rss(links), content_type="application/rss+xml"))
    conn.send(web.port)
    while True:
        cmd = conn.recv()
        if cmd == "stats":
            conn.send({"max_in_flight": dict(web.max_in_flight), "requests": len(web.requests)})
        elif cmd == "reset":
            web.max_in_flight.clear()
            web.requests.clear()
            conn.send(True)
        else:
            web.stop()
            conn.send(True)
            return


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--articles", type=int, default=2000)
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--per-host", type=int, default=4)
    parser.add_argument("--baseline-items", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2, help="IngestConfig.workers for the concurrent run.")
    parser.add_argument("--smoke", action="store_true", help="A tiny run of every step, in seconds, for the test suite (tests/test_benchmarks.py); its figures mean nothing.")
    args = parser.parse_args()
    if args.smoke:
        args.articles, args.hosts, args.latency, args.baseline_items, args.workers = 4, 2, 0.01, 2, 1

    from vilbias.ingest import FetchSettings, IngestConfig, ingest

    per_host = args.articles // args.hosts
    total = per_host * args.hosts
    parent, child = mp.Pipe()
    server = mp.get_context("spawn").Process(target=_serve, args=(child, args.hosts, per_host, args.latency), daemon=True)
    server.start()
    port = parent.recv()
    feeds = [f"http://{_host(h)}:{port}/feed.xml" for h in range(args.hosts)]

    def run(workdir: Path, *, per_host: int, concurrency: int, **kw):
        fetch = FetchSettings(allow_private_addresses=True, resolver=lambda h: ["127.0.0.1"], rate=0, timeout=30,
                              per_host=per_host, concurrency=concurrency)
        config = IngestConfig(workdir=workdir, feed=feeds, progress=False, fetch=fetch, **kw)
        t0 = time.perf_counter()
        cpu0 = time.process_time()
        summary = ingest(config)
        elapsed = time.perf_counter() - t0
        print(f"  {workdir.name}: {elapsed:.1f}s wall, {time.process_time() - cpu0:.1f}s CPU in this process", flush=True)
        return summary, elapsed

    try:
        with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
            fast, t_fast = run(Path(tmp) / "concurrent", per_host=args.per_host, concurrency=args.per_host * args.hosts,
                               workers=args.workers)
            parent.send("stats")
            stats = parent.recv()
            parent.send("reset")
            parent.recv()
            if fast.kept != total:
                print(f"concurrent run kept {fast.kept} of {total}: {fast.to_dict()}", file=sys.stderr)
                return 1
            base, t_base = run(Path(tmp) / "baseline", per_host=1, concurrency=1, max_items=args.baseline_items)
            parent.send("stats")
            base_stats = parent.recv()
    finally:
        parent.send("stop")
        parent.recv()
        server.join(10)

    t_base_all = base.feeds_seconds + base.items_seconds * total / max(base.kept, 1)
    worst = max(stats["max_in_flight"].values())
    print(f"articles {total} over {args.hosts} hosts, {args.latency * 1000:.0f} ms latency per response")
    print(f"concurrent (per-host {args.per_host}): {t_fast:.1f}s  ({fast.feeds_seconds:.1f}s feeds, "
          f"{fast.items_seconds:.1f}s items), {stats['requests']} requests")
    extrapolated = "" if base.kept == total else f", extrapolated from {base.kept} articles"
    print(f"baseline (one at a time): {t_base_all:.1f}s{extrapolated} "
          f"(measured {t_base:.1f}s, max in flight {max(base_stats['max_in_flight'].values())})")
    print(f"max requests in flight per host (server-observed): {worst} (limit {args.per_host})")
    print(f"speed-up ratio baseline / concurrent: {t_base_all / t_fast:.1f}x (target >= 10x)")
    if worst > args.per_host:
        print("per-host limit exceeded", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
