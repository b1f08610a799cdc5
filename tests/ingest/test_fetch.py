"""The fetcher: address safety, schemes, retries, limits, per-host concurrency; fetch_article."""

from __future__ import annotations

import asyncio
import gzip
import time

import pytest

from tests.fakes.web_server import Page
from tests.ingest import site
from vilbias.ingest import net
from vilbias.ingest.item import fetch_article
from vilbias.ingest.net import Fetcher, FetchFailed, FetchSettings, is_public_address


def _run(coro):
    return asyncio.run(coro)


async def _get(url: str, settings: FetchSettings, **kw):
    async with Fetcher(settings) as f:
        return await f.get(url, **kw)


@pytest.mark.parametrize(
    "address, public",
    [("127.0.0.1", False), ("10.1.2.3", False), ("192.168.0.5", False), ("172.16.9.9", False),
     ("169.254.169.254", False), ("::1", False), ("fe80::1", False), ("::ffff:127.0.0.1", False),
     ("100.64.0.1", False), ("0.0.0.0", False), ("224.0.0.1", False), ("93.184.216.34", True),
     ("2606:4700::1111", True)],
)
def test_is_public_address(address, public):
    assert is_public_address(address) is public


def test_private_addresses_refused_by_default(web):
    web.add("*", "/a", Page("hello"))
    literal = f"http://127.0.0.1:{web.port}/a"
    with pytest.raises(FetchFailed) as e:
        _run(_get(literal, FetchSettings(ignore_robots=True)))
    assert e.value.reason == "blocked_address"
    # a host name that resolves to loopback is refused too (DNS checked before connecting)
    with pytest.raises(FetchFailed) as e:
        _run(_get(web.url("innocent.test", "/a"), FetchSettings(ignore_robots=True, resolver=web.resolver)))
    assert e.value.reason == "blocked_address"
    assert web.requests == []
    # ... and allowed when asked
    assert _run(_get(literal, FetchSettings(ignore_robots=True, allow_private_addresses=True))).content == b"hello"


def test_redirect_to_a_private_address_is_refused(web, monkeypatch):
    # Pretend the test server's loopback address is public, so only the redirect target is private.
    monkeypatch.setattr(net, "is_public_address", lambda a: a == "127.0.0.1")
    web.add("public.test", "/go", Page(status=302, headers={"Location": "http://internal.test/secret"}))
    resolver = {"public.test": ["127.0.0.1"], "internal.test": ["10.0.0.7"]}.__getitem__
    with pytest.raises(FetchFailed) as e:
        _run(_get(web.url("public.test", "/go"), FetchSettings(ignore_robots=True, resolver=resolver)))
    assert e.value.reason == "blocked_address" and "10.0.0.7" in e.value.detail
    web.add("public.test", "/file", Page(status=302, headers={"Location": "file:///etc/passwd"}))
    with pytest.raises(FetchFailed) as e:
        _run(_get(web.url("public.test", "/file"), FetchSettings(ignore_robots=True, resolver=resolver)))
    assert e.value.reason == "bad_scheme"


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/a", "gopher://x/", "javascript:alert(1)"])
def test_only_http_and_https(url):
    with pytest.raises(FetchFailed) as e:
        _run(_get(url, FetchSettings(ignore_robots=True)))
    assert e.value.reason == "bad_scheme"


def _fast(web, **kw) -> FetchSettings:
    return FetchSettings(ignore_robots=True, allow_private_addresses=True, resolver=web.resolver, backoff=0.01,
                         timeout=kw.pop("timeout", 1.0), rate=0, **kw)


def test_retries_on_5xx_then_succeeds_and_gives_up(web):
    web.add("h.test", "/x", [Page(status=503), Page(status=502), Page("fine")])
    assert _run(_get(web.url("h.test", "/x"), _fast(web, max_retries=2))).content == b"fine"
    web.add("h.test", "/y", Page(status=500))
    with pytest.raises(FetchFailed) as e:
        _run(_get(web.url("h.test", "/y"), _fast(web, max_retries=2)))
    assert (e.value.reason, e.value.retryable) == ("http_500", True)
    assert len(web.requests_to("h.test", "/y")) == 3
    web.add("h.test", "/z", Page(status=404))
    with pytest.raises(FetchFailed) as e:
        _run(_get(web.url("h.test", "/z"), _fast(web, max_retries=2)))
    assert (e.value.reason, e.value.retryable) == ("http_404", False)
    assert len(web.requests_to("h.test", "/z")) == 1  # a 404 is not retried


def test_retry_after_too_long_fails_retryable(web):
    web.add("h.test", "/busy", Page(status=429, headers={"Retry-After": "3600"}))
    with pytest.raises(FetchFailed) as e:
        _run(_get(web.url("h.test", "/busy"), _fast(web, max_retries=3, max_retry_after=5)))
    assert (e.value.reason, e.value.retryable) == ("http_429", True)
    assert len(web.requests_to("h.test", "/busy")) == 1


