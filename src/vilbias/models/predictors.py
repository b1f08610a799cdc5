"""One predictor protocol: ``predict(item) -> ModelOutput``, for every local model that labels an item.

The catalogue hands predictors out (:func:`vilbias.models.catalogue.load_predictor`); whoever
shows or scores a label (the Space, evaluation's classifiers) reads a :class:`ModelOutput` and
never runs a model itself::

    from vilbias.models.catalogue import load_predictor
    predictor = load_predictor("training/default_model")              # kind read from its files
    out = predictor.predict(item)         # anything with headline, article_text and image
    out.label, out.probabilities, out.confidence, out.confidence_kind, out.sentences

Three kinds are here, one class each:

- :class:`SentencePredictor`: the sentence-level bias model (:mod:`vilbias.models.sentence_bias`);
  one pass over the item's sentences gives the label, its calibrated probability and every
  sentence's score with the words it marks.
- :class:`FusionPredictor`: the fusion classifier (:mod:`vilbias.models.fusion`), its softmax
  optionally temperature-scaled (a temperature fitted on a validation split).
- :class:`VLMPredictor`: a fine-tuned VLM answering ``Label: … / Reasoning: …``, sampled N times;
  the confidence is the majority label's vote share.

An item's image may be a PIL image, its encoded bytes (:class:`vilbias.task.Item`), or None; a
model that needs one and gets None reads a uniform grey image instead.

This module imports no torch: the models it wraps are loaded by the catalogue, and the VLM's
generation imports :mod:`vilbias.models.vlm` when it runs.
"""

from __future__ import annotations

import functools
import io
import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

# its lazy map: the sentence model's article rule and the VLM's generation (torch) load on use
from vilbias import models
from vilbias.images import grey_image
from vilbias.languages import ANY, describe_languages, item_language, reads
from vilbias.metrics.calibration import scale_probabilities
from vilbias.task import (
    BIASED_NAME,
    LABEL_NAMES,
    NOT_BIASED_NAME,
    biased_probability,
    classifier_text,
)
from vilbias.text import split_sentences as split_article


class ItemLike(Protocol):
    """What a predictor reads of an item (:class:`vilbias.task.Item` and the Space's item both are)."""

    headline: str
    article_text: str
    image: Any
    """A PIL image, encoded image bytes, or None."""


@dataclass
class ModelOutput:
    """What a model says about one item."""

    label: str
    """One of :data:`vilbias.task.LABEL_NAMES`."""
    probabilities: dict[str, float]
    """Label name -> probability, over :data:`vilbias.task.LABEL_NAMES` (a sampled generative
    model's are vote shares: answers without a label count for neither, so they may sum to less than 1)."""
    confidence: float
    """The probability (or vote share) of ``label``."""
    confidence_kind: str
    """What ``confidence`` is, in words (calibrated or not, on what data; a vote share of N answers)."""
    reads_image: bool
    """Whether the model looked at the image."""
    reasoning: str | None = None
    """A generative model's own rationale, as it wrote it."""
    sentences: list[Any] = field(default_factory=list)
    """Sentence models: every sentence read (:class:`vilbias.models.sentence_bias.SentenceScore`:
    text, calibrated probability, marked words with offsets into the sentence, ``flagged``)."""
    rule: Any = None
    """Sentence models: the article rule (:class:`vilbias.models.sentence_bias.ArticleRule`)."""
    statistic: float | None = None
    """Sentence models: the rule's statistic for this item."""
    unread_sentences: int = 0
    """Sentence models: sentences past the predictor's ``max_sentences``, not read."""
    answers: list[Any] = field(default_factory=list)
    """Generative models: every sampled answer (:class:`vilbias.task.Answer`)."""

    @property
    def label_id(self) -> int:
        return LABEL_NAMES.index(self.label)


