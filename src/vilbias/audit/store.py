"""``audit.sqlite``: every audit call, on the shared call ledger (:mod:`vilbias.ledger`).

One row per (question, modality, model fingerprint, prompt version). A run asks only the keys
that have no answer yet, and commits each result as it arrives, so a killed run loses at most
the calls in flight and a re-run resumes where it stopped. A failed call (no reply, an error) is
asked again; a reply that matches no option is kept raw and not asked again (it is the model's
answer: an abstention).

Schema version 1::

    calls(question_id, modality, fingerprint, prompt_version, model, answer, raw,
          scores_json, structured, error, latency_s, created_at)
    runs(fingerprint, model, spec_json, created_at)
    meta(key, value)

An annotator's audit summary is not kept here: ``vilbias audit annotators`` hands it to the
annotate stage (:meth:`vilbias.annotate.store.AnnotationStore.put_annotator_audit`), whose
``annotations.sqlite`` the dataset card reads.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from vilbias.ledger import Ledger, Table
from vilbias.workdir import utcnow

AUDIT_DB = "audit.sqlite"
STORE_SCHEMA_VERSION = 1

CALLS = Table(
    "calls",
    key=("question_id", "modality", "fingerprint", "prompt_version"),
    columns=("model", "answer", "raw", "scores_json", "structured", "error", "latency_s", "created_at"),
    types={"structured": "INTEGER", "latency_s": "REAL", "created_at": "TEXT NOT NULL"},
)
RUNS = Table("runs", key=("fingerprint",), columns=("model", "spec_json", "created_at"))
_ANSWERED = "(raw IS NOT NULL OR answer IS NOT NULL OR scores_json IS NOT NULL)"


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


class AuditStore(Ledger):
    """An audit's ``audit.sqlite``."""

    def __init__(self, path: str | os.PathLike):
        super().__init__(path, [CALLS, RUNS], version=STORE_SCHEMA_VERSION, name="audit store")

    def register(self, fingerprint: str, model: str, spec: dict[str, Any]) -> None:
        """Record what a fingerprint stands for (the first registration stays)."""
        if not self.keys(RUNS, "fingerprint=?", (fingerprint,)):
            self.put(RUNS, [(fingerprint, model, json.dumps(spec, sort_keys=True, default=str), utcnow())])

    def record(self, question_id: str, modality: str, fingerprint: str, prompt_version: str, model: str,
               result: CallResult) -> None:
        """Store one call in its own transaction (a repeated key replaces the earlier row)."""
        self.put(CALLS, [(
            question_id, modality, fingerprint, prompt_version, model, result.answer, result.raw,
            json.dumps(result.scores) if result.scores is not None else None,
            None if result.structured is None else int(result.structured),
            result.error, result.latency_s, utcnow(),
        )])

    def answered(self, fingerprint: str, prompt_version: str) -> set[tuple[str, str]]:
        """``(question_id, modality)`` of the calls that got a reply (failed calls are not)."""
        keys = self.keys(CALLS, f"fingerprint=? AND prompt_version=? AND {_ANSWERED}", (fingerprint, prompt_version))
        return {(q, m) for q, m, _, _ in keys}

    def results(self, fingerprint: str, prompt_version: str) -> dict[tuple[str, str], dict[str, Any]]:
        """Every stored call of a model and prompt version, keyed ``(question_id, modality)``."""
        out = {}
        for r in self.rows(CALLS, "fingerprint=? AND prompt_version=?", (fingerprint, prompt_version)):
            out[(r["question_id"], r["modality"])] = {
                "answer": r["answer"], "raw": r["raw"], "scores": json.loads(r["scores_json"]) if r["scores_json"] else None,
                "structured": None if r["structured"] is None else bool(r["structured"]), "error": r["error"],
                "latency_s": r["latency_s"], "created_at": r["created_at"],
            }
        return out
