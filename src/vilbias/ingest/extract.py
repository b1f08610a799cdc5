"""From an article page's HTML to the fields of a corpus record.

:func:`extract_article` is pure (HTML and URL in, :class:`Extracted` out) so the ingest stage,
the Space and the tests share it. The text comes from ``trafilatura``; the page's metadata
(``og:*``, ``article:*``, JSON-LD ``NewsArticle``, ``rel=canonical``) fills and overrides what
trafilatura guesses, because publishers maintain it for search engines and it is more reliable.

**The image.** The corpus pairs each article with its *first* image (DESIGN §1), i.e. the first
photo a reader sees in the article: the lead ``<figure>``/``<picture>``/``<img>`` inside the
article body, lazy-loading attributes (``data-src``, ``srcset``, ...) resolved. ``og:image`` is a
*fallback*, tried after the in-article candidates: it is a social-media card chosen for sharing,
often cropped, sometimes branded or a site-wide default logo, and not always in the article at
all. When the page has no usable in-article image, ``og:image`` (then JSON-LD ``image``) is used.
The caption is the image's ``<figcaption>``, else its ``alt`` text, else ``title``; for
``og:image`` it is ``og:image:alt``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import re
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

import lxml.html
from lxml import etree

from vilbias.ingest.urls import canonicalize_url, is_http_url, strip_amp

logger = logging.getLogger(__name__)

ARTICLE_TYPES = {
    "newsarticle", "article", "reportagenewsarticle", "analysisnewsarticle", "opinionnewsarticle",
    "backgroundnewsarticle", "reviewnewsarticle", "blogposting", "socialmediaposting", "report",
    "askpublicnewsarticle", "satiricalarticle", "techarticle", "scholarlyarticle",
}
# JSON-LD types and URL path segments of pages whose substance is not text.
MULTIMEDIA_TYPES = {"videoobject": "video", "liveblogposting": "live_blog", "imagegallery": "gallery",
                    "mediagallery": "gallery", "podcastepisode": "podcast", "audioobject": "podcast"}
MULTIMEDIA_SEGMENTS = {
    "video": "video", "videos": "video", "watch": "video", "tv": "video",
    "gallery": "gallery", "galleries": "gallery", "photos": "gallery", "photo-gallery": "gallery",
    "in-pictures": "gallery", "pictures": "gallery", "slideshow": "slideshow", "slideshows": "slideshow",
    "live": "live_blog", "liveblog": "live_blog", "live-news": "live_blog", "live-updates": "live_blog",
    "podcast": "podcast", "podcasts": "podcast", "audio": "podcast",
}
MULTIMEDIA_TITLE = re.compile(
    r"^\s*(video|watch|live|in pictures|in photos|photos|gallery|slideshow|podcast|listen)\s*[:|–-]", re.IGNORECASE
)
# Containers whose images are chrome, not the article's photo.
_CHROME_TAGS = {"nav", "footer", "aside", "header", "form", "button", "noscript"}
_CHROME_WORDS = re.compile(
    r"(^|[-_\s])(logo|icon|avatar|author|byline|social|share|sharing|sponsor|promo|advert|ad|ads|"
    r"related|recommended|newsletter|masthead|navbar|nav|menu|footer|sidebar|teaser|outbrain|taboola)([-_\s]|$)",
    re.IGNORECASE,
)
_BAD_IMAGE_URL = re.compile(
    r"(\.svgz?($|\?)|^data:|/pixel|pixel\.(gif|png)|spacer|blank\.(gif|png)|1x1|tracking|/beacon|"
    r"logo|favicon|sprite|/icons?/|icon[-_.]|avatar|placeholder|gravatar)",
    re.IGNORECASE,
)
_LAZY_ATTRS = ("data-src", "data-lazy-src", "data-original", "data-lazy", "data-url", "data-hi-res-src")
_SRCSET_ATTRS = ("srcset", "data-srcset", "data-lazy-srcset")


@dataclass
class ImageCandidate:
    url: str
    caption: str = ""
    origin: str = "article"
    """``article`` (in the article body), ``og:image`` or ``json-ld``."""


@dataclass
class Extracted:
    """What an article page says about itself."""

    url: str
    """Canonical URL (rel=canonical, else og:url, else the fetched URL), normalised."""
    source_url: str
    headline: str = ""
    text: str = ""
    outlet: str = ""
    outlet_guessed: bool = False
    """True when no metadata named the outlet and ``outlet`` is trafilatura's guess (often the
    host name); a feed's own publisher name is then better."""
    published: str | None = None
    images: list[ImageCandidate] = field(default_factory=list)
    """Image candidates, best first; the ingest stage takes the first that downloads and
    validates."""
    page_kind: str = "article"
    """``article``, ``multimedia`` or ``non_article``."""
    kind_detail: str = ""
    """For multimedia: ``video``, ``gallery``, ``slideshow``, ``live_blog`` or ``podcast``;
    for a non-article: why."""

    @property
    def content_hash(self) -> str:
        return content_hash(self.text)


