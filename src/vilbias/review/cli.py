"""``vilbias review``: people check the automated labels.

    vilbias review export --workdir work --out sheets --reviewers 3 --overlap 30
    vilbias review import --workdir work sheets/sheet_reviewer_1.csv sheets/sheet_reviewer_2.csv
    vilbias review stats --workdir work

``export`` writes a CSV and an offline HTML page per reviewer; ``import`` takes the filled-in CSVs
(all rows valid, or nothing imported); ``stats`` reports Cohen's kappa, Krippendorff's alpha,
verdict shares, tie rate and per-annotator agreement.
"""

from __future__ import annotations

import argparse
import json

from vilbias.config import add_dataclass_arguments, dataclass_from_args


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from vilbias.review.sheets import ExportConfig, ImportConfig
    from vilbias.review.stats import StatsConfig

    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands")
    parsers = {}
    for name, cls, help_ in (
        ("export", ExportConfig, "Write one review sheet (CSV + HTML) per reviewer."),
        ("import", ImportConfig, "Import filled-in sheets (all rows valid or nothing)."),
        ("stats", StatsConfig, "Agreement figures and a plot."),
    ):
        parsers[name] = commands.add_parser(name, help=help_, description=help_)
        add_dataclass_arguments(parsers[name], cls)
    parsers["stats"].add_argument("--json", action="store_true", help="Print the figures as JSON.")


def main(args: argparse.Namespace) -> int:
    from vilbias.review.sheets import ExportConfig, ImportConfig, export_sheets, import_verdicts
    from vilbias.review.stats import StatsConfig, format_stats, review_stats

    if args.command == "export":
        for reviewer, info in export_sheets(dataclass_from_args(ExportConfig, args)).items():
            print(f"{reviewer}: {info['items']} items -> {info['csv']}, {info['html']}")
    elif args.command == "import":
        result = import_verdicts(dataclass_from_args(ImportConfig, args))
        print(f"imported {result['imported']} verdicts ({result['skipped']} rows not reviewed yet) into {result['file']}")
    else:
        stats = review_stats(dataclass_from_args(StatsConfig, args))
        print(json.dumps(stats, indent=2) if args.json else format_stats(stats))
    return 0
