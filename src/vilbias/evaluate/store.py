"""Per-run storage of predictions and judge verdicts, written as they arrive.

``<output>/evaluation.sqlite`` holds one row per answer, keyed by ``(view, item, regime, probe,
question, sample)`` (``view`` = ``"<config>/<split>"``; ``question`` = ``closed`` for the
label-only question or a classifier's prediction, ``ovqa`` for label + reasoning), and one judge
verdict per oVQA answer under ``(view, item, regime, probe, sample)``. Each row is committed when its answer arrives, so an interrupted evaluation re-run with the
same command asks only what is missing. Transport errors (server unreachable) are stored with
``status="error"`` and asked again on resume; an answer the model gave, parseable or not, and a
judge verdict that settled (valid, or failed after its retries) are final. The file is a call
ledger (:class:`vilbias.ledger.Ledger`): schema version, keyed puts and durability are its.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vilbias.ledger import Ledger, Table

STORE_SCHEMA_VERSION = 1
PREDICTIONS = Table(
    "predictions",
    key=("view", "item", "regime", "probe", "question", "sample"),
    columns=("status", "label", "reasoning", "raw", "error"),
    types={"sample": "INTEGER", "status": "TEXT NOT NULL", "label": "INTEGER"},
)
VERDICTS = Table(
    "verdicts",
    key=("view", "item", "regime", "probe", "sample"),
    columns=("status", "source", "reasoning_accuracy", "faithfulness", "justification", "attempts", "raw", "error"),
    types={"sample": "INTEGER", "status": "TEXT NOT NULL", "source": "TEXT NOT NULL", "reasoning_accuracy": "INTEGER",
           "faithfulness": "INTEGER", "attempts": "INTEGER"},
)

AnswerKey = tuple[str, str, str, str, str, int]
"""(view, item, regime, probe, question, sample)"""
VerdictKey = tuple[str, str, str, str, int]
"""(view, item, regime, probe, sample): the verdict on that oVQA answer"""


class EvaluationStore(Ledger):
    """One evaluation run's ``evaluation.sqlite`` on the shared call ledger (see the module docstring)."""

    def __init__(self, path: str | Path):
        super().__init__(path, [PREDICTIONS, VERDICTS], version=STORE_SCHEMA_VERSION, name="evaluation store")

    def check_identity(self, identity: dict[str, Any]) -> None:
        """Record what this run evaluates, or refuse to mix answers of another model, dataset or judge.

        Raises:
            ValueError: when the folder already holds a run with a different identity.
        """
        stored = self.get_meta("identity")
        if stored is None:
            self.set_meta("identity", json.dumps(identity, sort_keys=True))
            return
        old = json.loads(stored)
        diff = {k: (old.get(k), identity.get(k)) for k in set(old) | set(identity) if old.get(k) != identity.get(k)}
        if diff:
            raise ValueError(
                f"{self.path.parent} holds a run of another setup ({diff}); use another --output "
                "or --run-name, or delete the folder to start over"
            )

    # -- predictions ------------------------------------------------------------------------

    def predictions(self, view: str, regime: str, probe: str, question: str) -> dict[tuple[str, int], dict]:
        """Final answers to ``question`` in one (view, regime, probe), keyed by (item, sample)."""
        rows = self.rows(PREDICTIONS, "view=? AND regime=? AND probe=? AND question=? AND status='ok'", (view, regime, probe, question))
        return {(r["item"], r["sample"]): {k: r[k] for k in ("label", "reasoning", "raw", "error")} for r in rows}

    def put_prediction(self, key: AnswerKey, *, status: str, label: int | None = None, reasoning: str | None = None,
                       raw: str | None = None, error: str | None = None) -> None:
        self.put(PREDICTIONS, [(*key, status, label, reasoning, raw, error)])

    def count_rows(self) -> int:
        """Answers and verdicts stored, of any status (0: nothing was asked yet)."""
        return self.count(PREDICTIONS) + self.count(VERDICTS)

    # -- verdicts ---------------------------------------------------------------------------

    def verdicts(self, view: str, regime: str, probe: str) -> dict[tuple[str, int], dict]:
        """Settled verdicts (``ok`` or ``failed``) of one (view, regime, probe)."""
        rows = self.rows(VERDICTS, "view=? AND regime=? AND probe=? AND status IN ('ok', 'failed')", (view, regime, probe))
        keys = ("status", "source", "reasoning_accuracy", "faithfulness", "justification", "attempts", "error")
        return {(r["item"], r["sample"]): {k: r[k] for k in keys} for r in rows}

    def put_verdict(self, key: VerdictKey, record: dict[str, Any], *, source: str = "judge") -> None:
        self.put(VERDICTS, [(
            *key, record["status"], source, record.get("reasoning_accuracy"), record.get("faithfulness"),
            record.get("justification"), record.get("attempts"), record.get("raw"), record.get("error"),
        )])
