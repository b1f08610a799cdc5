"""Sentences, split one way everywhere: the ingest filter counts them, the sentence model and the
Space read an article by them. pysbd is imported on first use (with trafilatura it is most of
``vilbias ingest``'s import time). :func:`split_sentences_fast` gives :func:`split_sentences`'s
very sentences for about half the CPU, from any number of threads (the Space splits with it)."""

from __future__ import annotations

import functools


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


# -- the same sentences for less CPU (the Space splits every article it is sent) -----------------


def split_sentences_fast(text: str, language: str = "en") -> list[str]:
    """:func:`split_sentences`'s very sentences (pysbd's own rules, run by pysbd) for about half
    its CPU, and safe to call from several threads at once (one ``pysbd.Segmenter`` keeps the text
    it segments on itself, so two threads sharing :func:`split_sentences`'s can lose sentences).

    Two of pysbd's steps are run without the work that cannot change their result
    (:class:`_Splitter`): the abbreviation scan applies each abbreviation's substitution once per
    paragraph instead of once per occurrence, and each sentence is placed back in the paragraph by
    ``str.find`` instead of a regular expression compiled for that sentence. pysbd's other
    patterns are compiled once (:func:`_pysbd_re`), not again whenever Python's own cache of 512
    has let them go."""
    splitter = _splitter(language)
    out: list[str] = []
    for para in text.splitlines():
        if para.strip():
            out.extend(s.strip() for s in splitter.segment(para) if s.strip())
    return out


@functools.cache
def _splitter(language: str) -> _Splitter:
    return _Splitter(_segmenter(language).language_module)


class _Splitter:
    """pysbd's ``Segmenter.segment`` (``clean=False``, no character spans) for one language,
    holding no state between calls. See :func:`split_sentences_fast`."""

    def __init__(self, language_module):
        from pysbd.abbreviation_replacer import AbbreviationReplacer
        from pysbd.processor import Processor

        _pysbd_re()  # pysbd's modules compile each pattern once from here on
        replacer = getattr(language_module, "AbbreviationReplacer", AbbreviationReplacer)
        base = AbbreviationReplacer
        if all(getattr(replacer, name) is getattr(base, name) for name in
               ("search_for_abbreviations_in_string", "scan_for_replacements", "replace_period_of_abbr")):
            # a language whose scan is pysbd's own (English and most): the scan that skips repeats
            fast = type(replacer.__name__, (replacer,), {"search_for_abbreviations_in_string": _search_for_abbreviations})
            language_module = type(language_module.__name__, (language_module,), {"AbbreviationReplacer": fast})
        self.lang = language_module
        self.processor = getattr(language_module, "Processor", Processor)

    def segment(self, text: str) -> list[str]:
        if not text:
            return []
        return _placed(self.processor(text, self.lang, char_span=False).process(), text)


def _search_for_abbreviations(self, text: str) -> str:
    """pysbd's ``AbbreviationReplacer.search_for_abbreviations_in_string``, less the repeats: pysbd
    applies an abbreviation's substitution (a period after it becomes "∯") once per occurrence,
    each over the whole paragraph, where once is the same. Each substitution turns periods into
    "∯" where a pattern of the abbreviation's letters and the text around the period holds; such
    a change never makes a pattern hold where it did not (a period is no letter, "∯" is in no
    pattern but one that has "∯" or "." in the abbreviation itself), so a substitution applied
    again, after any others, changes nothing, and is skipped when its abbreviation is letters and
    digits alone. An abbreviation with a period in it ("u.s", "e.g") is applied every time, as pysbd does."""
    re = _pysbd_re()
    lowered = text.lower()
    applied: set[tuple[str, bool]] = set()
    for abbr in self.lang.Abbreviation.ABBREVIATIONS:
        stripped = abbr.strip()
        if stripped not in lowered:
            continue
        abbrev_match = re.findall(rf"(?:^|\s|\r|\n){stripped}", text, flags=re.IGNORECASE)
        if not abbrev_match:
            continue
        # pysbd's pattern for the next word's first character looks behind for "{abbr} ", braces
        # included, which news text hardly ever has: without it in the text the pattern finds nothing
        next_word_start = r"(?<={" + str(re.escape(stripped)) + "} ).{1}"
        char_array = re.findall(next_word_start, text) if f"{{{stripped}}} " in text else []
        for ind, match in enumerate(abbrev_match):
            # what scan_for_replacements does depends on the match's letters and on whether the
            # next word's first character (char_array[ind], "" past its end) is upper case
            key = (match.strip(), str(char_array[ind] if ind < len(char_array) else "").isupper())
            if key in applied and key[0].isalnum():
                continue
            applied.add(key)
            text = self.scan_for_replacements(text, match, ind, char_array)
    return text


