"""News feeds: parsing RSS/Atom with feedparser, and resolving Google News links.

Google News RSS items link to ``https://news.google.com/rss/articles/<id>``, not to the
publisher. :func:`resolve_google_news` turns such a link into the publisher's URL:

1. Older ids are base64 protobufs that embed the URL: decoded offline, no request.
2. Otherwise the link is requested; a redirect to the publisher ends it.
3. A Google News interstitial page names the URL in ``data-n-au`` or, for current ids, gives a
   signature and timestamp (``data-n-a-sg``/``data-n-a-ts``) that the ``batchexecute`` endpoint
   exchanges for the URL (what the page's own JavaScript does).
"""

from __future__ import annotations

import base64
import json
import logging
import re
import time
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import feedparser

from vilbias.ingest.net import Fetcher, FetchFailed
from vilbias.ingest.urls import is_http_url

logger = logging.getLogger(__name__)

GOOGLE_NEWS_HOST = "news.google.com"


@dataclass
class FeedItem:
    link: str
    """The item's link as the feed gives it (for Google News, a news.google.com link)."""
    feed_url: str
    title: str = ""
    outlet: str = ""
    """The publisher's name when the feed gives it (Google News ``<source>``)."""
    published: str | None = None


class FeedError(ValueError):
    """The bytes are not a feed feedparser can read at all."""


def _entry_link(entry) -> str:
    """The entry's http(s) link (``<link>``, else its first alternate link), or ""."""
    link = (entry.get("link") or "").strip()
    if is_http_url(link):
        return link
    for alt in entry.get("links", []):
        if alt.get("rel", "alternate") == "alternate" and is_http_url(alt.get("href", "")):
            return alt["href"].strip()
    return ""


def _feed_item(entry, link: str, feed_url: str) -> FeedItem:
    source = entry.get("source") or {}
    stamp = entry.get("published_parsed") or entry.get("updated_parsed")
    return FeedItem(
        link=link,
        feed_url=feed_url,
        title=" ".join((entry.get("title") or "").split()),
        outlet=(source.get("title") or "").strip() if isinstance(source, dict) else "",
        published=time.strftime("%Y-%m-%dT%H:%M:%S+00:00", stamp) if stamp else None,
    )


def parse_feed(data: bytes, feed_url: str, content_type: str | None = None) -> list[FeedItem]:
    """Parse RSS 0.9x/1.0/2.0 or Atom bytes into items, in feed order.

    feedparser tolerates a lot (wrong declared encodings, unescaped entities): a feed it had to
    repair still yields its items ("bozo" feeds are logged). Items without an http(s) link are
    skipped.

    Raises:
        FeedError: nothing feed-like could be read.
    """
    headers = {"content-location": feed_url}
    if content_type:
        headers["content-type"] = content_type
    parsed = feedparser.parse(data, response_headers=headers)
    if parsed.bozo and not parsed.entries:
        raise FeedError(f"{feed_url}: not a readable feed ({type(parsed.get('bozo_exception')).__name__})")
    if parsed.bozo:
        logger.info("%s: feed is malformed but readable (%s)", feed_url, parsed.get("bozo_exception"))
    if not parsed.version and not parsed.entries:
        raise FeedError(f"{feed_url}: not an RSS or Atom feed")
    items = []
    for entry in parsed.entries:
        link = _entry_link(entry)
        if link:
            items.append(_feed_item(entry, link, feed_url))
        else:
            logger.debug("%s: skipping an item without an http(s) link", feed_url)
    return items


def is_google_news_link(url: str) -> bool:
    parts = urlsplit(url)
    return (parts.hostname or "").lower() == GOOGLE_NEWS_HOST and bool(
        re.match(r"^(/rss)?/(articles|read)/", parts.path)
    )


def _google_news_id(url: str) -> str:
    return urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1]


def decode_google_news_id(article_id: str) -> str | None:
    """The publisher URL embedded in an older Google News article id, or None.

    Those ids are url-safe base64 of a small protobuf: ``08 13 22 <varint length> <url>``.
    Current ids (which decode to ``AU_yqL...``) carry no URL and return None.
    """
    try:
        raw = base64.urlsafe_b64decode(article_id + "=" * (-len(article_id) % 4))
    except (ValueError, TypeError):
        return None
    if raw.startswith(b"\x08\x13\x22"):
        raw = raw[3:]
        length, shift, i = 0, 0, 0
        while i < len(raw):
            byte = raw[i]
            length |= (byte & 0x7F) << shift
            i += 1
            if not byte & 0x80:
                break
            shift += 7
        candidate = raw[i : i + length]
        if candidate.startswith(b"AU_yqL"):
            return None
        try:
            url = candidate.decode("utf-8")
        except UnicodeDecodeError:
            return None
        return url if is_http_url(url) else None
    return None


async def resolve_google_news(url: str, fetcher: Fetcher) -> str:
    """The publisher's URL behind a Google News item link (see the module docstring).

    Raises:
        FetchFailed: with reason ``google_news_unresolved`` when no URL could be found.
    """
    article_id = _google_news_id(url)
    decoded = decode_google_news_id(article_id)
    if decoded:
        return decoded
    parts = urlsplit(url)
    page_url = urlunsplit((parts.scheme, parts.netloc, f"/rss/articles/{article_id}", "", ""))
    page = await fetcher.get(page_url, accept="text/html")
    if not is_google_news_link(page.url) and (urlsplit(page.url).hostname or "").lower() != GOOGLE_NEWS_HOST:
        return page.url  # redirected to the publisher
    html = page.content.decode("utf-8", "replace")
    m = re.search(r'data-n-au="([^"]+)"', html)
    if m and is_http_url(m.group(1)):
        return m.group(1).replace("&amp;", "&")
    sg = re.search(r'data-n-a-sg="([^"]+)"', html)
    ts = re.search(r'data-n-a-ts="([^"]+)"', html)
    if sg and ts:
        inner = json.dumps(
            ["garturlreq", [["X", "X", ["X", "X"], None, None, 1, 1, "US:en", None, 1, None, None, None, None, None, 0, 1],
                            "X", "X", 1, [1, 1, 1], 1, 1, None, 0, 0, None, 0],
             article_id, int(ts.group(1)), sg.group(1)],
            separators=(",", ":"),
        )
        payload = json.dumps([[["Fbv4je", inner, None, "generic"]]], separators=(",", ":"))
        endpoint = urlunsplit((parts.scheme, parts.netloc, "/_/DotsSplashUi/data/batchexecute", "", ""))
        response = await fetcher.get(endpoint, form={"f.req": payload}, accept="*/*")
        resolved = _parse_batchexecute(response.content.decode("utf-8", "replace"))
        if resolved:
            return resolved
    raise FetchFailed(url, "google_news_unresolved", "no publisher URL in the Google News page")


def _parse_batchexecute(body: str) -> str | None:
    """Pull the URL out of a ``garturlres`` answer (``)]}'`` prefix, then nested JSON)."""
    for line in body.splitlines():
        line = line.strip()
        if not line.startswith("[["):
            continue
        try:
            outer = json.loads(line)
        except json.JSONDecodeError:
            continue
        for row in outer:
            if isinstance(row, list) and len(row) > 2 and row[0] == "wrb.fr" and isinstance(row[2], str):
                try:
                    inner = json.loads(row[2])
                except json.JSONDecodeError:
                    continue
                if isinstance(inner, list) and len(inner) > 1 and inner[0] == "garturlres" and is_http_url(str(inner[1])):
                    return str(inner[1])
    return None
