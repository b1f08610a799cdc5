"""Canonical URLs: the key articles are de-duplicated on.

The same story reaches a crawler under many spellings: with ``utm_*`` campaign tags, with a
``#comments`` fragment, as its AMP copy, with an upper-case host. :func:`canonicalize_url` maps
them to one spelling; the page's own ``rel=canonical`` / ``og:url`` (when present) is preferred by
the extractor before this normalisation runs.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

# Query parameters that identify a click, a campaign or a session, never the article.
TRACKING_PARAMS = frozenset(
    {
        "fbclid", "gclid", "dclid", "gbraid", "wbraid", "msclkid", "yclid", "twclid", "igshid",
        "mc_cid", "mc_eid", "_ga", "_gl", "ocid", "cmpid", "cmp", "icid", "ito", "ftag", "smid",
        "ref", "ref_src", "referrer", "s_cid", "sr_share",
        "guccounter", "guce_referrer", "guce_referrer_sig", "amp", "outputtype",
        "__twitter_impression", "at_medium", "at_campaign", "taid", "oc", "ved", "usg",
    }
)
TRACKING_PREFIXES = ("utm_", "hsa_", "pk_", "mtm_", "at_", "vero_", "oly_", "rb_clickid")

_DEFAULT_PORTS = {"http": 80, "https": 443}
# AMP copies: /amp/..., /.../amp, /....amp.html, amp.example.com, example-com.cdn.ampproject.org
_AMP_EXT = re.compile(r"\.amp(\.html?)$", re.IGNORECASE)
_AMP_PATH_SUFFIX = re.compile(r"/amp(/|\.html?)?$", re.IGNORECASE)
_AMP_PATH_PREFIX = re.compile(r"^/amp(?=/)", re.IGNORECASE)


def is_http_url(url: str) -> bool:
    """True for an absolute http(s) URL with a host; the only kind ingestion fetches."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)


def host_of(url: str) -> str:
    """The lowercase host of ``url`` (no port), the key of per-host limits."""
    return (urlsplit(url).hostname or "").lower()


def strip_amp(url: str) -> str:
    """Map a recognisable AMP URL to its likely canonical URL.

    Only used when the page does not name its canonical URL itself (AMP pages must, by spec,
    carry ``rel=canonical``, which always wins).
    """
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    path = parts.path
    if host.endswith(".cdn.ampproject.org"):
        # https://www-example-com.cdn.ampproject.org/c/s/www.example.com/a.html
        m = re.match(r"^/[a-z]/(s/)?(.+)$", path)
        if m:
            return ("https://" if m.group(1) else "http://") + m.group(2)
    if host.startswith("amp.") and "." in host[4:]:  # amp.example.com, not amp.com
        host = host[4:]
    new_path = _AMP_PATH_SUFFIX.sub("", _AMP_EXT.sub(r"\1", path)) or "/"
    new_path = _AMP_PATH_PREFIX.sub("", new_path)
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, new_path, parts.query, parts.fragment))


def canonicalize_url(url: str) -> str:
    """Normalise ``url`` for de-duplication.

    Lowercases scheme and host, drops the default port, userinfo and the fragment, removes
    tracking parameters (``utm_*``, ``fbclid``, ``gclid``, ...) and sorts the rest, maps AMP
    spellings to the article's URL, and drops a trailing ``index.html``. The path's case is kept
    (servers are case-sensitive there).

    Raises:
        ValueError: ``url`` is not an absolute http(s) URL.
    """
    if not is_http_url(url):
        raise ValueError(f"not an absolute http(s) URL: {url!r}")
    url = strip_amp(url.strip())
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower().rstrip(".")
    port = parts.port
    netloc = host if port in (None, _DEFAULT_PORTS.get(scheme)) else f"{host}:{port}"
    path = re.sub(r"/{2,}", "/", parts.path or "/")
    path = re.sub(r"/index\.html?$", "/", path, flags=re.IGNORECASE)
    query = [
        (k, v)
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
        if k.lower() not in TRACKING_PARAMS and not k.lower().startswith(TRACKING_PREFIXES)
    ]
    return urlunsplit((scheme, netloc, path, urlencode(sorted(query)), ""))
