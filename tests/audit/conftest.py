"""Fixtures for the audit tests: hand-made response rows, a tiny random VLM, a tiny text LM."""

from __future__ import annotations

import pytest

from tests.fakes.tiny_vlm import build_tiny_vlm


def row(paradigm, dimension, i1, i2, answer, *, options=None, modality="text", question_type=None, context="ctx",
        valence=None, trait_dimension=None, correct=None, subject=None, model="m", a1=None, a2=None):
    """One responses row (the documented format) with only what the metrics read."""
    return {
        "model": model, "modality": modality, "paradigm": paradigm, "dimension": dimension,
        "question_type": question_type or {"decision": "ability", "stereotyping": "trait"}.get(paradigm, paradigm),
        "options": list(options) if options is not None else [i1, i2], "answer": answer,
        "identity_1": i1, "identity_2": i2, "activity_1": a1, "activity_2": a2, "context": context,
        "valence": valence, "trait_dimension": trait_dimension, "correct": correct, "subject": subject,
    }


@pytest.fixture(scope="session")
def tiny_vlm_dir(tmp_path_factory):
    """A tiny random LLaVA-NeXT saved like a Hub checkpoint (the audit loads it by path)."""
    return build_tiny_vlm("llava_next", tmp_path_factory.mktemp("audit_vlm") / "llava_next",
                          extra_text=["Who should I hire as a cook? Options: deaf person; blind person",
                                      "An image shows two people side by side. On the left: On the right:"])


@pytest.fixture(scope="session")
def tiny_lm():
    """A tiny random Llama with a byte-level BPE tokenizer and a chat template: ``(model, tokenizer)``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from tests.fakes.tiny_vlm import train_tokenizer

    tokenizer = train_tokenizer(["<pad>", "<s>", "</s>", "<|user|>", "<|assistant|>", "<|system|>", "<|end|>"],
                                bos="<s>", eos="</s>", pad="<pad>",
                                extra_text=["Who enjoys cooking? deaf person blind person man woman"])
    tokenizer.chat_template = (
        "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                         pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id)
    return LlamaForCausalLM(config).eval(), tokenizer
