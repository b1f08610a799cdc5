"""fetch_item: one article URL and its first image, or one error with a message for the user."""

from __future__ import annotations

import socket

import pytest

from tests.fakes.web_server import Page
from tests.ingest import site
from vilbias.ingest import FetchSettings, ItemFetchError, fetch_item

JPEG = "image/jpeg"


@pytest.fixture
def settings(web) -> FetchSettings:
    return FetchSettings(allow_private_addresses=True, resolver=web.resolver, timeout=1.0, max_retries=0, backoff=0.01)


def _error(url: str, settings: FetchSettings, **kw) -> ItemFetchError:
    with pytest.raises(ItemFetchError) as e:
        fetch_item(url, settings, **kw)
    return e.value


def test_an_article_and_its_first_usable_image(web, settings):
    photo = site.jpeg(seed=5)
    web.add("img.test", "/pixel.png", Page(site.png(1, 1), content_type="image/png"))
    web.add("img.test", "/lead.jpg", Page(photo, content_type=JPEG))
    page = site.og_page("Harbour plan approved", site.paragraphs(5, n_sentences=6), web.url("img.test", "/lead.jpg"),
                        body_image=web.url("img.test", "/pixel.png"), caption="A crane")
    url = web.add("news.test", "/story", Page(page))
    item = fetch_item(url, settings)
    assert (item.article.headline, item.article.page_kind) == ("Harbour plan approved", "article")
    # the 1x1 in-article image fails validation; og:image is next
    assert (item.image, item.image_url, item.image_caption) == (photo, web.url("img.test", "/lead.jpg"), "")
    before = len(web.requests)
    assert fetch_item(url, settings, image=False).image is None
    assert [r.path for r in web.requests[before:] if r.host == "img.test"] == []


def test_unreachable_hosts(web, settings):
    def no_such_host(host: str) -> list[str]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    e = _error("http://nowhere.test/story", FetchSettings(allow_private_addresses=True, resolver=no_such_host, max_retries=0))
    assert e.reason == "connect_failed" and str(e).startswith("nowhere.test could not be reached")
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there now
    e = _error(f"http://127.0.0.1:{port}/story", settings)
    assert e.reason == "connect_failed" and "could not be reached" in str(e)


def test_robots_txt_refusal(web, settings):
    web.add("polite.test", "/robots.txt", Page("User-agent: *\nDisallow: /private/\n", content_type="text/plain"))
    web.add("polite.test", "/private/story", Page(site.og_page("Secret", site.paragraphs(1), "/i.jpg")))
    e = _error(web.url("polite.test", "/private/story"), settings)
    assert (e.reason, str(e)) == (
        "robots_disallowed", "polite.test asks crawlers not to fetch this page (its robots.txt disallows it).")
    assert web.requests_to("polite.test", "/private/story") == []


def test_pages_that_are_not_articles(web, settings):
    web.add("news.test", "/", Page(site.og_page("Front page", site.paragraphs(2), "/i.jpg")))
    e = _error(web.url("news.test", "/"), settings)
    assert (e.reason, str(e)) == ("not_an_article", "That page is not a news article (it is the site's home page).")
    web.add("news.test", "/video/clip", Page(site.og_page("Clip", site.paragraphs(2), "/i.jpg", og_type="video.other")))
    assert str(_error(web.url("news.test", "/video/clip"), settings)) == "That page is not a news article (a video page)."
    web.add("news.test", "/report.pdf", Page(b"%PDF-1.4", content_type="application/pdf"))
    e = _error(web.url("news.test", "/report.pdf"), settings)
    assert (e.reason, str(e)) == ("not_html", "That URL is not a web page (it is application/pdf).")


def test_articles_without_a_usable_image(web, settings):
    web.add("news.test", "/bare", Page(site.og_page("No picture", site.paragraphs(3), "")))
    e = _error(web.url("news.test", "/bare"), settings)
    assert (e.reason, str(e)) == ("no_usable_image", "That article has no usable image (the page names no image).")
    web.add("img.test", "/broken.jpg", Page(site.jpeg()[:200], content_type=JPEG))
    web.add("news.test", "/broken", Page(site.og_page("Broken picture", site.paragraphs(4), web.url("img.test", "/broken.jpg"))))
    e = _error(web.url("news.test", "/broken"), settings)
    assert str(e) == "That article has no usable image (none of its 1 image candidates is a usable photo)."
    # without the image the article is still an item
    assert fetch_item(web.url("news.test", "/bare"), settings, image=False).article.headline == "No picture"


def test_refused_addresses_schemes_and_timeouts(web, settings):
    web.add("*", "/story", Page(site.og_page("Local", site.paragraphs(1), "/i.jpg")))
    e = _error(f"http://127.0.0.1:{web.port}/story", FetchSettings(max_retries=0))
    assert (e.reason, str(e)) == ("blocked_address", "127.0.0.1 points to a private or local network address, which is not fetched.")
    assert str(_error("ftp://example.com/story", settings)) == "The URL must start with http:// or https://."
    web.add("slow.test", "/story", Page(site.og_page("Slow", site.paragraphs(1), "/i.jpg"), delay=2.0))
    e = _error(web.url("slow.test", "/story"), FetchSettings(allow_private_addresses=True, resolver=web.resolver, timeout=0.3, max_retries=0))
    assert (e.reason, str(e)) == ("timeout", "slow.test did not answer in time (within 0.3 s). Try again later.")
    web.add("gone.test", "/story", Page(status=404))
    assert str(_error(web.url("gone.test", "/story"), settings)) == "gone.test answered HTTP 404 for this page."
