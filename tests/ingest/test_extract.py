"""Pure parts of ingestion: URL canonicalisation, extraction, sentences, feeds, content hashes."""

from __future__ import annotations

import pytest

from tests.ingest import site
from vilbias.ingest.extract import (
    content_hash,
    count_sentences,
    decode_html,
    extract_article,
    split_sentences,
)
from vilbias.ingest.feeds import (
    FeedError,
    _parse_batchexecute,
    decode_google_news_id,
    is_google_news_link,
    parse_feed,
)
from vilbias.ingest.urls import canonicalize_url, strip_amp


@pytest.mark.parametrize(
    "url, canonical",
    [
        ("HTTPS://WWW.Example.COM:443/News/Story.html?utm_source=x&utm_medium=y#top", "https://www.example.com/News/Story.html"),
        ("http://example.com/a?id=7&fbclid=abc&gclid=def&b=2", "http://example.com/a?b=2&id=7"),
        ("https://example.com/a/amp", "https://example.com/a"),
        ("https://example.com/amp/world/a", "https://example.com/world/a"),
        ("https://example.com/world/a.amp.html", "https://example.com/world/a.html"),
        ("https://amp.example.com/world/a", "https://example.com/world/a"),
        ("https://www-example-com.cdn.ampproject.org/c/s/www.example.com/world/a", "https://www.example.com/world/a"),
        ("http://example.com:8080/x/index.html", "http://example.com:8080/x/"),
        ("http://user:pw@example.com//a//b", "http://example.com/a/b"),
        ("https://example.com/a?outputType=amp&page=2", "https://example.com/a?page=2"),
    ],
)
def test_canonicalize_url(url, canonical):
    assert canonicalize_url(url) == canonical


def test_canonicalize_rejects_non_http():
    with pytest.raises(ValueError, match="http"):
        canonicalize_url("ftp://example.com/a")
    assert strip_amp("https://amp.com/x") == "https://amp.com/x"


def test_sentence_splitter_survives_abbreviations():
    text = "Dr. Smith met Mr. Jones in the U.S. on Jan. 5 at 3.5 p.m. and left. Prices rose 2.5 percent.\nNew paragraph here"
    assert split_sentences(text) == [
        "Dr. Smith met Mr. Jones in the U.S. on Jan. 5 at 3.5 p.m. and left.",
        "Prices rose 2.5 percent.",
        "New paragraph here",
    ]
    assert count_sentences("\n".join(site.paragraphs(1, n_sentences=24))) == 24
    assert count_sentences("\n".join(site.paragraphs(1, n_sentences=24)), stop_at=20) in range(20, 25)


def test_decode_html_charsets():
    assert decode_html("<meta charset='windows-1252'>café".encode("cp1252")) == "<meta charset='windows-1252'>café"
    assert decode_html("é".encode()) == "é"
    assert decode_html("é".encode("latin-1"), "iso-8859-1") == "é"
    assert decode_html(b"\xff\xfe\x00bad") != ""  # never raises
    assert decode_html("café".encode("cp1252"), "no-such-charset") == "café"  # falls back


def test_extract_lazy_srcset_and_chrome_images():
    html = f"""<html><head><meta property="og:type" content="article"><meta property="og:image" content="/og.jpg">
    <link rel="canonical" href="/canon?utm_campaign=z"></head><body>
    <div class="author-box"><img src="/people/jane.jpg" alt="Jane"></div>
    <article><div class="social-share"><img src="/s/share.png"></div>
    <img src="/img/logo-main.png"><img src="/tracking/1x1.gif"><img src="/chart.svg">
    <img data-srcset="/p/small.jpg 320w, /p/large.jpg 1600w, /p/mid.jpg 800w" title="Title caption">
    {''.join(f'<p>{p}</p>' for p in site.paragraphs(2))}</article></body></html>"""
    got = extract_article(html, "http://ex.test/path/story?utm_source=a")
    assert got.url == "http://ex.test/canon"
    assert [(c.url, c.caption, c.origin) for c in got.images] == [
        ("http://ex.test/p/large.jpg", "Title caption", "article"),
        ("http://ex.test/og.jpg", "", "og:image"),
    ]


def test_extract_multimedia_and_non_article_pages():
    paras = site.paragraphs(3)
    cases = {
        "http://ex.test/video/clip": ("multimedia", "video"),
        "http://ex.test/news/in-pictures/week": ("multimedia", "gallery"),
        "http://ex.test/world/live/2026/nov/20/updates": ("multimedia", "live_blog"),
        "http://ex.test/podcasts/daily/ep1": ("multimedia", "podcast"),
        "http://ex.test/slideshow/city": ("multimedia", "slideshow"),
        "http://ex.test/": ("non_article", "home_page"),
    }
    for url, expected in cases.items():
        got = extract_article(site.og_page("A title", paras, "http://ex.test/i.jpg"), url)
        assert (got.page_kind, got.kind_detail) == expected, url
    assert extract_article(site.og_page("Video: the flood", paras, "/i.jpg"), "http://ex.test/a").page_kind == "multimedia"
    ld_live = site.jsonld_page("Live", paras, "/i.jpg", url="http://ex.test/a", ld_type="LiveBlogPosting")
    assert extract_article(ld_live, "http://ex.test/a").kind_detail == "live_blog"
    assert extract_article("<html><body><nav>menu</nav></body></html>", "http://ex.test/a").page_kind == "non_article"
    assert extract_article(site.og_page("A title", paras, "/i.jpg"), "http://ex.test/a").page_kind == "article"


