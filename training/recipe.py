"""The one recipe reader: every ``--recipe`` (classifier, SFT, the default sentence model) is read here.

A recipe is flat YAML of a command's fields (as open-r1's and TRL's are), optionally with an
``env:`` mapping set in the environment before training (TRL's convention). It is named by a
path, or by a shipped recipe's name, found in the installed ``training/recipes`` folder::

    read_recipe("babe")                                  # recipes/classifier/babe.yaml
    read_recipe("SmolVLM-Instruct/lora.yaml")            # recipes/SmolVLM-Instruct/lora.yaml
    read_recipe("training/recipes/SmolVLM-Instruct/lora.yaml")   # from the checkout root, or anywhere
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

RECIPES_DIR = Path(__file__).parent / "recipes"
"""The shipped recipes (mapped into the wheel with the ``training`` folder)."""
CLASSIFIER_RECIPES = RECIPES_DIR / "classifier"
"""Shipped classifier recipes, named by their stem: ``--recipe babe``."""


def resolve_recipe(recipe: str | os.PathLike) -> Path:
    """The recipe file ``recipe`` names: a path as given, else a shipped recipe.

    Raises:
        FileNotFoundError: in one sentence naming the shipped recipes.
    """
    path = Path(recipe)
    if path.is_file():
        return path
    candidates = [RECIPES_DIR / path, CLASSIFIER_RECIPES / f"{path.name.removesuffix('.yaml')}.yaml"]
    if path.parts[:2] == ("training", "recipes"):
        candidates.append(RECIPES_DIR / Path(*path.parts[2:]))
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    shipped = sorted(str(p.relative_to(RECIPES_DIR)) for p in RECIPES_DIR.rglob("*.yaml"))
    raise FileNotFoundError(f"recipe {recipe} not found: neither a file nor a shipped recipe ({', '.join(shipped)})")


def read_recipe(recipe: str | os.PathLike, fields: Iterable[str] | None = None) -> tuple[Path, dict[str, Any]]:
    """``(path, values)`` of a recipe; its ``env:`` mapping is set in the environment.

    Args:
        recipe: A path or a shipped recipe's name (see :func:`resolve_recipe`).
        fields: The field names a recipe may set (None: any; the caller's parser checks them).

    Raises:
        FileNotFoundError: no such recipe.
        ValueError: not a YAML mapping, an ``env:`` that is not a mapping, or unknown fields.
    """
    path = resolve_recipe(recipe)
    try:
        values = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise ValueError(f"recipe {path} is not valid YAML ({e.__class__.__name__})") from None
    values = {} if values is None else values
    if not isinstance(values, dict):
        raise ValueError(f"recipe {path} is not a YAML mapping of field: value")
    env = values.pop("env", {})
    if not isinstance(env, dict):
        raise ValueError(f"recipe {path}: env must be a mapping of variable: value")
    if fields is not None:
        unknown = sorted(set(values) - set(fields))
        if unknown:
            raise ValueError(f"recipe {path} sets unknown field(s): {', '.join(unknown)}")
    for key, value in env.items():
        os.environ[key] = str(value)
    return path, values


__all__ = ["CLASSIFIER_RECIPES", "RECIPES_DIR", "read_recipe", "resolve_recipe"]
