"""Command-line flags from config dataclasses.

Every stage takes a config dataclass; its fields carry their help text in
``field(metadata={"help": ...})``. :func:`add_dataclass_arguments` turns those fields into
argparse options so the CLI never repeats them, and :func:`dataclass_from_args` builds the
config back from the parsed namespace. Booleans become ``--flag/--no-flag`` pairs, lists take
several values (``--feed A --feed B`` or ``--feed A B``), and ``metadata={"flag": "--x"}``
renames an option whose spelling the command-line contract fixes.

A field whose type is itself a dataclass (``fetch: FetchSettings``) is flattened: its fields
become flags of the same command, listed under their own heading in ``--help``, and are
gathered back into the nested config. Flag names must therefore be unique across the levels.
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def _unwrap_optional(tp: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return tp, False


def _cli_fields(cls: type) -> list[tuple[dataclasses.Field, Any]]:
    """The fields of ``cls`` that are flags, with their resolved types."""
    hints = typing.get_type_hints(cls)
    return [
        (f, _unwrap_optional(hints[f.name])[0])
        for f in dataclasses.fields(cls)
        if f.init and f.metadata.get("cli", True) is not False
    ]


def _field_default(f: dataclasses.Field) -> tuple[Any, bool]:
    """``(default, required)``."""
    if f.default is not dataclasses.MISSING:
        return f.default, False
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory(), False
    return None, True


def add_dataclass_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup, cls: type) -> None:
    """Add one option per field of the dataclass ``cls`` to ``parser``.

    Fields with ``metadata={"positional": True}`` become positional arguments; fields with
    ``metadata={"cli": False}`` are left out (they are set from Python only); dataclass-typed
    fields contribute their own fields, in an argument group titled by their help text.
    """
    for f, tp in _cli_fields(cls):
        if dataclasses.is_dataclass(tp):
            title = f.metadata.get("help") or f.name
            group = parser.add_argument_group(title) if isinstance(parser, argparse.ArgumentParser) else parser
            add_dataclass_arguments(group, tp)
            continue
        default, required = _field_default(f)
        # argparse %-formats help text; a literal "95%" in a field's help must not break --help.
        kwargs: dict[str, Any] = {"help": f.metadata.get("help", "").replace("%", "%%"), "dest": f.name}
        if required:
            kwargs["required"] = True
        names = [f.metadata.get("flag", "--" + f.name.replace("_", "-"))]
        names += list(f.metadata.get("aliases", ()))
        origin = typing.get_origin(tp)
        if tp is bool:
            kwargs["action"] = argparse.BooleanOptionalAction
        elif origin in (list, tuple):
            (item,) = typing.get_args(tp)[:1] or (str,)
            kwargs["type"] = Path if item is Path else item
            kwargs["nargs"] = "+"
            kwargs["action"] = "extend"
            if default not in ((), [], None) and not f.metadata.get("positional"):
                # "extend" appends to the default list; start from None so `--shots 0 5` is [0, 5]
                # (dataclass_from_args falls back to the field's default when the flag is absent).
                kwargs["help"] += f" (default: {' '.join(map(str, default))})"
            default = None if not f.metadata.get("positional") or default in ((), []) else default
        elif origin is typing.Literal:
            kwargs["choices"] = list(typing.get_args(tp))
            kwargs["type"] = type(kwargs["choices"][0])
        else:
            kwargs["type"] = tp
        if "choices" in f.metadata:
            kwargs["choices"] = f.metadata["choices"]
        if f.metadata.get("positional"):
            kwargs.pop("dest")
            kwargs.pop("required", None)
            if origin in (list, tuple):
                kwargs.pop("action")
                kwargs["nargs"] = "+" if default is None else "*"
            parser.add_argument(f.name, default=default, **kwargs)
            continue
        parser.add_argument(*names, default=default, **kwargs)


def dataclass_from_args(cls: type[T], args: argparse.Namespace | dict[str, Any]) -> T:
    """Build ``cls`` from parsed arguments, ignoring names that are not its fields.

    List fields that argparse left as ``None`` fall back to the field's default factory;
    dataclass-typed fields are rebuilt from the same flat arguments.
    """
    values = vars(args) if isinstance(args, argparse.Namespace) else dict(args)
    nested = {f.name: tp for f, tp in _cli_fields(cls) if dataclasses.is_dataclass(tp)}
    kwargs = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        if f.name in values:
            if values[f.name] is None and (
                f.default_factory is not dataclasses.MISSING or f.default not in (dataclasses.MISSING, None)
            ):
                continue  # flag absent: the field's own default
            kwargs[f.name] = values[f.name]
        elif f.name in nested:
            kwargs[f.name] = dataclass_from_args(nested[f.name], values)
    return cls(**kwargs)
