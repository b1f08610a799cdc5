"""The Space's models, without the UI: the model list (models.yaml), each model loaded once
through the catalogue (:func:`vilbias.models.catalogue.load_predictor`, which runs it), and what
the UI shows of its output: the evidence placed in the shown text, the rationale's wording, the
confidence and the messages a user can act on.

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

torch and transformers are imported by the catalogue's loaders when a model is loaded, so
importing this module stays light.
"""

from __future__ import annotations

import importlib.resources
import logging
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from vilbias.spaces.config import MODELS_YAML
from vilbias.spaces.explain import (
    Evidence,
    Explanation,
    parse_techniques_and_evidence,
)
from vilbias.spaces.inputs import InputError, Item

from vilbias.languages import (
    ANY,
    ITEM_CHARS,
    MIN_LETTERS_TO_TELL,
    describe_languages,
    language_fit,
    language_name,
)
from vilbias.models.catalogue import PREDICTORS, ModelSpec, load_predictor
from vilbias.models.evidence import explain_output, sentence_offsets
from vilbias.models.predictors import (
    ModelOutput,
    NeedsGPUError,
    NoLabelError,
    predict_batch,
    sample_answers,
)
from vilbias.models.predictors import item_sentences as sentences_read

logger = logging.getLogger(__name__)

OFFLINE_DEFAULT = "offline-default"
"""The ``path`` that names the sentence-level model shipped in the package (``training/default_model``)."""
MAX_SENTENCES = 500
"""Sentences a sentence model reads per article, headline included; past it, the answer says
beside the label how much was read. Chosen from ``benchmarks/bench_article_length.py``: memory
sets no limit (the peak stays within 13 MB above the warm process at 25-600 sentences: the
runtime's buffers follow the batch, not the article), time does. 500 sentences take ~3 s alone
on 2 cores (:data:`SECONDS_PER_SENTENCE`), and are the whole of a 30,000-character text (the text
box's limit) whose sentences average 60 characters or more: real English news pages average
90-215 (one 54), the embedded sample's articles 40-76."""
SECONDS_PER_SENTENCE = 0.0063
"""A request's time per sentence read (input checks, splitting, the model's pass, the evidence
placed in the text, the explanation), measured by ``benchmarks/bench_article_length.py`` on 2
cores of an Intel Xeon at load average 1.5 with the offline default (the model's pass alone:
4.5 ms); 7.7 ms at load average 5.5."""

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
    """A predictor kind of the catalogue (:data:`vilbias.models.catalogue.PREDICTORS`): ``sentence``
    (scores sentences; the evidence explains the label), ``fusion`` (a calibrated text+image
    classifier) or ``vlm`` (a generative model that writes its own rationale)."""
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
    inference_precision: str | None = None
    """Sentence models: ``float32``, ``bfloat16`` or ``int8`` to ask for that path; unset, the
    checkpoint's setting (``auto`` for the offline default: the fastest that answers alike here)."""
    inference_runtime: str | None = None
    """Sentence models: ``torch`` or ``onnxruntime`` to ask for that runtime; unset, the checkpoint's."""
    note: str = ""
    """Plain-words caveat shown under the picker."""

    def __post_init__(self):
        if self.kind not in PREDICTORS:  # the catalogue's predictor kinds
            raise ValueError(f"models.yaml: model {self.name!r} has kind {self.kind!r}; use one of {tuple(PREDICTORS)}")
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
    read_sentences: int | None = None
    """Sentence models: sentences read (headline included)."""
    unread_sentences: int = 0
    """Sentence models: sentences past :data:`MAX_SENTENCES`, not read: the label covers the others only."""
    notes: list[str] = field(default_factory=list)
    """What was done to the input before the model read it (:attr:`Item.notes`), shown beside the label."""


def item_sentences(item: Item) -> list[tuple[str, int, int]]:
    """``(sentence, start, end)`` of the headline and the article's sentences, as the offline
    default reads them, with offsets into :attr:`Item.display_text` (what the UI highlights)."""
    return sentence_offsets(item.display_text, sentences_read(item))