def content_hash(text: str) -> str:
    """Hash of an article's substance, equal for syndicated copies of the same text.

    Copies differ in bylines, credits and "originally published by" lines, so only paragraphs
    of at least eight words count, compared case- and punctuation-insensitively.
    """
    paragraphs = []
    for para in text.splitlines():
        words = re.findall(r"\w+", para.lower())
        if len(words) >= 8:
            paragraphs.append(" ".join(words))
    if not paragraphs:  # only short lines: hash them all rather than collide on ""
        paragraphs = [" ".join(re.findall(r"\w+", text.lower()))]
    return hashlib.sha256("\n".join(paragraphs).encode("utf-8")).hexdigest()


def decode_html(data: bytes, charset: str | None = None) -> str:
    """Decode a page: the HTTP charset, else a BOM or ``<meta charset>``, else UTF-8, else
    Windows-1252 (what browsers assume for undeclared Western pages). Never raises."""
    candidates = []
    if data.startswith(b"\xef\xbb\xbf"):
        candidates.append("utf-8-sig")
    elif data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        candidates.append("utf-16")
    if charset:
        candidates.append(charset)
    m = re.search(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_.:-]+)""", data[:4096], re.IGNORECASE)
    if m:
        candidates.append(m.group(1).decode("ascii"))
    candidates.append("utf-8")
    for enc in candidates:
        try:
            return data.decode(enc)
        except (LookupError, UnicodeDecodeError):
            continue
    return data.decode("cp1252", errors="replace")


@functools.lru_cache(maxsize=1)
def _segmenter():
    import pysbd

    return pysbd.Segmenter(language="en", clean=False)


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences with pysbd (rule-based; "Dr.", "U.S.", "Jan. 5", decimal
    numbers and initials do not end a sentence). Paragraph breaks always end one."""
    seg = _segmenter()
    out: list[str] = []
    for para in text.splitlines():
        if para.strip():
            out.extend(s.strip() for s in seg.segment(para) if s.strip())
    return out


def count_sentences(text: str, stop_at: int | None = None) -> int:
    """Number of sentences in ``text``; stops counting once ``stop_at`` is reached (the filter
    only needs to know whether there are enough)."""
    seg = _segmenter()
    n = 0
    for para in text.splitlines():
        if para.strip():
            n += sum(1 for s in seg.segment(para) if s.strip())
            if stop_at is not None and n >= stop_at:
                return n
    return n


def _meta(doc, *names: str) -> str:
    for name in names:
        for el in doc.xpath(f'//meta[@property="{name}" or @name="{name}" or @itemprop="{name}"]'):
            content = (el.get("content") or "").strip()
            if content:
                return content
    return ""


