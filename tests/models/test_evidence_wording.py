"""The evidence-built rationale counts in words that agree with the count (issue #48)."""

from __future__ import annotations

import pytest

from vilbias.models.evidence import MAX_CITED, Evidence, evidence_rationale


def sentences(n_flagged: int, n_plain: int = 2) -> list[Evidence]:
    out, at = [], 0
    for i in range(n_flagged + n_plain):
        text = f"Sentence number {i} says something loaded about the plan."
        out.append(Evidence(text, at, at + len(text), 0.9 - i * 0.01 if i < n_flagged else 0.1, flagged=i < n_flagged))
        at += len(text) + 1
    return out


@pytest.mark.parametrize(("more", "said"), [(1, "… and 1 more flagged sentence."), (2, "… and 2 more flagged sentences.")])
def test_the_flagged_sentences_not_cited_are_counted_in_words_that_agree(more, said):
    text = evidence_rationale("biased", 0.9, sentences(MAX_CITED + more), "share", 0.6, 0.5, markdown=False).text
    assert f"- {said}" in text.splitlines()


@pytest.mark.parametrize(("truncated", "said"), [(1, "(1 more was not)"), (3, "(3 more were not)")])
def test_the_sentences_not_read_are_counted_in_words_that_agree(truncated, said):
    text = evidence_rationale("biased", 0.9, sentences(1), "share", 0.6, 0.5, truncated=truncated, markdown=False).text
    assert said in text
