"""Image validation: what enters the corpus, and the reason when something does not."""

from __future__ import annotations

import hashlib
import io

import pytest
from PIL import Image

from vilbias.images import InvalidImage, hamming, validate_image


def encode(img: Image.Image, fmt: str, **kw) -> bytes:
    buf = io.BytesIO()
    img.save(buf, fmt, **kw)
    return buf.getvalue()


def photo(size=(160, 120), seed=0) -> Image.Image:
    import numpy as np

    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 255, (size[1] // 8, size[0] // 8, 3), dtype="uint8")).resize(size)


@pytest.mark.parametrize(
    ("img", "fmt", "mode", "ext"),
    [
        (photo(), "JPEG", "RGB", "jpg"),
        (photo().convert("CMYK"), "JPEG", "CMYK", "jpg"),
        (photo().convert("P"), "PNG", "P", "png"),
        (photo().convert("LA"), "PNG", "LA", "png"),
        (photo().convert("L"), "WEBP", "L", "webp"),
    ],
)
def test_accepts_common_modes_and_keeps_identity(img, fmt, mode, ext):
    data = encode(img, fmt)
    info = validate_image(data)
    assert (info.format, info.mode, info.ext, info.width, info.height) == (fmt, mode if fmt != "WEBP" else info.mode, ext, 160, 120)
    assert info.sha256 == hashlib.sha256(data).hexdigest()


def test_animated_gif_is_accepted_as_its_first_frame():
    frames = [photo(seed=s).convert("P") for s in range(3)]
    buf = io.BytesIO()
    frames[0].save(buf, "GIF", save_all=True, append_images=frames[1:], duration=100, loop=0)
    info = validate_image(buf.getvalue())
    assert info.animated and info.format == "GIF"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "empty"),
        (b"<svg xmlns='http://www.w3.org/2000/svg'/>", "not_an_image"),
        (encode(Image.new("RGB", (1, 1)), "GIF"), "too_small"),
        (encode(photo((400, 20)), "PNG"), "too_small"),
        (encode(photo((1200, 100)), "PNG"), "bad_aspect_ratio"),
        (encode(photo(), "JPEG")[:900], "corrupt"),
        (encode(Image.new("1", (10_000, 10_000)), "PNG"), "decompression_bomb"),
    ],
)
def test_rejects_with_a_reason(data, reason):
    with pytest.raises(InvalidImage) as e:
        validate_image(data)
    assert e.value.reason == reason


def test_perceptual_hash_sees_re_encodes_as_near_identical():
    img = photo((320, 240), seed=5)
    a = validate_image(encode(img, "JPEG", quality=90)).phash
    b = validate_image(encode(img, "JPEG", quality=60)).phash
    c = validate_image(encode(photo((320, 240), seed=6), "JPEG")).phash
    assert hamming(a, b) <= 4 < 12 < hamming(a, c)


@pytest.mark.parametrize("seed", range(6))
def test_phash_matches_imagehash(seed):
    import imagehash

    from vilbias.images import _phash

    img = photo((300, 200), seed=seed)
    expected = int(str(imagehash.phash(img)), 16)
    assert _phash(img) == expected
