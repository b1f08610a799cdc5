"""What the Space does, without the UI: read the model list, check the input, fetch an article,
label it and gather the evidence.

    from vilbias.spaces.predictors import Predictors, load_model_specs
    from vilbias.spaces.inputs import Limits, item_from_upload
    specs = load_model_specs()                                  # spaces/models.yaml
    predictors = Predictors(specs)
    item = item_from_upload(None, "Headline", "Article text ...", Limits(), need_image=False)
    prediction = predictors.get(specs[0].name).predict(item)
    prediction.label, prediction.confidence, prediction.reasoning, prediction.sentences

Every check on user input, and every failure the user can act on (a URL that cannot be fetched, a
model that cannot be loaded or is still loading), raises :class:`InputError` with a sentence meant
for the user; the app shows it as it is and logs the cause with its traceback.

torch and transformers (with the ``vilbias.models`` modules and the training package that
bring them) are imported inside the functions that use them, so importing this module stays light.
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import json
import logging
import os
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from vilbias.spaces.explain import (
    Evidence,
    Explanation,
    evidence_rationale,
    parse_techniques_and_evidence,
)
from vilbias.spaces.inputs import InputError, Item

from vilbias.ingest.text import split_sentences
from vilbias.metrics.calibration import scale_probabilities
from vilbias.models.catalogue import (
    load_fusion,
    load_sentence_model,
    load_vlm_model,
)
from vilbias.task import BIASED_NAME, LABEL_NAMES, NOT_BIASED_NAME, classifier_text

logger = logging.getLogger(__name__)

MODELS_YAML = Path(__file__).with_name("models.yaml")
OFFLINE_DEFAULT = "offline-default"
"""The ``path`` that names the sentence-level model shipped in the package (``training/default_model``)."""
KINDS = ("sentence", "fusion", "vlm")
MAX_SENTENCES = 120
"""Sentences a sentence model reads per article (a 30,000-character article has ~250; the
first 120 keep the label within a second on 2 CPU cores)."""

try:  # ZeroGPU: `spaces.GPU` attaches a GPU for the duration of a call; a no-op elsewhere.
    import spaces as _hf_spaces

    _gpu = _hf_spaces.GPU
except (ImportError, AttributeError):
    # Not installed, or the repo's own `spaces/` folder shadows it when run from the checkout.
    def _gpu(fn=None, **_kwargs):
        return fn if fn is not None else (lambda f: f)


# -- the model list ---------------------------------------------------------------------------


@dataclass
class PickerModel:
    """One entry of ``models.yaml``: a model of the catalogue (``path`` and ``revision`` name it
    as :mod:`vilbias.models.catalogue` does, and it loads through the catalogue) with what the
    picker shows and how the Space reads its output (``kind``)."""

    name: str
    """Short key, also what the API's ``model`` argument takes."""
    title: str
    """What the picker shows."""
    kind: str
    """``sentence`` (scores sentences; the evidence explains the label), ``fusion`` (a
    calibrated text+image classifier) or ``vlm`` (a generative model that writes its own rationale)."""
    path: str
    """Hub repo id, local folder, or ``offline-default`` for the packaged sentence model."""
    revision: str | None = None
    temperature: float = 1.0
    """Fusion classifiers: softmax temperature fitted on a validation split (1.0 = uncalibrated).
    Sentence models carry their own, fitted at training time."""
    calibration: str = ""
    """Fusion classifiers: where the temperature came from, shown in the UI."""
    rationale: str | None = None
    """Sentence models: ``smollm2`` to have the embedded SmolLM2 word the evidence-built
    explanation (shown only when it agrees with the label and quotes only the article), or
    None for the evidence-built explanation alone."""
    samples: int = 5
    """VLMs: answers sampled per item; the confidence is the majority label's vote share."""
    max_new_tokens: int = 160
    load_in_4bit: bool = False
    note: str = ""
    """Plain-words caveat shown under the picker."""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"models.yaml: model {self.name!r} has kind {self.kind!r}; use one of {KINDS}")
        if self.temperature <= 0:
            raise ValueError(f"models.yaml: model {self.name!r} needs a positive temperature")
        if self.samples < 1:
            raise ValueError(f"models.yaml: model {self.name!r} needs samples >= 1")
        if self.rationale not in (None, "smollm2"):
            raise ValueError(f"models.yaml: model {self.name!r} has rationale {self.rationale!r}; use smollm2 or leave it out")

    @property
    def source(self) -> str:
        if self.path == OFFLINE_DEFAULT:
            # training/default_model, package data of vilbias.training (not imported: it brings torch).
            return str(importlib.resources.files("vilbias.training") / "default_model")
        return self.path

    @property
    def reads_image(self) -> bool:
        """Sentence models read the text only; the others read the image with it."""
        return self.kind != "sentence"

    @property
    def on_hub(self) -> bool:
        return self.path != OFFLINE_DEFAULT and not Path(self.path).exists()

    @property
    def image_note(self) -> str:
        """What the UI says next to the image."""
        if self.reads_image:
            return f"**{self.title}** reads the image together with the text."
        return (f"**{self.title}** reads the text only: it does not look at the image, which is optional "
                "for it and shown for reference.")


