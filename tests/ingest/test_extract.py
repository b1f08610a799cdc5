"""Pure parts of ingestion: URL canonicalisation, extraction, sentences, feeds, content hashes."""

from __future__ import annotations

import pytest

from tests.ingest import site
from vilbias.ingest.extract import extract_article
from vilbias.ingest.feeds import (
    FeedError,
    _parse_batchexecute,
    decode_google_news_id,
    is_google_news_link,
    parse_feed,
)
from vilbias.ingest.text import content_hash, decode_html
from vilbias.ingest.urls import canonicalize_url, strip_amp
from vilbias.text import count_sentences, split_sentences


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


def _paras(seed: int) -> str:
    return "".join(f"<p>{p}</p>" for p in site.paragraphs(seed))


def test_headline_is_the_visible_one_a_metadata_title_names():
    head = """<meta property="og:site_name" content="Daily Example"><meta property="og:type" content="article">
    <script type="application/ld+json">{"@type": "NewsArticle", "headline": "Port deal signed &#8216;today&#8217; | Daily Example"}</script>"""
    page = f"<html><head>{head}</head><body><header class='masthead'><h1>Daily Example</h1></header><article>" \
           f"<h1>Port deal signed ‘today’</h1>{_paras(20)}</article></body></html>"
    got = extract_article(page, "http://daily.test/port")
    assert got.headline == "Port deal signed ‘today’"  # entity decoded, site suffix gone, the <h1>
    seo = f"<html><head><title>Short SEO title » Daily Example</title></head><body><article>{_paras(21)}</article></body></html>"
    assert extract_article(seo, "http://daily.test/seo").headline == "Short SEO title"
    dash = "<html><head><title>Rail - a new line opens | Daily Example</title><meta property='og:site_name' content='Daily Example'>" \
           f"</head><body><article>{_paras(22)}</article></body></html>"
    assert extract_article(dash, "http://daily.test/rail").headline == "Rail - a new line opens"


def test_text_edges_lose_kicker_headline_byline_caption_credits_and_reading_lists():
    body = f"""<article><p>World</p><h1>Floods close the harbour</h1><p>By Ann Lee</p>
    <figure><img src="/lead.jpg" alt="The harbour under water at dawn"><figcaption>The harbour under water at dawn</figcaption></figure>
    <p>The harbour under water at dawn. Photo: AP</p>{_paras(23)}<p>Officials said the review
    would finish next year.<br>Another line starts here.</p><p>Pumps are running<br>around the clock.</p>
    <h3>Editors' Recommendations:</h3><ul><li><a href="/a">Another story</a></li><li><a href="/b">A third story</a></li></ul>
    <p>Photo: Jane Doe</p><p>© Example Wire 2026</p></article>"""
    page = f"<html><head><meta property='og:type' content='article'><title>Floods close the harbour</title></head><body>{body}</body></html>"
    text = extract_article(page, "http://daily.test/floods").text
    assert text.startswith(site.paragraphs(23)[0]), text[:200]
    assert text.endswith("would finish next year.\n\nAnother line starts here.\n\nPumps are running around the clock.")
    for gone in ("World", "Floods close", "By Ann Lee", "Photo: AP", "Recommendations", "Another story", "Jane Doe", "©"):
        assert gone not in text


def test_lazy_images_templates_pictures_and_the_headline_header():
    page = f"""<html><head><meta property="og:type" content="article"><meta property="og:title" content="Big story"></head><body>
    <header class="site"><img src="/masthead-photo.jpg" width="600" height="200"></header>
    <article><header><h1>Big story</h1>
      <img src="/img/leer.gif" data-retina-src="/photos/lead@2x.jpg" alt="Lead">
      <img src="/t/wide__822x462" data-src="/t/wide" alt="Template">
      <picture><source srcset="/p/a-600.jpg 600w"><source srcset="/p/a-1400.jpg 1400w, /p/a-700.jpg 700w"><img src="/p/a-300.jpg"></picture>
    </header>{_paras(24)}</article></body></html>"""
    got = extract_article(page, "http://daily.test/big")
    assert [c.url for c in got.images] == [
        "http://daily.test/photos/lead@2x.jpg", "http://daily.test/t/wide__822x462", "http://daily.test/p/a-1400.jpg",
    ]


