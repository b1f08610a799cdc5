"""``audit.sqlite``: every audit call, and the annotator-audit summaries in ``annotations.sqlite``.

One row per (question, modality, model fingerprint, prompt version). A run asks only the keys
that have no answer yet, and commits each result as it arrives (WAL journal), so a killed run
loses at most the calls in flight and a re-run resumes where it stopped. A failed call (no reply,
an error) is asked again; a reply that matches no option is kept raw and not asked again (it is
the model's answer: an abstention).

Schema version 1::

    calls(question_id, modality, fingerprint, prompt_version, model, answer, raw,
          scores_json, structured, error, latency_s, created_at)
    runs(fingerprint, model, spec_json, created_at)
    meta(key, value)

:func:`write_annotator_audit` adds ``annotator_audits`` to a workdir's ``annotations.sqlite``:
one row per annotator, fingerprint and probe version with the audit's summary (JSON) — the
summary the dataset card shows in its annotation section::

    annotator_audits(annotator, fingerprint, probe_version, modality, questions, answered,
                     summary_json, created_at)
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vilbias.workdir import utcnow

AUDIT_DB = "audit.sqlite"
STORE_SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS calls(
    question_id TEXT NOT NULL,
    modality TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    prompt_version TEXT NOT NULL,
    model TEXT,
    answer TEXT,
    raw TEXT,
    scores_json TEXT,
    structured INTEGER,
    error TEXT,
    latency_s REAL,
    created_at TEXT NOT NULL,
    PRIMARY KEY(question_id, modality, fingerprint, prompt_version)
);
CREATE TABLE IF NOT EXISTS runs(
    fingerprint TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    spec_json TEXT NOT NULL,
    created_at TEXT NOT NULL
);
"""


@dataclass(frozen=True)
class CallResult:
    """What one question got: the chosen option (None: no option), the raw reply of a chat
    model, the option scores of a scored model, and an error when the call failed."""

    answer: str | None
    raw: str | None = None
    scores: list[float] | None = None
    structured: bool | None = None
    error: str | None = None
    latency_s: float = 0.0

    @property
    def failed(self) -> bool:
        return self.answer is None and self.raw is None and self.scores is None


class AuditStore:
    """Thread-safe access to an audit's ``audit.sqlite``."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        row = self._db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if row is None:
            self._db.execute("INSERT INTO meta VALUES('schema_version', ?)", (str(STORE_SCHEMA_VERSION),))
        elif int(row[0]) != STORE_SCHEMA_VERSION:
            raise RuntimeError(f"{self.path}: audit store schema {row[0]}, expected {STORE_SCHEMA_VERSION}")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> AuditStore:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def register(self, fingerprint: str, model: str, spec: dict[str, Any]) -> None:
        with self._lock:
            self._db.execute("INSERT OR IGNORE INTO runs VALUES(?,?,?,?)",
                             (fingerprint, model, json.dumps(spec, sort_keys=True, default=str), utcnow()))

    def record(self, question_id: str, modality: str, fingerprint: str, prompt_version: str, model: str,
               result: CallResult) -> None:
        """Store one call in its own transaction (a repeated key replaces the earlier row)."""
        row = (
            question_id, modality, fingerprint, prompt_version, model, result.answer, result.raw,
            json.dumps(result.scores) if result.scores is not None else None,
            None if result.structured is None else int(result.structured),
            result.error, result.latency_s, utcnow(),
        )
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO calls VALUES(?,?,?,?,?,?,?,?,?,?,?,?)", row)

    def answered(self, fingerprint: str, prompt_version: str) -> set[tuple[str, str]]:
        """``(question_id, modality)`` of the calls that got a reply (failed calls are not)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT question_id, modality FROM calls WHERE fingerprint=? AND prompt_version=? "
                "AND (raw IS NOT NULL OR answer IS NOT NULL OR scores_json IS NOT NULL)",
                (fingerprint, prompt_version),
            ).fetchall()
        return {(q, m) for q, m in rows}

    def results(self, fingerprint: str, prompt_version: str) -> dict[tuple[str, str], dict[str, Any]]:
        """Every stored call of a model and prompt version, keyed ``(question_id, modality)``."""
        with self._lock:
            rows = self._db.execute(
                "SELECT question_id, modality, answer, raw, scores_json, structured, error, latency_s, created_at "
                "FROM calls WHERE fingerprint=? AND prompt_version=?",
                (fingerprint, prompt_version),
            ).fetchall()
        out = {}
        for qid, modality, answer, raw, scores, structured, error, latency, created in rows:
            out[(qid, modality)] = {
                "answer": answer, "raw": raw, "scores": json.loads(scores) if scores else None,
                "structured": None if structured is None else bool(structured), "error": error,
                "latency_s": latency, "created_at": created,
            }
        return out


# -- annotator audits in annotations.sqlite ------------------------------------------------------

_ANNOTATOR_AUDITS = """
CREATE TABLE IF NOT EXISTS annotator_audits(
    annotator TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    probe_version TEXT NOT NULL,
    modality TEXT NOT NULL,
    questions INTEGER NOT NULL,
    answered INTEGER NOT NULL,
    summary_json TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY(annotator, fingerprint, probe_version, modality)
);
"""


def write_annotator_audit(annotations_db: str | os.PathLike, annotator: str, fingerprint: str, probe_version: str,
                          modality: str, summary: dict[str, Any]) -> None:
    """Store one annotator's audit summary in ``annotations.sqlite`` (table ``annotator_audits``,
    created when missing; the annotate stage's own tables are not touched). The row of the same
    annotator, fingerprint, probe version and modality is replaced."""
    db = sqlite3.connect(annotations_db, timeout=30, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.executescript(_ANNOTATOR_AUDITS)
        db.execute(
            "INSERT OR REPLACE INTO annotator_audits VALUES(?,?,?,?,?,?,?,?)",
            (annotator, fingerprint, probe_version, modality, int(summary.get("questions", 0)),
             int(summary.get("answered", 0)), json.dumps(summary, sort_keys=True), utcnow()),
        )
    finally:
        db.close()


def read_annotator_audits(annotations_db: str | os.PathLike, annotators: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """The stored annotator audits, newest first per annotator: one dict per row with the
    summary parsed. ``annotators`` (name -> fingerprint) keeps only those annotators as
    configured now (the card shows the audits of the annotators that labelled the corpus).
    A store without the table gives an empty list."""
    if not Path(annotations_db).is_file():
        return []
    db = sqlite3.connect(f"file:{Path(annotations_db).resolve()}?mode=ro", uri=True, timeout=30)
    try:
        try:
            rows = db.execute(
                "SELECT annotator, fingerprint, probe_version, modality, questions, answered, summary_json, created_at "
                "FROM annotator_audits ORDER BY annotator, created_at DESC"
            ).fetchall()
        except sqlite3.OperationalError:
            return []
    finally:
        db.close()
    out = []
    for annotator, fp, version, modality, questions, answered, summary, created in rows:
        if annotators is not None and annotators.get(annotator) != fp:
            continue
        out.append({
            "annotator": annotator, "fingerprint": fp, "probe_version": version, "modality": modality,
            "questions": questions, "answered": answered, "summary": json.loads(summary), "created_at": created,
        })
    return out
