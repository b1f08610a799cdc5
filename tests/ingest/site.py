"""Pages, feeds and images written for the ingest tests, in several CMS styles."""

from __future__ import annotations

import base64
import html
import io
import json
import zlib

from PIL import Image

TOPICS = ["budget", "election", "harbour", "vaccine", "rail strike", "drought", "tariffs", "museum"]


def paragraphs(seed: int, n_sentences: int = 24, per_para: int = 4) -> list[str]:
    """Distinct article text per seed; abbreviations that must not end a sentence included."""
    topic = TOPICS[seed % len(TOPICS)]
    sents = []
    for i in range(n_sentences):
        if i % 3 == 0:
            sents.append(f"Dr. Ada Jones of the U.S. office said on Jan. 5 that the {topic} plan number {seed}-{i} costs 3.5 billion dollars.")
        elif i % 3 == 1:
            sents.append(f"Critics in story {seed} called the {topic} decision reckless, and Mr. Lee disagreed at point {i}.")
        else:
            sents.append(f"Officials said the {topic} review for item {seed} would finish by step {i} next year.")
    return [" ".join(sents[i : i + per_para]) for i in range(0, len(sents), per_para)]


def _body(paras: list[str]) -> str:
    return "\n".join(f"<p>{html.escape(p)}</p>" for p in paras)


def og_page(title: str, paras: list[str], image: str, *, canonical: str = "", site: str = "Daily Example",
            published: str = "2026-11-20T10:00:00Z", og_type: str = "article", body_image: str = "",
            caption: str = "", extra_head: str = "", body_html: str = "") -> str:
    """A WordPress-like page: og tags in the head, plain <article> body."""
    canon = f'<link rel="canonical" href="{canonical}">' if canonical else ""
    img = f'<img src="{body_image}" alt="{html.escape(caption)}">' if body_image else ""
    return f"""<!DOCTYPE html><html><head><meta charset="utf-8"><title>{html.escape(title)} | {site}</title>
{canon}
<meta property="og:title" content="{html.escape(title)}">
<meta property="og:site_name" content="{site}">
<meta property="og:type" content="{og_type}">
<meta property="og:image" content="{image}">
<meta property="article:published_time" content="{published}">
{extra_head}
</head><body>
<header class="site-header"><img src="/static/logo.png" alt="Site logo"><nav><a href="/">Home</a></nav></header>
<article><h1>{html.escape(title)}</h1>{img}{body_html}
{_body(paras)}
</article>
<footer><p>Copyright {site}</p></footer></body></html>"""


def jsonld_page(title: str, paras: list[str], image: str, *, url: str, site: str = "JSON Times",
                published: str = "2026-11-19T08:30:00+01:00", ld_type: str = "NewsArticle") -> str:
    """A page whose metadata is only JSON-LD (no og tags), inside an @graph."""
    ld = {"@context": "https://schema.org", "@graph": [
        {"@type": "WebSite", "name": site, "url": url.split("/", 3)[0] + "//" + url.split("/")[2]},
        {"@type": ld_type, "headline": title, "url": url, "datePublished": published,
         "image": {"@type": "ImageObject", "url": image, "caption": "JSON-LD caption"},
         "publisher": {"@type": "Organization", "name": site}},
    ]}
    return f"""<html><head><title>{html.escape(title)}</title>
<script type="application/ld+json">{json.dumps(ld)}</script></head>
<body><div class="content"><div itemprop="articleBody">{_body(paras)}</div></div></body></html>"""


def figure_page(title: str, paras: list[str], image: str, caption: str, *, og_image: str = "") -> str:
    """A news CMS page: the lead photo in <figure><picture> with a <figcaption>, lazy-loaded."""
    og = f'<meta property="og:image" content="{og_image}">' if og_image else ""
    return f"""<html><head><title>{html.escape(title)}</title>
<meta property="og:title" content="{html.escape(title)}"><meta property="og:type" content="article">
<meta property="og:site_name" content="Figure Post">{og}</head><body>
<div class="share-tools"><img src="/icons/share.png" width="16" height="16"></div>
<article>
<h1>{html.escape(title)}</h1>
<figure class="lead"><picture>
<source srcset="{image}?w=480 480w, {image} 1200w">
<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" data-src="{image}" alt="alt text ignored">
</picture><figcaption>{html.escape(caption)}</figcaption></figure>
{_body(paras)}
</article></body></html>"""