class ModelView:
    """A model of the picker as the Space shows it: the catalogue's predictor
    (:func:`vilbias.models.catalogue.load_predictor`) labels the item; this turns its
    :class:`~vilbias.models.predictors.ModelOutput` into what the UI shows. A kind without a view
    of its own is shown this way: label, probabilities, confidence and any reasoning as they are."""

    def __init__(self, spec: PickerModel):
        self.spec = spec
        # One pass at a time per model, whatever the Space's concurrency: the sentence model's
        # waiting requests share it; a model without batched passes (a VLM) runs them one by one
        # rather than as many generations at once as there are requests.
        self.predictor = SharedPasses(load_predictor(ModelSpec(model=spec.source, revision=spec.revision, inference_precision=spec.inference_precision,
                                                               inference_runtime=spec.inference_runtime), spec.kind, **self.options()))

    def options(self) -> dict[str, Any]:
        """The kind's options of :func:`~vilbias.models.catalogue.load_predictor`, from models.yaml."""
        return {}

    @property
    def model(self):
        return self.predictor.model

    def predict(self, item: Item) -> Prediction:
        self.check_language(item)
        prediction = self.show(item, self.predictor.predict(item))
        prediction.notes = list(item.notes) + prediction.notes
        return prediction

    def check_language(self, item: Item) -> None:
        """:class:`InputError` unless the model reads the item's language, told by
        :func:`vilbias.languages.language_fit` from the headline and the text's start (as ingest
        detects it): a text in another language, or too short to tell, gets no label."""
        languages = tuple(getattr(self.predictor, "languages", (ANY,)))
        fit = language_fit(f"{item.headline}\n\n{item.article_text[:ITEM_CHARS]}", languages)
        if fit.reads:
            return
        reads = describe_languages(languages)
        if fit.too_short:
            raise InputError(f"This text is too short to tell which language it is in ({fit.letters} letters), and "
                             f"{self.spec.title} reads {reads} only: paste more of the article (from about "
                             f"{MIN_LETTERS_TO_TELL} letters, some 20 words, the language can be told).")
        name = language_name(fit.language)
        raise InputError(f"{self.spec.title} does not read {name}: it reads {reads} only, and this text is in "
                         f"{describe_languages([fit.language])}: it gives no label rather than a guess. Pick a model that reads {name}.")

    @property
    def written_by(self) -> str:
        """Who wrote a model's own reasoning, as the UI credits it."""
        return f"written by {self.spec.title} (its own answer, shown as it is)"

    def show(self, item: Item, out: ModelOutput) -> Prediction:
        return Prediction(out.label, out.probabilities, out.confidence, out.confidence_kind, self.spec.title,
                          reads_image=out.reads_image, reasoning=out.reasoning, rationale_by=self.written_by if out.reasoning else None)


class SharedPasses:
    """A predictor whose concurrent ``predict`` calls share forward passes: a call that finds no
    pass running takes every item waiting (up to ``max_items``, oldest first) into one
    ``predict_batch`` and hands each caller its own output; the others wait for theirs. Under
    load the sentence model then runs long length-sorted batches over several articles (larger
    matrix products, one Python-level pass instead of several) instead of one article per pass.

    An item that fails fails alone: a batch that raises is run again one item at a time, and
    each caller gets its own output or its own error. A predictor with ``prepare(item)`` (the
    sentence model: splitting) has it called in the caller's thread first, so that work overlaps
    the pass running meanwhile. Any other attribute is the predictor's.
    """

    def __init__(self, predictor: Any, max_items: int = 8):
        self.inner, self.max_items = predictor, max_items  # inner: the wrapped predictor
        self._cond = threading.Condition()
        self._waiting: list[list] = []  # [item, output, error]
        self._running = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def predict(self, item: Any) -> ModelOutput:
        prepare = getattr(self.inner, "prepare", None)
        if prepare is not None:
            prepare(item)  # the item's own work before its pass (a sentence model's splitting), in this thread
        slot = [item, None, None]
        with self._cond:
            self._waiting.append(slot)
            while slot[1] is None and slot[2] is None:
                if self._running:
                    self._cond.wait()
                    continue
                batch, self._waiting = self._waiting[:self.max_items], self._waiting[self.max_items:]
                self._running = True
                self._cond.release()
                try:
                    self._run(batch)
                finally:
                    self._cond.acquire()
                    self._running = False
                    self._cond.notify_all()
        if slot[2] is not None:
            raise slot[2]
        return slot[1]

    def _run(self, batch: list[list]) -> None:
        try:
            for slot, out in zip(batch, predict_batch(self.inner, [s[0] for s in batch]), strict=True):
                slot[1] = out
        except Exception:
            if len(batch) == 1:
                batch[0][2] = sys.exc_info()[1]
                return
            for slot in batch:
                self._run([slot])