def load_model_specs(path: str | Path = MODELS_YAML) -> list[PickerModel]:
    """Read the picker's models (the first is the default)."""
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    entries = data.get("models") or []
    if not entries:
        raise ValueError(f"{path} lists no models")
    specs = [PickerModel(**entry) for entry in entries]
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise ValueError(f"{path}: model names must be unique, got {names}")
    return specs


# -- input ------------------------------------------------------------------------------------


# -- predictions ------------------------------------------------------------------------------


@dataclass
class Prediction:
    label: str
    """One of ``vilbias.LABEL_NAMES``."""
    probabilities: dict[str, float]
    confidence: float
    confidence_kind: str
    """What ``confidence`` means, in words for the UI."""
    model_title: str
    reads_image: bool = True
    reasoning: str | None = None
    """The rationale shown (Markdown)."""
    rationale_by: str | None = None
    """Who or what wrote ``reasoning``."""
    techniques: list[str] = field(default_factory=list)
    """Technique identifiers (``vilbias.task``)."""
    evidence: list[str] = field(default_factory=list)
    """VLMs: words or phrases quoted in the answer that occur in the item's text."""
    sentences: list[Evidence] = field(default_factory=list)
    """Sentence models: every sentence read, with its probability and marked words."""
    explanation: Explanation | None = None
    """Sentence models: the evidence-built explanation (kept when a generated wording is refused)."""
    rationale_note: str | None = None
    """Why a generated wording is not shown, or that none could be written."""


def item_sentences(item: Item) -> list[tuple[str, int, int]]:
    """``(sentence, start, end)`` of the headline and the article's sentences, as offsets into
    :attr:`Item.display_text` (what the UI highlights)."""
    text = item.display_text
    pieces = ([item.headline] if item.headline else []) + (split_sentences(item.article_text) if item.article_text else [])
    out, cursor = [], 0
    for piece in pieces:
        start = text.find(piece, cursor)
        if start < 0:  # the splitter normalised something: fall back to the piece's first words
            start = max(text.find(piece[:20], cursor), cursor)
        out.append((piece, start, start + len(piece)))
        cursor = start + len(piece)
    return out


