"""From an article page's HTML to the fields of a corpus record.

:func:`extract_article` is pure (HTML and URL in, :class:`Extracted` out) so the ingest stage,
the Space and the tests share it. The text comes from ``trafilatura``; the page's metadata
(``og:*``, ``article:*``, JSON-LD ``NewsArticle``, ``rel=canonical``) fills and overrides what
trafilatura guesses, because publishers maintain it for search engines and it is more reliable.

**The headline** is the one the reader sees: the ``<h1>``/``<h2>`` that a metadata title
(JSON-LD ``headline``, ``og:title``, ``twitter:title``, ``<title>``) names. Metadata titles are
search-engine titles and often carry the site's name (``... | The Guardian``); without a
matching heading, the first metadata title is used with that suffix removed.

**The text** is trafilatura's, one paragraph per block. What trafilatura keeps that is not the
story is removed at its edges: the headline copy and the kicker above it, bylines, datelines
and the lead photo's caption before the first sentence; copyright lines, photo credits and
headings with nothing under them after the last. Other stories' teasers go wherever they are
(:func:`_drop_teasers`): a line that is mostly a link to another page of the same site, or an
excerpt in a small box headed by such a link — decided from the page's links, so it holds for
any site without rules of its own.

**The outlet** is the publisher the article's JSON-LD names before ``og:site_name``, which is
often a section ("U.S." on Reuters), a handle or a slogan. **The language** is detected from
the headline and text (:func:`vilbias.languages.item_language`).

**The image.** The corpus pairs each article with its *first* image, i.e. the first photo a
reader sees in the article: the lead ``<figure>``/``<picture>``/``<img>`` of the article (the
``<article>``/``articleBody`` that holds the headline), lazy-loading attributes (``data-src``,
``srcset``, ...) resolved, page chrome (navigation, share bars, author boxes, related stories)
skipped. ``og:image`` is a *fallback*, tried after the in-article candidates: it is a
social-media card chosen for sharing, often cropped, sometimes branded or a site-wide default
logo, and not always in the article at all. When the page has no usable in-article image,
``og:image`` (then JSON-LD ``image``) is used. The caption is the image's ``<figcaption>``, else
its ``alt`` text, else ``title``; for ``og:image`` it is ``og:image:alt``.

Why this module is long: every rule that decides what of a page is the article (metadata over
trafilatura's guess, the article/non-article evidence, the first image and its caption) is one
pure function's reasoning, tested page by page; split, its rules would be read apart from each other.
"""

from __future__ import annotations

import html as html_entities
import json
import logging
import re
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

import lxml.html
from lxml import etree

from vilbias.ingest.page_images import (
    ImageCandidate,
    in_article_images,
    in_chrome,
    is_usable_image_url,
)
from vilbias.ingest.text import content_hash, squash
from vilbias.ingest.urls import canonicalize_url, is_http_url, strip_amp
from vilbias.languages import item_language
from vilbias.workdir import iso_date

