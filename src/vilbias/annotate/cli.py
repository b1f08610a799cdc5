"""``vilbias annotate``: label every item of a workdir with LLM annotators.

    vilbias annotate --workdir work --annotators paper --samples 3   # the paper's three VLMs on vLLM
    vilbias annotate --workdir work --annotators annotators.yaml --samples 3
    vilbias annotate --workdir work                                  # embedded SmolLM2-135M: text prompt, K=3
    vilbias annotate --workdir work --limit 20 --prompts text        # a quick trial

Re-running asks only what is missing. The annotators file format, the shipped ``paper`` file and
structured output are in ``docs/annotate.md``.
"""

from __future__ import annotations

import argparse
import json

from vilbias.config import add_dataclass_arguments, dataclass_from_args


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from vilbias.annotate.pipeline import AnnotateConfig

    add_dataclass_arguments(parser, AnnotateConfig)
    parser.add_argument("--json", action="store_true", help="Print the summary as JSON.")


def main(args: argparse.Namespace) -> int:
    from vilbias.annotate.pipeline import AnnotateConfig, annotate
    from vilbias.annotate.summary import format_summary

    summary = annotate(dataclass_from_args(AnnotateConfig, args))
    print(json.dumps(summary, indent=2) if args.json else format_summary(summary))
    return 0
