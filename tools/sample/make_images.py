"""Regenerate the embedded sample's images: stylised, procedurally drawn "news photos".

Every image is drawn from a seeded scene description (a skyline, a crowd, wind turbines ...)
with Pillow and numpy only, so anyone can rebuild the sample's images bit for bit on the same
Pillow/libjpeg version::

    python tools/sample/make_images.py            # rewrites images/ and image_path in articles.jsonl

Each article's image is given in :data:`ARTICLE_IMAGES`, keyed by the last path segment of the article's
URL. The images are stored content-addressed (``images/<sha256>.<ext>``, as ingest stores them),
so a different libjpeg may give different file names; the script rewrites ``image_path`` in
``articles.jsonl`` to match and removes images no article uses any more.

The set deliberately holds the cases the build must handle: a CMYK JPEG, a palette PNG, two pairs
of articles sharing one image file (a wire photo two outlets both ran), and one pair of
near-identical images (the same photo re-encoded and cropped by 2 px). Distinct scenes are kept
far apart in perceptual hash: when a drawn scene lands within :data:`MIN_PHASH_DISTANCE` of one
drawn before it, it is redrawn with the next seed.
"""

from __future__ import annotations

import io
import json
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

from vilbias.images import hamming, validate_image
from vilbias.workdir import ARTICLES, IMAGES, atomic_write, read_jsonl, store_image

logger = logging.getLogger(__name__)

SAMPLE_DIR = Path(__file__).resolve().parents[2] / "src" / "vilbias" / "sample"
"""The shipped sample these scripts regenerate (a checkout's; they are not in the wheel)."""
WIDTH, HEIGHT = 480, 320
MIN_PHASH_DISTANCE = 16
"""Redraw threshold; the tests require > 12 between distinct scenes, this leaves a margin."""
MAX_ATTEMPTS = 40

RGB = tuple[int, int, int]
Draw = Callable[[Image.Image, ImageDraw.ImageDraw, np.random.Generator], None]


@dataclass(frozen=True)
class ImageSpec:
    """How one article's image is made.

    ``same_as`` reuses another article's file byte for byte; ``near_of`` redraws another
    article's scene (same seed) and encodes it differently (``quality``, ``crop``).
    """

    scene: str = ""
    seed: int = 0
    fmt: str = "jpg"
    quality: int = 80
    mode: str = "RGB"
    """``RGB``; ``CMYK`` (JPEG only) or ``P`` (PNG only) for the edge cases."""
    crop: int = 0
    grain: float = 3.5
    """Standard deviation of the added sensor noise; PNGs get less, as real PNG photos do
    (noise would make a lossless file several times larger)."""
    same_as: str = ""
    near_of: str = ""


# ---------------------------------------------------------------------------------------------
# Drawing helpers


def _lerp(a: RGB, b: RGB, t: float) -> RGB:
    return tuple(int(a[i] + (b[i] - a[i]) * t) for i in range(3))  # type: ignore[return-value]


def _jitter(c: RGB, rng: np.random.Generator, amount: int = 18) -> RGB:
    return tuple(int(np.clip(v + rng.integers(-amount, amount + 1), 0, 255)) for v in c)  # type: ignore[return-value]


def _gradient(top: RGB, bottom: RGB, angle: float = 0.0) -> Image.Image:
    """A linear gradient, tilted by ``angle`` radians, as the sky/backdrop of a scene."""
    y, x = np.mgrid[0:HEIGHT, 0:WIDTH].astype(np.float32)
    t = (y / HEIGHT) * math.cos(angle) + (x / WIDTH) * math.sin(angle)
    t = (t - t.min()) / (t.max() - t.min() + 1e-6)
    arr = np.asarray(top, np.float32) * (1 - t[..., None]) + np.asarray(bottom, np.float32) * t[..., None]
    return Image.fromarray(arr.astype(np.uint8), "RGB")


def _glow(im: Image.Image, cx: float, cy: float, radius: float, color: RGB, strength: float = 0.6) -> None:
    """Brighten a soft disc (sun, lamp, screen glow) in place."""
    y, x = np.mgrid[0:HEIGHT, 0:WIDTH].astype(np.float32)
    d = np.sqrt((x - cx) ** 2 + (y - cy) ** 2) / radius
    w = np.clip(1 - d, 0, 1) ** 2 * strength
    arr = np.asarray(im, np.float32)
    arr = arr * (1 - w[..., None]) + np.asarray(color, np.float32) * w[..., None]
    im.paste(Image.fromarray(arr.astype(np.uint8), "RGB"))


def _person(d: ImageDraw.ImageDraw, x: float, y: float, h: float, color: RGB) -> None:
    """A standing figure, feet at (x, y), ``h`` pixels tall."""
    head = h * 0.14
    d.ellipse([x - head / 2, y - h, x + head / 2, y - h + head], fill=color)
    d.rounded_rectangle([x - h * 0.16, y - h + head * 1.05, x + h * 0.16, y - h * 0.38], radius=h * 0.06, fill=color)
    d.rectangle([x - h * 0.12, y - h * 0.4, x - h * 0.02, y], fill=color)
    d.rectangle([x + h * 0.02, y - h * 0.4, x + h * 0.12, y], fill=color)


def _ground(d: ImageDraw.ImageDraw, horizon: float, color: RGB, rng: np.random.Generator, rough: float = 6) -> None:
    pts = [(0, HEIGHT)]
    for x in range(0, WIDTH + 40, 40):
        pts.append((x, horizon + rng.uniform(-rough, rough)))
    pts.append((WIDTH, HEIGHT))
    d.polygon(pts, fill=color)


# ---------------------------------------------------------------------------------------------
# Scenes. Each draws on a blank RGB canvas; composition (horizon, light, palette) depends on the
# seed so two articles with the same kind of scene still get visibly different photos.


