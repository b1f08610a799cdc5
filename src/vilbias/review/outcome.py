"""What an item's votes and reviews make of it, computed once.

The review sheets, ``vilbias review stats``, the build's rows and the dataset card all read these
functions, so a figure is the same number wherever it is shown:

- :func:`label_prompt`: which prompt's vote labels the items: ``multimodal`` when vision
  annotators were asked it, else ``text`` (the offline default, the shipped BABE sentence model,
  reads text only);
- :func:`automated_results`: every annotated item's votes under both prompts, with the vote of
  the label prompt (:attr:`ItemVotes.automated`: its label, flag, agreement, rationale and
  techniques) — the automated label a reviewer judges and the build starts from;
- :func:`final_agreement`: a row's ``agreement``, the share of non-abstaining votes (of the
  label prompt) for its *final* label: the reviewed one where review changed it;
- :class:`AgreementTally`: Cohen's κ between the automated and the final labels over the reviewed
  items, and each annotator's agreement with the final label, per prompt.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vilbias.annotate.store import AnnotationStore
from vilbias.annotate.voting import OTHER_LANGUAGE, Vote, VoteResult, hierarchical_vote
from vilbias.metrics.agreement import cohen_kappa
from vilbias.workdir import ANNOTATIONS

PROMPTS = ("text", "multimodal")


def label_prompt(active: Mapping[str, Mapping[str, Any]]) -> str:
    """The prompt whose vote labels the items: ``multimodal`` when vision annotators were asked
    it, else ``text`` (an offline, text-only annotation still builds a corpus; its rows say so)."""
    return "multimodal" if active.get("multimodal", {}).get("annotators") else "text"


@dataclass
class ItemVotes:
    """An item's automated result under both prompts, with its raw votes."""

    text: VoteResult
    multimodal: VoteResult
    text_votes: list[Vote]
    multimodal_votes: list[Vote]
    label_prompt: str = "multimodal"
    """The prompt whose vote is the item's automated label (:func:`label_prompt`)."""

    @property
    def automated(self) -> VoteResult:
        """The label prompt's vote: the automated label, flag, agreement, rationale and techniques."""
        return self.multimodal if self.label_prompt == "multimodal" else self.text

    @property
    def votes(self) -> list[Vote]:
        """The label prompt's ballots."""
        return self.multimodal_votes if self.label_prompt == "multimodal" else self.text_votes

    @property
    def unread(self) -> set[str]:
        """The label prompt's annotators that abstained because they do not read the item's language."""
        return unread_by(self.votes)

    def annotator_labels(self) -> dict[str, dict[str, str | None]]:
        """``{prompt: {annotator: its own majority}}`` of the annotators that judged the item
        (:func:`judged_labels`)."""
        return {"text": judged_labels(self.text, self.text_votes), "multimodal": judged_labels(self.multimodal, self.multimodal_votes)}


def unread_by(votes: Iterable[Vote]) -> set[str]:
    """Annotators every one of whose ``votes`` is an abstention for the item's language
    (:data:`~vilbias.annotate.voting.OTHER_LANGUAGE`): they never judged the item."""
    by: dict[str, bool] = {}
    for v in votes:
        by[v.annotator] = by.get(v.annotator, True) and v.abstention == OTHER_LANGUAGE
    return {a for a, unread in by.items() if unread}


def judged_labels(result: VoteResult, votes: Iterable[Vote]) -> dict[str, str | None]:
    """``{annotator: its own majority}`` of the annotators that judged the item: one that does
    not read its language is left out, not counted as a miss in its agreement."""
    unread = unread_by(votes)
    return {a: label for a, label in result.annotator_labels.items() if a not in unread}


def automated_results(workdir: str | os.PathLike) -> dict[str, ItemVotes]:
    """``{item_id: ItemVotes}`` for every item the active annotation configuration voted on."""
    path = Path(workdir) / ANNOTATIONS
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: run `vilbias annotate --workdir {workdir}` first")
    out = {}
    with AnnotationStore(path) as store:
        active = store.active()
        labelled_by = label_prompt(active)
        order = {p: [a.name for a in cfg["annotators"]] for p, cfg in active.items()}
        for item_id, by_prompt in store.iter_votes():
            tv, mv = by_prompt.get("text", []), by_prompt.get("multimodal", [])
            if not tv and not mv:
                continue
            out[item_id] = ItemVotes(
                hierarchical_vote(tv, order.get("text")), hierarchical_vote(mv, order.get("multimodal")), tv, mv,
                labelled_by,
            )
    return out


def final_agreement(labels: Iterable[str | None], final: str | None) -> float | None:
    """Share of the non-abstaining ballots ``labels`` (None = abstention) that are ``final``, the
    row's final label; None when there is no final label or no ballot that is not an abstention.
    For an unreviewed item it is the vote's own agreement (:attr:`VoteResult.agreement`)."""
    valid = [label for label in labels if label is not None]
    if final is None or not valid:
        return None
    return sum(label == final for label in valid) / len(valid)


@dataclass
class AgreementTally:
    """Cohen's κ and per-annotator agreement, added up item by item (memory stays flat in corpus
    size apart from one pair per reviewed item).

    κ compares the automated label with the final one over reviewed items that have both.
    An annotator's agreement, per prompt, is the share of items with a final label where its own
    majority (an abstention counts as a miss) is the final label.
    """

    automated: list[str] = field(default_factory=list)
    reviewed: list[str] = field(default_factory=list)
    hits: dict[str, Counter[str]] = field(default_factory=dict)
    totals: dict[str, Counter[str]] = field(default_factory=dict)

    def add(self, automated: str | None, final: str | None, reviewed: bool,
            annotator_labels: Mapping[str, Mapping[str, str | None]]) -> None:
        """One item: its automated label, final label, whether anyone reviewed it, and
        ``{prompt: {annotator: own majority}}``."""
        if reviewed and automated is not None and final is not None:
            self.automated.append(automated)
            self.reviewed.append(final)
        if final is None:
            return
        for prompt, labels in annotator_labels.items():
            for annotator, label in labels.items():
                self.totals.setdefault(prompt, Counter())[annotator] += 1
                self.hits.setdefault(prompt, Counter())[annotator] += label == final

    def result(self) -> dict[str, Any]:
        """``cohen_kappa`` (None where undefined: no pairs, or one label throughout), ``kappa_items``,
        ``annotator_agreement`` and ``annotator_items`` (``{prompt: {annotator: ...}}``)."""
        kappa = cohen_kappa(self.automated, self.reviewed) if self.automated else math.nan
        return {
            "cohen_kappa": None if math.isnan(kappa) else kappa,
            "kappa_items": len(self.automated),
            "annotator_agreement": {p: {a: self.hits[p][a] / n for a, n in t.items()} for p, t in self.totals.items()},
            "annotator_items": {p: dict(t) for p, t in self.totals.items()},
        }
