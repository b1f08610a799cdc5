"""Catalogue models that label without chatting, as annotators: their output becomes an answer.

An annotators-file entry of kind ``checkpoint`` names any checkpoint the catalogue loads
(:mod:`vilbias.models.catalogue`). A generative one (a VLM, an adapter, a causal LM) is asked
like any chat model. The others — the sentence-level bias model (the offline default,
``training/default_model``), a fusion classifier, a ``*ForSequenceClassification`` text
classifier — are :class:`PredictorAnnotator`\\ s: the predictor labels the item, and its answer is
written in the prompt's JSON schema (:func:`answer_from_output`), so it is stored, checked, voted
and reviewed exactly as an LLM's answer is.

The rationale is built from the model's evidence, never invented: for the sentence model, the
sentences it flagged, quoted exactly from the article with their probabilities and the words it
marks (:func:`vilbias.models.evidence.explain_output`, the wording the Space shows), and the
techniques those sentences show; for a model without evidence, its label and probability and the
plain statement that it names no passage. A deterministic model gives one sample per item and
prompt, not K identical ones (the store records one sample for it; the vote counts it once)::

    annotators:
      - name: babe-sentence-model
        backend: checkpoint
        model: path/to/training/default_model   # or a Hub id
        params: {max_sentences: 120}             # sentence model: sentences read per article
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

from vilbias.annotate import prompts as prompting
from vilbias.annotate.specs import AnnotatorSpec
from vilbias.models.catalogue import (
    ResolvedModel,
    load_chat_backend,
    load_model,
    load_predictor,
    resolve_model,
)
from vilbias.models.chat import ChatBackend, ChatResult
from vilbias.models.evidence import explain_output
from vilbias.models.predictors import ModelOutput, Predictor, predict_batch
from vilbias.task import ALL_NAMES, ANSWER_LABELS, BIASED_NAME, LABEL_NAMES, TONES, Item

logger = logging.getLogger(__name__)

PREDICTOR_KINDS = ("sentence", "fusion", "text_classifier")
"""Checkpoint kinds (:func:`vilbias.models.catalogue.checkpoint_kind`) that label without writing text."""
PREDICTOR_OPTIONS = {"sentence": ("max_sentences",), "fusion": ("temperature", "calibration"), "text_classifier": ()}
"""The ``params`` each predictor kind takes (options of :func:`vilbias.models.catalogue.load_predictor`)."""
BATCH_ITEMS = 32
"""Items a predictor labels in one batched pass: the sentences of 32 articles fill its length-sorted
batches, and the progress bar moves every few seconds."""


@dataclass
class _Read:
    """What a predictor reads of an article."""

    headline: str
    article_text: str
    image: bytes | None = None


def answer_from_output(out: ModelOutput, article: Any, prompt: str, name: str) -> str:
    """``out`` as an answer to ``prompt`` in its JSON schema: the label, the tone it implies, the
    techniques the evidence shows (Present) and the others (Absent), and the rationale built from
    the evidence (see the module docstring)."""
    if out.sentences and out.rule is not None:
        _, explanation = explain_output(f"{article.headline}\n\n{article.article_text}", out, markdown=False)
        rationale, shown = explanation.text, set(explanation.techniques)
    else:
        verdict = ANSWER_LABELS[LABEL_NAMES.index(out.label)]
        reads = "the text and the image" if out.reads_image else "the text"
        rationale = (f"{name} labels this item {verdict} ({out.confidence:.0%}: {out.confidence_kind}). It scores {reads} as a "
                     "whole and gives no evidence, so no passage or technique is named.")
        shown = set()
    criteria = prompting.CRITERIA[prompt]
    answer = {
        "techniques": {ALL_NAMES[t]: "Present" if t in shown else "Absent" for t in criteria},
        "tone": TONES[1] if out.label == BIASED_NAME else TONES[0],
        "label": ANSWER_LABELS[LABEL_NAMES.index(out.label)],
        "rationale": rationale,
    }
    return json.dumps(answer, ensure_ascii=False)


class _ClassifierPredictor:
    """A catalogue text classifier (:class:`vilbias.models.catalogue.ClassifierModel`: class ids
    only) behind the predictor protocol: its label, with no probability and no evidence."""

    kind = "text_classifier"
    deterministic = True

    def __init__(self, model: Any):
        self.model = model
        self.reads_text, self.reads_image = model.uses_text, model.uses_image

    def predict_batch(self, items: list[Any]) -> list[ModelOutput]:
        ids = self.model.predict([Item("", i.headline, i.article_text, -1, i.image) for i in items])
        return [ModelOutput(LABEL_NAMES[i], {n: float(n == LABEL_NAMES[i]) for n in LABEL_NAMES}, 1.0,
                            "a label without a probability (the classifier's argmax)", reads_image=self.reads_image) for i in ids]

    def predict(self, item: Any) -> ModelOutput:
        return self.predict_batch([item])[0]


class PredictorAnnotator:
    """A predictor (:class:`vilbias.models.predictors.Predictor`) answering the annotate stage's
    jobs: each job is ``(keys, request, article)``; its answer is :func:`answer_from_output`,
    handed on as a :class:`~vilbias.models.chat.ChatResult` so the stage stores it as any answer.

    Args:
        predictor: The loaded predictor.
        name: The annotator's name (said in a rationale without evidence).
        workdir: Where the articles' images are (read only when the predictor reads images).
    """

    def __init__(self, predictor: Predictor, name: str, workdir: str | Path):
        self.predictor, self.name, self.workdir = predictor, name, Path(workdir)

    @property
    def reads_image(self) -> bool:
        return bool(self.predictor.reads_image)

    def ask(self, jobs: Iterator[tuple[Any, Any, Any]], on_result: Callable[[Any, ChatResult], Any]) -> None:
        """Label the jobs' articles in batches of :data:`BATCH_ITEMS` and hand each job its answer."""
        jobs = iter(jobs)
        while batch := list(islice(jobs, BATCH_ITEMS)):
            start = time.perf_counter()
            read = [_Read(a.headline, a.article_text, (self.workdir / a.image_path).read_bytes() if self.reads_image else None)
                    for _, _, a in batch]
            outs = predict_batch(self.predictor, read)
            latency = (time.perf_counter() - start) / len(batch)
            for (keys, _, article), out in zip(batch, outs, strict=True):
                prompt = keys[0].prompt
                answer = answer_from_output(out, article, prompt, self.name)
                on_result((keys, None, article), ChatResult(answer, latency_s=latency, finish_reason="stop"))