def skyline(im, d, rng):
    dusk = rng.random() < 0.5
    im.paste(_gradient((40, 50, 110) if dusk else (120, 170, 225), (240, 150, 90) if dusk else (215, 230, 245)))
    horizon = rng.uniform(0.55, 0.8) * HEIGHT
    x = -10.0
    while x < WIDTH:
        w = rng.uniform(25, 60)
        top = horizon - rng.uniform(40, 190)
        shade = _jitter((35, 40, 55) if dusk else (80, 95, 115), rng, 12)
        d.rectangle([x, top, x + w, HEIGHT], fill=shade)
        for wy in np.arange(top + 8, HEIGHT - 10, 12):
            for wx in np.arange(x + 5, x + w - 6, 10):
                if rng.random() < (0.45 if dusk else 0.15):
                    d.rectangle([wx, wy, wx + 4, wy + 6], fill=(250, 220, 140) if dusk else (170, 190, 210))
        x += w + rng.uniform(-5, 8)
    d.rectangle([0, horizon + 30, WIDTH, HEIGHT], fill=(30, 32, 40))


def crowd(im, d, rng):
    im.paste(_gradient(_jitter((170, 180, 190), rng), _jitter((90, 80, 70), rng), rng.uniform(-0.5, 0.5)))
    base = rng.uniform(0.45, 0.6) * HEIGHT
    for i in range(rng.integers(2, 4)):
        bx = rng.uniform(0, WIDTH - 160)
        by = base - rng.uniform(60, 110)
        d.rectangle([bx, by, bx + rng.uniform(110, 180), by + 30], fill=_jitter((200, 40, 40) if i % 2 else (240, 240, 230), rng, 30))
        d.line([bx, by, bx, base], fill=(60, 50, 40), width=3)
    for row in range(7):
        y = base + row * 26
        for x in np.arange(-10, WIDTH + 10, rng.uniform(16, 24)):
            _person(d, x + rng.uniform(-6, 6), y + 40, rng.uniform(60, 80) + row * 6, _jitter((60, 50, 50), rng, 40))


def podium(im, d, rng):
    im.paste(_gradient(_jitter((20, 40, 90), rng), _jitter((10, 15, 35), rng)))
    n_flags = int(rng.integers(2, 5))
    colors = [_jitter(c, rng, 20) for c in [(190, 30, 45), (240, 240, 240), (30, 60, 150), (230, 180, 40)]]
    for i in range(n_flags):
        fx = 40 + i * (WIDTH - 80) / max(1, n_flags - 1) + rng.uniform(-10, 10)
        d.line([fx, 40, fx, HEIGHT * 0.75], fill=(180, 170, 120), width=3)
        for s in range(3):
            d.polygon([(fx, 45 + s * 25), (fx + 60, 50 + s * 25), (fx + 58, 75 + s * 25), (fx, 70 + s * 25)], fill=colors[(i + s) % 4])
    cx = WIDTH * rng.uniform(0.35, 0.65)
    _person(d, cx, HEIGHT * 0.62, 150, (25, 25, 30))
    d.polygon([(cx - 70, HEIGHT * 0.55), (cx + 70, HEIGHT * 0.55), (cx + 55, HEIGHT), (cx - 55, HEIGHT)], fill=_jitter((110, 70, 40), rng))
    d.ellipse([cx - 18, HEIGHT * 0.62, cx + 18, HEIGHT * 0.7], fill=(200, 190, 150))
    _glow(im, cx, HEIGHT * 0.3, 200, (255, 240, 210), 0.35)


def turbines(im, d, rng):
    im.paste(_gradient(_jitter((110, 160, 220), rng), (230, 235, 240)))
    horizon = rng.uniform(0.6, 0.75) * HEIGHT
    _ground(d, horizon, _jitter((90, 140, 70), rng), rng, 20)
    for _ in range(int(rng.integers(3, 7))):
        x = rng.uniform(20, WIDTH - 20)
        h = rng.uniform(90, 200)
        top = horizon - h
        d.polygon([(x - 3, horizon), (x + 3, horizon), (x + 1, top), (x - 1, top)], fill=(245, 245, 245))
        a0 = rng.uniform(0, 2 * math.pi)
        for k in range(3):
            a = a0 + k * 2 * math.pi / 3
            L = h * 0.45
            d.line([x, top, x + L * math.cos(a), top + L * math.sin(a)], fill=(250, 250, 250), width=4)
        d.ellipse([x - 4, top - 4, x + 4, top + 4], fill=(220, 220, 220))


def hospital(im, d, rng):
    im.paste(_gradient(_jitter((150, 190, 225), rng), (225, 230, 235), rng.uniform(-0.3, 0.3)))
    x0 = rng.uniform(30, 120)
    w = rng.uniform(260, 340)
    top = rng.uniform(50, 100)
    d.rectangle([x0, top, x0 + w, HEIGHT], fill=_jitter((225, 225, 215), rng, 10))
    for wy in np.arange(top + 20, HEIGHT - 40, 30):
        for wx in np.arange(x0 + 15, x0 + w - 20, 28):
            d.rectangle([wx, wy, wx + 16, wy + 18], fill=(90, 120, 150))
    cx, cy = x0 + w / 2, top - 30
    c = (200, 30, 40) if rng.random() < 0.5 else (30, 150, 80)
    d.rectangle([cx - 30, cy - 10, cx + 30, cy + 10], fill=c)
    d.rectangle([cx - 10, cy - 30, cx + 10, cy + 30], fill=c)
    d.rectangle([0, HEIGHT - 40, WIDTH, HEIGHT], fill=(70, 70, 75))
    if rng.random() < 0.6:
        ax = rng.uniform(0, WIDTH - 120)
        d.rounded_rectangle([ax, HEIGHT - 85, ax + 110, HEIGHT - 35], radius=6, fill=(245, 245, 240))
        d.rectangle([ax, HEIGHT - 65, ax + 110, HEIGHT - 58], fill=(210, 40, 40))


