"""``vilbias audit run``: ask a model the audit's questions, store every call, export the responses.

    vilbias audit run --model openai:Qwen/Qwen2.5-VL-7B-Instruct@http://localhost:8000/v1 --output audits/qwen
    vilbias audit run --model smollm2 --modalities text --limit 24 --output audits/smollm2
    vilbias audit run --model ./my-vlm --manifest vignette/images --paradigms perception decision --output audits/mine

Every model the project's model clients serve answers with exactly one option:

- a chat server (``openai:<model>@<base_url>``) decodes under a constraint (``--choice``:
  a JSON-schema enum by default, or vLLM's ``structured_outputs``/``guided_choice``); the reply
  is matched to its option, and a reply that matches none is kept raw as an abstention;
- a local ``transformers`` model (a checkpoint folder or Hub id, or ``smollm2``) scores every
  option by log-likelihood (:mod:`vilbias.models.scoring`) and the answer is drawn from those
  scores at ``--temperature`` (0: the most likely option), seeded per question.

Calls go to ``<output>/audit.sqlite`` as they complete; a re-run (after a crash, ``kill``, Ctrl-C)
asks only what is missing. The run ends by writing ``<output>/responses.jsonl`` (the format
``vilbias audit metrics`` reads, documented in ``docs/audit.md``), ``<output>/summary.json`` and,
unless ``--no-metrics``, the metrics and plots in ``<output>/metrics/``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import mimetypes
import random
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from vilbias.audit.config import MODALITY_WORDS, AuditConfig
from vilbias.audit.manifest import Pair, embedded_pairs, materialize_probeset, read_manifest
from vilbias.audit.metrics import MetricOptions, compute_metrics
from vilbias.audit.metrics import write_metrics as write_all_metrics
from vilbias.audit.questions import (
    Question,
    all_questions,
    messages,
    prompt_version,
)
from vilbias.audit.responses import read_responses
from vilbias.audit.space import QuestionSpace, load_space
from vilbias.audit.store import AUDIT_DB, AuditStore, CallResult
from vilbias.audit.summary import summarize
from vilbias.ledger import ask_missing
from vilbias.models.catalogue import GenerativeModel, load_model
from vilbias.models.chat import ChatRequest, ChatResult, chat_jobs, image_part
from vilbias.models.scoring import (
    OptionScorer,
    choice_params,
    choose,
    match_option,
)
from vilbias.outputs import claim_output
from vilbias.progress_flag import follows_progress_flag

logger = logging.getLogger(__name__)

RESPONSES = "responses.jsonl"
SUMMARY = "summary.json"
PROBESET_DIR = "probeset"


# -- choosing an option --------------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    question: Question
    modality: str


class ScoredChooser:
    """A local transformers model: option log-likelihoods, then a seeded draw at ``temperature``."""

    kind = "scored"

    def __init__(self, backend: Any, *, temperature: float, seed: int, normalize: str):
        self.backend = backend
        self.scorer = OptionScorer(backend)
        self.temperature = temperature
        self.seed = seed
        self.normalize = normalize

    def settings(self) -> dict[str, Any]:
        return {"kind": self.kind, "temperature": self.temperature, "seed": self.seed, "normalize": self.normalize}

    def run(self, jobs: Iterable[Job], request: Callable[[Job], ChatRequest], on_result: Callable[[Job, CallResult], None]) -> None:
        for job in jobs:
            options = list(job.question.options)
            start = time.perf_counter()
            try:
                scores = self.scorer.score(request(job), options)
            except Exception as e:  # one bad question must not stop the run; it is asked again next run
                logger.warning("%s (%s): %s: %s", job.question.question_id, job.modality, type(e).__name__, e)
                on_result(job, CallResult(None, error=f"{type(e).__name__}: {e}", latency_s=time.perf_counter() - start))
                continue
            rng = random.Random(f"{self.seed}|{job.question.question_id}|{job.modality}")
            index = choose(scores, temperature=self.temperature, normalize=self.normalize, rng=rng)
            on_result(job, CallResult(
                options[index], scores={"logprobs": scores.logprobs, "n_tokens": scores.n_tokens},
                latency_s=time.perf_counter() - start,
            ))


class ChatChooser:
    """A chat backend (an OpenAI-compatible server) constrained to the options by ``style``."""

    kind = "chat"

    def __init__(self, backend: Any, *, temperature: float, seed: int, style: str, max_tokens: int):
        self.backend = backend
        self.params = {"temperature": temperature, "seed": seed, "max_tokens": max_tokens}
        self.style = style

    def settings(self) -> dict[str, Any]:
        return {"kind": self.kind, **self.params, "choice": self.style}

    def run(self, jobs: Iterable[Job], request: Callable[[Job], ChatRequest], on_result: Callable[[Job, CallResult], None]) -> None:
        def constrained(job: Job) -> ChatRequest:
            params = {**self.params, **choice_params(job.question.options, self.style)}
            return ChatRequest(request(job).messages, params)

        def record(job: Job, result: ChatResult) -> None:
            on_result(job, CallResult(
                match_option(result.text, job.question.options), raw=result.text,
                structured=getattr(result, "structured", None), error=result.error, latency_s=result.latency_s,
            ))

        chat_jobs(self.backend, jobs, constrained, record)


def make_chooser(backend: Any, *, temperature: float, seed: int, style: str, normalize: str, max_tokens: int) -> ScoredChooser | ChatChooser:
    """A backend that scores options (local transformers models) is scored; everything else is asked through chat."""
    if getattr(backend, "scores_options", False):
        return ScoredChooser(backend, temperature=temperature, seed=seed, normalize=normalize)
    return ChatChooser(backend, temperature=temperature, seed=seed, style=style, max_tokens=max_tokens)


def fingerprint(identity: dict[str, Any], chooser: ScoredChooser | ChatChooser) -> str:
    """What makes a model's answers what they are: the model and how options are chosen."""
    payload = {"model": identity, "choosing": chooser.settings()}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:12]