def test_extract_malformed_json_ld_and_broken_html():
    html = """<html><head><script type="application/ld+json">{"@type": "NewsArticle", "headline": "Fixed", "datePublished": "2026-01-02",}</script>
    <script type="application/ld+json">{not json</script></head><body><article><p>""" + " ".join(site.paragraphs(4)) + "</p><div><p>unclosed"
    got = extract_article(html, "http://ex.test/a")
    assert (got.headline, got.published) == ("Fixed", "2026-01-02T00:00:00")


def test_content_hash_catches_syndicated_copies():
    paras = site.paragraphs(6)
    original = "\n".join(paras)
    copy = "\n".join(["By The Associated Press", *[p.upper() for p in paras], "Copyright 2026 AP."])
    assert content_hash(original) == content_hash(copy)
    assert content_hash(original) != content_hash("\n".join(site.paragraphs(7)))


def test_parse_rss_atom_rdf_and_garbage():
    rss = site.rss([{"link": "http://a.test/1", "title": "One", "source": "Pub"}, {"link": "javascript:x"}])
    items = parse_feed(rss.encode(), "http://f.test/rss")
    assert [(i.link, i.title, i.outlet, i.published) for i in items] == [("http://a.test/1", "One", "Pub", "2026-11-20T10:00:00+00:00")]
    atom = parse_feed(site.atom([{"link": "http://a.test/2"}]).encode(), "http://f.test/atom")
    assert [i.link for i in atom] == ["http://a.test/2"]
    rdf = b"""<?xml version="1.0"?><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/">
    <channel rdf:about="http://f.test/"><title>t</title><link>http://f.test/</link><description>d</description></channel>
    <item rdf:about="http://a.test/3"><title>Three</title><link>http://a.test/3</link></item></rdf:RDF>"""
    assert [i.link for i in parse_feed(rdf, "http://f.test/rdf")] == ["http://a.test/3"]
    rss091 = b"""<rss version="0.91"><channel><title>t</title><link>http://f.test/</link><description>d</description>
    <item><title>Four</title><link>http://a.test/4</link></item></channel></rss>"""
    assert [i.link for i in parse_feed(rss091, "http://f.test/091")] == ["http://a.test/4"]
    with pytest.raises(FeedError):
        parse_feed(b"\x00\x01 this is not a feed <<<", "http://f.test/bad")
    with pytest.raises(FeedError):
        parse_feed(b"<html><body>Just a page</body></html>", "http://f.test/html")


def test_google_news_ids():
    url = "https://www.example.com/2026/11/20/story.html"
    assert decode_google_news_id(site.google_news_id(url)) == url
    assert decode_google_news_id("CBMiQUFVX3lxTE5ld1N0eWxlSWQ") is None
    assert is_google_news_link("https://news.google.com/rss/articles/CBMiX?oc=5")
    assert not is_google_news_link("https://news.google.com/rss/search?q=x")
    body = ')]}\'\n\n[["wrb.fr","Fbv4je","[\\"garturlres\\",\\"https://pub.example/a\\",1]",null,null,null,"generic"]]'
    assert _parse_batchexecute(body) == "https://pub.example/a"
    assert _parse_batchexecute(")]}'\n\n[[\"er\"]]") is None


def test_xhtml_declaration_and_prefixed_json_ld_types():
    paras = site.paragraphs(8)
    page = '<?xml version="1.0" encoding="utf-8"?>\n' + site.jsonld_page("XHTML story", paras, "http://ex.test/i.jpg", url="http://ex.test/x", ld_type="https://schema.org/NewsArticle")
    got = extract_article(page, "http://ex.test/x")
    assert (got.page_kind, got.headline, got.outlet) == ("article", "XHTML story", "JSON Times")
    assert content_hash("short\nlines") != content_hash("other\nlines")


def test_retry_after_formats():
    from email.utils import formatdate

    from vilbias.ingest.net import _retry_after_seconds

    assert _retry_after_seconds("7") == 7.0
    assert 25 <= _retry_after_seconds(formatdate(__import__("time").time() + 30, usegmt=True)) <= 31
    assert _retry_after_seconds("soon") is None and _retry_after_seconds(None) is None


def test_outlet_guess_is_flagged():
    paras = "".join(f"<p>{p}</p>" for p in site.paragraphs(9))
    bare = f"<html><head><title>Plain</title></head><body><article><h1>Plain</h1>{paras}</article></body></html>"
    assert extract_article(bare, "http://plain.test/a").outlet_guessed is True
    assert extract_article(site.og_page("T", site.paragraphs(9), "/i.jpg"), "http://ex.test/a").outlet_guessed is False