def test_pages_about_the_site_wikis_and_section_fronts_are_not_articles():
    about = site.og_page("About us", site.paragraphs(25), "/i.jpg")
    assert extract_article(about, "http://daily.test/about/").kind_detail == "site_page"
    wiki = f"<html><head><meta name='generator' content='MediaWiki 1.41'></head><body><h1>Harbour</h1>{_paras(26)}</body></html>"
    assert extract_article(wiki, "http://wiki.test/wiki/Harbour").kind_detail == "wiki_page"
    teasers = "".join(f"<article><a href='/s/{i}'><h2>Story {i}</h2><p>{site.paragraphs(i)[0][:200]}</p></a></article>" for i in range(6))
    front = f"<html><head><title>Politics</title></head><body><main>{teasers}</main></body></html>"
    assert extract_article(front, "http://daily.test/politics/").kind_detail == "index_page"
    # a short blog post without any article markup is still an article: it reads as prose
    post = "<html><head><title>Release 3.6 is out</title></head><body><div class='post'><h3>Release 3.6 is out</h3>" \
           + "".join(f"<p>{p}</p>" for p in site.paragraphs(27, n_sentences=6, per_para=2)) + "</div></body></html>"
    assert extract_article(post, "http://blog.test/2016/12/release.html").page_kind == "article"


def test_a_page_is_judged_on_itself_never_on_a_site_wide_og_type():
    """og:type "website" is what many news sites declare on every page (heise.de, Yahoo News): a story
    that declares it is kept, and a page that is no story is refused for what it is, not for it."""
    story = site.og_page("Budget row deepens", site.paragraphs(30), "/i.jpg", og_type="website")
    assert extract_article(story, "http://news.test/2026/11/budget.html").page_kind == "article"
    # ... even with no date, no <article> and no structured data: its text reads as a story
    bare = f"<html><head><meta property='og:type' content='website'><title>Budget</title></head><body><div>{_paras(31)}</div></body></html>"
    assert extract_article(bare, "http://news.test/2026/11/budget-2.html").page_kind == "article"
    # a product page declaring the same og:type: its text is no prose (features, buttons), and nothing marks a story
    features = "".join(f"<li>Feature {i}: fast builds, a dark theme and tools</li>" for i in range(12))
    product = (f"<html><head><meta property='og:type' content='website'><title>Get the Developer Edition</title></head><body>"
               f"<h1>Developer Edition</h1><p>Built for developers.</p><ul>{features}</ul><a href='/download'>Download now</a>"
               f"<p>Available for Windows, macOS and Linux.</p></body></html>")
    assert (extract_article(product, "http://browser.test/en/developer/").kind_detail) == "no_article_markup"
    # what a page declares about itself still counts: a profile or product og:type, a JSON-LD page type
    profile = site.og_page("Ann Smith", site.paragraphs(32), "/i.jpg", og_type="profile")
    assert extract_article(profile, "http://news.test/authors/ann").kind_detail == "og:type profile"
    ld_page = site.og_page("Our reporters", site.paragraphs(33), "/i.jpg", og_type="website",
                           extra_head='<script type="application/ld+json">{"@type": "ProfilePage", "name": "Ann"}</script>')
    assert extract_article(ld_page, "http://news.test/authors/ann-smith").kind_detail == "json-ld profilepage"
    # a reference entry under /wiki/, whatever engine serves it
    entry = site.og_page("Central bank", site.paragraphs(34), "/i.jpg", og_type="website")
    assert extract_article(entry, "http://bank.test/wiki/central-bank/").kind_detail == "wiki_page"