def chart(im, d, rng):
    im.paste(_gradient(_jitter((245, 245, 240), rng, 8), _jitter((200, 210, 220), rng), rng.uniform(0, 1.2)))
    n = int(rng.integers(6, 13))
    left, bottom = 50, HEIGHT - 40
    step = (WIDTH - 80) / n
    vals = np.cumsum(rng.normal(0, 1, n)) + rng.uniform(3, 6)
    vals = (vals - vals.min() + 0.5) / (vals.max() - vals.min() + 0.5)
    col = _jitter((40, 90, 160), rng, 40)
    for i, v in enumerate(vals):
        x = left + i * step
        d.rectangle([x + 4, bottom - v * 220, x + step - 4, bottom], fill=col)
    d.line([left, bottom, WIDTH - 20, bottom], fill=(40, 40, 40), width=3)
    d.line([left, bottom, left, 30], fill=(40, 40, 40), width=3)
    pts = [(left + (i + 0.5) * step, bottom - v * 220 - 15) for i, v in enumerate(vals[::-1])]
    d.line(pts, fill=(210, 60, 40), width=4)


def road(im, d, rng):
    night = rng.random() < 0.4
    im.paste(_gradient((20, 25, 50) if night else (140, 180, 220), (70, 60, 80) if night else (220, 215, 200)))
    horizon = rng.uniform(0.35, 0.5) * HEIGHT
    vx = WIDTH * rng.uniform(0.3, 0.7)
    d.rectangle([0, horizon, WIDTH, HEIGHT], fill=(60, 90, 50) if not night else (20, 25, 20))
    d.polygon([(vx - 8, horizon), (vx + 8, horizon), (WIDTH * 1.1, HEIGHT), (-WIDTH * 0.1, HEIGHT)], fill=(55, 55, 60))
    for k in range(8):
        t0, t1 = (k / 8) ** 2, ((k + 0.5) / 8) ** 2
        y0, y1 = horizon + t0 * (HEIGHT - horizon), horizon + t1 * (HEIGHT - horizon)
        d.polygon([(vx - 1 - t0 * 4, y0), (vx + 1 + t0 * 4, y0), (vx + 1 + t1 * 4, y1), (vx - 1 - t1 * 4, y1)], fill=(240, 220, 120))
    for _ in range(int(rng.integers(4, 10))):
        t = rng.uniform(0.1, 0.9)
        y = horizon + t * (HEIGHT - horizon)
        x = vx + rng.uniform(-1, 1) * t * WIDTH * 0.55
        s = 10 + t * 60
        d.rounded_rectangle([x - s, y - s * 0.6, x + s, y], radius=s * 0.2, fill=_jitter((150, 40, 40), rng, 80))
        if night:
            d.ellipse([x - s * 0.8, y - s * 0.35, x - s * 0.5, y - s * 0.15], fill=(255, 240, 200))
            d.ellipse([x + s * 0.5, y - s * 0.35, x + s * 0.8, y - s * 0.15], fill=(255, 240, 200))


def classroom(im, d, rng):
    im.paste(_gradient(_jitter((230, 215, 180), rng), _jitter((170, 140, 100), rng)))
    bx = rng.uniform(0, 190)
    by = rng.uniform(10, 70)
    d.rectangle([bx, by, bx + rng.uniform(160, 290), by + rng.uniform(70, 110)], fill=_jitter((40, 80, 60), rng, 10))
    for k in range(int(rng.integers(3, 6))):
        y = by + 20 + k * 12
        d.line([bx + 20, y, bx + rng.uniform(60, 150), y], fill=(220, 230, 220), width=2)
    top_row = rng.uniform(150, 210)
    for row in range(3):
        y = top_row + row * 45
        for x in np.arange(20 + row * 10, WIDTH, 95):
            d.rectangle([x, y, x + 70 + row * 6, y + 10], fill=(140, 90, 50))
            d.rectangle([x + 6, y + 10, x + 10, y + 40], fill=(90, 60, 40))
            _person(d, x + 35, y + 5, 55 + row * 8, _jitter((70, 80, 120), rng, 50))
    d.rectangle([WIDTH - 70, 20, WIDTH - 20, 160], fill=(200, 220, 240))


def field(im, d, rng):
    im.paste(_gradient(_jitter((130, 180, 230), rng), (240, 230, 200)))
    horizon = rng.uniform(0.3, 0.55) * HEIGHT
    _glow(im, rng.uniform(50, WIDTH - 50), horizon - 40, 120, (255, 240, 180), 0.7)
    base = _jitter((170, 150, 60), rng, 30)
    d.rectangle([0, horizon, WIDTH, HEIGHT], fill=base)
    vx = WIDTH * rng.uniform(0.2, 0.8)
    for k in range(-12, 13):
        d.line([vx + k * 6, horizon, vx + k * 90, HEIGHT], fill=_lerp(base, (60, 70, 20), 0.5), width=3)
    if rng.random() < 0.7:
        tx = rng.uniform(40, WIDTH - 120)
        d.rectangle([tx, horizon - 40, tx + 70, horizon + 5], fill=(170, 40, 30))
        d.polygon([(tx - 5, horizon - 40), (tx + 35, horizon - 65), (tx + 75, horizon - 40)], fill=(90, 60, 50))


def flood(im, d, rng):
    im.paste(_gradient(_jitter((110, 115, 125), rng), (170, 170, 165)))
    water = rng.uniform(0.5, 0.7) * HEIGHT
    for _ in range(int(rng.integers(3, 6))):
        x = rng.uniform(0, WIDTH - 90)
        w = rng.uniform(60, 110)
        top = water - rng.uniform(40, 90)
        d.rectangle([x, top, x + w, water + 20], fill=_jitter((160, 140, 120), rng, 30))
        d.polygon([(x - 8, top), (x + w / 2, top - 35), (x + w + 8, top)], fill=_jitter((90, 60, 50), rng))
    for y in np.arange(water, HEIGHT, 3):
        c = _lerp((120, 105, 80), (70, 60, 45), (y - water) / (HEIGHT - water + 1))
        d.line([0, y, WIDTH, y + rng.uniform(-2, 2)], fill=_jitter(c, rng, 6))
    if rng.random() < 0.6:
        bx = rng.uniform(40, WIDTH - 120)
        d.polygon([(bx, water + 30), (bx + 90, water + 30), (bx + 75, water + 48), (bx + 12, water + 48)], fill=(230, 110, 30))


