"""The sentence-level protocol: a sentence model scored on a sentence corpus as its training scored it.

A sentence corpus (``vilbias build --sentences``) holds one expert-labelled sentence a row with
its article link. Besides the closed metrics every model gets, a sentence model (one that gives
the calibrated probability of a sentence, :attr:`~vilbias.models.catalogue.ClassifierModel.sentence_probabilities`)
is scored as ``vilbias train sentence`` scores its test split, with the same functions:

- sentence macro-F1 and accuracy of ``P(biased) >= 0.5``;
- expected calibration error of those probabilities (10 bins, :func:`~vilbias.metrics.calibration.expected_calibration_error`);
- article macro-F1: sentences grouped by link, an article's label the majority of its expert
  labels (ties left out), the model's article rule over its sentences' probabilities
  (:func:`~vilbias.metrics.scores.article_majorities`).

So ``vilbias evaluate --dataset CORPUS --model training/default_model`` on the corpus built from
the file the model trained on reproduces the figures of the model's card.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vilbias.metrics.calibration import expected_calibration_error
from vilbias.metrics.scores import article_majorities, article_metrics, closed_metrics
from vilbias.task import Item

THRESHOLD = 0.5
"""A sentence is called biased at a calibrated probability of 0.5 (as the card's figures are)."""


def sentence_protocol(model: Any, items: Sequence[Item], links: Mapping[str, str]) -> dict[str, Any] | None:
    """The protocol's figures for ``items`` (their ``headline`` is the sentence), or None when
    ``model`` is not a sentence model or the rows are not a sentence corpus's."""
    score = getattr(model, "sentence_probabilities", None)
    if score is None or not links:
        return None
    probabilities = [float(p) for p in score([i.headline for i in items])]
    labels = [i.label for i in items]
    sentence = closed_metrics(labels, [int(p >= THRESHOLD) for p in probabilities])
    out: dict[str, Any] = {
        "sentences": len(items),
        "f1_macro": sentence["f1_macro"],
        "accuracy": sentence["accuracy"],
        "ece": expected_calibration_error(probabilities, labels),
        "articles": len({links.get(i.unique_id) or i.unique_id for i in items}),
        "article": None,
    }
    rule = getattr(model, "article_rule", None)
    if rule is not None:
        groups = article_majorities([links.get(i.unique_id, "") for i in items], labels, probabilities)
        out["article"] = article_metrics(groups, lambda p: rule.value(p) >= rule.threshold) | {"rule": rule.describe()}
    return out


def describe(protocol: Mapping[str, Any]) -> str:
    """One line: ``sentence macro-F1 0.8003, accuracy 0.8052, ECE 0.0290; article macro-F1 0.7920 (164 articles)``."""
    line = (f"sentence macro-F1 {protocol['f1_macro']:.4f}, accuracy {protocol['accuracy']:.4f}, ECE {protocol['ece']:.4f} "
            f"({protocol['sentences']} sentences of {protocol['articles']} articles)")
    if protocol.get("article"):
        a = protocol["article"]
        line += f"; article macro-F1 {a['f1_macro']:.4f} ({a['groups']} articles with a majority label)"
    return line
