"""The ``vilbias`` command-line parser: :class:`transformers.HfArgumentParser` over a stage's config
dataclasses, with ``--config FILE.yaml`` (as TRL's ``TrlParser``) and the conventions described in
:mod:`vilbias.config`.

    >>> from dataclasses import dataclass, field
    >>> @dataclass
    ... class Demo:
    ...     output: str = field(default="out", metadata={"help": "Where results go.", "deprecated": ["--out"]})
    ...     steps: int = field(default=1, metadata={"help": "How many."})
    >>> ConfigParser([Demo], prog="demo").parse(["--steps", "3"])
    (Demo(output='out', steps=3),)
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import difflib
import os
import sys
import types
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml

from vilbias.config import command_line_fields


@contextlib.contextmanager
def _quiet_transformers_import():
    """Import transformers for its parser without its advice that PyTorch is missing: a command
    that parses its flags without torch installed (the core install: `vilbias build`) loads no model."""
    saved = os.environ.get("TRANSFORMERS_NO_ADVISORY_WARNINGS")
    os.environ["TRANSFORMERS_NO_ADVISORY_WARNINGS"] = "1"
    try:
        yield
    finally:
        if saved is None:
            del os.environ["TRANSFORMERS_NO_ADVISORY_WARNINGS"]
        else:
            os.environ["TRANSFORMERS_NO_ADVISORY_WARNINGS"] = saved


with _quiet_transformers_import():
    from transformers.hf_argparser import HfArgumentParser

# Field metadata keys that are ours, not argparse's (HfArgumentParser hands metadata to add_argument).
_OWN_KEYS = ("cli", "positional", "deprecated")


class ConfigParser(HfArgumentParser):
    """``HfArgumentParser`` with ``--config FILE.yaml``, positional and deprecated fields, one-line errors.

    Args:
        dataclass_types: the config dataclasses whose fields are the options; :meth:`parse` returns
            one instance of each, in this order.
        prog: the command as the user types it (``"vilbias review export"``), for messages.
        kwargs: passed to ``argparse.ArgumentParser``.
    """

    def __init__(self, dataclass_types: type | Iterable[type], *, prog: str, **kwargs: Any):
        self.renamed: dict[str, str] = {}
        super().__init__(dataclass_types, prog=prog, allow_abbrev=False, **kwargs)
        self.add_argument("--config", dest="config_file", metavar="FILE.yaml", default=None,
                          help="A YAML file of this command's options (field names as keys); flags given "
                               "here override it. Every run writes the one it used beside its outputs.")

    # HfArgumentParser calls this through `self` once per field (a staticmethod there; `parser` may be a group).
    def _parse_dataclass_field(self, parser: Any, field: dataclasses.Field) -> None:  # type: ignore[override]
        meta = dict(field.metadata)
        if meta.get("cli", True) is False:
            return
        current = (list(meta.get("aliases", ())) + ["--" + field.name.replace("_", "-")])[0]
        for old in meta.get("deprecated", ()):
            self.renamed[old] = current
        clean = {k: v for k, v in meta.items() if k not in _OWN_KEYS}
        if "help" in clean:  # argparse %-formats help text; a literal "95%" must not break --help
            clean["help"] = clean["help"].replace("%", "%%")
        field = copy.copy(field)
        field.metadata = types.MappingProxyType(clean)
        if meta.get("positional"):
            default = field.default_factory() if field.default_factory is not dataclasses.MISSING else field.default
            parser.add_argument(field.name, nargs="*" if default not in (dataclasses.MISSING, None) else "+",
                                default=default if default is not dataclasses.MISSING else None,
                                type=_item_type(field.type), help=clean.get("help"))
            return
        if _is_list(field.type):
            # Repeatable (`--feed A --feed B`) as well as several values (`--shots 0 5`); given values
            # replace the default instead of extending it (see _ListAction).
            names = [f"--{field.name.replace('_', '-')}"] + ([f"--{field.name}"] if "_" in field.name else [])
            # dest: an alias listed first (`--column` for `columns`) would otherwise name the value.
            default = field.default_factory() if field.default_factory is not dataclasses.MISSING else field.default
            parser.add_argument(*clean.pop("aliases", ()), *names, dest=field.name, type=_item_type(field.type), nargs="+",
                                action=_ListAction, default=None if default is dataclasses.MISSING else default, **clean)
            return
        before = len(parser._actions)
        HfArgumentParser._parse_dataclass_field(parser, field)
        # Kebab-case is the spelling --help shows (aliases first: `--from` for `source`); the snake
        # spelling HfArgumentParser lists first keeps working, as TRL users type it.
        # A deprecated spelling that HfArgumentParser made itself (`--output-dir` of `output_dir` shown
        # as `--output`) is left off --help; parse() rewrites it, with its deprecation line.
        for action in parser._actions[before:]:
            action.option_strings[:] = [s for s in action.option_strings if s not in self.renamed] or action.option_strings
            action.option_strings.sort(key=lambda s: (s not in meta.get("aliases", ()), "_" in s))

    def parse(self, args: Sequence[str] | None = None) -> tuple[Any, ...]:
        """Parse ``args`` (default ``sys.argv[1:]``) into one instance of each config dataclass.

        ``--config FILE.yaml`` is read first: its keys become the defaults, so flags override it
        wherever they stand. A key that is no option of this command is an error.
        """
        args = [self._current_spelling(a) for a in (sys.argv[1:] if args is None else args)]
        finder = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
        finder.add_argument("--config", dest="config_file")
        config_file = finder.parse_known_args(args)[0].config_file
        if config_file:
            self.read_config(config_file)
        namespace = self.parse_args(args)
        outputs = []
        for dtype in self.dataclass_types:
            values = {}
            for f in command_line_fields(dtype):
                if hasattr(namespace, f.name):
                    values[f.name] = getattr(namespace, f.name)
            outputs.append(dtype(**values))
        return tuple(outputs)

    def read_config(self, path: str | Path) -> None:
        """Take the options of a flat YAML file as defaults (what ``--config`` does)."""
        path = Path(path)
        try:
            values = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except FileNotFoundError:
            self.error(f"--config {path}: no such file")
        except yaml.YAMLError as e:
            self.error(f"--config {path}: not valid YAML ({str(e).splitlines()[0]})")
        if not isinstance(values, dict):
            self.error(f"--config {path}: expected a mapping of option names to values")
        self.set_file_defaults(values, f"--config {path}")

    def set_file_defaults(self, values: dict[str, Any], source: str) -> None:
        """Take ``values`` (option names to values, from ``source``: a file) as defaults; flags override them."""
        actions: dict[str, argparse.Action] = {}
        for a in self._actions:  # the first action of a dest carries its default (not `--no-x`'s)
            if a.dest not in ("help", "config_file"):
                actions.setdefault(a.dest, a)
        unknown = sorted(k for k in values if self._current_key(k, quiet=True) not in actions)
        if unknown:
            self.error(f"{source} sets {', '.join(unknown)}, which {'is not an option' if len(unknown) == 1 else 'are not options'} "
                       f"of {self.prog}")
        for key, value in values.items():
            action = actions[self._current_key(key)]
            if isinstance(action, _ListAction):  # flags replace, not extend, the file's list
                if value is None:  # an unset list (`label_names: null`): the field's own default
                    continue
                value = value if isinstance(value, list) else [value]
            action.default = _converted(action, value)
            action.required = False
            if not action.option_strings:  # a positional given by the file need not be given again
                action.nargs = "*"

    def _current_key(self, key: Any, quiet: bool = False) -> str:
        """A ``--config`` file's key as a dest; a deprecated spelling (``batch_size``) is read as the current one."""
        flag = "--" + str(key).replace("_", "-")
        if flag in self.renamed and str(key).replace("-", "_") not in {a.dest for a in self._actions}:
            current = self.renamed[flag]
            if not quiet:
                self._deprecated(str(key), current.removeprefix("--"))
            action = self._option_string_actions.get(current)
            return action.dest if action is not None else current.removeprefix("--").replace("-", "_")
        return str(key).replace("-", "_")

    def _deprecated(self, old: str, new: str) -> None:
        """The one deprecation line, on the parser's own error stream (as argparse writes its errors)."""
        self._print_message(f"{self.prog}: {old} is deprecated and will be removed in the next release; use {new}\n", sys.stderr)

    def _current_spelling(self, arg: str) -> str:
        name, sep, value = arg.partition("=")
        if name in self.renamed:
            self._deprecated(name, self.renamed[name])
            return self.renamed[name] + sep + value
        return arg

    def error(self, message: str):  # type: ignore[override]
        """One line, not the whole usage: the closest option for a misspelled one."""
        if message.startswith("unrecognized arguments:"):
            unknown = [a.split("=")[0] for a in message.split(":", 1)[1].split() if a.startswith("-")]
            known = [s for a in self._actions for s in a.option_strings if a.help is not argparse.SUPPRESS]
            for name in unknown:
                # An old spelling counts as near its replacement (`--bach-size`: --per-device-train-batch-size).
                close = difflib.get_close_matches(name, known + list(self.renamed), n=1, cutoff=0.6)
                if close:
                    self.exit(2, f"{self.prog}: error: unknown option {name}; did you mean {self.renamed.get(close[0], close[0])}? "
                                 "(--help lists them)\n")
            message = f"unknown option{'s' if len(unknown) > 1 else ''} {' '.join(unknown) or message.split(':', 1)[1].strip()} (--help lists them)"
        self.exit(2, f"{self.prog}: error: {message}\n")