def test_the_home_page_is_the_pages_own_address():
    """A canonical URL some sites point at their home page from every page does not make a post the
    home page, nor does a post named by a query (WordPress's /?p=959)."""
    post = site.og_page("Our herb garden", site.paragraphs(35), "/i.jpg", canonical="https://resort.test/")
    assert extract_article(post, "https://resort.test/blog/herb-garden.html").page_kind == "article"
    assert extract_article(site.og_page("Release", site.paragraphs(36), "/i.jpg"), "http://blog.test/?p=959").page_kind == "article"
    assert extract_article(site.og_page("Front", site.paragraphs(37), "/i.jpg"), "https://resort.test/").kind_detail == "home_page"


def test_the_language_is_the_texts_and_sentences_follow_it():
    text = "Am 8. März 2014 trinken die beiden Cider. Der 3. Platz ging an ihn."
    assert split_sentences(text, language="de") == ["Am 8. März 2014 trinken die beiden Cider.", "Der 3. Platz ging an ihn."]
    assert count_sentences(text, language="en") > 2  # English rules end a sentence at "8."
    assert count_sentences(text, language="xx") == count_sentences(text)  # unknown: English
    german = "".join(f"<p>Der Stadtrat hat am {i}. Mai den Haushalt beschlossen. Die Schulen bekommen mehr Geld für "
                     "Reparaturen, sagte die Bürgermeisterin.</p>" for i in range(1, 6))
    page = f"<html lang='de-DE'><head><meta property='og:type' content='article'></head><body><article>{german}</article></body></html>"
    assert extract_article(page, "http://zeitung.test/a").language == "de"
    # the language is the text's, not the template's: an English story on a German site
    page = f"<html lang='de-DE'><head><meta property='og:type' content='article'></head><body><article>{_paras(28)}</article></body></html>"
    assert extract_article(page, "http://zeitung.test/b").language == "en"
    # too little text to tell: the page's declaration is all there is
    page = "<html lang='fr'><head><meta property='og:type' content='article'></head><body><article><p>Bref.</p></article></body></html>"
    assert extract_article(page, "http://journal.test/c").language == "fr"


def _blog_with_teasers() -> str:
    """A blog post as Boing Boing lays one out: the post, its source links (other sites), a share
    bar, then "more from the site" cards: a heading linking to another post, its picture, an
    excerpt and a "READ THE REST" link."""
    story = [
        "A cartoonist got a spot on a news channel for his scathing critique of the narrative of the lazy, narcissistic "
        "generation, which has gone well beyond grumbling and into the realm of demographic prejudice.",
        "The strip follows a young worker through a day of low pay, unpaid internships and rent that eats half of every cheque.",
        "Each panel quotes a headline that blamed the generation for something, from the housing market to napkins.",
    ]
    cards = "".join(f"""<div class="nextstory">
<h2><a href="https://blog.test/2019/09/25/{slug}.html?utm_source=more">{title}</a></h2>
<a href="https://blog.test/2019/09/25/{slug}.html?utm_source=more"><img width="600" height="375" src="https://media.blog.test/{slug}.jpg"></a>
<p><p>{excerpt} [&hellip;]</p>
<h3><a href="https://blog.test/2019/09/25/{slug}.html">READ THE REST</a></h3></div>""" for slug, title, excerpt in [
        ("choir", "Two famous musicians join the big choir for a protest song",
         "The good folks at the big choir are still doing their thing, and now two famous musicians play along at a festival"),
        ("stargazing", "Stargazing: a graphic novel for young readers about identity, talent and loyalty",
         "The author is several kinds of excellent comics person, from her debut graphic novel to her award-winning fairy tale"),
        ("dynasties", "Dynasties: reporting on the wealthy families that rule the country",
         "The latest podcast from the media-criticism network delves into the scandals and backroom deals of the great families"),
    ])
    return f"""<!DOCTYPE html><html lang="en-US"><head><title>Hating a generation / Example Blog</title>
<meta property="og:site_name" content="Example Blog"><meta property="og:type" content="article">
<meta property="og:title" content="Hating a generation"><link rel="canonical" href="https://blog.test/2013/07/19/hating.html"></head>
<body><div id="container"><div class="navbyline"><a href="https://blog.test/author/a">A. Writer</a></div>
<div id="headline"><h1>Hating a generation</h1></div>
<div id="story"><p><img src="https://media.blog.test/strip.jpg"><br>{story[0]}</p>{"".join(f"<p>{p}</p>" for p in story[1:])}
<p>Related: <a href="https://blog.test/2013/06/01/older-strip.html">The cartoonist's earlier strip about rent</a></p>
<p><a href="https://othernews.test/2013/07/09/opinion/generation-strip">The generation we love to dump on</a></p>
<p>(<i>via <a href="https://geeks.test/">Geeks Are Example</a></i>)</p>
<div class="share"><h3><a href="https://social.test/sharer?u=x">SHARE</a> / <a href="https://bbs.blog.test/t/4498">82 COMMENTS</a></h3></div>
<div id="next-post-thumbnails">{cards}</div></div></div></body></html>"""