# trafilatura and pysbd are imported where they are used: together they take ~0.4 s to import,
# which `vilbias ingest --help` and the fetcher alone should not pay.

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
# The last path segment of pages about the site itself rather than a story.
SITE_PAGES = {
    "about", "about-us", "aboutus", "who-we-are", "what-we-do", "contact", "contact-us", "imprint",
    "impressum", "privacy", "privacy-policy", "datenschutz", "terms", "terms-of-use", "terms-of-service",
    "tos", "legal", "faq", "help", "jobs", "careers", "team", "mission", "subscribe", "newsletter",
    "mentions-legales", "a-propos", "ueber-uns",
}
# `<meta name="generator">` of wiki engines, and the folder of a URL path, that make a page a
# reference entry, not a news story (`/wiki/<entry>`).
WIKI_GENERATORS = re.compile(r"mediawiki|dokuwiki|confluence|tiddlywiki|moinmoin|xwiki|wiki\.js", re.IGNORECASE)
WIKI_SEGMENTS = {"wiki", "wikis"}
# og:type values sites put on every page they have (the Open Graph default, "website", above all):
# they say nothing about the page at hand, whose own text and structure decide. Any other og:type
# (profile, product, book, music.song ...) is the page's statement about itself.
SITE_WIDE_OG_TYPES = {"website", "blog"}
# JSON-LD types with which a page says it is something other than a story (without an article type).
NON_ARTICLE_LD_TYPES = {
    "aboutpage", "checkoutpage", "collectionpage", "contactpage", "faqpage", "profilepage", "qapage", "searchresultspage",
    "product", "jobposting",
}
_DATE_METAS = ("article:published_time", "datePublished", "pubdate", "publishdate", "date", "dc.date", "DC.date.issued")
# " | ", " - ", " » " ...: what joins a title to the site's name in <title> and og:title.
_LINE_BREAK = "\u2028"
# Elements of trafilatura's output tree that hold paragraphs rather than inline text.
_BLOCK_TAGS = {"p", "head", "list", "quote", "table", "div", "section", "article", "main", "blockquote"}
_SVG = re.compile(r"\.svgz?$", re.IGNORECASE)
_TITLE_SEPARATOR = re.compile(r"\s+[|\-–—»«›‹·•]\s+")
# A teaser card is a small box (its text under this many characters) a few levels above its excerpt.
_TEASER_DEPTH, _TEASER_CHARS = 4, 1500
_SENTENCE_END = re.compile(r"[.!?…:;\"'“”»«)]$")
_END_MATTER = re.compile(
    r"^(©|\(c\)\s|copyright\b|(header image|beitragsbild|titelbild|aufmacherbild|photo|foto|bild|image|picture|"
    r"crédit photo|crédits?|credits?)\b[^:]{0,12}:)",
    re.IGNORECASE,
)


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
    drawings: list[str] = field(default_factory=list)
    """SVG images the page names where its candidates are (left out of :attr:`images`: a vector
    drawing is no photo), so a page that has only these is said to, not to have no image."""
    page_kind: str = "article"
    """``article``, ``multimedia`` or ``non_article``."""
    kind_detail: str = ""
    """For multimedia: ``video``, ``gallery``, ``slideshow``, ``live_blog`` or ``podcast``;
    for a non-article: why."""
    language: str = ""
    """The language of the headline and text (ISO 639-1), detected from them
    (:func:`vilbias.languages.detect_language`); when they are too short to tell, the one the
    page declares (``<html lang>``, ``og:locale``, ``Content-Language``); "" when neither says.
    Sentences are split by its rules. A declaration alone is not trusted: templates declare the
    site's language over articles in others."""

    @property
    def content_hash(self) -> str:
        return content_hash(self.text)


def _key(text: str) -> str:
    """A title or caption reduced to its lowercase words, for comparing spellings of it."""
    return " ".join(re.findall(r"\w+", text.lower()))


def _metas(doc, name: str) -> list[str]:
    """Every non-empty ``content`` of the page's ``<meta>`` tags named ``name``."""
    els = doc.xpath(f'//meta[@property="{name}" or @name="{name}" or @itemprop="{name}"]')
    return [c for c in ((el.get("content") or "").strip() for el in els) if c]


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


@dataclass
class _Page:
    """A parsed page and the metadata every extraction step reads."""

    doc: lxml.html.HtmlElement
    url: str
    base: str
    """Where relative links resolve: ``<base href>`` when it is http(s), else ``url``."""
    ld_types: set[str]
    ld_article: dict | None
    og_type: str
    ld_nodes: dict[str, dict] = field(default_factory=dict)
    """JSON-LD objects by ``@id``: a ``publisher`` is often a reference (``{"@id": "#org"}``) to one."""

    @property
    def declares_article(self) -> bool:
        """The page's metadata calls it an article or gives it a publication date."""
        return self.og_type == "article" or self.ld_article is not None or bool(_meta(self.doc, *_DATE_METAS))


