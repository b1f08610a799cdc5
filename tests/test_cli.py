"""The ``vilbias`` command: every stage and command answers --help, stages load only when chosen,
one spelling per concept (old spellings still work, with a deprecation line), and expected failures
are one line. ``train sft``'s own flags are tested in tests/training_sft/test_cli.py."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from vilbias.argparser import ConfigParser
from vilbias.cli import STAGES, main

COMMANDS = {
    "review": ["export", "import", "stats"],
    "publish": ["dataset", "model", "space"],
    "train": ["classifier", "sft"],
    "evaluate": ["compare"],
    "audit": ["run", "metrics", "annotators", "space", "probeset"],
}
HEAVY = ("torch", "trl", "gradio")  # transformers itself is imported: its HfArgumentParser parses every command


def _help(argv: list[str]) -> int:
    try:
        return main([*argv, "--help"])
    except SystemExit as e:
        return e.code


@pytest.mark.parametrize("argv", [[stage] for stage in STAGES] + [[s, c] for s, cs in COMMANDS.items() for c in cs],
                         ids=" ".join)
def test_every_stage_and_command_answers_help(argv, capsys):
    assert _help(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: vilbias {' '.join(argv)}")
    if (len(argv) == 2 or argv[0] not in COMMANDS) and argv != ["train", "sft"]:  # sft: TRL's --recipe
        assert "--config FILE.yaml" in out


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


@pytest.mark.parametrize("stage", list(STAGES))
def test_a_stage_loads_alone_and_its_help_imports_no_heavy_library(stage):
    """Only the chosen stage's module is imported, and no stage needs torch, trl or gradio for --help
    (train's commands parse TrainingArguments and TRL's arguments, which need torch)."""
    helps = [[stage]] + [[stage, c] for c in COMMANDS.get(stage, []) if stage != "train"]
    others = [module for name, (module, _) in STAGES.items() if name != stage]
    code = (
        "import contextlib, io, sys\n"
        "from vilbias.cli import main\n"
        f"for argv in {helps!r}:\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        "        try: assert main([*argv, '--help']) == 0\n"
        "        except SystemExit as e: assert e.code == 0\n"
        f"print('imported:', *(m for m in {HEAVY + tuple(others)!r} if m in sys.modules))"
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


@pytest.mark.parametrize("argv, message", [
    (["review", "export", "--workdir", "w", "--output", "s", "--reviewer", "2"],
     "vilbias review export: error: unknown option --reviewer; did you mean --reviewers?"),
    (["audit", "run", "--output", "a", "--modalites", "text"],
     "vilbias audit run: error: unknown option --modalites; did you mean --modalities?"),
    (["evaluate", "--dataset-confg", "fold_1"], "vilbias evaluate: error: unknown option --dataset-confg; did you mean --dataset-config?"),
    (["ingest", "--workdir", "w", "--max-item", "3"], "vilbias ingest: error: unknown option --max-item; did you mean --max-items?"),
])
def test_a_misspelled_flag_is_one_line_naming_the_closest(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.startswith(message) and err.count("\n") == 1


def test_a_misspelled_command_names_the_closest(capsys):
    assert main(["audit", "metric"]) == 2
    assert capsys.readouterr().err == "vilbias audit: error: unknown command 'metric'; did you mean metrics?\n"


@pytest.mark.parametrize("argv", [["review", "export"], ["evaluate"], ["evaluate", "compare"], ["build"],
                                  ["audit", "run"], ["audit", "metrics"], ["audit", "space"], ["audit", "probeset"],
                                  ["train", "classifier"]], ids=" ".join)
def test_where_results_go_is_spelled_output(argv, capsys):
    assert _help(argv) == 0
    usage = capsys.readouterr().out.split("\n\n")[0]
    assert "--output" in usage and not {"--out", "--output-dir", "--output_dir"} & set(usage.split())


def test_old_spellings_still_work_with_a_deprecation_line(capsys, caplog):
    from vilbias.audit.runner import AuditConfig
    from vilbias.evaluate.config import EvaluateConfig

    (run,) = ConfigParser([AuditConfig], prog="vilbias audit run").parse(
        ["--model", "smollm2", "--out", "a", "--revision", "v1", "--max-tokens", "9"])
    assert (str(run.output), run.model_revision, run.max_new_tokens) == ("a", "v1", 9)
    (ev,) = ConfigParser([EvaluateConfig], prog="vilbias evaluate").parse(
        ["--dataset", "d", "--model", "m", "--revision", "v1.0.0", "--output-dir", "r"])
    assert (ev.dataset_revision, str(ev.output)) == ("v1.0.0", "r")
    err = capsys.readouterr().err.splitlines()
    assert err == [f"vilbias {cmd}: {old} is deprecated and will be removed in the next release; use {new}" for cmd, old, new in [
        ("audit run", "--out", "--output"), ("audit run", "--revision", "--model-revision"),
        ("audit run", "--max-tokens", "--max-new-tokens"),
        ("evaluate", "--revision", "--dataset-revision"), ("evaluate", "--output-dir", "--output")]]
    with caplog.at_level(logging.WARNING):  # VIGNETTE's name of the image variant: the modality is text+image
        (run,) = ConfigParser([AuditConfig], prog="vilbias audit run").parse(["--output", "a", "--modalities", "image", "text"])
    assert run.modalities == ["text+image", "text"]
    assert "--modalities image is deprecated and will be removed in the next release; use text+image" in caplog.text


def test_one_word_per_modality(capsys):
    """text / text+image, as `vilbias evaluate --modality` and the classifier's --modality say it."""
    from vilbias.audit.annotators import AnnotatorAuditConfig
    from vilbias.audit.runner import AuditConfig

    for argv in (["evaluate"], ["audit", "run"], ["audit", "annotators"]):
        assert _help(argv) == 0
        assert "text+image" in capsys.readouterr().out
    (run,) = ConfigParser([AuditConfig], prog="p").parse(["--output", "a", "--modalities", "text+image", "text"])
    assert run.modalities == ["text+image", "text"]
    with pytest.raises(ValueError, match="--modalities must name some of text\\+image, text"):
        AnnotatorAuditConfig(workdir="w", modalities=["multimodal"])