class _ListAction(argparse._ExtendAction):
    """A list option: repeatable (``--feed A --feed B``) and multi-valued (``--shots 0 5``); the values
    given replace the default (the field's, or a ``--config`` file's), which ``--help`` shows."""

    def __call__(self, parser, namespace, values, option_string=None):
        given = namespace.__dict__.setdefault("_lists_given", set())
        if self.dest not in given:
            given.add(self.dest)
            setattr(namespace, self.dest, [])
        super().__call__(parser, namespace, values, option_string)


def _is_list(tp: Any) -> bool:
    args = [a for a in getattr(tp, "__args__", ()) if a is not type(None)]
    if getattr(tp, "__origin__", None) in (list, tuple):
        return True
    return len(args) == 1 and getattr(args[0], "__origin__", None) in (list, tuple)


def _item_type(tp: Any) -> Callable[[str], Any] | None:
    """The type argparse converts one value with (a list field's item type)."""
    args = [a for a in getattr(tp, "__args__", ()) if a is not type(None)]
    if getattr(tp, "__origin__", None) in (list, tuple) and args:
        return args[0]
    if len(args) == 1:
        return _item_type(args[0])
    return tp if isinstance(tp, type) and tp is not bool else None


def _converted(action: argparse.Action, value: Any) -> Any:
    """A YAML value as the command line would have produced it (``Path`` fields get paths)."""
    convert = action.type if callable(action.type) and isinstance(action.type, type) and action.type is not bool else None
    if convert is None or value is None:
        return value
    if isinstance(value, list):
        return [convert(v) if isinstance(v, str) else v for v in value]
    return convert(value) if isinstance(value, str) else value
