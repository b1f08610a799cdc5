"""Which language a text is in, and whether a model reads it.

Ingest records each article's language (:func:`detect_language`, ISO 639-1) in
``articles.jsonl``; a model declares the languages it reads (``["en"]`` for the shipped sentence
model, :data:`ANY` for a chat model that declares nothing; see
:func:`vilbias.models.catalogue.declared_languages`). Where a model does not read an item's
language it abstains instead of labelling (:func:`reads`): the annotate stage stores the call
with status ``other_language``, the Space says the model does not read that language.

Detection is py3langid's (a maintained fork of langid.py: a naive Bayes model over byte n-grams,
97 languages, 4.5 MB, offline). On the 25 real pages of the test data (13 English, 11 German, 1
French) it names every page's language from its headline and text, and from their first 300
characters alone; a text too short to be sure of (below :data:`MIN_CONFIDENCE`) is left unknown.
"""

from __future__ import annotations

import functools
import itertools
import logging
import math
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from vilbias.outputs import atomic_file

if TYPE_CHECKING:
    import numpy as np

logger = logging.getLogger(__name__)

ANY = "any"
"""A model's declaration that it reads every language (a multilingual chat model)."""

MIN_CONFIDENCE = 0.9
"""Below this probability the detector's guess is not recorded ("" = unknown): a text of a few
words can look like several languages, and an unknown language makes no model abstain."""

_LETTERS = re.compile(r"[^\W\d_]{2,}")
_LETTER = re.compile(r"[^\W\d_]")


_LOADING = threading.Lock()
"""Held while the model loads: threads that detect at once wait for the one load, never start their own."""


@functools.cache
def _load_identifier():
    from py3langid.langid import MODEL_DIR, MODEL_FILE, LanguageIdentifier

    try:
        return _from_unpacked(_unpacked(MODEL_DIR / MODEL_FILE))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:  # an unwritable cache, another layout
        logger.debug("py3langid's model read from its own file (%s: %s)", type(e).__name__, e)
        return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def _unpacked(source: Path) -> Path:
    """py3langid's model (an LZMA-compressed ``.npz``: ~0.4 s of decompression, most of a load)
    decompressed once into ``$HF_HOME/vilbias/langid/``, under a name that changes with the file,
    written atomically (the ``.npz`` alone: 68 MB)."""
    import lzma
    import shutil

    import huggingface_hub

    stat = source.stat()
    target = Path(huggingface_hub.constants.HF_HOME) / "vilbias" / "langid" / f"{source.name.removesuffix('.xz')}-{stat.st_size}-{stat.st_mtime_ns}"
    if not target.exists():
        with atomic_file(target) as f, lzma.open(source) as packed:
            shutil.copyfileobj(packed, f, length=1 << 20)
    return target


def _from_unpacked(path: Path):
    """The identifier ``LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)`` makes,
    from the decompressed file (py3langid's ``modelio.load_model`` on it, without the LZMA step;
    ``tests/test_languages.py`` checks the two agree)."""
    import numpy as np
    from py3langid import modelio
    from py3langid.langid import LanguageIdentifier

    with np.load(path, allow_pickle=False) as data:
        return LanguageIdentifier(np.asarray(data["ptc"]), np.asarray(data["pc"]), data["classes"].tolist(),
                                  modelio._to_array(data["nextmove"]), data["out_feat"].tolist(), norm_probs=True,
                                  tk_row=modelio._to_array(data["nextmove_row"]))


def _identifier():
    # Imported and loaded on first use: reading the model (a compressed array) takes about a second,
    # which commands that never detect a language (`--help`, a build of a workdir) should not pay.
    with _LOADING:
        return _load_identifier()


def load_detector() -> threading.Thread:
    """Start loading the detector's model (about a second) in a thread, returned, while the caller
    goes on: the model is decompressed with the GIL released, so an import checks its first images
    meanwhile, and a detection waits for the load rather than starting its own."""
    thread = threading.Thread(target=_walk_tables, name="load-language-model", daemon=True)
    thread.start()
    return thread


DFA_DEPTH = 6
"""Bytes the detector's automaton looks back: its deepest state is 6 bytes from the start (the
longest byte n-gram it counts; ``tests/corpus/test_import.py`` checks this against the model).
So the state after any byte is the one reached from the start by the last 6 bytes alone."""


def _walk_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """The detector's automaton and feature table as numpy views of its own arrays (no copy)."""
    with _LOADING:
        return _load_walk_tables()