def _parse_page(html: str, url: str) -> _Page | None:
    # lxml refuses str input that carries an XML encoding declaration (XHTML pages do).
    html = re.sub(r"^\s*<\?xml[^>]*\?>", "", html)
    try:
        doc = lxml.html.document_fromstring(html)
    except (etree.ParserError, ValueError):
        return None
    base = url
    base_el = doc.find(".//base[@href]")
    if base_el is not None and is_http_url(urljoin(url, base_el.get("href"))):
        base = urljoin(url, base_el.get("href"))
    ld = _json_ld(doc)
    return _Page(
        doc=doc,
        url=url,
        base=base,
        ld_types=set().union(*(_types(o) for o in ld)) if ld else set(),
        ld_article=next((o for o in ld if _types(o) & (ARTICLE_TYPES | {"liveblogposting"})), None),
        og_type=_meta(doc, "og:type").lower(),
        ld_nodes={o["@id"]: o for o in ld if isinstance(o.get("@id"), str) and len(o) > 1},
    )


def _language(page: _Page) -> str:
    """ISO 639-1 code the page declares (``de`` for ``de-DE``), or ""."""
    declared = (
        page.doc.get("lang")
        or _meta(page.doc, "og:locale", "language", "content-language")
        or next(iter(page.doc.xpath('//meta[@http-equiv="content-language" or @http-equiv="Content-Language"]/@content')), "")
    )
    code = re.split(r"[-_,;\s]", declared.strip().lower(), maxsplit=1)[0]
    return code if re.fullmatch(r"[a-z]{2}", code) else ""


def _canonical_url(page: _Page) -> str:
    """rel=canonical, else og:url, else JSON-LD url, else the fetched URL; normalised."""
    canonical = ""
    for el in page.doc.xpath('//link[@rel="canonical"][@href]'):
        canonical = urljoin(page.base, el.get("href").strip())
        break
    if not canonical and _meta(page.doc, "og:url"):
        canonical = urljoin(page.base, _meta(page.doc, "og:url"))
    if not canonical and page.ld_article and isinstance(page.ld_article.get("url"), str):
        canonical = urljoin(page.base, page.ld_article["url"])
    if not is_http_url(canonical or ""):
        canonical = strip_amp(page.url)
    return canonicalize_url(canonical)


def _main_text(html: str, url: str):
    """trafilatura's reading of the page: ``(blocks, document)``, blocks as in :func:`_blocks`."""
    import trafilatura

    document = trafilatura.bare_extraction(
        html, url=url, with_metadata=True, include_comments=False, include_tables=False, include_images=False
    )
    body = getattr(document, "body", None)
    if body is None:
        return [], document
    # <lb/> is a <br>: it ends a paragraph in the text as it did on the page.
    for lb in body.iter("lb"):
        lb.tail = _LINE_BREAK + (lb.tail or "")
    return [(tag, text) for tag, text in _blocks(body) if text.strip("- ")], document


def _lines(tag: str, text: str) -> list[tuple[str, str]]:
    """A block's text split at its ``<br>``s, except where the line goes on: a break after a
    word that ends no sentence, before a lowercase word, is a soft wrap ("Ausschüttung<br>
    verändert.")."""
    lines: list[str] = []
    for line in (squash(part) for part in text.split(_LINE_BREAK)):
        if lines and line[:1].islower() and lines[-1] and not _SENTENCE_END.search(lines[-1]):
            lines[-1] += " " + line
        else:
            lines.append(line)
    return [(tag, line) for line in lines]


