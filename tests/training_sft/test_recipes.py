"""Every recipe runs: 2 steps on CPU with a tiny random VLM of its family (no recipe can rot).

The recipe's own fields are kept; only what a CPU test must change is overridden: the model id
(a tiny VLM of the same family, see tests/fakes/tiny_vlm.py), the dataset (the embedded sample's
``sft`` config), 2 steps, CPU and fp32 (``use_cpu``, ``bf16: false``, ``dtype: float32``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import vilbias.training
import yaml
from datasets import load_dataset
from vilbias.training.sft import RUN_RECORD, parse_recipe, run_sft

from tests.fakes.tiny_vlm import FAMILY_OF_RECIPE
from vilbias.provenance import read_training_data

RECIPES_DIR = Path(vilbias.training.__file__).parent / "recipes"
# recipes/classifier/ holds `vilbias train classifier` recipes, not trl sft ones.
RECIPES = sorted(p for p in RECIPES_DIR.glob("*/*.yaml") if p.parent.name != "classifier")
PAPER = {"per_device_train_batch_size": 1, "num_train_epochs": 3, "learning_rate": 2e-4, "max_grad_norm": 0.3,
         "lr_scheduler_type": "constant_with_warmup", "warmup_steps": 0.03, "bf16": True, "seed": 0,
         "max_length": None, "assistant_only_loss": True, "dataset_config": "sft"}


def test_every_model_has_lora_qlora_full_with_paper_settings():
    assert set(FAMILY_OF_RECIPE) == {p.parent.name for p in RECIPES}
    for model in FAMILY_OF_RECIPE:
        assert {"lora", "qlora", "full"} <= {p.stem for p in (RECIPES_DIR / model).glob("*.yaml")}
    for path in RECIPES:
        recipe = yaml.safe_load(path.read_text())
        assert {k: recipe.get(k) for k in PAPER} == PAPER, path
        if path.stem == "qlora":
            assert recipe["load_in_4bit"] and recipe["bnb_4bit_quant_type"] == "nf4"
            assert recipe["use_bnb_nested_quant"] and recipe["dtype"] == "bfloat16"
        if path.stem in ("lora", "qlora", "full"):
            assert "method" not in recipe  # `trl sft` hands unknown keys to accelerate


def test_trl_sft_parser_accepts_the_trl_recipes():
    """`trl sft --config <recipe>` parses each lora/qlora/full recipe with nothing left over."""
    from trl.scripts.sft import make_parser

    for path in RECIPES:
        if path.stem not in ("lora", "qlora", "full"):
            continue
        *parsed, config_left, cli_left = make_parser().parse_args_and_config(
            # bf16 recipes only validate on a GPU machine, hence --use_cpu here
            ["--config", str(path), "--use_cpu", "true"], return_remaining_strings=True,
            separate_remaining_strings=True)
        assert config_left == [] and cli_left == [], path
        assert parsed[1].max_length is None and parsed[1].assistant_only_loss


def _snapshot(model):
    return {n: p.detach().float().clone() for n, p in model.named_parameters()}


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_recipe_trains_two_steps_on_cpu(recipe, sample_dataset_dir, tiny_vlm_dirs, tmp_path, monkeypatch):
    from trl import SFTTrainer

    family = FAMILY_OF_RECIPE[recipe.parent.name]
    model_dir = tiny_vlm_dirs(family)
    seen = {}
    original_init = SFTTrainer.__init__

    def spy_init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        seen["trainer"] = self
        seen["before"] = _snapshot(self.model)

    monkeypatch.setattr(SFTTrainer, "__init__", spy_init)
    parsed = parse_recipe(recipe, [
        "--model_name_or_path", str(model_dir), "--dataset_name", str(sample_dataset_dir),
        "--output_dir", str(tmp_path / "out"), "--max_steps", "2", "--use_cpu", "true", "--bf16", "false",
        "--dtype", "float32", "--save_strategy", "no", "--logging_steps", "1", "--learning_rate", "1e-2",
    ])
    record = run_sft(*parsed)
    trainer = seen["trainer"]
    model = trainer.model
    after = dict(model.named_parameters())
    changed = {n for n, before in seen["before"].items() if not torch.equal(before, after[n].detach().float())}
    trainable = {n for n, p in after.items() if p.requires_grad}

    assert record["train_steps"] == 2 and record["method"] == (recipe.stem)
    assert changed and changed <= trainable  # only trainable weights moved: the base stayed put
    assert trainer.chat_template is not None or "{% generation %}" in trainer.processing_class.chat_template \
        or "{%- generation %}" in trainer.processing_class.chat_template
    if recipe.stem in ("lora", "qlora"):
        assert trainable and all("lora_" in n for n in trainable)
        assert any("lora_B" in n for n in changed)
    if recipe.stem == "qlora":
        import bitsandbytes as bnb

        assert sum(isinstance(m, bnb.nn.Linear4bit) for m in model.modules()) > 0
        assert model.base_model.model.is_loaded_in_4bit
    if recipe.stem == "full":
        assert record["trainable_share"] == 1.0
    else:
        assert 0 < record["trainable_share"] < 1
    if recipe.stem == "prompt_tuning":
        assert trainable == {n for n in trainable if "prompt_encoder" in n}
    if recipe.stem == "ia3":
        assert trainable and all("ia3_" in n for n in trainable)
        assert not any("vision" in n for n in trainable)

    saved = json.loads((tmp_path / "out" / RUN_RECORD).read_text())
    assert saved["trainable_share"] == record["trainable_share"]
    assert saved["peak_memory_bytes"] > 0 and saved["peak_memory_kind"] == "process_rss"
    assert saved["wall_time_s"] > 0 and saved["train_samples_per_second"] > 0
    assert saved["hyperparameters"]["max_grad_norm"] == 0.3
    weights = {p.name for p in (tmp_path / "out").iterdir()}
    assert ("adapter_config.json" in weights) == (recipe.stem != "full")
    assert "processor_config.json" in weights or "preprocessor_config.json" in weights
    # the training-data record: the sft train split's rows, by unique_id, beside the weights
    trained_on = read_training_data(tmp_path / "out")
    assert trained_on.ids == sorted(load_dataset(str(sample_dataset_dir), "sft", split="train")["unique_id"])
    assert (trained_on.dataset, trained_on.config, trained_on.split, trained_on.rows) == (
        sample_dataset_dir.name, "sft", "train", 49)  # the folder by its name, not a path of this machine
    assert saved["training_data"] == trained_on.describe()
    assert json.loads((tmp_path / "out" / "vilbias_card.json").read_text())["training_data"]["ids_sha256"] == trained_on.ids_sha256
