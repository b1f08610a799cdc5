"""The task's own facts: outside label spellings, the item, the classifier text, P(biased)."""

from __future__ import annotations

import math

import pytest
import torch

from vilbias.task import (
    BIASED,
    LABEL_NAMES,
    biased_probability,
    classifier_text,
    label_name,
    read_label,
)


@pytest.mark.parametrize("value, expected", [
    ("Biased", 1), ("biased", 1), ("1", 1), (1, 1), (1.0, 1), ("1.0", 1), (True, 1),
    ("Non-biased", 0), ("not biased", 0), ("not_biased", 0), ("Not Biased", 0), ("unbiased", 0), ("0", 0), (0, 0),
    ("neutral", None), ("No agreement", None), ("", None), (None, None), (2, None), ("Likely", None),
])
def test_one_reader_for_outside_label_spellings(value, expected):
    assert read_label(value) == expected


def test_label_names_and_the_classifier_text():
    assert [label_name(i) for i in range(2)] == LABEL_NAMES and label_name(BIASED) == "biased"
    assert classifier_text(" Headline ", " Body. ") == "Headline\n\nBody."
    assert classifier_text("Headline", None) == classifier_text("Headline", "  ") == "Headline"


def test_biased_probability_is_the_tempered_softmax_of_the_biased_column():
    logits = torch.tensor([[0.0, 0.0], [1.0, 3.0]])
    assert biased_probability(logits).tolist() == pytest.approx([0.5, 1 / (1 + math.exp(-2))])
    # a temperature above 1 pulls probabilities towards 0.5
    assert biased_probability(logits, 2.0)[1].item() == pytest.approx(1 / (1 + math.exp(-1)))