def _blocks(element) -> list[tuple[str, str]]:
    """``(tag, text)`` per paragraph, heading or list item of trafilatura's output tree,
    whitespace squashed: a line break in the HTML source inside a paragraph is not a paragraph
    break. trafilatura's fallback extractors keep nested ``<div>``s; they are walked through."""
    if element.tag == "list":
        return [("item", "- " + squash("".join(item.itertext()))) for item in element.findall("item")]
    if not any(child.tag in _BLOCK_TAGS for child in element):
        return _lines(element.tag, "".join(element.itertext()))
    out: list[tuple[str, str]] = []
    run = [element.text or ""]  # text between block children belongs to no child: its own block
    for child in element:
        if child.tag in _BLOCK_TAGS:
            out += _lines(element.tag, "".join(run)) + _blocks(child)
            run = [child.tail or ""]
        else:
            run += [*child.itertext(), child.tail or ""]
    return out + _lines(element.tag, "".join(run))


def _publisher(page: _Page) -> str:
    """The publisher the article's JSON-LD names (a reference to an ``Organization`` node
    followed), or ""."""
    publisher = page.ld_article.get("publisher") if page.ld_article else None
    if isinstance(publisher, list):
        publisher = publisher[0] if publisher else None
    if isinstance(publisher, dict) and not publisher.get("name") and isinstance(publisher.get("@id"), str):
        publisher = page.ld_nodes.get(publisher["@id"], publisher)
    if isinstance(publisher, dict):
        publisher = publisher.get("name")
    return squash(html_entities.unescape(publisher)) if isinstance(publisher, str) else ""


def _site_names(page: _Page) -> list[str]:
    names = [_meta(page.doc, "og:site_name", "application-name", "twitter:site").lstrip("@")]
    if page.ld_article:
        names.append(_publisher(page))
    # Host labels: "meedia" in meedia.de, "scilogs" in scilogs.spektrum.de.
    labels = (urlsplit(page.url).hostname or "").lower().split(".")
    names += [label for label in labels[:-1] if len(label) >= 4 and label not in ("www", "blog", "news")]
    return [_key(n).replace(" ", "") for n in names if _key(n)]


def _strip_site_name(title: str, site_names: list[str]) -> str:
    """``Story - Stack Overflow Blog`` -> ``Story``; a title without a site suffix is kept.

    Separators are tried from the right, over tails of at most five words, so a separator
    inside the headline itself ("Zugverkehr - Im ICE ... | ZEIT ONLINE") is left alone.
    """
    for m in reversed(list(_TITLE_SEPARATOR.finditer(title))):
        tail = _key(title[m.end():])
        if len(tail.split()) > 5:
            break
        tail = tail.replace(" ", "")
        if tail and any(name in tail or tail in name for name in site_names if len(name) >= 3):
            return title[: m.start()].strip()
    return title


def _title_variants(page: _Page) -> list[str]:
    """The page's metadata titles, best first, each also without its site-name suffix."""
    doc = page.doc
    raw = [
        _ld_text(page.ld_article.get("headline")) if page.ld_article else "",
        *_metas(doc, "og:title"),
        *_metas(doc, "twitter:title"),
        doc.findtext(".//title") or "",
    ]
    # html.unescape: CMSs double-escape entities in metadata ("&#8216;" arriving as text).
    raw = [squash(html_entities.unescape(t)) for t in raw if t and t.strip()]
    names = _site_names(page)
    out: list[str] = []
    for title in raw:
        out += [_strip_site_name(title, names), title]
    return list(dict.fromkeys(t for t in out if t))


def _title_headings(page: _Page, title_keys: set[str]) -> list:
    """The ``<h1>``/``<h2>`` elements that show one of the page's titles, in document order."""
    return [h for h in page.doc.iter("h1", "h2") if _key(h.text_content()) in title_keys]


def _headline(titles: list[str], headings: list, fallback: str) -> str:
    """The visible heading that the best metadata title names (an ``<h1>`` before an
    ``<h2>``), else the first metadata title, else ``fallback`` (trafilatura's guess)."""
    for title in titles:
        matching = [h for h in headings if _key(h.text_content()) == _key(title)]
        if matching:
            best = next((h for h in matching if h.tag == "h1"), matching[0])
            return squash(best.text_content())
    return titles[0] if titles else squash(fallback)


def _is_kicker(text: str) -> bool:
    """A section label, byline or dateline: a few words that do not end like a sentence."""
    return len(text.split()) <= 5 and not _SENTENCE_END.search(text)


