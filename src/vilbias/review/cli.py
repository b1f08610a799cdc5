"""``vilbias review``: people check the automated labels.

    vilbias review export --workdir work --output sheets --reviewers 3 --overlap 30
    vilbias review import --workdir work sheets/sheet_reviewer_1.csv sheets/sheet_reviewer_2.csv
    vilbias review stats --workdir work

``export`` writes a CSV and an offline HTML page per reviewer (a sheet already there that holds
filled-in verdicts, or any file of a sheet's name that is not one, is kept and the new sheet goes
beside it); ``import`` takes the filled-in CSVs (all rows valid, or nothing imported);
``stats`` reports Cohen's kappa, Krippendorff's alpha, verdict shares, tie rate and per-annotator
agreement. ``export`` writes the options it ran with to ``<output>/review_export_config.yaml``
(unless a file of that name there is not one it wrote) and ``stats`` to
``<workdir>/reviews/review_stats_config.yaml`` (``--config FILE`` takes them back).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from vilbias.argparser import ConfigParser
from vilbias.cli import run_subcommand
from vilbias.config import save_config

EXPORT_HELP = "Write one review sheet (CSV + HTML) per reviewer."
IMPORT_HELP = "Import filled-in sheets (all rows valid or nothing)."
STATS_HELP = "Agreement figures and a plot."


@dataclass
class StatsPrint:
    json: bool = field(default=False, metadata={"help": "Print the figures as JSON."})


def _export(argv: list[str], prog: str) -> int:
    from vilbias.review.sheets import ExportConfig, export_sheets, kept_text

    (config,) = ConfigParser([ExportConfig], prog=prog, description=EXPORT_HELP).parse(argv)
    for reviewer, info in export_sheets(config).items():
        shown = f", {info['prefilled']} with your verdict already imported" if info["prefilled"] else ""
        print(f"{reviewer}: {info['items']} items{shown} -> {info['csv']}, {info['html']}")
        if info["kept"]:
            print(f"  {kept_text(info['kept'])}")
    saved = Path(config.output) / "review_export_config.yaml"
    if _ours(saved, "review export"):
        save_config(config.output, "review export", config)
    else:
        print(f"options not saved: {saved} is not a file vilbias wrote (left as it is)")
    return 0


def _ours(path: Path, stage: str) -> bool:
    """Whether ``path`` is absent or a config file :func:`save_config` wrote for ``stage`` (its
    first line says so): anything else there is someone else's and is not replaced."""
    if not path.exists():
        return True
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            return path.is_file() and f.readline().startswith(f"# The options `vilbias {stage}` ran with")
    except OSError:
        return False


def _import(argv: list[str], prog: str) -> int:
    from vilbias.review.sheets import ImportConfig, import_verdicts

    (config,) = ConfigParser([ImportConfig], prog=prog, description=IMPORT_HELP).parse(argv)
    result = import_verdicts(config)
    unchanged = f", {result['unchanged']} already imported" if result["unchanged"] else ""
    print(f"imported {result['imported']} verdicts ({result['skipped']} rows not reviewed yet{unchanged}) into {result['file']}")
    return 0


def _stats(argv: list[str], prog: str) -> int:
    from vilbias.review.stats import StatsConfig, format_stats, review_stats
    from vilbias.workdir import REVIEWS

    config, shown = ConfigParser([StatsConfig, StatsPrint], prog=prog, description=STATS_HELP).parse(argv)
    stats = review_stats(config)
    print(json.dumps(stats, indent=2) if shown.json else format_stats(stats))
    save_config(Path(config.workdir) / REVIEWS, "review stats", config)
    return 0


COMMANDS = {
    "export": (EXPORT_HELP, _export),
    "import": (IMPORT_HELP, _import),
    "stats": (STATS_HELP, _stats),
}


def main(argv: list[str], prog: str = "vilbias review") -> int:
    return run_subcommand(prog, __doc__.splitlines()[0], COMMANDS, argv)
