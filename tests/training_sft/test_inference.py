"""The inference helper: robust answer parsing, and save adapter → reload → merge → generate."""

from __future__ import annotations

import pytest
import torch
from PIL import Image

from vilbias.models.vlm import generate_answers, load_vlm
from vilbias.task import normalise_label, parse_answer


@pytest.mark.parametrize("text, label, reasoning", [
    ("Label: biased\nReasoning: Loaded words.", "biased", "Loaded words."),
    ("label: NOT BIASED\nreasoning: neutral tone", "not_biased", "neutral tone"),
    ("Sure! Here is my answer.\nLabel: not_biased\nReasoning: balanced sources.\nThanks.", "not_biased",
     "balanced sources.\nThanks."),
    ("**Label:** Unbiased\n**Reasoning:** factual", "not_biased", "factual"),
    ('```json\n{"label": "biased", "reasoning": "emotive image"}\n```', "biased", "emotive image"),
    ('{"Label": "Not Biased", "Reasoning": "even-handed"}', "not_biased", "even-handed"),
    ("Label: biased", "biased", None),
    ("Label: not biased. Reasoning: plain facts", "not_biased", "plain facts"),
])
def test_parse_answer_accepts_the_ways_models_write_labels(text, label, reasoning):
    answer = parse_answer(text)
    assert (answer.label, answer.reasoning, answer.error) == (label, reasoning, None)
    assert answer.label_id == (1 if label == "biased" else 0)


@pytest.mark.parametrize("text, error", [
    ("The article seems fine to me.", "no 'Label:'"),
    ("Label: maybe\nReasoning: unsure", "unrecognised label 'maybe'"),
    ("Label: biased\nLabel: not biased", "conflicting labels"),
    ('{"label": "somewhat", "reasoning": "x"}', "without a recognisable label"),
    ("", "no 'Label:'"),
])
def test_parse_answer_reports_instead_of_guessing(text, error):
    answer = parse_answer(text)
    assert answer.label is None and answer.label_id is None and error in answer.error and answer.raw == text


def test_normalise_label():
    assert [normalise_label(v) for v in ("Biased", "not-biased", "Not_Biased", "unbiased", "?")] == [
        "biased", "not_biased", "not_biased", "not_biased", None]


def _train_adapter(family, dirs, dataset_dir, out):
    from vilbias.training.sft import parse_recipe, run_sft

    recipe = {"llava_next": "llava-v1.6-mistral-7b-hf", "idefics3": "SmolVLM-Instruct"}[family]
    run_sft(*parse_recipe(f"training/recipes/{recipe}/lora.yaml", [
        "--model_name_or_path", str(dirs(family)), "--dataset_name", str(dataset_dir), "--output_dir", str(out),
        "--max_steps", "2", "--use_cpu", "true", "--bf16", "false", "--dtype", "float32", "--save_strategy", "no",
        "--learning_rate", "1e-2"]))
    return out


