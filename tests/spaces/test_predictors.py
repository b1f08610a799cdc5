"""The Space's parts without the UI: the model list, sentences and highlights, load failures,
the wording writer with a tiny real chat model, the VLM adapter path."""

from __future__ import annotations

import pytest
from PIL import Image
from vilbias.spaces.explain import Evidence, evidence_rationale
from vilbias.spaces.inputs import InputError, Item
from vilbias.spaces.predictors import (
    MODELS_YAML,
    PickerModel,
    Prediction,
    Predictors,
    item_sentences,
    load_failure_message,
    load_model_specs,
)
from vilbias.spaces.rationale import RationaleWriter, evidence_marks, highlight_spans

from vilbias.task import Answer


def test_model_list_and_its_errors(tmp_path):
    specs = load_model_specs(MODELS_YAML)
    default = specs[0]
    assert (default.name, default.kind, default.path, default.reads_image) == ("offline-default", "sentence", "offline-default", False)
    assert "does not look at the image" in default.image_note and default.source.endswith("default_model")
    # the picker's note states the shipped model's training data as its metrics do (it went stale once)
    import json
    from pathlib import Path

    metrics = json.loads((Path(default.source) / "metrics.json").read_text(encoding="utf-8"))
    assert f"{metrics['corpus']['rows_kept']:,} news sentences" in default.note
    assert {s.kind for s in specs} == {"sentence", "fusion", "vlm"} and all(s.reads_image for s in specs[1:])
    bad = tmp_path / "m.yaml"
    bad.write_text("models:\n  - {name: a, title: A, kind: llm, path: x}\n")
    with pytest.raises(ValueError, match="kind 'llm'"):
        load_model_specs(bad)
    bad.write_text("models:\n  - {name: a, title: A, kind: vlm, path: x}\n  - {name: a, title: B, kind: vlm, path: y}\n")
    with pytest.raises(ValueError, match="unique"):
        load_model_specs(bad)
    bad.write_text("models:\n  - {name: a, title: A, kind: sentence, path: x, rationale: gpt}\n")
    with pytest.raises(ValueError, match="rationale 'gpt'"):
        load_model_specs(bad)
    bad.write_text("models: []\n")
    with pytest.raises(ValueError, match="lists no models"):
        load_model_specs(bad)


def test_item_sentences_are_offsets_into_the_shown_text():
    item = Item(None, "Dr. Smith's plan", "The U.S. council met on Jan. 5. It voted 7 to 2.\n\nCritics were furious.")
    sentences = item_sentences(item)
    assert [s for s, _, _ in sentences] == ["Dr. Smith's plan", "The U.S. council met on Jan. 5.", "It voted 7 to 2.", "Critics were furious."]
    assert all(item.display_text[a:b] == s for s, a, b in sentences)


def test_highlights_mark_flagged_sentences_and_their_words_only():
    text = "Plain start. Critics slammed the reckless plan. Calm end."
    flagged = Evidence("Critics slammed the reckless plan.", 13, 47, 0.92, [("slammed", 21, 28, 0.8), ("reckless", 33, 41, 0.7)], True)
    calm = Evidence("Calm end.", 48, 57, 0.2, [("Calm", 48, 52, 0.6)], False)
    p = Prediction("biased", {"not_biased": 0.2, "biased": 0.8}, 0.8, "test", "Test", sentences=[flagged, calm])
    spans = highlight_spans(text, evidence_marks(text, p))
    assert "".join(piece for piece, _ in spans) == text
    assert [(piece, c) for piece, c in spans if c] == [("Critics ", "sentence ≥ 90%"), ("slammed", "marked word"), (" the ", "sentence ≥ 90%"),
                                                     ("reckless", "marked word"), (" plan.", "sentence ≥ 90%")]
    vlm = Prediction("biased", {}, 1.0, "test", "Test", evidence=["container"])
    quoted = highlight_spans("Containers: the container plan", evidence_marks("Containers: the container plan", vlm))
    assert [p for p, c in quoted if c] == ["container"]  # whole words only
    assert highlight_spans("abc", []) == [("abc", None)] and highlight_spans("", []) == []


