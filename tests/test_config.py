"""Config dataclasses to flags and back, nested configs flattened."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from vilbias.config import add_dataclass_arguments, dataclass_from_args


@dataclass
class Inner:
    timeout: float = field(default=20.0, metadata={"help": "Seconds; 95% of pages answer in 2."})
    ignore_robots: bool = field(default=False, metadata={"help": "Do not obey robots.txt."})
    hook: object = field(default=None, metadata={"cli": False, "help": "Python only."})


@dataclass
class Outer:
    workdir: Path = field(metadata={"help": "Where."})
    feed: list[str] = field(default_factory=list, metadata={"help": "Repeatable."})
    mode: str = field(default="a", metadata={"flag": "--run-mode", "choices": ["a", "b"], "help": "Renamed flag."})
    inner: Inner = field(default_factory=Inner, metadata={"help": "inner settings"})
    hidden: Inner = field(default_factory=Inner, metadata={"cli": False})


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="x")
    add_dataclass_arguments(parser, Outer)
    return parser


def test_nested_fields_become_flat_flags_and_come_back_nested():
    args = _parser().parse_args(["--workdir", "w", "--feed", "a", "--feed", "b", "--timeout", "3", "--ignore-robots", "--run-mode", "b"])
    config = dataclass_from_args(Outer, args)
    assert config == Outer(workdir=Path("w"), feed=["a", "b"], mode="b", inner=Inner(timeout=3.0, ignore_robots=True))
    assert config.hidden == Inner()  # cli: False keeps the whole nested field out


def test_nested_defaults_and_no_flags_for_python_only_fields():
    parser = _parser()
    config = dataclass_from_args(Outer, parser.parse_args(["--workdir", "w"]))
    assert (config.feed, config.inner) == ([], Inner())
    flags = {option for action in parser._actions for option in action.option_strings}
    assert {"--timeout", "--ignore-robots", "--no-ignore-robots", "--run-mode"} <= flags
    assert not {"--hook", "--inner", "--hidden", "--mode"} & flags


def test_help_lists_nested_flags_under_their_heading(capsys):
    with pytest.raises(SystemExit):
        _parser().parse_args(["--help"])
    out = capsys.readouterr().out
    assert "inner settings:" in out and "95% of pages" in out
    options = out[out.index("options:"):]  # after the usage line
    assert options.index("--run-mode") < options.index("inner settings:") < options.index("--timeout TIMEOUT")


def test_a_dict_can_carry_python_only_values_and_a_ready_nested_config():
    ready = Inner(timeout=1.0, hook="h")
    config = dataclass_from_args(Outer, {"workdir": Path("w"), "inner": ready, "feed": None})
    assert config.inner is ready and config.feed == []
    assert dataclass_from_args(Inner, {"hook": "h", "unrelated": 1}) == Inner(hook="h")


def test_required_fields_stay_required():
    with pytest.raises(SystemExit):
        _parser().parse_args([])


def test_a_list_flag_replaces_a_non_empty_default():
    import argparse
    from dataclasses import dataclass, field

    from vilbias.config import add_dataclass_arguments, dataclass_from_args

    @dataclass
    class Shots:
        shots: list[int] = field(default_factory=lambda: [0], metadata={"help": "k values."})

    parser = argparse.ArgumentParser()
    add_dataclass_arguments(parser, Shots)
    assert dataclass_from_args(Shots, parser.parse_args(["--shots", "0", "5"])).shots == [0, 5]
    assert dataclass_from_args(Shots, parser.parse_args([])).shots == [0]
