"""An example from the embedded sample shows its reference label beside the model's, and says
in words when they disagree; the evidence text wraps at word boundaries."""

from __future__ import annotations

from vilbias.spaces.app import (
    CSS,
    SpaceConfig,
    launch_kwargs,
    reference_markdown,
    sample_examples,
    sample_reference_labels,
)


def test_every_decided_sample_article_has_its_reference_label():
    references = sample_reference_labels()
    assert len(references) == 66  # 68 articles, two ties the review did not settle
    labels = {label for label, _ in references.values()}
    assert labels == {"biased", "not_biased"}
    # the example the issue names: reviewed, labelled biased in the sample
    text = sample_examples(4)[1][2]
    assert references[" ".join(text.split())] == ("biased", "needs_improvement")


def test_the_reference_sentence_says_agreement_and_disagreement():
    references = {"a b c": ("biased", "acceptable"), "d e": ("not_biased", "unreviewed")}
    disagree = reference_markdown("a  b\nc", "not_biased", references)
    assert "**biased** (after human review)" in disagree and "**The model disagrees**" in disagree
    agree = reference_markdown("d e", "not_biased", references)
    assert "not reviewed" in agree and "The model agrees." in agree
    assert reference_markdown("something else", "biased", references) == ""


def test_evidence_wraps_at_word_boundaries():
    css = launch_kwargs(SpaceConfig())["css"]
    assert css == CSS and "#highlighted .textfield" in css and "word-break: normal" in css


def test_a_busy_or_unusable_port_is_one_line_before_anything_loads():
    import socket

    import pytest
    from vilbias.spaces.app import check_port

    check_port("127.0.0.1", None)
    with pytest.raises(ValueError, match=r"^--port 1 is one browsers refuse to open"):
        check_port("127.0.0.1", 1)
    with pytest.raises(ValueError, match="not a TCP port"):
        check_port("127.0.0.1", 70000)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(ValueError, match=rf"^--port {port} on 127.0.0.1 is not free"):
            check_port("127.0.0.1", port)
    check_port("127.0.0.1", port)  # free again