def stadium(im, d, rng):
    im.paste(_gradient((25, 30, 60), (60, 70, 100)))
    pitch_top = rng.uniform(0.4, 0.6) * HEIGHT
    for k in range(8):
        d.rectangle([0, pitch_top + k * 20, WIDTH, pitch_top + k * 20 + 20], fill=(40, 130, 50) if k % 2 else (50, 150, 60))
    d.rectangle([0, min(pitch_top + 160, HEIGHT - 1), WIDTH, HEIGHT], fill=(50, 150, 60))
    for y in np.arange(20, pitch_top - 10, 8):
        for x in np.arange(0, WIDTH, 6):
            if rng.random() < 0.8:
                d.point((x + rng.uniform(0, 4), y + rng.uniform(0, 4)), fill=_jitter((150, 120, 110), rng, 90))
    d.line([WIDTH / 2, pitch_top, WIDTH / 2, HEIGHT], fill=(230, 230, 230), width=2)
    d.ellipse([WIDTH / 2 - 60, pitch_top + 50, WIDTH / 2 + 60, pitch_top + 110], outline=(230, 230, 230), width=2)
    for _ in range(2):
        _glow(im, rng.uniform(0, WIDTH), 10, 110, (255, 255, 230), 0.8)
    for _ in range(int(rng.integers(4, 9))):
        _person(d, rng.uniform(20, WIDTH - 20), pitch_top + rng.uniform(60, 150), rng.uniform(40, 70), _jitter((200, 30, 40) if rng.random() < 0.5 else (30, 60, 190), rng, 20))


def lab(im, d, rng):
    im.paste(_gradient((230, 240, 245), _jitter((170, 190, 200), rng), rng.uniform(-1, 1)))
    bench = rng.uniform(0.55, 0.7) * HEIGHT
    d.rectangle([0, bench, WIDTH, bench + 18], fill=(60, 60, 70))
    d.rectangle([0, bench + 18, WIDTH, HEIGHT], fill=(200, 205, 210))
    for _ in range(int(rng.integers(4, 8))):
        x = rng.uniform(20, WIDTH - 60)
        h = rng.uniform(50, 110)
        liquid = _jitter((60, 160, 200) if rng.random() < 0.5 else (190, 80, 160), rng, 40)
        d.polygon([(x + 15, bench - h), (x + 30, bench - h), (x + 30, bench - h * 0.6), (x + 48, bench), (x - 3, bench), (x + 15, bench - h * 0.6)], fill=(220, 235, 240), outline=(120, 140, 150))
        d.polygon([(x + 6, bench - h * 0.3), (x + 39, bench - h * 0.3), (x + 48, bench), (x - 3, bench)], fill=liquid)
    mx = rng.uniform(40, WIDTH - 100)
    d.rectangle([mx, bench - 140, mx + 14, bench], fill=(40, 40, 45))
    d.rectangle([mx - 20, bench - 150, mx + 50, bench - 130], fill=(30, 30, 35))


def houses(im, d, rng):
    im.paste(_gradient(_jitter((150, 190, 230), rng), (235, 225, 210)))
    base = rng.uniform(0.7, 0.85) * HEIGHT
    x = rng.uniform(-30, 0)
    while x < WIDTH:
        w = rng.uniform(55, 85)
        h = rng.uniform(60, 110)
        wall = _jitter([(200, 120, 90), (230, 210, 170), (150, 170, 190), (190, 190, 180)][int(rng.integers(0, 4))], rng, 15)
        d.rectangle([x, base - h, x + w, base], fill=wall)
        d.polygon([(x - 4, base - h), (x + w / 2, base - h - rng.uniform(25, 45)), (x + w + 4, base - h)], fill=_jitter((80, 50, 45), rng))
        d.rectangle([x + w * 0.4, base - 30, x + w * 0.6, base], fill=(70, 50, 40))
        d.rectangle([x + 8, base - h + 15, x + 22, base - h + 32], fill=(200, 220, 240))
        x += w + rng.uniform(0, 6)
    d.rectangle([0, base, WIDTH, HEIGHT], fill=(110, 110, 105))
    if rng.random() < 0.5:
        sx = rng.uniform(30, WIDTH - 90)
        d.rectangle([sx, base - 55, sx + 70, base - 25], fill=(240, 240, 240))
        d.rectangle([sx + 30, base - 25, sx + 36, base + 10], fill=(120, 90, 60))


def pylons(im, d, rng):
    im.paste(_gradient(_jitter((80, 100, 150), rng), _jitter((240, 190, 150), rng), rng.uniform(-0.4, 0.4)))
    horizon = rng.uniform(0.7, 0.85) * HEIGHT
    _ground(d, horizon, (40, 50, 40), rng, 10)
    xs = sorted(rng.uniform(0, WIDTH, int(rng.integers(2, 4))))
    tops = []
    for x in xs:
        h = rng.uniform(150, 220)
        top = horizon - h
        d.line([x - 25, horizon, x, top], fill=(30, 30, 30), width=3)
        d.line([x + 25, horizon, x, top], fill=(30, 30, 30), width=3)
        for k in range(1, 6):
            y = top + k * h / 6
            half = 25 * k / 6
            d.line([x - half, y, x + half, y], fill=(30, 30, 30), width=2)
        d.line([x - 40, top + 20, x + 40, top + 20], fill=(30, 30, 30), width=3)
        tops.append((x, top + 20))
    for side in (-40, 40):
        pts = [(-10, tops[0][1] + 30)] + [(x + side, y) for x, y in tops] + [(WIDTH + 10, tops[-1][1] + 30)]
        d.line(pts, fill=(20, 20, 20), width=1)


