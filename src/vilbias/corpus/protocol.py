"""What one source of a build gives the build: :class:`CorpusSource` and its :class:`BuildPlan`.

A workdir (:class:`vilbias.corpus.plan.WorkdirSource`), a sentence file
(:class:`vilbias.corpus.sentences.SentenceSource`) and a published release
(:class:`vilbias.corpus.importer.ReleaseSource`) are three sources of one build
(:func:`vilbias.corpus.pipeline.build`): each decides its rows (:meth:`CorpusSource.plan`), hands
them over one stored example at a time (:meth:`CorpusSource.examples`) and renders its card
(:meth:`CorpusSource.card`); the build writes, swaps in and reports the same way for all three.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from vilbias.corpus.config import CardNames
from vilbias.corpus.splits import Cell

if TYPE_CHECKING:
    from datasets import DatasetInfo, Features

    from vilbias.corpus.writer import ConfigView

CellKey = tuple[str, int]
"""A row's cell: ``(split, fold)``."""


class PlannedRow(Protocol):
    """What the report and the card read of every planned row (a workdir's ``PlanRow``, an
    imported row, a sentence alike)."""

    label: int
    outlet: str
    split: str
    fold: int


@dataclass
class BuildPlan:
    """What a source decided: every row's label and cell, what it left out and why, its own figures."""

    rows: Mapping[str, PlannedRow]
    """unique_id -> the row, its cell assigned."""
    split_report: dict[str, Any]
    """:class:`vilbias.corpus.splits.SplitReport` as a dict (groups, rows linked, pinned, not kept whole)."""
    exclusions: list[dict[str, Any]]
    """Rows left out, each with its ``unique_id`` and ``reason`` (and where the source says)."""
    exclusion_counts: dict[str, int]
    """reason -> rows left out for it (all of them, where ``exclusions`` lists only the first ones)."""
    details: dict[str, Any] = field(default_factory=dict)
    """The source's own figures (annotation, rows read, the imported layout and licence ...):
    the ``source`` section of the build report."""


class CorpusSource(Protocol):
    """One thing a corpus is built from."""

    kind: str
    """``sample``, ``workdir``, ``sentences`` or ``release``."""
    name: str
    """What it was built from, as the report and the printed summary name it."""
    features: Features
    """The columns a row stores."""
    views: dict[str, ConfigView]
    """The configs the repository offers over those rows (:func:`vilbias.corpus.writer.corpus_views`)."""

    def plan(self, scratch: Path, pinned: Mapping[str, Cell]) -> BuildPlan:
        """Decide every row and its cell (rows in ``pinned`` keep theirs); ``scratch`` is removed after the build.

        Raises:
            ValueError: nothing is left to build (the message says why).
        """

    def examples(self) -> Iterator[tuple[CellKey, dict[str, Any]]]:
        """``(cell, stored example)`` for every planned row, each once."""

    def rationale_author(self, example: dict[str, Any]) -> str | None:
        """Who wrote the rationale of ``example``, just yielded by :meth:`examples` (an annotator,
        ``reviewer``, ``the source``); None when it has none. Only for sources whose rows carry
        ``reasoning`` (and so ``rationale_problems``)."""

    def card(self, repo: Path, infos: dict[str, DatasetInfo], names: CardNames, changelog: str,
             rationales: dict[str, Any] | None) -> str:
        """The card (``README.md``) of the written rows; may write assets (the plot) into ``repo``.
        ``rationales`` is the rationale check's summary over the rows written
        (:meth:`vilbias.corpus.rationales.RationaleTally.summary`; None for a corpus without rationales)."""

    def close(self) -> None:
        """Release what :meth:`plan` opened (a zip, a download's scratch)."""
