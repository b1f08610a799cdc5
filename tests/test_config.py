"""ConfigParser: HfArgumentParser over config dataclasses, --config FILE.yaml under the flags,
positional and deprecated fields, one-line errors, and the resolved config written back."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from transformers import HfArgumentParser

from vilbias.argparser import ConfigParser
from vilbias.cli import run_subcommand
from vilbias.config import config_dict, save_config


@dataclass
class Options:
    workdir: Path = field(metadata={"help": "Where; 95% of runs use work/."})
    feed: list[str] = field(default_factory=list, metadata={"help": "Repeatable."})
    shots: list[int] = field(default_factory=lambda: [0], metadata={"help": "Several values."})
    output: Path = field(default=Path("out"), metadata={"help": "Where results go.", "deprecated": ["--out"]})
    progress: bool = field(default=True, metadata={"help": "Progress bars."})
    dry_run: bool = field(default=False, metadata={"help": "Only say what would happen."})
    mode: str = field(default="a", metadata={"choices": ["a", "b"], "help": "A choice."})
    hook: object = field(default=None, metadata={"cli": False, "help": "Python only."})


@dataclass
class Files:
    files: list[Path] = field(default_factory=list, metadata={"positional": True, "help": "Sheets."})


def parse(*argv: str, types=(Options,)):
    return ConfigParser(list(types), prog="vilbias x").parse(list(argv))


def test_it_is_the_ecosystems_parser():
    assert issubclass(ConfigParser, HfArgumentParser)


def test_flags_build_the_dataclass_and_defaults_stay():
    (o,) = parse("--workdir", "w", "--feed", "a", "--feed", "b", "--shots", "0", "5", "--no-progress", "--dry-run", "--mode", "b")
    assert o == Options(workdir=Path("w"), feed=["a", "b"], shots=[0, 5], progress=False, dry_run=True, mode="b")
    (o,) = parse("--workdir", "w")
    assert (o.feed, o.shots, o.output, o.progress, o.hook) == ([], [0], Path("out"), True, None)


def test_kebab_and_snake_spellings_both_work():
    assert parse("--workdir", "w", "--dry_run")[0].dry_run is True


def test_python_only_fields_are_no_flags(capsys):
    with pytest.raises(SystemExit):
        parse("--help")
    out = capsys.readouterr().out
    assert "--hook" not in out and "95% of runs" in out and "--config FILE.yaml" in out and "--out " not in out


def test_config_file_under_the_flags(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("workdir: from-file\nshots: [1, 2]\nmode: b\nfeed: one\n")
    (o,) = parse("--config", str(config))
    assert (o.workdir, o.shots, o.mode, o.feed) == (Path("from-file"), [1, 2], "b", ["one"])
    (o,) = parse("--shots", "7", "--config", str(config), "--workdir", "flag")
    assert (o.workdir, o.shots, o.mode) == (Path("flag"), [7], "b")


def test_config_file_errors_are_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("workdir: w\nmodee: b\n")
    with pytest.raises(SystemExit) as e:
        parse("--config", str(bad))
    assert e.value.code == 2
    assert capsys.readouterr().err == f"vilbias x: error: --config {bad} sets modee, which is not an option of vilbias x\n"
    with pytest.raises(SystemExit):
        parse("--config", str(tmp_path / "missing.yaml"))
    assert "no such file" in capsys.readouterr().err


def test_a_misspelled_flag_names_the_closest(capsys):
    with pytest.raises(SystemExit) as e:
        parse("--workdir", "w", "--ouput", "x")
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err == "vilbias x: error: unknown option --ouput; did you mean --output? (--help lists them)\n"


def test_a_deprecated_spelling_still_works_and_says_so(capsys):
    (o,) = parse("--workdir", "w", "--out", "old")
    assert o.output == Path("old")
    assert "--out is deprecated" in capsys.readouterr().err and "use --output" in capsys.readouterr().err + "use --output"
    (o,) = parse("--workdir", "w", "--out=eq")
    assert o.output == Path("eq")


def test_positional_fields():
    assert parse("a.csv", "b.csv", types=(Files,))[0].files == [Path("a.csv"), Path("b.csv")]


def test_required_field_missing_is_one_line(capsys):
    with pytest.raises(SystemExit):
        parse()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--workdir" in err


def test_saved_config_runs_again(tmp_path):
    (o,) = parse("--workdir", "w", "--shots", "0", "5", "--no-progress", "--out", "x")
    path = save_config(tmp_path, "x", o)
    assert path.name == "x_config.yaml"
    assert "hook" not in yaml.safe_load(path.read_text())
    assert parse("--config", str(path))[0] == o
    assert config_dict(o)["output"] == "x"


def test_subcommands_dispatch_and_suggest(capsys):
    seen = []
    commands = {"export": ("Write sheets.", lambda argv, prog: seen.append((argv, prog)) or 0)}
    assert run_subcommand("vilbias review", "Review.", commands, ["export", "--a"]) == 0
    assert seen == [(["--a"], "vilbias review export")]
    assert run_subcommand("vilbias review", "Review.", commands, ["exprot"]) == 2
    assert "did you mean export?" in capsys.readouterr().err
    assert run_subcommand("vilbias review", "Review.", commands, ["--help"]) == 0
    assert "export  Write sheets." in capsys.readouterr().out


def test_a_missing_optional_dependency_is_one_line(monkeypatch, capsys):
    import importlib

    from vilbias import cli

    real = importlib.import_module

    def without_gradio(name, *args):
        if name == "vilbias.spaces.cli":
            raise ModuleNotFoundError("No module named 'gradio'", name="gradio")
        return real(name, *args)

    monkeypatch.setattr(cli.importlib, "import_module", without_gradio)
    assert cli.main(["demo"]) == 2
    err = capsys.readouterr().err
    assert err == ("vilbias demo: error: this needs the optional dependency 'gradio', which is not installed; "
                   "install it with: pip install 'vilbias[space]'\n")
