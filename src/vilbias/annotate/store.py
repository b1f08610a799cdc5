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
    sampling(annotator, fingerprint, mode, detail, updated_at)
    image_descriptions(image_sha256, annotator, description, created_at)
    active(prompt, prompt_version, annotators_json, samples)
    annotator_audits(annotator, fingerprint, probe_version, modality, questions, answered,
                     summary_json, created_at)
    meta(key, value)

The file is a call ledger (:class:`vilbias.ledger.Ledger`): the tables are declared below, and
the schema version, migration and keyed puts are the ledger's. ``annotator_audits`` holds the
stereotype audit of each annotator (``vilbias audit annotators`` writes it through
:meth:`AnnotationStore.put_annotator_audit`; the dataset card reads it through
:meth:`AnnotationStore.annotator_audits`).

A call's ``status`` is ``valid`` (its ``label`` is a vote), ``invalid`` (an answer object that
breaks the schema), ``unparseable`` (no answer object: a format abstention), ``refused`` (the model
declined; ``raw`` holds its message), ``failed`` (no answer; asked again next run) or
``other_language`` (the annotator abstained: the item is in a language it does not read; the
model was not asked; ``raw`` and ``problem`` say which, e.g. "the article is in German (de);
babe-sentence-model reads English (en)"). Only valid calls have a ``label``. An
``other_language`` call is an answered abstention (not asked again); the vote sets its annotator
aside (:func:`vilbias.annotate.voting.hierarchical_vote`). A ``calls`` row without a ``call_status`` row (written by other tools)
counts as ``failed`` without ``raw``, ``unparseable`` without ``label``, else ``valid``.
``structured_output`` records, per annotator, what its latest run got: ``server`` (the server
decoded under the schema), ``local_grammar`` (llguidance), ``fallback`` (the server rejected the
request; answers parsed strictly; ``detail`` holds the rejection), ``off`` (configured) or ``built``
(a predictor checkpoint: the answer is written from the model's output, nothing is decoded).
``sampling`` records, per annotator, how its latest run asked for the K samples: ``n`` (one request
for the K samples of an item and prompt: one prefill), ``num_return_sequences`` (local models, the
same over one ``generate``) or ``per_sample`` (the server rejected ``n`` > 1 or answered with fewer
choices; ``detail`` says which; one request per sample) or ``deterministic`` (a predictor
checkpoint, asked one sample: the ``active`` table's annotator entry then carries ``samples: 1``,
which overrides the run's K for that annotator). The table joined schema 2 without a new
version: a store without it is read as before, and an older vilbias ignores it. How samples were
asked is not part of an annotator's fingerprint, so a store annotated either way is complete for the other.

Opening a schema-1 store migrates it: every stored answer is checked again with the strict
parser (:func:`vilbias.annotate.prompts.parse_annotation`), so a vote stands only if its answer is
valid.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vilbias.annotate.prompts import parse_annotation
from vilbias.annotate.voting import OTHER_LANGUAGE, Vote
from vilbias.ledger import Ledger, Table
from vilbias.workdir import ANNOTATIONS, utcnow

if TYPE_CHECKING:
    import sqlite3

logger = logging.getLogger(__name__)

STORE_SCHEMA_VERSION = 2
PROMPTS = ("text", "multimodal")
STATUSES = ("valid", "invalid", "unparseable", "refused", "failed", OTHER_LANGUAGE)
_KEY = "item_id, prompt, annotator, fingerprint, sample, prompt_version"
# The status of a call, also for rows without a call_status row (see the module docstring).
_STATUS = "COALESCE(s.status, CASE WHEN c.raw IS NULL THEN 'failed' WHEN c.label IS NULL THEN 'unparseable' ELSE 'valid' END)"

_INT = "INTEGER NOT NULL"
CALLS = Table(
    "calls",
    key=("item_id", "prompt", "annotator", "fingerprint", "sample", "prompt_version"),
    columns=("model", "raw", "label", "tone", "techniques_json", "rationale", "error", "latency_s", "created_at"),
    types={"sample": _INT, "latency_s": "REAL", "created_at": "TEXT NOT NULL"},
)
CALL_STATUS = Table(
    "call_status", key=CALLS.key, columns=("status", "problem", "structured"),
    types={"sample": _INT, "status": "TEXT NOT NULL", "structured": "INTEGER"},
)
STRUCTURED_OUTPUT = Table(
    "structured_output", key=("annotator", "fingerprint"), columns=("requested", "mode", "detail", "updated_at"),
)
SAMPLING = Table("sampling", key=("annotator", "fingerprint"), columns=("mode", "detail", "updated_at"))
IMAGE_DESCRIPTIONS = Table("image_descriptions", key=("image_sha256", "annotator"), columns=("description", "created_at"))
ACTIVE = Table("active", key=("prompt",), columns=("prompt_version", "annotators_json", "samples"), types={"samples": _INT})
ANNOTATOR_AUDITS = Table(
    "annotator_audits", key=("annotator", "fingerprint", "probe_version", "modality"),
    columns=("questions", "answered", "summary_json", "created_at"), types={"questions": _INT, "answered": _INT},
)
"""The stereotype audits of the annotators (``vilbias audit annotators``): written through
:meth:`AnnotationStore.put_annotator_audit`, read by the dataset card."""
TABLES = (CALLS, CALL_STATUS, STRUCTURED_OUTPUT, SAMPLING, IMAGE_DESCRIPTIONS, ACTIVE, ANNOTATOR_AUDITS)


@dataclass(frozen=True)
class CallKey:
    item_id: str
    prompt: str
    annotator: str
    fingerprint: str
    sample: int
    prompt_version: str


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
    created_at: str | None = None,
) -> tuple:
    """One call (its ``calls`` and ``call_status`` rows), for :meth:`AnnotationStore.record_calls`.
    Without ``status`` it follows from ``raw`` and ``label`` (see the module docstring); without
    ``created_at``, now (the K samples of a request share one)."""
    if status is None:
        status = "failed" if raw is None else "unparseable" if label is None else "valid"
    return (
        key.item_id, key.prompt, key.annotator, key.fingerprint, key.sample, key.prompt_version,
        model, raw, label, tone, json.dumps(techniques) if techniques is not None else None,
        rationale, error, latency_s, created_at or utcnow(), status, problem, None if structured is None else int(structured),
    )


def row_status(row: tuple) -> str:
    """The ``status`` of a row made by :func:`call_row`."""
    return row[15]


@dataclass(frozen=True)
class ActiveAnnotator:
    name: str
    fingerprint: str
    """Hash of what makes this annotator's answers what they are (backend, model, params)."""
    samples: int | None = None
    """Samples asked of this annotator per item and prompt when not the run's K: 1 for a
    deterministic model (a predictor checkpoint), whose K answers would all be the same."""

    def samples_of(self, k: int) -> int:
        return self.samples if self.samples is not None else k


def _migrate_from_1(db: sqlite3.Connection) -> None:
    """Schema 1 -> 2: check every stored answer again with the strict parser, read in batches
    of rows (memory stays flat in store size); the ledger runs this in one transaction."""
    db.execute(CALL_STATUS.ddl())
    last, checked, invalid = -1, 0, 0
    while rows := db.execute(f"SELECT rowid, {_KEY}, raw FROM calls WHERE rowid > ? ORDER BY rowid LIMIT 5000", (last,)).fetchall():
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
        db.executemany("UPDATE calls SET label=?, tone=?, techniques_json=?, rationale=? WHERE rowid=?", updates)
        db.executemany(CALL_STATUS.insert(), statuses)
    logger.info("%d of %d stored answers are not valid under the strict check", invalid, checked)


class AnnotationStore(Ledger):
    """A workdir's ``annotations.sqlite``, on the shared call ledger (thread-safe)."""

    def __init__(self, path: str | os.PathLike):
        super().__init__(path, TABLES, version=STORE_SCHEMA_VERSION, migrations={1: _migrate_from_1}, name="annotation store")

    @classmethod
    def for_workdir(cls, workdir: str | os.PathLike) -> AnnotationStore:
        return cls(Path(workdir) / ANNOTATIONS)

    # -- calls ----------------------------------------------------------------------------

    def record_call(self, key: CallKey, **fields: Any) -> None:
        """Store one call (its own transaction); ``fields`` are :func:`call_row`'s keyword
        arguments. A repeated key replaces the earlier row."""
        self.record_calls([call_row(key, **fields)])

    def record_calls(self, rows: list[tuple]) -> None:
        """Store rows made by :func:`call_row` in one transaction (all or none). The annotate
        stage commits the results that completed together this way: one commit per group is
        what keeps the store from being the bottleneck at hundreds of calls per second."""
        if rows:
            self.put_many({CALLS: [r[:15] for r in rows], CALL_STATUS: [r[:6] + r[15:] for r in rows]})

    def existing_keys(self) -> set[CallKey]:
        """Keys of calls that got an answer (raw text). Failed calls are asked again."""
        return {CallKey(*k) for k in self.keys(CALLS, "raw IS NOT NULL")}

    def answered(self, item_id: str) -> set[tuple[str, str, str, int, str]]:
        """``(prompt, annotator, fingerprint, sample, prompt_version)`` of the item's answered
        calls (an indexed lookup: the primary key starts with ``item_id``)."""
        return {k[1:] for k in self.keys(CALLS, "item_id=? AND raw IS NOT NULL", (item_id,))}

    def answered_items(self, item_ids: list[str], annotator: str, fingerprint: str) -> dict[str, set[tuple[str, int, str]]]:
        """``{item_id: {(prompt, sample, prompt_version), ...}}`` of one annotator's answered
        calls for many items in one query (the ask-loop reads the store a chunk of items at a
        time, not an item at a time)."""
        out: dict[str, set[tuple[str, int, str]]] = {i: set() for i in item_ids}
        marks = ",".join("?" * len(item_ids))
        for item_id, prompt, sample, version in self.query(
            f"SELECT item_id, prompt, sample, prompt_version FROM calls WHERE item_id IN ({marks}) "
            "AND annotator=? AND fingerprint=? AND raw IS NOT NULL", (*item_ids, annotator, fingerprint),
        ):
            out[item_id].add((prompt, sample, version))
        return out

    def call_counts(self) -> dict[tuple[str, str], dict[str, int]]:
        """``{(prompt, annotator): counts}`` over the active prompt versions, annotators and
        samples: ``calls``, ``answered`` (with raw text), and one count per status of
        :data:`STATUSES` (``unparseable`` = format abstentions; ``failed`` calls are asked again)."""
        # One scan of the store, grouped by what tells the active calls apart (a few hundred rows).
        # Every call the stage stores has its status row: then the narrow status table says it all.
        match = " AND ".join(f"c.{k} = s.{k}" for k in CALLS.key)
        unmarked = self.query(f"SELECT COUNT(*) FROM calls c WHERE NOT EXISTS (SELECT 1 FROM call_status s WHERE {match})")[0][0]
        by = "prompt, annotator, fingerprint, prompt_version"
        sql = (f"SELECT {by}, sample, status, COUNT(*) FROM call_status s WHERE EXISTS (SELECT 1 FROM calls c WHERE {match}) "
               "GROUP BY 1, 2, 3, 4, 5, 6") if not unmarked else (
               f"SELECT c.prompt, c.annotator, c.fingerprint, c.prompt_version, c.sample, {_STATUS}, COUNT(*) "
               f"FROM calls c LEFT JOIN call_status s USING({_KEY}) GROUP BY 1, 2, 3, 4, 5, 6")
        found: dict[tuple[str, str, str, str], list[tuple[int, str, int]]] = {}
        for prompt, annotator, fp, version, sample, status, n in self.query(sql):
            found.setdefault((prompt, annotator, fp, version), []).append((sample, status, n))
        out: dict[tuple[str, str], dict[str, int]] = {}
        for prompt, cfg in self.active().items():
            for a in cfg["annotators"]:
                counts = dict.fromkeys(STATUSES, 0)
                for sample, status, n in found.get((prompt, a.name, a.fingerprint, cfg["prompt_version"]), []):
                    if sample < a.samples_of(cfg["samples"]):
                        counts[status] = counts.get(status, 0) + n
                total = sum(counts.values())
                out[(prompt, a.name)] = {"calls": total, "answered": total - counts["failed"], **counts}
        return out

    def iter_calls(self) -> Iterator[dict[str, Any]]:
        """Every stored call with its ``status``, ``problem`` and ``structured`` flag."""
        cols = (*CALLS.all_columns, "status", "problem", "structured")
        for r in self.stream(
            f"SELECT c.*, {_STATUS} AS status, s.problem, s.structured FROM calls c "
            f"LEFT JOIN call_status s USING({_KEY}) ORDER BY c.item_id, c.prompt, c.annotator, c.sample"
        ):
            yield dict(zip(cols, r, strict=True))

    # -- structured output per annotator ----------------------------------------------------

    def set_structured_output(self, annotator: str, fingerprint: str, requested: str, mode: str, detail: str | None = None) -> None:
        """Record what an annotator's latest run got (``server``, ``local_grammar``, ``fallback``, ``off``)."""
        self.put(STRUCTURED_OUTPUT, [(annotator, fingerprint, requested, mode, detail, utcnow())])

    def structured_output(self) -> dict[str, dict[str, Any]]:
        """``{annotator: {"requested", "mode", "detail", "updated_at"}}`` for the active annotators."""
        active = {(a.name, a.fingerprint) for cfg in self.active().values() for a in cfg["annotators"]}
        return {
            r["annotator"]: {k: r[k] for k in ("requested", "mode", "detail", "updated_at")}
            for r in self.rows(STRUCTURED_OUTPUT)
            if (r["annotator"], r["fingerprint"]) in active
        }

    def set_sampling(self, annotator: str, fingerprint: str, mode: str, detail: str | None = None) -> None:
        """Record how an annotator's latest run asked for its samples (``n``,
        ``num_return_sequences``, ``per_sample``)."""
        self.put(SAMPLING, [(annotator, fingerprint, mode, detail, utcnow())])

    def sampling(self) -> dict[str, dict[str, Any]]:
        """``{annotator: {"mode", "detail", "updated_at"}}`` for the active annotators."""
        active = {(a.name, a.fingerprint) for cfg in self.active().values() for a in cfg["annotators"]}
        return {
            r["annotator"]: {k: r[k] for k in ("mode", "detail", "updated_at")}
            for r in self.rows(SAMPLING)
            if (r["annotator"], r["fingerprint"]) in active
        }

    def active_calls(self) -> Iterator[tuple[str, str, str, str | None, str]]:
        """``(item_id, prompt, annotator, label, status)`` of every active call (its prompt's
        active version, its annotator's active fingerprint, a sample below the annotator's K), in
        ``item_id`` order, streamed: one scan of the store gives the run summary both its call
        counts (the statuses :meth:`call_counts` counts) and its votes (the labels and the
        ``other_language`` abstentions :meth:`iter_votes` yields), without a vote object a call."""
        conditions, params = [], []
        for prompt, cfg in self.active().items():
            for a in cfg["annotators"]:
                conditions.append("(c.prompt=? AND c.annotator=? AND c.fingerprint=? AND c.prompt_version=? AND c.sample<?)")
                params += [prompt, a.name, a.fingerprint, cfg["prompt_version"], a.samples_of(cfg["samples"])]
        if not conditions:
            return
        yield from self.stream(
            f"SELECT c.item_id, c.prompt, c.annotator, c.label, {_STATUS} FROM calls c LEFT JOIN call_status s USING({_KEY}) "
            f"WHERE {' OR '.join(conditions)} ORDER BY c.item_id", params,
        )

    # -- the active configuration ---------------------------------------------------------

    def set_active(self, prompt: str, prompt_version: str, annotators: list[ActiveAnnotator], samples: int) -> None:
        # an annotator's own sample count only where it has one: stores without it read as before
        payload = json.dumps([{"name": a.name, "fingerprint": a.fingerprint} | ({"samples": a.samples} if a.samples is not None else {})
                              for a in annotators])
        self.put(ACTIVE, [(prompt, prompt_version, payload, samples)])

    def active(self) -> dict[str, dict[str, Any]]:
        return {
            r["prompt"]: {"prompt_version": r["prompt_version"], "samples": r["samples"],
                          "annotators": [ActiveAnnotator(**a) for a in json.loads(r["annotators_json"])]}
            for r in self.rows(ACTIVE)
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
        specs = {p: ({a.name: (a.fingerprint, a.samples_of(cfg["samples"])) for a in cfg["annotators"]}, cfg) for p, cfg in active.items()}
        # An abstention's status is looked up (by primary key) only for calls without a label: the
        # vote needs it to set aside an annotator that does not read the item's language.
        match = " AND ".join(f"s.{k} = c.{k}" for k in CALLS.key)
        texts = "techniques_json, rationale" if techniques else "NULL, NULL"  # counting labels reads no rationale
        rows = self.stream(
            f"SELECT item_id, prompt, annotator, fingerprint, sample, prompt_version, label, {texts}, "
            f"CASE WHEN c.label IS NULL THEN (SELECT s.status FROM call_status s WHERE {match}) END "
            "FROM calls c ORDER BY item_id"
        )
        current: str | None = None
        bucket: dict[str, list[Vote]] = {}
        for item_id, prompt, annotator, fp, sample, version, label, tj, rationale, status in rows:
            if item_id != current:
                if current is not None:
                    yield current, self._complete(bucket, specs)
                current, bucket = item_id, {p: [] for p in PROMPTS}
            spec = specs.get(prompt)
            own = spec[0].get(annotator) if spec is not None else None
            if own is None or own[0] != fp:
                continue
            cfg = spec[1]
            if version != cfg["prompt_version"] or sample >= own[1]:
                continue
            abstention = OTHER_LANGUAGE if status == OTHER_LANGUAGE else None
            if techniques:
                bucket[prompt].append(Vote(annotator, sample, label, json.loads(tj) if tj else {}, rationale or "", abstention))
            else:
                bucket[prompt].append(Vote(annotator, sample, label, abstention=abstention))
        if current is not None:
            yield current, self._complete(bucket, specs)

    @staticmethod
    def _complete(bucket: dict[str, list[Vote]], specs: dict[str, tuple[dict[str, tuple[str, int]], dict[str, Any]]]) -> dict[str, list[Vote]]:
        """Fill never-answered samples of a prompt the item was asked under as abstentions."""
        for prompt, (_, cfg) in specs.items():
            votes = bucket.setdefault(prompt, [])
            if not votes:
                continue
            done = {(v.annotator, v.sample) for v in votes}
            for a in cfg["annotators"]:
                for k in range(a.samples_of(cfg["samples"])):
                    if (a.name, k) not in done:
                        votes.append(Vote(a.name, k, None))
        return bucket

    # -- image descriptions ---------------------------------------------------------------

    def image_description(self, image_sha256: str, annotator: str) -> str | None:
        row = self.query("SELECT description FROM image_descriptions WHERE image_sha256=? AND annotator=?", (image_sha256, annotator))
        return row[0][0] if row else None

    def image_descriptions(self, image_sha256s: list[str], annotator: str) -> dict[str, str]:
        """``{image_sha256: description}`` of the images that have one (one query for many)."""
        marks = ",".join("?" * len(image_sha256s))
        return dict(self.query(
            f"SELECT image_sha256, description FROM image_descriptions WHERE image_sha256 IN ({marks}) AND annotator=?",
            (*image_sha256s, annotator),
        ))

    def set_image_description(self, image_sha256: str, annotator: str, description: str) -> None:
        self.put(IMAGE_DESCRIPTIONS, [(image_sha256, annotator, description, utcnow())])

    # -- the annotators' stereotype audits ----------------------------------------------------

    def put_annotator_audit(self, annotator: str, fingerprint: str, probe_version: str, modality: str,
                            summary: dict[str, Any]) -> None:
        """Store one annotator's audit summary (``vilbias audit annotators``); the row of the same
        annotator, fingerprint, probe version and modality is replaced."""
        self.put(ANNOTATOR_AUDITS, [(
            annotator, fingerprint, probe_version, modality, int(summary.get("questions", 0)),
            int(summary.get("answered", 0)), json.dumps(summary, sort_keys=True), utcnow(),
        )])

    def annotator_audits(self, annotators: dict[str, str] | None = None) -> list[dict[str, Any]]:
        """The stored annotator audits, newest first per annotator, with the summary parsed.
        ``annotators`` (name -> fingerprint) keeps only those annotators as configured now."""
        rows = self.rows(ANNOTATOR_AUDITS, order_by="annotator, created_at DESC")
        return [
            {**{k: v for k, v in r.items() if k != "summary_json"}, "summary": json.loads(r["summary_json"])}
            for r in rows if annotators is None or annotators.get(r["annotator"]) == r["fingerprint"]
        ]
