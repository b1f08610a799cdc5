"""`trl`'s SFTTrainer trains on the built dataset's ``sft`` config as is.

This is the dataset contract's end-to-end check: the folder ``vilbias build`` writes loads with
``load_dataset(folder, "sft")`` and a LoRA run of TRL's own trainer steps on it, with the loss on
the assistant's answer only.
"""

from __future__ import annotations

import torch
from datasets import load_dataset

from vilbias.task import QUESTION

FAMILY = "llava_next"  # TRL knows this template and swaps in its {% generation %} variant


def test_sft_rows_have_the_trl_vision_format(sample_dataset_dir):
    ds = load_dataset(str(sample_dataset_dir), "sft")
    assert set(ds) == {"train", "validation", "test"}
    row = ds["train"][0]
    assert set(row) == {"messages", "image", "unique_id", "multimodal_label"}  # read from the shared shards
    user, assistant = row["messages"][-2:]
    assert user["role"] == "user" and assistant["role"] == "assistant"
    # Arrow stores content items as {type, text} structs, so the image item carries text=None
    assert user["content"][0] == {"type": "image", "text": None}
    assert user["content"][1]["type"] == "text" and QUESTION in user["content"][1]["text"]
    assert assistant["content"][0]["text"].startswith(("Label: biased\nReasoning: ", "Label: not biased\nReasoning: "))
    assert row["image"].size[0] > 0


def test_collator_masks_everything_but_the_answer(sample_dataset_dir, tiny_vlm_dirs, tmp_path):
    """The image item's text=None renders as an image, and labels cover the answer + end token only."""
    from trl import SFTConfig, SFTTrainer

    ds = load_dataset(str(sample_dataset_dir), "sft", split="train")
    args = SFTConfig(output_dir=str(tmp_path), max_length=None, assistant_only_loss=True, use_cpu=True,
                     bf16=False, report_to="none")
    trainer = SFTTrainer(model=str(tiny_vlm_dirs(FAMILY)), args=args, train_dataset=ds)
    batch = trainer.data_collator([ds[0], ds[1]])
    tokenizer = trainer.processing_class.tokenizer
    image_token_id = trainer.model.config.image_token_id
    for i in range(2):
        ids = batch["input_ids"][i]
        assert (ids == image_token_id).sum() > 0  # the image placeholder expanded into image tokens
        answer = tokenizer.decode(batch["labels"][i][batch["labels"][i] != -100])
        expected = ds[i]["messages"][-1]["content"][0]["text"]
        assert answer.strip() == expected + tokenizer.eos_token
    assert batch["pixel_values"].shape[0] == 2


def test_lora_trains_adapter_and_leaves_base_untouched(sample_dataset_dir, tiny_vlm_dirs, tmp_path):
    from peft import LoraConfig
    from transformers import AutoModelForImageTextToText
    from trl import SFTConfig, SFTTrainer

    ds = load_dataset(str(sample_dataset_dir), "sft")
    model = AutoModelForImageTextToText.from_pretrained(tiny_vlm_dirs(FAMILY))
    base_params = dict(model.named_parameters())  # PEFT wraps layers in place: same Parameter objects
    base_before = {n: p.detach().clone() for n, p in base_params.items()}
    args = SFTConfig(
        output_dir=str(tmp_path), max_steps=3, per_device_train_batch_size=1, learning_rate=1e-2,
        max_length=None, assistant_only_loss=True, use_cpu=True, bf16=False, report_to="none",
        save_strategy="no", logging_steps=1, seed=0,
    )
    trainer = SFTTrainer(
        model=model, args=args, train_dataset=ds["train"],
        peft_config=LoraConfig(r=8, lora_alpha=16, target_modules="all-linear", task_type="CAUSAL_LM"),
    )
    lora_before = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if "lora_" in n}
    assert lora_before and all(p.requires_grad for n, p in trainer.model.named_parameters() if "lora_" in n)
    trainer.train()
    assert all(torch.isfinite(torch.tensor(log["loss"])) for log in trainer.state.log_history if "loss" in log)

    after = dict(trainer.model.named_parameters())
    # LoRA's B matrices start at zero; every adapter matrix that received gradient moved
    changed = [n for n, p in lora_before.items() if not torch.equal(p, after[n].detach())]
    assert any("lora_B" in n for n in changed) and any("lora_A" in n for n in changed)
    trained_ids = {id(p) for p in trainer.model.parameters()}
    assert all(id(p) in trained_ids for p in base_params.values())  # the trainer really holds them
    for name, before in base_before.items():
        assert not base_params[name].requires_grad
        assert torch.equal(before, base_params[name].detach()), f"base weight {name} changed"