@functools.cache
def _load_walk_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    import numpy as np  # the detector's own dependency: loaded with it, not with this module

    ident = _load_identifier()
    try:
        nextmove = np.frombuffer(ident.tk_nextmove, dtype=np.uint32)
        # The feature table in float32 (57 MB, converted once; the library converts each text's rows
        # from float16 at every call, which was half of its time): the same values, so the same sums.
        return (nextmove, np.asarray(ident._rowbase, dtype=np.intp), np.asarray(ident.tk_output, dtype=np.intp),
                ident.nb_ptc.astype(np.float32))
    except AttributeError:  # a py3langid whose internals differ: its own classify answers (slower, the same)
        return None


def _classify(text: str) -> tuple[str, float]:
    """py3langid's ``classify``, its byte-by-byte walk in Python done as :data:`DFA_DEPTH`
    vectorised steps over every position at once: the same states, the same features summed in
    the same order, so the same scores to the bit (``tests/corpus/test_import.py`` compares them)
    at a fraction of the time (the walk was a fifth of an import's time beside decoding images)."""
    import numpy as np

    ident = _identifier()
    tables = _walk_tables()
    if tables is None or not hasattr(ident, "_encode") or not hasattr(ident, "_alias_pairs"):
        return ident.classify(text)
    nextmove, rowbase, output, table = tables
    data = ident._encode(text)
    letters = np.frombuffer(data, dtype=np.uint8)
    n = len(letters)
    states = np.zeros(n, dtype=np.intp)
    for back in range(min(DFA_DEPTH, n) - 1, -1, -1):  # position i reads letter i - back
        states[back:] = nextmove[rowbase[states[back:]] + letters[: n - back]]
    features = output[states]
    features = features[features >= 0]
    if not features.size:
        return ident.classify(text)  # no feature: the library's own answer for an empty walk
    found, first, counts = np.unique(features, return_index=True, return_counts=True)
    order = np.argsort(first, kind="stable")  # first-seen order, the order the library's Counter sums in
    scores = np.log1p(counts[order].astype(np.float32)) @ table[found[order]] + ident.nb_pc
    scores *= 1.0 / math.sqrt(n or 1)
    np.exp(scores - scores.max(), out=scores)
    scores /= scores.sum()
    for i, j in ident._alias_pairs:
        scores[i] += scores[j]
        scores[j] = 0.0
    best = int(scores.argmax())
    return ident.nb_classes[best], float(scores[best])


def detect_language(text: str, *, min_confidence: float = MIN_CONFIDENCE) -> str:
    """The language ``text`` is written in, as an ISO 639-1 code (``"de"``), or ``""`` when it has
    no words or the detector is less sure than ``min_confidence``.

    Example::

        >>> detect_language("Lithium aus dem Schredder: Wie Batterien wiederverwertet werden")
        'de'
    """
    if next(itertools.islice(_LETTERS.finditer(text or ""), 1, None), None) is None:  # fewer than two words
        return ""
    code, probability = _classify(text)
    return code if probability >= min_confidence else ""


ITEM_CHARS = 600
"""Characters of an article's text read to tell its language: enough for a sure answer (the first
300 name all 25 real test pages right, as the first 2,000 do), at a cost an import or a build
does not notice beside decoding the item's image: ~0.1 ms for 600 characters (:func:`_classify`;
py3langid's own byte-by-byte walk in Python took ~0.25 ms, and ~0.6-1.5 ms for 2,000) on this
project's 2-core machines (``benchmarks/bench_import.py``)."""


def item_language(headline: str, article_text: str) -> str:
    """The language of a news item: :func:`detect_language` over its headline and the start of its
    text. Ingest records it, and every later reader of an item without one (a workdir of schema
    1.0, an imported release, a text pasted in the Space) computes it the same way."""
    return detect_language(f"{headline or ''}\n\n{(article_text or '')[:ITEM_CHARS]}")


MIN_LETTERS_TO_TELL = 100
"""Letters (about 20 English words) from which a text's language is told by the balance of the
detector's probabilities rather than only by a sure guess. Measured on the embedded sample's
English articles cut into pieces: with 100 letters, P(English) was at least 0.66 in every one of
645 pieces (0.9 or more in all but 2); with 40 letters it fell below 0.5 in 2% of them and below
0.1 for some, so a short English text can look like any language. A non-English news sentence of
100 letters scores P(English) near 0 (tests/spaces/test_languages.py)."""


