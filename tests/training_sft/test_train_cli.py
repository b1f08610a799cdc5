"""`vilbias train classifier|sentence|sft --help` print their parsers' live help with the options a
user comes for, and a missing input is one line before torch loads."""

from __future__ import annotations

import subprocess
import sys

import pytest

from vilbias.cli import main

# What each command's help must show: the options its module docstring and the README use.
OPTIONS = {
    "classifier": ["--dataset DATASET", "--recipe RECIPE", "--cv [CV]", "--output OUTPUT_DIR, --output_dir OUTPUT_DIR",
                   "--config FILE.yaml"],
    "sentence": ["--sentences SENTENCES", "--recipe RECIPE", "--cv [CV]", "--output OUTPUT_DIR, --output_dir OUTPUT_DIR",
                 "--config FILE.yaml"],
    # TRL's fields under TRL's names, and vilbias's own (VilbiasSFTArguments)
    "sft": ["--recipe RECIPE.yaml", "--model_name_or_path MODEL_NAME_OR_PATH", "--use_peft [USE_PEFT]",
            "--output_dir OUTPUT_DIR", "--max_steps MAX_STEPS", "--merged_output_dir MERGED_OUTPUT_DIR"],
}


@pytest.mark.parametrize("command", sorted(OPTIONS))
def test_help_shows_the_options(command, capsys):
    try:
        code = main(["train", command, "--help"])
    except SystemExit as e:
        code = e.code
    out = capsys.readouterr().out
    assert code == 0 and out.startswith(f"usage: vilbias train {command} ")
    missing = [option for option in OPTIONS[command] if f"\n  {option}" not in out]
    assert not missing, f"vilbias train {command} --help lacks {missing}"


def test_a_missing_sentence_file_is_one_line_before_torch(tmp_path):
    code = ("import sys\nfrom vilbias.cli import main\n"
            f"code = main(['train', 'sentence', '--sentences', {str(tmp_path / 'missing.csv')!r}])\n"
            "print('imported:', *(m for m in ('torch', 'trl') if m in sys.modules))\nsys.exit(code)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout.splitlines() == ["imported:"]
    assert done.stderr.strip().splitlines() == [
        f"vilbias train sentence: error: {tmp_path / 'missing.csv'} not found: pass BABE's "
        "final_labels_SG2_public.csv (or another BABE-format file)"]
