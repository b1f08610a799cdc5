"""Imported review verdicts: ``reviews/verdicts.jsonl`` and how they settle an item's label.

Each line is one reviewer's verdict on one item::

    {"unique_id": str, "reviewer": str, "verdict": "acceptable"|"needs_improvement"|"incorrect",
     "corrected_label": "biased"|"not_biased"|null, "corrected_rationale": str,
     "corrected_techniques": [technique id, ...]|null, "comment": str, "sheet": str, "imported_at": str}

(``corrected_rationale`` and ``corrected_techniques`` are absent from lines imported before they
existed: read as empty and as not given; ``corrected_techniques`` is ``[]`` when the reviewer
judged no technique present.) A later verdict by the same reviewer on the same item replaces the
earlier one. :func:`resolve_review` turns an item's verdicts into the dataset's ``review`` value
and, where the reviewers overrule or settle the automated label, the label the build uses;
:func:`review_outcome` adds what else the dataset carries (the corrected rationale and
techniques, the comments, the number of reviewers), :func:`settle_rationale` decides the row's
rationale and :func:`settle_techniques` its techniques.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from vilbias.workdir import REVIEWS, read_jsonl

VERDICTS_FILE = "verdicts.jsonl"
VERDICTS = ("acceptable", "needs_improvement", "incorrect")
# On a tie between verdicts the more severe one stands: a reviewer's objection is not outvoted
# by an equal number of approvals.
_SEVERITY = {"acceptable": 0, "needs_improvement": 1, "incorrect": 2}


@dataclass(frozen=True)
class Verdict:
    unique_id: str
    reviewer: str
    verdict: str
    corrected_label: str | None = None
    comment: str = ""
    corrected_rationale: str = ""
    corrected_techniques: tuple[str, ...] | None = None
    """The techniques the reviewer judges present (technique ids); None when not given."""

    def record(self) -> dict:
        """The fields a sheet row and a ``verdicts.jsonl`` line share (for comparing the two)."""
        techniques = None if self.corrected_techniques is None else list(self.corrected_techniques)
        return {"unique_id": self.unique_id, "reviewer": self.reviewer, "verdict": self.verdict,
                "corrected_label": self.corrected_label, "corrected_rationale": self.corrected_rationale,
                "corrected_techniques": techniques, "comment": self.comment}

    def label_for(self, automated_label: str | None) -> str | None:
        """The label this reviewer stands for: their corrected label, or the automated one they
        did not call incorrect."""
        return self.corrected_label or (automated_label if self.verdict != "incorrect" else None)


def load_verdicts(workdir: str | os.PathLike) -> dict[str, list[Verdict]]:
    """``{unique_id: [Verdict, ...]}``, the last verdict of each reviewer per item."""
    latest: dict[tuple[str, str], Verdict] = {}
    for r in read_jsonl(Path(workdir) / REVIEWS / VERDICTS_FILE):
        techniques = r.get("corrected_techniques")
        v = Verdict(
            r["unique_id"], r["reviewer"], r["verdict"], r.get("corrected_label"), r.get("comment", ""),
            r.get("corrected_rationale") or "", None if techniques is None else tuple(techniques),
        )
        latest[(v.unique_id, v.reviewer)] = v
    out: dict[str, list[Verdict]] = {}
    for v in latest.values():
        out.setdefault(v.unique_id, []).append(v)
    return out


def resolve_review(verdicts: Sequence[Verdict], automated_label: str | None) -> tuple[str, str | None]:
    """Return ``(review, label)`` for one item.

    ``review`` is the majority verdict (ties go to the more severe), or ``unreviewed``. The
    label is the automated one unless the review is ``incorrect`` — then the majority of the
    reviewers' corrected labels — or the item had no automated label (a tie) and reviewers
    gave one. ``label`` is None when nothing settles it.
    """
    if not verdicts:
        return "unreviewed", automated_label
    counts = Counter(v.verdict for v in verdicts)
    review = max(counts, key=lambda k: (counts[k], _SEVERITY[k]))
    corrected = Counter(v.corrected_label for v in verdicts if v.corrected_label)
    corrected_label = None
    if corrected:
        (top, n), *rest = corrected.most_common(2)
        corrected_label = None if rest and rest[0][1] == n else top
    if review == "incorrect" or automated_label is None:
        return review, corrected_label
    return review, automated_label


@dataclass(frozen=True)
class ReviewOutcome:
    """What the reviews of one item put into its dataset row."""

    review: str
    """The majority verdict, or ``unreviewed``."""
    label: str | None
    """The label the build uses (see :func:`resolve_review`)."""
    corrected_rationale: str | None
    """A reviewer's rationale for ``label``, or None when no reviewer standing for it gave one."""
    corrected_techniques: list[str] | None
    """The techniques a reviewer standing for ``label`` judged present, or None when none gave them."""
    comments: list[str]
    """The reviewers' non-empty comments, in reviewer order."""
    reviewers: int


