"""Every ``vilbias`` command line, parsed the ecosystem's way.

A stage's options are the fields of its config dataclass (help text in
``field(metadata={"help": ...})``, as ``transformers.TrainingArguments`` does).
:class:`ConfigParser` is :class:`transformers.HfArgumentParser` over those dataclasses with what
TRL's ``TrlParser`` adds on top (``--config FILE.yaml``, flags overriding the file) and three
conventions of our command line:

* ``metadata={"cli": False}`` keeps a field off the command line (a ready backend, a token, a test
  hook: things only Python callers pass);
* ``metadata={"positional": True}`` makes a field a positional argument
  (``vilbias review import --workdir W a.csv b.csv``);
* ``metadata={"deprecated": ["--out"]}`` keeps an old spelling working for one release: it is
  accepted, hidden from ``--help``, and says on stderr which spelling replaces it.

Errors are one line (``vilbias build: error: ...``) and an unknown flag names the closest one.
:func:`save_config` writes the resolved configuration a run used beside its outputs, in the
same flat YAML ``--config`` reads, so ``vilbias <stage> --config <output>/<stage>_config.yaml``
runs it again.

:class:`ConfigParser` lives in :mod:`vilbias.argparser`, one floor up: it parses command lines
into these configs (and imports ``transformers``), while writing a config (:func:`save_config`, as
every build and run does) needs only this module.
"""

from __future__ import annotations

import dataclasses
import enum
from pathlib import Path
from typing import Any

import yaml

from vilbias.outputs import atomic_write


def command_line_fields(dtype: type) -> list[dataclasses.Field]:
    """The fields of ``dtype`` a command line sets (``init`` fields not marked ``cli: False``)."""
    return [f for f in dataclasses.fields(dtype) if f.init and f.metadata.get("cli", True) is not False]


def config_dict(*configs: Any) -> dict[str, Any]:
    """The command-line fields of ``configs``, flat, as YAML-safe values (paths as strings)."""
    out: dict[str, Any] = {}
    for config in configs:
        for f in command_line_fields(type(config)):
            value = getattr(config, f.name)
            if dataclasses.is_dataclass(value) or f.name.endswith("_token"):  # no tokens (TrainingArguments' hub_token)
                continue
            out[f.name] = _plain(value)
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, enum.Enum):  # TrainingArguments' strategies
        return _plain(value.value)
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def save_config(folder: str | Path, stage: str, *configs: Any, command: str | None = None) -> Path:
    """Write ``<folder>/<stage>_config.yaml``: the options this run resolved, re-runnable with ``--config``.

    Only command-line fields are written (never tokens or Python-only hooks, which are ``cli: False``).
    ``command`` is the command that re-runs it, when it is not ``vilbias <stage>`` (``vilbias train classifier``).
    """
    path = Path(folder) / f"{stage.replace(' ', '_')}_config.yaml"  # "review export" -> review_export_config.yaml
    path.parent.mkdir(parents=True, exist_ok=True)
    command = command or f"vilbias {stage}"
    header = f"# The options `{command}` ran with; re-run with: {command} --config {path.name}\n"
    # whole or not at all: a half-written file would be read back by --config
    atomic_write(path, header + yaml.safe_dump(config_dict(*configs), sort_keys=False, allow_unicode=True))
    return path
