"""Serve the real pages of ../shared/data/news to the ingest stage, offline.

Each page is served byte for byte by the loopback web server under its original host and path
and listed in a feed; the real pipeline (:func:`vilbias.ingest.ingest`) reads the feed, fetches,
extracts, filters and stores. The pages' images live on their real hosts, which a test cannot
reach, so :class:`LoopbackFetcher` sends every request to the loopback server: pages to their
own host and path, images to one route that answers a JPEG made for that image's URL. Which
image an article gets is then decided by the extractor's order of candidates alone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import zlib
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import pytest

from tests.fakes.web_server import Page, Request, WebServer
from tests.ingest import site
from vilbias.ingest import FetchSettings, IngestConfig, IngestSummary, ingest, pipeline
from vilbias.ingest.net import Fetcher, Response

IMAGES_HOST = "images.test"
FEEDS_HOST = "feeds.test"


class LoopbackFetcher(Fetcher):
    """A :class:`Fetcher` whose requests all go to the loopback server on ``port``."""

    def __init__(self, settings: FetchSettings | None = None, *, port: int):
        super().__init__(settings)
        self.port = port

    async def get(self, url: str, *, kind: str = "page", accept: str | None = None, form=None) -> Response:
        parts = urlsplit(url)
        if kind == "image":
            local = f"http://{IMAGES_HOST}:{self.port}/image?{urlencode({'src': url})}"
        else:
            local = urlunsplit(("http", f"{parts.hostname}:{self.port}", parts.path or "/", parts.query, ""))
        response = await super().get(local, kind=kind, accept=accept, form=form)
        return dataclasses.replace(response, url=url)


def image_for(url: str) -> bytes:
    """The JPEG the loopback server answers for the image at ``url`` (distinct per URL)."""
    return site.jpeg(320, 200, seed=zlib.crc32(url.encode()) % 997)


def _image_route(request: Request) -> Page:
    return Page(image_for(parse_qs(urlsplit(request.target).query)["src"][0]), content_type="image/jpeg")


@contextlib.contextmanager
def serving(pages: dict[str, Path]):
    """Serve ``{original URL: saved page}`` and a feed listing them; yields ``(web, feed_url)``."""
    with WebServer() as web:
        for url, path in pages.items():
            parts = urlsplit(url)
            web.add(parts.hostname, parts.path or "/", Page(path.read_bytes(), content_type="text/html"))
        web.add(IMAGES_HOST, "/image", _image_route)
        feed = web.add(FEEDS_HOST, "/news.xml", Page(site.rss([{"link": u} for u in pages]), content_type="application/rss+xml"))
        yield web, feed


def ingest_pages(pages: dict[str, Path], workdir: Path, **config) -> IngestSummary:
    """Run the ingest stage over ``pages`` (see the module docstring)."""
    with serving(pages) as (web, feed), pytest.MonkeyPatch.context() as mp:
        mp.setattr(pipeline, "Fetcher", functools.partial(LoopbackFetcher, port=web.port))
        fetch = FetchSettings(allow_private_addresses=True, resolver=web.resolver, rate=0, max_retries=0, timeout=10)
        return ingest(IngestConfig(workdir=workdir, feed=[feed], progress=False, fetch=fetch, **config))