def _is_caption(text: str, caption_keys: list[str]) -> bool:
    """An image caption, possibly followed by a short credit ("... Bild: dpa")."""
    key = _key(text)
    return any(len(c.split()) >= 3 and key.startswith(c) and len(key.split()) - len(c.split()) <= 4 for c in caption_keys)


def _trim_start(blocks: list[tuple[str, str]], title_keys: set[str], caption_keys: list[str]) -> list[tuple[str, str]]:
    """Drop the headline copy (and a kicker above it), bylines, datelines and captions before
    the first sentence of the story."""
    for i, (_, text) in enumerate(blocks[:4]):
        if _key(text) in title_keys:
            # A kicker above the headline copy goes too, a standfirst above it stays.
            blocks = [b for b in blocks[:i] if not _is_kicker(b[1])] + blocks[i + 1:]
            break
    while blocks and (_is_kicker(blocks[0][1]) or _is_caption(blocks[0][1], caption_keys)):
        blocks = blocks[1:]
    return blocks


def _trim_end(blocks: list[tuple[str, str]], site_names: list[str]) -> list[tuple[str, str]]:
    """Drop copyright lines, photo credits, headings and labels with nothing under them, a
    closing list under a label ("Editors' Recommendations:"), which is a reading list, and a
    closing section headed with the outlet's own name ("CORRECTIV ist spendenfinanziert!"),
    which is an appeal for donations or subscriptions."""
    names = [n for n in site_names if len(n) >= 5]
    for i in range(max(0, len(blocks) - 3), len(blocks)):
        if blocks[i][0] == "head" and any(n in _key(blocks[i][1]).replace(" ", "") for n in names):
            blocks = blocks[:i]
            break
    while blocks:
        tag, text = blocks[-1]
        if tag == "item":
            start = len(blocks) - 1
            while start > 0 and blocks[start - 1][0] == "item":
                start -= 1
            if start == 0 or not blocks[start - 1][1].endswith(":"):
                break
            blocks = blocks[: start - 1]
        elif tag == "head" or _END_MATTER.match(text) or text.endswith(":"):
            blocks = blocks[:-1]
        else:
            break
    return blocks


def _story_text(
    blocks: list[tuple[str, str]], title_keys: set[str], caption_keys: list[str], site_names: list[str]
) -> str:
    """The article text: trafilatura's blocks without what surrounds the story, paragraphs
    separated by a blank line."""
    blocks = _trim_start(blocks, title_keys, caption_keys)
    blocks = [b for b in blocks if not _is_caption(b[1], caption_keys)]
    return "\n\n".join(text for _, text in _trim_end(blocks, site_names))


def _text_anchor(doc, blocks: list[tuple[str, str]]):
    """The element holding the start of the story: its first sentence-length block."""
    for _, text in blocks:
        if len(text.split()) >= 8:
            holders = _text_holders(doc, text)
            return holders[0] if holders else None
    return None


def _text_holders(doc, text: str) -> list:
    """The elements whose own text starts ``text`` on the page (script and style aside)."""
    words = text.lstrip("- ").split()
    for n in (6, 3):  # fewer words when inline markup splits the text's start
        nodes = doc.xpath(
            "//body//text()[contains(normalize-space(.), $s)][not(ancestor::script)][not(ancestor::style)]",
            s=" ".join(words[:n]),
        )
        if nodes:
            return [
                node.getparent().getparent() if node.is_tail and node.getparent().getparent() is not None else node.getparent()
                for node in nodes
            ]
    return []


def _drop_chrome_lines(blocks: list[tuple[str, str]], doc, story: set) -> list[tuple[str, str]]:
    """Drop short blocks trafilatura took from page chrome: an author box's "Editor, Business
    desk", a share bar's label. A block is dropped when every place it occurs on the page is
    inside chrome (see :func:`in_chrome`)."""
    out = []
    for tag, text in blocks:
        if len(text.split()) <= 12:
            holders = _text_holders(doc, text)
            if holders and all(in_chrome(h, None, story) for h in holders):
                continue
        out.append((tag, text))
    return out


