"""Ingestion: news feeds to article–image pairs in a workdir.

``vilbias ingest --feed URL --workdir DIR`` or, from Python, :func:`ingest` with an
:class:`IngestConfig` (its ``fetch`` field a :class:`FetchSettings`). For a single article,
:func:`fetch_item` fetches a URL and its first image exactly as the stage would (the Space uses
it) and raises :class:`ItemFetchError` with a message for the user. :func:`extract_article` is
the pure extractor both use. See ``docs/ingest.md``.
"""

from vilbias.ingest.extract import Extracted, extract_article
from vilbias.ingest.item import (
    FetchedItem,
    ItemFetchError,
    fetch_article,
    fetch_image,
    fetch_item,
    fetch_item_async,
)
from vilbias.ingest.net import Fetcher, FetchFailed, FetchSettings
from vilbias.ingest.page_images import ImageCandidate
from vilbias.ingest.pipeline import IngestConfig, IngestSummary, ingest, ingest_async
from vilbias.ingest.urls import canonicalize_url, is_http_url

__all__ = [
    "Extracted",
    "FetchFailed",
    "FetchSettings",
    "FetchedItem",
    "Fetcher",
    "ImageCandidate",
    "IngestConfig",
    "IngestSummary",
    "ItemFetchError",
    "canonicalize_url",
    "extract_article",
    "fetch_article",
    "fetch_image",
    "fetch_item",
    "fetch_item_async",
    "ingest",
    "ingest_async",
    "is_http_url",
]
