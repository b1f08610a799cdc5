"""What ``vilbias publish dataset|model|space`` are told.

The configs live apart from the publishing code so that parsing a command line (and ``--help``)
does not import ``datasets`` and the Hub client; :mod:`vilbias.publish.dataset` and
:mod:`vilbias.publish.space` re-export theirs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class PublishDatasetConfig:
    """``vilbias publish dataset``."""

    repo_id: str = field(metadata={"help": "Dataset repo on the Hub, ORG/NAME."})
    version: str = field(metadata={"help": "Semantic version X.Y.Z of this release; tagged vX.Y.Z."})
    source: Path = field(default=Path("BiasCorpus"), metadata={"help": "The folder `vilbias build` wrote."})
    dry_run: bool = field(default=False, metadata={"help": "Print what would change; upload nothing (works offline with --previous)."})
    previous: Path | None = field(
        default=None,
        metadata={"help": "A local copy of the previous release to compare against when the Hub cannot be reached (dry runs)."},
    )
    allow_moved_rows: bool = field(
        default=False,
        metadata={"help": "Publish even if rows of the previous release changed split or fold; the changelog records it."},
    )
    # One flag for visibility, three states: a licence forbidding derivatives or commercial use
    # (ND/NC) must not make a release public unless the publisher says so explicitly.
    private: bool | None = field(
        default=None,
        metadata={"nargs": "?", "const": True, "metavar": "true|false",
                  "help": "Create the repo private (--private) or public (--private false). Unset: private when the "
                          "imported source's licence forbids derivatives or commercial use (ND/NC), else public; an "
                          "explicit --private false over such a licence is recorded in the changelog. An existing "
                          "repo keeps its visibility."},
    )
    token: str | None = field(default=None, metadata={"cli": False, "help": "Hub token; HF_TOKEN or the saved login when unset."})


@dataclass
class PublishModelConfig:
    """``vilbias publish model``."""

    repo_id: str = field(metadata={"help": "Model repo on the Hub, ORG/NAME."})
    source: Path = field(metadata={"help": "Training output folder (weights, processor/tokenizer, vilbias_card.json)."})
    private: bool = field(default=False, metadata={"help": "Create the repo private."})
    dataset_revision: str | None = field(default=None, metadata={"help": "Override the dataset revision the card states."})


@dataclass
class PublishSpaceConfig:
    """``vilbias publish space``."""

    repo_id: str = field(metadata={"help": "Space repo on the Hub, ORG/NAME."})
    source: Path | None = field(default=None, metadata={"help": "Space folder; the installed vilbias.spaces package when unset."})
    model: list[str] = field(default_factory=list, metadata={"help": "Model repo(s) the Space loads (YAML `models`)."})
    dataset: list[str] = field(default_factory=list, metadata={"help": "Dataset repo(s) the Space uses (YAML `datasets`)."})
    private: bool = field(default=False, metadata={"help": "Create the Space private."})
    token: str | None = field(default=None, metadata={"cli": False, "help": "Hub token; HF_TOKEN or the saved login when unset."})
