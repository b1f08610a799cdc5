"""What a user gives the Space, checked before any model runs: an uploaded image and text, or an
article's URL fetched with the ingest stage's fetcher; each problem is one sentence (:class:`InputError`).

What is pasted into the text boxes must be an article's prose, and is made so or refused:

- a web page's markup (HTML) is turned into the article's text by the ingest stage's extractor
  (:func:`vilbias.ingest.extract_article`), or refused when it finds none;
- a web address alone is refused, pointing to the URL field;
- a text with too few letters to be prose (emoji, symbols, tables of numbers) is refused.

Whether the model reads the text's language is the model's question
(:meth:`vilbias.spaces.predictors.ModelView.predict`, :func:`vilbias.languages.language_fit`).
"""

from __future__ import annotations

import io
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from PIL import Image

from vilbias.images import InvalidImage, validate_image
from vilbias.ingest import FetchSettings, ItemFetchError, extract_article, fetch_item
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
    max_markup_chars: int = 3_000_000
    """A page's markup pasted into the text box (a news page's HTML is often 0.2-1 MB)."""
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
    notes: list[str] = field(default_factory=list)
    """What was done to the input before a model read it (markup turned into text), shown beside the label."""
    cut_from: int | None = None
    """The article text's length before it was cut to ``Limits.max_article_chars`` (a fetched page
    or pasted markup longer than that); None when nothing was cut."""

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


MIN_LETTER_SHARE = 0.5
"""Prose is mostly letters: below this share of the visible characters (emoji, symbols, digits,
punctuation) a text is not an article's prose. News prose is mostly letters (the embedded sample's
articles: 93-97% of their characters other than spaces); a row of emoji or a table of figures is
far below half."""

PASTED_PAGE_URL = "https://pasted.invalid/article"
"""Where the extractor is told pasted markup came from (a reserved domain: nothing is fetched;
a page's own canonical link, when it has one, replaces it)."""

_URL = re.compile(r"(?:https?://|www\.)\S+", re.IGNORECASE)
_TAG = re.compile(r"<(?:!--|!doctype\b|/?[a-z][a-z0-9-]*(?:\s[^<>]*)?/?>)", re.IGNORECASE)


def is_bare_url(text: str) -> bool:
    return bool(_URL.fullmatch(text.strip()))


def has_markup(text: str) -> bool:
    """Whether ``text`` holds HTML/XML tags (``<p>``, ``</div>``, ``<!DOCTYPE html>``), not just a ``<`` in prose."""
    return _TAG.search(text) is not None


def check_prose(text: str) -> None:
    """:class:`InputError` for a text with too few letters to be prose (:data:`MIN_LETTER_SHARE`)."""
    visible = sum(not c.isspace() for c in text)
    letters = sum(c.isalpha() for c in text)
    if letters < MIN_LETTER_SHARE * visible or letters == 0:
        raise InputError(f"This is not an article's prose: {letters:,} of its {visible:,} characters are letters "
                         f"(emoji, symbols or figures make up the rest); paste the article's text.")


class Text(NamedTuple):
    """The headline and article text as a model will read them."""

    headline: str
    article_text: str
    notes: list[str]
    """What was done to them (markup turned into text)."""
    cut_from: int | None = None
    """The text's length before it was cut to the limit (None: not cut)."""