class SentenceView(ModelView):
    """A sentence-level bias model: its sentence scores become the evidence (placed in the shown
    text) and the explanation is built from them. Concurrent requests share the model's passes
    (:class:`SharedPasses`)."""

    def options(self):
        return {"max_sentences": MAX_SENTENCES}

    def show(self, item: Item, out: ModelOutput) -> Prediction:
        evidence, explanation = explain_output(item.display_text, out)
        return Prediction(out.label, out.probabilities, out.confidence, out.confidence_kind, self.spec.title, reads_image=False,
                          reasoning=explanation.text, rationale_by="built from the model's evidence (no generative model)",
                          techniques=list(explanation.techniques), sentences=evidence, explanation=explanation,
                          read_sentences=len(out.sentences), unread_sentences=out.unread_sentences)


class FusionView(ModelView):
    """A fusion classifier with its models.yaml temperature. It scores the item as a whole and
    gives no evidence, so no rationale is written for it."""

    def options(self):
        return {"temperature": self.spec.temperature, "calibration": self.spec.calibration}

    def show(self, item: Item, out: ModelOutput) -> Prediction:
        return Prediction(out.label, out.probabilities, out.confidence, out.confidence_kind, self.spec.title, reads_image=out.reads_image,
                          rationale_note="This classifier scores the item as a whole and gives no evidence, so no rationale is written for it.")


# Defined at import so ZeroGPU can register it; on CPU or outside a Space it runs as is.
_generate_vlm_gpu = _gpu(sample_answers, duration=120)


class VLMView(ModelView):
    """A fine-tuned VLM: its own answer and reasoning, shown as they are, with the phrases it
    quotes from the item marked; the confidence is the majority label's vote share over
    ``spec.samples`` sampled answers."""

    def __init__(self, spec: PickerModel):
        try:
            super().__init__(spec)
        except NeedsGPUError:
            raise InputError(f"{spec.title} is a 4-bit model and needs a GPU, which this server does not have. "
                             "Pick the offline default, or run the Space on GPU hardware.") from None

    def options(self):
        return {"samples": self.spec.samples, "max_new_tokens": self.spec.max_new_tokens, "load_in_4bit": self.spec.load_in_4bit,
                "generate": _generate_vlm_gpu}

    def predict(self, item: Item) -> Prediction:
        try:
            return super().predict(item)
        except NoLabelError as e:
            raise InputError(f"{self.spec.title} gave no answer with a label for this item ({e.reason}); try again or pick another model.") from None

    def show(self, item: Item, out: ModelOutput) -> Prediction:
        techniques, evidence = parse_techniques_and_evidence(out.reasoning, out.reasoning, item.display_text)
        return Prediction(out.label, out.probabilities, out.confidence, out.confidence_kind, self.spec.title, reasoning=out.reasoning,
                          rationale_by=self.written_by, techniques=techniques, evidence=evidence)


VIEWS: dict[str, type[ModelView]] = {"sentence": SentenceView, "fusion": FusionView, "vlm": VLMView}
"""How the Space shows each kind of :data:`vilbias.models.catalogue.PREDICTORS` (others: :class:`ModelView`)."""


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

    def loaded(self, name: str):
        """The model ``name`` if it is loaded, else None (nothing is loaded)."""
        return self._loaded.get(name)

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
            view = VIEWS.get(spec.kind, ModelView)(spec)
        except InputError:
            raise
        except Exception as e:  # any failure to load is the user's "cannot use this model", with the cause logged
            logger.warning("could not load %s (%s)", spec.name, spec.path, exc_info=True)
            raise InputError(load_failure_message(spec, e)) from e
        logger.info("loaded %s in %.1fs", spec.name, time.perf_counter() - start)
        return view