def test_every_run_can_be_repeated_from_the_config_it_saved(tmp_path):
    from vilbias.config import save_config
    from vilbias.evaluate.config import EvaluateConfig

    parser = ConfigParser([EvaluateConfig], prog="vilbias evaluate")
    (first,) = parser.parse(["--dataset", "d", "--model", "m", "--dataset-config", "fold_2", "--shots", "0", "5"])
    path = save_config(tmp_path, "evaluate", first)
    assert path.name == "evaluate_config.yaml"
    (again,) = ConfigParser([EvaluateConfig], prog="vilbias evaluate").parse(["--config", str(path)])
    assert again == first


def test_evaluate_without_command_evaluates_and_compare_is_a_command(capsys):
    from vilbias.evaluate.config import EvaluateConfig

    (cfg,) = ConfigParser([EvaluateConfig], prog="vilbias evaluate").parse(
        ["--dataset", "d", "--model", "m", "--probes", "no_image", "headline_only"])
    assert (cfg.dataset, cfg.model, cfg.probes) == ("d", "m", ["no_image", "headline_only"])
    with pytest.raises(SystemExit) as e:
        main(["evaluate", "compare", "--output", "out"])
    assert e.value.code == 2 and "required: run_dirs" in capsys.readouterr().err


def test_the_old_dataset_config_flag_is_named_as_such(capsys):
    assert main(["evaluate", "--dataset", "d", "--model", "m", "--config", "fold_3"]) == 2
    assert capsys.readouterr().err == ("vilbias evaluate: error: --config reads a YAML file of options now; the dataset "
                                       "config is --dataset-config fold_3\n")


def test_evaluate_without_model_is_one_line(capsys):
    assert main(["evaluate", "--dataset", "d"]) == 2
    assert capsys.readouterr().err.startswith("vilbias evaluate: error: --dataset and --model are required")


def test_only_the_commands_own_process_freezes_its_garbage_collector(monkeypatch):
    from vilbias import cli

    frozen = []  # gc.freeze calls (the frozen count itself falls whenever a frozen object is freed)
    monkeypatch.setattr(cli.gc, "freeze", lambda: frozen.append(True))
    assert not cli._owns_process  # main() called here, as a test or a notebook calls it
    cli.libraries_loaded()
    assert frozen == []
    monkeypatch.setattr(cli, "_owns_process", True)  # as run() marks the command's own process
    cli.libraries_loaded()
    assert frozen == [True]
