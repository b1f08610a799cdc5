"""The annotators of one server are asked together, through one budget of requests in flight."""

import _thread
import json
import sqlite3
import threading
import time

import pytest

from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.workdirs import make_workdir
from vilbias.annotate.pipeline import AnnotateConfig, annotate
from vilbias.annotate.specs import AnnotatorSpec


def answer(body):
    rf = body.get("response_format")
    if rf is None:
        return "a description"
    names = rf["json_schema"]["schema"]["properties"]["techniques"]["required"]
    return json.dumps({"techniques": dict.fromkeys(names, "Absent"), "tone": "Neutral", "label": "not biased",
                       "rationale": "Plain reporting."})


class Counting(FakeOpenAIServer):
    """The fake server, with the model of each request in arrival order."""

    def models_asked(self):
        return [b["model"] for b in self.requests]


def specs(server, concurrency=4, n=3):
    return [AnnotatorSpec(name=f"a{i}", kind="openai", model=f"m{i}", base_url=server.base_url, concurrency=concurrency,
                          vision=True, params={"temperature": 0.7}) for i in range(n)]


def stored(workdir):
    db = sqlite3.connect(workdir / "annotations.sqlite")
    try:
        return db.execute("SELECT item_id, prompt, annotator, sample, raw, label FROM calls ORDER BY 1, 2, 3, 4").fetchall()
    finally:
        db.close()


def test_annotators_share_the_servers_budget_and_store_what_one_at_a_time_would(tmp_path):
    with Counting(answer, latency_s=0.02) as server:
        workdir = make_workdir(tmp_path / "w", n=12)
        summary = annotate(AnnotateConfig(workdir=workdir, annotator_specs=specs(server), samples=3, progress=False))
        # no more than `concurrency` at the server, though three annotators (and the describer) send to it
        assert server.peak_in_flight == 4
        assert summary["run"] == {"described": 12, "valid": 12 * 2 * 3 * 3}
        asked = server.models_asked()
        # interleaved: the first requests are not all one annotator's
        assert len(set(asked[:12])) > 1
        # one request per image, and one per item, prompt and annotator (its K samples)
        assert len(server.requests) == 12 + 12 * 2 * 3
    # what is stored is what annotators asked one after another store (the answers, labels, keys)
    with FakeOpenAIServer(answer) as server:
        alone = make_workdir(tmp_path / "alone", n=12)
        for spec in specs(server):
            annotate(AnnotateConfig(workdir=alone, annotator_specs=[spec], samples=3, progress=False))
        annotate(AnnotateConfig(workdir=alone, annotator_specs=specs(server), samples=3, progress=False))
    assert stored(workdir) == stored(alone)


def test_a_stop_cancels_every_annotators_requests_and_the_rerun_asks_only_what_is_missing(tmp_path):
    with Counting(answer, latency_s=0.1) as server:
        workdir = make_workdir(tmp_path / "w", n=16)
        config = AnnotateConfig(workdir=workdir, annotator_specs=specs(server), samples=3, progress=False)
        timer = threading.Timer(0.35, _thread.interrupt_main)
        timer.start()
        start = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            annotate(config)
        took = time.monotonic() - start - 0.35
        timer.cancel()
        assert took < 2.0
        sent = len(server.requests)
        time.sleep(0.5)
        assert len(server.requests) == sent  # every annotator stopped: nothing more is sent
        kept = stored(workdir)
        assert 0 < len(kept) < 16 * 2 * 3 * 3
        before = len(server.requests)
        summary = annotate(config)
        asked = [b for b in server.requests[before:] if "response_format" in b]  # (not the descriptions)
        # each missing call asked once; none of the kept ones again
        assert sum(b.get("n", 1) for b in asked) == 16 * 2 * 3 * 3 - len(kept)
        assert summary["prompts"]["text"]["decided"] == 16
        assert set(kept) <= set(stored(workdir))
