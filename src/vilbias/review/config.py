"""What ``vilbias review`` is told: :class:`ExportConfig` (``review export``), :class:`ImportConfig`
(``review import``) and :class:`StatsConfig` (``review stats``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class ExportConfig:
    workdir: Path = field(metadata={"help": "The annotated workdir."})
    output: Path = field(metadata={"help": "Folder for the sheets (CSV + HTML per reviewer). A sheet already there that "
                                           "holds filled-in verdicts, or a file of that name that is not a review sheet, "
                                           "is kept: the new sheet goes beside it (sheet_<reviewer>.2.csv ...).",
                                   "deprecated": ["--out"]})
    reviewers: int = field(default=1, metadata={"help": "Number of reviewers, one sheet each."})
    reviewer_names: list[str] = field(default_factory=list, metadata={"help": "Names for the reviewers (default reviewer_1 ...)."})
    overlap: int = field(default=20, metadata={"help": "Items every reviewer gets, for inter-reviewer agreement."})
    only_unreviewed: bool = field(default=False, metadata={"help": "Leave out items that already have a verdict."})
    max_text_chars: int = field(default=4000, metadata={"help": "Article text shown in the HTML page beyond this is cut."})


@dataclass
class ImportConfig:
    workdir: Path = field(metadata={"help": "The annotated workdir."})
    files: list[Path] = field(default_factory=list, metadata={"positional": True, "help": "Filled-in sheet CSV files."})


@dataclass
class StatsConfig:
    workdir: Path = field(metadata={"help": "The annotated (and reviewed) workdir."})
    plot: bool = field(default=True, metadata={"help": "Write reviews/stats.png."})
