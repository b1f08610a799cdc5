"""A `kill -9` mid-run loses at most the calls in flight; the re-run completes the store with no
call lost and none of the recorded ones asked again. Each request asks for an item's K samples
(``n``), so what is in flight is at most ``concurrency`` requests of K samples each."""

import json
import re
import sqlite3
import subprocess
import time

from tests.annotate.conftest import answer
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.workdirs import make_workdir
from tests.forks import sigkill
from vilbias.annotate.pipeline import AnnotateConfig, annotate

ITEMS, K = 24, 6


def keys_of(body):
    """The samples a request asked for: ``n`` of them from its seed (the first missing sample's)."""
    text = body["messages"][-1]["content"]
    item = re.search(r"Headline: Headline (\d+)", text).group(1)
    prompt = "multimodal" if "Image description:" in text else "text"
    return [(f"item-{item}", prompt, body["seed"] + i) for i in range(body.get("n", 1))]


def answered(db):
    con = sqlite3.connect(db)
    try:
        return {tuple(r) for r in con.execute("SELECT item_id, prompt, sample FROM calls WHERE raw IS NOT NULL")}
    except sqlite3.OperationalError:  # polled before the run created its tables
        return set()
    finally:
        con.close()


def test_kill_9_then_resume(tmp_path, forks, command_python):
    """``vilbias annotate`` killed with SIGKILL (a fork of the suite's fork server, or fresh: tests/forks.py)."""
    workdir = make_workdir(tmp_path / "w", n=ITEMS)
    # A text-only annotator: the text prompt only (ITEMS × K calls).
    everything = {(f"item-{i}", "text", k) for i in range(ITEMS) for k in range(K)}
    with FakeOpenAIServer(lambda body: answer("biased"), latency_s=0.2) as server:
        annotators = tmp_path / "annotators.yaml"
        annotators.write_text(
            f"annotators:\n  - {{name: fake, backend: openai, model: fake-model, base_url: '{server.base_url}', "
            "concurrency: 4, params: {seed: 0, temperature: 0.7}}\n"
        )
        proc = subprocess.Popen(
            [command_python, "-m", "vilbias.cli", "annotate", "--workdir", str(workdir), "--annotators", str(annotators), "--samples", str(K), "--no-progress"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        db = workdir / "annotations.sqlite"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if db.exists() and len(answered(db)) >= 20:
                break
            time.sleep(0.02)
        assert proc.poll() is None, proc.stderr.read().decode()
        sigkill(proc, forks)
        proc.stderr.close()

        before = answered(db)
        asked_first = {k for b in server.requests for k in keys_of(b)}
        assert 20 <= len(before) < len(everything)
        assert before <= asked_first  # nothing recorded that was not asked
        in_flight = asked_first - before
        assert len(in_flight) <= 4 * K  # lost: at most the calls in flight (4 requests of K samples)

        server.requests.clear()
        summary = annotate(AnnotateConfig(workdir=workdir, annotators=annotators, samples=K, progress=False))
        asked_second = [k for b in server.requests for k in keys_of(b)]
        assert all(b["n"] == K for b in server.requests)  # whole items: each stored its K samples together

    assert len(asked_second) == len(set(asked_second))  # no call asked twice in the re-run
    assert set(asked_second) == everything - before  # nothing recorded is asked again
    assert answered(workdir / "annotations.sqlite") == everything  # nothing lost
    assert summary["prompts"]["text"]["decided"] == ITEMS
    assert json.dumps(summary)  # the summary is plain data
