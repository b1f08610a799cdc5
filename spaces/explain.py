"""Rationales built from the evidence, and the check that a generated one agrees with it.

A sentence-level model gives, in one pass, the article's label and each sentence's probability of
being biased with the words that drive it. :func:`evidence_rationale` turns that into the
explanation: the verdict and the rule's figure, then the flagged sentences (quoted from the
article, each with its probability and marked words) and the techniques they show — or, for an
article that is not biased, that no sentence (or too few) was flagged. It cannot contradict the
label because it is written from the same numbers.

A generative model may word the explanation (:func:`rewording_prompt`); its answer is shown only
if :func:`~vilbias.rationale.check_wording` finds nothing wrong: it must not argue for the other
label, quote text that is not in the article, or name a technique the evidence does not show. The
check is :func:`vilbias.rationale.check_rationale`, the one the corpus, review and evaluation use::

    from vilbias.rationale import check_wording as check_wording  # re-exported: the Space's views use it from here
    check_wording('The article is neutral.', "biased", article_text, allowed_techniques=[])
    # 'argues that the article is not biased'

Techniques are named from surface cues in the flagged sentences (:data:`TECHNIQUE_CUES`; loaded
words count as Word Choice). Selective presentation, omission of context and imbalance in
representation concern what a story leaves out, which a sentence scorer cannot see, so the
explanation never names them.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from vilbias.rationale import (
    check_wording as check_wording,  # re-exported: the Space's views use it from here
)
from vilbias.task import ALL_NAMES, ANSWER_LABELS, BIASED_NAME, LABEL_NAMES, TECHNIQUES

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
    for word, n in marked.items():
        if n > 1:
            add("repetition", word)
    if len(flagged) >= 3:
        add("tone", f"{len(flagged)} flagged sentences")  # a count, not a quote: shown unquoted
    return {tid: found[tid][:4] for tid in TECHNIQUES if tid in found and tid not in UNSEEN}


def _quote(text: str, limit: int = 220) -> str:
    text = " ".join(text.split())
    return "“" + (text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " …") + "”"


def _sentence_line(s: Evidence, techniques: dict[str, list[str]] | None = None) -> str:
    line = f"- {_quote(s.text)} — **{s.probability:.0%}**"
    if s.words:
        line += "; marked words: " + ", ".join(f"*{w}* ({p:.0%})" for w, _, _, p in s.words[:6])
    shows = []
    for tid, cues in (techniques or {}).items():
        # Word choice is the marked words; tone and repetition are about several sentences.
        here = [c for c in cues if c.lower() in s.text.lower()] if tid not in ("word_choice", "tone", "repetition") else []
        if here:
            shows.append(f"{TECHNIQUES[tid]} (" + ", ".join(f"“{c}”" for c in here[:3]) + ")")
    if shows:
        line += "; shows " + ", ".join(shows)
    return line


def rule_figure(statistic: str, value: float, n: int, n_flagged: int) -> str:
    """The rule's statistic for this article, in words."""
    return {
        "share": f"{n_flagged} of {n} sentences ({value:.0%}) are flagged as biased",
        "mean": f"its {n} sentences' mean probability of being biased is {value:.0%}",
        "max": f"its most biased sentence scores {value:.0%}",
        "top3_mean": f"its {min(3, n)} most biased sentences average {value:.0%}",
    }[statistic]