def _json_ld(doc) -> list[dict]:
    """All JSON-LD objects on the page, ``@graph`` and lists flattened. Malformed blocks
    are skipped (publishers ship broken JSON-LD often)."""
    out: list[dict] = []

    def walk(obj):
        if isinstance(obj, list):
            for o in obj:
                walk(o)
        elif isinstance(obj, dict):
            out.append(obj)
            if "@graph" in obj:
                walk(obj["@graph"])

    for script in doc.xpath('//script[@type="application/ld+json"]'):
        raw = (script.text or "").strip()
        if not raw:
            continue
        try:
            walk(json.loads(raw))
        except json.JSONDecodeError:
            try:  # trailing commas and control characters are the usual faults
                walk(json.loads(re.sub(r",\s*([}\]])", r"\1", raw), strict=False))
            except json.JSONDecodeError:
                logger.debug("skipping malformed JSON-LD block")
    return out


def _types(obj: dict) -> set[str]:
    """``@type`` values, lowercased, without a ``schema:`` prefix or ``https://schema.org/``."""
    t = obj.get("@type", [])
    return {re.split(r"[/:]", str(x))[-1].lower() for x in (t if isinstance(t, list) else [t])}


def _ld_text(value) -> str:
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, dict):
        return _ld_text(value.get("name") or value.get("url") or "")
    if isinstance(value, list) and value:
        return _ld_text(value[0])
    return ""


def _ld_images(value) -> list[tuple[str, str]]:
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        if isinstance(item, str):
            out.append((item, ""))
        elif isinstance(item, dict):
            src = item.get("url") or item.get("contentUrl") or ""
            if isinstance(src, str) and src:
                out.append((src, _ld_text(item.get("caption") or "")))
    return out


def _best_from_srcset(srcset: str) -> str:
    """The widest candidate of a ``srcset`` (``a.jpg 320w, b.jpg 1024w`` or ``1x, 2x``)."""
    best, best_w = "", -1.0
    for part in srcset.split(","):
        bits = part.strip().split()
        if not bits:
            continue
        w = 1.0
        if len(bits) > 1:
            m = re.match(r"([\d.]+)([wx])", bits[1])
            if m:
                w = float(m.group(1)) * (1 if m.group(2) == "w" else 1000)
        if w > best_w:
            best, best_w = bits[0], w
    return best


def _img_src(img) -> str:
    for attr in _LAZY_ATTRS:
        v = (img.get(attr) or "").strip()
        if v and not v.startswith("data:"):
            return v
    for attr in _SRCSET_ATTRS:
        v = (img.get(attr) or "").strip()
        if v:
            best = _best_from_srcset(v)
            if best and not best.startswith("data:"):
                return best
    src = (img.get("src") or "").strip()
    if src and not src.startswith("data:"):
        return src
    # <picture><source srcset=...><img src="data:..."></picture>
    parent = img.getparent()
    if parent is not None and parent.tag == "picture":
        for source in parent.findall("source"):
            for attr in _SRCSET_ATTRS:
                v = (source.get(attr) or "").strip()
                if v:
                    return _best_from_srcset(v)
    return ""


def _in_chrome(el, stop) -> bool:
    """True when ``el`` sits inside navigation, ads, author boxes and other page chrome."""
    node = el
    while node is not None and node is not stop:
        if node.tag in _CHROME_TAGS:
            return True
        marker = f"{node.get('class', '')} {node.get('id', '')} {node.get('role', '')}"
        if _CHROME_WORDS.search(marker):
            return True
        node = node.getparent()
    return False


def _too_small_declared(img) -> bool:
    for attr in ("width", "height"):
        v = (img.get(attr) or "").strip().rstrip("px")
        if v.isdigit() and int(v) < 48:
            return True
    return False


def _caption(img) -> str:
    node = img
    for _ in range(4):  # <figure><div><picture><img>: the figure is a few levels up
        node = node.getparent()
        if node is None:
            break
        if node.tag == "figure":
            cap = node.find(".//figcaption")
            if cap is not None:
                text = " ".join(cap.text_content().split())
                if text:
                    return text
            break
    return " ".join((img.get("alt") or img.get("title") or "").split())


