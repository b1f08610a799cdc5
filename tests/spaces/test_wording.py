"""What the demo's explanation says is what the article and the model's numbers say: quotations
keep the article's own quotation marks and spelling, a short input's rule figure is worded for its
length, the label's percentage is tied to the sentence scores, and the examples carry their
reference line over the API."""

from __future__ import annotations

import re

from vilbias.spaces.explain import Evidence, evidence_rationale, rule_figure, techniques_shown

from vilbias.rationale import check_rationale, codes, quotations

QUOTING = Evidence("The minister called the plan “a reckless gamble” in front of furious farmers.", 0, 79, 0.91,
                   [("reckless", 34, 42, 0.88), ("furious", 63, 70, 0.72)], True)
WINE = Evidence("Spätburgunder prices soared as Spätburgunder growers panicked.", 80, 142, 0.84,
                [("Spätburgunder", 80, 93, 0.61), ("panicked", 133, 141, 0.7)], True)
AGAIN = Evidence("Critics blamed Spätburgunder exports.", 143, 180, 0.77, [("Spätburgunder", 158, 171, 0.6)], True)
ARTICLE = " ".join(s.text for s in (QUOTING, WINE, AGAIN))


def test_a_quotation_keeps_the_article_s_curly_quotes_and_stays_one_passage():
    out = evidence_rationale("biased", 0.9, [QUOTING, WINE, AGAIN], "top3_mean", 0.84, 0.5)
    assert "“a reckless gamble”" in out.text  # the article's marks, not straight ones
    assert '"a reckless gamble"' not in out.text
    plain = evidence_rationale("biased", 0.9, [QUOTING, WINE, AGAIN], "top3_mean", 0.84, 0.5, markdown=False)
    # the sentence is quoted whole, and every quotation is found in the article
    assert QUOTING.text.rstrip(".") in quotations(plain.text)
    assert "quote_not_in_article" not in codes(check_rationale(plain.text, article_text=ARTICLE, label="biased",
                                                               techniques=list(plain.techniques)))


def test_a_technique_s_cue_is_spelled_as_the_article_spells_it():
    found = techniques_shown([WINE, AGAIN])
    assert found["repetition"] == ["Spätburgunder"]
    out = evidence_rationale("biased", 0.9, [QUOTING, WINE, AGAIN], "top3_mean", 0.84, 0.5)
    for quoted in re.findall(r"“([^”]+)”", out.text):
        assert quoted in ARTICLE, quoted


def test_a_one_sentence_input_is_not_worded_as_three():
    one = Evidence("The council met on Tuesday.", 0, 27, 0.2, [], False)
    out = evidence_rationale("not_biased", 0.07, [one], "top3_mean", 0.2, 0.5)
    first = out.text.splitlines()[0]
    assert first.startswith("**Not biased** (93%): its one sentence scores 20% (with fewer than three sentences, "
                            "the rule averages all it has), below the 50% the rule needs.")
    assert "1 most biased sentences" not in out.text
    assert rule_figure("top3_mean", 0.4, 2, 0) == ("its 2 sentences average 40% (with fewer than three sentences, "
                                                    "the rule averages all it has)")
    assert rule_figure("top3_mean", 0.4, 5, 0) == "its 3 most biased sentences average 40%"


def test_the_label_s_percentage_is_tied_to_the_sentence_scores():
    one = Evidence("The council met on Tuesday.", 0, 27, 0.2, [], False)
    line = evidence_rationale("not_biased", 0.07, [one], "top3_mean", 0.2, 0.5).text.splitlines()[1]
    assert line.startswith("*93% is the article's probability of being not biased: the further the rule's figure (20%) "
                           "lies below 50%, the higher it is.")
    assert "each sentence's own probability of being biased" in line
    stored = evidence_rationale("not_biased", 0.07, [one], "top3_mean", 0.2, 0.5, markdown=False).text
    assert "probability of being not biased" not in stored  # a stored rationale keeps to the evidence


def test_every_example_carries_its_reference_over_the_api(space):
    from gradio_client import handle_file
    from vilbias.spaces.app import sample_examples

    _, client, _ = space
    for image, headline, article, url in sample_examples(4):
        confidence = client.predict(handle_file(image), headline, article, url, "offline-default", api_name="/predict")[1]
        assert "Reference: this example's label in the embedded sample is **" in confidence, confidence


def test_the_no_progress_flag_does_not_read_show_progress(capsys):
    import pytest

    from vilbias.cli import main

    for stage in ("ingest", "annotate"):
        with pytest.raises(SystemExit):
            main([stage, "--help"])
        out = capsys.readouterr().out
        no_progress = out[out.index("\n  --no-progress"):].split("\n  --", 2)[1]  # its entry under options
        assert "Show progress bars" not in no_progress and "on unless --no-progress is given" in " ".join(no_progress.split())
