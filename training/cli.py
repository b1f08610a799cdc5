"""``vilbias train``: classifier baselines and trl sft recipes.

    vilbias train classifier --dataset ./vilbias --config default
    vilbias train classifier --dataset ./vilbias --cv
    vilbias train sft --recipe training/recipes/SmolVLM-Instruct/lora.yaml
"""

from __future__ import annotations

import argparse
import importlib

# subcommand -> module defining add_arguments/main
COMMANDS = {
    "classifier": "vilbias.training.classifier",
    "sft": "vilbias.training.sft",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="command", required=True)
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(module_name)
        module.add_arguments(sub.add_parser(name, help=(module.__doc__ or "").strip().splitlines()[0]))


def main(args: argparse.Namespace) -> int:
    return importlib.import_module(COMMANDS[args.command]).main(args)
