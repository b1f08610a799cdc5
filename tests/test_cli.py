"""The ``vilbias`` command: every stage and command answers --help, stages load only when chosen,
``train sft`` takes TRL's fields as real flags over its recipe, and expected failures are one line."""

from __future__ import annotations

import subprocess
import sys

import pytest

from vilbias.cli import STAGES, main, make_parser

RECIPE = "training/recipes/SmolVLM-Instruct/lora.yaml"
HEAVY = ("torch", "transformers", "trl", "gradio")


@pytest.mark.parametrize("argv", [[stage] for stage in STAGES] + [
    ["review", "export"], ["review", "import"], ["review", "stats"],
    ["publish", "dataset"], ["publish", "model"], ["publish", "space"],
    ["train", "classifier"], ["train", "sft"], ["evaluate", "compare"],
], ids=" ".join)
def test_every_stage_and_command_answers_help(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main([*argv, "--help"])
    assert e.value.code == 0
    assert f"usage: vilbias {' '.join(argv)}" in capsys.readouterr().out


def test_top_level_help_lists_the_stages(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert all(f"    {stage} " in out for stage in STAGES)


def test_version_and_missing_stage(capsys):
    from vilbias import __version__

    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"vilbias {__version__}"
    with pytest.raises(SystemExit) as e:
        main([])
    assert e.value.code == 2 and "required: STAGE" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [[stage, "--help"] for stage in STAGES if stage != "train"] + [
    ["build"], ["build", "--workdir", "work", "--output", "out"], ["evaluate", "--dataset", "d", "--model", "m"],
], ids=" ".join)
def test_parsing_a_stage_imports_no_heavy_library(argv):
    """Only the chosen stage's module is imported, and no stage but train needs torch & co. to parse."""
    code = (
        "import contextlib, io, sys\n"
        "from vilbias.cli import make_parser\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    try: make_parser().parse_args({argv!r})\n"
        "    except SystemExit as e: assert e.code == 0\n"
        f"print('imported:', *(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["imported:"]


def test_building_the_sample_imports_no_heavy_library(tmp_path):
    code = (
        "import sys\n"
        "from vilbias.cli import main\n"
        f"assert main(['-q', 'build', '--output', {str(tmp_path / 'out')!r}]) == 0\n"
        f"print('imported:', *(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path).stdout
    assert out.splitlines()[-1] == "imported:"
    assert (tmp_path / "out" / "README.md").is_file()


def test_an_expected_failure_is_one_clear_line(tmp_path, capsys):
    assert main(["build", "--workdir", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("vilbias build: error:") and "Traceback" not in err and err.count("\n") == 1


def test_unknown_flags_are_the_stage_or_commands_error(capsys):
    with pytest.raises(SystemExit) as e:
        main(["build", "--no-such-flag"])
    assert e.value.code == 2
    assert "vilbias build: error: unrecognized arguments: --no-such-flag" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["review", "stats", "--workdir", "w", "--no-such-flag"])
    assert e.value.code == 2 and "unrecognized arguments: --no-such-flag" in capsys.readouterr().err


def test_evaluate_without_command_evaluates_and_compare_is_a_command():
    parser = make_parser()
    args = parser.parse_args(["evaluate", "--dataset", "d", "--model", "m", "--probes", "no_image", "headline_only"])
    assert (args.command, args.dataset, args.model, args.probes) == (None, "d", "m", ["no_image", "headline_only"])
    args = parser.parse_args(["evaluate", "compare", "runs/a", "runs/b", "--output", "out"])
    assert args.command == "compare" and [str(p) for p in args.run_dirs] == ["runs/a", "runs/b"]
    assert str(args.output) == "out"


def test_evaluate_compare_needs_run_dirs(capsys):
    with pytest.raises(SystemExit) as e:
        main(["evaluate", "compare", "--output", "out"])
    assert e.value.code == 2 and "required: run_dirs" in capsys.readouterr().err


def test_evaluate_without_model_is_one_line(capsys):
    assert main(["evaluate", "--dataset", "d"]) == 2
    assert capsys.readouterr().err.startswith("vilbias evaluate: error: --dataset and --model are required")


def test_train_sft_flags_override_the_recipe_wherever_they_stand():
    """The recipe supplies the defaults; TRL's fields are real flags, parsed before or after --recipe."""
    from vilbias.training import sft

    args = make_parser().parse_args(["train", "sft", "--max_steps", "7", "--recipe", RECIPE, "--use_cpu", "true",
                                     "--method", "ia3", "--learning_rate", "1e-3"])
    assert (args.max_steps, args.use_cpu, args.method, args.learning_rate) == (7, True, "ia3", 1e-3)
    assert (args.lora_r, args.num_train_epochs, args.dataset_config) == (16, 3, "sft")  # from the recipe
    script_args, training_args, model_args, _, extra = sft.make_parser().parse_dict(vars(args), allow_extra_keys=True)
    assert training_args.max_steps == 7 and training_args.learning_rate == 1e-3 and extra.method == "ia3"
    # the same values as TRL's own `--config` parsing of the recipe with the same overrides
    _, reference, *_ = sft.parse_recipe(RECIPE, ["--max_steps", "7", "--use_cpu", "true", "--method", "ia3",
                                                 "--learning_rate", "1e-3"])
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
