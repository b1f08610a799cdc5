"""Ingestion: news feeds to article–image pairs in a workdir (DESIGN §1, §3, §8).

``vilbias ingest --feed URL --workdir DIR`` or, from Python, :func:`ingest` with an
:class:`IngestConfig`. :func:`extract_article` and :func:`fetch_article` are the reusable
pieces (the Space fetches a single article with them). See ``docs/ingest.md``.
"""

from vilbias.ingest.extract import Extracted, ImageCandidate, extract_article
from vilbias.ingest.net import Fetcher, FetchFailed, FetchSettings, fetch_article, fetch_image
from vilbias.ingest.pipeline import IngestConfig, IngestSummary, ingest, ingest_async
from vilbias.ingest.urls import canonicalize_url

__all__ = [
    "Extracted",
    "FetchFailed",
    "FetchSettings",
    "Fetcher",
    "ImageCandidate",
    "IngestConfig",
    "IngestSummary",
    "canonicalize_url",
    "extract_article",
    "fetch_article",
    "fetch_image",
    "ingest",
    "ingest_async",
]
