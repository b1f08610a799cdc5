"""``vilbias audit``: VIGNETTE's stereotype audit of a VLM, an LLM, or the corpus's annotators.

    vilbias audit run --model openai:Qwen/Qwen2.5-VL-7B-Instruct@http://localhost:8000/v1 --out audits/qwen
    vilbias audit run --model smollm2 --limit 24 --out audits/smollm2          # text variant, offline
    vilbias audit run --model ./vlm --manifest vignette/images --paradigms decision --out audits/vlm
    vilbias audit metrics --responses audits/qwen/responses.jsonl --out audits/qwen/metrics
    vilbias audit metrics --responses other.csv --out audits/other --alpha 0.01     # 99 % intervals, p < 0.01
    vilbias audit annotators --workdir work --annotators annotators.yaml       # before `vilbias annotate`
    vilbias audit space --vignette path/to/vignette/data --out space.json      # the full question space
    vilbias audit probeset --out probe                                         # render the embedded images

The responses format, the metrics and the probe set are described in ``docs/audit.md``.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path

from vilbias.audit.metrics import MetricOptions
from vilbias.config import add_dataclass_arguments, dataclass_from_args


@dataclass
class MetricsConfig:
    responses: Path = field(metadata={"help": "A responses file (JSON Lines or CSV; format in docs/audit.md)."})
    out: Path = field(metadata={"help": "Folder for the metric tables (CSV, metrics.json) and plots."})
    plots: bool = field(default=True, metadata={"help": "Draw the figures too."})
    statistics: MetricOptions = field(default_factory=MetricOptions, metadata={
        "help": "Significance and intervals"})


@dataclass
class SpaceConfig:
    vignette: Path = field(metadata={"help": "Folder with VIGNETTE's activities.json, roles.json, sscm_dictionary.csv, "
                                             "merged_descriptors_visibility.csv."})
    out: Path = field(metadata={"help": "Where to write the question space JSON (for --space)."})
    subset: bool = field(default=False, metadata={"help": "Write the embedded stratified subset instead of the full space."})


@dataclass
class ProbesetConfig:
    out: Path = field(metadata={"help": "Folder for the rendered probe set (manifest.jsonl + images/)."})
    limit: int | None = field(default=None, metadata={"help": "Only the first N pairs."})


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from vilbias.audit.annotators import AnnotatorAuditConfig
    from vilbias.audit.runner import AuditConfig

    commands = parser.add_subparsers(dest="audit_command", required=True, metavar="COMMAND")
    run = commands.add_parser("run", help="Ask a model the audit's questions; store, export and score the answers.")
    add_dataclass_arguments(run, AuditConfig)
    run.add_argument("--json", action="store_true", help="Print the summary as JSON.")
    metrics = commands.add_parser("metrics", help="Score a responses file: tables and plots.")
    add_dataclass_arguments(metrics, MetricsConfig)
    annotators = commands.add_parser("annotators", help="Audit each annotator of an annotators file (text variant).")
    add_dataclass_arguments(annotators, AnnotatorAuditConfig)
    annotators.add_argument("--json", action="store_true", help="Print the summaries as JSON.")
    space = commands.add_parser("space", help="Build a question space from VIGNETTE's published lists.")
    add_dataclass_arguments(space, SpaceConfig)
    probeset = commands.add_parser("probeset", help="Render the embedded probe set (images + manifest).")
    add_dataclass_arguments(probeset, ProbesetConfig)


def _format_run(summary: dict) -> str:
    run = summary["run"]
    lines = [
        f"{summary['model']}: {summary['answered']} of {summary['questions']} questions answered with an option "
        f"({summary['unmatched']} without); this run asked {run['asked']} ({run['failed']} failed) in {run['wall_s']:.1f}s"
        + (f", {run['seconds_per_question']:.3f}s per question" if run.get("seconds_per_question") else ""),
    ]
    for key, pb in summary.get("position_bias", {}).items():
        lines.append(f"first-option rate ({key}): {pb['first_option_rate']:.1%} of {pb['questions']} (p={pb['p']:.3g})")
    for modality, acc in summary.get("factuality_accuracy", {}).items():
        lines.append(f"factuality accuracy ({modality}): {acc:.1%}")
    for modality, paradigms in summary.get("paradigms", {}).items():
        for paradigm, slot in paradigms.items():
            w = slot["max_disparity"]
            lines.append(f"{paradigm} ({modality}): largest disparity {w['disparity']:.1f} points in {w['dimension']} "
                         f"({w['most_favoured']} over {w['least_favoured']}); {slot['significant']} identities "
                         f"p<{summary.get('alpha', 0.05):g}")
    if "metrics_dir" in summary:
        lines.append(f"metrics and plots: {summary['metrics_dir']}")
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    command = args.audit_command
    if command == "run":
        from vilbias.audit.runner import AuditConfig, run_audit

        summary = run_audit(dataclass_from_args(AuditConfig, args))
        print(json.dumps(summary, indent=2) if args.json else _format_run(summary))
        return 0
    if command == "metrics":
        from vilbias.audit.metrics import compute_metrics, write_metrics
        from vilbias.audit.responses import read_responses
        from vilbias.audit.summary import summarize

        config = dataclass_from_args(MetricsConfig, args)
        config.statistics.validate()
        rows = read_responses(config.responses)
        tables = compute_metrics(rows, config.statistics)
        written = write_metrics(tables, config.out, plots=config.plots)
        summary = summarize(tables, rows)
        (Path(config.out) / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        print(f"{len(rows)} responses: {len(written['tables'])} tables, {len(written['plots'])} plots in {config.out}")
        return 0
    if command == "annotators":
        from vilbias.audit.annotators import (
            AnnotatorAuditConfig,
            format_annotator_audit,
            run_annotator_audit,
        )

        result = run_annotator_audit(dataclass_from_args(AnnotatorAuditConfig, args))
        print(json.dumps(result, indent=2) if args.json else format_annotator_audit(result))
        return 0
    if command == "space":
        from vilbias.audit.space import space_from_vignette, stratified_subset

        config = dataclass_from_args(SpaceConfig, args)
        space = space_from_vignette(config.vignette)
        if config.subset:
            space = stratified_subset(space)
        space.save(config.out)
        roles = sum(1 for a in space.activities if a.role)
        print(f"{config.out}: {len(space.identities)} identities, {len(space.activities)} activities "
              f"({roles} with roles), {len(space.traits)} traits")
        return 0
    if command == "probeset":
        from vilbias.audit.manifest import embedded_pairs, materialize_probeset

        config = dataclass_from_args(ProbesetConfig, args)
        pairs = embedded_pairs()
        manifest = materialize_probeset(config.out, pairs[: config.limit] if config.limit else pairs)
        print(f"{manifest}: {len(pairs[: config.limit] if config.limit else pairs)} pairs")
        return 0
    raise ValueError(f"unknown audit command {command!r}")


if __name__ == "__main__":  # `python -m vilbias.audit.cli run ...`: the stage without the `vilbias` entry point
    import logging
    import sys

    parser = argparse.ArgumentParser(prog="vilbias audit", description=__doc__.splitlines()[0])
    add_arguments(parser)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    sys.exit(main(parser.parse_args()))
