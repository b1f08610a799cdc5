"""`--push_to_hub` pushes the adapter + processor with a vilbias model card (loopback Hub)."""

from __future__ import annotations

import json


def test_push_adapter_with_model_card(sample_dataset_dir, tiny_vlm_dirs, tmp_path, monkeypatch):
    from vilbias.training.sft import parse_recipe, run_sft

    from tests.fakes.hub_server import hub_server

    evaluation = tmp_path / "eval.json"
    evaluation.write_text(json.dumps({"f1": 0.75, "accuracy": 0.8}))
    with hub_server(tmp_path / "hub") as hub:
        monkeypatch.setenv("HF_TOKEN", hub.token)
        run_sft(*parse_recipe("training/recipes/llava-v1.6-mistral-7b-hf/qlora.yaml", [
            "--model_name_or_path", str(tiny_vlm_dirs("llava_next")), "--dataset_name", str(sample_dataset_dir),
            "--output_dir", str(tmp_path / "out"), "--max_steps", "1", "--use_cpu", "true", "--bf16", "false",
            "--dtype", "float32", "--save_strategy", "no", "--push_to_hub", "true",
            "--hub_model_id", "org/tiny-vlm-qlora", "--dataset_revision", "v1.0.0",
            "--evaluation_results", str(evaluation)]))
        tree = hub.tree_at("model", "org/tiny-vlm-qlora")
    assert {"README.md", "adapter_model.safetensors", "adapter_config.json", "vilbias_card.json",
            "run_record.json", "training_data.json", "training_ids.txt"} <= set(tree)
    assert any(name in tree for name in ("processor_config.json", "preprocessor_config.json"))
    card = tree["README.md"].decode()
    for expected in ("qlora", str(sample_dataset_dir), "v1.0.0", "model-index", "f1", "0.75", "load_vlm",
                     "org/tiny-vlm-qlora", "nf4"):
        assert expected in card, expected
    # what it trained on: the human part in the card, the record in its YAML, the ids beside the weights
    assert "## Training data" in card and "**49 rows**" in card and "config `sft`, split `train`, revision `v1.0.0`" in card
    from huggingface_hub import ModelCard

    record = ModelCard(card).data.to_dict()["training_data"]
    assert (record["rows"], record["revision"], record["config"]) == (49, "v1.0.0", "sft")
    assert len(tree["training_ids.txt"].decode().split()) == 49
    info = json.loads(tree["vilbias_card.json"])
    assert info["method"] == "qlora" and 0 < info["trainable_params"] < info["total_params"]
    assert info["peak_memory_mb"] > 0 and info["hyperparameters"]["learning_rate"] == 2e-4
    assert info["hyperparameters"]["bnb_4bit_quant_type"] == "nf4" and info["dataset_revision"] == "v1.0.0"
