"""``vilbias publish``: dataset releases, model repos and the Space on the Hub.

    vilbias publish dataset --repo-id ORG/BiasCorpus --version 1.0.0 --source ./BiasCorpus --dry-run
    vilbias publish dataset --repo-id ORG/BiasCorpus --version 1.0.0 --source ./BiasCorpus
    vilbias publish model   --repo-id ORG/vilbias-roberta-lora --source outputs/roberta-lora
    vilbias publish space   --repo-id ORG/vilbias-demo --model ORG/vilbias-roberta-lora

The token comes from HF_TOKEN or `hf auth login`; it is never printed.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from vilbias.argparser import ConfigParser
from vilbias.cli import run_subcommand
from vilbias.publish.config import PublishDatasetConfig, PublishModelConfig, PublishSpaceConfig

DATASET_HELP = "Publish a built dataset folder as release vX.Y.Z."
MODEL_HELP = "Push a trained model folder with its model card."
SPACE_HELP = "Upload the Gradio Space folder."

# `publish dataset` had --private and --public; --private [true|false] is now the one visibility flag.
# (--no-public and --no-private were the defaults: the licence decides.)
_OLD_VISIBILITY = {"--public": "--private false", "--no-public": "", "--no-private": ""}


def _current_visibility(argv: list[str], prog: str) -> list[str]:
    out: list[str] = []
    for arg in argv:
        if arg in _OLD_VISIBILITY:
            print(f"{prog}: {arg} is deprecated and will be removed in the next release; "
                  + (f"use {_OLD_VISIBILITY[arg]}" if _OLD_VISIBILITY[arg] else "leave --private out (the licence decides)"),
                  file=sys.stderr)
            out += _OLD_VISIBILITY[arg].split()
        else:
            out.append(arg)
    return out


def _hub_errors(handler: Callable[[list[str], str], int]) -> Callable[[list[str], str], int]:
    def run(argv: list[str], prog: str) -> int:
        from huggingface_hub.errors import HfHubHTTPError

        try:
            return handler(argv, prog)
        except HfHubHTTPError as e:
            # Hub refusals (403 on a repo you cannot write, 404 on a missing repo) are expected
            # failures: one line, never the request headers (which carry the token).
            status = getattr(e.response, "status_code", "?")
            raise RuntimeError(f"the Hub refused the request (HTTP {status}): {str(e).splitlines()[0]}") from e

    return run


@_hub_errors
def _dataset(argv: list[str], prog: str) -> int:
    (config,) = ConfigParser([PublishDatasetConfig], prog=prog, description=DATASET_HELP).parse(
        _current_visibility(argv, prog))
    from vilbias.publish.changelog import render_changelog
    from vilbias.publish.dataset import publish_dataset

    release = publish_dataset(config)
    print(release.summary())
    if release.dry_run:
        print("\nchangelog:\n" + render_changelog(release.changelog))
    return 0


@_hub_errors
def _model(argv: list[str], prog: str) -> int:
    (config,) = ConfigParser([PublishModelConfig], prog=prog, description=MODEL_HELP).parse(argv)
    from vilbias.publish.model import ModelCardInfo, push_model

    info = ModelCardInfo.load(config.source)
    if config.dataset_revision:
        info.dataset_revision = config.dataset_revision
    commit = push_model(config.source, config.repo_id, info=info, private=config.private)
    print(f"published model {config.repo_id} (commit {commit})")
    return 0


@_hub_errors
def _space(argv: list[str], prog: str) -> int:
    (config,) = ConfigParser([PublishSpaceConfig], prog=prog, description=SPACE_HELP).parse(argv)
    from vilbias.publish.space import publish_space

    commit = publish_space(config)
    print(f"published Space {config.repo_id} (commit {commit})")
    return 0


COMMANDS = {"dataset": (DATASET_HELP, _dataset), "model": (MODEL_HELP, _model), "space": (SPACE_HELP, _space)}


def main(argv: list[str], prog: str = "vilbias publish") -> int:
    return run_subcommand(prog, __doc__.splitlines()[0], COMMANDS, argv)
