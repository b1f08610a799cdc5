"""The article's first image: the in-article ``<img>``/``<picture>`` candidates of a page, with
lazy-loading attributes resolved and page chrome (navigation, share bars, author boxes, related
stories) skipped. :mod:`vilbias.ingest.extract` falls back to ``og:image`` after these."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urljoin

from vilbias.ingest.text import squash
from vilbias.ingest.urls import is_http_url

# trafilatura and pysbd are imported where they are used: together they take ~0.4 s to import,
# which `vilbias ingest --help` and the fetcher alone should not pay.

# Containers whose images are chrome, not the article's photo.
_CHROME_TAGS = {"nav", "footer", "aside", "header", "form", "button"}


_CHROME_WORDS = re.compile(
    r"(^|[-_\s])(logo|icon|avatar|author|byline|social|share|sharing|sponsor|promo|advert|ad|ads|"
    r"related|recommended|newsletter|masthead|navbar|nav|menu|footer|sidebar|teaser|outbrain|taboola)([-_\s]|$)",
    re.IGNORECASE,
)


_BAD_IMAGE_URL = re.compile(
    r"(\.svgz?($|\?)|^data:|/pixel|pixel\.(gif|png)|spacer|(blank|empty|leer|transparent)\.(gif|png|jpe?g)|"
    r"1x1|tracking|/beacon|/banners?/|logo|favicon|sprite|/icons?/|icon[-_.]|avatar|placeholder|gravatar)",
    re.IGNORECASE,
)


_LAZY_ATTRS = ("data-src", "data-lazy-src", "data-original", "data-lazy", "data-url", "data-hi-res-src")


_OTHER_LAZY_ATTR = re.compile(r"^data-[\w-]*src$")


_SRCSET_ATTRS = ("srcset", "data-srcset", "data-lazy-srcset")


@dataclass
class ImageCandidate:
    url: str
    caption: str = ""
    origin: str = "article"
    """``article`` (in the article body), ``og:image`` or ``json-ld``."""


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


def _lazy_src(img) -> str:
    """The real source of a lazy-loaded image (``data-src``, ``data-retina-src``, ...)."""
    for attr in _LAZY_ATTRS + tuple(a for a in img.attrib if _OTHER_LAZY_ATTR.match(a) and a not in _LAZY_ATTRS):
        v = (img.get(attr) or "").strip()
        if v and not v.startswith("data:"):
            return v
    return ""


def _img_src(img) -> str:
    lazy = _lazy_src(img)
    src = (img.get("src") or "").strip()
    if lazy:
        # A data-src that src extends is a template a script completes ("bild/wide" ->
        # "bild/wide__822x462"): src is then the finished URL.
        return src if src.startswith(lazy) and len(src) > len(lazy) else lazy
    for attr in _SRCSET_ATTRS:
        v = (img.get(attr) or "").strip()
        if v:
            best = _best_from_srcset(v)
            if best and not best.startswith("data:"):
                return best
    # <picture><source srcset=...><img src="small.jpg or data:..."></picture>: the widest source.
    # lxml's HTML parser nests an unclosed <source> around what follows: search the <picture>.
    picture = next(img.iterancestors("picture"), None)
    if picture is not None:
        srcsets = [(s.get(a) or "").strip() for s in picture.iter("source") for a in _SRCSET_ATTRS]
        best = _best_from_srcset(", ".join(v for v in srcsets if v))
        if best and not best.startswith("data:"):
            return best
    return src if not src.startswith("data:") else ""


def in_chrome(el, stop, story: set) -> bool:
    """True when ``el`` is or sits inside navigation, ads, author boxes and other page chrome
    (below ``stop``).

    ``story`` holds the containers of the headline and of the text: a ``<header>`` that holds
    the headline, or a wrapper whose class happens to say "menu" around the whole story, is the
    article's own.
    """
    node = el
    while node is not None and node is not stop:
        if node not in story:
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
                text = squash(cap.text_content())
                if text:
                    return text
            break
    return squash(img.get("alt") or img.get("title") or "")


def is_usable_image_url(url: str) -> bool:
    """Cheap pre-download check: http(s), not SVG, not a pixel/logo/icon/banner by its name."""
    return is_http_url(url) and not _BAD_IMAGE_URL.search(url)


def in_article_images(root, base: str, story: set) -> list[ImageCandidate]:
    out = []
    for img in root.iter("img", "amp-img"):
        if in_chrome(img, root, story) or _too_small_declared(img):
            continue
        src = _img_src(img)
        if src:
            out.append(ImageCandidate(urljoin(base, src), _caption(img), "article"))
    return out