def evidence_rationale(label: str, probability: float, sentences: list[Evidence], statistic: str, value: float,
                       threshold: float, truncated: int = 0) -> Explanation:
    """The explanation written from the evidence alone (see the module docstring)."""
    flagged = sorted((s for s in sentences if s.flagged), key=lambda s: -s.probability)
    figure = rule_figure(statistic, value, len(sentences), len(flagged))
    note = f"\n\n*Only the first {len(sentences)} sentences were read ({truncated} more were not).*" if truncated else ""
    if label == BIASED_NAME:
        techniques = techniques_shown(flagged)
        lines = [f"**Biased** ({probability:.0%}): {figure}, at or above the {threshold:.0%} the rule needs.",
                 "", "The sentences that drive the label:"]
        lines += [_sentence_line(s, techniques) for s in flagged[:MAX_CITED]]
        if len(flagged) > MAX_CITED:
            lines.append(f"- … and {len(flagged) - MAX_CITED} more in the evidence table.")
        if not flagged:
            top = max(sentences, key=lambda s: s.probability)
            lines.append(_sentence_line(top))
        named = ", ".join(TECHNIQUES[t] for t in techniques) or "none with a surface cue"
        lines += ["", f"Techniques these sentences show: {named}."]
        return Explanation("\n".join(lines) + note, techniques)
    lines = [f"**Not biased** ({1 - probability:.0%}): {figure}, below the {threshold:.0%} the rule needs."]
    if not flagged:
        top = max(sentences, key=lambda s: s.probability)
        lines.append(f"No sentence was flagged (every one scores below 50%); the highest scores {top.probability:.0%}: {_quote(top.text)}.")
    else:
        lines += ["", "Flagged, but not enough to make the article biased:"] + [_sentence_line(s) for s in flagged[:MAX_CITED]]
        lines.append("The other sentences read as plain reporting.")
    return Explanation("\n".join(lines) + note, {})


# -- a generated wording, checked: vilbias.rationale.check_wording (the check every stage uses) ------

def complete_sentences(text: str) -> str:
    """``text`` up to its last full stop (a generation cut at its token budget ends mid-sentence)."""
    text = text.strip()
    end = max(text.rfind(". "), text.rfind("! "), text.rfind("? "))
    return text if text[-1:] in ".!?\"”" or end < 0 else text[:end + 1]


def rewording_prompt(label: str, probability: float, explanation: Explanation, flagged: list[Evidence]) -> list[dict]:
    """A short prompt giving a small model the label and the evidence, nothing else to go on."""
    verdict = ANSWER_LABELS[LABEL_NAMES.index(label)]
    confidence = probability if label == BIASED_NAME else 1 - probability
    if flagged:
        evidence = "\n".join(f"- \"{' '.join(s.text.split())}\" ({s.probability:.0%}"
                             + (f"; loaded words: {', '.join(w for w, *_ in s.words[:4])}" if s.words else "") + ")"
                             for s in flagged[:MAX_CITED])
    else:
        evidence = "- No sentence reads as biased."
    techniques = ", ".join(TECHNIQUES[t] for t in explanation.techniques) or "none"
    return [
        {"role": "system", "content": "You explain a news bias classifier's verdict to a reader. Never change the verdict."},
        {"role": "user", "content": (
            f"Verdict: {verdict} ({confidence:.0%}).\nEvidence from the article:\n{evidence}\nTechniques shown: {techniques}.\n\n"
            f"In two short sentences, explain why the article is {verdict}, using only the evidence above. "
            "Quote words only from the evidence, in double quotes."
        )},
    ]


def phrase_pattern(phrase: str) -> re.Pattern:
    """``phrase`` as whole words, case-insensitive ("container" does not match "containers")."""
    return re.compile(r"(?<!\w)" + re.escape(phrase) + r"(?!\w)", re.IGNORECASE)


def parse_techniques_and_evidence(techniques_text: str, evidence_text: str, item_text: str) -> tuple[list[str], list[str]]:
    """Technique ids named in ``techniques_text`` and quoted phrases of ``evidence_text`` that
    occur in ``item_text`` (case-insensitively). Nothing is guessed: a phrase the text does not
    contain is dropped."""
    lowered = techniques_text.lower()
    techniques = [tid for tid, name in ALL_NAMES.items()
                  if name.lower() in lowered or tid.replace("_", " ") in lowered]
    quoted = re.findall(r"[\"“”'‘’]([^\"“”‘’]{2,80})[\"“”'‘’]", evidence_text)
    evidence = []
    for phrase in quoted:
        phrase = phrase.strip(" .,;:")
        if len(phrase) >= 3 and phrase_pattern(phrase).search(item_text) and phrase.lower() not in (e.lower() for e in evidence):
            evidence.append(phrase)
    return techniques, evidence[:5]