def amp_page(title: str, paras: list[str], image: str, *, canonical: str) -> str:
    return f"""<!doctype html><html amp><head><meta charset="utf-8">
<link rel="canonical" href="{canonical}"><title>{html.escape(title)}</title>
<meta property="og:site_name" content="AMP Daily"><meta property="og:type" content="article"></head>
<body><article><h1>{html.escape(title)}</h1>
<amp-img src="{image}" width="800" height="450" layout="responsive" alt="AMP alt"></amp-img>
{_body(paras)}</article></body></html>"""


def rss(items: list[dict], *, title: str = "Test feed") -> str:
    """RSS 2.0; each item: link, title, and optionally source (Google News style)."""
    out = []
    for it in items:
        src = f'<source url="https://publisher.example">{html.escape(it["source"])}</source>' if it.get("source") else ""
        out.append(f"""<item><title>{html.escape(it.get('title', 'x'))}</title><link>{html.escape(it['link'])}</link>
<pubDate>Fri, 20 Nov 2026 10:00:00 GMT</pubDate>{src}</item>""")
    return f"""<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>{title}</title>
<link>http://example.test/</link><description>d</description>{''.join(out)}</channel></rss>"""


def atom(entries: list[dict]) -> str:
    out = "".join(
        f"""<entry><title>{html.escape(e.get('title', 'x'))}</title><link rel="alternate" href="{html.escape(e['link'])}"/>
<id>{html.escape(e['link'])}</id><updated>2026-11-20T10:00:00Z</updated></entry>"""
        for e in entries
    )
    return f"""<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">
<title>Atom feed</title><id>urn:x</id><updated>2026-11-20T10:00:00Z</updated>{out}</feed>"""


def jpeg(width: int = 320, height: int = 200, seed: int = 0) -> bytes:
    """A small JPEG with content that differs per seed (so hashes differ)."""
    im = Image.new("RGB", (width, height), ((seed * 37) % 256, (seed * 91) % 256, (seed * 53) % 256))
    for x in range(0, width, 16):
        for y in range(0, height, 16):
            if (x // 16 + y // 16 + seed) % 3 == 0:
                im.putpixel((x, y), (255, 255, 255))
    buf = io.BytesIO()
    im.save(buf, "JPEG", quality=80)
    return buf.getvalue()


def png(width: int, height: int) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (width, height), (200, 10, 10)).save(buf, "PNG")
    return buf.getvalue()


def png_bomb(side: int = 20_000) -> bytes:
    """A PNG header claiming side x side pixels (400 Mpx) with a tiny compressed body."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return len(data).to_bytes(4, "big") + kind + data + zlib.crc32(kind + data).to_bytes(4, "big")

    ihdr = side.to_bytes(4, "big") * 2 + bytes([8, 0, 0, 0, 0])
    idat = zlib.compress(b"\x00" * (side + 1) * 8, 9)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def google_news_id(url: str) -> str:
    """An old-style Google News article id embedding ``url``."""
    raw = url.encode()
    return base64.urlsafe_b64encode(b"\x08\x13\x22" + bytes([len(raw)]) + raw + b"\xd2\x01\x00").decode().rstrip("=")


def story_feed(web, n: int, seed: int, host: str = "127.0.0.1") -> tuple[str, list[str]]:
    """``n`` article pages (``/a/<i>``, each with its own JPEG) on ``host`` of the fake ``web`` server
    and an RSS feed listing them; returns the feed's URL and the pages' URLs. A subprocess needs ``127.0.0.1``
    literally (it cannot take the resolver hook)."""
    from tests.fakes.web_server import Page

    links = []
    for i in range(n):
        web.add(host, f"/a/{i}", Page(og_page(f"Story {i}", paragraphs(seed + i), web.url(host, f"/i/{i}.jpg"))))
        web.add(host, f"/i/{i}.jpg", Page(jpeg(seed=seed + i), content_type="image/jpeg"))
        links.append({"link": web.url(host, f"/a/{i}")})
    return web.add(host, "/feed.xml", Page(rss(links), content_type="application/rss+xml")), [link["link"] for link in links]