def border(im, d, rng):
    im.paste(_gradient(_jitter((190, 200, 215), rng), (230, 200, 160)))
    horizon = rng.uniform(0.45, 0.6) * HEIGHT
    _ground(d, horizon, _jitter((180, 150, 110), rng), rng, 10)
    spacing = rng.uniform(18, 30)
    for x in np.arange(0, WIDTH, spacing):
        d.rectangle([x, horizon - 110, x + 4, horizon + 40], fill=(70, 70, 75))
    for y in np.arange(horizon - 100, horizon + 40, 10):
        d.line([0, y, WIDTH, y], fill=(110, 110, 115), width=1)
    d.line([0, horizon - 112, WIDTH, horizon - 112], fill=(60, 60, 60), width=4)
    for _ in range(int(rng.integers(0, 5))):
        _person(d, rng.uniform(20, WIDTH - 20), horizon + rng.uniform(60, 120), rng.uniform(70, 110), _jitter((70, 60, 60), rng, 30))


def ballot(im, d, rng):
    im.paste(_gradient(_jitter((200, 200, 210), rng), _jitter((120, 120, 140), rng), rng.uniform(-1, 1)))
    table = rng.uniform(0.6, 0.75) * HEIGHT
    d.rectangle([0, table, WIDTH, HEIGHT], fill=(120, 80, 50))
    bx = WIDTH * rng.uniform(0.25, 0.55)
    d.rectangle([bx, table - 150, bx + 170, table], fill=(235, 240, 245), outline=(120, 130, 150), width=3)
    d.rectangle([bx + 55, table - 150, bx + 115, table - 143], fill=(40, 40, 40))
    d.rectangle([bx + 20, table - 100, bx + 150, table - 70], fill=_jitter((30, 70, 160), rng, 20))
    d.polygon([(bx + 70, table - 200), (bx + 105, table - 195), (bx + 100, table - 146), (bx + 65, table - 150)], fill=(250, 250, 245))
    for _ in range(2):
        sx = rng.uniform(0, WIDTH - 60)
        d.rectangle([sx, 40, sx + 50, table], fill=_jitter((100, 110, 130), rng, 20))


def police(im, d, rng):
    im.paste(_gradient((10, 10, 25), (30, 30, 40)))
    street = rng.uniform(0.6, 0.75) * HEIGHT
    d.rectangle([0, street, WIDTH, HEIGHT], fill=(25, 25, 30))
    for _ in range(int(rng.integers(3, 6))):
        x = rng.uniform(0, WIDTH)
        d.rectangle([x, rng.uniform(40, 120), x + rng.uniform(50, 100), street], fill=(35, 35, 45))
    for _ in range(int(rng.integers(2, 5))):
        x = rng.uniform(0, WIDTH)
        _glow(im, x, street - 40, rng.uniform(50, 110), (40, 60, 255), 0.9)
        _glow(im, x + rng.uniform(30, 80), street - 40, rng.uniform(40, 90), (255, 40, 40), 0.8)
    d = ImageDraw.Draw(im)
    for k in range(0, WIDTH, 40):
        d.rectangle([k, street + 40, k + 20, street + 46], fill=(240, 210, 60))
    d.rectangle([0, street + 60, WIDTH, street + 64], fill=(230, 200, 50))


def factory(im, d, rng):
    im.paste(_gradient(_jitter((150, 150, 160), rng), _jitter((210, 200, 190), rng)))
    base = rng.uniform(0.7, 0.85) * HEIGHT
    for _ in range(int(rng.integers(2, 5))):
        x = rng.uniform(20, WIDTH - 40)
        top = base - rng.uniform(120, 220)
        d.rectangle([x, top, x + 22, base], fill=(90, 80, 80))
        for k in range(6):
            r = 14 + k * 9
            sx, sy = x + 11 + k * rng.uniform(8, 18), top - 10 - k * 18
            d.ellipse([sx - r, sy - r, sx + r, sy + r], fill=_jitter((200, 200, 200), rng, 20))
    d.rectangle([0, base - 70, WIDTH, base], fill=_jitter((110, 100, 95), rng))
    for x in np.arange(0, WIDTH, 40):
        d.polygon([(x, base - 70), (x + 20, base - 95), (x + 40, base - 70)], fill=(95, 85, 80))
    d.rectangle([0, base, WIDTH, HEIGHT], fill=(70, 70, 70))


def wildfire(im, d, rng):
    im.paste(_gradient((60, 20, 10), (240, 120, 30), rng.uniform(-0.3, 0.3)))
    _glow(im, rng.uniform(100, WIDTH - 100), rng.uniform(80, 160), 150, (255, 200, 80), 0.8)
    horizon = rng.uniform(0.6, 0.8) * HEIGHT
    _ground(d, horizon, (20, 10, 5), rng, 15)
    for x in np.arange(0, WIDTH, rng.uniform(12, 22)):
        h = rng.uniform(40, 110)
        d.polygon([(x - 10, horizon + 5), (x, horizon - h), (x + 10, horizon + 5)], fill=(15, 8, 5))


def courthouse(im, d, rng):
    im.paste(_gradient(_jitter((160, 190, 220), rng), (240, 240, 235)))
    x0 = rng.uniform(20, 100)
    w = rng.uniform(300, 360)
    base = rng.uniform(0.8, 0.9) * HEIGHT
    stone = _jitter((215, 210, 195), rng, 10)
    d.polygon([(x0 - 10, 110), (x0 + w / 2, 50), (x0 + w + 10, 110)], fill=stone, outline=(150, 145, 130))
    d.rectangle([x0, 110, x0 + w, 125], fill=stone)
    n = int(rng.integers(5, 9))
    for k in range(n):
        cx = x0 + 15 + k * (w - 30) / (n - 1)
        d.rectangle([cx - 8, 125, cx + 8, base - 20], fill=(235, 230, 220))
        d.line([cx - 8, 125, cx - 8, base - 20], fill=(160, 155, 140), width=2)
    for s in range(4):
        d.rectangle([x0 - 10 - s * 8, base - 20 + s * 6, x0 + w + 10 + s * 8, base - 14 + s * 6], fill=_lerp(stone, (150, 145, 130), s / 4))
    d.rectangle([0, base + 5, WIDTH, HEIGHT], fill=(120, 120, 115))


