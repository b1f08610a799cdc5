"""Ingestion: news feeds to article–image pairs in a workdir.

``vilbias ingest --feed URL --workdir DIR`` or, from Python, :func:`ingest` with an
:class:`IngestConfig` (its ``fetch`` field a :class:`FetchSettings`). For a single article,
:func:`fetch_item` fetches a URL and its first image exactly as the stage would (the Space uses
it) and raises :class:`ItemFetchError` with a message for the user. :func:`extract_article` is
the pure extractor both use. See ``docs/ingest.md``.
"""

from typing import TYPE_CHECKING

from vilbias.lazy import attach

# loaded on first use: `vilbias ingest --help` parses IngestConfig (vilbias.ingest.config) without
# importing the fetcher's httpx
_import_structure = {
    "config": ["FetchSettings", "IngestConfig"],  # light
    "extract": ["Extracted", "extract_article"],
    "item": ["FetchedItem", "ItemFetchError", "fetch_article", "fetch_image", "fetch_item", "fetch_item_async"],
    "net": ["FetchFailed", "Fetcher"],  # httpx
    "page_images": ["ImageCandidate"],
    "pipeline": ["IngestSummary", "ingest", "ingest_async"],
    "urls": ["canonicalize_url", "is_http_url"],
}
__getattr__, __dir__, __all__ = attach(__name__, _import_structure)

if TYPE_CHECKING:  # the same names, for editors and type checkers (tests/test_lazy.py keeps the two equal)
    from vilbias.ingest.config import FetchSettings, IngestConfig
    from vilbias.ingest.extract import Extracted, extract_article
    from vilbias.ingest.item import (
        FetchedItem,
        ItemFetchError,
        fetch_article,
        fetch_image,
        fetch_item,
        fetch_item_async,
    )
    from vilbias.ingest.net import Fetcher, FetchFailed
    from vilbias.ingest.page_images import ImageCandidate
    from vilbias.ingest.pipeline import IngestSummary, ingest, ingest_async
    from vilbias.ingest.urls import canonicalize_url, is_http_url
