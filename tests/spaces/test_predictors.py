"""The Space's parts without the UI: calibration, rationale parsing, highlighting, model list,
rationale writers (a tiny real transformers model; a failing load), the VLM adapter path."""

from __future__ import annotations

import pytest
from PIL import Image
from vilbias.spaces.predictors import (
    MODELS_YAML,
    InputError,
    Item,
    ModelSpec,
    Prediction,
    Predictors,
    RationaleWriter,
    fit_temperature,
    highlight_spans,
    load_model_specs,
    parse_rationale,
    scale_probabilities,
)

from vilbias.task import Answer


def test_temperature_scaling():
    assert scale_probabilities([0.3, 0.7], 1.0) == pytest.approx([0.3, 0.7])
    sharper = scale_probabilities([0.45, 0.55], 0.25)
    assert sharper[1] > 0.55 and sum(sharper) == pytest.approx(1.0)
    # right but timid predictions -> T < 1; confident and half wrong -> T > 1
    timid = [[0.45, 0.55], [0.55, 0.45], [0.4, 0.6], [0.6, 0.4]]
    assert fit_temperature(timid, [1, 0, 1, 0]) < 0.5
    overconfident = [[0.01, 0.99], [0.99, 0.01], [0.02, 0.98], [0.97, 0.03]]
    assert fit_temperature(overconfident, [1, 1, 0, 0]) > 3
    with pytest.raises(ValueError):
        fit_temperature([[0.5, 0.5]], [])


def test_models_yaml_default_temperature_is_the_fitted_one():
    from vilbias.spaces.calibrate import validation_probabilities

    default = load_model_specs()[0]
    assert default.path == "offline-default" and default.kind == "fusion" and default.rationale == "smollm2"
    probabilities, labels = validation_probabilities()
    assert len(labels) == 7
    assert default.temperature == pytest.approx(fit_temperature(probabilities, labels), rel=0.02)


def test_model_list_errors(tmp_path):
    names = [s.name for s in load_model_specs(MODELS_YAML)]
    assert names[0] == "offline-default" and len(set(names)) == len(names)
    assert {s.kind for s in load_model_specs()} == {"fusion", "vlm"}
    bad = tmp_path / "m.yaml"
    bad.write_text("models:\n  - {name: a, title: A, kind: llm, path: x}\n")
    with pytest.raises(ValueError, match="kind 'llm'"):
        load_model_specs(bad)
    bad.write_text("models:\n  - {name: a, title: A, kind: vlm, path: x}\n  - {name: a, title: B, kind: vlm, path: y}\n")
    with pytest.raises(ValueError, match="unique"):
        load_model_specs(bad)
    bad.write_text("models: []\n")
    with pytest.raises(ValueError, match="lists no models"):
        load_model_specs(bad)


def test_parse_rationale_keeps_only_evidence_found_in_the_text():
    text = "Critics slammed the outrageous plan.\n\nOfficials said the plan costs 4 million."
    answer = ('Sure!\nReasoning: Loaded words.\nTechniques: Emotional Appeal and word choice\n'
              'Evidence: "slammed", "OUTRAGEOUS plan", "invented words", "plan costs"')
    reasoning, techniques, evidence = parse_rationale(answer, text)
    assert reasoning == "Loaded words."
    assert techniques == ["emotional_appeal", "word_choice"]
    assert evidence == ["slammed", "OUTRAGEOUS plan", "plan costs"]
    # an answer ignoring the format is kept whole, nothing invented
    assert parse_rationale("It seems fine to me.", text) == ("It seems fine to me.", [], [])


def test_highlight_spans_whole_words_and_merged_overlaps():
    text = "Containers: the container plan, the Container Plan."
    spans = highlight_spans(text, ["container", "container plan"])
    assert "".join(piece for piece, _ in spans) == text
    assert [p for p, c in spans if c] == ["container plan", "Container Plan"]
    assert highlight_spans("abc", []) == [("abc", None)]


def _item():
    return Item(Image.new("RGB", (64, 64), (10, 20, 30)), "Critics slammed the plan", "The plan was slammed by critics.")


def _prediction():
    return Prediction("biased", {"not_biased": 0.3, "biased": 0.7}, 0.7, "test", "Test model")


