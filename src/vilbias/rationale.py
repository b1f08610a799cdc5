"""The rationale check: does a row's ``reasoning`` agree with its article and its own label?

A rationale is checked against what a reader can verify from the text alone, with no model:
cheap (a few regular expressions per row), deterministic, and the same everywhere it is used —
the Space (a generated explanation is shown only when it passes), review (failing rows are
exported first) and evaluation (a judge-free faithfulness figure)::

    from vilbias.rationale import check_rationale
    check_rationale('It calls the plan a "disastrous scheme".', article_text=text, headline=headline,
                    label="biased", techniques=["word_choice"])
    # [Problem(code='quote_not_in_article', passage='disastrous scheme')]

Every problem found is returned, each with its code (one of :data:`CODES`) and the passage that
shows it; an empty list means the rationale passes. What each code means and what the check
cannot see (the image; a paraphrase that misstates the article) is in ``docs/rationale.md``.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from vilbias.task import (
    ALL_NAMES,
    ANSWER_LABELS,
    BIASED,
    BIASED_NAME,
    LABEL_NAMES,
    TECHNIQUES,
    label_name,
    read_label,
)

EMPTY = "empty"
"""No rationale, or fewer than :data:`MIN_WORDS` words."""
CUT_OFF = "cut_off"
"""The text stops mid-sentence (a generation cut at its token budget, a truncated import)."""
REPEATS = "repeats_itself"
"""A sentence given twice, or the same three words more than twice (a generation loop)."""
QUOTE_NOT_IN_ARTICLE = "quote_not_in_article"
"""A quotation that the headline, article text and caption do not contain."""
ARGUES_OTHER_LABEL = "argues_other_label"
"""Wording that argues for the other label: "neutral"/"balanced" or a denied bias under ``biased``;
"loaded"/"emotional"/a bias technique, not negated, under ``not_biased``."""
ABSENT_TECHNIQUE = "names_absent_technique"
"""A technique named (not negated) that the row's own technique list marks absent."""
CODES: tuple[str, ...] = (EMPTY, CUT_OFF, REPEATS, QUOTE_NOT_IN_ARTICLE, ARGUES_OTHER_LABEL, ABSENT_TECHNIQUE)
"""Every problem code, in the order problems are reported (for counting: corpus card, review, evaluation)."""