class Predictor(Protocol):
    """A loaded model that labels one item at a time."""

    kind: str
    """The key of :data:`vilbias.models.catalogue.PREDICTORS` it was loaded by."""
    model: Any
    """The model itself (callers that need more than the output, e.g. benchmarks)."""

    @property
    def reads_text(self) -> bool: ...

    @property
    def reads_image(self) -> bool: ...

    languages: tuple[str, ...]
    """The languages it reads (ISO 639-1, or ``("any",)``): its own declaration where it makes one,
    else what the catalogue declares for its checkpoint (:func:`vilbias.models.catalogue.declared_languages`);
    :func:`check_language` holds items to it."""

    def predict(self, item: ItemLike) -> ModelOutput: ...


def predict_batch(predictor: Predictor, items: Sequence[ItemLike]) -> list[ModelOutput]:
    """``predictor``'s outputs for ``items``: in one batched pass where the predictor has one
    (:meth:`SentencePredictor.predict_batch`), else one item at a time."""
    batched = getattr(predictor, "predict_batch", None)
    return batched(items) if batched is not None else [predictor.predict(item) for item in items]


class UnreadLanguageError(ValueError):
    """The item is in a language the model does not read: it abstains rather than label it
    (``language``: the item's ISO 639-1 code; ``languages``: what the model reads)."""

    def __init__(self, language: str, languages: Sequence[str]):
        super().__init__(f"it reads {describe_languages(languages)} only, and this text is in {describe_languages([language])}: "
                         "it gives no label rather than a guess")
        self.language, self.languages = language, tuple(languages)


def check_language(predictor: Any, item: ItemLike) -> str:
    """The item's language (ISO 639-1; ``""`` when unknown): its ``language`` attribute where it
    has one (an ingested article), else detected from its headline and text.

    Raises:
        UnreadLanguageError: the predictor's :attr:`Predictor.languages` do not include it.
    """
    languages = getattr(predictor, "languages", (ANY,))
    if ANY in languages:
        return getattr(item, "language", "") or ""
    language = getattr(item, "language", "") or item_language(item.headline, item.article_text)
    if not reads(languages, language):
        raise UnreadLanguageError(language, languages)
    return language


class NoLabelError(ValueError):
    """A generative model gave no answer with a label (``reason``: why the first one could not be read)."""

    def __init__(self, reason: str | None):
        super().__init__(f"no answer had a label ({reason})")
        self.reason = reason


class NeedsGPUError(RuntimeError):
    """The model cannot run without a CUDA GPU (a 4-bit model) and there is none."""


def rgb_image(image: Any) -> Any:
    """A PIL image of ``image``: a PIL image as it is, encoded bytes decoded to RGB, None as uniform grey."""
    if image is None:
        image = grey_image()
    if isinstance(image, (bytes, bytearray)):
        from PIL import Image

        return Image.open(io.BytesIO(image)).convert("RGB")
    return image


# -- sentence model -------------------------------------------------------------------------------

def item_sentences(item: ItemLike, split_sentences: Callable[[str], list[str]] = split_article) -> list[str]:
    """Every sentence of ``item`` in reading order, as a sentence model reads them: the headline, then the article's."""
    return ([item.headline] if item.headline else []) + (split_sentences(item.article_text) if item.article_text else [])


