"""One article by URL, for callers that take a single item (the Space, a notebook).

    from vilbias.ingest import FetchSettings, ItemFetchError, fetch_item

    try:
        item = fetch_item("https://www.example.com/news/story.html", FetchSettings(timeout=10))
    except ItemFetchError as e:
        print(e)              # a sentence for the user; e.reason is a stable code
    else:
        print(item.article.headline, item.image_url, len(item.image))

The page and its image go through the ingest stage's :class:`~vilbias.ingest.net.Fetcher`
(address checks, robots.txt, size caps, timeouts) and the page is read by the same extractor, so
a single item is fetched exactly as a corpus item would be. :func:`first_usable_image` is the
image step both use.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from vilbias.images import ImageInfo, InvalidImage, validate_image
from vilbias.ingest.extract import Extracted, extract_article
from vilbias.ingest.net import Fetcher, FetchFailed, FetchSettings
from vilbias.ingest.page_images import ImageCandidate
from vilbias.ingest.text import decode_html
from vilbias.ingest.urls import host_of

PAGE_ACCEPT = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.1"
MAX_ITEM_IMAGES = 5
"""Image candidates :func:`fetch_item` tries before it gives up (someone is waiting)."""

_PAGE_KINDS = {
    "video": "a video page", "gallery": "a photo gallery", "slideshow": "a slideshow", "live_blog": "a live blog",
    "podcast": "a podcast page", "no_text": "no article text was found on it", "home_page": "it is the site's home page",
    "site_page": "it is a page about the site itself", "wiki_page": "it is a wiki entry",
    "index_page": "it lists other articles", "no_article_markup": "nothing on it reads as an article",
    "unparseable": "its HTML cannot be read",
}


class ItemFetchError(Exception):
    """An article URL could not be turned into an item. ``str(e)`` is a sentence for the user;
    ``reason`` is a stable code: a :class:`~vilbias.ingest.net.FetchFailed` reason
    (``connect_failed``, ``timeout``, ``robots_disallowed``, ``blocked_address``, ``http_404``,
    ...), ``not_html``, ``not_an_article`` or ``no_usable_image``."""

    def __init__(self, url: str, reason: str, message: str):
        super().__init__(message)
        self.url = url
        self.reason = reason


class NoUsableImage(Exception):
    """No image candidate downloaded and validated; ``reasons`` says why for each (and for each SVG
    drawing the page names, which is no candidate)."""

    def __init__(self, reasons: list[str], *, transient: bool, drawings: list[str] | None = None):
        reasons = list(reasons) + [f"{url}: an SVG drawing, not a photo" for url in drawings or []]
        super().__init__("; ".join(reasons) if reasons else "no image candidates on the page")
        self.reasons = reasons
        self.transient = transient
        """A candidate failed in a way a later try may not (timeout, 5xx)."""


@dataclass
class ImageDownload:
    candidate: ImageCandidate
    data: bytes
    """The image's original bytes."""
    info: ImageInfo


@dataclass
class FetchedItem:
    """An article page and its first usable image."""

    article: Extracted
    image: bytes | None
    """The image's original bytes; None when :func:`fetch_item` was told not to fetch it."""
    image_url: str | None
    image_caption: str = ""


async def _validate_here(data: bytes) -> ImageInfo:
    return validate_image(data)


async def first_usable_image(
    fetcher: Fetcher,
    candidates: list[ImageCandidate],
    validate: Callable[[bytes], Awaitable[ImageInfo]] = _validate_here,
    *,
    drawings: list[str] | None = None,
) -> ImageDownload:
    """Download the candidates in order and return the first that is an image
    :func:`vilbias.images.validate_image` accepts (not SVG, not text, decodes, not a pixel).

    Args:
        fetcher: The fetcher to download with.
        candidates: Best first (:attr:`Extracted.images`).
        validate: Runs the validation; the ingest stage passes one that uses its worker pool.
        drawings: SVG images the page names (:attr:`Extracted.drawings`), for the message when none passed.

    Raises:
        NoUsableImage: none passed.
    """
    reasons: list[str] = []
    transient = False
    for candidate in candidates:
        try:
            response = await fetcher.get(candidate.url, kind="image", accept="image/*")
        except FetchFailed as e:
            reasons.append(f"{candidate.url}: {e.reason}")
            transient = transient or e.retryable
            continue
        if response.content_type == "image/svg+xml" or response.content_type.startswith("text/"):
            reasons.append(f"{candidate.url}: {response.content_type}")
            continue
        try:
            info = await validate(response.content)
        except InvalidImage as e:
            reasons.append(f"{candidate.url}: {e.reason}")
            continue
        return ImageDownload(candidate, response.content, info)
    raise NoUsableImage(reasons, transient=transient, drawings=drawings)


