"""``annotations.sqlite``: every annotation call, raw and parsed.

One row per (item, prompt, annotator, sample, prompt version, annotator fingerprint). The store
is the annotate stage's memory: a re-run asks only for the keys it lacks, and a process killed
mid-run loses at most the calls in flight (results are committed as they complete, WAL journal;
the annotate stage commits the results that complete together in one transaction).

The ``active`` table records which prompt versions and annotators the latest ``vilbias annotate``
run used; :meth:`AnnotationStore.votes` returns only those calls, so a new prompt or annotator set
changes the build only where it was asked.

Schema version 2 (see ``docs/workdir.md``)::

    calls(item_id, prompt, annotator, fingerprint, sample, prompt_version,
          model, raw, label, tone, techniques_json, rationale, error, latency_s, created_at)
    call_status(item_id, prompt, annotator, fingerprint, sample, prompt_version,
                status, problem, structured)
    structured_output(annotator, fingerprint, requested, mode, detail, updated_at)
    image_descriptions(image_sha256, annotator, description, created_at)
    active(prompt, prompt_version, annotators_json, samples)
    meta(key, value)

A call's ``status`` is ``valid`` (its ``label`` is a vote), ``invalid`` (an answer object that
breaks the schema), ``unparseable`` (no answer object: a format abstention), ``refused`` (the model
declined; ``raw`` holds its message) or ``failed`` (no answer; asked again next run). Only valid
calls have a ``label``. A ``calls`` row without a ``call_status`` row (written by other tools)
counts as ``failed`` without ``raw``, ``unparseable`` without ``label``, else ``valid``.
``structured_output`` records, per annotator, what its latest run got: ``server`` (the server
decoded under the schema), ``local_grammar`` (llguidance), ``fallback`` (the server rejected the
request; answers parsed strictly; ``detail`` holds the rejection) or ``off`` (configured).

Opening a schema-1 store migrates it: every stored answer is checked again with the strict
parser (:func:`vilbias.annotate.prompts.parse_annotation`), so a vote stands only if its answer is
valid.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vilbias.annotate.prompts import parse_annotation
from vilbias.annotate.voting import Vote
from vilbias.workdir import ANNOTATIONS, utcnow

logger = logging.getLogger(__name__)

STORE_SCHEMA_VERSION = 2
PROMPTS = ("text", "multimodal")
STATUSES = ("valid", "invalid", "unparseable", "refused", "failed")
_KEY = "item_id, prompt, annotator, fingerprint, sample, prompt_version"
# The status of a call, also for rows without a call_status row (see the module docstring).
_STATUS = "COALESCE(s.status, CASE WHEN c.raw IS NULL THEN 'failed' WHEN c.label IS NULL THEN 'unparseable' ELSE 'valid' END)"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS calls(
    item_id TEXT NOT NULL,
    prompt TEXT NOT NULL,
    annotator TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    sample INTEGER NOT NULL,
    prompt_version TEXT NOT NULL,
    model TEXT,
    raw TEXT,
    label TEXT,
    tone TEXT,
    techniques_json TEXT,
    rationale TEXT,
    error TEXT,
    latency_s REAL,
    created_at TEXT NOT NULL,
    PRIMARY KEY(item_id, prompt, annotator, fingerprint, sample, prompt_version)
);
CREATE TABLE IF NOT EXISTS image_descriptions(
    image_sha256 TEXT NOT NULL,
    annotator TEXT NOT NULL,
    description TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY(image_sha256, annotator)
);
CREATE TABLE IF NOT EXISTS call_status(
    item_id TEXT NOT NULL,
    prompt TEXT NOT NULL,
    annotator TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    sample INTEGER NOT NULL,
    prompt_version TEXT NOT NULL,
    status TEXT NOT NULL,
    problem TEXT,
    structured INTEGER,
    PRIMARY KEY(item_id, prompt, annotator, fingerprint, sample, prompt_version)
);
CREATE TABLE IF NOT EXISTS structured_output(
    annotator TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    requested TEXT NOT NULL,
    mode TEXT NOT NULL,
    detail TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY(annotator, fingerprint)
);
CREATE TABLE IF NOT EXISTS active(
    prompt TEXT PRIMARY KEY,
    prompt_version TEXT NOT NULL,
    annotators_json TEXT NOT NULL,
    samples INTEGER NOT NULL
);
"""