def test_rationale_writer_with_a_tiny_real_chat_model():
    """The real TransformersBackend path (a tiny random Llama instead of SmolLM2)."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    from tests.annotate.test_transformers_backend import CHAT_TEMPLATE
    from vilbias.models.chat import TransformersBackend

    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(["Reasoning: the plan was slammed by critics", "Techniques: Evidence: none biased"],
                            trainers.WordLevelTrainer(special_tokens=["<pad>", "<unk>", "<s>", "</s>"]))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>", bos_token="<s>", eos_token="</s>")
    tokenizer.chat_template = CHAT_TEMPLATE
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=1, max_position_embeddings=512, pad_token_id=0, bos_token_id=2, eos_token_id=3)).eval()
    writer = RationaleWriter(backend=TransformersBackend(model, tokenizer, params={"max_tokens": 8}), name="TinyLlama")
    assert writer.ready
    out = writer.explain(_item(), _prediction())
    assert out.rationale_error is None and isinstance(out.reasoning, str)
    assert out.rationale_by == "TinyLlama, prompted with the classifier's decision"


def test_rationale_writer_reports_a_failed_load():
    writer = RationaleWriter({"backend": "transformers", "model": "/nonexistent/model"}, name="Missing")
    writer.start()
    out = writer.explain(_item(), _prediction(), timeout=60)
    assert out.reasoning is None and out.rationale_error.startswith("Missing could not be loaded")


@pytest.fixture(scope="module")
def tiny_adapter(tmp_path_factory):
    """A LoRA adapter folder over a tiny random LLaVA-NeXT base (as `vilbias train sft` saves one)."""
    from peft import LoraConfig, get_peft_model

    from tests.fakes.tiny_vlm import build_tiny_vlm_objects

    root = tmp_path_factory.mktemp("vlm")
    model, processor = build_tiny_vlm_objects("llava_next")
    model.save_pretrained(root / "base")
    processor.save_pretrained(root / "base")
    model.config._name_or_path = str(root / "base")
    peft = get_peft_model(model, LoraConfig(r=4, target_modules=["q_proj", "v_proj"]))
    peft.peft_config["default"].base_model_name_or_path = str(root / "base")
    peft.save_pretrained(root / "adapter")
    processor.save_pretrained(root / "adapter")
    return root / "adapter"


def test_vlm_adapter_loads_generates_and_reports_no_label(tiny_adapter):
    spec = ModelSpec(name="tiny", title="Tiny VLM", kind="vlm", path=str(tiny_adapter), samples=2, max_new_tokens=6)
    predictor = Predictors([spec]).get("tiny")
    assert type(predictor.model).__name__.startswith("PeftModel")
    # a random model writes no "Label:" line: the user is told, no label is guessed
    with pytest.raises(InputError, match="gave no answer with a label"):
        predictor.predict(_item())


def test_vlm_confidence_is_the_vote_share(tiny_adapter, monkeypatch):
    import vilbias.spaces.predictors as P

    spec = ModelSpec(name="tiny", title="Tiny VLM", kind="vlm", path=str(tiny_adapter), samples=3)
    predictor = Predictors([spec]).get("tiny")
    calls = []

    def fake_generate(model, processor, items, samples, max_new_tokens):
        calls.append(samples)
        return [Answer("biased", 'Uses "slammed" twice. Word choice.', "raw"), Answer("not_biased", "Neutral.", "raw"),
                Answer("biased", "Loaded.", "raw")]

    monkeypatch.setattr(P, "_generate_vlm_gpu", fake_generate)
    out = predictor.predict(_item())
    assert calls == [3]
    assert (out.label, out.confidence) == ("biased", pytest.approx(2 / 3))
    assert out.probabilities == pytest.approx({"not_biased": 1 / 3, "biased": 2 / 3})
    assert out.confidence_kind == "vote share: 2 of 3 sampled answers"
    assert out.evidence == ["slammed"] and out.techniques == ["word_choice"]
    assert out.rationale_by == "Tiny VLM (its own answer)"


def test_unloadable_hub_model_gets_a_message():
    spec = ModelSpec(name="hub", title="Hub model", kind="fusion", path="vilbias/not-reachable-offline")
    with pytest.raises(InputError, match="could not be loaded .* offline default works"):
        Predictors([spec]).get("hub")
