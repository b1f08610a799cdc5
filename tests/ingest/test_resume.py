"""Killing ``vilbias ingest`` mid-run loses nothing and duplicates nothing on the re-run."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import threading
import time
from pathlib import Path

from tests.fakes.web_server import WebServer
from tests.forks import sigkill
from tests.ingest import site
from vilbias.workdir import read_articles

N = 30


def _cli(python: str, feed: str, workdir: Path) -> list[str]:
    return [python, "-m", "vilbias.cli", "-q", "ingest", "--feed", feed, "--workdir", str(workdir),
            "--allow-private-addresses", "--per-host", "2", "--rate", "0", "--no-progress", "--timeout", "5"]


def _kept_lines(workdir: Path) -> list[str]:
    path = workdir / "articles.jsonl"
    return [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()] if path.exists() else []


def test_sigkill_mid_run_then_resume(tmp_path, forks, command_python):
    """``vilbias ingest`` killed with SIGKILL (a fork of the suite's fork server, or fresh: tests/forks.py)."""
    # 127.0.0.1 literally (a subprocess cannot take the resolver hook), one host, slow pages.
    with WebServer(latency=0.04) as web:
        feed, links = site.story_feed(web, N, seed=100)
        work = tmp_path / "work"
        # The first run cannot finish before it is killed, however slow the machine is to notice
        # its fifth article: once five are kept, its article pages hang until the re-run.
        released = threading.Event()
        for (host, path), page in [(key, page) for key, page in web.routes.items() if key[1].startswith("/a/")]:
            web.add(host, path, lambda req, page=page: page if released.is_set() or len(_kept_lines(work)) < 5
                    else dataclasses.replace(page, delay=60))

        proc = subprocess.Popen(_cli(command_python, feed, work), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ})
        deadline = time.monotonic() + 60
        while len(_kept_lines(work)) < 5 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)
        sigkill(proc, forks)
        killed_at = len(_kept_lines(work))
        assert 5 <= killed_at < N, proc.stderr.read().decode()[-2000:]
        kept_before = {a.source_url for a in read_articles(work)}
        released.set()
        first_run_requests = len(web.requests)

        done = subprocess.run(_cli(command_python, feed, work), capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]

        lines = _kept_lines(work)
        ids = [a.unique_id for a in read_articles(work)]
        assert len(ids) == N and len(set(ids)) == N
        # every whole line is a distinct article: nothing written twice, a torn line at most once
        assert len(lines) in (N, N + 1)
        assert sorted(a.url for a in read_articles(work)) == sorted(links)
        # the re-run fetched only pages the killed run had not kept, each once
        rerun = [web.url("127.0.0.1", r.path) for r in web.requests[first_run_requests:] if r.path.startswith("/a/")]
        assert sorted(rerun) == sorted(set(links) - kept_before)
        for a in read_articles(work):
            assert (work / a.image_path).is_file()
