"""Audit before annotating: the text variant of the probe set on each configured annotator.

    vilbias audit annotators --workdir work --annotators annotators.yaml
    vilbias audit annotators --workdir work                  # the default annotator (SmolLM2-135M)

The LLM annotators (and judges) that label a corpus about bias have stereotypes of their own.
This step asks each annotator of an annotators file (the same file ``vilbias annotate`` reads,
``docs/annotate.md``) the embedded probe set's questions with the identities described in words
(the ``text`` modality; vision annotators may also get the images, ``--modalities text+image text``),
with the annotator's own sampling temperature and seed. Each annotator's calls, responses,
metrics and plots go to ``<workdir>/audit/<annotator>/``; its summary is written into the
workdir's ``annotations.sqlite`` (table ``annotator_audits``), where the dataset card's
annotation section reads it. A re-run asks only what is missing.

From Python: ``audit_annotators("annotators.yaml", "work")`` returns the summaries.
"""

from __future__ import annotations

import hashlib
import logging
import re
from pathlib import Path
from typing import Any

from vilbias.annotate.specs import AnnotatorSpec, load_annotators, smollm2_annotator
from vilbias.annotate.store import AnnotationStore
from vilbias.audit.config import AnnotatorAuditConfig
from vilbias.audit.questions import PARADIGMS, all_questions, prompt_version
from vilbias.audit.runner import (
    MODALITY_WORDS,
    AuditConfig,
    load_pairs,
    run_audit,
)
from vilbias.audit.space import embedded_space
from vilbias.models.catalogue import load_chat_backend
from vilbias.progress_flag import follows_progress_flag
from vilbias.workdir import claim_workdir

logger = logging.getLogger(__name__)

AUDIT_DIR = "audit"


def probe_version(paradigms: list[str] | tuple[str, ...] = PARADIGMS, limit: int | None = None) -> str:
    """12 hex digits naming what the annotator audit asks: the embedded questions (ids, in
    order) under the current prompt version. A changed probe set or prompt is a new version."""
    questions = all_questions(load_pairs(None, Path("."), False, limit), embedded_space(), list(paradigms))
    payload = prompt_version() + "\n" + "\n".join(q.question_id + "|" + "|".join(q.options) for q in questions)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:12]


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "annotator"


def headline(summary: dict[str, Any], modality: str = "text") -> str:
    """One line per audit for the dataset card: the largest disparity of each paradigm."""
    parts = []
    for paradigm, slot in summary.get("paradigms", {}).get(modality, {}).items():
        worst = slot["max_disparity"]
        parts.append(f"{paradigm}: {worst['dimension']} {worst['disparity']:.1f} points "
                     f"({worst['most_favoured']} over {worst['least_favoured']})")
    return "; ".join(parts)


def card_summary(summary: dict[str, Any], modality: str = "text") -> dict[str, Any]:
    """The part of a run summary the dataset card shows for one annotator."""
    bias = summary.get("position_bias", {})
    position = next((v for k, v in bias.items() if k.split("|")[-1] == modality), None)
    return {
        "questions": summary["questions"],
        "answered": summary["answered"],
        "unmatched": summary["unmatched"],
        "factuality_accuracy": summary.get("factuality_accuracy", {}).get(modality),
        "first_option_rate": position["first_option_rate"] if position else None,
        "paradigms": {p: {"max_disparity": s["max_disparity"], "significant": s["significant"], "measure": s["measure"]}
                      for p, s in summary.get("paradigms", {}).get(modality, {}).items()},
        "significant_q05": summary.get("significant_q05", {}),
        "headline": headline(summary, modality),
        "seconds_per_question": summary.get("mean_latency_s"),
    }


def _specs(annotators_spec: Any) -> list[Any]:

    if annotators_spec is None:
        return [smollm2_annotator()]  # the audit asks chat models: the embedded SmolLM2
    if isinstance(annotators_spec, (str, Path)):
        return load_annotators(annotators_spec)
    specs = [a if isinstance(a, AnnotatorSpec) else AnnotatorSpec.from_dict(a) for a in annotators_spec]
    for s in specs:
        s.validate()
    return specs


