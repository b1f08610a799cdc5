"""``vilbias train sft``: TRL's fields are real flags over the recipe, bad flags are argparse's one-line
errors, and ``vilbias train --help`` loads neither torch nor trl."""

from __future__ import annotations

import subprocess
import sys

import pytest

from vilbias.cli import main

RECIPE = "training/recipes/SmolVLM-Instruct/lora.yaml"


def test_train_sft_flags_override_the_recipe_wherever_they_stand():
    """The recipe supplies the defaults; TRL's fields are real flags, parsed before or after --recipe."""
    from vilbias.training import sft

    flags = ["--max_steps", "7", "--use_cpu", "true", "--method", "ia3", "--learning_rate", "1e-3"]
    script_args, training_args, model_args, _, extra = sft.parse_args(flags[:2] + ["--recipe", RECIPE] + flags[2:])
    assert (training_args.max_steps, training_args.use_cpu, extra.method, training_args.learning_rate) == (7, True, "ia3", 1e-3)
    assert (model_args.lora_r, training_args.num_train_epochs, script_args.dataset_config) == (16, 3, "sft")  # from the recipe
    assert training_args.activation_checkpointing and training_args.gradient_checkpointing  # the recipe's memory saving
    # the same values as TRL's own `--config` parsing of the recipe with the same overrides
    _, reference, *_ = sft.parse_recipe(RECIPE, flags)
    assert training_args.to_dict() == reference.to_dict()


@pytest.mark.parametrize("argv, message", [
    (["--recipe", RECIPE, "--max_stepz", "3"], "vilbias train sft: error: unrecognized arguments: --max_stepz 3"),
    (["--recipe", RECIPE, "--max_step", "3"], "unrecognized arguments: --max_step 3"),  # no abbreviations
    (["--recipe", RECIPE, "--method", "adapters"], "argument --method: invalid choice: 'adapters'"),
    (["--recipe", "no/such/recipe.yaml"], "vilbias train sft: error: recipe no/such/recipe.yaml not found"),
    (["--max_steps", "3"], "the following arguments are required: --recipe"),
])
def test_train_sft_bad_flags_are_argparse_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        main(["train", "sft", *argv])
    assert e.value.code == 2 and message in capsys.readouterr().err


def test_train_sft_recipe_with_an_unknown_field(tmp_path, capsys):
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("max_steps: 2\nlearning_rat: 0.1\n")
    with pytest.raises(SystemExit) as e:
        main(["train", "sft", "--recipe", str(recipe)])
    assert e.value.code == 2
    assert f"vilbias train sft: error: recipe {recipe} sets unknown field(s): learning_rat" in capsys.readouterr().err


def test_four_bit_is_read_from_the_flags_and_the_recipe():
    from vilbias.training.sft import asks_for_4bit

    assert not asks_for_4bit(["--recipe", RECIPE])
    assert asks_for_4bit(["--recipe", "training/recipes/SmolVLM-Instruct/qlora.yaml"])
    assert asks_for_4bit(["--recipe", RECIPE, "--method", "qlora"]) and asks_for_4bit(["--recipe", RECIPE, "--load_in_4bit"])
    assert not asks_for_4bit(["--recipe", "training/recipes/SmolVLM-Instruct/qlora.yaml", "--method", "lora", "--load_in_4bit", "false"])


def test_train_help_loads_no_heavy_library_and_sft_help_no_bitsandbytes_noise():
    code = ("import contextlib, io, sys\n"
            "from vilbias.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    assert main(['train', '--help']) == 0\n"
            "print('imported:', *(m for m in ('torch', 'transformers.training_args', 'trl') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["imported:"]
    done = subprocess.run([sys.executable, "-m", "vilbias.cli", "train", "sft", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "--recipe" in done.stdout and "--max_steps" in done.stdout
    assert "gemm_4bit_forward" not in done.stderr
