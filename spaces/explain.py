"""The Space's rationale wording: the evidence-built explanation and the check that a generated one agrees with it.

The explanation built from a sentence model's evidence is :mod:`vilbias.models.evidence` (the
annotate stage writes a sentence model's rationale with it too); its names are re-exported here.

A generative model may word the explanation (:func:`rewording_prompt`); its answer is shown only
if :func:`~vilbias.rationale.check_wording` finds nothing wrong: it must not argue for the other
label, quote text that is not in the article, or name a technique the evidence does not show. The
check is :func:`vilbias.rationale.check_rationale`, the one the corpus, review and evaluation use::

    from vilbias.rationale import check_wording as check_wording  # re-exported: the Space's views use it from here
    check_wording('The article is neutral.', "biased", article_text, allowed_techniques=[])
    # 'argues that the article is not biased'

"""

from __future__ import annotations

import re

from vilbias.models.evidence import (  # re-exported: the Space's views and tests use them from here
    MAX_CITED,
    TECHNIQUE_CUES,
    UNSEEN,
    Evidence,
    Explanation,
    evidence_rationale,
    rule_figure,
    techniques_shown,
)
from vilbias.rationale import (
    check_wording as check_wording,  # re-exported: the Space's views use it from here
)
from vilbias.task import ALL_NAMES, ANSWER_LABELS, BIASED_NAME, LABEL_NAMES, TECHNIQUES

__all__ = [
    "MAX_CITED", "TECHNIQUE_CUES", "UNSEEN", "Evidence", "Explanation", "check_wording", "complete_sentences", "evidence_rationale",
    "parse_techniques_and_evidence", "phrase_pattern", "rewording_prompt", "rule_figure", "techniques_shown",
]


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