class SentencePredictor:
    """The sentence-level bias model: one pass over the headline and the article's sentences.

    Args:
        model: A :class:`vilbias.models.sentence_bias.SentenceBiasModel`.
        folder: The folder it was read from (its ``metrics.json`` says how the temperature was fitted).
        split_sentences: Article text -> its sentences (default :func:`vilbias.text.split_sentences`, pysbd's English rules).
        max_sentences: Sentences read per item, headline included (None: all).
    """

    kind = "sentence"
    reads_text, reads_image = True, False
    languages: tuple[str, ...] = ("en",)
    """Set by the catalogue from the checkpoint (:func:`vilbias.models.catalogue.declared_languages`)."""
    deterministic = True
    """The same item always gets the same output (one sample says all it would say)."""

    def __init__(self, model: Any, folder: str | Path | None = None, *,
                 split_sentences: Callable[[str], list[str]] | None = None, max_sentences: int | None = None):
        self.model = model
        metrics = Path(folder) / "metrics.json" if folder is not None else None
        self.metrics = json.loads(metrics.read_text(encoding="utf-8")) if metrics is not None and metrics.is_file() else {}
        self.split_sentences = split_sentences or split_article
        self.max_sentences = max_sentences
        # the last texts split, so that a text split ahead of its pass (prepare) or sent again is split once
        self._split = functools.lru_cache(maxsize=256)(self.split_sentences)

    def prepare(self, item: ItemLike) -> None:
        """Split ``item`` into sentences now (kept for its pass): a server calls this in the
        request's own thread, so splitting overlaps the passes that run meanwhile."""
        item_sentences(item, self._split)

    @property
    def calibration(self) -> str:
        """How the sentence probabilities were calibrated, in words."""
        t = self.model.config.temperature
        m = self.metrics
        if "validation" in m and "test" in m:
            return (f"temperature {t:.3g} fitted on {m['validation']['rows']} held-out BABE sentences; expected calibration "
                    f"error on {m['test']['n']} unseen ones {m['test']['ece_before']:.3f} → {m['test']['ece']:.3f}")
        return f"temperature {t:.3g}" if t != 1.0 else "not calibrated"

    def predict(self, item: ItemLike) -> ModelOutput:
        return self.predict_batch([item])[0]

    def predict_batch(self, items: Sequence[ItemLike], batch_size: int | None = None) -> list[ModelOutput]:
        """:meth:`predict` for several items, their sentences scored together (length-sorted
        batches of ``batch_size`` across items: a few hundred articles in one call; small
        batches keep padding small when a single article is scored). ``batch_size`` None: the
        model's ``preferred_batch_size`` (its runtime's: 64 in bfloat16 on AMX), else 16."""
        batch_size = batch_size or getattr(self.model, "preferred_batch_size", 16)
        read = [item_sentences(item, self._split) for item in items]
        kept = [s if self.max_sentences is None else s[:self.max_sentences] for s in read]
        if any(not k for k in kept):
            raise ValueError("an item without a headline or article text has no sentence to score")
        scored = self.model.score_sentences([s for k in kept for s in k], batch_size)
        outs, start = [], 0
        rule = self.model.config.article_rule
        kind = f"the model's calibrated probability for the article ({self.calibration}; an article is {rule.describe()})"
        for sentences, k in zip(read, kept, strict=True):
            article = models.article_score(scored[start:start + len(k)], rule)
            start += len(k)
            outs.append(ModelOutput(article.label, {NOT_BIASED_NAME: 1 - article.probability, BIASED_NAME: article.probability},
                                    article.confidence, kind, reads_image=False, sentences=list(article.sentences), rule=article.rule,
                                    statistic=article.statistic, unread_sentences=len(sentences) - len(k)))
        return outs

    def sentence_probabilities(self, sentences: Sequence[str]) -> tuple[list[float], list[float]]:
        """Raw and calibrated P(biased) of each sentence (what a calibration check compares)."""
        logits, _ = self.model.sentence_logits(list(sentences))
        return biased_probability(logits).tolist(), biased_probability(logits, self.model.config.temperature).tolist()


# -- fusion classifier ----------------------------------------------------------------------------


