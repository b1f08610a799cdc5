"""Sentences, split one way everywhere: the ingest filter counts them, the sentence model and the
Space read an article by them. pysbd is imported on first use (with trafilatura it is most of
``vilbias ingest``'s import time). Safe from any number of threads at once (the Space splits each
request's article in its request thread)."""

from __future__ import annotations


def _segmenter(language: str):
    # A new one each call (~0.4 µs): a Segmenter keeps the text it is splitting on itself, so one
    # shared by several threads (a Space's requests, a pipeline's workers) loses sentences.
    import pysbd
    from pysbd.languages import LANGUAGE_CODES

    return pysbd.Segmenter(language=language if language in LANGUAGE_CODES else "en", clean=False)


def split_sentences(text: str, language: str = "en") -> list[str]:
    """Split ``text`` into sentences with pysbd's rules for ``language`` (ISO 639-1; English
    when pysbd has no rules for it): "Dr.", "U.S.", "Jan. 5", decimal numbers and initials do
    not end a sentence, nor German ordinals ("am 8. März"). Paragraph breaks always end one."""
    seg = _segmenter(language)
    out: list[str] = []
    for para in text.splitlines():
        if para.strip():
            out.extend(s.strip() for s in seg.segment(para) if s.strip())
    return out


def count_sentences(text: str, stop_at: int | None = None, language: str = "en") -> int:
    """Number of sentences in ``text`` (as :func:`split_sentences` splits them); stops counting
    once ``stop_at`` is reached (the filter only needs to know whether there are enough)."""
    seg = _segmenter(language)
    n = 0
    for para in text.splitlines():
        if para.strip():
            n += sum(1 for s in seg.segment(para) if s.strip())
            if stop_at is not None and n >= stop_at:
                return n
    return n
