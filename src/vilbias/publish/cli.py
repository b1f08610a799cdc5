"""``vilbias publish``: dataset releases, model repos and the Space on the Hub.

    vilbias publish dataset --repo-id ORG/BiasCorpus --version 1.0.0 --source ./BiasCorpus --dry-run
    vilbias publish dataset --repo-id ORG/BiasCorpus --version 1.0.0 --source ./BiasCorpus
    vilbias publish model   --repo-id ORG/vilbias-roberta-lora --source outputs/roberta-lora
    vilbias publish space   --repo-id ORG/vilbias-demo --model ORG/vilbias-roberta-lora

The token comes from HF_TOKEN or `hf auth login`; it is never printed.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from vilbias.config import add_dataclass_arguments, dataclass_from_args


@dataclass
class PublishModelConfig:
    """``vilbias publish model``."""

    repo_id: str = field(metadata={"help": "Model repo on the Hub, ORG/NAME."})
    source: Path = field(metadata={"help": "Training output folder (weights, processor/tokenizer, vilbias_card.json)."})
    private: bool = field(default=False, metadata={"help": "Create the repo private."})
    dataset_revision: str | None = field(default=None, metadata={"help": "Override the dataset revision the card states."})


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from vilbias.publish.dataset import PublishDatasetConfig
    from vilbias.publish.space import PublishSpaceConfig

    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands")
    for name, cls, help_ in (
        ("dataset", PublishDatasetConfig, "Publish a built dataset folder as release vX.Y.Z."),
        ("model", PublishModelConfig, "Push a trained model folder with its model card."),
        ("space", PublishSpaceConfig, "Upload the Gradio Space folder."),
    ):
        add_dataclass_arguments(commands.add_parser(name, help=help_, description=help_), cls)


def _run(args: argparse.Namespace) -> int:
    if args.command == "dataset":
        from vilbias.publish.changelog import render_changelog
        from vilbias.publish.dataset import PublishDatasetConfig, publish_dataset

        release = publish_dataset(dataclass_from_args(PublishDatasetConfig, args))
        print(release.summary())
        if release.dry_run:
            print("\nchangelog:\n" + render_changelog(release.changelog))
        return 0
    if args.command == "model":
        from vilbias.publish.model import ModelCardInfo, push_model

        config = dataclass_from_args(PublishModelConfig, args)
        info = ModelCardInfo.load(config.source)
        if config.dataset_revision:
            info.dataset_revision = config.dataset_revision
        commit = push_model(config.source, config.repo_id, info=info, private=config.private)
        print(f"published model {config.repo_id} (commit {commit})")
        return 0
    from vilbias.publish.space import PublishSpaceConfig, publish_space

    config = dataclass_from_args(PublishSpaceConfig, args)
    commit = publish_space(config)
    print(f"published Space {config.repo_id} (commit {commit})")
    return 0


def main(args: argparse.Namespace) -> int:
    from huggingface_hub.errors import HfHubHTTPError

    try:
        return _run(args)
    except HfHubHTTPError as e:
        # Hub refusals (403 on a repo you cannot write, 404 on a missing repo) are expected
        # failures: one line, never the request headers (which carry the token).
        status = getattr(e.response, "status_code", "?")
        raise RuntimeError(f"the Hub refused the request (HTTP {status}): {str(e).splitlines()[0]}") from e
