"""The call ledger: schema versions and migrations, keyed puts, and the shared ask-loop."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from vilbias.ledger import Ledger, Table, ask_missing

CALLS = Table("calls", key=("item", "sample"), columns=("raw", "label"), types={"sample": "INTEGER NOT NULL"})


def test_new_ledger_records_its_schema_version_and_tables(tmp_path):
    with Ledger(tmp_path / "sub" / "l.sqlite", [CALLS], version=3) as ledger:
        assert ledger.get_meta("schema_version") == "3"
        assert ledger.count(CALLS) == 0
    db = sqlite3.connect(tmp_path / "sub" / "l.sqlite")
    assert [r[1] for r in db.execute("PRAGMA table_info(calls)")] == ["item", "sample", "raw", "label"]
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()


def test_put_replaces_a_repeated_key_and_keys_filter(tmp_path):
    with Ledger(tmp_path / "l.sqlite", [CALLS], version=1) as ledger:
        ledger.put(CALLS, [("a", 0, None, None), ("a", 1, "x", "biased")])
        ledger.put(CALLS, [("a", 0, "y", "not_biased")])  # the failed call asked again
        assert ledger.count(CALLS) == 2
        assert ledger.keys(CALLS) == {("a", 0), ("a", 1)}
        assert ledger.keys(CALLS, "label=?", ("biased",)) == {("a", 1)}
        assert ledger.rows(CALLS, "sample=0") == [{"item": "a", "sample": 0, "raw": "y", "label": "not_biased"}]
        assert list(ledger.stream("SELECT item, sample FROM calls ORDER BY sample")) == [("a", 0), ("a", 1)]


def test_put_many_is_all_or_nothing(tmp_path):
    other = Table("other", key=("k",), columns=("v",))
    with Ledger(tmp_path / "l.sqlite", [CALLS, other], version=1) as ledger:
        with pytest.raises(sqlite3.Error):
            ledger.put_many({CALLS: [("a", 0, "x", "biased")], other: [("k", "v", "too many")]})
        assert ledger.count(CALLS) == ledger.count(other) == 0


def test_a_stop_that_lands_just_after_begin_waits_for_the_commit(tmp_path):
    """Ctrl-C just after ``BEGIN`` (in a full run of the suite, one landed as the context manager
    handed the connection over, and the process printed a traceback from the transaction's
    generator at exit): the transaction commits, the lock is free, then the stop is raised. Before,
    the transaction was left open and the lock taken: the next write failed, or waited forever."""
    import os
    import signal

    with Ledger(tmp_path / "l.sqlite", [CALLS], version=1) as ledger:
        connection = ledger._db

        class StopAfterBegin:
            def __getattr__(self, name):
                return getattr(connection, name)

            def execute(self, sql, *args):
                out = connection.execute(sql, *args)
                if sql == "BEGIN":
                    os.kill(os.getpid(), signal.SIGINT)  # the stop lands as the transaction starts
                return out

        ledger._db = StopAfterBegin()
        with pytest.raises(KeyboardInterrupt):
            ledger.put(CALLS, [("a", 0, "x", "biased")])
        ledger._db = connection
        assert not ledger._lock.locked() and not connection.in_transaction
        assert ledger.keys(CALLS) == {("a", 0)}  # committed before the stop was raised
        ledger.put(CALLS, [("b", 0, "y", "not_biased")])  # and the next write goes through
        assert ledger.count(CALLS) == 2


def test_migrations_run_in_order_and_a_newer_schema_is_refused(tmp_path):
    path = tmp_path / "l.sqlite"
    with Ledger(path, [CALLS], version=1) as ledger:
        ledger.put(CALLS, [("a", 0, "raw", None)])
    steps = []

    def one_to_two(db):
        steps.append(1)
        db.execute("UPDATE calls SET label='biased' WHERE label IS NULL")

    def two_to_three(db):
        steps.append(2)

    with Ledger(path, [CALLS], version=3, migrations={1: one_to_two, 2: two_to_three}) as ledger:
        assert ledger.get_meta("schema_version") == "3"
        assert ledger.rows(CALLS)[0]["label"] == "biased"
    assert steps == [1, 2]
    with Ledger(path, [CALLS], version=3, migrations={1: one_to_two, 2: two_to_three}):
        assert steps == [1, 2]  # nothing to migrate the second time
    with pytest.raises(RuntimeError, match="schema 3, this vilbias reads 2 .*newer vilbias"):
        Ledger(path, [CALLS], version=2)
    with pytest.raises(RuntimeError, match="schema 3, this vilbias reads 5"):
        Ledger(path, [CALLS], version=5, migrations={3: two_to_three})  # no step from 4 to 5


def test_a_failing_migration_leaves_the_ledger_as_it_was(tmp_path):
    path = tmp_path / "l.sqlite"
    with Ledger(path, [CALLS], version=1) as ledger:
        ledger.put(CALLS, [("a", 0, "raw", None)])

    def broken(db):
        db.execute("UPDATE calls SET label='half-done'")
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        Ledger(path, [CALLS], version=2, migrations={1: broken})
    with Ledger(path, [CALLS], version=1) as ledger:
        assert ledger.get_meta("schema_version") == "1" and ledger.rows(CALLS)[0]["label"] is None


def test_ask_missing_skips_what_is_done_and_stores_each_answer(tmp_path):
    with Ledger(tmp_path / "l.sqlite", [CALLS], version=1) as ledger:
        ledger.put(CALLS, [("b", 0, "old", "biased")])
        asked = []

        def ask(pending, on_result):
            for job in pending:  # answers arrive from another thread, as a backend's would
                asked.append(job)
                t = threading.Thread(target=on_result, args=(job, f"answer-{job}"))
                t.start()
                t.join()

        handed = ask_missing(
            ["a", "b", "c"], done=ledger.keys(CALLS, "raw IS NOT NULL"), key=lambda j: (j, 0), ask=ask,
            record=lambda job, result: ledger.put(CALLS, [(job, 0, result, None)]), progress=False,
        )
        assert handed == 2 and asked == ["a", "c"]
        assert {r["item"]: r["raw"] for r in ledger.rows(CALLS)} == {"a": "answer-a", "b": "old", "c": "answer-c"}
        # everything done: nothing is asked
        again = ask_missing(["a", "b", "c"], done=ledger.keys(CALLS), key=lambda j: (j, 0),
                            ask=lambda p, cb: pytest.fail("asked again"), record=lambda j, r: None, progress=False)
        assert again == 0


def test_ask_missing_hands_records_return_value_back_and_takes_lazy_jobs():
    returned = []

    def ask(pending, on_result):
        for job in pending:
            returned.append(on_result(job, job * 10))

    handed = ask_missing(iter([1, 2, 3]), total=3, ask=ask, record=lambda job, result: result + 1, progress=False)
    assert handed == 3 and returned == [11, 21, 31]
    with pytest.raises(TypeError, match="done needs key"):
        ask_missing([1], done=set(), ask=ask, record=lambda j, r: None)


def test_ask_missing_progress_counts_rows_when_jobs_fill_several(monkeypatch):
    # A job asking for K samples fills K rows: the bar's total and steps are rows, not jobs.
    import tqdm.auto

    bars = []

    class Bar:
        def __init__(self, total, **kw):
            self.total, self.n = total, 0
            bars.append(self)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

        def update(self, k):
            self.n += k

    monkeypatch.setattr(tqdm.auto, "tqdm", Bar)
    jobs = [("a", 3), ("b", 1), ("c", 2)]
    handed = ask_missing(jobs, done={("b", 1)}, key=lambda j: j, size=lambda j: j[1],
                         ask=lambda pending, on_result: [on_result(j, None) for j in pending], record=lambda j, r: None)
    assert handed == 2 and (bars[0].total, bars[0].n) == (5, 5)


def test_without_a_bar_the_ask_loop_says_every_few_seconds_what_it_stored(tmp_path, monkeypatch, caplog):
    """--no-progress: a model server that is slow to answer leaves no silence longer than the
    heartbeat (10 s; 0.1 s here), each line saying how far the loop is."""
    import logging
    import time

    from vilbias import progress

    monkeypatch.setattr(progress, "HEARTBEAT_S", 0.1)

    def ask(jobs, on_result):
        for job in jobs:
            time.sleep(0.35)  # the server thinking
            on_result(job, "x")

    with Ledger(tmp_path / "l.sqlite", [CALLS], version=1) as ledger, caplog.at_level(logging.INFO, logger="vilbias.ledger"):
        ask_missing([("a", 0), ("b", 0)], ask=ask, record=lambda j, r: ledger.put(CALLS, [(*j, r, None)]), desc="annotate fake",
                    progress=False)
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("annotate fake: ")]
    assert said[0] == "annotate fake: 0 of 2 calls stored" and "annotate fake: 1 of 2 calls stored" in said and len(said) >= 5
    caplog.clear()
    with Ledger(tmp_path / "m.sqlite", [CALLS], version=1) as ledger, caplog.at_level(logging.INFO, logger="vilbias.ledger"):
        ask_missing([("a", 0)], ask=ask, record=lambda j, r: ledger.put(CALLS, [(*j, r, None)]), desc="annotate fake", progress=True)
    assert not [r for r in caplog.records if r.getMessage().startswith("annotate fake: ")]  # the bar says it
