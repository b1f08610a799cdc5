"""Per-run storage of predictions and judge verdicts, written as they arrive.

``<output>/evaluation.sqlite`` holds one row per answer, keyed by ``(view, item, regime, probe,
question, sample)`` (``view`` = ``"<config>/<split>"``; ``question`` = ``closed`` for the
label-only question or a classifier's prediction, ``ovqa`` for label + reasoning), and one judge
verdict per oVQA answer under ``(view, item, regime, probe, sample)``. Each row is committed when its answer arrives, so an interrupted evaluation re-run with the
same command asks only what is missing. Transport errors (server unreachable) are stored with
``status="error"`` and asked again on resume; an answer the model gave, parseable or not, and a
judge verdict that settled (valid, or failed after its retries) are final.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS predictions (
    view TEXT, item TEXT, regime TEXT, probe TEXT, question TEXT, sample INTEGER,
    status TEXT NOT NULL, label INTEGER, reasoning TEXT, raw TEXT, error TEXT,
    PRIMARY KEY (view, item, regime, probe, question, sample));
CREATE TABLE IF NOT EXISTS verdicts (
    view TEXT, item TEXT, regime TEXT, probe TEXT, sample INTEGER,
    status TEXT NOT NULL, source TEXT NOT NULL, reasoning_accuracy INTEGER, faithfulness INTEGER,
    justification TEXT, attempts INTEGER, raw TEXT, error TEXT,
    PRIMARY KEY (view, item, regime, probe, sample));
"""

AnswerKey = tuple[str, str, str, str, str, int]
"""(view, item, regime, probe, question, sample)"""
VerdictKey = tuple[str, str, str, str, int]
"""(view, item, regime, probe, sample): the verdict on that oVQA answer"""


class EvaluationStore:
    """SQLite store of one evaluation run (see the module docstring)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.executescript(_SCHEMA)

    def close(self) -> None:
        self.db.close()

    def check_identity(self, identity: dict[str, Any]) -> None:
        """Record what this run evaluates, or refuse to mix answers of another model, dataset or judge.

        Raises:
            ValueError: when the folder already holds a run with a different identity.
        """
        stored = self.db.execute("SELECT value FROM meta WHERE key='identity'").fetchone()
        text = json.dumps(identity, sort_keys=True)
        if stored is None:
            with self.db:
                self.db.execute("INSERT INTO meta VALUES ('identity', ?)", (text,))
            return
        old = json.loads(stored[0])
        diff = {k: (old.get(k), identity.get(k)) for k in set(old) | set(identity) if old.get(k) != identity.get(k)}
        if diff:
            raise ValueError(
                f"{self.path.parent} holds a run of another setup ({diff}); use another --output "
                "or --run-name, or delete the folder to start over"
            )

    # -- predictions ------------------------------------------------------------------------

    def predictions(self, view: str, regime: str, probe: str, question: str) -> dict[tuple[str, int], dict]:
        """Final answers to ``question`` in one (view, regime, probe), keyed by (item, sample)."""
        rows = self.db.execute(
            "SELECT item, sample, label, reasoning, raw, error FROM predictions "
            "WHERE view=? AND regime=? AND probe=? AND question=? AND status='ok'", (view, regime, probe, question))
        return {(r[0], r[1]): {"label": r[2], "reasoning": r[3], "raw": r[4], "error": r[5]} for r in rows}

    def put_prediction(self, key: AnswerKey, *, status: str, label: int | None = None, reasoning: str | None = None,
                       raw: str | None = None, error: str | None = None) -> None:
        with self.db:
            self.db.execute("INSERT OR REPLACE INTO predictions VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                            (*key, status, label, reasoning, raw, error))

    def count_rows(self) -> int:
        """Answers and verdicts stored, of any status (0: nothing was asked yet)."""
        return sum(self.db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] for table in ("predictions", "verdicts"))

    # -- verdicts ---------------------------------------------------------------------------

    def verdicts(self, view: str, regime: str, probe: str) -> dict[tuple[str, int], dict]:
        """Settled verdicts (``ok`` or ``failed``) of one (view, regime, probe)."""
        rows = self.db.execute(
            "SELECT item, sample, status, source, reasoning_accuracy, faithfulness, justification, attempts, error "
            "FROM verdicts WHERE view=? AND regime=? AND probe=? AND status IN ('ok', 'failed')", (view, regime, probe))
        keys = ("status", "source", "reasoning_accuracy", "faithfulness", "justification", "attempts", "error")
        return {(r[0], r[1]): dict(zip(keys, r[2:], strict=True)) for r in rows}

    def put_verdict(self, key: VerdictKey, record: dict[str, Any], *, source: str = "judge") -> None:
        with self.db:
            self.db.execute(
                "INSERT OR REPLACE INTO verdicts VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (*key, record["status"], source, record.get("reasoning_accuracy"), record.get("faithfulness"),
                 record.get("justification"), record.get("attempts"), record.get("raw"), record.get("error")))