@dataclass(frozen=True)
class CallKey:
    item_id: str
    prompt: str
    annotator: str
    fingerprint: str
    sample: int
    prompt_version: str


_INSERT_CALL = "INSERT OR REPLACE INTO calls VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
_INSERT_STATUS = "INSERT OR REPLACE INTO call_status VALUES(?,?,?,?,?,?,?,?,?)"


def call_row(
    key: CallKey,
    *,
    model: str = "",
    raw: str | None = None,
    label: str | None = None,
    tone: str | None = None,
    techniques: dict[str, bool] | None = None,
    rationale: str | None = None,
    error: str | None = None,
    latency_s: float | None = None,
    status: str | None = None,
    problem: str | None = None,
    structured: bool | None = None,
) -> tuple:
    """One call (its ``calls`` and ``call_status`` rows), for :meth:`AnnotationStore.record_calls`.
    Without ``status`` it follows from ``raw`` and ``label`` (see the module docstring)."""
    if status is None:
        status = "failed" if raw is None else "unparseable" if label is None else "valid"
    return (
        key.item_id, key.prompt, key.annotator, key.fingerprint, key.sample, key.prompt_version,
        model, raw, label, tone, json.dumps(techniques) if techniques is not None else None,
        rationale, error, latency_s, utcnow(), status, problem, None if structured is None else int(structured),
    )


def row_status(row: tuple) -> str:
    """The ``status`` of a row made by :func:`call_row`."""
    return row[15]


@dataclass(frozen=True)
class ActiveAnnotator:
    name: str
    fingerprint: str
    """Hash of what makes this annotator's answers what they are (backend, model, params)."""


