"""Procedural single-person figures and the paired images made from them.

The embedded probe set never shows a photo of a real person. Each person is a flat pictogram
(head, body, limbs; the pose varies with the activity) on a plain panel, labelled with the
identity above and the activity below. Every figure is drawn in the same neutral colours:
the identity reaches the model only through its label, never through a rendered skin tone,
body or dress, so the audit measures what a model associates with the identity, not how a
renderer pictures it. A pair is two single-person images side by side, as in VIGNETTE::

    from vilbias.audit.images import render_person, concat_pair
    left = render_person("deaf person", "cooking")
    right = render_person("blind person", "cooking")
    concat_pair(left, right).save("pair.png")         # 2 x 336 px wide, 336 px high

Rendering is deterministic for a given Pillow version (its bundled font draws the labels).
"""

from __future__ import annotations

import hashlib
import io
import textwrap
from functools import cache
from typing import Any

PANEL = 336
"""Side of one person's square panel in pixels (a pair is 672 x 336, VIGNETTE's input size)."""
BACKGROUND = (240, 240, 236)
FIGURE = (96, 108, 122)
INK = (25, 25, 25)
DIVIDER = (255, 255, 255)


@cache
def _font(size: int) -> Any:
    from PIL import ImageFont

    return ImageFont.load_default(size=size)


def _pose(activity: str | None) -> int:
    """A pose number (0-3) from the activity text: figures doing different things look different."""
    if not activity:
        return 0
    return int(hashlib.sha256(activity.encode("utf-8")).hexdigest(), 16) % 4


def _label(draw: Any, text: str, y: int, size: int, width: int) -> None:
    lines = textwrap.wrap(text, width=width) or [""]
    font = _font(size)
    for i, line in enumerate(lines[:2]):
        left, top, right, bottom = draw.textbbox((0, 0), line, font=font)
        draw.text(((PANEL - (right - left)) / 2, y + i * (size + 4)), line, fill=INK, font=font)


def render_person(identity: str, activity: str | None = None):
    """One person's panel: a pictogram labelled ``identity`` (top) and ``activity`` (bottom).

    Args:
        identity: The identity label, e.g. ``"deaf person"``.
        activity: What the person does (``"cooking"``); None for a portrait (no activity).

    Returns:
        `PIL.Image.Image` (RGB, ``PANEL`` x ``PANEL``).
    """
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (PANEL, PANEL), BACKGROUND)
    draw = ImageDraw.Draw(image)
    _label(draw, identity, 10, 24, 24)
    cx, top = PANEL // 2, 88
    pose = _pose(activity)
    draw.ellipse((cx - 26, top, cx + 26, top + 52), fill=FIGURE)  # head
    draw.rounded_rectangle((cx - 30, top + 58, cx + 30, top + 150), radius=14, fill=FIGURE)  # body
    shoulder = top + 70
    arms = {
        0: ((cx - 30, shoulder, cx - 62, shoulder + 72), (cx + 30, shoulder, cx + 62, shoulder + 72)),  # at rest
        1: ((cx - 30, shoulder, cx - 70, shoulder - 40), (cx + 30, shoulder, cx + 70, shoulder - 40)),  # raised
        2: ((cx - 30, shoulder, cx - 80, shoulder + 10), (cx + 30, shoulder, cx + 80, shoulder + 10)),  # reaching
        3: ((cx - 30, shoulder, cx - 50, shoulder + 80), (cx + 30, shoulder, cx + 84, shoulder - 20)),  # one up
    }[pose]
    for x0, y0, x1, y1 in arms:
        draw.line((x0, y0, x1, y1), fill=FIGURE, width=14)
    hip = top + 146
    stride = 22 if pose in (2, 3) else 12
    draw.line((cx - 14, hip, cx - 14 - stride, hip + 64), fill=FIGURE, width=16)
    draw.line((cx + 14, hip, cx + 14 + stride, hip + 64), fill=FIGURE, width=16)
    if activity:
        # A plain prop box beside the figure: something is being done, the label says what.
        draw.rounded_rectangle((cx + 64, top + 104, cx + 112, top + 146), radius=6, outline=INK, width=3)
        _label(draw, activity, PANEL - 50, 20, 28)
    return image


def concat_pair(left: Any, right: Any, divider: int = 4):
    """Two single-person images side by side (heights matched to ``left``'s), with a thin
    white divider: VIGNETTE's paired-image layout."""
    from PIL import Image

    height = left.height
    if right.height != height:
        right = right.resize((round(right.width * height / right.height), height))
    pair = Image.new("RGB", (left.width + divider + right.width, height), DIVIDER)
    pair.paste(left.convert("RGB"), (0, 0))
    pair.paste(right.convert("RGB"), (left.width + divider, 0))
    return pair


def png_bytes(image: Any) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()
