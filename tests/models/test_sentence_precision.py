"""The sentence model's inference settings: the checkpoint's ``inference_precision`` decides how
``from_pretrained`` prepares the encoder, and a keyword asks for the exact float32 path."""

from __future__ import annotations

import pytest

TEXTS = ["Radical activists rammed through a disastrous, reckless scheme.", "The council approved the budget on Tuesday."]


@pytest.fixture(scope="module")
def folder():
    from vilbias.models.catalogue import shipped_sentence_model

    return shipped_sentence_model()


def test_float32_keyword_is_the_exact_path_and_int8_quantizes_every_encoder_linear(folder, tmp_path):
    import torch
    from torch import nn
    from transformers import AutoModel

    from vilbias.models.sentence_bias import SentenceBiasModel

    exact = AutoModel.from_pretrained(folder, inference_precision="float32")
    assert exact.config.inference_precision == "float32"
    assert torch.equal(exact.sentence_logits(TEXTS)[0], SentenceBiasModel.from_pretrained(folder).sentence_logits(TEXTS)[0])
    int8 = SentenceBiasModel.from_pretrained(folder, inference_precision="int8")
    quantized = torch.ao.nn.quantized.dynamic.Linear
    assert not any(isinstance(m, nn.Linear) for m in int8.bert.modules())
    assert sum(isinstance(m, quantized) for m in int8.bert.modules()) == sum(isinstance(m, nn.Linear) for m in exact.bert.modules())
    assert isinstance(int8.sentence_head[1], nn.Linear)  # the heads stay float32
    fast, slow = int8.sentence_logits(TEXTS)[0], exact.sentence_logits(TEXTS)[0]
    assert not torch.equal(fast, slow) and (fast - slow).abs().max() < 1.0
    assert fast.argmax(-1).tolist() == slow.argmax(-1).tolist() == [1, 0]
    # the setting is the checkpoint's: saved, it loads back quantized
    int8.config.save_pretrained(tmp_path)
    assert '"inference_precision": "int8"' in (tmp_path / "config.json").read_text()


def test_an_unknown_precision_is_one_line(folder):
    from vilbias.models.configs import SentenceBiasConfig

    with pytest.raises(ValueError, match="inference_precision must be one of .*'float32', 'int8'.*not 'fp8'"):
        SentenceBiasConfig(inference_precision="fp8")
