"""``vilbias evaluate`` (see :mod:`vilbias.evaluate.runner` for what it does and writes).

    vilbias evaluate --dataset ./BiasCorpus --model training/default_model
    vilbias evaluate --dataset ./BiasCorpus --model outputs/smolvlm-lora --judge openai:judge@http://localhost:8000/v1 \\
        --shots 0 5 --probes all
    vilbias evaluate --dataset ./BiasCorpus --model outputs/classifier-cv --cv      # per-fold models
    vilbias evaluate compare results/a results/b results/c --output results/analysis

Without a command it evaluates one model (or, with ``--cv``, one model per fold); ``compare``
analyses finished runs instead (Pearson r between closed and open-ended scores, training-data
scaling, modality gap).
"""

from __future__ import annotations

import argparse

from vilbias.config import add_dataclass_arguments, dataclass_from_args
from vilbias.evaluate.config import CompareConfig, EvaluateConfig, compare
from vilbias.evaluate.runner import evaluate

COMPARE_HELP = "Analyse finished runs: closed vs open-ended Pearson r, data-size scaling, modality gap."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_dataclass_arguments(parser, EvaluateConfig)
    # Optional, so that `vilbias evaluate --dataset D --model M` stays the way to evaluate one model.
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands (optional)")
    add_dataclass_arguments(commands.add_parser("compare", help=COMPARE_HELP, description=COMPARE_HELP), CompareConfig)


def _summary_line(s: dict) -> str:
    c = s["closed"]
    line = (f"{s['regime']:>10} {s['probe']:<14} closed: accuracy {c['accuracy']['mean']:.4f}  F1 {c['f1_binary']['mean']:.4f}  "
            f"macro-F1 {c['f1_macro']['mean']:.4f}  unparseable {100 * c['unparseable_rate']['mean']:.1f}%")
    if s["open"] and "reasoning_accuracy" in s["open"]:
        line += (f"  | oVQA: reasoning {s['open']['reasoning_accuracy']['mean']:.1f}%  "
                 f"faithfulness {s['open'].get('faithfulness', {}).get('mean', float('nan')):.1f}%")
    return line


def main(args: argparse.Namespace) -> int:
    if args.command == "compare":
        cfg = dataclass_from_args(CompareConfig, args)
        analysis = compare(cfg)
        print(f"analysis of {len(analysis['runs'])} runs written to {cfg.output}/analysis.md")
        return 0
    cfg = dataclass_from_args(EvaluateConfig, args)
    results = evaluate(cfg)
    for warning in results["warnings"]:
        print(f"warning: {warning}")
    for s in results["summary"]:
        print(_summary_line(s))
    if results["closed_vs_open"] and results["closed_vs_open"]["pearson"]:
        p = results["closed_vs_open"]["pearson"]
        print(f"closed accuracy vs reasoning accuracy over this run's settings: Pearson r {p['r']:.3f} (n = {p['n']})")
    print(f"results written to {cfg.output_dir}/results.json and report.md")
    return 0