# -- the run -------------------------------------------------------------------------------------


def load_pairs(manifest: Path | None, out: Path, need_images: bool, limit: int | None) -> list[Pair]:
    """The manifest's pairs (the embedded probe set by default, rendered into ``out/probeset``
    when images are needed), the first ``limit`` of them."""
    if manifest is not None:
        pairs = read_manifest(manifest)
    else:
        pairs = embedded_pairs()
        if limit is not None:
            pairs = pairs[:limit]
        if need_images:
            pairs = read_manifest(materialize_probeset(out / PROBESET_DIR, pairs))
    pairs = pairs[:limit] if limit is not None else pairs
    if need_images:
        missing = [p.pair_id for p in pairs if p.image is None]
        if missing:
            raise ValueError(f"the image modality needs an image for every pair; {len(missing)} have none "
                             f"(e.g. {missing[0]}); use --modalities text")
    return pairs


@lru_cache(maxsize=8)
def _image_part(path: Path) -> dict[str, Any]:
    data = path.read_bytes()
    return image_part(data, mimetypes.guess_type(path.name)[0] or "image/png")


def _request(job: Job) -> ChatRequest:
    image = _image_part(job.question.pair.image) if job.modality == "image" else None
    return ChatRequest(messages(job.question, job.modality, image))


def ask(store: AuditStore, chooser: ScoredChooser | ChatChooser, questions: list[Question], modalities: list[str],
        fp: str, model_name: str, *, progress: bool = True, desc: str = "audit") -> dict[str, int]:
    """Ask every (question, modality) the store lacks for ``fp``; store each result as it comes.
    Returns this run's counts (``asked``, ``answered``, ``unmatched``, ``failed``)."""
    version = prompt_version()
    counts = {"asked": 0, "answered": 0, "unmatched": 0, "failed": 0}

    def record(job: Job, result: CallResult) -> None:
        store.record(job.question.question_id, job.modality, fp, version, model_name, result)
        counts["asked"] += 1
        counts["failed" if result.failed else "answered" if result.answer is not None else "unmatched"] += 1

    # Pair by pair, so a pair's image is encoded once for all its questions.
    ask_missing(
        (Job(q, m) for q in questions for m in modalities), done=store.answered(fp, version),
        key=lambda job: (job.question.question_id, job.modality),
        ask=lambda pending, on_result: chooser.run(pending, _request, on_result), record=record,
        desc=desc, unit="question", progress=progress,
    )
    return counts


def response_rows(store: AuditStore, questions: list[Question], modalities: list[str], fp: str, model_name: str,
                  root: Path | None = None) -> Iterator[dict[str, Any]]:
    """The responses table (``docs/audit.md``): one row per answered (question, modality)."""
    import math

    results = store.results(fp, prompt_version())
    for q in questions:
        for m in modalities:
            r = results.get((q.question_id, m))
            if r is None or (r["answer"] is None and r["raw"] is None and r["scores"] is None):
                continue
            probabilities = None
            if r["scores"] is not None:
                lps = r["scores"]["logprobs"]
                top = max(lps)
                weights = [math.exp(lp - top) for lp in lps]
                probabilities = [round(w / sum(weights), 6) for w in weights]
            image = None
            if m == "image" and q.pair.image is not None:
                image = str(q.pair.image.relative_to(root)) if root and q.pair.image.is_relative_to(root) else str(q.pair.image)
            yield {
                "question_id": q.question_id, "pair_id": q.pair.pair_id, "model": model_name, "modality": m,
                "paradigm": q.paradigm, "dimension": q.pair.dimension, "setting": q.pair.setting,
                "question_type": q.question_type, "question": q.question, "options": list(q.options),
                "answer": r["answer"],
                "position": q.options.index(r["answer"]) if r["answer"] in q.options else None,
                "identity_1": q.pair.left.identity, "identity_2": q.pair.right.identity,
                "activity_1": q.pair.left.activity, "activity_2": q.pair.right.activity,
                "context": q.context, "valence": q.valence, "trait": q.trait, "trait_dimension": q.trait_dimension,
                "role": q.role, "correct": q.correct, "subject": q.subject, "trait_pair": q.trait_pair,
                "raw": r["raw"], "probabilities": probabilities, "structured": r["structured"], "image": image,
                "latency_s": r["latency_s"],
            }


