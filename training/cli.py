"""``vilbias train``: classifier baselines and trl sft recipes.

    vilbias train classifier --dataset ./BiasCorpus --dataset-config default --output outputs/text
    vilbias train classifier --dataset ./BiasCorpus --cv
    vilbias train classifier --config outputs/text/train_config.yaml      # what a run used, again
    vilbias train sft --recipe training/recipes/SmolVLM-Instruct/lora.yaml
    vilbias train sft --recipe training/recipes/SmolVLM-Instruct/lora.yaml --max_steps 20 --output_dir out

``classifier`` is parsed from :class:`vilbias.training.classifier_config.ClassifierConfig` (a
``transformers.TrainingArguments``); ``sft`` takes every field of TRL's ``ScriptArguments``,
``SFTConfig`` and ``ModelConfig`` (and :class:`vilbias.training.sft.VilbiasSFTArguments`) under
TRL's own names. torch, transformers and trl load only inside the command that needs them:
``vilbias train --help`` imports none of them.
"""

from __future__ import annotations

import sys

from vilbias.config import run_subcommand


def _classifier(argv: list[str], prog: str) -> int:
    from vilbias.paths import resolve_dataset  # light: no torch, no transformers

    dataset = _value_of(argv, "--dataset")
    if dataset:
        # A local folder that is not there, or a Hub repo that does not exist, in one line before the
        # libraries load (a local-looking name is never sent to the Hub).
        try:
            resolve_dataset(dataset, _value_of(argv, "--dataset-revision") or _value_of(argv, "--revision"))
        except FileNotFoundError as e:
            print(f"{prog}: error: {e}", file=sys.stderr)
            return 2
    from vilbias.training import classifier

    return classifier.main(argv, prog)


def _sft(argv: list[str], prog: str) -> int:
    from vilbias.training import sft

    return sft.main(argv, prog)


def _value_of(argv: list[str], flag: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


COMMANDS = {
    "classifier": ("Classifier baselines: text models and text+image fusion, on one split or 5-fold CV.", _classifier),
    "sft": ("Run a trl sft recipe: --recipe RECIPE.yaml, then any TRL or vilbias field as --name value.", _sft),
}


def main(argv: list[str], prog: str = "vilbias train") -> int:
    return run_subcommand(prog, "Train classifier baselines or run a trl sft recipe.", COMMANDS, argv)