def audit_annotators(annotators_spec: Any, workdir: str | Path, **options: Any) -> dict[str, Any]:
    """Audit each annotator on the probe set's text variant and store the summaries.

    Args:
        annotators_spec: An annotators YAML path, a list of ``AnnotatorSpec`` (or dicts), or None
            for the default annotator.
        workdir: The annotation workdir (created if missing).
        **options: :class:`AnnotatorAuditConfig` fields (``limit``, ``paradigms``, ``modalities``,
            ``choice``, ``metrics``, ``progress``, ``backends``).

    Returns:
        ``{"workdir", "probe_version", "annotators": {name: {"fingerprint", "dir", "modalities":
        {modality: card summary}}}}``.
    """
    config = AnnotatorAuditConfig(workdir=Path(workdir), **options)
    if isinstance(annotators_spec, (str, Path)):
        config.annotators = Path(annotators_spec)
    elif annotators_spec is not None:
        config.annotator_specs = list(annotators_spec)
    return run_annotator_audit(config)


@follows_progress_flag
def run_annotator_audit(config: AnnotatorAuditConfig) -> dict[str, Any]:

    specs = _specs(config.annotator_specs if config.annotator_specs is not None else config.annotators)
    claim_workdir(config.workdir, "vilbias audit annotators")
    workdir = Path(config.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    version = probe_version(config.paradigms, config.limit)
    out: dict[str, Any] = {"workdir": str(workdir), "probe_version": version, "annotators": {}}
    for spec in specs:
        modalities = [m for m in config.modalities if m == "text" or spec.vision]
        if not modalities:
            logger.warning("%s: nothing to ask (text+image only, and it is text-only)", spec.name)
            continue
        injected = (config.backends or {}).get(spec.name)
        backend = injected if injected is not None else load_chat_backend(spec.model_spec())
        target = workdir / AUDIT_DIR / _slug(spec.name)
        summary = run_audit(AuditConfig(
            output=target, backend=backend, model_name=spec.name, vision=spec.vision,
            model_identity={"annotator": spec.name, "annotator_fingerprint": spec.fingerprint()},
            paradigms=list(config.paradigms), modalities=modalities, limit=config.limit,
            temperature=float(spec.params.get("temperature", 0.7) or 0.0), seed=int(spec.params.get("seed", 0)),
            choice=config.choice, metrics=config.metrics, progress=config.progress,
        ))
        entry = {"fingerprint": spec.fingerprint(), "dir": str(target), "modalities": {}}
        with AnnotationStore.for_workdir(workdir) as store:
            for modality in (MODALITY_WORDS[m] for m in modalities):  # as the summary and the card name them
                compact = card_summary(summary, modality)
                store.put_annotator_audit(spec.name, spec.fingerprint(), version, modality,
                                          {**compact, "audit_fingerprint": summary["fingerprint"]})
                entry["modalities"][modality] = compact
        out["annotators"][spec.name] = entry
        del backend  # a local model is freed before the next one loads
    return out


def format_annotator_audit(result: dict[str, Any]) -> str:
    lines = [f"probe version {result['probe_version']}; audits in {Path(result['workdir']) / AUDIT_DIR}"]
    for name, entry in result["annotators"].items():
        for modality, s in entry["modalities"].items():
            acc, first = s["factuality_accuracy"], s["first_option_rate"]
            acc_text = "-" if acc is None else f"{acc:.1%}"
            first_text = "-" if first is None else f"{first:.1%}"
            lines.append(f"{name} ({modality}): {s['answered']}/{s['questions']} answered, "
                         f"factuality accuracy {acc_text}, first-option rate {first_text}")
            if s["headline"]:
                lines.append(f"  largest disparities: {s['headline']}")
    return "\n".join(lines)