def _article_root(doc):
    for xp in ('//*[@itemprop="articleBody"]', "//article", '//*[@role="main"]', "//main"):
        found = doc.xpath(xp)
        if found:
            el = found[0]
            # The lead photo is often just above the body, inside the enclosing <article>.
            if xp == '//*[@itemprop="articleBody"]':
                for anc in el.iterancestors():
                    if anc.tag == "article":
                        return anc
            return el
    return doc.find("body") if doc.find("body") is not None else doc


def is_usable_image_url(url: str) -> bool:
    """Cheap pre-download check: http(s), not SVG, not a pixel/logo/icon by its name."""
    return is_http_url(url) and not _BAD_IMAGE_URL.search(url)


def _article_images(doc, base: str) -> list[ImageCandidate]:
    root = _article_root(doc)
    out = []
    for img in root.iter("img", "amp-img"):
        if _in_chrome(img, root) or _too_small_declared(img):
            continue
        src = _img_src(img)
        if not src:
            continue
        out.append(ImageCandidate(urljoin(base, src), _caption(img), "article"))
    return out


def _multimedia_kind(url: str, og_type: str, types: set[str], headline: str, has_article_ld: bool) -> str:
    if og_type.startswith("video"):
        return "video"
    for t in types:
        if t in MULTIMEDIA_TYPES and (not has_article_ld or t == "liveblogposting"):
            return MULTIMEDIA_TYPES[t]
    for seg in urlsplit(url).path.lower().split("/"):
        if seg in MULTIMEDIA_SEGMENTS:
            return MULTIMEDIA_SEGMENTS[seg]
    m = MULTIMEDIA_TITLE.match(headline)
    if m:
        word = m.group(1).lower()
        return {"watch": "video", "listen": "podcast", "live": "live_blog", "in pictures": "gallery",
                "in photos": "gallery", "photos": "gallery"}.get(word, word)
    return ""


