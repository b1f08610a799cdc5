"""``vilbias train``: classifier baselines and trl sft recipes.

    vilbias train classifier --dataset ./BiasCorpus --config default
    vilbias train classifier --dataset ./BiasCorpus --cv
    vilbias train sft --recipe training/recipes/SmolVLM-Instruct/lora.yaml
    vilbias train sft --recipe training/recipes/SmolVLM-Instruct/lora.yaml --max_steps 20 --output_dir out

``sft`` takes every field of TRL's ``ScriptArguments``, ``SFTConfig`` and ``ModelConfig`` (and
:class:`vilbias.training.sft.VilbiasSFTArguments`) as a flag; ``vilbias train sft --help`` lists them.
"""

from __future__ import annotations

import argparse
import sys

# Importing this module imports trl (and torch under it), because sft's flags are the fields of TRL's
# dataclasses; `vilbias` imports a stage's module only once that stage is chosen, so only `train` pays.
from trl import TrlParser
from vilbias.training import classifier, sft
from vilbias.training.recipe import read_recipe


class RecipeParser(TrlParser):
    """TRL's parser with its config file spelled ``--recipe``, read as the command is parsed.

    ``TrlParser.parse_args_and_config`` reads ``--config`` before parsing, but argparse asks a
    subcommand's parser only to ``parse_known_args``, so the recipe is read there: its fields become
    the parser's defaults (its ``env:`` mapping goes to the environment, as in TRL), so flags override
    the recipe wherever they stand. Without dataclass types (``classifier``) it is a plain parser.
    """

    def __init__(self, dataclass_types=None, **kwargs):
        super().__init__(dataclass_types, **kwargs)
        if self.dataclass_types:
            self.add_argument("--recipe", required=True, metavar="RECIPE.yaml", default=argparse.SUPPRESS,
                              help="Flat YAML of this command's fields (e.g. training/recipes/SmolVLM-Instruct/lora.yaml, "
                                   "or SmolVLM-Instruct/lora.yaml from the installed recipes); flags override it.")

    def parse_known_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        if self.dataclass_types:
            finder = argparse.ArgumentParser(prog=self.prog, add_help=False, allow_abbrev=False)
            finder.add_argument("--recipe")
            recipe = finder.parse_known_args(args)[0].recipe
            if recipe:
                self._read_recipe(recipe)
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:
            # Reported here, with this command's usage, rather than by the stage's parser.
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras

    def _read_recipe(self, recipe: str) -> None:
        try:
            path, fields = read_recipe(recipe)
        except (FileNotFoundError, ValueError) as e:
            self.error(str(e))
        unknown = self.set_defaults_with_config(**fields)[::2]  # it returns ["--name", "value", ...]
        if unknown:
            self.error(f"recipe {path} sets unknown field(s): {', '.join(name[2:] for name in unknown)}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands",
                                     parser_class=RecipeParser)
    help_ = (classifier.__doc__ or "").strip().splitlines()[0]
    classifier.add_arguments(commands.add_parser("classifier", help=help_, description=help_))
    sft.make_parser(commands)


def main(args: argparse.Namespace) -> int:
    return {"classifier": classifier.main, "sft": sft.main}[args.command](args)
