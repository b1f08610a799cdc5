"""What the sentence model decides on validation data only: the article rule (which statistic of an
article's sentence probabilities, and its threshold) and the biased-word threshold."""

from __future__ import annotations

import math

from vilbias.training.sentence_data import PUNCTUATION, Example

from vilbias.metrics.scores import article_majorities, closed_metrics
from vilbias.models.sentence_bias import (
    STATISTICS,
    ArticleRule,
    word_spans,
)


def article_groups(uids: list[str], probabilities: list[float], examples: dict[str, Example], *, min_sentences: int = 1):
    """``(sentence probabilities, majority label)`` per article link
    (:func:`vilbias.metrics.scores.article_majorities`, as ``vilbias evaluate`` groups them)."""
    return article_majorities([examples[u].link for u in uids], [examples[u].label for u in uids], probabilities,
                              min_sentences=min_sentences)


MIN_RULE_GROUPS = 20
"""Fewer articles with two or more labelled sentences than this, and single sentences count too."""


def rule_groups(pool: dict[str, float], examples: dict[str, Example]) -> list[tuple[list[float], int]]:
    """The articles the rule is chosen on: those with two or more labelled sentences (a
    statistic over one sentence cannot tell the rules apart), or all when there are too few."""
    groups = article_groups(list(pool), list(pool.values()), examples, min_sentences=2)
    return groups if len(groups) >= MIN_RULE_GROUPS else article_groups(list(pool), list(pool.values()), examples)


def fit_rule_slope(values: list[float], labels: list[int], threshold: float) -> float:
    """The slope of ``sigmoid(slope * (value - threshold))`` minimising NLL (grid, 1% steps)."""
    def nll(slope: float) -> float:
        total = 0.0
        for v, y in zip(values, labels, strict=True):
            p = min(max(1 / (1 + math.exp(-max(min(slope * (v - threshold), 50), -50))), 1e-9), 1 - 1e-9)
            total -= math.log(p if y else 1 - p)
        return total

    return round(min((math.exp(k / 100) for k in range(0, 601)), key=nll), 3)


ARTICLE_STATISTICS = ("top3_mean", "max")
"""The statistics the shipped rule is chosen among: those an article's unflagged sentences cannot
dilute. BABE labels a handful of selected sentences per article, the Space reads whole articles
(its examples have 22 sentences): a mean or a share fitted on BABE's groups would call an article
with three loaded sentences among twenty plain ones not biased."""


def choose_article_rule(groups: list[tuple[list[float], int]], statistics=tuple(STATISTICS)) -> tuple[ArticleRule, dict]:
    """The statistic (one of ``statistics``) and threshold with the best macro-F1 on ``groups``
    (ties: the order of :data:`STATISTICS`, then the lower threshold), and the slope fitted for
    its probability. Returns the rule and every candidate's best score."""
    labels = [y for _, y in groups]
    scores, best = {}, None
    for name, stat in STATISTICS.items():
        if name not in statistics:
            continue
        values = [stat(p) for p, _ in groups]
        for threshold in sorted(set(round(v, 4) for v in values) | {0.5}):
            f1 = closed_metrics(labels, [int(v >= threshold) for v in values])["f1_macro"]
            if f1 > scores.get(name, (-1.0, 0.0))[0]:
                scores[name] = (f1, threshold)
            if best is None or f1 > best[0]:
                best = (f1, name, threshold, values)
    f1, name, threshold, values = best
    rule = ArticleRule(name, threshold, fit_rule_slope(values, labels, threshold))
    return rule, {k: {"f1_macro": v[0], "threshold": v[1]} for k, v in scores.items()} | {"groups": len(groups)}


def word_f1(examples: list[Example], word_probs: list[list[float]], threshold: float) -> float:
    """Micro F1 of marked words against BABE's biased words, over sentences with word labels."""
    tp = fp = fn = 0
    for e, probs in zip(examples, word_probs, strict=True):
        if e.label == 1 and not e.biased_words:
            continue
        gold = {w.strip(PUNCTUATION).lower() for entry in e.biased_words for w in entry.split()} - {""}
        found = {w.text.lower() for w in word_spans(e.text, e.offsets, probs) if w.probability >= threshold}
        tp, fp, fn = tp + len(found & gold), fp + len(found - gold), fn + len(gold - found)
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def choose_word_threshold(examples: list[Example], word_probs: list[list[float]]) -> tuple[float, float]:
    grid = [round(0.05 * k, 2) for k in range(4, 20)]
    scores = {t: word_f1(examples, word_probs, t) for t in grid}
    best = max(grid, key=lambda t: (scores[t], -abs(t - 0.5)))
    return best, scores[best]
