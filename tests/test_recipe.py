"""The one recipe reader behind `train classifier --recipe`, `train sft --recipe` and the default model."""

from __future__ import annotations

import os

import pytest
from vilbias.training import classifier_config, sft
from vilbias.training.recipe import RECIPES_DIR, read_recipe, resolve_recipe


def test_shipped_recipes_resolve_by_name_or_checkout_path():
    assert resolve_recipe("babe") == RECIPES_DIR / "classifier" / "babe.yaml"
    assert resolve_recipe("SmolVLM-Instruct/lora.yaml") == RECIPES_DIR / "SmolVLM-Instruct" / "lora.yaml"
    assert resolve_recipe("training/recipes/SmolVLM-Instruct/lora.yaml").read_bytes() == (
        RECIPES_DIR / "SmolVLM-Instruct" / "lora.yaml").read_bytes()
    with pytest.raises(FileNotFoundError, match=r"recipe nope not found: .*classifier/babe.yaml"):
        resolve_recipe("nope")


def test_values_env_and_field_checks(tmp_path, monkeypatch):
    monkeypatch.delenv("VILBIAS_RECIPE_TEST", raising=False)
    recipe = tmp_path / "r.yaml"
    recipe.write_text("learning_rate: 0.001\nenv:\n  VILBIAS_RECIPE_TEST: 7\n")
    path, values = read_recipe(recipe, {"learning_rate"})
    assert path == recipe and values == {"learning_rate": 0.001} and os.environ["VILBIAS_RECIPE_TEST"] == "7"
    with pytest.raises(ValueError, match="unknown field\\(s\\): learning_rate"):
        read_recipe(recipe, {"epochs"})
    recipe.write_text("- a list\n")
    with pytest.raises(ValueError, match="not a YAML mapping"):
        read_recipe(recipe)
    recipe.write_text("a: [unclosed\n")
    with pytest.raises(ValueError, match="not valid YAML"):
        read_recipe(recipe)


def test_classifier_and_sft_read_through_it(tmp_path):
    assert classifier_config.read_recipe("babe") == read_recipe("babe")[1]
    bad = tmp_path / "bad.yaml"
    bad.write_text("dataset: ./BiasCorpus\n")
    with pytest.raises(ValueError, match="unknown field\\(s\\): dataset"):
        classifier_config.read_recipe(bad)
    script_args, training_args, *_ = sft.parse_recipe("SmolVLM-Instruct/lora.yaml", ["--max_steps", "3", "--use_cpu", "true", "--bf16", "false"])
    assert training_args.max_steps == 3 and script_args.dataset_config == "sft"
    bad.write_text("no_such_field: 1\n")
    with pytest.raises(ValueError, match="unknown field\\(s\\): no_such_field"):
        sft.parse_recipe(bad)