def write_responses(rows: Iterable[dict[str, Any]], path: Path) -> int:
    tmp = path.with_suffix(".tmp")
    n = 0
    with tmp.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    tmp.replace(path)
    return n


def load_audit_model(config: AuditConfig) -> tuple[Any, str, bool, dict[str, Any]]:
    """``(backend, name, vision, identity)`` of ``config.model`` through the evaluate stage's loader."""
    if config.backend is not None:
        name = config.model_name or config.model or type(config.backend).__name__
        vision = config.vision if config.vision is not None else bool(getattr(config.backend, "vision", True))
        return config.backend, name, vision, config.model_identity or {"model": name}

    model = load_model(config.model, revision=config.model_revision, load_in_4bit=config.load_in_4bit,
                       concurrency=config.concurrency, generative_only=True)
    if not isinstance(model, GenerativeModel):
        raise ValueError(f"{config.model} is a classifier; the audit asks a generative model")
    identity = config.model_identity or {"spec": config.model, "revision": config.model_revision, "load_in_4bit": config.load_in_4bit}
    return model.backend, config.model_name or model.name, model.vision, identity


@follows_progress_flag
def run_audit(config: AuditConfig) -> dict[str, Any]:
    """Run the audit and return its summary (also written to ``<output>/summary.json``)."""
    config.validate()
    claim_output(config.output, "vilbias audit run", signs=(AUDIT_DB, RESPONSES, "audit_run_config.yaml"))
    out = Path(config.output)
    out.mkdir(parents=True, exist_ok=True)
    space = load_space(config.space)
    backend, name, vision, identity = load_audit_model(config)
    modalities = [MODALITY_WORDS[m] for m in config.modalities] if config.modalities else (["image", "text"] if vision else ["text"])
    if "image" in modalities and not vision:
        raise ValueError(f"{name} is text-only: use --modalities text")
    pairs = load_pairs(config.manifest, out, "image" in modalities, config.limit)
    questions = all_questions(pairs, space, config.paradigms)
    if not questions:
        raise ValueError("no question applies to these pairs and paradigms (see the settings table in docs/audit.md)")
    chooser = make_chooser(backend, temperature=config.temperature, seed=config.seed, style=config.choice,
                           normalize=config.normalize, max_tokens=config.max_new_tokens)
    fp = fingerprint(identity, chooser)
    logger.info("%s: %d pairs, %d questions x %s", name, len(pairs), len(questions), "+".join(modalities))
    start = time.perf_counter()
    with AuditStore(out / AUDIT_DB) as store:
        store.register(fp, name, {"model": identity, "choosing": chooser.settings()})
        counts = ask(store, chooser, questions, modalities, fp, name, progress=config.progress, desc=f"audit {name}")
        write_responses(response_rows(store, questions, modalities, fp, name, out), out / RESPONSES)
    wall = time.perf_counter() - start
    summary = finish(out, name, fp, space, questions, modalities, counts, wall, write_metrics=config.metrics,
                     alpha=config.alpha)
    return summary


def finish(out: Path, name: str, fp: str, space: QuestionSpace, questions: list[Question], modalities: list[str],
           counts: dict[str, int], wall_s: float, *, write_metrics: bool = True, alpha: float = 0.05) -> dict[str, Any]:
    """Summarise a finished run from its responses file (and write the metrics when asked)."""
    rows = read_responses(out / RESPONSES)
    tables = compute_metrics(rows, MetricOptions(alpha=alpha))
    latencies = [r["latency_s"] for r in rows if isinstance(r.get("latency_s"), (int, float))]
    summary = {
        "model": name, "fingerprint": fp, "prompt_version": prompt_version(),
        "questions": len(questions) * len(modalities), "modalities": modalities,
        "run": {**counts, "wall_s": round(wall_s, 3),
                "seconds_per_question": round(wall_s / counts["asked"], 4) if counts.get("asked") else None},
        **summarize(tables, rows),
        # From the stored calls, so a resumed run reports the same figure as an uninterrupted one.
        "mean_latency_s": round(sum(latencies) / len(latencies), 4) if latencies else None,
        "space": {"identities": len(space.identities), "activities": len(space.activities), "traits": len(space.traits)},
    }
    if write_metrics:
        write_all_metrics(tables, out / "metrics", plots=True)
        summary["metrics_dir"] = str(out / "metrics")
    (out / SUMMARY).write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return summary
