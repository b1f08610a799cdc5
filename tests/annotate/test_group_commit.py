"""Results are committed in groups, off the event loop, while the workers go on asking; the
results awaiting their commit are bounded (past the bound a worker waits for the commit), so
what is asked but not stored never exceeds twice the concurrency."""

import asyncio
import sqlite3
import threading

import pytest

from tests.annotate.conftest import answer
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.workdirs import make_workdir
from vilbias.annotate.pipeline import COMMIT_INTERVAL_S, AnnotateConfig, _Recorder, annotate
from vilbias.annotate.specs import AnnotatorSpec
from vilbias.annotate.store import AnnotationStore, CallKey, call_row
from vilbias.models.chat import ChatResult


def _key(i, sample=0):
    return (CallKey(f"item-{i}", "text", "a", "fp", sample, "v1"),)


def test_results_ready_together_share_one_transaction(tmp_path):
    with AnnotationStore(tmp_path / "a.sqlite") as store:
        groups = []
        original = store.record_calls
        store.record_calls = lambda rows: (groups.append(len(rows)), original(rows))
        recorder = _Recorder(store, "m", max_backlog=4)

        async def settle():
            while recorder._backlog:
                await asyncio.sleep(COMMIT_INTERVAL_S)

        async def run():
            # the workers do not wait for the commit: each result returns nothing to await
            assert [recorder.call(_key(i), ChatResult(answer("biased"))) for i in range(3)] == [None] * 3
            assert groups == []  # nothing stored before the loop moves on
            await settle()
            assert groups == [3]  # one group
            assert recorder.call(_key(3), ChatResult(None, "HTTP 500")) is None
            await settle()
            assert groups == [3, 1]
            # past max_backlog results awaiting their commit, a worker waits for it
            waits = [recorder.call(_key(10 + i), ChatResult(answer("biased"))) for i in range(6)]
            assert waits[:4] == [None] * 4 and waits[4] is waits[5] is not None
            await waits[4]
            assert sum(groups[2:]) == 6 and recorder._backlog == 0

        asyncio.run(run())
        rows = {r["item_id"]: r for r in store.iter_calls()}
        assert rows["item-0"]["label"] == "biased" and rows["item-3"]["raw"] is None and rows["item-3"]["error"] == "HTTP 500"
        assert recorder.counts == {"valid": 9, "failed": 1}

    # The results of a backend that returns before their commit are committed by flush().
    with AnnotationStore(tmp_path / "f.sqlite") as store:
        recorder = _Recorder(store, "m")

        async def last_results():
            for i in range(3):
                recorder.call(_key(i), ChatResult(answer("biased")))

        asyncio.run(last_results())  # the loop ends before the scheduled commit
        assert list(store.iter_calls()) == []
        recorder.flush()
        assert len(list(store.iter_calls())) == 3

    # A request for K samples is K rows, each with its own status, stored in one group.
    with AnnotationStore(tmp_path / "k.sqlite") as store:
        recorder = _Recorder(store, "m")
        samples = ChatResult.of_samples([ChatResult(answer("biased")), ChatResult("no object here"), ChatResult(None, "malformed response")])
        assert recorder.call(_key(0) + _key(0, 1) + _key(0, 2), samples) is None
        rows = sorted(store.iter_calls(), key=lambda r: r["sample"])
        assert [r["status"] for r in rows] == ["valid", "unparseable", "failed"] and rows[0]["label"] == "biased"
        assert recorder.counts == {"valid": 1, "unparseable": 1, "failed": 1}

    # Without a running loop (local models) every result is stored at once.
    with AnnotationStore(tmp_path / "b.sqlite") as store:
        recorder = _Recorder(store, "m")
        assert recorder.call(_key(0), ChatResult(answer("not_biased"))) is None
        assert [r["label"] for r in store.iter_calls()] == ["not_biased"]


