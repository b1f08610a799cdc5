"""The call ledger: a resumable SQLite store of keyed rows, and the ask-loop over what it lacks.

Annotation, evaluation and the stereotype audit all ask a model many questions and must survive
a killed process: each answer is committed as it arrives, and a re-run asks only the keys the
ledger does not hold yet. This module is that machinery, written once; a stage declares its
tables (key and columns) and what counts as done, nothing more::

    CALLS = Table("calls", key=("item", "sample"), columns=("raw", "label"))

    with Ledger("run.sqlite", [CALLS], version=1) as ledger:
        done = ledger.keys(CALLS, where="raw IS NOT NULL")
        ask_missing(jobs, done=done, key=lambda j: (j.item, j.sample), ask=backend_loop,
                    record=lambda j, r: ledger.put(CALLS, [(j.item, j.sample, r.text, r.label)]),
                    desc="asking")

- **Schema version.** ``meta.schema_version`` is written on creation; opening a ledger of an
  older version runs the stage's migrations in order (each in one transaction), a newer or
  unknown one is refused with a message naming both versions.
- **Keyed put.** ``INSERT OR REPLACE`` of whole rows, many in one transaction (all or none): a
  repeated key replaces the earlier row, so asking again after a failure is a plain put.
- **Durability.** WAL journal with ``synchronous=NORMAL``: a committed row survives a killed
  process; what a ``kill -9`` loses is at most the calls in flight.
- **Threads.** One connection guarded by a lock: backends call back from worker threads.
  :meth:`Ledger.stream` reads on a connection of its own so a long scan never holds the lock
  writers need.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from vilbias import stops
from vilbias.progress import heartbeat

logger = logging.getLogger(__name__)

J = TypeVar("J")
R = TypeVar("R")


@dataclass(frozen=True, eq=False)  # hashed by identity: a table is a key of put_many
class Table:
    """One table of a ledger: its key columns, then its other columns, in stored order."""

    name: str
    key: tuple[str, ...]
    columns: tuple[str, ...] = ()
    types: Mapping[str, str] | None = None
    """SQLite type per column (default ``TEXT``); ``NOT NULL`` may be part of it."""

    @property
    def all_columns(self) -> tuple[str, ...]:
        return self.key + self.columns

    def ddl(self) -> str:
        types = self.types or {}
        cols = ", ".join(f"{c} {types.get(c, 'TEXT')}" for c in self.all_columns)
        return f"CREATE TABLE IF NOT EXISTS {self.name}({cols}, PRIMARY KEY({', '.join(self.key)}))"

    def insert(self) -> str:
        return f"INSERT OR REPLACE INTO {self.name} VALUES({','.join('?' * len(self.all_columns))})"


Migration = Callable[[sqlite3.Connection], None]
"""Brings a ledger from version ``v`` to ``v + 1`` (run inside one transaction)."""


class Ledger:
    """A SQLite file of :class:`Table` rows with a schema version (see the module docstring).

    Args:
        path: The SQLite file (its folder is created).
        tables: The tables this ledger holds; created when missing.
        version: The schema version this code writes.
        migrations: ``{v: f}`` where ``f`` upgrades a version-``v`` ledger to ``v + 1``.
        name: What the file is, for error messages (``annotation store``, ``audit store``).
    """

    def __init__(
        self,
        path: str | os.PathLike,
        tables: Sequence[Table],
        *,
        version: int,
        migrations: Mapping[int, Migration] | None = None,
        name: str = "ledger",
    ):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.tables = {t.name: t for t in tables}
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            self._open(version, migrations or {})
        except BaseException:
            self._db.close()
            raise

    def _open(self, version: int, migrations: Mapping[int, Migration]) -> None:
        stored = self.get_meta("schema_version")
        if stored is None:
            self._create()
            self.set_meta("schema_version", str(version))
            return
        current = int(stored)
        if current > version or (current < version and any(v not in migrations for v in range(current, version))):
            raise RuntimeError(f"{self.path}: {self.name} schema {current}, this vilbias reads {version}"
                               + (" (written by a newer vilbias: upgrade it)" if current > version else ""))
        for v in range(current, version):
            with self.transaction() as db:
                migrations[v](db)
                db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(v + 1),))
            logger.info("%s: migrated %s from schema %d to %d", self.path, self.name, v, v + 1)
        self._create()

    def _create(self) -> None:
        for t in self.tables.values():
            self._db.execute(t.ddl())

    # -- plumbing --------------------------------------------------------------------------

    def close(self) -> None:
        self._db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One transaction under the lock: committed on success, rolled back on any error. A stop
        (Ctrl-C, SIGTERM) waits for its end (:func:`vilbias.stops.held`): one that landed between
        ``BEGIN`` and the block (as the context manager handed the connection over) left the
        transaction open and the lock taken, so the process's next write failed or waited forever,
        and the transaction's generator printed a traceback as the process exited."""
        with stops.held(), self._lock:
            self._db.execute("BEGIN")
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException:
                # A full disk (SQLITE_FULL) may have rolled the transaction back already: a second
                # rollback would raise and hide why the first failed.
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        """Rows of one read, under the lock."""
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    def stream(self, sql: str, params: Sequence[Any] = ()) -> Iterator[tuple]:
        """Rows of one read, streamed on a connection of its own (memory stays flat, writers
        are not blocked)."""
        db = sqlite3.connect(self.path, timeout=30)
        try:
            yield from db.execute(sql, params)
        finally:
            db.close()

    def get_meta(self, key: str) -> str | None:
        row = self.query("SELECT value FROM meta WHERE key=?", (key,))
        return row[0][0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO meta VALUES(?, ?)", (key, value))

    # -- keyed rows ------------------------------------------------------------------------

    def put(self, table: Table | str, rows: Iterable[Sequence[Any]]) -> None:
        """Store whole rows (key columns first, in :attr:`Table.all_columns` order) in one
        transaction; a repeated key replaces the earlier row."""
        t = self.tables[table] if isinstance(table, str) else table
        rows = list(rows)
        if rows:
            with self.transaction() as db:
                db.executemany(t.insert(), rows)

    def put_many(self, rows_by_table: Mapping[Table, Iterable[Sequence[Any]]]) -> None:
        """Rows of several tables in one transaction (all or none)."""
        with self.transaction() as db:
            for t, rows in rows_by_table.items():
                db.executemany(t.insert(), list(rows))

    def keys(self, table: Table, where: str = "", params: Sequence[Any] = ()) -> set[tuple]:
        """The keys of ``table``'s rows (that match ``where``)."""
        sql = f"SELECT {', '.join(table.key)} FROM {table.name}" + (f" WHERE {where}" if where else "")
        return {tuple(r) for r in self.query(sql, params)}

    def rows(self, table: Table, where: str = "", params: Sequence[Any] = (), *, order_by: str = "") -> list[dict[str, Any]]:
        """``table``'s rows (that match ``where``, in ``order_by`` order) as dicts of every column."""
        sql = f"SELECT {', '.join(table.all_columns)} FROM {table.name}" + (f" WHERE {where}" if where else "")
        sql += f" ORDER BY {order_by}" if order_by else ""
        return [dict(zip(table.all_columns, r, strict=True)) for r in self.query(sql, params)]

    def count(self, table: Table) -> int:
        return self.query(f"SELECT COUNT(*) FROM {table.name}")[0][0]


def ask_missing(
    jobs: Iterable[J],
    *,
    ask: Callable[[Iterator[J], Callable[[J, R], Any]], None],
    record: Callable[[J, R], Any],
    done: Container | None = None,
    key: Callable[[J], Any] | None = None,
    total: int | None = None,
    desc: str = "asking",
    unit: str = "call",
    progress: bool = True,
    size: Callable[[J], int] | None = None,
) -> int:
    """The ask-loop every stage shares: skip what is done, show progress, store each answer.

    Args:
        jobs: Everything that should be asked (or, with ``done=None``, only what is missing:
            a lazy iterator keeps memory flat, give its length as ``total``).
        ask: Runs the model over an iterator of pending jobs, calling ``on_result(job, result)``
            once per job as its answer arrives (in any order, from any thread).
        record: Stores one answer (a :class:`Ledger` put). What it returns is handed back to
            ``ask``'s caller of ``on_result`` (an awaitable there lets a backend wait for a
            grouped commit).
        done: Keys already answered; with ``key``, the jobs whose key is in it are skipped.
        key: A job's ledger key.
        total: The number of pending jobs when ``jobs`` is lazy (for the progress bar); with
            ``size``, the rows they fill.
        desc, unit, progress: The progress bar's text, unit, and whether it is shown.
        size: How many ledger rows a job fills (a request for K samples fills K): the progress
            bar counts rows. Default: one per job.

    Returns:
        The number of jobs handed to ``ask``.
    """
    from tqdm.auto import tqdm

    if done is not None:
        if key is None:
            raise TypeError("ask_missing: done needs key")
        jobs = [j for j in jobs if key(j) not in done]
        total = sum(map(size, jobs)) if size else len(jobs)
    elif total is None:
        jobs = list(jobs)
        total = sum(map(size, jobs)) if size else len(jobs)
    if total == 0:
        return 0
    handed = 0

    def pending() -> Iterator[J]:
        nonlocal handed
        for j in jobs:
            handed += 1
            yield j

    stored = 0
    # without a bar (--no-progress), a line every few seconds while the model's server is asked
    with tqdm(total=total, desc=desc, unit=unit, disable=not progress, leave=False) as bar, \
            heartbeat(lambda: f"{desc}: {stored} of {total} {unit}s stored", enabled=not progress, log=logger):

        def on_result(job: J, result: R) -> Any:
            nonlocal stored
            out = record(job, result)
            stored += size(job) if size else 1
            bar.update(size(job) if size else 1)
            return out

        ask(pending(), on_result)
    return handed


def stored_rows(path: str | Path, table: str, where: str = "") -> int:
    """Rows of ``table`` in the SQLite file ``path`` (0 when the file or table does not exist), read
    without creating or changing anything: for the sentence a stop prints."""
    path = Path(path)
    if not path.is_file():
        return 0
    db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
    try:
        return db.execute(f"SELECT COUNT(*) FROM {table}" + (f" WHERE {where}" if where else "")).fetchone()[0]
    except sqlite3.OperationalError:  # the run stopped before it created its tables
        return 0
    finally:
        db.close()


def ledger_kept(path: str | Path, table: str, where: str = "", noun: str = "answers") -> str:
    """What a stop kept of a stage that stores each answer in a ledger as it arrives (the sentence
    of its :func:`vilbias.stops.on_stop`): the stored rows, and that a re-run asks only the rest."""
    n = stored_rows(path, table, where)
    if n == 0:
        return f"no {noun} were stored yet; re-run the same command to start"
    return f"{n} {noun} kept in {path}; re-run the same command to resume (it asks only what is missing)"


__all__ = ["Ledger", "Migration", "Table", "ask_missing", "ledger_kept", "stored_rows"]
