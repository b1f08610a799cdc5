"""``vilbias train``: classifier baselines, the Space's sentence model and trl sft recipes.

    vilbias train classifier --dataset ./BiasCorpus --dataset-config default --output outputs/text
    vilbias train classifier --dataset ./BiasCorpus --cv
    vilbias train classifier --config outputs/text/train_config.yaml      # what a run used, again
    vilbias train sentence --sentences final_labels_SG2_public.csv --cv --output outputs/default_model
    vilbias train sft --recipe training/recipes/SmolVLM-Instruct/lora.yaml
    vilbias train sft --recipe training/recipes/SmolVLM-Instruct/lora.yaml --max_steps 20 --output_dir out

``classifier`` is parsed from :class:`vilbias.training.classifier_config.ClassifierConfig` and
``sentence`` from :class:`vilbias.training.sentence_config.SentenceConfig` (both
``transformers.TrainingArguments``); ``sft`` takes every field of TRL's ``ScriptArguments``,
``SFTConfig`` and ``ModelConfig`` (and :class:`vilbias.training.sft.VilbiasSFTArguments`) under
TRL's own names. torch, transformers and trl load only inside the command that needs them:
``vilbias train --help`` imports none of them; ``vilbias train COMMAND --help`` is the command's own
parser, so it loads them first (seconds), as ``trl sft --help`` does.
"""

from __future__ import annotations

import sys
from pathlib import Path

from vilbias import stops
from vilbias.cli import libraries_loaded, run_subcommand


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

    libraries_loaded()  # torch, transformers and its Trainer: imported by now
    return classifier.main(argv, prog)


def _sentence(argv: list[str], prog: str) -> int:
    sentences = _value_of(argv, "--sentences")
    if sentences and not Path(sentences).is_file():  # one line before torch loads
        print(f"{prog}: error: {sentences} not found: pass BABE's final_labels_SG2_public.csv (or another BABE-format file)", file=sys.stderr)
        return 2
    from vilbias.training import sentence

    libraries_loaded()  # torch, transformers and its Trainer: imported by now
    with stops.on_stop(_starts_over):
        return sentence.main(argv, prog)


def _sft(argv: list[str], prog: str) -> int:
    from vilbias.training import sft

    with stops.on_stop(_starts_over):
        return sft.main(argv, prog)


def _starts_over() -> str:
    """What a stop of ``train sentence`` or ``train sft`` says: neither resumes an interrupted run."""
    return "this command does not resume an interrupted run: the same command starts over"


def _value_of(argv: list[str], flag: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


COMMANDS = {
    "classifier": ("Classifier baselines: text models and text+image fusion, on one split or 5-fold CV.", _classifier),
    "sentence": ("Train the Space's sentence model (MiniLM + LoRA, word and sentence heads) on BABE-format sentences.", _sentence),
    "sft": ("Run a trl sft recipe: --recipe RECIPE.yaml, then any TRL or vilbias field as --name value.", _sft),
}


def main(argv: list[str], prog: str = "vilbias train") -> int:
    return run_subcommand(prog, "Train classifier baselines or the Space's sentence model, or run a trl sft recipe.", COMMANDS, argv)