def test_load_failures_are_told_apart(monkeypatch):
    import httpx
    from huggingface_hub.errors import RepositoryNotFoundError

    spec = PickerModel(name="hub", title="Hub model", kind="vlm", path="org/not-here")
    response = httpx.Response(404, request=httpx.Request("GET", "https://huggingface.co/api/models/org/not-here"))
    missing = RepositoryNotFoundError("404 Client Error. Repository Not Found for url", response=response)
    assert "not available on the Hugging Face Hub (org/not-here)" in load_failure_message(spec, missing)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert "cannot reach the Hub (no network)" in load_failure_message(spec, OSError("We couldn't connect"))
    monkeypatch.delenv("HF_HUB_OFFLINE")
    assert "cannot reach the Hub" in load_failure_message(spec, ConnectionError("Failed to establish a new connection"))
    assert "needs a GPU" in load_failure_message(spec, RuntimeError("CUDA is required"))
    local = PickerModel(name="local", title="Local", kind="fusion", path=".")
    assert "could not be loaded (ValueError)" in load_failure_message(local, ValueError("bad config"))


def test_unloadable_hub_model_gets_its_sentence():
    spec = PickerModel(name="hub", title="Hub model", kind="fusion", path="vilbias/not-reachable-offline")
    with pytest.raises(InputError, match=r"Hub model is on the Hugging Face Hub \(vilbias/not-reachable-offline\), and this server cannot reach"):
        Predictors([spec]).get("hub")


def _item():
    return Item(Image.new("RGB", (64, 64), (10, 20, 30)), "Critics slammed the plan", "The plan was slammed by critics.")


def _sentence_prediction():
    s = Evidence("Critics slammed the plan", 0, 24, 0.9, [("slammed", 8, 15, 0.8)], True)
    explanation = evidence_rationale("biased", 0.8, [s], "share", 1.0, 0.3)
    return Prediction("biased", {"not_biased": 0.2, "biased": 0.8}, 0.8, "test", "Test", reasoning=explanation.text,
                      sentences=[s], explanation=explanation, techniques=list(explanation.techniques))