def text_from_markup(markup: str, headline: str, limits: Limits) -> Text:
    """The article in a page's pasted markup, by the ingest stage's extractor (cut to
    ``limits.max_article_chars``); :class:`InputError` when it finds no article text in it."""
    if len(markup) > limits.max_markup_chars:
        raise InputError(f"The article text is a web page's markup of {len(markup):,} characters; the limit is "
                         f"{limits.max_markup_chars:,}. Paste the article's text, or give its address in the Article URL field.")
    page = extract_article(markup, PASTED_PAGE_URL)
    # A fragment of a page (a few <p>) has nothing that marks it as an article page: its text is the article's.
    fragment = page.page_kind == "non_article" and page.kind_detail == "no_article_markup"
    if not page.text or not (page.page_kind == "article" or fragment):
        why = "it has no article text" if not page.text else f"it is not a news article's page ({page.kind_detail})"
        raise InputError(f"The article text is a web page's markup (HTML), and the extractor the ingest stage uses found no "
                         f"article in it ({why}): paste the article's text as you read it, or give the page's address "
                         "in the Article URL field.")
    note = (f"The article text was a web page's markup (HTML): what is labelled is the article's text extracted from it "
            f"({len(page.text):,} characters, shown below), as the ingest stage extracts a fetched page.")
    cut = len(page.text) if len(page.text) > limits.max_article_chars else None
    return Text(headline or page.headline[: limits.max_headline_chars], page.text[: limits.max_article_chars], [note], cut)


def check_text(headline: str | None, article_text: str | None, limits: Limits) -> Text:
    """The headline and article text as the model will read them, with notes on what was done to
    them (markup turned into text); or :class:`InputError`: nothing given, a web address alone, a
    headline or text over its limit, markup without an article, too few letters to be prose."""
    headline, article_text = (headline or "").strip(), (article_text or "").strip()
    if not headline and not article_text:
        raise InputError("Enter a headline and the article text, or an article URL.")
    for box, text in (("article text", article_text), ("headline", headline)):
        if text and is_bare_url(text):
            raise InputError(f"The {box} box holds a web address, not the article: put it in the Article URL field, "
                             "which fetches the page and reads its headline and text.")
    if has_markup(headline):
        raise InputError("The headline holds markup (HTML tags); type or paste it as plain text.")
    if len(headline) > limits.max_headline_chars:
        raise InputError(f"The headline has {len(headline):,} characters; the limit is {limits.max_headline_chars:,}.")
    if has_markup(article_text):
        text = text_from_markup(article_text, headline, limits)
    elif len(article_text) > limits.max_article_chars:
        raise InputError(
            f"The article text has {len(article_text):,} characters; the limit is {limits.max_article_chars:,}. "
            "Paste the first part of the article."
        )
    else:
        text = Text(headline, article_text, [])
    check_prose(classifier_text(text.headline, text.article_text))
    return text


def item_from_upload(image_path: str | Path | None, headline: str | None, article_text: str | None, limits: Limits,
                     *, need_image: bool = True) -> Item:
    """An item from the form: the pasted text and, when uploaded (or ``need_image``), the image."""
    headline, article_text, notes, cut_from = check_text(headline, article_text, limits)
    if not image_path:
        if need_image:
            raise InputError("Upload the article's image: this model reads the picture together with the text.")
        return Item(None, headline, article_text, notes=notes, cut_from=cut_from)
    path = Path(image_path)
    if not path.is_file():
        raise InputError("The uploaded image could not be read; upload it again.")
    if path.stat().st_size > limits.max_image_bytes:
        raise InputError(f"The image is {_size(path.stat().st_size)}; the limit is {_size(limits.max_image_bytes)}.")
    return Item(read_image(path.read_bytes(), limits), headline, article_text, image_path=str(path), notes=notes,
                cut_from=cut_from)


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
    # A long article is cut, not refused, and the answer says so beside the label.
    headline, article_text = extracted.headline[: limits.max_headline_chars], extracted.text[: limits.max_article_chars]
    cut_from = len(extracted.text) if len(extracted.text) > limits.max_article_chars else None
    if not classifier_text(headline, article_text):
        raise InputError("No article text was found on that page. Paste the text instead.")
    check_prose(classifier_text(headline, article_text))
    if image_path:
        image = item_from_upload(image_path, headline, article_text, limits).image
        return Item(image, headline, article_text, extracted.url, image_path=str(image_path), cut_from=cut_from)
    image = read_image(fetched.image, limits) if fetched.image else None
    return Item(image, headline, article_text, extracted.url, fetched.image_url, cut_from=cut_from)
