"""The ``vilbias`` command: one subcommand per pipeline stage.

    vilbias build                      # the embedded sample -> ./BiasCorpus
    vilbias ingest --feed URL --workdir work
    vilbias annotate --workdir work
    vilbias review stats --workdir work
    vilbias publish dataset --repo-id ORG/NAME --version 1.0.0
    vilbias -v train sft --recipe training/recipes/SmolVLM-Instruct/lora.yaml --max_steps 10

Each stage's module defines ``add_arguments(parser)``, which fills the stage's subparser (a stage
with commands of its own adds its own subparsers), and ``main(args)``. The logic lives in the
stage functions, which Python callers use directly with the same config dataclasses.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

# stage -> (module defining add_arguments/main, one-line description)
STAGES: dict[str, tuple[str, str]] = {
    "ingest": ("vilbias.ingest.cli", "Fetch news feeds into a workdir of article-image pairs."),
    "annotate": ("vilbias.annotate.cli", "Label a workdir's items with LLM annotators and hierarchical voting."),
    "review": ("vilbias.review.cli", "Export review sheets, import verdicts, report agreement."),
    "build": ("vilbias.corpus.cli", "Build the Hub-layout dataset folder (default: the embedded sample)."),
    "publish": ("vilbias.publish.cli", "Publish a dataset release, a model or the Space to the Hub."),
    "train": ("vilbias.training.cli", "Train classifier baselines or run a trl sft recipe."),
    "evaluate": ("vilbias.evaluate.cli", "Score a model: closed-ended metrics, LLM-judged reasoning, analyses."),
    "audit": ("vilbias.audit.cli", "Audit a VLM or the corpus's LLM annotators for stereotypes (VIGNETTE)."),
    "demo": ("vilbias.spaces.cli", "Run the Gradio demo locally."),
}


class StageParser(argparse.ArgumentParser):
    """A stage's subparser, filled by its module's ``add_arguments`` when argparse hands it the stage's arguments.

    The deferral is deliberate: filling every stage's parser up front would import every stage on
    every call (httpx for ingest, the annotator clients, trl and torch for ``train``: seconds), while
    ``vilbias build`` should cost only the build stage. Argparse still does all the routing.
    """

    def __init__(self, *, module: str, **kwargs):
        super().__init__(**kwargs)
        self.module = module
        self.filled = False

    def parse_known_args(self, args=None, namespace=None):
        if not self.filled:
            stage = importlib.import_module(self.module)
            stage.add_arguments(self)
            self.set_defaults(func=stage.main)
            self.filled = True
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:
            # Reported here, with this stage's usage, rather than by the top-level parser.
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras

    def add_subparsers(self, **kwargs):
        # A stage's own commands (review export, publish dataset ...) are plain parsers; argparse
        # would otherwise make them of this class.
        kwargs.setdefault("parser_class", argparse.ArgumentParser)
        return super().add_subparsers(**kwargs)


def make_parser() -> argparse.ArgumentParser:
    """The ``vilbias`` parser: global flags, then one subparser per stage."""
    from vilbias import __version__

    parser = argparse.ArgumentParser(prog="vilbias", description="BiasCorpus: bias in multimodal news, from feeds to the Hub.")
    parser.add_argument("--version", action="version", version=f"vilbias {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="Log debug messages; show tracebacks.")
    parser.add_argument("-q", "--quiet", action="store_true", help="Log warnings and errors only.")
    stages = parser.add_subparsers(dest="stage", required=True, metavar="STAGE", title="stages",
                                   parser_class=StageParser)
    for name, (module, description) in STAGES.items():
        stages.add_parser(name, module=module, help=description, description=description)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING if args.quiet else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted; re-run the same command to resume", file=sys.stderr)
        return 130
    except (ValueError, FileNotFoundError, PermissionError, RuntimeError) as e:
        # Expected failures (bad input, missing files, refused actions) get one clear line;
        # -v shows the traceback.
        if args.verbose:
            raise
        print(f"vilbias {args.stage}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
