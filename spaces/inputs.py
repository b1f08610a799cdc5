"""What a user gives the Space, checked before any model runs: an uploaded image and text, or an
article's URL fetched with the ingest stage's fetcher; each problem is one sentence (:class:`InputError`)."""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from vilbias.images import InvalidImage, validate_image
from vilbias.ingest import FetchSettings, ItemFetchError, fetch_item
from vilbias.task import classifier_text

logger = logging.getLogger(__name__)


class InputError(ValueError):
    """The user's input cannot be labelled; the message says why and what to do."""


@dataclass
class Limits:
    """Bounds on what one request may carry."""

    max_image_bytes: int = 10 * 1024 * 1024
    max_headline_chars: int = 400
    max_article_chars: int = 30_000
    fetch_timeout: float = 10.0
    """Seconds for connecting and for each read when fetching a URL."""
    allow_private_addresses: bool = False
    """Let URLs reach loopback/private addresses (test mode only)."""


@dataclass
class Item:
    """One news item ready for a model."""

    image: Any
    """RGB PIL image; None when no image was given to a model that reads text only."""
    headline: str
    article_text: str
    url: str | None = None
    image_url: str | None = None
    image_path: str | None = None
    """The uploaded file, shown back as it is (re-encoding the image for display costs time)."""

    @property
    def display_text(self) -> str:

        return classifier_text(self.headline, self.article_text)


_IMAGE_REASONS = {
    "empty": "The image file is empty.",
    "too_large_file": "The image file is too large.",
    "not_an_image": "That file is not an image Pillow can read (use JPEG, PNG, WebP or GIF).",
    "unsupported_format": "That image format is not supported (use JPEG, PNG, WebP or GIF).",
    "decompression_bomb": "The image has too many pixels.",
    "too_small": "The image is too small to be a news photo (at least 48 pixels a side).",
    "too_large": "The image is too large (at most 16,384 pixels a side).",
    "bad_aspect_ratio": "The image is a strip or banner (more than 8:1), not a news photo.",
    "corrupt": "The image file is damaged and cannot be decoded.",
}


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n / 1e3:.0f} kB"


def read_image(data: bytes, limits: Limits):
    """Validate image bytes and return an RGB PIL image; :class:`InputError` says what is wrong."""
    if len(data) > limits.max_image_bytes:
        raise InputError(f"The image is {_size(len(data))}; the limit is {_size(limits.max_image_bytes)}.")
    try:
        validate_image(data)
    except InvalidImage as e:
        raise InputError(_IMAGE_REASONS.get(e.reason, f"The image cannot be used ({e.reason}).")) from None
    return Image.open(io.BytesIO(data)).convert("RGB")


def check_text(headline: str | None, article_text: str | None, limits: Limits) -> tuple[str, str]:
    """Stripped headline and article text, or :class:`InputError`."""
    headline, article_text = (headline or "").strip(), (article_text or "").strip()
    if not headline and not article_text:
        raise InputError("Enter a headline and the article text, or an article URL.")
    if len(headline) > limits.max_headline_chars:
        raise InputError(f"The headline has {len(headline):,} characters; the limit is {limits.max_headline_chars:,}.")
    if len(article_text) > limits.max_article_chars:
        raise InputError(
            f"The article text has {len(article_text):,} characters; the limit is {limits.max_article_chars:,}. "
            "Paste the first part of the article."
        )
    return headline, article_text


def item_from_upload(image_path: str | Path | None, headline: str | None, article_text: str | None, limits: Limits,
                     *, need_image: bool = True) -> Item:
    """An item from the form: the pasted text and, when uploaded (or ``need_image``), the image."""
    headline, article_text = check_text(headline, article_text, limits)
    if not image_path:
        if need_image:
            raise InputError("Upload the article's image: this model reads the picture together with the text.")
        return Item(None, headline, article_text)
    path = Path(image_path)
    if not path.is_file():
        raise InputError("The uploaded image could not be read; upload it again.")
    if path.stat().st_size > limits.max_image_bytes:
        raise InputError(f"The image is {_size(path.stat().st_size)}; the limit is {_size(limits.max_image_bytes)}.")
    return Item(read_image(path.read_bytes(), limits), headline, article_text, image_path=str(path))


# What the user can do instead, after the fetch error's own sentence (vilbias.ingest.ItemFetchError).
_FETCH_ADVICE = {
    "connect_failed": " Check the address, or paste the text instead.",
    "timeout": " Try again later, or paste the text instead.",
    "robots_disallowed": " Paste the text (and upload the image) instead.",
    "robots_unavailable": " Paste the text (and upload the image) instead.",
    "not_an_article": " Give the address of one article, or paste its text.",
    "not_html": " Give the address of the article's web page.",
}


def _fetch(url: str, limits: Limits, image: bool):
    settings = FetchSettings(allow_private_addresses=limits.allow_private_addresses, timeout=limits.fetch_timeout,
                             max_retries=0, max_image_bytes=limits.max_image_bytes)
    try:
        return fetch_item((url or "").strip(), settings, image=image)
    except ItemFetchError as e:
        if e.reason == "no_usable_image":
            raise
        raise InputError(str(e) + _FETCH_ADVICE.get(e.reason, "")) from e


def item_from_url(url: str, limits: Limits, *, image_path: str | Path | None = None, need_image: bool = True,
                  model_title: str = "This model") -> Item:
    """Fetch an article page (and its image) with the ingest stage's checks and extractor.

    An uploaded image replaces the page's. Raises :class:`InputError` with the ingest stage's
    sentence (:func:`vilbias.ingest.fetch_item`) for a URL that is not http(s), a private address
    (unless ``limits.allow_private_addresses``), an unreachable host, a timeout, a robots.txt
    refusal or a page that is not an article; a page without a usable image is an error only
    when ``need_image`` (a text-only model labels it without one).
    """

    try:
        fetched = _fetch(url, limits, image=not image_path)
    except ItemFetchError as e:  # no usable image on the page
        if need_image:
            raise InputError(f"{e} {model_title} reads the image with the text: upload the article's image together "
                             "with the URL, or pick a model that reads text only.") from e
        logger.info("%s: %s; labelling the text alone", url, e)
        fetched = _fetch(url, limits, image=False)
    extracted = fetched.article
    # A long article is cut, not refused: the models read only its start anyway.
    headline, article_text = extracted.headline[: limits.max_headline_chars], extracted.text[: limits.max_article_chars]
    if not classifier_text(headline, article_text):
        raise InputError("No article text was found on that page. Paste the text instead.")
    if image_path:
        image = item_from_upload(image_path, headline, article_text, limits).image
        return Item(image, headline, article_text, extracted.url, image_path=str(image_path))
    image = read_image(fetched.image, limits) if fetched.image else None
    return Item(image, headline, article_text, extracted.url, fetched.image_url)