def servers(im, d, rng):
    im.paste(_gradient((15, 20, 30), (35, 45, 60), rng.uniform(-1, 1)))
    vx = WIDTH * rng.uniform(0.35, 0.65)
    for side in (-1, 1):
        for k in range(5):
            x0 = vx + side * (20 + k * 45)
            x1 = x0 + side * 40
            left, right = min(x0, x1), max(x0, x1)
            top, bot = 60 - k * 12, HEIGHT - 40 + k * 10
            d.rectangle([left, top, right, bot], fill=(30, 35, 45), outline=(60, 70, 85))
            for y in np.arange(top + 8, bot - 8, 9):
                if rng.random() < 0.7:
                    c = (60, 220, 120) if rng.random() < 0.7 else (240, 160, 40)
                    d.rectangle([left + 5, y, left + 8, y + 3], fill=c)
    _glow(im, vx, HEIGHT / 2, 140, (120, 170, 255), 0.35)


def solar(im, d, rng):
    im.paste(_gradient(_jitter((90, 150, 220), rng), (225, 235, 245)))
    horizon = rng.uniform(0.3, 0.45) * HEIGHT
    d.rectangle([0, horizon, WIDTH, HEIGHT], fill=_jitter((150, 170, 100), rng))
    rows = int(rng.integers(4, 7))
    for r in range(rows):
        y = horizon + 15 + r * (HEIGHT - horizon) / rows
        depth = (r + 1) / rows
        for x in np.arange(rng.uniform(-30, 0), WIDTH, 50 + 40 * depth):
            pw, ph = 40 + 35 * depth, 15 + 25 * depth
            d.polygon([(x, y + ph), (x + pw, y + ph), (x + pw * 0.9, y), (x + pw * 0.1, y)], fill=(30, 50, 100), outline=(170, 180, 200))


def harbor(im, d, rng):
    im.paste(_gradient(_jitter((150, 180, 210), rng), (230, 220, 200)))
    water = rng.uniform(0.55, 0.7) * HEIGHT
    d.rectangle([0, water, WIDTH, HEIGHT], fill=_jitter((40, 80, 110), rng))
    for y in np.arange(water + 4, HEIGHT, 7):
        d.line([rng.uniform(0, WIDTH), y, rng.uniform(0, WIDTH), y], fill=(90, 130, 160), width=1)
    for _ in range(int(rng.integers(2, 4))):
        x = rng.uniform(0, WIDTH - 200)
        L = rng.uniform(140, 220)
        d.polygon([(x, water - 30), (x + L, water - 30), (x + L - 20, water + 5), (x + 15, water + 5)], fill=_jitter((60, 60, 70), rng, 30))
        for k in range(int(L / 24)):
            d.rectangle([x + 15 + k * 22, water - 55, x + 35 + k * 22, water - 30], fill=_jitter((180, 60, 50), rng, 70))
    cx = rng.uniform(300, WIDTH - 30)
    d.line([cx, water, cx, water - 200], fill=(220, 170, 40), width=6)
    d.line([cx - 120, water - 190, cx + 30, water - 190], fill=(220, 170, 40), width=5)


def rail(im, d, rng):
    im.paste(_gradient(_jitter((170, 190, 210), rng), (220, 220, 210)))
    horizon = rng.uniform(0.3, 0.45) * HEIGHT
    vx = WIDTH * rng.uniform(0.35, 0.65)
    d.rectangle([0, horizon, WIDTH, HEIGHT], fill=(120, 110, 95))
    for k in range(1, 30):
        t = (k / 30) ** 1.8
        y = horizon + t * (HEIGHT - horizon)
        half = 10 + t * 260
        d.line([vx - half, y, vx + half, y], fill=(80, 60, 45), width=max(1, int(t * 8)))
    for side in (-1, 1):
        d.line([vx + side * 4, horizon, vx + side * 170, HEIGHT], fill=(180, 180, 185), width=4)
    if rng.random() < 0.6:
        d.rounded_rectangle([vx - 30, horizon - 50, vx + 30, horizon + 8], radius=8, fill=_jitter((200, 40, 40), rng, 40))
        d.rectangle([vx - 20, horizon - 40, vx + 20, horizon - 20], fill=(60, 80, 100))


def portrait(im, d, rng):
    im.paste(_gradient(_jitter((90, 100, 120), rng, 40), _jitter((40, 45, 55), rng), rng.uniform(-1, 1)))
    cx = WIDTH * rng.uniform(0.3, 0.7)
    skin = _jitter((200, 160, 130), rng, 30)
    d.ellipse([cx - 55, 50, cx + 55, 190], fill=skin)
    d.ellipse([cx - 60, 40, cx + 60, 110], fill=_jitter((50, 40, 35), rng, 20))
    d.polygon([(cx - 150, HEIGHT), (cx - 110, 200), (cx + 110, 200), (cx + 150, HEIGHT)], fill=_jitter((40, 50, 80), rng, 30))
    d.polygon([(cx - 20, 200), (cx + 20, 200), (cx, 260)], fill=(240, 240, 240))