def _same_site_elsewhere(href: str | None, page: _Page, own: set[str]) -> bool:
    """``href`` leads to another page of the same site (an internal link that is not the
    article's own address: a teaser's, not a source's or a share button's)."""
    if not href or href.startswith(("#", "javascript:", "mailto:")):
        return False
    target = urljoin(page.base, href.strip())
    if not is_http_url(target):
        return False
    host, site = (urlsplit(u).hostname or "" for u in (target, page.url))
    if host.removeprefix("www.") != site.removeprefix("www."):
        return False
    try:
        return canonicalize_url(target) not in own
    except ValueError:
        return False


def _in_teaser(holder, text: str, page: _Page, story: set, own: set[str]) -> bool:
    """Whether the element showing ``text`` is another story's teaser: the text is (at least two thirds)
    a link to another page of the site (a related headline, "Read the rest"), or it sits in a
    small box headed by such a link (a teaser card's excerpt). The story's own containers never are."""
    link = holder if holder.tag == "a" else next(holder.iterancestors("a"), None)
    links = [link] if link is not None else list(holder.iter("a"))
    linked = sum(len(squash(a.text_content())) for a in links if _same_site_elsewhere(a.get("href"), page, own))
    if 3 * linked >= 2 * len(text.lstrip("- ")):
        return True
    node = holder
    for _ in range(_TEASER_DEPTH):
        node = node.getparent()
        if node is None or node in story:
            return False
        if len(squash(node.text_content())) > _TEASER_CHARS:
            return False
        for heading in node.iter("h1", "h2", "h3", "h4", "h5", "h6"):
            if any(_same_site_elsewhere(a.get("href"), page, own) for a in heading.iter("a")):
                return True
    return False


def _drop_teasers(blocks: list[tuple[str, str]], page: _Page, story: set, own: set[str]) -> list[tuple[str, str]]:
    """Drop the blocks that are other stories' teasers wherever they show on the page
    (:func:`_in_teaser`): "more from the site" cards, related headlines and recommendation
    lists that trafilatura takes for part of the text. Decided from the page's links, not from
    class names or wording, so it holds for any site."""
    links = [a for a in page.doc.iter("a") if _same_site_elsewhere(a.get("href"), page, own)]
    if not links:
        return blocks
    # What a teaser's text can be, gathered once: the links' texts and the texts of the small
    # boxes headed by one. Only a block found in them is looked up on the page (the lookup is
    # the costly part).
    link_texts = {squash(a.text_content()) for a in links} - {""}
    boxes: set[str] = set()
    for a in links:
        node = next(a.iterancestors("h1", "h2", "h3", "h4", "h5", "h6"), None)
        for _ in range(2 * _TEASER_DEPTH if node is not None else 0):  # a superset of what _in_teaser climbs
            node = node.getparent()
            if node is None or node in story:
                break
            box = squash(node.text_content())
            if len(box) > _TEASER_CHARS:
                break
            boxes.add(box)
    out = []
    for tag, text in blocks:
        body = text.lstrip("- ")
        if 3 * sum(len(t) for t in link_texts if t in body) < 2 * len(body) and not any(body in box for box in boxes):
            out.append((tag, text))
            continue
        # where the text starts; else (its start split by inline links) the elements that show it whole
        holders = _text_holders(page.doc, text) or page.doc.xpath(
            "//body//*[normalize-space(.)=$s][not(ancestor-or-self::script)]", s=text.lstrip("- "))
        if holders and all(_in_teaser(h, text, page, story, own) for h in holders):
            continue
        out.append((tag, text))
    return out


