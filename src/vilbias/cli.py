"""The ``vilbias`` command: one subcommand per pipeline stage.

    vilbias build                      # the embedded sample -> ./vilbias
    vilbias ingest --feed URL --workdir work
    vilbias annotate --workdir work
    vilbias review stats --workdir work
    vilbias publish dataset --repo-id ORG/NAME --version 1.0.0

Each stage's module defines ``add_arguments(parser)`` and ``main(args)``; only the chosen stage's
module is imported, so ``vilbias build`` never pays for torch. The logic lives in the stage
functions, which Python callers use directly with the same config dataclasses.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

# subcommand -> (module defining add_arguments/main, one-line description)
STAGES: dict[str, tuple[str, str]] = {
    "ingest": ("vilbias.ingest.cli", "Fetch news feeds into a workdir of article-image pairs."),
    "annotate": ("vilbias.annotate.cli", "Label a workdir's items with LLM annotators and hierarchical voting."),
    "review": ("vilbias.review.cli", "Export review sheets, import verdicts, report agreement."),
    "build": ("vilbias.corpus.cli", "Build the Hub-layout dataset folder (default: the embedded sample)."),
    "publish": ("vilbias.publish.cli", "Publish a dataset release, a model or the Space to the Hub."),
    "train": ("vilbias.training.cli", "Train classifier baselines or run a trl sft recipe."),
    "evaluate": ("vilbias.evaluate.cli", "Score a model: closed-ended metrics, LLM-judged reasoning, analyses."),
    "demo": ("vilbias.spaces.cli", "Run the Gradio demo locally."),
}


def _top_parser() -> argparse.ArgumentParser:
    from vilbias import __version__

    parser = argparse.ArgumentParser(
        prog="vilbias",
        description="BiasCorpus: bias in multimodal news, from feeds to the Hub.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="stages:\n" + "\n".join(f"  {name:<10} {desc}" for name, (_, desc) in STAGES.items()),
    )
    parser.add_argument("--version", action="version", version=f"vilbias {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="Log debug messages.")
    parser.add_argument("-q", "--quiet", action="store_true", help="Log warnings and errors only.")
    parser.add_argument("stage", choices=list(STAGES), metavar="STAGE", help="One of: " + ", ".join(STAGES))
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    top = _top_parser()
    # Global flags come before the stage; everything after it belongs to the stage.
    split = next((i for i, a in enumerate(argv) if a in STAGES), None)
    if split is None:
        top.parse_args(argv)  # prints usage / --help / --version and exits
        top.error("choose a stage")
    head = top.parse_args(argv[: split + 1])
    module_name, description = STAGES[head.stage]
    parser = argparse.ArgumentParser(prog=f"vilbias {head.stage}", description=description)
    module = importlib.import_module(module_name)
    module.add_arguments(parser)
    args = parser.parse_args(argv[split + 1 :])
    logging.basicConfig(
        level=logging.DEBUG if head.verbose else logging.WARNING if head.quiet else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    try:
        return int(module.main(args) or 0)
    except KeyboardInterrupt:
        print("interrupted; re-run the same command to resume", file=sys.stderr)
        return 130
    except (ValueError, FileNotFoundError, PermissionError, RuntimeError) as e:
        # Expected failures (bad input, missing files, refused actions) get one clear line;
        # -v shows the traceback.
        if head.verbose:
            raise
        print(f"vilbias {head.stage}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