class SentencePredictor:
    """A sentence-level bias model (:mod:`vilbias.models.sentence_bias`): one pass over the
    article's sentences gives the label, its confidence and the evidence."""

    def __init__(self, spec: PickerModel):
        self.spec = spec
        self.model, source = load_sentence_model(spec.source, revision=spec.revision)
        metrics = source / "metrics.json"
        self.metrics = json.loads(metrics.read_text(encoding="utf-8")) if metrics.is_file() else {}

    @property
    def calibration(self) -> str:
        t = self.model.config.temperature
        m = self.metrics
        if "validation" in m and "test" in m:
            return (f"temperature {t:.3g} fitted on {m['validation']['rows']} held-out BABE sentences; expected calibration "
                    f"error on {m['test']['n']} unseen ones {m['test']['ece_before']:.3f} → {m['test']['ece']:.3f}")
        return f"temperature {t:.3g}" if t != 1.0 else "not calibrated"

    def predict(self, item: Item) -> Prediction:
        sentences = item_sentences(item)
        kept = sentences[:MAX_SENTENCES]
        article = self.model.score_article([text for text, _, _ in kept])
        evidence = [Evidence(text, start, end, s.probability, [(w.text, start + w.start, start + w.end, w.probability) for w in s.words], s.flagged)
                    for (text, start, end), s in zip(kept, article.sentences, strict=True)]
        rule = article.rule
        explanation = evidence_rationale(article.label, article.probability, evidence, rule.statistic, article.statistic,
                                         rule.threshold, truncated=len(sentences) - len(kept))
        kind = f"the model's calibrated probability for the article ({self.calibration}; an article is {rule.describe()})"
        return Prediction(article.label, {NOT_BIASED_NAME: 1 - article.probability, BIASED_NAME: article.probability}, article.confidence,
                          kind, self.spec.title, reads_image=False, reasoning=explanation.text,
                          rationale_by="built from the model's evidence (no generative model)",
                          techniques=list(explanation.techniques), sentences=evidence, explanation=explanation)


class FusionPredictor:
    """A fusion classifier (``vilbias.models.fusion``) with temperature-scaled probabilities. It
    scores the item as a whole and gives no evidence, so no rationale is written for it."""

    def __init__(self, spec: PickerModel):
        self.spec = spec
        self.model = load_fusion(spec.source, revision=spec.revision)

    def predict(self, item: Item) -> Prediction:

        raw = self.model.predict(item.image, classifier_text(item.headline, item.article_text))
        names = list(raw["probabilities"])
        scaled = scale_probabilities([raw["probabilities"][n] for n in names], self.spec.temperature)
        probabilities = dict(zip(names, scaled, strict=True))
        label = max(probabilities, key=probabilities.get)
        if self.spec.temperature != 1.0:
            kind = "the classifier's calibrated probability" + (f" ({self.spec.calibration})" if self.spec.calibration else "")
        else:
            kind = "the classifier's softmax probability (not calibrated)"
        return Prediction(label, probabilities, probabilities[label], kind, self.spec.title, reads_image=self.model.config.uses_image,
                          rationale_note="This classifier scores the item as a whole and gives no evidence, so no rationale is written for it.")


def _generate_vlm(model, processor, items, samples: int, max_new_tokens: int):
    from vilbias.models.vlm import generate_answers

    # Each item repeated `samples` times in one batch: one generate() call, sampled answers.
    return generate_answers(model, processor, [it for it in items for _ in range(samples)],
                            batch_size=samples * len(items), max_new_tokens=max_new_tokens, do_sample=samples > 1)


# Defined at import so ZeroGPU can register it; on CPU or outside a Space it runs as is.
_generate_vlm_gpu = _gpu(_generate_vlm, duration=120)


class VLMPredictor:
    """A fine-tuned VLM (base + adapter, or full) answering ``Label: … / Reasoning: …``; its
    answer and reasoning are shown as they are.

    The confidence is the vote share of the majority label over ``spec.samples`` sampled
    answers (unparseable answers count as votes for neither label).
    """

    def __init__(self, spec: PickerModel):
        import torch

        self.spec = spec
        cuda = torch.cuda.is_available()
        if spec.load_in_4bit and not cuda:
            raise InputError(f"{spec.title} is a 4-bit model and needs a GPU, which this server does not have. "
                             "Pick the offline default, or run the Space on GPU hardware.")
        self.model, self.processor = load_vlm_model(spec.source, revision=spec.revision, load_in_4bit=spec.load_in_4bit,
                                                    device_map="auto" if cuda else None)

    def predict(self, item: Item) -> Prediction:
        answers = _generate_vlm_gpu(self.model, self.processor, [(item.image, item.headline, item.article_text)],
                                    self.spec.samples, self.spec.max_new_tokens)
        votes = Counter(a.label for a in answers if a.label)
        n = len(answers)
        if not votes:
            raise InputError(f"{self.spec.title} gave no answer with a label for this item ({answers[0].error}); try again or pick another model.")
        label, count = votes.most_common(1)[0]
        probabilities = {name: votes.get(name, 0) / n for name in LABEL_NAMES}
        chosen = next(a for a in answers if a.label == label)
        reasoning = chosen.reasoning or ""
        techniques, evidence = parse_techniques_and_evidence(reasoning, reasoning, item.display_text)
        kind = f"vote share: {count} of {n} sampled answers" if n > 1 else "a single greedy answer (no confidence)"
        return Prediction(label, probabilities, count / n, kind, self.spec.title, reasoning=reasoning,
                          rationale_by=f"written by {self.spec.title} (its own answer, shown as it is)", techniques=techniques, evidence=evidence)