def test_other_stories_teasers_are_not_the_story():
    text = extract_article(_blog_with_teasers(), "https://blog.test/2013/07/19/hating.html").text
    # the post's own source links (to other sites) stay: they are the post
    assert text.startswith("A cartoonist got a spot") and text.endswith("The generation we love to dump on\n\n(via Geeks Are Example)")
    for teaser in ("choir", "Stargazing", "graphic novel", "Dynasties", "podcast", "READ THE REST", "earlier strip"):
        assert teaser not in text


def test_the_storys_own_links_to_the_site_are_no_teaser():
    paras = "".join(f"<p>{p}</p>" for p in site.paragraphs(31))
    page = f"""<html><head><meta property="og:type" content="article"><link rel="canonical" href="https://daily.test/a/story"></head>
<body><article><h1>Harbour deal</h1>{paras}<p>As <a href="https://daily.test/a/earlier">we reported in March</a>, the port
authority had asked the city for a loan that would cover the dredging of the eastern channel.</p></article></body></html>"""
    text = extract_article(page, "https://daily.test/a/story").text
    # a paragraph of the story that links to an earlier one is prose, not a related headline
    assert text.endswith("\n\nAs we reported in March, the port authority had asked the city for a loan that would cover the "
                         "dredging of the eastern channel.")


@pytest.mark.parametrize(("head", "expected"), [
    # Reuters: og:site_name is the section; the article's JSON-LD names the publisher
    ('<meta property="og:site_name" content="U.S."><script type="application/ld+json">{"@type": "NewsArticle", '
     '"headline": "Story", "publisher": {"@type": "Organization", "name": "Reuters"}}</script>', "Reuters"),
    # a publisher given as a reference to an Organization node of the @graph (Yoast's layout)
    ('<meta property="og:site_name" content="News zu VR, AR und KI | MIXED.de"><script type="application/ld+json">{"@graph": '
     '[{"@type": "Organization", "@id": "https://news.test/#organization", "name": "MIXED.de | VR, AR und KI"}, '
     '{"@type": "Article", "headline": "Story", "publisher": {"@id": "https://news.test/#organization"}}]}</script>', "MIXED.de"),
    # no structured data: og:site_name, its tagline cut to the part naming the host
    ('<meta property="og:site_name" content="Technology news | Mixed">', "Mixed"),
    ('<meta property="og:site_name" content="The Daily Example">', "The Daily Example"),
])
def test_the_outlet_is_the_publisher_the_structured_data_names(head, expected):
    page = f"<html><head>{head}<meta property='og:type' content='article'></head><body><article><h1>Story</h1>{_paras(32)}</article></body></html>"
    url = "https://mixed.test/story" if "MIXED" in head or "Mixed" in head else "https://news.test/story"
    assert extract_article(page, url).outlet == expected
