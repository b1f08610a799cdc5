"""``vilbias review``: people check the automated labels.

    vilbias review export --workdir work --output sheets --reviewers 3 --overlap 30
    vilbias review import --workdir work sheets/sheet_reviewer_1.csv sheets/sheet_reviewer_2.csv
    vilbias review stats --workdir work

``export`` writes a CSV and an offline HTML page per reviewer (a sheet already there that holds
filled-in verdicts, or any file of a sheet's name that is not one, is kept and the new sheet goes
beside it); ``import`` takes the filled-in sheets as a spreadsheet program saved them (CSV in any
encoding and separator, or .xlsx; each sheet imports when all its rows are valid, and says what it
imported);
``stats`` reports Cohen's kappa, Krippendorff's alpha, verdict shares, tie rate and per-annotator
agreement. ``export`` writes the options it ran with to ``<output>/review_export_config.yaml``
(unless a file of that name there is not one it wrote) and ``stats`` to
``<workdir>/reviews/review_stats_config.yaml`` (``--config FILE`` takes them back).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from vilbias.argparser import ConfigParser
from vilbias.cli import run_subcommand
from vilbias.config import save_config
from vilbias.stops import on_stop

EXPORT_HELP = "Write one review sheet (CSV + HTML) per reviewer."
IMPORT_HELP = "Import filled-in sheets (CSV as saved by Excel, LibreOffice or Google Sheets, or .xlsx; each sheet all rows or none)."
STATS_HELP = "Agreement figures and a plot."


@dataclass
class StatsPrint:
    json: bool = field(default=False, metadata={"help": "Print the figures as JSON."})


def _export(argv: list[str], prog: str) -> int:
    from vilbias.review.sheets import ExportConfig, export_sheets, kept_text

    (config,) = ConfigParser([ExportConfig], prog=prog, description=EXPORT_HELP).parse(argv)
    # each sheet is written whole (a temporary file renamed over it): one a stop or a full disk
    # interrupts is not there at all
    with on_stop(lambda: f"the sheets in {config.output} are whole; re-run the same command to write the rest"):
        written = export_sheets(config)
    for reviewer, info in written.items():
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
    from vilbias.review.sheets import ImportConfig, SheetsRefused, import_verdicts, refused_text

    (config,) = ConfigParser([ImportConfig], prog=prog, description=IMPORT_HELP).parse(argv)
    # verdicts.jsonl is rewritten whole (a temporary file renamed over it): a stop or a full disk
    # leaves it as it was
    with on_stop(lambda: "nothing was imported (verdicts.jsonl is as it was); re-run the same command to import"):
        try:
            result, refused = import_verdicts(config), None
        except SheetsRefused as e:
            result, refused = e.result, e
    for f in result["files"]:
        if not f["problems"]:
            print(import_line(f))
    if result["imported"] or not refused:
        print(f"{result['imported']} verdicts imported into {result['file']}")
    if refused is not None:
        print(f"{prog}: error: {refused_text(result)}", file=sys.stderr)
        return 2
    return 0


def import_line(f: dict) -> str:
    """What was imported from one sheet, in one line."""
    notes = [f"{f['skipped']} rows not reviewed yet"] + ([f"{f['unchanged']} already imported"] if f["unchanged"] else [])
    read_as = f"; read as {f['read_as']}" if f["read_as"] else ""
    return f"{f['file']}: {f['imported']} verdicts ({', '.join(notes)}{read_as})"


def _stats(argv: list[str], prog: str) -> int:
    from vilbias.review.stats import StatsConfig, format_stats, review_stats
    from vilbias.workdir import REVIEWS

    config, shown = ConfigParser([StatsConfig, StatsPrint], prog=prog, description=STATS_HELP).parse(argv)
    with on_stop(lambda: "reviews/stats.json is as it was; re-run the same command"):
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