@dataclass(frozen=True)
class LanguageFit:
    """Whether a model reads a text (:func:`language_fit`)."""

    reads: bool
    language: str
    """The detector's most probable language (ISO 639-1; "" for a text without letters)."""
    probability: float
    """P(the text is in one of the model's languages), summed over them (1.0 for ``any``)."""
    letters: int

    @property
    def too_short(self) -> bool:
        """Not read because the text is too short to tell its language."""
        return not self.reads and self.letters < MIN_LETTERS_TO_TELL and self.language == ""


def language_fit(text: str, languages: Iterable[str]) -> LanguageFit:
    """Whether a model declaring ``languages`` reads ``text``, by a rule that needs the language
    to be known (unlike :func:`reads`, which lets an unknown language through):

    1. P(the model's languages) >= :data:`MIN_CONFIDENCE`: read.
    2. Another language is the detector's guess at >= :data:`MIN_CONFIDENCE`: not read.
    3. From :data:`MIN_LETTERS_TO_TELL` letters: read when P(the model's languages) >= 0.5, i.e.
       more likely than all the others together; else not read, the guess named.
    4. Shorter and unsure: too short to tell, not read (``language == ""``).

    Probabilities are summed over the model's languages because the detector spreads a text's
    probability over close varieties: a 60-letter Spanish sentence gets es 0.75, Aragonese 0.16,
    Extremaduran 0.08, so no single guess reaches 0.9 (and :func:`detect_language` calls it
    unknown), yet P(English) is 0.

    Example::

        >>> language_fit("Los radicales destruyen la economía con un plan desastroso.", ["en"]).too_short
        True
    """
    languages = tuple(languages)
    letters = len(_LETTER.findall(text or ""))
    if ANY in languages:
        return LanguageFit(True, "", 1.0, letters)
    if letters == 0:
        return LanguageFit(False, "", 0.0, 0)
    ranked = _identifier().rank(text)
    p_read = sum(p for code, p in ranked if code in languages)
    top, p_top = ranked[0]
    if p_read >= MIN_CONFIDENCE:
        return LanguageFit(True, top, p_read, letters)
    if top not in languages and p_top >= MIN_CONFIDENCE:
        return LanguageFit(False, top, p_read, letters)
    if letters >= MIN_LETTERS_TO_TELL:
        reads_it = p_read >= 0.5
        guess = top if reads_it or top not in languages else next(c for c, _ in ranked if c not in languages)
        return LanguageFit(reads_it, guess, p_read, letters)
    return LanguageFit(False, "", p_read, letters)


def normalize_languages(languages: str | Iterable[str] | None) -> tuple[str, ...] | None:
    """A declaration as written (``"en"``, ``["en", "de"]``, ``"any"``) as a tuple of lowercase
    codes; None stays None (nothing declared)."""
    if languages is None:
        return None
    items = [languages] if isinstance(languages, str) else list(languages)
    codes = tuple(dict.fromkeys(str(c).strip().lower() for c in items if str(c).strip()))
    if not codes:
        raise ValueError("languages: name at least one ISO 639-1 code (e.g. en) or 'any'")
    bad = [c for c in codes if c != ANY and not re.fullmatch(r"[a-z]{2,3}", c)]
    if bad:
        raise ValueError(f"languages: {', '.join(bad)} is not an ISO 639-1 code (e.g. en, de, fr) or 'any'")
    return codes


def reads(languages: Iterable[str], language: str) -> bool:
    """Whether a model declaring ``languages`` reads a text in ``language``. An unknown language
    (``""``) is read: the model is not silenced by a detector that could not tell."""
    languages = tuple(languages)
    return not language or ANY in languages or language in languages


def language_name(code: str) -> str:
    """``"German"`` for ``"de"``: the English name from CLDR (Babel, which the ingest extra brings
    through trafilatura), else the code itself."""
    try:
        from babel import Locale, UnknownLocaleError
    except ImportError:  # a core install without the ingest extra: the code is still exact
        return code
    try:
        return Locale("en").languages.get(code, code)
    except UnknownLocaleError:
        return code


def describe_languages(languages: Iterable[str]) -> str:
    """``"English (en)"``, ``"English (en) and German (de)"``, ``"any language"``."""
    languages = tuple(languages)
    if ANY in languages:
        return "any language"
    named = [f"{language_name(c)} ({c})" for c in languages]
    return named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]


__all__ = [
    "ANY", "ITEM_CHARS", "MIN_CONFIDENCE", "MIN_LETTERS_TO_TELL", "LanguageFit", "describe_languages", "detect_language",
    "item_language", "language_fit", "language_name", "load_detector", "normalize_languages", "reads",
]