def review_outcome(verdicts: Sequence[Verdict], automated_label: str | None) -> ReviewOutcome:
    """Resolve an item's verdicts into a :class:`ReviewOutcome`.

    The corrected rationale comes from a reviewer whose own label (:meth:`Verdict.label_for`) is
    the final one, preferring reviewers whose verdict is the majority verdict, then by name: a
    rationale written for the other label is never used. The corrected techniques come from such
    a reviewer too, the one whose rationale was taken first.
    """
    review, label = resolve_review(verdicts, automated_label)
    ordered = sorted(verdicts, key=lambda v: v.reviewer)
    standing = [v for v in ordered if label is not None and v.label_for(automated_label) == label]
    standing.sort(key=lambda v: v.verdict != review)
    rationales = [v for v in standing if v.corrected_rationale.strip()]
    author = rationales[0].reviewer if rationales else None
    techniques = sorted((v for v in standing if v.corrected_techniques is not None), key=lambda v: v.reviewer != author)
    return ReviewOutcome(
        review,
        label,
        rationales[0].corrected_rationale.strip() if rationales else None,
        list(techniques[0].corrected_techniques) if techniques else None,
        [v.comment.strip() for v in ordered if v.comment.strip()],
        len(ordered),
    )


RATIONALE_NOT_CORRECTED = "rationale_not_corrected"
"""Review flag: Needs Improvement, and no reviewer gave a corrected rationale."""
RATIONALE_MISSING = "rationale_missing"
"""Review flag: the label was overturned or settled by review and no reviewer gave a rationale
for it; the row's rationale is empty (the annotators' argues for the other label, or none won)."""


def settle_rationale(outcome: ReviewOutcome, automated_label: str | None, automated_rationale: str) -> tuple[str, str | None]:
    """The row's rationale and review flag (None when there is nothing to flag).

    A reviewer's corrected rationale always wins. Otherwise the annotators' rationale stands when
    the label is theirs (flagged if the review says it needs improvement); a label set by review
    gets an empty rationale, flagged, never one the annotators wrote for another label.
    """
    if outcome.corrected_rationale:
        return outcome.corrected_rationale, None
    if outcome.label != automated_label:
        return "", RATIONALE_MISSING
    if outcome.review == "needs_improvement":
        return automated_rationale, RATIONALE_NOT_CORRECTED
    return automated_rationale, None


def settle_techniques(outcome: ReviewOutcome, automated_label: str | None, automated_techniques: list[str]) -> tuple[list[str], bool]:
    """The row's techniques, and whether review cleared them.

    A reviewer's corrected techniques always win. Otherwise the annotators' stand when the label
    is theirs; a label set by review keeps none of the annotators' techniques (they were judged
    for the other label, or for no label): the row's ``techniques`` is empty and *cleared* is
    True — no one judged them for this label, so the rationale check does not compare against
    them.
    """
    if outcome.corrected_techniques is not None:
        return list(outcome.corrected_techniques), False
    if outcome.label != automated_label:
        return [], True
    return list(automated_techniques), False