def glacier(im, d, rng):
    im.paste(_gradient(_jitter((140, 180, 220), rng), (240, 245, 250), rng.uniform(-0.4, 0.4)))
    water = rng.uniform(0.65, 0.8) * HEIGHT
    pts = [(0, water)]
    for x in np.arange(0, WIDTH + 30, 30):
        pts.append((x, water - rng.uniform(60, 170)))
    pts.append((WIDTH, water))
    d.polygon(pts, fill=(230, 240, 250), outline=(150, 180, 210))
    for x in np.arange(0, WIDTH, 30):
        d.line([x, water - rng.uniform(30, 60), x + rng.uniform(-5, 5), water], fill=(150, 190, 220), width=2)
    d.rectangle([0, water, WIDTH, HEIGHT], fill=_jitter((40, 90, 130), rng, 15))
    for _ in range(int(rng.integers(3, 8))):
        x, y = rng.uniform(0, WIDTH), rng.uniform(water + 10, HEIGHT - 10)
        s = rng.uniform(8, 25)
        d.polygon([(x - s, y), (x + s, y), (x + s * 0.6, y - s * 0.6), (x - s * 0.4, y - s * 0.7)], fill=(235, 245, 250))


SCENES: dict[str, Draw] = {
    f.__name__: f
    for f in (
        skyline, crowd, podium, turbines, hospital, chart, road, classroom, field, flood, stadium, lab, houses,
        pylons, border, ballot, police, factory, wildfire, courthouse, servers, solar, harbor, rail, portrait, glacier,
    )
}


def render(scene: str, seed: int, grain: float = 3.5) -> Image.Image:
    """Draw ``scene`` with ``seed``: soft shapes, a little lens blur, grain and vignetting."""
    rng = np.random.default_rng(seed)
    im = Image.new("RGB", (WIDTH, HEIGHT))
    SCENES[scene](im, ImageDraw.Draw(im), rng)
    # Framing: photographers shoot the same kind of scene from different sides and distances.
    if rng.random() < 0.5:
        im = im.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    zoom = rng.uniform(1.0, 1.4)
    w, h = WIDTH / zoom, HEIGHT / zoom
    x0, y0 = rng.uniform(0, WIDTH - w), rng.uniform(0, HEIGHT - h)
    im = im.resize((WIDTH, HEIGHT), Image.Resampling.BICUBIC, box=(x0, y0, x0 + w, y0 + h))
    im = im.filter(ImageFilter.GaussianBlur(rng.uniform(0.8, 1.4)))
    arr = np.asarray(im, np.float32)
    y, x = np.mgrid[0:HEIGHT, 0:WIDTH].astype(np.float32)
    vignette = 1 - 0.28 * (((x - WIDTH / 2) / WIDTH) ** 2 + ((y - HEIGHT / 2) / HEIGHT) ** 2) * 2.2
    arr = arr * vignette[..., None] + rng.normal(0, grain, arr.shape).astype(np.float32)
    return Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8), "RGB")