MIN_WORDS = 3


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a rationale."""

    code: str
    """One of :data:`CODES`."""
    passage: str
    """The offending passage (a quotation, a sentence, a technique name; the text's tail for ``cut_off``)."""


# -- normalisation: whitespace, case, quote styles, dashes --------------------------------------

_TRANSLATE = str.maketrans({
    **dict.fromkeys("‘’‚‛′`´", "'"), **dict.fromkeys("“”„‟″«»", '"'),
    **dict.fromkeys("‐‑‒–—―−", "-"), "…": "...", "\u00ad": None, "\u200b": None, "\ufeff": None,
})


def normalise(text: str) -> str:
    """``text`` as quotations are compared: NFKC, lower case, one quote style (straight), dashes as
    ``-`` with the spacing around them dropped, runs of whitespace as one space."""
    text = unicodedata.normalize("NFKC", text or "").translate(_TRANSLATE).casefold()
    text = re.sub(r"\s*-\s*", "-", text)
    return " ".join(text.split())


# -- what the text argues ------------------------------------------------------------------------

_W = r"[\w'’-]*"
# Technique names that say "biased" by themselves (a neutral article may well have a tone, a
# framing or statistics).
_BIAS_NAMED = ("emotional_appeal", "exaggeration", "subjectivity", "selective_presentation", "omission_of_context",
               "logical_fallacies", "imbalance")
_BIAS_TERMS = re.compile(
    r"\b(biased|bias|slant" + _W + r"|one-sided|loaded|emotive|emotional" + _W + r"|hyperbol" + _W + r"|exaggerat" + _W
    + r"|sensational" + _W + r"|inflammatory|propaganda|manipulat" + _W + r"|partisan|persuasive|subjective|opinionated"
    + r"|" + "|".join(re.escape(TECHNIQUES[t].lower()) for t in _BIAS_NAMED) + r")\b", re.I)
_NEUTRAL_TERMS = re.compile(r"\b(unbiased|neutral|balanced|impartial|objective|even-handed|fair|factual)\b", re.I)
_NEGATORS = re.compile(r"\b(not|no|never|without|free of|free from|devoid of|lacks?|lacking|avoids?|avoiding|none|neither"
                       r"|nor|little|isn't|is not|doesn't|does not|wasn't|rather than|instead of)\b|n[’']t\b", re.I)


def _negated(text: str, start: int) -> bool:
    """A negation among the five words before ``start``, within the same sentence."""
    before = re.split(r"[.!?;:]\s", text[:start])[-1]
    return bool(_NEGATORS.search(" ".join(before.split()[-5:])))


def _sentence_at(text: str, start: int, end: int) -> str:
    """The sentence of ``text`` around ``[start, end)``."""
    left = max(text.rfind(p, 0, start) for p in (". ", "! ", "? ", "\n"))
    right = min((i for i in (text.find(p, end) for p in (". ", "! ", "? ", "\n")) if i >= 0), default=len(text) - 1)
    return " ".join(text[left + 1 if left >= 0 else 0:right + 1].split())


_CONCESSIVE = re.compile(r"^\W*(although|though|while|whilst|even though|even if|despite|whereas|albeit|apart from)\b", re.I)
_CONTRAST_AFTER = re.compile(r"^[^.!?;]*?(,\s*|\s)(but|yet|however|whereas)\b", re.I)
_PARTS = re.compile(r"\b(photo(graph)?s?|images?|pictures?|captions?|charts?|graphics?|illustrations?|footage|shots?"
                    r"|text|headlines?)\b", re.I)


def _conceded(text: str, start: int, end: int) -> bool:
    """Whether the term at ``[start, end)`` is conceded: its clause opens with "although", "while" …,
    or the sentence goes on "…, but" ("the text is balanced, but the photo …")."""
    sentence_start = max(text.rfind(p, 0, start) for p in (". ", "! ", "? ", "\n")) + 1
    clause = re.split(r"[,;:(]", text[sentence_start:start])[-1]
    return bool(_CONCESSIVE.match(clause) or _CONTRAST_AFTER.match(text[end:]))


def _about_a_part(text: str, start: int, end: int) -> bool:
    """Whether a neutral word describes a part of the item (its photo, caption, wording), not the
    item: "a neutral landscape photo", "the photo itself is neutral"."""
    clause = re.split(r"[,;:(]|[.!?]\s", text[:start])[-1]
    return bool(_PARTS.search(clause) or re.match(r"^(\s+[\w-]+){0,2}?\s+" + _PARTS.pattern, text[end:], re.I))


def _arguments(text: str, label: str) -> list[tuple[int, int]]:
    """Spans of the words of ``text`` that argue for the label other than ``label``.

    Under ``biased``: the item called neutral, balanced … (not of one of its parts, not conceded)
    or bias denied; under ``not_biased``: bias asserted, not negated and not conceded."""
    hits = []
    if label == BIASED_NAME:
        hits += [m for m in _NEUTRAL_TERMS.finditer(text) if not _negated(text, m.start())
                 and not _conceded(text, m.start(), m.end()) and not _about_a_part(text, m.start(), m.end())]
        hits += [m for m in _BIAS_TERMS.finditer(text) if _negated(text, m.start())]
    else:
        hits += [m for m in _BIAS_TERMS.finditer(text) if not _negated(text, m.start())
                 and not _conceded(text, m.start(), m.end())]
    return sorted(m.span() for m in hits)


# -- quotations ----------------------------------------------------------------------------------

# Each quote style pairs with its own closing mark (a straight quote closing a curly one would
# pair the gap between two quotations); single quotes only where they cannot be an apostrophe
# (not inside a word on either side).
_QUOTED = re.compile(r"“([^“”]{3,300}?)”|\"([^\"]{3,300}?)\"|„([^„“”]{3,300}?)[“”]"
                     r"|(?<!\w)'([^'\n]{3,300}?)'(?!\w)|(?<!\w)‘([^‘’\n]{3,300}?)’(?!\w)")
_ELLIPSIS = re.compile(r"\s*(?:\.\.\.|…|\[\s*(?:\.\.\.|…)\s*\])\s*")
_NOT_QUOTATIONS = {normalise(n) for n in (*ALL_NAMES.values(), *LABEL_NAMES, *ANSWER_LABELS.values())}
"""Quoted words that name a technique or a label are not quotations of the article."""


def quotations(text: str) -> list[str]:
    """The quoted passages of ``text`` (each part of a quotation elided with an ellipsis separately)."""
    out = []
    for m in _QUOTED.finditer(text):
        for part in _ELLIPSIS.split(m.group(m.lastindex)):
            part = part.strip(" .,;:!?")
            if len(part) >= 3 and normalise(part) not in _NOT_QUOTATIONS:
                out.append(part)
    return out


# -- technique names ---------------------------------------------------------------------------


def _name_pattern(name: str) -> str:
    # Each word may take a plural s ("emotional appeals", "appeal to authority").
    words = [re.escape(w[:-1]) + "s?" if w.endswith("s") and len(w) > 3 else re.escape(w) + "s?" for w in name.split()]
    return r"(?<!\w)" + r"\s+".join(words) + r"(?!\w)"


def _technique_patterns() -> dict[str, tuple[str, re.Pattern]]:
    """Technique id -> (a word stem every naming contains, the pattern that names it). A
    multi-word name counts in any case; a one-word name ("Tone", "Framing", "Repetition") only
    capitalised as a name, not as the first word of a sentence ("a neutral tone" describes the
    article, "uses Framing" names the criterion)."""
    out = {}
    for tid, name in ALL_NAMES.items():
        forms = ["(?i:" + _name_pattern(f) + ")" for f in dict.fromkeys((name, tid.replace("_", " "))) if " " in f]
        if " " not in name:
            forms.append(r"(?<![.!?:]\s)(?<!^)(?<![\w\"“'‘])" + re.escape(name) + r"(?!\w)")
        # the stem lets a row skip the patterns of techniques it cannot name (most of the check's time otherwise)
        out[tid] = (max(name.lower().split(), key=len)[:6], re.compile("|".join(forms)))
    return out


_TECHNIQUE_PATTERNS = _technique_patterns()
_BY_NAME = {k.lower(): tid for tid, name in ALL_NAMES.items() for k in (tid, name, tid.replace("_", " "))}


def _present(techniques: Iterable[str] | Mapping[str, bool]) -> set[str]:
    """Technique ids judged present: a list of ids or names, or a ``{id or name: present}`` mapping."""
    if isinstance(techniques, Mapping):
        techniques = [k for k, v in techniques.items() if v]
    return {_BY_NAME.get(" ".join(t.lower().split()), t) for t in techniques}


def _named_techniques(text: str) -> list[tuple[str, tuple[int, int]]]:
    """``(technique id, span)`` for each technique ``text`` names without negating it (its first
    such mention)."""
    lowered = text.lower()
    out = []
    for tid, (stem, pattern) in _TECHNIQUE_PATTERNS.items():
        if stem in lowered:
            m = next((m for m in pattern.finditer(text) if not _negated(text, m.start())), None)
            if m is not None:
                out.append((tid, m.span()))
    return out


# -- the check -----------------------------------------------------------------------------------

_CLOSERS = ")]*_\"”’'"


def _cut_off(text: str) -> str | None:
    """The unfinished tail of ``text``, or None when it ends a sentence (a full stop, ! or ?,
    perhaps inside a closing quote or bracket; an ellipsis is where a cut text is marked)."""
    end = text.rstrip(_CLOSERS)
    if end and end[-1] in ".!?" and not end.endswith(("...", "…")):
        return None
    stops = [m.end() for m in re.finditer(r"[.!?][\"”’)]*\s", text)]
    tail = text[stops[-1]:] if stops else text
    tail = " ".join(tail.split())
    return tail if len(tail) <= 80 else "… " + tail[-78:].split(" ", 1)[-1]


def _repeats(text: str) -> list[str]:
    """A sentence given twice, or three words in a row used more than twice."""
    sentences = [" ".join(s.split()) for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]
    seen: Counter = Counter(s.lower() for s in sentences)
    out = [s for s in sentences if seen[s.lower()] > 1]
    words = re.findall(r"\w+", text.lower())
    trigrams = Counter(zip(words, words[1:], words[2:], strict=False))
    out += [" ".join(t) for t, n in trigrams.most_common() if n > 2]
    return list(dict.fromkeys(out))


def _label_name(label: int | str) -> str:
    label_id = label if isinstance(label, int) else read_label(label)
    if label_id is None or label_id not in (0, 1):
        raise ValueError(f"unknown label {label!r}: give {LABEL_NAMES[0]!r} or {LABEL_NAMES[1]!r} (or 0/1)")
    return label_name(label_id)


def check_rationale(reasoning: str | None, *, article_text: str = "", headline: str = "", label: int | str,
                    techniques: Iterable[str] | Mapping[str, bool] | None = None, caption: str = "") -> list[Problem]:
    """Every problem of ``reasoning`` as the rationale of a row labelled ``label`` (see :data:`CODES`).

    Args:
        reasoning: the rationale.
        article_text, headline, caption: what a quotation may come from.
        label: the row's label: a class id or a name (``"biased"``, ``"not_biased"``, ``"not biased"``).
        techniques: the row's techniques judged present (ids or names, or a ``{technique: present}``
            mapping); None skips the :data:`ABSENT_TECHNIQUE` check (nothing to compare with).

    Returns:
        The problems in :data:`CODES` order, each passage once; ``[]`` when the rationale passes.
        An empty rationale is only :data:`EMPTY`.
    """
    label = _label_name(label)
    text = (reasoning or "").strip()
    if len(re.findall(r"\w+", text)) < MIN_WORDS:
        return [Problem(EMPTY, text)]
    problems = []
    tail = _cut_off(text)
    if tail is not None:
        problems.append(Problem(CUT_OFF, tail))
    problems += [Problem(REPEATS, p) for p in _repeats(text)]
    quoted = list(dict.fromkeys(quotations(text)))
    if quoted:  # normalising the article is most of a row's cost: only when there is something to look up
        source = normalise("\n".join((headline or "", article_text or "", caption or "")))
        problems += [Problem(QUOTE_NOT_IN_ARTICLE, q) for q in quoted if normalise(q) not in source]
    # Quoted article words are the article's, not the rationale's argument: blank them out (same
    # offsets, so passages are cut from ``text``).
    own = _QUOTED.sub(lambda m: m.group(0)[0] + re.sub(r"[^.!?]", " ", m.group(0)[1:-1]) + m.group(0)[-1], text)
    problems += [Problem(ARGUES_OTHER_LABEL, s) for s in dict.fromkeys(_sentence_at(text, *span) for span in _arguments(own, label))]
    if techniques is not None:
        present = _present(techniques)
        problems += [Problem(ABSENT_TECHNIQUE, text[start:end]) for tid, (start, end) in _named_techniques(own)
                     if tid not in present]
    return problems


def codes(problems: Iterable[Problem]) -> list[str]:
    """The distinct codes of ``problems``, in :data:`CODES` order (a row's check-result column)."""
    found = {p.code for p in problems}
    return [c for c in CODES if c in found]


def describe(problems: Iterable[Problem]) -> str:
    """``problems`` in one line for a sheet or a log: ``code: "passage"; ...``."""
    return "; ".join(f"{p.code}: “{p.passage}”" if p.passage else p.code for p in problems)


# -- the Space's wording check -------------------------------------------------------------------

MAX_SHOWN_CHARS = 900
"""The Space shows a generated explanation up to this length."""
_REASONS = {
    EMPTY: "is empty or too long",
    CUT_OFF: "is not a complete sentence",
    REPEATS: "repeats itself",
    QUOTE_NOT_IN_ARTICLE: "quotes text that is not in the article",
}


def check_wording(text: str, label: str, item_text: str, allowed_techniques: list[str]) -> str | None:
    """Why a generated explanation cannot be shown for ``label``, or None when it can (the Space).

    :func:`check_rationale` with the Space's limits: at least 20 and at most
    :data:`MAX_SHOWN_CHARS` characters; for ``biased``, a technique outside ``allowed_techniques``
    (those the evidence shows) is refused. The first problem is given in words.
    """
    if label not in LABEL_NAMES:
        raise ValueError(f"unknown label {label!r}")
    stripped = (text or "").strip()
    if len(stripped) < 20 or len(stripped) > MAX_SHOWN_CHARS:
        return _REASONS[EMPTY]
    problems = check_rationale(stripped, article_text=item_text, label=label,
                               techniques=allowed_techniques if label == BIASED_NAME else None)
    if not problems:
        return None
    first = problems[0]
    if first.code == ARGUES_OTHER_LABEL:
        return "argues that the article is " + ANSWER_LABELS[1 - BIASED if label == BIASED_NAME else BIASED]
    if first.code == ABSENT_TECHNIQUE:
        return f"names a technique the evidence does not show ({first.passage})"
    return _REASONS[first.code]