def _article_root(page: _Page, headings: list):
    """The element that holds the story: the ``<article>`` (or ``articleBody``, widened to its
    enclosing ``<article>``) that shows the headline, else the first one, else ``<main>``."""
    doc = page.doc
    candidates = [next(el.iterancestors("article"), el) for el in doc.xpath('//*[@itemprop="articleBody"]')]
    candidates += doc.xpath("//article")
    for candidate in candidates:
        if any(candidate in h.iterancestors() for h in headings):
            return candidate
    if candidates:
        return candidates[0]
    for xp in ('//*[@role="main"]', "//main"):
        found = doc.xpath(xp)
        if found:
            return found[0]
    return doc.find("body") if doc.find("body") is not None else doc


def _image_candidates(page: _Page, article_images: list[ImageCandidate]) -> tuple[list[ImageCandidate], list[str]]:
    """In-article images, then og:image, then JSON-LD image; de-duplicated, usable URLs only. Also
    the SVG drawings among them, which are not candidates."""
    doc, base = page.doc, page.base
    images = list(article_images)
    og_image = _meta(doc, "og:image:secure_url", "og:image", "og:image:url", "twitter:image", "twitter:image:src")
    if og_image:
        images.append(ImageCandidate(urljoin(base, og_image), _meta(doc, "og:image:alt", "twitter:image:alt"), "og:image"))
    if page.ld_article and page.ld_article.get("image"):
        images.extend(ImageCandidate(urljoin(base, u), c, "json-ld") for u, c in _ld_images(page.ld_article["image"]))
    seen: set[str] = set()
    out, drawings = [], []
    for cand in images:
        if cand.url in seen:
            continue
        seen.add(cand.url)
        if is_usable_image_url(cand.url):
            out.append(cand)
        elif _SVG.search(urlsplit(cand.url).path):
            drawings.append(cand.url)
    return out, drawings


def _outlet(page: _Page, document) -> tuple[str, bool]:
    """The publisher's name, and whether it is only trafilatura's guess.

    The publisher the article's structured data names comes first: ``og:site_name`` is often a
    section ("U.S." on a Reuters story), a handle ("pcgamer") or a slogan. A name carrying a
    tagline ("MIXED.de | VR, AR und KI") is cut to the part that names the site's host.
    """
    outlet = squash(html_entities.unescape(_publisher(page) or _meta(page.doc, "og:site_name", "application-name")))
    guessed = not outlet
    return _site_part(outlet, page.url) if outlet else squash(getattr(document, "sitename", None) or ""), guessed


def _site_part(name: str, url: str) -> str:
    """``name`` without a tagline joined by a title separator: the part naming the URL's host
    (``News zu VR, AR und KI | MIXED.de`` -> ``MIXED.de``), else the first part."""
    parts = [p.strip() for p in _TITLE_SEPARATOR.split(name) if p.strip()]
    if len(parts) < 2:
        return name
    labels = [label for label in (urlsplit(url).hostname or "").lower().split(".")[:-1] if len(label) >= 3 and label != "www"]
    return next((p for p in parts if any(label in _key(p).replace(" ", "") for label in labels)), parts[0])


def _published(page: _Page, document) -> str | None:
    published = (_ld_text(page.ld_article.get("datePublished")) if page.ld_article else "") or _meta(page.doc, *_DATE_METAS)
    if not published:
        times = page.doc.xpath("//time[@datetime]")
        published = times[0].get("datetime") if times else ""
    return _iso_date(published) or _iso_date(getattr(document, "date", None) or "")


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


def _is_index_page(doc) -> bool:
    """Several ``<article>`` teasers and none long enough to be the story: a section front."""
    articles = doc.xpath("//article")
    return len(articles) >= 3 and all(len(squash(a.text_content())) < 1000 for a in articles)


def _prose_paragraphs(text: str) -> int:
    return sum(1 for p in text.split("\n\n") if len(p.split()) >= 8 and re.search(r"[.!?…][\"'“”»)]?$", p))