PREDICTORS = {"sentence": SentencePredictor, "fusion": FusionPredictor, "vlm": VLMPredictor}


def load_failure_message(spec: PickerModel, error: BaseException) -> str:
    """A sentence for the user on why ``spec`` could not be loaded (the log keeps the traceback)."""
    chain, e = [], error
    while e is not None and len(chain) < 10:
        chain.append(e)
        e = e.__cause__ or e.__context__
    names = {type(x).__name__ for x in chain}
    text = " ".join(str(x) for x in chain).lower()
    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes")
    if names & {"RepositoryNotFoundError", "GatedRepoError"} or "repository not found" in text:
        return (f"{spec.title} is not available on the Hugging Face Hub ({spec.path}): it has not been published yet, or it is "
                "private. Pick the offline default.")
    if spec.on_hub and (offline or names & {"OfflineModeIsEnabled", "LocalEntryNotFoundError", "ConnectError", "ConnectionError",
                                            "ConnectTimeout", "ReadTimeout"} or "connect" in text or "offline" in text):
        return (f"{spec.title} is on the Hugging Face Hub ({spec.path}), and this server cannot reach the Hub (no network). "
                "Pick the offline default, which needs no network.")
    if "cuda" in text or "gpu" in text or "bitsandbytes" in text:
        return f"{spec.title} needs a GPU, which this server does not have. Pick the offline default."
    return f"{spec.title} could not be loaded ({type(error).__name__}). The offline default works; the server log has the details."


class Predictors:
    """Loads each picked model once (lazily, thread-safe) and keeps it. A request for a model
    that another request is loading is told so at once instead of queueing behind the load."""

    def __init__(self, specs: list[PickerModel]):
        self.specs = {s.name: s for s in specs}
        self._loaded: dict[str, Any] = {}
        self._loading: dict[str, float] = {}
        self._lock = threading.Lock()

    def get(self, name: str):
        spec = self.specs.get(name)
        if spec is None:
            raise InputError(f"Unknown model {name!r}; choose one of {', '.join(self.specs)}.")
        if name in self._loaded:
            return self._loaded[name]
        with self._lock:
            if name in self._loaded:
                return self._loaded[name]
            if name in self._loading:
                waited = time.monotonic() - self._loading[name]
                raise InputError(f"{spec.title} is still loading (started {waited:.0f} s ago); try again in a minute.")
            self._loading[name] = time.monotonic()
        try:
            self._loaded[name] = self._load(spec)
        finally:
            with self._lock:
                self._loading.pop(name, None)
        return self._loaded[name]

    @staticmethod
    def _load(spec: PickerModel):
        start = time.perf_counter()
        try:
            predictor = PREDICTORS[spec.kind](spec)
        except InputError:
            raise
        except Exception as e:  # any failure to load is the user's "cannot use this model", with the cause logged
            logger.warning("could not load %s (%s)", spec.name, spec.path, exc_info=True)
            raise InputError(load_failure_message(spec, e)) from e
        logger.info("loaded %s in %.1fs", spec.name, time.perf_counter() - start)
        return predictor


# -- evidence and wording ----------------------------------------------------------------------


