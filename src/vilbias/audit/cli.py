"""``vilbias audit``: VIGNETTE's stereotype audit of a VLM, an LLM, or the corpus's annotators.

    vilbias audit run --model openai:Qwen/Qwen2.5-VL-7B-Instruct@http://localhost:8000/v1 --output audits/qwen
    vilbias audit run --model smollm2 --limit 24 --output audits/smollm2          # text variant, offline
    vilbias audit run --model ./vlm --manifest vignette/images --paradigms decision --output audits/vlm
    vilbias audit run --config audits/qwen/audit_run_config.yaml                  # that run again (resumes)
    vilbias audit metrics --responses audits/qwen/responses.jsonl --output audits/qwen/metrics
    vilbias audit metrics --responses other.csv --output audits/other --alpha 0.01  # 99 % intervals, p < 0.01
    vilbias audit annotators --workdir work --annotators annotators.yaml          # before `vilbias annotate`
    vilbias audit space --vignette path/to/vignette/data --output space.json      # the full question space
    vilbias audit probeset --output probe                                         # render the embedded images

The responses format, the metrics and the probe set are described in ``docs/audit.md``. ``run``,
``metrics`` and ``annotators`` write the options they ran with into their output folder
(``annotators``: ``<workdir>/audit/``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from vilbias.argparser import ConfigParser
from vilbias.audit.config import AuditSpaceConfig, MetricsConfig, ProbesetConfig
from vilbias.audit.statistics import MetricOptions
from vilbias.cli import run_subcommand
from vilbias.config import save_config
from vilbias.ledger import ledger_kept
from vilbias.outputs import claim_file, claim_output
from vilbias.stops import on_stop

RUN_HELP = "Ask a model the audit's questions; store, export and score the answers."
METRICS_HELP = "Score a responses file: tables and plots."
ANNOTATORS_HELP = "Audit each annotator of an annotators file (text variant)."
SPACE_HELP = "Build a question space from VIGNETTE's published lists."
PROBESET_HELP = "Render the embedded probe set (images + manifest)."


@dataclass
class SummaryPrint:
    json: bool = field(default=False, metadata={"help": "Print the summary as JSON."})


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


def _run(argv: list[str], prog: str) -> int:
    from vilbias.audit.runner import AuditConfig, run_audit
    from vilbias.audit.store import AUDIT_DB

    config, shown = ConfigParser([AuditConfig, SummaryPrint], prog=prog, description=RUN_HELP).parse(argv)
    # Each call is committed as it completes (vilbias.ledger); responses.jsonl is written at the end.
    with on_stop(lambda: ledger_kept(Path(config.output) / AUDIT_DB, "calls", noun="calls")):
        summary = run_audit(config)
    save_config(config.output, "audit run", config)
    print(json.dumps(summary, indent=2) if shown.json else _format_run(summary))
    return 0


def _metrics(argv: list[str], prog: str) -> int:
    from vilbias.audit.metrics import compute_metrics, write_metrics
    from vilbias.audit.responses import read_responses
    from vilbias.audit.summary import summarize

    config, config.statistics = ConfigParser([MetricsConfig, MetricOptions], prog=prog, description=METRICS_HELP).parse(argv)
    config.statistics.validate()
    claim_output(config.output, prog, signs=("metrics.json", "audit_metrics_config.yaml"))
    rows = read_responses(config.responses)
    tables = compute_metrics(rows, config.statistics)
    written = write_metrics(tables, config.output, plots=config.plots)
    summary = summarize(tables, rows)
    (Path(config.output) / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    save_config(config.output, "audit metrics", config, config.statistics)
    print(f"{len(rows)} responses: {len(written['tables'])} tables, {len(written['plots'])} plots in {config.output}")
    return 0


def _annotators(argv: list[str], prog: str) -> int:
    from vilbias.audit.annotators import (
        AUDIT_DIR,
        AnnotatorAuditConfig,
        format_annotator_audit,
        run_annotator_audit,
    )

    config, shown = ConfigParser([AnnotatorAuditConfig, SummaryPrint], prog=prog, description=ANNOTATORS_HELP).parse(argv)
    result = run_annotator_audit(config)
    save_config(Path(config.workdir) / AUDIT_DIR, "audit annotators", config)
    print(json.dumps(result, indent=2) if shown.json else format_annotator_audit(result))
    return 0


def _space(argv: list[str], prog: str) -> int:
    from vilbias.audit.space import space_from_vignette, stratified_subset

    (config,) = ConfigParser([AuditSpaceConfig], prog=prog, description=SPACE_HELP).parse(argv)
    claim_file(config.output, prog, written_by=_is_space)
    space = space_from_vignette(config.vignette)
    if config.subset:
        space = stratified_subset(space)
    space.save(config.output)
    roles = sum(1 for a in space.activities if a.role)
    print(f"{config.output}: {len(space.identities)} identities, {len(space.activities)} activities "
          f"({roles} with roles), {len(space.traits)} traits")
    return 0


def _is_space(path: Path) -> bool:
    """Whether ``path`` is a question space (as ``audit space`` writes it), which a new one may replace."""
    from vilbias.audit.space import load_space

    try:
        load_space(path)
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):  # not JSON, or JSON of another shape
        return False
    return True


def _probeset(argv: list[str], prog: str) -> int:
    from vilbias.audit.manifest import embedded_pairs, materialize_probeset

    (config,) = ConfigParser([ProbesetConfig], prog=prog, description=PROBESET_HELP).parse(argv)
    pairs = embedded_pairs()
    pairs = pairs[: config.limit] if config.limit else pairs
    manifest = materialize_probeset(config.output, pairs)
    print(f"{manifest}: {len(pairs)} pairs")
    return 0


COMMANDS = {
    "run": (RUN_HELP, _run),
    "metrics": (METRICS_HELP, _metrics),
    "annotators": (ANNOTATORS_HELP, _annotators),
    "space": (SPACE_HELP, _space),
    "probeset": (PROBESET_HELP, _probeset),
}


def main(argv: list[str], prog: str = "vilbias audit") -> int:
    return run_subcommand(prog, __doc__.splitlines()[0], COMMANDS, argv)


if __name__ == "__main__":  # `python -m vilbias.audit.cli run ...`: the stage without the `vilbias` entry point
    import logging
    import sys

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    sys.exit(main(sys.argv[1:]))
