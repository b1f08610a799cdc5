"""Ingestion: news feeds to article–image pairs in a workdir.

``vilbias ingest --feed URL --workdir DIR`` or, from Python, :func:`ingest` with an
:class:`IngestConfig` (its ``fetch`` field a :class:`FetchSettings`). For a single article,
:func:`fetch_item` fetches a URL and its first image exactly as the stage would (the Space uses
it) and raises :class:`ItemFetchError` with a message for the user. :func:`extract_article` is
the pure extractor both use. See ``docs/ingest.md``.
"""

import importlib

# name -> the module defining it, loaded on first use: `vilbias ingest --help` parses IngestConfig
# (vilbias.ingest.config) without importing the fetcher's httpx.
_EXPORTS = {
    "Extracted": "extract", "extract_article": "extract",
    "FetchedItem": "item", "ItemFetchError": "item", "fetch_article": "item", "fetch_image": "item",
    "fetch_item": "item", "fetch_item_async": "item",
    "Fetcher": "net", "FetchFailed": "net",
    "FetchSettings": "config", "IngestConfig": "config",
    "ImageCandidate": "page_images",
    "IngestSummary": "pipeline", "ingest": "pipeline", "ingest_async": "pipeline",
    "canonicalize_url": "urls", "is_http_url": "urls",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"vilbias.ingest.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
