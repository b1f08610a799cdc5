"""``vilbias evaluate`` (see :mod:`vilbias.evaluate.runner` for what it does and writes).

    vilbias evaluate --dataset ./vilbias --model training/default_model
    vilbias evaluate --dataset ./vilbias --model outputs/smolvlm-lora --judge openai:judge@http://localhost:8000/v1 \\
        --shots 0 5 --probes all
    vilbias evaluate --compare results/a results/b results/c --output results/analysis
"""

from __future__ import annotations

import argparse

from vilbias.config import add_dataclass_arguments, dataclass_from_args
from vilbias.evaluate.runner import EvaluateConfig, evaluate


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_dataclass_arguments(parser, EvaluateConfig)


def main(args: argparse.Namespace) -> int:
    cfg = dataclass_from_args(EvaluateConfig, args)
    results = evaluate(cfg)
    if cfg.compare:
        out = cfg.output or "results/analysis"
        print(f"analysis of {len(results['runs'])} runs written to {out}/analysis.md")
        return 0
    for s in results["summary"]:
        c = s["closed"]
        line = (f"{s['regime']:>10} {s['probe']:<14} accuracy {c['accuracy']['mean']:.4f}  F1 {c['f1_binary']['mean']:.4f}  "
                f"macro-F1 {c['f1_macro']['mean']:.4f}  unparseable {100 * c['unparseable_rate']['mean']:.1f}%")
        if s["open"] and "reasoning_accuracy" in s["open"]:
            line += f"  reasoning {s['open']['reasoning_accuracy']['mean']:.1f}%  faithfulness {s['open'].get('faithfulness', {}).get('mean', float('nan')):.1f}%"
        print(line)
    print(f"results written to {cfg.output_dir}/results.json and report.md")
    return 0
