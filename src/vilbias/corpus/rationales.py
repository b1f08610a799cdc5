"""The rationale check over a build: each row's result, the figures the card and report state, and
what ``--exclude-failed-rationales`` does to ``sft``.

Every row of a corpus with rationales (a workdir, the embedded sample, an imported release) stores
its check result in ``default``'s ``rationale_problems`` column: the problem codes of
:func:`vilbias.rationale.check_rationale`, empty when the rationale passes. The build counts them
as it writes (:class:`RationaleTally`): rows that pass, per author of the rationale (the annotator
whose rationale the vote took, ``reviewer`` for a corrected one; ``the source`` for an import) and
per problem code.

``sft`` reads its columns from the same Parquet files as ``default`` (``columns:`` in the card's
configs), so it cannot hold fewer rows than ``default``. ``--exclude-failed-rationales`` therefore
keeps a failing rationale out of ``sft`` by writing that row's answer as the label alone
(``Label: biased``, no ``Reasoning:`` line), as for a row without a rationale (whose answer is
always the label alone, never an empty ``Reasoning:``): the row still
teaches its label, never the rationale that failed. ``default`` keeps the rationale and its
problems either way.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from vilbias.rationale import CODES, EMPTY
from vilbias.task import ANSWER_LABELS

MOSTLY_FAIL = 0.5
"""A release whose rationales pass for fewer than this share of its rows says so at the top of its report."""
NO_RATIONALE = "(no rationale)"
"""The author of a row that has no rationale."""


def label_only(example: dict[str, Any]) -> None:
    """Make ``example``'s ``sft`` answer the label alone (its rationale is kept out of training)."""
    example["messages"][-1]["content"][0]["text"] = f"Label: {ANSWER_LABELS[example['multimodal_label']]}"


@dataclass
class RationaleTally:
    """Counts of the check's results over the rows written."""

    exclude_failed: bool = False
    """``--exclude-failed-rationales``: a failing rationale's ``sft`` answer is the label alone."""
    rows: int = 0
    passed: int = 0
    no_rationale: int = 0
    by_code: Counter = field(default_factory=Counter)
    by_author: dict[str, list[int]] = field(default_factory=dict)
    """author -> [rows, passed]."""
    sft_label_only: int = 0
    """Rows with a failing rationale whose ``sft`` answer was made the label alone."""

    def add(self, example: dict[str, Any], author: str | None) -> None:
        """Count one stored example (its ``rationale_problems`` already set); with
        :attr:`exclude_failed`, make a failing rationale's ``sft`` answer the label alone."""
        problems = example["rationale_problems"]
        self.rows += 1
        ok = not problems
        self.passed += ok
        self.by_code.update(problems)
        if problems == [EMPTY] and not (example.get("reasoning") or "").strip():
            self.no_rationale += 1
            author = NO_RATIONALE
        counts = self.by_author.setdefault(author or NO_RATIONALE, [0, 0])
        counts[0] += 1
        counts[1] += ok
        if author == NO_RATIONALE:
            label_only(example)  # never an empty "Reasoning:" line
        elif problems and self.exclude_failed:
            label_only(example)
            self.sft_label_only += 1

    def summary(self) -> dict[str, Any]:
        """The build report's ``rationale_check`` section (also what the card states)."""
        with_rationale = self.rows - self.no_rationale
        failing = with_rationale - self.passed
        return {
            "rows": self.rows,
            "passed": self.passed,
            "pass_share": round(self.passed / self.rows, 4) if self.rows else None,
            "with_rationale": with_rationale,
            "pass_share_of_rationales": round(self.passed / with_rationale, 4) if with_rationale else None,
            "no_rationale": self.no_rationale,
            "failing": failing,
            "by_code": {c: self.by_code[c] for c in CODES if self.by_code[c]},
            "by_author": {a: {"rows": n, "passed": p, "pass_share": round(p / n, 4)}
                          for a, (n, p) in sorted(self.by_author.items(), key=lambda kv: (kv[0] == NO_RATIONALE, kv[0]))},
            "exclude_failed": self.exclude_failed,
            "sft_label_only": self.sft_label_only,
            "sft_failing_rationales": 0 if self.exclude_failed else failing,
            "warning": warning(self.rows, self.passed, with_rationale),
        }


def warning(rows: int, passed: int, with_rationale: int) -> str | None:
    """What the top of the report says when the rationales mostly fail (or there are none)."""
    if not rows or passed >= MOSTLY_FAIL * rows:
        return None
    if not with_rationale:
        return f"no row has a rationale: all {rows} `sft` answers are the label alone"
    return (f"the rationales mostly fail the rationale check: {passed} of {rows} rows pass "
            f"({with_rationale - passed} rationales fail, {rows - with_rationale} rows have none)")


def describe_codes(by_code: dict[str, int]) -> str:
    """``quote_not_in_article 3, cut_off 1``."""
    return ", ".join(f"{c} {n}" for c, n in by_code.items())


def tally_rows(examples: Iterable[dict[str, Any]], authors: Iterable[str | None]) -> dict[str, Any]:
    """The summary of already-checked examples (a test's or a script's view of a written corpus)."""
    tally = RationaleTally()
    for example, author in zip(examples, authors, strict=True):
        tally.add(example, author)
    return tally.summary()