def encode(im: Image.Image, spec: ImageSpec) -> bytes:
    if spec.crop:
        c = spec.crop
        im = im.crop((c, c, im.width - c, im.height - c))
    buf = io.BytesIO()
    if spec.fmt == "png":
        if spec.mode == "P":
            im = im.quantize(colors=64, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
        im.save(buf, "PNG", optimize=True)
    else:
        if spec.mode == "CMYK":
            im = im.convert("CMYK")
        im.save(buf, "JPEG", quality=spec.quality, optimize=True)
    return buf.getvalue()


# ---------------------------------------------------------------------------------------------
# Which article gets which image (key: last path segment of the article URL).

ARTICLE_IMAGES: dict[str, ImageSpec] = {
    # Drawn scenes, in article order.
    "port-alder-container-volumes-up": ImageSpec("harbor", seed=101),
    "economy-booming-under-alliance": ImageSpec("harbor", seed=114),
    "glacier-retreat-study": ImageSpec("glacier", seed=127, quality=85),
    "climate-apocalypse-on-our-doorstep": ImageSpec("glacier", seed=140),
    "eco-zealots-block-new-road": ImageSpec("road", seed=153),
    "bypass-delayed-by-court-ruling": ImageSpec("road", seed=166),
    "court-convicts-port-alder-fraudster": ImageSpec("courthouse", seed=179),
    "first-time-buyers-priced-out": ImageSpec("houses", seed=192),
    "soft-justice-shame": ImageSpec("courthouse", seed=205),
    "athletics-doping-ban": ImageSpec("stadium", seed=218),
    "new-vaccine-trial-results-published": ImageSpec("lab", seed=231),
    "jab-breakthrough-ends-winter-fear": ImageSpec("lab", seed=244),
    "crime-wave-blamed-on-bail-reform": ImageSpec("police", seed=257),
    "nuclear-plant-life-extension": ImageSpec("factory", seed=270, mode="CMYK"),
    "lowmarsh-flood-defences-breached": ImageSpec("flood", seed=283),
    "central-bank-holds-rates-steady": ImageSpec("chart", seed=309),
    "mortgage-misery-as-rates-stay-high": ImageSpec("houses", seed=322),
    "energy-bills-to-fall-in-january": ImageSpec("pylons", seed=335),
    "green-levies-blamed-for-bills": ImageSpec("pylons", seed=348),
    "scientists-find-new-deep-sea-species": ImageSpec("harbor", seed=361),
    "teachers-strike-vote": ImageSpec("classroom", seed=374),
    "militant-union-holds-children-hostage": ImageSpec("classroom", seed=387),
    "local-teachers-weigh-ballot": ImageSpec("classroom", seed=400),
    "fracking-ban-lifted-anger": ImageSpec("factory", seed=413),
    "offshore-wind-auction-record": ImageSpec("turbines", seed=426),
    "wind-farm-blight-on-coast": ImageSpec("turbines", seed=439),
    "knife-crime-falls-in-halvern": ImageSpec("police", seed=452),
    "terror-on-our-streets-halvern": ImageSpec("police", seed=465),
    "fuel-tax-cut-pledge-cheered-at-rally": ImageSpec("crowd", seed=478),
    "fusion-reactor-milestone": ImageSpec("lab", seed=491),
    "bank-profits-rise-on-interest": ImageSpec("chart", seed=504),
    "school-meals-pilot-results": ImageSpec("classroom", seed=530),
    "sports-funding-cuts-grassroots": ImageSpec("field", seed=543),
    "rail-strike-halts-services": ImageSpec("rail", seed=556),
    "city-council-approves-transit-levy": ImageSpec("skyline", seed=582),
    "robot-takeover-jobs-vanish": ImageSpec("servers", seed=595),
    "hospital-waiting-lists-fall-for-third-month": ImageSpec("hospital", seed=608),
    "nhs-miracle-waiting-lists-tumble": ImageSpec("hospital", seed=621),
    "ward-closures-leave-patients-in-corridors": ImageSpec("hospital", seed=634),
    "solar-farm-approved-near-riverton": ImageSpec("solar", seed=647),
    "border-crossings-rise-in-spring": ImageSpec("border", seed=660),
    "invasion-at-dunmore": ImageSpec("border", seed=673),
    "families-wait-months-in-shelters": ImageSpec("portrait", seed=686),
    "kestrel-fc-wins-cup-final": ImageSpec("stadium", seed=699, quality=75),
    "glorious-kestrel-end-31-year-wait": ImageSpec("stadium", seed=712),
    "tech-titan-tax-dodge": ImageSpec("skyline", seed=725),
    "rent-controls-proposed": ImageSpec("houses", seed=738),
    "rent-cap-war-on-landlords": ImageSpec("houses", seed=751),
    "ai-chip-plant-announced": ImageSpec("servers", seed=764),
    "unemployment-rises-slightly": ImageSpec("chart", seed=777, fmt="png", mode="P", grain=0.0),
    "jobs-catastrophe-looms": ImageSpec("chart", seed=790),
    "heatwave-warning-issued": ImageSpec("field", seed=803),
    "data-breach-at-health-app": ImageSpec("servers", seed=816, fmt="png", grain=0.0),
    "wildfire-forces-evacuations-near-ashby": ImageSpec("wildfire", seed=829),
    "builders-bank-on-shrinking-homes": ImageSpec("houses", seed=855),
    "farmers-count-cost-of-drought": ImageSpec("field", seed=868),
    "social-media-ban-for-under-16s-debated": ImageSpec("classroom", seed=881),
    "housing-starts-rise": ImageSpec("houses", seed=894),
    "election-debate-ends-without-knockout": ImageSpec("podium", seed=907),
    "green-union-surge-in-polls": ImageSpec("crowd", seed=933),
    "turnout-record-in-early-voting": ImageSpec("ballot", seed=946),
    "suspicious-surge-in-city-votes": ImageSpec("ballot", seed=959),
    "refugee-chef-wins-national-award": ImageSpec("portrait", seed=972),
    # Wire photos run by a second outlet (identical bytes) and re-encoded copies (near-identical).
    "abandoned-lowmarsh-drowns": ImageSpec(same_as="lowmarsh-flood-defences-breached"),
    "bankers-bonanza-as-savers-robbed": ImageSpec(near_of="bank-profits-rise-on-interest", quality=70),
    "commuters-held-to-ransom-again": ImageSpec(same_as="rail-strike-halts-services"),
    "ashby-inferno-climate-wake-up-call": ImageSpec(near_of="wildfire-forces-evacuations-near-ashby", quality=62, crop=2),
    "crane-crushes-whitfield-in-debate": ImageSpec(same_as="election-debate-ends-without-knockout"),
}


def generate(sample_dir: Path = SAMPLE_DIR) -> dict[str, str]:
    """Write every image of :data:`ARTICLE_IMAGES` into ``sample_dir/images`` and return
    ``{slug: image_path}``. Scenes are drawn in the order of :data:`ARTICLE_IMAGES`; a scene too close in
    perceptual hash to one already drawn is redrawn with the next seed."""
    paths: dict[str, str] = {}
    drawn: dict[str, Image.Image] = {}
    hashes: list[tuple[str, int]] = []
    for slug, spec in ARTICLE_IMAGES.items():
        if spec.same_as:
            paths[slug] = paths[spec.same_as]
            continue
        if spec.near_of:
            data = encode(drawn[spec.near_of], spec)
        else:
            for attempt in range(MAX_ATTEMPTS):
                im = render(spec.scene, spec.seed + 7919 * attempt, spec.grain)
                data = encode(im, spec)
                ph = validate_image(data).phash
                closest = min((hamming(ph, h) for _, h in hashes), default=64)
                if closest >= MIN_PHASH_DISTANCE:
                    break
                logger.info("%s: attempt %d within %d bits of another scene, redrawing", slug, attempt, closest)
            else:
                raise RuntimeError(f"{slug}: no seed of scene {spec.scene!r} is far enough from the others")
            drawn[slug] = im
            hashes.append((slug, ph))
        paths[slug] = store_image(sample_dir, data, "png" if spec.fmt == "png" else "jpg")
    return paths


def main(sample_dir: Path = SAMPLE_DIR) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    articles_path = sample_dir / ARTICLES
    records = list(read_jsonl(articles_path))
    missing = [r["url"] for r in records if r["url"].rstrip("/").rsplit("/", 1)[-1] not in ARTICLE_IMAGES]
    if missing:
        raise SystemExit(f"no image spec for {len(missing)} article(s), e.g. {missing[0]}")
    paths = generate(sample_dir)
    for r in records:
        r["image_path"] = paths[r["url"].rstrip("/").rsplit("/", 1)[-1]]
    lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    atomic_write(articles_path, lines)
    used = set(paths.values())
    for f in (sample_dir / IMAGES).iterdir():
        if f"{IMAGES}/{f.name}" not in used:
            f.unlink()
    total = sum((sample_dir / p).stat().st_size for p in used)
    logger.info("%d articles, %d image files, %.1f KB", len(records), len(used), total / 1024)
    return 0


if __name__ == "__main__":
    import sys

    raise SystemExit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else SAMPLE_DIR))