def test_wording_writer_with_a_tiny_real_chat_model():
    """The real TransformersBackend path (a tiny random Llama instead of SmolLM2): its random
    answer cannot pass the checks, so the evidence-built explanation stays, with the reason."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    from tests.annotate.test_transformers_backend import CHAT_TEMPLATE
    from vilbias.models.chat_local import TransformersBackend

    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(["the plan was slammed by critics", "Verdict: biased not neutral evidence"],
                            trainers.WordLevelTrainer(special_tokens=["<pad>", "<unk>", "<s>", "</s>"]))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>", bos_token="<s>", eos_token="</s>")
    tokenizer.chat_template = CHAT_TEMPLATE
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=1, max_position_embeddings=512, pad_token_id=0, bos_token_id=2, eos_token_id=3)).eval()
    writer = RationaleWriter(backend=TransformersBackend(model, tokenizer, params={"max_tokens": 8}), name="TinyLlama")
    before = _sentence_prediction()
    out = writer.word(_item(), before)
    assert out.reasoning.startswith("**Biased** (80%)")  # unchanged
    assert out.rationale_note.startswith("TinyLlama's wording is not shown: its answer")


def test_wording_writer_reports_a_failed_load():
    writer = RationaleWriter({"backend": "transformers", "model": "/nonexistent/model"}, name="Missing")
    writer.start()
    out = writer.word(_item(), _sentence_prediction(), timeout=60)
    assert out.reasoning.startswith("**Biased**") and out.rationale_note.startswith("Missing's wording is not shown: Missing could not be loaded")


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
    spec = PickerModel(name="tiny", title="Tiny VLM", kind="vlm", path=str(tiny_adapter), samples=2, max_new_tokens=6)
    predictor = Predictors([spec]).get("tiny")
    assert type(predictor.model).__name__.startswith("PeftModel")
    # a random model writes no "Label:" line: the user is told, no label is guessed
    with pytest.raises(InputError, match="gave no answer with a label"):
        predictor.predict(_item())


def test_vlm_confidence_is_the_vote_share(tiny_adapter):
    spec = PickerModel(name="tiny", title="Tiny VLM", kind="vlm", path=str(tiny_adapter), samples=3)
    view = Predictors([spec]).get("tiny")
    calls = []

    def fake_generate(model, processor, items, samples, max_new_tokens):
        calls.append(samples)
        return [Answer("biased", 'Uses "slammed" twice. Word choice.', "raw"), Answer("not_biased", "Neutral.", "raw"),
                Answer("biased", "Loaded.", "raw")]

    import vilbias.spaces.predictors as P

    assert view.predictor.generate is P._generate_vlm_gpu  # the ZeroGPU-wrapped generation, defined at import
    view.predictor.inner.generate = fake_generate  # the Space's one-pass-at-a-time wrapper holds the predictor
    out = view.predict(_item())
    assert calls == [3]
    assert (out.label, out.confidence) == ("biased", pytest.approx(2 / 3))
    assert out.probabilities == pytest.approx({"not_biased": 1 / 3, "biased": 2 / 3})
    assert out.confidence_kind == "vote share: 2 of 3 sampled answers"
    assert out.evidence == ["slammed"] and out.techniques == ["word_choice"]
    assert out.rationale_by == "written by Tiny VLM (its own answer, shown as it is)"


def test_a_4bit_vlm_without_a_gpu_gets_its_sentence(tiny_adapter):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has the GPU a 4-bit model needs")
    spec = PickerModel(name="q", title="Quantised VLM", kind="vlm", path=str(tiny_adapter), load_in_4bit=True)
    with pytest.raises(InputError, match=r"^Quantised VLM is a 4-bit model and needs a GPU, which this server does not have\. "
                                         r"Pick the offline default, or run the Space on GPU hardware\.$"):
        Predictors([spec]).get("q")


def test_a_kind_added_to_the_catalogue_is_offered_and_shown_as_the_model_gives_it(monkeypatch):
    """A kind is added in one place (the catalogue's PREDICTORS); the picker accepts it and a kind
    without a view of its own shows the model's label, confidence and reasoning as they are."""
    from vilbias.models import catalogue
    from vilbias.models.predictors import ModelOutput

    class Constant:
        kind, model, reads_text, reads_image = "constant", "the model", True, False
        languages = ("any",)  # declared by the predictor itself: no checkpoint files to read

        def predict(self, item):
            return ModelOutput("biased", {"not_biased": 0.1, "biased": 0.9}, 0.9, "a constant", reads_image=False, reasoning="Always.")

    loaded = {}

    def load(spec, **options):
        loaded.update(spec=spec, options=options)
        return Constant()

    with pytest.raises(ValueError, match="kind 'constant'"):
        PickerModel(name="c", title="Constant", kind="constant", path="/models/constant")
    monkeypatch.setitem(catalogue.PREDICTORS, "constant", load)
    spec = PickerModel(name="c", title="Constant", kind="constant", path="/models/constant", revision="r1")
    view = Predictors([spec]).get("c")
    assert (loaded["spec"].model, loaded["spec"].revision, loaded["options"]) == ("/models/constant", "r1", {})
    out = view.predict(_item())
    assert view.model == "the model"
    assert (out.label, out.probabilities, out.confidence, out.confidence_kind) == ("biased", {"not_biased": 0.1, "biased": 0.9}, 0.9, "a constant")
    assert (out.reads_image, out.reasoning, out.rationale_by) == (False, "Always.", "written by Constant (its own answer, shown as it is)")
