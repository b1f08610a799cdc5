"""Fixtures for the ingest tests: a loopback web server and an ingest config bound to it."""

from __future__ import annotations

import pytest

from tests.fakes.web_server import WebServer
from vilbias.ingest import FetchSettings, IngestConfig


@pytest.fixture
def web():
    with WebServer() as server:
        yield server


@pytest.fixture
def make_config(web, tmp_path):
    """An IngestConfig for the fake web: fast retries, short timeouts, no progress bars.
    ``fetch`` overrides fields of its FetchSettings, other keywords fields of the config."""

    def make(*feeds: str, fetch: dict | None = None, **overrides) -> IngestConfig:
        fetch_settings = FetchSettings(
            allow_private_addresses=True, resolver=web.resolver, timeout=0.5, max_retries=1, backoff=0.01, rate=0.0,
            **(fetch or {}),
        )
        settings = dict(workdir=tmp_path / "work", feed=list(feeds), progress=False, fetch=fetch_settings)
        settings.update(overrides)
        return IngestConfig(**settings)

    return make