def test_adapter_round_trip_reload_merge_generate(sample_dataset_dir, tiny_vlm_dirs, tmp_path):
    out = _train_adapter("llava_next", tiny_vlm_dirs, sample_dataset_dir, tmp_path / "run")
    image = Image.new("RGB", (40, 30), (10, 120, 200))
    items = [(image, "Markets rose", "Shares rose on Tuesday."), (image, "Plan slammed", "Critics slammed it.")]

    adapter, processor = load_vlm(out)  # base found through adapter_config.json
    assert type(adapter).__name__ == "PeftModelForCausalLM"
    merged, _ = load_vlm(out, merge=True)
    assert not any("lora_" in n for n, _ in merged.named_parameters())
    # the merged model computes what base + adapter computes
    inputs = processor.apply_chat_template(
        [[{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": "hi"}]}]],
        add_generation_prompt=True, tokenize=True, return_dict=True, return_tensors="pt")
    with torch.inference_mode():
        assert torch.allclose(adapter(**inputs).logits, merged(**inputs).logits, atol=1e-4)
    # the adapter is not a no-op: the bare base answers differently
    base, _ = load_vlm(tiny_vlm_dirs("llava_next"))
    with torch.inference_mode():
        assert not torch.allclose(base(**inputs).logits, merged(**inputs).logits, atol=1e-4)

    answers = generate_answers(merged, processor, items, batch_size=2, max_new_tokens=8)
    same = generate_answers(adapter, processor, items, batch_size=1, max_new_tokens=8)
    assert [a.raw for a in answers] == [a.raw for a in same]  # batched (left-padded) == one by one
    # a random tiny model writes no label: reported, not guessed
    assert all(a.label is None and a.error for a in answers)


def test_four_bit_base_plus_adapter(sample_dataset_dir, tiny_vlm_dirs, tmp_path):
    import bitsandbytes as bnb

    out = _train_adapter("llava_next", tiny_vlm_dirs, sample_dataset_dir, tmp_path / "run")
    model, processor = load_vlm(out, load_in_4bit=True, dtype="float32")
    assert any(isinstance(m, bnb.nn.Linear4bit) for m in model.modules())
    image = Image.new("RGB", (40, 30), (200, 20, 20))
    answers = generate_answers(model, processor, [(image, "Headline", "Text.")], max_new_tokens=4)
    assert len(answers) == 1 and answers[0].raw is not None
    with pytest.raises(ValueError, match="merging into a 4-bit base"):
        load_vlm(out, load_in_4bit=True, merge=True)


def test_vilbias_train_sft_cli(sample_dataset_dir, tiny_vlm_dirs, tmp_path, capsys):
    """`vilbias train sft --recipe R [overrides] --method M` goes through the stage CLI."""
    import json

    from vilbias.cli import main

    rc = main(["train", "sft", "--recipe", "training/recipes/SmolVLM-Instruct/lora.yaml",
               "--model_name_or_path", str(tiny_vlm_dirs("idefics3")), "--dataset_name", str(sample_dataset_dir),
               "--output_dir", str(tmp_path / "o"), "--max_steps", "1", "--use_cpu", "true", "--bf16", "false",
               "--dtype", "float32", "--save_strategy", "no", "--method", "prompt_tuning", "--num_virtual_tokens", "4"])
    assert rc == 0
    record = json.loads((tmp_path / "o" / "run_record.json").read_text())
    assert record["method"] == "prompt_tuning" and record["peft"] == {"num_virtual_tokens": 4}
    assert json.loads((tmp_path / "o" / "adapter_config.json").read_text())["peft_type"] == "PROMPT_TUNING"
    assert '"method": "prompt_tuning"' in capsys.readouterr().out


def test_merged_model_keeps_the_adapters_training_data(sample_dataset_dir, tiny_vlm_dirs, tmp_path):
    """`--merged_output_dir` saves base + adapter merged, standalone, with the adapter's training-data record."""
    import json

    from vilbias.training.sft import parse_recipe, run_sft

    from vilbias.provenance import read_training_data

    run_sft(*parse_recipe("training/recipes/llava-v1.6-mistral-7b-hf/lora.yaml", [
        "--model_name_or_path", str(tiny_vlm_dirs("llava_next")), "--dataset_name", str(sample_dataset_dir),
        "--output_dir", str(tmp_path / "adapter"), "--max_steps", "1", "--use_cpu", "true", "--bf16", "false",
        "--dtype", "float32", "--save_strategy", "no", "--learning_rate", "1e-2",
        "--merged_output_dir", str(tmp_path / "merged")]))
    merged_dir = tmp_path / "merged"
    assert not (merged_dir / "adapter_config.json").exists() and (merged_dir / "model.safetensors").is_file()
    assert read_training_data(merged_dir) == read_training_data(tmp_path / "adapter")
    card = json.loads((merged_dir / "vilbias_card.json").read_text())
    assert card["library_name"] == "transformers" and "merged" in card["tags"] and card["training_data"]["rows"] == 49

    merged, processor = load_vlm(merged_dir)
    adapter, _ = load_vlm(tmp_path / "adapter")
    image = Image.new("RGB", (40, 30), (10, 120, 200))
    inputs = processor.apply_chat_template(
        [[{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": "hi"}]}]],
        add_generation_prompt=True, tokenize=True, return_dict=True, return_tensors="pt")
    with torch.inference_mode():
        assert torch.allclose(adapter(**inputs).logits, merged(**inputs).logits, atol=1e-4)
