"""``vilbias build``: build the Hub-layout dataset folder.

    vilbias build                                   # embedded sample -> ./BiasCorpus
    vilbias build --workdir work --output ./BiasCorpus
    vilbias build --sentences babe.csv --output ./babe
"""

from __future__ import annotations

import argparse

from vilbias.config import add_dataclass_arguments, dataclass_from_args
from vilbias.corpus import BuildConfig, build, format_report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_dataclass_arguments(parser, BuildConfig)


def main(args: argparse.Namespace) -> int:
    config = dataclass_from_args(BuildConfig, args)
    report = build(config)
    print(format_report(report))
    name = str(config.output)
    print("\nLoad it with:")
    print("  from datasets import load_dataset")
    for cfg in [""] + [f', "{c}"' for c in ("fold_3", "sft") if c in report["configs"]]:
        print(f'  load_dataset("{name}"{cfg})')
    return 0