async def fetch_article(url: str, settings: FetchSettings | None = None) -> Extracted:
    """Fetch one page with the ingest stage's checks and extract it (the image is not fetched).

    Raises:
        FetchFailed: the page could not be fetched.
    """
    async with Fetcher(settings or FetchSettings(max_retries=1)) as fetcher:
        page = await fetcher.get(url, accept=PAGE_ACCEPT)
    return extract_article(decode_html(page.content, page.charset), page.url)


async def fetch_image(url: str, settings: FetchSettings | None = None) -> bytes:
    """Download one image's bytes with the ingest stage's checks (not validated).

    Raises:
        FetchFailed: the image could not be fetched.
    """
    async with Fetcher(settings or FetchSettings(max_retries=1)) as fetcher:
        return (await fetcher.get(url, kind="image", accept="image/*")).content


def _failure_message(e: FetchFailed, settings: FetchSettings) -> str:
    host = host_of(e.url) or e.url
    messages = {
        "connect_failed": f"{host} could not be reached: the name does not resolve or the server refuses connections. Check the URL.",
        "timeout": f"{host} did not answer in time (within {settings.timeout:g} s). Try again later.",
        "connection_dropped": f"{host} closed the connection before the page arrived. Try again later.",
        "robots_disallowed": f"{host} asks crawlers not to fetch this page (its robots.txt disallows it).",
        "robots_unavailable": f"{host}'s robots.txt could not be read, and a crawler must then assume the page is off limits. Try again later.",
        "blocked_address": f"{host} points to a private or local network address, which is not fetched.",
        "bad_scheme": "The URL must start with http:// or https://.",
        "bad_url": "That is not a valid URL.",
        "too_large": f"The page at {host} is larger than {settings.max_page_bytes / 2**20:g} MiB.",
        "too_many_redirects": f"{host} redirects too many times.",
    }
    if e.reason in messages:
        return messages[e.reason]
    if e.reason.startswith("http_"):
        return f"{host} answered HTTP {e.reason[5:]} for this page."
    return f"The page at {host} could not be fetched ({e.reason})."


def _not_an_article_message(article: Extracted) -> str:
    detail = article.kind_detail
    words = _PAGE_KINDS.get(detail) or (f"it declares {detail}" if detail.startswith(("og:type", "json-ld")) else detail)
    return f"That page is not a news article ({words})."


async def fetch_item_async(url: str, settings: FetchSettings | None = None, *, image: bool = True) -> FetchedItem:
    """:func:`fetch_item` for callers already inside an event loop."""
    settings = settings or FetchSettings(max_retries=1)
    async with Fetcher(settings) as fetcher:
        try:
            page = await fetcher.get(url, accept=PAGE_ACCEPT)
        except FetchFailed as e:
            raise ItemFetchError(url, e.reason, _failure_message(e, settings)) from None
        if not page.is_html:
            raise ItemFetchError(url, "not_html", f"That URL is not a web page (it is {page.content_type}).")
        article = await asyncio.to_thread(extract_article, decode_html(page.content, page.charset), page.url)
        if article.page_kind != "article":
            raise ItemFetchError(url, "not_an_article", _not_an_article_message(article))
        if not image:
            return FetchedItem(article, None, None)
        try:
            found = await first_usable_image(fetcher, article.images[:MAX_ITEM_IMAGES], drawings=article.drawings)
        except NoUsableImage as e:
            tried = f"none of its {len(e.reasons)} image candidates is a usable photo" if e.reasons else "the page names no image"
            raise ItemFetchError(url, "no_usable_image", f"That article has no usable image ({tried}).") from None
    return FetchedItem(article, found.data, found.candidate.url, found.candidate.caption)


def fetch_item(url: str, settings: FetchSettings | None = None, *, image: bool = True) -> FetchedItem:
    """Fetch one article page and its first usable image, as the ingest stage would.

    Unlike the ingest stage, no sentence minimum applies: a short article is returned.

    Args:
        url: The article's http(s) URL.
        settings: How to fetch; default: :class:`FetchSettings` with one retry.
        image: False to skip the image (the caller has its own); ``image`` is then None.

    Returns:
        :class:`FetchedItem`.

    Raises:
        ItemFetchError: the host could not be reached, robots.txt refuses the page, the page is
            not an article, it has no usable image, ...; the message says which, for a user.
    """
    return asyncio.run(fetch_item_async(url, settings, image=image))
