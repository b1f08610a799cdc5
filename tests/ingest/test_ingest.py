"""End-to-end ingest against the loopback web: CMS styles, failures, duplicates, resumption."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time

import pytest

from tests.fakes.web_server import Page, Request
from tests.ingest import site
from vilbias.ingest import IngestConfig, ingest
from vilbias.workdir import read_articles, read_jsonl

JPEG = "image/jpeg"


def _lines(path):
    return list(read_jsonl(path)) if path.exists() else []


@pytest.fixture
def news(web):
    """A small news web: one RSS feed, one Atom feed, one malformed Latin-1 feed, one dead feed."""
    u = web.url
    img = {i: site.jpeg(seed=i) for i in range(1, 12)}
    for i, data in img.items():
        web.add("img.test", f"/{i}.jpg", Page(data, content_type=JPEG))
    web.add("img.test", "/first.png", Page(site.png(1, 1), content_type="image/png"))
    web.add("img.test", "/corrupt.jpg", Page(img[1][: len(img[1]) // 2], content_type=JPEG))
    web.add("img.test", "/bomb.png", Page(site.png_bomb(), content_type="image/png"))
    web.add("img.test", "/chart.svg", Page("<svg xmlns='http://www.w3.org/2000/svg'/>", content_type="image/svg+xml"))

    p1 = site.paragraphs(1)
    # 1 og tags only, linked with tracking parameters
    web.add("news-a.test", "/2026/11/budget.html", Page(site.og_page("Budget row deepens", p1, u("img.test", "/1.jpg"))))
    # 2 JSON-LD only
    web.add("json.test", "/story/2", Page(site.jsonld_page("Election night", site.paragraphs(2), u("img.test", "/2.jpg"), url=u("json.test", "/story/2"))))
    # 3 figure/picture with a lazy image, og:image is a different picture
    web.add("fig.test", "/world/3", Page(site.figure_page("Harbour expands", site.paragraphs(3), u("img.test", "/3.jpg"), "Cranes at dawn. Photo: A. Smith", og_image=u("img.test", "/9.jpg"))))
    # 4 AMP copy naming its canonical URL
    web.add("amp.test", "/news/4/amp", Page(site.amp_page("Vaccine trial", site.paragraphs(4), u("img.test", "/4.jpg"), canonical=u("amp.test", "/news/4"))))
    # 5 redirect to the article
    web.add("news-a.test", "/r/5", Page(status=301, headers={"Location": "/2026/11/strike.html"}))
    web.add("news-a.test", "/2026/11/strike.html", Page(site.og_page("Rail strike", site.paragraphs(5), u("img.test", "/5.jpg"))))
    # 7 syndicated copy of 1 with a byline
    web.add("synd.test", "/copy/7", Page(site.og_page("Budget row deepens (AP)", ["By The Associated Press", *p1], u("img.test", "/1.jpg"), site="Syndicator")))
    # 8 too short
    web.add("news-a.test", "/short", Page(site.og_page("Brief", site.paragraphs(8, n_sentences=6), u("img.test", "/8.jpg"))))
    # 9 video page
    web.add("news-a.test", "/video/9", Page(site.og_page("Watch: harbour", site.paragraphs(9), u("img.test", "/9.jpg"), og_type="video.other")))
    # 10 not an article: a section front (six teasers, each its own <article>), og:type website as on every page of the site
    teasers = "".join(f"<article><h2><a href='/2026/11/t{i}.html'>Teaser {i}</a></h2><p>{site.paragraphs(10 + i)[0]}</p></article>"
                      for i in range(6))
    web.add("news-a.test", "/section/politics", Page(f"<html><head><meta property='og:type' content='website'><title>Politics | Daily "
                                                    f"Example</title></head><body><h1>Politics</h1>{teasers}</body></html>"))
    # 11 first image a 1x1 pixel (neither its name nor its markup says so), then SVG charts (by name, by type), then
    # a real photo (og:image)
    web.add("img.test", "/chart", Page("<svg xmlns='http://www.w3.org/2000/svg'/>", content_type="image/svg+xml"))
    svgs = f'<img src="{u("img.test", "/chart.svg")}"><img src="{u("img.test", "/chart")}">'
    web.add("news-a.test", "/pixel-first", Page(site.og_page("Drought deepens", site.paragraphs(11), u("img.test", "/11.jpg"), body_image=u("img.test", "/first.png"), body_html=svgs, extra_head='<meta property="og:image:alt" content="Dry riverbed">')))
    # 12 corrupt and bomb images only
    web.add("news-a.test", "/bad-images", Page(site.og_page("Tariffs", site.paragraphs(12), u("img.test", "/bomb.png"), body_image=u("img.test", "/corrupt.jpg"))))
    # failures
    web.add("err.test", "/gone", Page(status=404, body="gone"))
    web.add("err.test", "/broken", Page(status=500, body="oops"))
    web.add("err.test", "/slow", Page(site.og_page("Slow", site.paragraphs(13), u("img.test", "/1.jpg")), drip=1.0))
    web.add("err.test", "/huge", Page(b"<html><body>" + b"x" * (6 * 1024 * 1024) + b"</body></html>"))
    web.add("err.test", "/pdf", Page(b"%PDF-1.4", content_type="application/pdf"))
    web.add("flaky.test", "/rate", [Page(status=429, headers={"Retry-After": "1"}), Page(site.og_page("Rate limited", site.paragraphs(14), u("img.test", "/6.jpg")))])
    web.add("flaky.test", "/drop", [Page(drop=True), Page(site.og_page("Dropped once", site.paragraphs(15), u("img.test", "/7.jpg")))])
    # non-UTF-8 page, charset only in <meta>
    latin = site.og_page("Café owners protest", ["Le café était fermé, déclare Mme. Dupont."] + site.paragraphs(16), u("img.test", "/10.jpg"))
    latin = latin.replace('<meta charset="utf-8">', '<meta charset="windows-1252">')
    web.add("latin.test", "/cafe", Page(latin.encode("cp1252"), content_type="text/html"))

    rss_items = [
        {"link": u("news-a.test", "/2026/11/budget.html?utm_source=rss&utm_medium=feed")},
        {"link": u("json.test", "/story/2")},
        {"link": u("fig.test", "/world/3")},
        {"link": u("amp.test", "/news/4/amp")},
        {"link": u("news-a.test", "/r/5")},
        {"link": u("NEWS-A.test", "/2026/11/budget.html?fbclid=abc#comments")},
        {"link": u("synd.test", "/copy/7")},
        {"link": u("news-a.test", "/short")},
        {"link": u("news-a.test", "/video/9")},
        {"link": u("news-a.test", "/section/politics")},
        {"link": u("news-a.test", "/pixel-first")},
        {"link": u("news-a.test", "/bad-images")},
    ]
    atom_entries = [{"link": u("err.test", p)} for p in ("/gone", "/broken", "/slow", "/huge", "/pdf")]
    atom_entries += [{"link": u("flaky.test", "/rate")}, {"link": u("flaky.test", "/drop")}]
    # Latin-1 RSS with an unescaped ampersand: feedparser must still read it
    bad_rss = site.rss([{"link": u("latin.test", "/cafe"), "title": "Caf\u00e9 & co"}]).replace("&amp; co", "& co")
    bad_rss = bad_rss.replace('encoding="UTF-8"', 'encoding="ISO-8859-1"').encode("latin-1")
    feeds = [
        web.add("feeds.test", "/rss.xml", Page(site.rss(rss_items), content_type="application/rss+xml")),
        web.add("feeds.test", "/atom.xml", Page(site.atom(atom_entries), content_type="application/atom+xml")),
        web.add("feeds.test", "/latin.xml", Page(bad_rss, content_type="application/rss+xml")),
        web.url("feeds.test", "/missing.xml"),
    ]
    return feeds, img


def test_ingest_end_to_end(web, news, make_config):
    feeds, img = news
    u = web.url
    config = make_config(*feeds)
    t0 = time.monotonic()
    summary = ingest(config)
    work = config.workdir

    articles = {a.url: a for a in read_articles(work)}
    assert set(articles) == {
        u("news-a.test", "/2026/11/budget.html"),
        u("json.test", "/story/2"),
        u("fig.test", "/world/3"),
        u("amp.test", "/news/4"),
        u("news-a.test", "/2026/11/strike.html"),
        u("news-a.test", "/pixel-first"),
        u("flaky.test", "/rate"),
        u("flaky.test", "/drop"),
        u("latin.test", "/cafe"),
    }
    budget = articles[u("news-a.test", "/2026/11/budget.html")]
    assert budget.headline == "Budget row deepens"
    assert budget.outlet == "Daily Example"
    assert budget.published == "2026-11-20T10:00:00+00:00"
    assert budget.article_text == "\n\n".join(site.paragraphs(1))
    assert budget.image_url == u("img.test", "/1.jpg")
    assert budget.source_url == u("news-a.test", "/2026/11/budget.html?utm_source=rss&utm_medium=feed")
    assert budget.feed_url == feeds[0]
    assert budget.image_path == f"images/{hashlib.sha256(img[1]).hexdigest()}.jpg"
    assert (work / budget.image_path).read_bytes() == img[1]  # original bytes
    assert budget.unique_id == hashlib.sha256(budget.url.encode()).hexdigest()[:16]

    ld = articles[u("json.test", "/story/2")]
    assert (ld.headline, ld.outlet, ld.published) == ("Election night", "JSON Times", "2026-11-19T08:30:00+01:00")
    assert (ld.image_url, ld.image_caption) == (u("img.test", "/2.jpg"), "JSON-LD caption")

    fig = articles[u("fig.test", "/world/3")]
    # the lead <figure> image wins over og:image; the caption is the figcaption
    assert (fig.image_url, fig.image_caption) == (u("img.test", "/3.jpg"), "Cranes at dawn. Photo: A. Smith")

    amp = articles[u("amp.test", "/news/4")]
    assert amp.source_url == u("amp.test", "/news/4/amp")
    assert (amp.image_url, amp.image_caption, amp.outlet) == (u("img.test", "/4.jpg"), "AMP alt", "AMP Daily")

    assert articles[u("news-a.test", "/2026/11/strike.html")].source_url == u("news-a.test", "/2026/11/strike.html")
    pixel = articles[u("news-a.test", "/pixel-first")]
    assert (pixel.image_url, pixel.image_caption) == (u("img.test", "/11.jpg"), "Dry riverbed")
    assert len(web.requests_to("img.test", "/first.png")) == 1 and len(web.requests_to("img.test", "/chart")) == 1
    assert web.requests_to("img.test", "/chart.svg") == []  # refused by its name, never downloaded
    cafe = articles[u("latin.test", "/cafe")]
    assert cafe.headline == "Café owners protest"
    assert cafe.article_text.startswith("Le café était fermé, déclare Mme. Dupont.")

    # the 429 was honoured: the retry came at least Retry-After (1 s) later
    rate_hits = [r for r in web.requests if r.path == "/rate"]
    assert len(rate_hits) == 2
    assert web.starts["flaky.test"][-1] - web.starts["flaky.test"][0] >= 0.9

    errors = {(e["url"], e["stage"], e["reason"], e["retryable"]) for e in _lines(work / "ingest_errors.jsonl")}
    assert errors == {
        (feeds[3], "feed", "http_404", False),
        (u("NEWS-A.test", "/2026/11/budget.html?fbclid=abc#comments"), "article", "duplicate_url", False),
        (u("synd.test", "/copy/7"), "article", "duplicate_content", False),
        (u("news-a.test", "/short"), "article", "too_few_sentences", False),
        (u("news-a.test", "/video/9"), "article", "multimedia", False),
        (u("news-a.test", "/section/politics"), "article", "not_an_article", False),
        (u("news-a.test", "/bad-images"), "image", "no_usable_image", False),
        (u("err.test", "/gone"), "article", "http_404", False),
        (u("err.test", "/broken"), "article", "http_500", True),
        (u("err.test", "/slow"), "article", "timeout", True),
        (u("err.test", "/huge"), "article", "too_large", False),
        (u("err.test", "/pdf"), "article", "not_html", False),
    }
    bad = next(e for e in _lines(work / "ingest_errors.jsonl") if e["reason"] == "no_usable_image")
    assert "corrupt" in bad["detail"] and "decompression_bomb" in bad["detail"]

    assert summary.feeds == 4 and summary.feeds_failed == 1
    assert summary.items_seen == 20
    assert summary.kept == 9 and summary.articles_total == 9
    assert summary.dropped == {
        "duplicate_url": 1, "duplicate_content": 1, "too_few_sentences": 1, "multimedia": 1,
        "not_an_article": 1, "no_usable_image": 1, "not_html": 1,
    }
    assert summary.failed == {"http_404": 1, "http_500": 1, "timeout": 1, "too_large": 1}
    assert time.monotonic() - t0 < 20

    # Re-run: nothing kept or decided is fetched again; the transient failures are retried.
    before = len(web.requests)
    again = ingest(config)
    assert again.kept == 0 and again.already_done == 18 and again.items_seen == 20
    assert again.failed == {"http_500": 1, "timeout": 1}
    paths = {r.path for r in web.requests[before:]}
    assert paths - {"/robots.txt", "/rss.xml", "/atom.xml", "/latin.xml", "/missing.xml"} == {"/broken", "/slow"}
    # a third run gives them up (max_attempts=2 here)
    third = ingest(dataclasses.replace(config, max_attempts=2))
    assert third.given_up == 2 and third.fetched == 0
    assert len([ln for ln in (work / "articles.jsonl").read_text().splitlines() if ln]) == 9


def test_robots_and_user_agent(web, make_config):
    web.add("polite.test", "/robots.txt", Page("User-agent: vilbias\nDisallow: /private/\n", content_type="text/plain"))
    for path in ("/private/a", "/public/b"):
        web.add("polite.test", path, Page(site.og_page("Story " + path, site.paragraphs(len(path)), web.url("img.test", "/1.jpg"))))
    web.add("img.test", "/1.jpg", Page(site.jpeg(seed=3), content_type=JPEG))
    feed = web.add("feeds.test", "/f.xml", Page(site.rss([{"link": web.url("polite.test", p)} for p in ("/private/a", "/public/b")])))

    summary = ingest(make_config(feed))
    assert summary.kept == 1 and summary.failed == {"robots_disallowed": 1}
    assert web.requests_to("polite.test", "/private/a") == []
    assert all(r.headers["user-agent"].startswith("vilbias/") for r in web.requests)

    summary = ingest(make_config(feed, fetch={"ignore_robots": True}, workdir=make_config().workdir.parent / "w2"))
    assert summary.kept == 2


def test_google_news_links_resolve_to_the_publisher(web, make_config):
    article = web.url("pub.test", "/2026/story")
    web.add("pub.test", "/2026/story", Page(site.og_page("Publisher story", site.paragraphs(21), web.url("img.test", "/1.jpg"))))
    web.add("pub.test", "/2026/other", Page(site.og_page("Second story", site.paragraphs(22), web.url("img.test", "/2.jpg"))))
    web.add("img.test", "/1.jpg", Page(site.jpeg(seed=1), content_type=JPEG))
    web.add("img.test", "/2.jpg", Page(site.jpeg(seed=2), content_type=JPEG))
    old_id = site.google_news_id(article)
    # a current-style id: the interstitial page gives a signature for batchexecute
    web.add("news.google.com", "/rss/articles/CBMiNEW", Page('<c-wiz><div jscontroller="x" data-n-a-id="CBMiNEW" data-n-a-ts="1700000000" data-n-a-sg="SIG"></div></c-wiz>'))

    def batch(req: Request) -> Page:
        assert req.method == "POST" and b"CBMiNEW" in req.body and b"SIG" in req.body
        inner = json.dumps(["garturlres", web.url("pub.test", "/2026/other"), 1])
        return Page(")]}'\n\n" + json.dumps([["wrb.fr", "Fbv4je", inner, None, None, None, "generic"]]), content_type="application/json")

    web.add("news.google.com", "/_/DotsSplashUi/data/batchexecute", batch)
    items = [
        {"link": web.url("news.google.com", f"/rss/articles/{old_id}?oc=5"), "source": "Publisher Daily"},
        {"link": web.url("news.google.com", "/rss/articles/CBMiNEW?oc=5"), "source": "Publisher Daily"},
    ]
    feed = web.add("news.google.com", "/rss/search", Page(site.rss(items), content_type="application/rss+xml"))
    config = make_config(feed)
    summary = ingest(config)
    assert summary.kept == 2
    got = {a.url: a for a in read_articles(config.workdir)}
    assert set(got) == {article, web.url("pub.test", "/2026/other")}
    lines = _lines(config.workdir / "articles.jsonl")
    assert {ln["item_url"] for ln in lines} == {i["link"] for i in items}
    assert {ln["outlet"] for ln in lines} == {"Daily Example"}  # the page's og:site_name wins
    # the old-style id decodes offline: its interstitial page was never requested
    assert web.requests_to("news.google.com", f"/rss/articles/{old_id}") == []
    before = len(web.requests)
    assert ingest(config).already_done == 2
    assert {r.path for r in web.requests[before:]} == {"/robots.txt", "/rss/search"}


def test_cli_feeds_file_max_items_and_summary(web, tmp_path, capsys):
    from vilbias.cli import main

    links = []
    for i in range(5):
        web.add("127.0.0.1", f"/s/{i}", Page(site.og_page(f"Story {i}", site.paragraphs(30 + i), web.url("127.0.0.1", f"/i/{i}.jpg"))))
        web.add("127.0.0.1", f"/i/{i}.jpg", Page(site.jpeg(seed=30 + i), content_type=JPEG))
        links.append({"link": web.url("127.0.0.1", f"/s/{i}")})
    feeds_file = tmp_path / "feeds.txt"
    feeds_file.write_text("# my feeds\n" + web.add("127.0.0.1", "/f.xml", Page(site.rss(links))) + "\n\n")
    work = tmp_path / "w"
    def argv(max_items: int) -> list[str]:
        return ["ingest", "--feeds-file", str(feeds_file), "--workdir", str(work), "--max-items", str(max_items),
                "--allow-private-addresses", "--no-progress", "--rate", "0"]

    assert main(argv(2)) == 0
    out = capsys.readouterr().out
    assert "items seen       5" in out and "kept             2 (workdir now holds 2)" in out
    assert len(list(read_articles(work))) == 2
    # the options the run saved (fetch settings included) run it again; a flag overrides the file
    assert main(["ingest", "--config", str(work / "ingest_config.yaml"), "--max-items", "4"]) == 0
    assert len(list(read_articles(work))) == 4
    # without --allow-private-addresses the loopback feed is refused, and said so
    assert main(["ingest", "--feeds-file", str(feeds_file), "--workdir", str(tmp_path / "w2"), "--no-progress"]) == 1
    assert "blocked_address" in (tmp_path / "w2" / "ingest_errors.jsonl").read_text()


@pytest.mark.parametrize(
    "kwargs, message",
    [({}, "at least one --feed"), ({"feed": ["ftp://x/feed"]}, "http"), ({"feed": ["http://x/f"], "min_sentences": 0}, "min-sentences"),
     ({"feed": ["http://x/f"], "feeds_file": "/nonexistent/feeds.txt"}, "does not exist")],
)
def test_config_errors_are_clear(tmp_path, kwargs, message):
    with pytest.raises((ValueError, FileNotFoundError), match=message):
        ingest(IngestConfig(workdir=tmp_path / "w", **kwargs))
    assert not (tmp_path / "w").exists()  # nothing is created before the settings are checked


def test_an_unexpected_error_on_one_item_does_not_stop_the_run(web, make_config, monkeypatch):
    from vilbias.ingest import pipeline

    real = pipeline.analyse_page

    def flaky(content, charset, url, min_sentences):
        if url.endswith("/boom"):
            raise RuntimeError("extractor bug")
        return real(content, charset, url, min_sentences)

    monkeypatch.setattr(pipeline, "analyse_page", flaky)
    for i, path in enumerate(("/boom", "/fine")):
        web.add("n.test", path, Page(site.og_page(f"Story {path}", site.paragraphs(40 + i), web.url("img.test", "/1.jpg"))))
    web.add("img.test", "/1.jpg", Page(site.jpeg(seed=40), content_type=JPEG))
    feed = web.add("feeds.test", "/f.xml", Page(site.rss([{"link": web.url("n.test", p)} for p in ("/boom", "/fine")])))
    config = make_config(feed)
    summary = ingest(config)
    assert summary.kept == 1 and summary.failed == {"internal_error": 1}
    (err,) = _lines(config.workdir / "ingest_errors.jsonl")
    assert (err["url"], err["reason"], err["retryable"], err["detail"]) == (
        web.url("n.test", "/boom"), "internal_error", True, "RuntimeError: extractor bug")
    monkeypatch.setattr(pipeline, "analyse_page", real)
    again = ingest(config)  # retried after the "fix"
    assert again.kept == 1 and again.already_done == 1


def test_the_summary_is_shown_once(web, tmp_path, capsys, caplog):
    """The command prints the summary; it is not logged as well (in a terminal both reach the screen)."""
    import logging

    from vilbias.cli import main

    feed, _ = site.story_feed(web, 2, seed=40)
    with caplog.at_level(logging.DEBUG, logger="vilbias"), caplog.at_level(logging.INFO):
        assert main(["ingest", "--feed", feed, "--workdir", str(tmp_path / "w"), "--allow-private-addresses", "--no-progress",
                     "--rate", "0"]) == 0
    out = capsys.readouterr().out
    assert out.count("items seen") == 1
    assert not [r for r in caplog.records if "items seen" in r.getMessage() and r.levelno >= logging.INFO]


def test_without_progress_bars_a_wait_on_the_network_is_said_every_few_seconds(web, make_config, caplog, monkeypatch):
    """--no-progress: a server that does not answer leaves no silence longer than the heartbeat
    (10 s; 0.3 s here), each line saying what is done and what the run waits on."""
    import logging

    from vilbias import progress

    assert progress.HEARTBEAT_S <= 10
    monkeypatch.setattr(progress, "HEARTBEAT_S", 0.3)
    web.add("slow.test", "/story", Page(site.og_page("Slow", site.paragraphs(41), web.url("slow.test", "/i.jpg")), delay=1.6))
    web.add("slow.test", "/i.jpg", Page(site.jpeg(seed=41), content_type=JPEG))
    feed = web.add("slow.test", "/feed.xml", Page(site.rss([{"link": web.url("slow.test", "/story")}])))
    with caplog.at_level(logging.INFO, logger="vilbias.ingest.pipeline"):
        config = make_config(feed)
        summary = ingest(dataclasses.replace(config, fetch=dataclasses.replace(config.fetch, timeout=5)))
    assert summary.kept == 1
    beats = [r for r in caplog.records if r.getMessage().startswith("ingest: ")]
    assert len(beats) >= 3
    assert any(b.getMessage().startswith("ingest: 0 of 1 items done, 0 kept; waiting on 1 request, to slow.test for ") for b in beats)
    gaps = [b.created - a.created for a, b in zip(beats, beats[1:], strict=False)]
    assert max(gaps) < 1.0


def test_a_page_whose_only_images_are_svg_drawings_says_so(web, make_config):
    web.add("img.test", "/chart.svg", Page("<svg xmlns='http://www.w3.org/2000/svg'/>", content_type="image/svg+xml"))
    page = site.og_page("Turnout by district", site.paragraphs(42), web.url("img.test", "/map.svg"),
                        body_image=web.url("img.test", "/chart.svg"))
    web.add("news.test", "/charts", Page(page))
    feed = web.add("news.test", "/feed.xml", Page(site.rss([{"link": web.url("news.test", "/charts")}])))
    config = make_config(feed)
    assert ingest(config).dropped == {"no_usable_image": 1}
    (error,) = read_jsonl(config.workdir / "ingest_errors.jsonl")
    assert (error["stage"], error["reason"]) == ("image", "no_usable_image")
    assert error["detail"] == (f"{web.url('img.test', '/chart.svg')}: an SVG drawing, not a photo; "
                               f"{web.url('img.test', '/map.svg')}: an SVG drawing, not a photo")