def _placed(sentences: list[str], text: str) -> list[str]:
    """pysbd's ``Segmenter.sentences_with_char_spans`` (each sentence with the whitespace after it,
    searched for from the end of the one before; one not found is dropped), by ``str.find``: the
    same as its ``re.finditer(re.escape(sentence) + r"\\s*", text)`` (``\\s`` is ``str.isspace``
    in ``re``'s Unicode patterns)."""
    re = _pysbd_re()
    out, prior = [], 0
    for sent in sentences:
        if not sent:  # an empty pattern's matches: pysbd's own search
            for m in re.finditer(r"\s*", text):
                if m.end() > prior:
                    out.append(m.group())
                    prior = m.end()
                    break
            continue
        pos = 0
        while (start := text.find(sent, pos)) >= 0:
            end = start + len(sent)
            while end < len(text) and text[end].isspace():
                end += 1
            if end > prior:
                out.append(text[start:end])
                prior = end
                break
            pos = end
    return out


_PYSBD_RE_CACHE = 4096
"""Compiled patterns pysbd's modules keep (:func:`_pysbd_re`): its constant
ones number a few hundred a language; the rest are built from one text's words and are let go."""


@functools.cache
def _pysbd_re():
    """Give pysbd's modules a ``re`` of their own whose functions compile each pattern once (an LRU
    of :data:`_PYSBD_RE_CACHE`). pysbd passes pattern strings to ``re.sub`` and the like, some
    3,000 calls an article; Python's ``re`` keeps the last 512 patterns compiled, first in, first
    out, shared with every other library in the process, and an article's own patterns (and, in
    the Space, the web server's) push pysbd's out, so they were compiled again for every article."""
    import re
    import sys
    import types

    compiled = functools.lru_cache(maxsize=_PYSBD_RE_CACHE)(re.compile)

    def pattern(p, flags=0):
        return p if isinstance(p, re.Pattern) else compiled(p, flags)

    own = types.ModuleType("re", "pysbd's re: the same functions, each pattern compiled once (vilbias.text)")
    own.__dict__.update({k: v for k, v in vars(re).items() if not k.startswith("__")})
    own.sub = lambda p, repl, string, count=0, flags=0: pattern(p, flags).sub(repl, string, count)
    own.subn = lambda p, repl, string, count=0, flags=0: pattern(p, flags).subn(repl, string, count)
    own.search = lambda p, string, flags=0: pattern(p, flags).search(string)
    own.match = lambda p, string, flags=0: pattern(p, flags).match(string)
    own.fullmatch = lambda p, string, flags=0: pattern(p, flags).fullmatch(string)
    own.findall = lambda p, string, flags=0: pattern(p, flags).findall(string)
    own.finditer = lambda p, string, flags=0: pattern(p, flags).finditer(string)
    own.split = lambda p, string, maxsplit=0, flags=0: pattern(p, flags).split(string, maxsplit)
    own.compile = pattern
    for name, module in list(sys.modules.items()):
        if (name == "pysbd" or name.startswith("pysbd.")) and getattr(module, "re", None) is re:
            module.re = own
    return own