@dataclass(frozen=True)
class ResolvedAnnotator:
    """An annotator resolved once, before any call: its model resolved by the catalogue
    (:class:`~vilbias.models.catalogue.ResolvedModel`: its kind's capabilities, and for a
    checkpoint what its files say, read once) and what the stage asks of it again and again. The
    stage hands this object down; nothing below it parses the spec or reads its files again."""

    spec: AnnotatorSpec
    model: ResolvedModel
    fingerprint: str

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def languages(self) -> tuple[str, ...]:
        """What it reads (:func:`vilbias.models.catalogue.declared_languages`); ``("any",)`` for all."""
        return self.model.languages

    @property
    def local(self) -> bool:
        """Generates in this process (a local grammar, ``num_return_sequences``)."""
        return self.model.kind.local

    @property
    def deterministic(self) -> bool:
        """A predictor checkpoint: its answer never changes, so it is asked one sample."""
        return self.model.checkpoint_kind in PREDICTOR_KINDS


def resolve_annotator(spec: AnnotatorSpec | ResolvedAnnotator) -> ResolvedAnnotator:
    """``spec`` resolved once (see :class:`ResolvedAnnotator`); a model that is not there is one line."""
    if isinstance(spec, ResolvedAnnotator):
        return spec
    try:
        model = resolve_model(spec.model_spec())
    except (FileNotFoundError, ValueError, PermissionError) as e:
        raise ValueError(f"annotator {spec.name!r}: {e}") from None
    return ResolvedAnnotator(spec, model, spec.fingerprint())


def load_annotator(annotator: AnnotatorSpec | ResolvedAnnotator, workdir: str | Path) -> ChatBackend | PredictorAnnotator:
    """What the annotator names, ready to answer: a chat backend (servers, local LMs/VLMs,
    generative checkpoints) or a :class:`PredictorAnnotator`. A failure is one line naming the
    entry. Give it the :class:`ResolvedAnnotator` the stage resolved (a spec is resolved here)."""
    resolved = resolve_annotator(annotator)
    spec, model = resolved.spec, resolved.model
    where = f"annotator {spec.name!r}"
    if not model.kind.checkpoint:
        return load_chat_backend(model.spec)
    kind = model.checkpoint_kind
    if kind in PREDICTOR_KINDS:
        options = {k: v for k, v in spec.params.items() if k in PREDICTOR_OPTIONS[kind]}
        if unknown := sorted(set(spec.params) - set(options)):
            raise ValueError(f"{where}: a {kind} checkpoint takes no params {unknown} (it takes {list(PREDICTOR_OPTIONS[kind]) or 'none'})")
        if kind == "text_classifier":
            predictor: Predictor = _ClassifierPredictor(load_model(model.spec, batch_size=spec.batch_size))
        else:
            predictor = load_predictor(model, kind, **options)
        if spec.vision and not predictor.reads_image:
            raise ValueError(f"{where}: {spec.model} reads the text only; set vision: false")
        return PredictorAnnotator(predictor, spec.name, workdir)
    if spec.structured_output == "json_schema":
        import importlib.util

        if importlib.util.find_spec("llguidance") is None:
            raise ValueError(f"{where}: constrained decoding needs llguidance: pip install llguidance (or set structured_output: none)")
    max_tokens = int(spec.params.get("max_tokens", 512))
    generative = load_model(model.spec, batch_size=spec.batch_size, max_new_tokens=max_tokens)
    if spec.vision and not generative.vision:
        raise ValueError(f"{where}: {spec.model} is a text model; set vision: false")
    return generative.backend


__all__ = ["PREDICTOR_KINDS", "PredictorAnnotator", "ResolvedAnnotator", "answer_from_output", "load_annotator",
           "resolve_annotator"]
