"""Rationales built from a classifier's evidence: the words a model's own numbers justify, never invented.

A sentence-level model gives, in one pass, the article's label and each sentence's probability of
being biased with the words that drive it. :func:`evidence_rationale` turns that into the
explanation: the verdict and the rule's figure, then the flagged sentences (quoted from the
article, each with its probability and marked words) and the techniques they show — or, for an
article that is not biased, that no sentence (or too few) was flagged. It cannot contradict the
label because it is written from the same numbers. :func:`explain_output` does it for a
:class:`~vilbias.models.predictors.ModelOutput` and the text it read; the Space shows it (Markdown),
the annotate stage stores it as a sentence model's rationale (plain text)::

    from vilbias.models.evidence import explain_output
    evidence, explanation = explain_output(headline + "\n\n" + article_text, predictor.predict(item), markdown=False)
    explanation.text, explanation.techniques

Techniques are named from surface cues in the flagged sentences (:data:`TECHNIQUE_CUES`; loaded
words count as Word Choice). Selective presentation, omission of context and imbalance in
representation concern what a story leaves out, which a sentence scorer cannot see, so the
explanation never names them.

Every passage it quotes is a sentence the model read, as the text gives it (whitespace collapsed,
a long one cut at a word with an ellipsis), so the rationale check
(:func:`vilbias.rationale.check_rationale`) finds each quotation in the article.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from vilbias.task import ANSWER_LABELS, BIASED, BIASED_NAME, TECHNIQUES

MAX_CITED = 3
"""Flagged sentences quoted in the explanation (the evidence table lists them all)."""

_W = r"[\w'’-]*"
TECHNIQUE_CUES: dict[str, re.Pattern] = {
    "emotional_appeal": re.compile(
        r"\b(tragic|tragedy|tragedies|heartbreak" + _W + r"|devastat" + _W + r"|horrif" + _W + r"|terrif" + _W + r"|outrag" + _W
        + r"|shock" + _W + r"|disgust" + _W + r"|appall" + _W + r"|alarming|fear" + _W + r"|scary|cruel" + _W + r"|brutal" + _W
        + r"|vile|evil|grief|suffer" + _W + r"|victims?|beloved|heroic|despicable|shameful|sicken" + _W + r"|nightmare" + _W
        + r"|apocalyp" + _W + r"|betray" + _W + r"|doom" + _W + r"|bleed" + _W + r"|deadly|destroy" + _W + r"|panic" + _W
        + r"|rage|fury|furious|hatred|horror" + _W + r")\b", re.I),
    "exaggeration": re.compile(
        r"\b(always|never|everyone|everybody|nobody|completely|totally|utterly|absolutely|massive|enormous|unprecedented"
        r"|catastroph" + _W + r"|disaster" + _W + r"|skyrocket" + _W + r"|plummet" + _W + r"|flood(ed|ing)?|worst|insane|crazy"
        r"|ridiculous|absurd|radical" + _W + r"|extreme" + _W + r"|all-out)\b", re.I),
    "subjectivity": re.compile(
        r"\b(clearly|obviously|of course|undoubtedly|surely|arguably|frankly|so-called|supposedly|I think|we believe"
        r"|in my view|needless to say)\b", re.I),
    "appeal_to_authority": re.compile(
        r"\b((experts?|scientists?|economists?|doctors|studies|researchers?|professors?) (say|said|agree[sd]?|warn(s|ed)?"
        r"|show(s|ed)?|found|believe[sd]?)|according to (experts|scientists|studies|research))\b", re.I),
    "use_of_statistics": re.compile(r"\b\d[\d,.]*\s?(%|percent\b|per cent\b|million\b|billion\b|trillion\b|times\b)", re.I),
    "framing": re.compile(
        r"(\b(war on|attack on|assault on|invasion|crusade|witch[- ]hunt|regime|agenda|propaganda|elites?|scheme|ploy|stunt"
        r"|cover-up|rigged)\b|[\"“][^\"“”\s]+(\s[^\"“”\s]+){0,2}[\"”])", re.I),
    "logical_fallacies": re.compile(r"\b(inevitabl" + _W + r"|slippery slope|everyone knows|if we (let|allow)|will lead to)\b", re.I),
}
"""Surface cues of the techniques one sentence can show (ids of :data:`vilbias.task.TECHNIQUES`)."""
UNSEEN = ("selective_presentation", "omission_of_context", "imbalance")
"""Techniques about what a story leaves out: never named from sentences."""


@dataclass
class Evidence:
    """One scored sentence, in the coordinates of the text shown to the user."""

    text: str
    start: int
    end: int
    probability: float
    words: list[tuple[str, int, int, float]] = field(default_factory=list)
    """``(word, start, end, probability)`` of the words the model marks."""
    flagged: bool = False


@dataclass
class Explanation:
    text: str
    """Markdown."""
    techniques: dict[str, list[str]]
    """Technique id -> the cues that show it, in the order of :data:`vilbias.task.TECHNIQUES`."""


def techniques_shown(flagged: list[Evidence]) -> dict[str, list[str]]:
    """The techniques the flagged sentences show, with the words or phrases that show them."""
    found: dict[str, list[str]] = {}

    def add(tid: str, cue: str) -> None:
        cues = found.setdefault(tid, [])
        if cue.lower() not in (c.lower() for c in cues):
            cues.append(cue)

    for s in flagged:
        for word, *_ in s.words:
            add("word_choice", word)
        for tid, pattern in TECHNIQUE_CUES.items():
            for m in pattern.finditer(s.text):
                add(tid, m.group(0).strip("\"“”"))
    marked = Counter(w.lower() for s in flagged for w, *_ in s.words)
    spelled: dict[str, str] = {}  # a repeated word as the article first writes it ("Spätburgunder", not its lower case)
    for s in flagged:
        for w, *_ in s.words:
            spelled.setdefault(w.lower(), w)
    for word, n in marked.items():
        if n > 1:
            add("repetition", spelled[word])
    if len(flagged) >= 3:
        add("tone", f"{len(flagged)} flagged sentences")  # a count, not a quote: shown unquoted
    return {tid: found[tid][:4] for tid in TECHNIQUES if tid in found and tid not in UNSEEN}


def _quote(text: str, limit: int = 220) -> str:
    """``text`` quoted as the article writes it (whitespace collapsed, cut at a word past ``limit``
    characters with an ellipsis), in curly quotes; a text holding curly double quotes of its own is
    put in straight ones instead, so its quotation marks stay the article's and the quotation stays
    one passage (:func:`vilbias.rationale.quotations` pairs each quote style with its own closing mark)."""
    text = " ".join(text.split())
    text = text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " …"
    return f'"{text}"' if "“" in text or "”" in text else f"“{text}”"


def _sentence_line(s: Evidence, techniques: dict[str, list[str]] | None = None, markdown: bool = True,
                   seen: set[str] | None = None) -> str:
    line = f"- {_quote(s.text)} — " + (f"**{s.probability:.0%}**" if markdown else f"{s.probability:.0%}")
    words = s.words[:6]
    if seen is not None:  # each marked word once in the whole text (a stored rationale must not repeat itself)
        words = [w for w in words if w[0].lower() not in seen]
        seen.update(w[0].lower() for w in words)
    if words:
        word = (lambda w: f"*{w}*") if markdown else (lambda w: f"“{w}”")
        line += "; marked words: " + ", ".join(f"{word(w)} ({p:.0%})" for w, _, _, p in words)
    shows = []
    for tid, cues in (techniques or {}).items():
        # Word choice is the marked words; tone and repetition are about several sentences.
        here = [c for c in cues if c.lower() in s.text.lower()] if tid not in ("word_choice", "tone", "repetition") else []
        if here:
            shows.append(f"{TECHNIQUES[tid]} (" + ", ".join(f"“{c}”" for c in here[:3]) + ")")
    if shows:
        line += "; shows " + ", ".join(shows)
    return line


def rule_figure(statistic: str, value: float, n: int, n_flagged: int, *, plain: bool = False) -> str:
    """The rule's statistic for this article, in words (``plain``: in scores, without the word
    "biased", which under a ``not_biased`` label would read as an argument for the other label).
    A text of fewer than three sentences has them all averaged by the top-three rule: said so."""
    if statistic == "top3_mean" and n < 3:
        what = "its one sentence scores" if n == 1 else f"its {n} sentences average"
        return f"{what} {value:.0%}" + ("" if plain else " (with fewer than three sentences, the rule averages all it has)")
    if plain:
        return {
            "share": f"{n_flagged} of {n} sentences ({value:.0%}) are flagged",
            "mean": f"its {n} sentences' mean score is {value:.0%}",
            "max": f"its highest-scoring sentence scores {value:.0%}",
            "top3_mean": f"its {min(3, n)} highest-scoring sentences average {value:.0%}",
        }[statistic]
    return {
        "share": f"{n_flagged} of {n} sentences ({value:.0%}) are flagged as biased",
        "mean": f"its {n} sentences' mean probability of being biased is {value:.0%}",
        "max": f"its most biased sentence scores {value:.0%}",
        "top3_mean": f"its {min(3, n)} most biased sentences average {value:.0%}",
    }[statistic]


def evidence_rationale(label: str, probability: float, sentences: list[Evidence], statistic: str, value: float,
                       threshold: float, truncated: int = 0, *, markdown: bool = True) -> Explanation:
    """The explanation written from the evidence alone (see the module docstring): Markdown for a
    page, or plain text (``markdown=False``: a stored rationale, marked words in quotes)."""
    flagged = sorted((s for s in sentences if s.flagged), key=lambda s: -s.probability)
    figure = rule_figure(statistic, value, len(sentences), len(flagged), plain=not markdown)
    if not markdown:  # a sentence the article gives twice is cited once (a stored rationale must not repeat itself)
        flagged = _once(flagged)
    bold = (lambda t: f"**{t}**") if markdown else (lambda t: t)
    note = ""
    if truncated:
        note = f"Only the first {len(sentences)} sentences were read ({truncated} more {'was' if truncated == 1 else 'were'} not)."
        note = "\n\n" + (f"*{note}*" if markdown else note)
    if label == BIASED_NAME:
        techniques = techniques_shown(flagged)
        lines = [f"{bold(ANSWER_LABELS[BIASED].capitalize())} ({probability:.0%}): {figure}, at or above the {threshold:.0%} the rule needs.",
                 *([_how_they_relate(probability, ANSWER_LABELS[BIASED], value, threshold)] if markdown else []),
                 "", "The sentences that drive the label:"]
        seen: set[str] | None = None if markdown else set()
        # plain text names each technique once, with its cues, at the end (not on every line: no repeats)
        lines += [_sentence_line(s, techniques if markdown else None, markdown, seen) for s in flagged[:MAX_CITED]]
        if len(flagged) > MAX_CITED:
            more = len(flagged) - MAX_CITED
            lines.append(f"- … and {more} more " + ("in the evidence table." if markdown else
                                                    "flagged sentence." if more == 1 else "flagged sentences."))
        if not flagged:
            top = max(sentences, key=lambda s: s.probability)
            lines.append(_sentence_line(top, markdown=markdown))
        if markdown:
            named = ", ".join(TECHNIQUES[t] for t in techniques) or "none with a surface cue"
        else:
            named = ", ".join(TECHNIQUES[t] + _cues(t, cues) for t, cues in techniques.items()) or "none with a surface cue"
        lines += ["", f"Techniques these sentences show: {named}."]
        return Explanation("\n".join(lines) + note, techniques)
    lines = [f"{bold(ANSWER_LABELS[1 - BIASED].capitalize())} ({1 - probability:.0%}): {figure}, below the {threshold:.0%} the rule needs."]
    if markdown:
        lines.append(_how_they_relate(1 - probability, ANSWER_LABELS[1 - BIASED], value, threshold))
    if not flagged:
        top = max(sentences, key=lambda s: s.probability)
        lines.append(f"No sentence was flagged (every one scores below 50%); the highest scores {top.probability:.0%}: {_quote(top.text)}.")
    else:
        lead = "Flagged, but not enough to make the article biased:" if markdown else "Flagged, but too few to change the label:"
        seen = None if markdown else set()
        lines += ["", lead] + [_sentence_line(s, markdown=markdown, seen=seen) for s in flagged[:MAX_CITED]]
        lines.append("The other sentences read as plain reporting.")
    return Explanation("\n".join(lines) + note, {})


def _how_they_relate(confidence: float, label: str, value: float, threshold: float) -> str:
    """The page's line saying how the label's percentage follows from the sentence scores (a reader
    sees "not biased, 93%" beside a sentence at 20% and must not take one for the other)."""
    side = "below" if value < threshold else "above"
    return (f"*{confidence:.0%} is the article's probability of being {label}: the further the rule's figure ({value:.0%}) lies "
            f"{side} {threshold:.0%}, the higher it is. The percentages in the sentence table are each sentence's own "
            "probability of being biased.*")


def _once(sentences: list[Evidence]) -> list[Evidence]:
    """``sentences`` without the repeats of a text already given (case and spacing aside)."""
    seen: set[str] = set()
    out = []
    for s in sentences:
        key = " ".join(s.text.lower().split())
        if key not in seen:
            seen.add(key)
            out.append(s)
    return out


def _cues(tid: str, cues: list[str]) -> str:
    """A technique's cues for the plain text: quoted from the article (word choice: the marked
    words listed above; tone: a count, unquoted)."""
    if tid == "word_choice":
        return " (the marked words)"
    if tid == "tone":
        return f" ({cues[0]})"
    return " (" + ", ".join(f"“{c}”" for c in cues[:3]) + ")"


# -- a predictor's output, placed in the text it read ----------------------------------------------


def sentence_offsets(text: str, pieces: list[str]) -> list[tuple[str, int, int]]:
    """Where each of ``pieces`` (consecutive sentences of ``text``) lies in ``text``."""
    out, cursor = [], 0
    for piece in pieces:
        start = text.find(piece, cursor)
        if start < 0:  # the splitter normalised something: fall back to the piece's first words
            start = max(text.find(piece[:20], cursor), cursor)
        out.append((piece, start, start + len(piece)))
        cursor = start + len(piece)
    return out


def explain_output(text: str, out: Any, *, markdown: bool = True) -> tuple[list[Evidence], Explanation]:
    """A sentence model's output (:class:`~vilbias.models.predictors.ModelOutput` with ``sentences``
    and ``rule``) as evidence placed in ``text`` (what it read, e.g. the headline and the article)
    and the explanation written from it (:func:`evidence_rationale`)."""
    placed = sentence_offsets(text, [s.text for s in out.sentences])
    evidence = [Evidence(piece, start, end, s.probability, [(w.text, start + w.start, start + w.end, w.probability) for w in s.words],
                         s.flagged)
                for (piece, start, end), s in zip(placed, out.sentences, strict=True)]
    rule = out.rule
    explanation = evidence_rationale(out.label, out.probabilities[BIASED_NAME], evidence, rule.statistic, out.statistic,
                                     rule.threshold, truncated=out.unread_sentences, markdown=markdown)
    return evidence, explanation


__all__ = [
    "MAX_CITED", "TECHNIQUE_CUES", "UNSEEN", "Evidence", "Explanation", "evidence_rationale", "explain_output", "rule_figure",
    "sentence_offsets", "techniques_shown",
]