def test_record_calls_is_all_or_nothing(tmp_path):
    with AnnotationStore(tmp_path / "a.sqlite") as store:
        good = call_row(_key(0)[0], raw="x")
        with pytest.raises(sqlite3.Error):
            store.record_calls([good, (1, 2, 3)])  # wrong arity: the whole group is refused
        assert list(store.iter_calls()) == []
        store.record_calls([good, call_row(_key(1)[0], raw="y")])
        assert len(list(store.iter_calls())) == 2


def test_unstored_calls_never_exceed_twice_the_concurrency(tmp_path):
    workdir = make_workdir(tmp_path / "w", n=10)
    db = workdir / "annotations.sqlite"
    gaps = []
    lock = threading.Lock()

    def responder(body):
        # Samples asked so far (read first) minus stored now: the calls a kill -9 would lose.
        asked = server.choices
        try:
            con = sqlite3.connect(db, timeout=30)
            stored = con.execute("SELECT COUNT(*) FROM calls WHERE raw IS NOT NULL").fetchone()[0]
            con.close()
        except sqlite3.OperationalError:  # before the run created its tables
            stored = 0
        with lock:
            gaps.append(asked - stored)
        return answer("biased")

    with FakeOpenAIServer(responder, latency_s=0.02) as server:
        spec = AnnotatorSpec(name="fake", kind="openai", model="m", base_url=server.base_url, concurrency=4, params={"seed": 0})
        summary = annotate(AnnotateConfig(workdir=workdir, annotator_specs=[spec], samples=6, progress=False))
    assert summary["run"] == {"valid": 60}
    assert len(gaps) == 60 and server.count == 10  # one request per item, for its 6 samples
    # at most the requests in flight (`concurrency`) and as many answered ones awaiting their commit\n    assert max(gaps) <= 2 * 4 * 6


def test_a_failed_commit_stops_the_run(tmp_path, monkeypatch):
    workdir = make_workdir(tmp_path / "w", n=30)

    def broken(self, rows):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(AnnotationStore, "record_calls", broken)
    with FakeOpenAIServer(lambda body: answer("biased")) as server:
        spec = AnnotatorSpec(name="fake", kind="openai", model="m", base_url=server.base_url, concurrency=2)
        with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
            annotate(AnnotateConfig(workdir=workdir, annotator_specs=[spec], samples=1, prompts=["text"], progress=False))
        # no run-away asking: the workers stop once the unstored results reach the bound
        assert server.count <= 2 * 2 + 1


def test_flush_stores_the_results_whose_commit_is_due_while_the_writer_stops(tmp_path, monkeypatch):
    """A group whose commit comes due on the loop while flush() is stopping the writer (its join is
    slow on a loaded machine) is committed by flush(), not handed to the stopping writer and lost."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    import vilbias.annotate.pipeline as pipeline

    class SlowToStop(ThreadPoolExecutor):
        def shutdown(self, wait=True, **kw):
            super().shutdown(wait=False)  # stopping: it takes no new work from here
            time.sleep(20 * COMMIT_INTERVAL_S)  # the loop's timer fires meanwhile
            super().shutdown(wait=wait, **kw)

    monkeypatch.setattr(pipeline, "ThreadPoolExecutor", SlowToStop)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    errors = []
    loop.set_exception_handler(lambda _, context: errors.append(context.get("exception")))
    try:
        with AnnotationStore(tmp_path / "a.sqlite") as store:
            recorder = _Recorder(store, "m")

            async def deliver(i):
                recorder.call(_key(i), ChatResult(answer("biased")))

            asyncio.run_coroutine_threadsafe(deliver(0), loop).result()
            time.sleep(10 * COMMIT_INTERVAL_S)  # the first group committed: the writer exists
            asyncio.run_coroutine_threadsafe(deliver(1), loop).result()  # its commit due in COMMIT_INTERVAL_S
            recorder.flush()
            time.sleep(10 * COMMIT_INTERVAL_S)
            assert sorted(r["item_id"] for r in store.iter_calls()) == ["item-0", "item-1"]
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
    assert errors == []