def _non_article_reason(page: _Page, result: Extracted) -> str:
    """Why the page is not a news article, or "" when it may be one.

    Only what the page says about itself counts: its URL, its text, its structure and its own
    declarations (an og:type other than a site-wide one, a JSON-LD type). An og:type of
    ``website``, which many news sites declare on every page, is no evidence either way."""
    path = urlsplit(result.url).path
    last_segment = re.sub(r"\.\w+$", "", path.rstrip("/").rsplit("/", 1)[-1].lower())
    if not result.text:
        # a section front's text is all teasers, which are not kept: say what the page is
        return "index_page" if not page.declares_article and _is_index_page(page.doc) else "no_text"
    fetched = urlsplit(result.source_url)
    if path in ("", "/") and fetched.path in ("", "/") and not fetched.query:
        # the page's own address, not only its canonical URL (which some sites set to the home
        # page on every page), and no query naming a post (/?p=959)
        return "home_page"
    if last_segment in SITE_PAGES:
        return "site_page"
    if WIKI_GENERATORS.search(_meta(page.doc, "generator")) or WIKI_SEGMENTS & set(path.strip("/").lower().split("/")[:-1]):
        return "wiki_page"
    if page.ld_article is None:
        if page.og_type and page.og_type != "article" and page.og_type not in SITE_WIDE_OG_TYPES:
            return f"og:type {page.og_type}"
        if declared := sorted(page.ld_types & NON_ARTICLE_LD_TYPES):
            return f"json-ld {declared[0]}"
    if not page.declares_article and _is_index_page(page.doc):
        return "index_page"
    marked = page.declares_article or page.doc.xpath("//article|//*[@itemprop='articleBody']")
    if not marked and _prose_paragraphs(result.text) < 3:
        # Nothing marks the page as an article (no article type, no date, no <article>) and its
        # text is not prose (menus, teasers, a list, a product's features): not a story.
        return "no_article_markup"
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
    result = Extracted(url=url, source_url=url)
    page = _parse_page(html, url)
    if page is None:
        result.page_kind, result.kind_detail = "non_article", "unparseable"
        return result
    result.url = _canonical_url(page)
    blocks, document = _main_text(html, url)
    titles = _title_variants(page)
    headings = _title_headings(page, {_key(t) for t in titles})
    result.headline = _headline(titles, headings, getattr(document, "title", None) or "")
    title_keys = {_key(t) for t in titles} | {_key(result.headline)}

    anchor = _text_anchor(page.doc, blocks)
    shown = [h for h in headings if squash(h.text_content()) == result.headline][:1]
    # The containers of the headline and of the text's start are the article's own, whatever
    # their class names say.
    story = {el for h in shown + ([anchor] if anchor is not None else []) for el in (h, *h.iterancestors())}
    article_images = in_article_images(_article_root(page, headings), page.base, story)
    captions = [_key(c.caption) for c in article_images if c.caption]
    blocks = _drop_chrome_lines(blocks, page.doc, story)
    blocks = _drop_teasers(blocks, page, story, {result.url, canonicalize_url(url)} if is_http_url(url) else {result.url})
    result.text = _story_text(blocks, title_keys, captions, _site_names(page))
    result.images, result.drawings = _image_candidates(page, article_images)
    result.outlet, result.outlet_guessed = _outlet(page, document)
    result.published = _published(page, document)
    result.language = item_language(result.headline, result.text) or _language(page)

    kind = _multimedia_kind(result.url, page.og_type, page.ld_types, result.headline, page.ld_article is not None)
    reason = "" if kind else _non_article_reason(page, result)
    if kind:
        result.page_kind, result.kind_detail = "multimedia", kind
    elif reason:
        result.page_kind, result.kind_detail = "non_article", reason
    return result


def _iso_date(value: str) -> str | None:
    """Normalise a page's date to ISO 8601 (keeping its timezone); a text that only starts with a
    date (``2024-10-01, updated ...``) gives that date; else None."""
    if iso := iso_date(value):
        return iso
    m = re.match(r"(\d{4}-\d{2}-\d{2})", (value or "").strip())
    return m.group(1) if m else None