class AnnotationStore:
    """Thread-safe access to a workdir's ``annotations.sqlite``."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        row = self._db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if row is None:
            self._db.execute("INSERT INTO meta VALUES('schema_version', ?)", (str(STORE_SCHEMA_VERSION),))
        elif int(row[0]) == 1:
            self._migrate_from_1()
        elif int(row[0]) != STORE_SCHEMA_VERSION:
            raise RuntimeError(f"{self.path}: annotation store schema {row[0]}, expected {STORE_SCHEMA_VERSION}")

    def _migrate_from_1(self) -> None:
        """Schema 1 -> 2: check every stored answer again with the strict parser. One
        transaction, read in batches of rows (memory stays flat in store size)."""
        self._db.execute("BEGIN")
        last, checked, invalid = -1, 0, 0
        while rows := self._db.execute(f"SELECT rowid, {_KEY}, raw FROM calls WHERE rowid > ? ORDER BY rowid LIMIT 5000", (last,)).fetchall():
            last = rows[-1][0]
            updates, statuses = [], []
            for rowid, *key, raw in rows:
                if raw is None:
                    statuses.append((*key, "failed", None, None))
                    continue
                a = parse_annotation(raw, key[1])
                valid = a.label is not None
                updates.append((a.label, a.tone, json.dumps(a.techniques) if valid else None, a.rationale if valid else None, rowid))
                statuses.append((*key, a.status, a.problem or None, None))
                checked, invalid = checked + 1, invalid + (not valid)
            self._db.executemany("UPDATE calls SET label=?, tone=?, techniques_json=?, rationale=? WHERE rowid=?", updates)
            self._db.executemany(_INSERT_STATUS, statuses)
        self._db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(STORE_SCHEMA_VERSION),))
        self._db.execute("COMMIT")
        logger.info("%s: migrated to schema %d; %d of %d stored answers are not valid under the strict check", self.path, STORE_SCHEMA_VERSION, invalid, checked)

    @classmethod
    def for_workdir(cls, workdir: str | os.PathLike) -> AnnotationStore:
        return cls(Path(workdir) / ANNOTATIONS)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> AnnotationStore:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- calls ----------------------------------------------------------------------------

    def record_call(self, key: CallKey, **fields: Any) -> None:
        """Store one call (its own transaction); ``fields`` are :func:`call_row`'s keyword
        arguments. A repeated key replaces the earlier row."""
        self.record_calls([call_row(key, **fields)])

    def record_calls(self, rows: list[tuple]) -> None:
        """Store rows made by :func:`call_row` in one transaction (all or none). The annotate
        stage commits the results that completed together this way: one commit per group is
        what keeps the store from being the bottleneck at hundreds of calls per second."""
        if not rows:
            return
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.executemany(_INSERT_CALL, [r[:15] for r in rows])
                self._db.executemany(_INSERT_STATUS, [r[:6] + r[15:] for r in rows])
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def existing_keys(self) -> set[CallKey]:
        """Keys of calls that got an answer (raw text). Failed calls are asked again."""
        with self._lock:
            rows = self._db.execute(
                "SELECT item_id, prompt, annotator, fingerprint, sample, prompt_version FROM calls WHERE raw IS NOT NULL"
            ).fetchall()
        return {CallKey(*r) for r in rows}

    def answered(self, item_id: str) -> set[tuple[str, str, str, int, str]]:
        """``(prompt, annotator, fingerprint, sample, prompt_version)`` of the item's answered
        calls (an indexed lookup: the primary key starts with ``item_id``)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT prompt, annotator, fingerprint, sample, prompt_version FROM calls "
                "WHERE item_id=? AND raw IS NOT NULL",
                (item_id,),
            ).fetchall()
        return {tuple(r) for r in rows}

    def call_counts(self) -> dict[tuple[str, str], dict[str, int]]:
        """``{(prompt, annotator): counts}`` over the active prompt versions, annotators and
        samples: ``calls``, ``answered`` (with raw text), and one count per status of
        :data:`STATUSES` (``unparseable`` = format abstentions; ``failed`` calls are asked again)."""
        out: dict[tuple[str, str], dict[str, int]] = {}
        for prompt, cfg in self.active().items():
            for a in cfg["annotators"]:
                with self._lock:
                    rows = self._db.execute(
                        f"SELECT {_STATUS}, COUNT(*) FROM calls c LEFT JOIN call_status s USING({_KEY}) "
                        "WHERE c.prompt=? AND c.prompt_version=? AND c.annotator=? AND c.fingerprint=? AND c.sample < ? GROUP BY 1",
                        (prompt, cfg["prompt_version"], a.name, a.fingerprint, cfg["samples"]),
                    ).fetchall()
                counts = dict.fromkeys(STATUSES, 0) | dict(rows)
                total = sum(counts.values())
                out[(prompt, a.name)] = {"calls": total, "answered": total - counts["failed"], **counts}
        return out

    def iter_calls(self) -> Iterator[dict[str, Any]]:
        """Every stored call with its ``status``, ``problem`` and ``structured`` flag."""
        with self._lock:
            cur = self._db.execute(
                f"SELECT c.*, {_STATUS} AS status, s.problem, s.structured FROM calls c "
                f"LEFT JOIN call_status s USING({_KEY}) ORDER BY c.item_id, c.prompt, c.annotator, c.sample"
            )
            cols = [d[0] for d in cur.description]
            rows = cur.fetchall()
        for r in rows:
            yield dict(zip(cols, r, strict=True))

    # -- structured output per annotator ----------------------------------------------------

    def set_structured_output(self, annotator: str, fingerprint: str, requested: str, mode: str, detail: str | None = None) -> None:
        """Record what an annotator's latest run got (``server``, ``local_grammar``, ``fallback``, ``off``)."""
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO structured_output VALUES(?,?,?,?,?,?)", (annotator, fingerprint, requested, mode, detail, utcnow())
            )

    def structured_output(self) -> dict[str, dict[str, Any]]:
        """``{annotator: {"requested", "mode", "detail", "updated_at"}}`` for the active annotators."""
        active = {(a.name, a.fingerprint) for cfg in self.active().values() for a in cfg["annotators"]}
        with self._lock:
            rows = self._db.execute("SELECT annotator, fingerprint, requested, mode, detail, updated_at FROM structured_output").fetchall()
        return {
            name: {"requested": requested, "mode": mode, "detail": detail, "updated_at": at}
            for name, fp, requested, mode, detail, at in rows
            if (name, fp) in active
        }

    # -- the active configuration ---------------------------------------------------------

    def set_active(self, prompt: str, prompt_version: str, annotators: list[ActiveAnnotator], samples: int) -> None:
        payload = json.dumps([{"name": a.name, "fingerprint": a.fingerprint} for a in annotators])
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO active VALUES(?,?,?,?)", (prompt, prompt_version, payload, samples)
            )

    def active(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            rows = self._db.execute("SELECT prompt, prompt_version, annotators_json, samples FROM active").fetchall()
        return {
            p: {"prompt_version": v, "annotators": [ActiveAnnotator(**a) for a in json.loads(aj)], "samples": s}
            for p, v, aj, s in rows
        }

    def votes(self) -> dict[str, dict[str, list[Vote]]]:
        """``{item_id: {prompt: [Vote, ...]}}`` for the active prompts and annotators.

        A missing sample (never asked, or failed) is an abstention, so every item has
        M×K ballots per prompt once annotation has run, and fewer only where calls are missing.
        """
        return dict(self.iter_votes())

    def iter_votes(self, *, techniques: bool = True) -> Iterator[tuple[str, dict[str, list[Vote]]]]:
        """Like :meth:`votes`, streamed item by item in ``item_id`` order (memory stays flat
        in corpus size: the build uses this). ``techniques=False`` leaves the votes' techniques
        and rationales out (for counting labels)."""
        active = self.active()
        specs = {p: ({a.name: a.fingerprint for a in cfg["annotators"]}, cfg) for p, cfg in active.items()}
        # A separate connection: the stream must not hold the lock other threads write under.
        db = sqlite3.connect(self.path, timeout=30)
        try:
            cur = db.execute(
                "SELECT item_id, prompt, annotator, fingerprint, sample, prompt_version, label, techniques_json, rationale "
                "FROM calls ORDER BY item_id"
            )
            current: str | None = None
            bucket: dict[str, list[Vote]] = {}
            for item_id, prompt, annotator, fp, sample, version, label, tj, rationale in cur:
                if item_id != current:
                    if current is not None:
                        yield current, self._complete(bucket, specs)
                    current, bucket = item_id, {p: [] for p in PROMPTS}
                spec = specs.get(prompt)
                if spec is None or spec[0].get(annotator) != fp:
                    continue
                cfg = spec[1]
                if version != cfg["prompt_version"] or sample >= cfg["samples"]:
                    continue
                if techniques:
                    bucket[prompt].append(Vote(annotator, sample, label, json.loads(tj) if tj else {}, rationale or ""))
                else:
                    bucket[prompt].append(Vote(annotator, sample, label))
            if current is not None:
                yield current, self._complete(bucket, specs)
        finally:
            db.close()

    @staticmethod
    def _complete(bucket: dict[str, list[Vote]], specs: dict[str, tuple[dict[str, str], dict[str, Any]]]) -> dict[str, list[Vote]]:
        """Fill never-answered samples of a prompt the item was asked under as abstentions."""
        for prompt, (_, cfg) in specs.items():
            votes = bucket.setdefault(prompt, [])
            if not votes:
                continue
            done = {(v.annotator, v.sample) for v in votes}
            for a in cfg["annotators"]:
                for k in range(cfg["samples"]):
                    if (a.name, k) not in done:
                        votes.append(Vote(a.name, k, None))
        return bucket

    # -- image descriptions ---------------------------------------------------------------

    def image_description(self, image_sha256: str, annotator: str) -> str | None:
        with self._lock:
            row = self._db.execute(
                "SELECT description FROM image_descriptions WHERE image_sha256=? AND annotator=?", (image_sha256, annotator)
            ).fetchone()
        return row[0] if row else None

    def set_image_description(self, image_sha256: str, annotator: str, description: str) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO image_descriptions VALUES(?,?,?,?)", (image_sha256, annotator, description, utcnow())
            )