def extract_article(html: str, url: str) -> Extracted:
    """Extract headline, text, outlet, date, canonical URL and image candidates from a page.

    Args:
        html: The page, decoded (see :func:`decode_html`).
        url: The URL it was fetched from (after redirects); relative links resolve against it.

    Returns:
        :class:`Extracted`. ``page_kind`` tells multimedia and non-article pages apart; the
        caller decides what to drop.
    """
    import trafilatura

    result = Extracted(url=url, source_url=url)
    # lxml refuses str input that carries an XML encoding declaration (XHTML pages do).
    html = re.sub(r"^\s*<\?xml[^>]*\?>", "", html)
    try:
        doc = lxml.html.document_fromstring(html)
    except (etree.ParserError, ValueError):
        result.page_kind, result.kind_detail = "non_article", "unparseable"
        return result
    base = url
    base_el = doc.find(".//base[@href]")
    if base_el is not None and is_http_url(urljoin(url, base_el.get("href"))):
        base = urljoin(url, base_el.get("href"))

    ld = _json_ld(doc)
    types = set().union(*(_types(o) for o in ld)) if ld else set()
    ld_article = next((o for o in ld if _types(o) & (ARTICLE_TYPES | {"liveblogposting"})), None)

    # Canonical URL: rel=canonical, else og:url, else JSON-LD url, else the fetched URL.
    canonical = ""
    for el in doc.xpath('//link[@rel="canonical"][@href]'):
        canonical = urljoin(base, el.get("href").strip())
        break
    if not canonical and _meta(doc, "og:url"):
        canonical = urljoin(base, _meta(doc, "og:url"))
    if not canonical and ld_article and isinstance(ld_article.get("url"), str):
        canonical = urljoin(base, ld_article["url"])
    if not is_http_url(canonical or ""):
        canonical = strip_amp(url)
    result.url = canonicalize_url(canonical)

    doc_extract = trafilatura.bare_extraction(
        html, url=url, with_metadata=True, include_comments=False, include_tables=False, include_images=False
    )
    text = (getattr(doc_extract, "text", None) or "").strip() if doc_extract is not None else ""
    # One paragraph per line from trafilatura; the workdir separates them by blank lines.
    result.text = "\n\n".join(" ".join(line.split()) for line in text.splitlines() if line.strip())

    headline = (
        _ld_text(ld_article.get("headline")) if ld_article else ""
    ) or _meta(doc, "og:title", "twitter:title") or (getattr(doc_extract, "title", None) or "")
    if not headline:
        title = doc.find(".//title")
        headline = title.text_content() if title is not None else ""
    result.headline = " ".join(headline.split())
    paras = result.text.split("\n\n")
    if paras and result.headline and paras[0].strip() == result.headline:
        # trafilatura keeps the <h1>; the headline is its own field.
        result.text = "\n\n".join(paras[1:])

    outlet = _meta(doc, "og:site_name", "application-name")
    if not outlet and ld_article:
        outlet = _ld_text(ld_article.get("publisher"))
    result.outlet_guessed = not outlet
    result.outlet = " ".join((outlet or getattr(doc_extract, "sitename", None) or "").split())

    published = (_ld_text(ld_article.get("datePublished")) if ld_article else "") or _meta(
        doc, "article:published_time", "datePublished", "pubdate", "publishdate", "date", "dc.date", "DC.date.issued"
    )
    if not published:
        times = doc.xpath("//time[@datetime]")
        published = times[0].get("datetime") if times else ""
    result.published = _iso_date(published) or _iso_date(getattr(doc_extract, "date", None) or "")

    images = _article_images(doc, base)
    og_image = _meta(doc, "og:image:secure_url", "og:image", "og:image:url", "twitter:image", "twitter:image:src")
    if og_image:
        images.append(ImageCandidate(urljoin(base, og_image), _meta(doc, "og:image:alt", "twitter:image:alt"), "og:image"))
    if ld_article and ld_article.get("image"):
        images.extend(ImageCandidate(urljoin(base, u), c, "json-ld") for u, c in _ld_images(ld_article["image"]))
    seen: set[str] = set()
    for cand in images:
        if cand.url not in seen and is_usable_image_url(cand.url):
            seen.add(cand.url)
            result.images.append(cand)

    og_type = _meta(doc, "og:type").lower()
    kind = _multimedia_kind(result.url, og_type, types, result.headline, ld_article is not None)
    if kind:
        result.page_kind, result.kind_detail = "multimedia", kind
    elif not result.text:
        result.page_kind, result.kind_detail = "non_article", "no_text"
    elif urlsplit(result.url).path in ("", "/"):
        result.page_kind, result.kind_detail = "non_article", "home_page"
    elif og_type and og_type != "article" and ld_article is None:
        result.page_kind, result.kind_detail = "non_article", f"og:type {og_type}"
    elif len(result.text) < 1000 and not (
        og_type == "article" or ld_article is not None or published or doc.xpath("//article|//*[@itemprop='articleBody']")
    ):
        # Nothing marks the page as an article and trafilatura found only scraps (menus,
        # teasers): an index or error page, not a story.
        result.page_kind, result.kind_detail = "non_article", "no_article_markup"
    return result


def _iso_date(value: str) -> str | None:
    """Normalise a page's date to ISO 8601 (keeping its timezone), or None."""
    import datetime as dt

    value = (value or "").strip()
    if not value:
        return None
    v = value.replace("Z", "+00:00")
    try:
        return dt.datetime.fromisoformat(v).isoformat()
    except ValueError:
        pass
    try:
        import email.utils

        return email.utils.parsedate_to_datetime(value).isoformat()
    except (TypeError, ValueError, IndexError):
        pass
    m = re.match(r"(\d{4}-\d{2}-\d{2})", value)
    return m.group(1) if m else None
