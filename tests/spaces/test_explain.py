"""Evidence-built rationales and the check on a generated wording (pure functions, no model)."""

from __future__ import annotations

import pytest
from vilbias.spaces.explain import (
    Evidence,
    check_wording,
    evidence_rationale,
    rewording_prompt,
    techniques_shown,
)

from vilbias.task import TECHNIQUES

LOADED = Evidence("Radical activists staged a shocking stunt, the worst in years, experts say.", 0, 75, 0.93,
                  [("Radical", 0, 7, 0.81), ("shocking", 27, 35, 0.77)], True)
ALSO = Evidence("The radical plan would cost 4 billion dollars.", 76, 122, 0.71, [("radical", 80, 87, 0.66)], True)
PLAIN = Evidence("The council met on Tuesday.", 123, 150, 0.08, [], False)
PLAIN2 = Evidence("The vote was seven to two.", 151, 177, 0.12, [], False)
ARTICLE = " ".join(s.text for s in (LOADED, ALSO, PLAIN, PLAIN2))


def test_techniques_come_from_cues_in_flagged_sentences_only():
    found = techniques_shown([LOADED, ALSO])
    assert found["word_choice"] == ["Radical", "shocking"]
    assert found["repetition"] == ["Radical"]  # a marked word in two flagged sentences, as the article first writes it
    assert "shocking" in found["emotional_appeal"] and "worst" in found["exaggeration"]
    assert found["framing"] == ["stunt"] and found["use_of_statistics"] == ["4 billion"]
    assert list(found) == [t for t in TECHNIQUES if t in found]  # the task's order
    assert not set(found) & {"selective_presentation", "omission_of_context", "imbalance"}
    assert techniques_shown([]) == {}


def test_biased_rationale_cites_flagged_sentences_with_probabilities():
    out = evidence_rationale("biased", 0.83, [LOADED, ALSO, PLAIN, PLAIN2], "share", 0.5, 0.3)
    first, *rest = out.text.splitlines()
    assert first.startswith("**Biased** (83%): 2 of 4 sentences (50%) are flagged as biased, at or above the 30%")
    assert "“Radical activists staged a shocking stunt" in out.text and "**93%**" in out.text and "**71%**" in out.text
    assert "*shocking* (77%)" in out.text and "shows Emotional Appeal (“shocking”)" in out.text
    assert "The council met" not in out.text  # only what drove the label is cited
    assert out.techniques == techniques_shown([LOADED, ALSO])


def test_not_biased_rationale_says_nothing_or_too_little_was_flagged():
    none = evidence_rationale("not_biased", 0.1, [PLAIN, PLAIN2], "share", 0.0, 0.3)
    assert none.text.startswith("**Not biased** (90%): 0 of 2 sentences (0%) are flagged as biased, below the 30%")
    assert "No sentence was flagged" in none.text and "12%" in none.text and none.techniques == {}
    few = evidence_rationale("not_biased", 0.3, [ALSO, PLAIN, PLAIN2, PLAIN], "share", 0.25, 0.3)
    assert "Flagged, but not enough to make the article biased" in few.text and "**71%**" in few.text
    assert few.techniques == {}  # a not-biased verdict names no technique
    for statistic, value in (("mean", 0.2), ("max", 0.45), ("top3_mean", 0.3)):
        text = evidence_rationale("not_biased", 0.2, [PLAIN, PLAIN2], statistic, value, 0.5).text
        assert text.startswith("**Not biased**") and f"{value:.0%}" in text and "below the 50%" in text


@pytest.mark.parametrize("text, label, reason", [
    ("The article is neutral and sticks to the facts.", "biased", "argues that the article is not biased"),
    ("This story is not biased at all.", "biased", "argues that the article is not biased"),
    ("It uses loaded words such as \"disastrous scheme\".", "biased", "quotes text that is not in the article"),
    ("It relies on Omission of Context and loaded words.", "biased", "names a technique the evidence does not show"),
    ("The article is filled with emotional appeals and hyperbolic language.", "not_biased", "argues that the article is biased"),
    ("Its framing is one-sided against the council.", "not_biased", "argues that the article is biased"),
    ("ok", "not_biased", "is empty or too long"),
    ("It is plain. It reports the vote. It is plain.", "not_biased", "repeats itself"),
    ("the plain council the plain council the plain council.", "not_biased", "repeats itself"),
    ("the biased critics the biased critics", "biased", "is not a complete sentence"),
])
def test_check_wording_refuses_what_contradicts_the_evidence(text, label, reason):
    assert check_wording(text, label, ARTICLE, ["word_choice", "emotional_appeal"]).startswith(reason)


@pytest.mark.parametrize("text, label", [
    ("Words such as \"shocking\" and \"radical\" give the report an emotional slant; Emotional Appeal drives it.", "biased"),
    ("The sentences report the meeting and the vote plainly, without loaded or emotional words.", "not_biased"),
    ("It keeps a neutral tone: \"The council met on Tuesday.\" No sentence is biased.", "not_biased"),
])
def test_check_wording_accepts_what_agrees(text, label):
    assert check_wording(text, label, ARTICLE, ["word_choice", "emotional_appeal"]) is None


def test_complete_sentences_drops_a_cut_off_tail():
    from vilbias.spaces.explain import complete_sentences

    assert complete_sentences("It reports the vote. The evidence is not biased, as it") == "It reports the vote."
    assert complete_sentences("It reports the vote.") == "It reports the vote."
    assert complete_sentences("no stop at all") == "no stop at all"


def test_rewording_prompt_gives_the_label_and_the_evidence_only():
    out = evidence_rationale("biased", 0.83, [LOADED, ALSO, PLAIN], "share", 0.67, 0.3)
    [system, user] = rewording_prompt("biased", 0.83, out, [LOADED, ALSO])
    assert "Never change the verdict" in system["content"]
    assert user["content"].startswith("Verdict: biased (83%).")
    assert "Radical activists staged" in user["content"] and "loaded words: Radical, shocking" in user["content"]
    assert "The council met" not in user["content"]  # no unflagged text to argue from
    [_, neutral] = rewording_prompt("not_biased", 0.1, evidence_rationale("not_biased", 0.1, [PLAIN], "share", 0, 0.3), [])
    assert neutral["content"].startswith("Verdict: not biased (90%).") and "No sentence reads as biased" in neutral["content"]


def test_the_tone_cue_is_a_count_shown_unquoted_and_every_quoted_cue_is_in_the_text():
    from vilbias.spaces.app import techniques_markdown
    from vilbias.spaces.explain import Evidence, techniques_shown
    from vilbias.spaces.predictors import Prediction

    texts = ["Critics slammed the disastrous plan.", "It is a shameful betrayal.", "The reckless scheme will never work."]
    flagged = [Evidence(t, 0, len(t), 0.9, [(t.split()[1].strip("."), 0, 1, 0.8)], True) for t in texts]
    techniques = techniques_shown(flagged)
    assert techniques["tone"] == ["3 flagged sentences"]
    from vilbias.spaces.explain import Explanation

    p = Prediction("biased", {"biased": 0.9, "not_biased": 0.1}, 0.9, "kind", "model", explanation=Explanation("x", techniques))
    shown = techniques_markdown(p)
    assert "3 flagged sentences" in shown and "“3 flagged sentences”" not in shown
    import re

    for quoted in re.findall(r"“([^”]+)”", shown):
        assert any(quoted.lower() in t.lower() for t in texts), quoted
