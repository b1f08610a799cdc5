"""``vilbias evaluate`` (see :mod:`vilbias.evaluate.runner` for what it does and writes).

    vilbias evaluate --dataset ./BiasCorpus --model training/default_model
    vilbias evaluate --dataset ./BiasCorpus --model outputs/smolvlm-lora --judge openai:judge@http://localhost:8000/v1 \\
        --shots 0 5 --probes all
    vilbias evaluate --dataset ./BiasCorpus --model outputs/classifier-cv --cv      # per-fold models
    vilbias evaluate --dataset ./BiasCorpus --model training/default_model --dataset-config fold_3
    vilbias evaluate --config results/default_model-default-test/evaluate_config.yaml   # that run again
    vilbias evaluate compare results/a results/b results/c --output results/analysis

Without a command it evaluates one model (or, with ``--cv``, one model per fold); ``compare``
analyses finished runs instead (Pearson r between closed and open-ended scores, training-data
scaling, modality gap). Both write the options they ran with into their output folder.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from vilbias.argparser import ConfigParser
from vilbias.config import save_config
from vilbias.evaluate.config import STORE_FILE, CompareConfig, EvaluateConfig
from vilbias.evaluate.sentences import describe as describe_protocol
from vilbias.ledger import ledger_kept
from vilbias.stops import on_stop

COMPARE_HELP = "Analyse finished runs: closed vs open-ended Pearson r, data-size scaling, modality gap."


def _summary_line(s: dict) -> str:
    c = s["closed"]
    line = (f"{s['regime']:>10} {s['probe']:<14} closed: accuracy {c['accuracy']['mean']:.4f}  F1 {c['f1_binary']['mean']:.4f}  "
            f"macro-F1 {c['f1_macro']['mean']:.4f}  unparseable {100 * c['unparseable_rate']['mean']:.1f}%")
    if s["open"] and "reasoning_accuracy" in s["open"]:
        line += (f"  | oVQA: reasoning {s['open']['reasoning_accuracy']['mean']:.1f}%  "
                 f"faithfulness {s['open'].get('faithfulness', {}).get('mean', float('nan')):.1f}%")
    return line


def _dataset_config_given_as_config(argv: list[str]) -> str | None:
    """The value of an old-style ``--config fold_3`` (the dataset config, before --config became the YAML file)."""
    for flag, value in zip(argv, argv[1:], strict=False):
        if flag == "--config" and re.fullmatch(r"default|fold_\d+|sft", value) and not Path(value).exists():
            return value
    return None


def _compare(argv: list[str], prog: str) -> int:
    from vilbias.evaluate.config import compare

    (cfg,) = ConfigParser([CompareConfig], prog=prog, description=COMPARE_HELP).parse(argv)
    analysis = compare(cfg)
    save_config(cfg.output, "evaluate compare", cfg)
    print(f"analysis of {len(analysis['runs'])} runs written to {cfg.output}/analysis.md")
    return 0


def main(argv: list[str], prog: str = "vilbias evaluate") -> int:
    if argv[:1] == ["compare"]:
        return _compare(argv[1:], f"{prog} compare")
    old = _dataset_config_given_as_config(argv)
    if old:
        print(f"{prog}: error: --config reads a YAML file of options now; the dataset config is "
              f"--dataset-config {old}", file=sys.stderr)
        return 2
    parser = ConfigParser([EvaluateConfig], prog=prog, description=__doc__.splitlines()[0],
                          epilog=f"command: `{prog} compare RUN_DIR [RUN_DIR ...] [--output DIR]`: {COMPARE_HELP}")
    (cfg,) = parser.parse(argv)
    from vilbias.evaluate.runner import evaluate

    # Each answer and verdict is committed as it arrives (vilbias.ledger); a run stopped before the
    # first removes the folder it made.
    with on_stop(lambda: ledger_kept(cfg.output_dir / STORE_FILE, "predictions", noun="answers")):
        results = evaluate(cfg)
    save_config(cfg.output_dir, "evaluate", cfg)
    for warning in results["warnings"]:
        print(f"warning: {warning}")
    for s in results["summary"]:
        print(_summary_line(s))
    for e in results["evaluations"]:
        if e.get("sentence_protocol"):
            print(f"{e['view']} sentence-level protocol: {describe_protocol(e['sentence_protocol'])}")
    if results["closed_vs_open"] and results["closed_vs_open"]["pearson"]:
        p = results["closed_vs_open"]["pearson"]
        print(f"closed accuracy vs reasoning accuracy over this run's settings: Pearson r {p['r']:.3f} (n = {p['n']})")
    print(f"results written to {cfg.output_dir}/results.json and report.md")
    if results["degenerate"]:  # last, where a reader looks for the verdict
        print(f"warning: {results['degenerate']}")
    return 0
