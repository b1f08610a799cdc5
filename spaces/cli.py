"""``vilbias demo``: run the Gradio Space locally.

    vilbias demo                         # http://127.0.0.1:7860, offline default model
    vilbias demo --port 8000 --host 0.0.0.0
    vilbias demo --models-config my_models.yaml

The same app runs on Hugging Face Spaces after ``vilbias publish space``.
"""

from __future__ import annotations

import argparse

from vilbias.config import add_dataclass_arguments, dataclass_from_args


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from vilbias.spaces.app import DemoConfig

    add_dataclass_arguments(parser, DemoConfig)


def main(args: argparse.Namespace) -> int:
    from vilbias.spaces.app import DemoConfig, serve

    serve(dataclass_from_args(DemoConfig, args))
    return 0
