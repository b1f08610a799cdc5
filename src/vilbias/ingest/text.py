"""Text helpers of the ingest stage: decoding a page's bytes, hashing content (sentence splitting
is :mod:`vilbias.text`, which the models layer uses too)."""

from __future__ import annotations

import hashlib
import re

# trafilatura and pysbd are imported where they are used: together they take ~0.4 s to import,
# which `vilbias ingest --help` and the fetcher alone should not pay.

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


def squash(text: str) -> str:
    return " ".join(text.split())