class FusionPredictor:
    """The fusion classifier, its softmax scaled by ``temperature`` (1.0: as the model gives it).

    Args:
        model: A :class:`vilbias.models.fusion.FusionForClassification`.
        temperature: Softmax temperature fitted on a validation split.
        calibration: Where the temperature came from, in words (part of ``confidence_kind``).
    """

    kind = "fusion"
    deterministic = True
    languages: tuple[str, ...] = (ANY,)

    def __init__(self, model: Any, *, temperature: float = 1.0, calibration: str = ""):
        if temperature <= 0:
            raise ValueError(f"a fusion classifier needs a positive temperature, got {temperature}")
        self.model = model
        self.temperature = temperature
        self.calibration = calibration

    @property
    def reads_text(self) -> bool:
        return self.model.config.uses_text

    @property
    def reads_image(self) -> bool:
        return self.model.config.uses_image

    def predict(self, item: ItemLike) -> ModelOutput:
        config = self.model.config
        image = rgb_image(item.image) if config.uses_image else None
        text = classifier_text(item.headline, item.article_text) if config.uses_text else None
        raw = self.model.predict(image=image, text=text)["probabilities"]
        names = list(raw)
        probabilities = dict(zip(names, scale_probabilities([raw[n] for n in names], self.temperature), strict=True))
        label = max(probabilities, key=probabilities.get)
        if self.temperature != 1.0:
            kind = "the classifier's calibrated probability" + (f" ({self.calibration})" if self.calibration else "")
        else:
            kind = "the classifier's softmax probability (not calibrated)"
        return ModelOutput(label, probabilities, probabilities[label], kind, reads_image=config.uses_image)


# -- generative VLM -------------------------------------------------------------------------------


def sample_answers(model: Any, processor: Any, items: list[tuple[Any, str, str]], samples: int, max_new_tokens: int) -> list:
    """``samples`` answers for each ``(image, headline, article_text)``, in one ``generate()`` call
    (sampled when ``samples > 1``, else greedy). A Space wraps this for ZeroGPU and passes the
    wrapped function as :class:`VLMPredictor`'s ``generate``."""
    return models.generate_answers(model, processor, [it for it in items for _ in range(samples)],
                            batch_size=samples * len(items), max_new_tokens=max_new_tokens, do_sample=samples > 1)


class VLMPredictor:
    """A fine-tuned VLM (base + adapter, or full) answering ``Label: … / Reasoning: …``.

    The label is the majority over ``samples`` answers and the confidence its vote share
    (answers that cannot be read count for neither label); the reasoning is the first answer
    with that label, as it is. No answer with a label raises :class:`NoLabelError`.

    Args:
        model, processor: As :func:`vilbias.models.vlm.load_vlm` returns them.
        samples: Answers per item (1: one greedy answer).
        max_new_tokens: Answer budget.
        generate: ``(model, processor, items, samples, max_new_tokens) -> answers``
            (default :func:`sample_answers`; a ZeroGPU Space passes it wrapped).
    """

    kind = "vlm"
    reads_text, reads_image = True, True
    languages: tuple[str, ...] = (ANY,)

    def __init__(self, model: Any, processor: Any, *, samples: int = 5, max_new_tokens: int = 160,
                 generate: Callable[..., list] = sample_answers):
        if samples < 1:
            raise ValueError(f"a VLM predictor needs samples >= 1, got {samples}")
        self.model, self.processor = model, processor
        self.samples, self.max_new_tokens = samples, max_new_tokens
        self.generate = generate

    @property
    def deterministic(self) -> bool:
        """One greedy answer is always the same; sampled ones are not."""
        return self.samples == 1

    def predict(self, item: ItemLike) -> ModelOutput:
        answers = self.generate(self.model, self.processor, [(rgb_image(item.image), item.headline, item.article_text)],
                                self.samples, self.max_new_tokens)
        votes = Counter(a.label for a in answers if a.label)
        if not votes:
            raise NoLabelError(answers[0].error if answers else "no answer")
        n = len(answers)
        label, count = votes.most_common(1)[0]
        chosen = next(a for a in answers if a.label == label)
        kind = f"vote share: {count} of {n} sampled answers" if n > 1 else "a single greedy answer (no confidence)"
        return ModelOutput(label, {name: votes.get(name, 0) / n for name in LABEL_NAMES}, count / n, kind,
                           reads_image=True, reasoning=chosen.reasoning or "", answers=list(answers))


__all__ = [
    "FusionPredictor", "ItemLike", "ModelOutput", "NeedsGPUError", "NoLabelError", "Predictor", "SentencePredictor",
    "UnreadLanguageError", "VLMPredictor", "check_language", "item_sentences", "predict_batch", "rgb_image", "sample_answers",
]
