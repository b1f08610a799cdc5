"""What ``vilbias build`` builds and where: :class:`BuildConfig`, light enough for ``--help``.

This module imports neither ``datasets`` nor ``huggingface_hub``: the command line parses and
checks a build's options before anything heavy loads (:mod:`vilbias.corpus.pipeline` does the work).

A build reads one *source* (:data:`SOURCE_FLAGS`): a pipeline workdir, a sentence file, a
published release, or, when none is given, the embedded sample. :meth:`BuildConfig.origin`
resolves which one, once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from vilbias.corpus.presets import PRESETS
from vilbias.loading_script.schema import import_targets
from vilbias.outputs import claim_output
from vilbias.workdir import require_articles

DATA_DIR = "data"
REPORT = "build_report.json"
"""The build report beside the data (rows per split and fold, label shares, groups, exclusions)."""
BUILD_FILES = ("README.md", REPORT, "build_config.yaml", DATA_DIR, f"{DATA_DIR}/*.parquet", "assets", "assets/*.png",
               # the earlier seven-copy layout's config folders
               "fold_[0-9]", "fold_[0-9]/*.parquet", "sft", "sft/*.parquet")
"""Everything a build writes into its folder (globs): a folder holding its report is an earlier
build, which the next build replaces only when the folder holds nothing else."""


def claim_build_output(output: Path) -> Path:
    """Refuse, in one line, an ``output`` that is not new, empty or an earlier build holding only
    :data:`BUILD_FILES`: a build replaces its folder, and never a folder holding what it did not write."""
    return claim_output(output, "vilbias build", signs=(REPORT,), replaces=BUILD_FILES)


DEFAULT_OUTPUT = Path("BiasCorpus")
"""Where ``vilbias build`` writes by default. Not ``./vilbias``: a folder named like the package
in the working directory would shadow an editable install of it."""

SOURCE_FLAGS = {"workdir": ("--workdir", "workdir"), "sentences": ("--sentences", "sentences"), "source": ("--from", "release")}
"""The fields naming what a build reads: field -> (its flag, the source's kind). A build reads at
most one of them; none is the embedded sample (kind ``sample``)."""
RELEASE_OPTIONS = {"images": "--images", "preset": "--preset", "label_map": "--label-map", "source_license": "--source-license"}
"""Options that only mean something for a published release (``--from``)."""
SENTENCE_OPTIONS = {"source_split": "--source-split"}
"""Options that only mean something for a sentence corpus (``--sentences``)."""
_HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+(@[\w./-]+)?$")


@dataclass(frozen=True)
class Origin:
    """The one source a build reads, as resolved from its config."""

    kind: str
    """``sample`` (the embedded sample), ``workdir``, ``sentences`` or ``release``."""
    location: str | None
    """The workdir, sentence file or release as the user named it (None for the sample)."""


@dataclass(frozen=True)
class CardNames:
    """How the card names the dataset and its release (its loading and pinning examples)."""

    repo_id: str | None
    """The Hub repo the card's loading examples name; None: they name :attr:`folder`."""
    version: str
    pretty_name: str
    folder: str = str(DEFAULT_OUTPUT)
    """The output folder as the user gave it (what ``load_dataset`` loads before publishing)."""

    @property
    def load_name(self) -> str:
        """What ``load_dataset`` is given in the card: the repo when one is named, else the folder."""
        return self.repo_id or self.folder


@dataclass
class BuildConfig:
    """What ``vilbias build`` builds and where."""

    workdir: Path | None = field(
        default=None, metadata={"help": "Pipeline workdir to build from (articles.jsonl, images/, annotations.sqlite, reviews/). Omit to build the embedded sample."}
    )
    output: Path = field(
        default=DEFAULT_OUTPUT, metadata={"help": "Output folder in Hub layout; `load_dataset(<output>)` loads it. Written beside it and swapped in at the end. An "
                                               "earlier build there (its build_report.json, nothing else) is replaced and is the previous release whose splits are "
                                               "kept; a folder holding anything else, or the current folder, is refused before anything is written."}
    )
    sentences: Path | None = field(
        default=None, metadata={"help": "Build a text-only sentence corpus instead of a workdir: BABE's CSV/XLSX, a CSV/Parquet/JSON of "
                                        "text and label columns (others map with --column), a dataset folder or a Hub id (BABE's "
                                        "mediabiasgroup/BABE keeps its own train/test split; MBIB's mediabiasgroup/mbib-base with --source-split TASK)."}
    )
    source_split: str | None = field(
        default=None, metadata={"help": "With --sentences and a dataset whose splits are not train/test: the one split to build "
                                        "(MBIB's splits are its tasks: linguistic_bias, cognitive_bias, …); the corpus draws its own splits."}
    )
    source: str | None = field(
        default=None,
        metadata={
            "aliases": ["--from"],
            "help": "Import a published release instead of a workdir: a Hub dataset ORG/NAME[@REVISION] (token from HF_TOKEN or "
            "`hf auth login`), or a local Parquet/CSV/JSONL/XLSX file, a folder of them, or a .zip. NewsMediaBias-Plus v1 "
            "(2024), its 2025 Hub release and the ViLBias paper's release are recognised from their columns; see docs/import.md.",
        },
    )
    images: Path | None = field(
        default=None,
        metadata={"help": "With --from: the folder the table's image paths are relative to (default: the zip's own images, or the table's folder). Embedded image bytes need none."},
    )
    preset: str | None = field(
        default=None,
        metadata={
            "help": f"With --from: force a layout instead of recognising it from the columns: {', '.join(PRESETS)}.",
            "choices": list(PRESETS),
        },
    )
    columns: list[str] = field(
        default_factory=list,
        metadata={
            "aliases": ["--column"],
            "metavar": "TARGET=SOURCE",
            "help": "With --from or --sentences: map a corpus field to a source column, TARGET=SOURCE (repeatable), e.g. --column "
            "unique_id=id --column image=image_path. Targets with --from: "
            + "; ".join(f"{name} ({what})" for name, what in import_targets().items())
            + "; with --sentences: text, label, news_link, outlet, topic, type, label_opinion, biased_words.",
        },
    )
    label_map: str | None = field(
        default=None,
        metadata={"help": "With --from: how the source's label strings map to the labels, \"A=biased,B=not_biased\" (replaces the preset's map; matched without regard to case)."},
    )
    source_license: str | None = field(
        default=None,
        metadata={"help": "With --from: the source's licence id (e.g. cc-by-nc-4.0), overriding the preset's and the Hub card's. A licence with ND or NC makes `vilbias publish dataset` create the repo private."},
    )
    previous: str | None = field(
        default=None,
        metadata={"help": "The previous release whose rows keep their split and fold: a built folder or a Hub dataset ORG/NAME[@REVISION]. Default: the existing build in --output, if any."},
    )
    repo_id: str | None = field(
        default=None,
        metadata={"help": "Hub repo id the card's loading examples name (default: the output folder; `vilbias publish dataset` writes its repo in)."},
    )
    version: str = field(default="1.0.0", metadata={"help": "Release version the card's pinning example names."})
    pretty_name: str = field(default="BiasCorpus", metadata={"help": "Dataset name in the card."})
    max_shard_size: str = field(default="500MB", metadata={"help": "Parquet shard size cap, as datasets parses it (e.g. 500MB)."})
    exclude_failed_rationales: bool = field(
        default=False,
        metadata={"help": "Keep rationales that fail the rationale check (vilbias.rationale) out of what `sft` trains on: their "
                          "`sft` answer is the label alone. The rows and their rationales stay in `default`; the card states the count."},
    )
    num_proc: int | None = field(
        default=None, metadata={"help": "Processes validating a workdir's images (default: all cores above 2,000 images, else 1); threads checking "
                                    "an import's images and languages (default: every core, at most 8; 1: none)."}
    )

    def __post_init__(self) -> None:
        self.output = Path(self.output)
        self.workdir = Path(self.workdir) if self.workdir is not None else None
        self.sentences = Path(self.sentences) if self.sentences is not None else None
        self.columns = list(self.columns or [])
        self.origin()  # fail fast: before anything is read or written

    def origin(self) -> Origin:
        """The one source this build reads (the embedded sample when none is named).

        Raises:
            ValueError: several sources are named, or a release-only option comes without ``--from``.
            FileNotFoundError: the workdir or sentence file does not exist.
        """
        given = {name: getattr(self, name) for name in SOURCE_FLAGS if getattr(self, name) is not None}
        if len(given) > 1:
            raise ValueError(f"{' and '.join(SOURCE_FLAGS[n][0] for n in given)} are alternatives: build from one of them")
        if "source" not in given and any(getattr(self, name) for name in RELEASE_OPTIONS):
            raise ValueError(f"{', '.join(list(RELEASE_OPTIONS.values())[:-1])} and {list(RELEASE_OPTIONS.values())[-1]} go with --from SOURCE")
        if self.columns and not ({"source", "sentences"} & set(given)):
            raise ValueError("--column goes with --from SOURCE or --sentences FILE")
        if "sentences" not in given and any(getattr(self, name) for name in SENTENCE_OPTIONS):
            raise ValueError(f"{', '.join(SENTENCE_OPTIONS.values())} goes with --sentences")
        if not given:
            return Origin("sample", None)
        (name, value), = given.items()
        if name == "workdir":
            require_articles(value)  # never ingested: run ingest first; ingested but empty: why
        if name == "sentences" and not value.exists() and not _HUB_ID.match(str(value)):
            raise FileNotFoundError(f"sentence file {value} does not exist")
        return Origin(SOURCE_FLAGS[name][1], str(value))

    @property
    def card_names(self) -> CardNames:
        # the card is uploaded: an absolute output path (a path of this machine) is named by its folder
        folder = self.output.name if self.output.is_absolute() else str(self.output)
        return CardNames(self.repo_id, self.version, self.pretty_name, folder)
