"""Imported review verdicts: ``reviews/verdicts.jsonl`` and how they settle an item's label.

Each line is one reviewer's verdict on one item::

    {"unique_id": str, "reviewer": str, "verdict": "acceptable"|"needs_improvement"|"incorrect",
     "corrected_label": "biased"|"not_biased"|null, "comment": str, "sheet": str, "imported_at": str}

A later verdict by the same reviewer on the same item replaces the earlier one.
:func:`resolve_review` turns an item's verdicts into the dataset's ``review`` value and, where the
reviewers overrule or settle the automated label, the label the build uses.
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


def load_verdicts(workdir: str | os.PathLike) -> dict[str, list[Verdict]]:
    """``{unique_id: [Verdict, ...]}``, the last verdict of each reviewer per item."""
    latest: dict[tuple[str, str], Verdict] = {}
    for r in read_jsonl(Path(workdir) / REVIEWS / VERDICTS_FILE):
        v = Verdict(r["unique_id"], r["reviewer"], r["verdict"], r.get("corrected_label"), r.get("comment", ""))
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
