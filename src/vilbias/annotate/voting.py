"""Hierarchical majority voting, as pure functions.

Each of M annotators answers the same item K times. :func:`majority_vote` over an annotator's K
samples gives its answer; :func:`majority_vote` over the M answers gives the final label. A
label needs a strict majority of *all* ballots at its level, abstentions (unparseable answers,
failed calls) included: with K=3, ``[biased, biased, None]`` is ``biased`` but ``[biased, None,
None]`` is no majority. An item with a tie or no majority at either level is flagged for review
and stays out of the build until a reviewer settles it.

An annotator that does not read the item's language abstains on every sample (status
``other_language``, :data:`OTHER_LANGUAGE`): it is set aside, not counted as a ballot at the
second level, since it never judged the item. When every annotator is set aside the item is
flagged ``other_language``: no annotator reads it, so it has no label (the build leaves it out,
unless a reviewer labels it).

The rationale of the final answer is taken from the annotator in the majority whose own vote was
the strongest (most samples for the final label; ties go to the annotator listed first), from its
first sample with that label and a non-empty rationale. Techniques are those that a majority of
annotators judged present, each annotator's judgement being the majority of its samples.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


def majority_vote(ballots: Sequence[str | None]) -> str | None:
    """The label holding a strict majority of ``ballots`` (``None`` = abstention), else None."""
    return _majority_of([b for b in ballots if b is not None], len(ballots))


OTHER_LANGUAGE = "other_language"
"""The status of a call an annotator abstained on because the item is in a language it does not
read (the store's ``call_status.status``; a flag reason when no annotator reads the item)."""


@dataclass(frozen=True)
class Vote:
    """One call's parsed answer. ``label`` is None for an abstention."""

    annotator: str
    sample: int
    label: str | None
    techniques: dict[str, bool] = field(default_factory=dict)
    rationale: str = ""
    abstention: str | None = None
    """Why an abstention has no label, where it matters to the vote: :data:`OTHER_LANGUAGE`."""

    def ballot(self) -> dict[str, Any]:
        """The public ``{annotator, sample, label}`` entry of the dataset's ``votes`` column."""
        return {"annotator": self.annotator, "sample": self.sample, "label": self.label}


@dataclass(frozen=True)
class VoteResult:
    label: str | None
    """Final label, or None when the item is flagged."""
    flagged: bool
    reason: str | None
    """``tie`` (as many annotators for each label), ``no_majority`` (too many annotators without
    a majority of their own), ``no_votes``, ``other_language`` (no annotator reads the item's
    language); None when decided."""
    annotator_labels: dict[str, str | None]
    agreement: float | None
    """Share of non-abstaining votes (all M×K) that agree with the final label."""
    rationale: str
    rationale_from: str | None
    techniques: list[str]


def hierarchical_vote(votes: Sequence[Vote], annotators: Sequence[str] | None = None, *, details: bool = True) -> VoteResult:
    """Two-level majority over ``votes`` (any order). ``annotators`` fixes their precedence
    (config order); by default the order in which they first appear. ``details=False`` leaves
    out the rationale and techniques (for counting labels, as the run summary does)."""
    if annotators is None:
        annotators = list(dict.fromkeys(v.annotator for v in votes))
    by_annotator: dict[str, list[Vote]] = {a: [] for a in annotators}
    for v in votes:
        by_annotator.setdefault(v.annotator, []).append(v)
    for vs in by_annotator.values():
        vs.sort(key=lambda v: v.sample)
    if not votes:
        return VoteResult(None, True, "no_votes", {}, None, "", None, [])
    unread = [a for a, vs in by_annotator.items() if vs and all(v.abstention == OTHER_LANGUAGE for v in vs)]
    if unread:
        for a in unread:
            del by_annotator[a]
        if not by_annotator:
            return VoteResult(None, True, OTHER_LANGUAGE, dict.fromkeys(unread), None, "", None, [])

    annotator_labels = {a: majority_vote([v.label for v in vs]) for a, vs in by_annotator.items()}
    final = majority_vote(list(annotator_labels.values()))
    valid = [v for v in votes if v.label is not None]
    if final is None:
        reason = _flag_reason([lab for lab in annotator_labels.values() if lab is not None])
        return VoteResult(None, True, reason, annotator_labels, None, "", None, [])

    agreement = sum(v.label == final for v in valid) / len(valid)
    if not details:
        return VoteResult(final, False, None, annotator_labels, agreement, "", None, [])
    majority = [a for a, lab in annotator_labels.items() if lab == final]
    strength = {a: sum(v.label == final for v in by_annotator[a]) for a in majority}
    chosen = max(majority, key=lambda a: (strength[a], -list(by_annotator).index(a)))
    rationale = next((v.rationale for v in by_annotator[chosen] if v.label == final and v.rationale.strip()), "")

    techniques: list[str] = []
    names = list(dict.fromkeys(t for v in votes for t in v.techniques))
    for t in names:
        # An annotator judges t present when "present" holds a strict majority of its K ballots
        # (abstentions included), which is majority_vote over present/absent/abstain, counted
        # directly: a majority of all ballots cannot tie with the other value.
        judged_present = sum(2 * sum(1 for v in vs if v.label is not None and v.techniques.get(t)) > len(vs) for vs in by_annotator.values())
        if judged_present * 2 > len(by_annotator):
            techniques.append(t)
    return VoteResult(final, False, None, annotator_labels, agreement, rationale, chosen, techniques)


def vote_outcome(annotators: Sequence[tuple[Sequence[str], int, int]]) -> tuple[str | None, str | None]:
    """The ``(label, reason)`` of :func:`hierarchical_vote` from counts alone: one ``(labels,
    abstained_on_language, k)`` per annotator (the labels of its valid samples, how many of its
    samples abstained ``other_language``, and its K: every sample short of K is an abstention).
    The run summary counts labels and flags over every item this way, without a :class:`Vote`
    per call; ``tests/annotate/test_voting.py`` checks it against :func:`hierarchical_vote`."""
    labels_of: list[str | None] = []
    for labels, unread, k in annotators:
        if k and unread == k:
            continue  # it does not read the item's language: set aside
        labels_of.append(_majority_of(labels, k))
    if not labels_of:
        return None, OTHER_LANGUAGE
    given = [lab for lab in labels_of if lab is not None]
    final = _majority_of(given, len(labels_of))
    if final is not None:
        return final, None
    return None, _flag_reason(given)


def _flag_reason(labels: Sequence[str]) -> str:
    """Why annotators' ``labels`` (abstentions left out) hold no majority: ``tie`` (as many for
    each of the two labels), else ``no_majority``."""
    counts = Counter(labels)
    return "tie" if len(counts) == 2 and len(set(counts.values())) == 1 else "no_majority"


def _majority_of(labels: Sequence[str], ballots: int) -> str | None:
    """:func:`majority_vote` over ``labels`` and ``ballots - len(labels)`` abstentions."""
    if not labels:
        return None
    first = labels[0]
    if 2 * labels.count(first) > ballots:  # the common case: the samples agree
        return first
    for label, n in Counter(labels).items():
        if 2 * n > ballots:
            return label
    return None
