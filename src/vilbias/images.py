"""Image validation shared by ingestion, the build and the Space.

An image enters the corpus as its original bytes (never decoded and re-encoded). Before that it
must decode and be a plausible news photo; :func:`validate_image` says why when it is not, so the
caller can report the item and move on.
"""

from __future__ import annotations

import hashlib
import io
import warnings
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageFile, UnidentifiedImageError

# Formats a news page serves as a photo. SVG is not a raster format Pillow reads and is
# refused like any other unidentified file.
FORMAT_EXTENSIONS = {"JPEG": "jpg", "MPO": "jpg", "PNG": "png", "GIF": "gif", "WEBP": "webp", "BMP": "bmp", "TIFF": "tiff"}

MAX_IMAGE_BYTES = 25 * 1024 * 1024
"""Larger files are refused before decoding (a news photo is well under this)."""
MIN_SIDE = 48
"""Smaller images are tracking pixels, icons or thumbnails, not the article's photo."""
MAX_SIDE = 16_384
MAX_ASPECT = 8.0
"""Wider or taller than this is a banner, divider or logo strip."""
MAX_PIXELS = Image.MAX_IMAGE_PIXELS or 89_478_485
"""Pillow's decompression-bomb limit; above it an image is refused, not just warned about."""


class InvalidImage(ValueError):
    """The bytes are not a usable image; ``reason`` is a short machine-readable cause."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class ImageInfo:
    sha256: str
    format: str
    ext: str
    width: int
    height: int
    mode: str
    animated: bool
    phash: int
    """64-bit perceptual hash (DCT), for near-duplicate grouping."""


def validate_image(data: bytes, *, min_side: int = MIN_SIDE) -> ImageInfo:
    """Check that ``data`` is a decodable, sanely sized raster image and describe it.

    CMYK, palette, 16-bit and alpha images are accepted; an animated GIF/WebP is accepted and
    its first frame stands for it. Raises :class:`InvalidImage` with one of the reasons
    ``empty``, ``too_large_file``, ``not_an_image``, ``unsupported_format``,
    ``decompression_bomb``, ``too_small``, ``too_large``, ``bad_aspect_ratio``, ``corrupt``.
    """
    if not data:
        raise InvalidImage("empty")
    if len(data) > MAX_IMAGE_BYTES:
        raise InvalidImage("too_large_file", f"{len(data)} bytes > {MAX_IMAGE_BYTES}")
    # Truncated files must fail, not decode into grey padding.
    ImageFile.LOAD_TRUNCATED_IMAGES = False
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            im = Image.open(io.BytesIO(data))
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as e:
            raise InvalidImage("decompression_bomb", str(e)) from None
        except UnidentifiedImageError:
            raise InvalidImage("not_an_image", "Pillow cannot identify the bytes") from None
        except Exception as e:  # Pillow raises a zoo of errors on hostile headers
            raise InvalidImage("corrupt", f"{type(e).__name__}: {e}") from None
        fmt = im.format or ""
        if fmt not in FORMAT_EXTENSIONS:
            raise InvalidImage("unsupported_format", fmt or "unknown")
        width, height = im.size
        if width * height > MAX_PIXELS:
            raise InvalidImage("decompression_bomb", f"{width}x{height} pixels > {MAX_PIXELS}")
        if min(width, height) < min_side:
            raise InvalidImage("too_small", f"{width}x{height}")
        if max(width, height) > MAX_SIDE:
            raise InvalidImage("too_large", f"{width}x{height}")
        if max(width, height) / min(width, height) > MAX_ASPECT:
            raise InvalidImage("bad_aspect_ratio", f"{width}x{height}")
        mode = im.mode
        animated = bool(getattr(im, "is_animated", False))
        try:
            if fmt == "JPEG":
                # Decode at 1/8 scale in the DCT domain, and a colour JPEG as its luma alone (the
                # greyscale the hash reads; chroma is entropy-decoded but not transformed): the
                # whole stream is still read (so a truncated file fails) at a fraction of the
                # cost of a full decode. Pillow keeps a CMYK or greyscale JPEG's own mode.
                im.draft("L" if mode != "CMYK" else mode, (max(64, width // 8), max(64, height // 8)))
            im.load()
            phash = _phash(im)
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as e:
            raise InvalidImage("decompression_bomb", str(e)) from None
        except Exception as e:
            raise InvalidImage("corrupt", f"{type(e).__name__}: {e}") from None
    return ImageInfo(
        sha256=hashlib.sha256(data).hexdigest(),
        format=fmt,
        ext=FORMAT_EXTENSIONS[fmt],
        width=width,
        height=height,
        mode=mode,
        animated=animated,
        phash=phash,
    )


def _dct_rows() -> np.ndarray:
    """The first 8 rows of the unnormalised DCT-II matrix for 32 samples (scipy's ``dct``)."""
    n = np.arange(32)
    k = np.arange(8)[:, None]
    return 2.0 * np.cos(np.pi * k * (2 * n + 1) / 64.0)


_DCT8 = _dct_rows()


def _phash(im: Image.Image) -> int:
    """DCT perceptual hash as a 64-bit int: imagehash's ``phash`` (32x32 Lanczos greyscale,
    2-D DCT, 8x8 low frequencies above their median), computed as two small matrix products
    instead of two full FFT-based DCTs — the same bits at a fraction of the cost."""
    if im.mode not in ("L", "RGB"):
        im = im.convert("RGBA").convert("RGB") if "A" in im.mode or im.mode == "P" else im.convert("RGB")
    pixels = np.asarray(im.convert("L").resize((32, 32), Image.Resampling.LANCZOS), dtype=np.float64)
    low = _DCT8 @ pixels @ _DCT8.T
    bits = (low > np.median(low)).flatten()
    return int.from_bytes(np.packbits(bits).tobytes(), "big")


def hamming(a: int, b: int) -> int:
    return (a ^ b).bit_count()


_GREY_PNG: bytes | None = None


def grey_image() -> bytes:
    """A uniform grey 224×224 PNG: what a classifier that needs an image gets when the image is
    removed (the ``no_image`` probe)."""
    global _GREY_PNG
    if _GREY_PNG is None:
        buffer = io.BytesIO()
        Image.new("RGB", (224, 224), (128, 128, 128)).save(buffer, format="PNG")
        _GREY_PNG = buffer.getvalue()
    return _GREY_PNG