def test_connection_drop_mid_body_is_retried(web):
    web.add("h.test", "/d", [Page("x" * 10000, drop_mid_body=True), Page("whole")])
    assert _run(_get(web.url("h.test", "/d"), _fast(web, max_retries=1))).content == b"whole"


def test_slow_drip_hits_the_overall_deadline(web):
    # Each chunk arrives within the read timeout, but the whole body would take 4 s.
    web.add("h.test", "/drip", Page("y" * 8 * 1024, drip=0.5))
    t0 = time.monotonic()
    with pytest.raises(FetchFailed) as e:
        _run(_get(web.url("h.test", "/drip"), _fast(web, timeout=0.6, max_retries=0)))
    assert e.value.reason == "timeout"
    assert time.monotonic() - t0 < 3


def test_size_limits_cut_off_declared_and_streamed_and_gzip(web):
    web.add("h.test", "/big", Page(b"z" * 200_000))
    with pytest.raises(FetchFailed) as e:
        _run(_get(web.url("h.test", "/big"), _fast(web, max_page_bytes=100_000)))
    assert e.value.reason == "too_large"
    # gzip: 50 MB of zeros compress to ~50 KB; the cap applies to the decoded bytes
    bomb = gzip.compress(b"\0" * 50_000_000)
    web.add("h.test", "/gz", Page(bomb, headers={"Content-Encoding": "gzip"}))
    with pytest.raises(FetchFailed) as e:
        _run(_get(web.url("h.test", "/gz"), _fast(web, max_page_bytes=1_000_000)))
    assert e.value.reason == "too_large"


def test_per_host_concurrency_and_rate(web):
    web.latency = 0.05
    for i in range(12):
        web.add("a.test", f"/{i}", Page("a"))
        web.add("b.test", f"/{i}", Page("b"))

    async def many():
        async with Fetcher(_fast(web, per_host=3)) as f:
            await asyncio.gather(*(f.get(web.url(h, f"/{i}")) for h in ("a.test", "b.test") for i in range(12)))

    _run(many())
    assert web.max_in_flight["a.test"] == 3 and web.max_in_flight["b.test"] == 3

    web.add("c.test", "/r", Page("c"))

    async def rated():
        async with Fetcher(FetchSettings(ignore_robots=True, allow_private_addresses=True, resolver=web.resolver, rate=20, per_host=8)) as f:
            await asyncio.gather(*(f.get(web.url("c.test", "/r")) for _ in range(6)))

    _run(rated())
    starts = web.starts["c.test"]
    assert len(starts) == 6 and starts[-1] - starts[0] >= 5 * 0.05 * 0.9  # 20/s: 50 ms apart


def test_fetch_article_for_a_single_url(web):
    web.add("one.test", "/story", Page(site.og_page("Single", site.paragraphs(5), web.url("img.test", "/1.jpg"))))
    got = _run(fetch_article(web.url("one.test", "/story"), settings=FetchSettings(allow_private_addresses=True, resolver=web.resolver)))
    assert got.headline == "Single" and got.page_kind == "article"
    assert got.images[0].url == web.url("img.test", "/1.jpg")
    with pytest.raises(FetchFailed) as e:
        _run(fetch_article(f"http://127.0.0.1:{web.port}/story"))
    assert e.value.reason == "blocked_address"


def test_robots_txt_rules_and_outages(web):
    settings = FetchSettings(allow_private_addresses=True, resolver=web.resolver, backoff=0.01, max_retries=1, rate=0)
    web.add("r.test", "/robots.txt", Page("User-agent: *\nDisallow: /\n\nUser-agent: vilbias\nAllow: /news/\nDisallow: /\n", content_type="text/plain"))
    web.add("r.test", "/news/a", Page("ok"))
    assert _run(_get(web.url("r.test", "/news/a"), settings)).content == b"ok"
    with pytest.raises(FetchFailed) as e:
        _run(_get(web.url("r.test", "/admin"), settings))
    assert e.value.reason == "robots_disallowed"
    # robots.txt answering 5xx means "disallow for now" (RFC 9309), retryable on a later run
    web.add("down.test", "/robots.txt", Page(status=503))
    web.add("down.test", "/a", Page("never"))
    with pytest.raises(FetchFailed) as e:
        _run(_get(web.url("down.test", "/a"), settings))
    assert (e.value.reason, e.value.retryable) == ("robots_unavailable", True)
    assert web.requests_to("down.test", "/a") == []

    async def twice():  # fetched once per origin per Fetcher
        async with Fetcher(settings) as f:
            await f.get(web.url("r.test", "/news/a"))
            await f.get(web.url("r.test", "/news/a"))

    before = len(web.requests_to("r.test", "/robots.txt"))
    _run(twice())
    assert len(web.requests_to("r.test", "/robots.txt")) == before + 1
