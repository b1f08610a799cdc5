"""Our checkpoints are transformers checkpoints: a PreTrainedModel with a registered config, so
``AutoModel.from_pretrained`` loads a folder or a Hub repo after ``import vilbias``, and a model
that is not there is one line, at once."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time

import pytest

from tests.fakes.hub_server import hub_server


def _tiny_sentence_model():
    import torch

    from vilbias.models.sentence_bias import SentenceBiasConfig, SentenceBiasModel

    torch.manual_seed(0)
    model = SentenceBiasModel(SentenceBiasConfig(trained_layers=[5], lora_r=4, lora_alpha=8, temperature=1.5))
    for name, p in model.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(p, std=0.05)  # B starts at zero; make the adapter do something
    return model.eval()


TEXTS = ["Critics slammed the reckless plan.", "The council met on Tuesday to discuss the budget."]


@pytest.mark.parametrize("order", ["vilbias first", "transformers first"])
def test_import_vilbias_registers_with_the_auto_classes_without_importing_torch(order):
    first, then = ("import vilbias", "import transformers.models.auto.modeling_auto") if order == "vilbias first" else \
        ("import transformers.models.auto.modeling_auto", "import vilbias")
    code = f"""
import sys
{first}
if "{first}" == "import vilbias":
    assert "torch" not in sys.modules and "transformers" not in sys.modules
{then}
from transformers import AutoConfig, AutoModel, AutoModelForSequenceClassification
from transformers.models.auto.configuration_auto import CONFIG_MAPPING
from transformers.models.auto.modeling_auto import MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING, MODEL_MAPPING
from vilbias.models.configs import CONFIGS
print({{kind: (CONFIG_MAPPING[c.model_type].__name__, MODEL_MAPPING[c].__name__) for kind, c in CONFIGS.items()}},
      MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING[CONFIGS["fusion"]].__name__)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
    assert out == ("{'sentence': ('SentenceBiasConfig', 'SentenceBiasModel'), 'fusion': ('FusionConfig', 'FusionForClassification')} "
                   "FusionForClassification")


def test_catalogue_reads_model_types_from_the_config_classes():
    from vilbias.models import catalogue
    from vilbias.models.configs import FusionConfig, SentenceBiasConfig

    assert catalogue.our_model_types() == {SentenceBiasConfig.model_type: "sentence", FusionConfig.model_type: "fusion"}


def test_sentence_model_round_trips_through_auto_model(tmp_path):
    import torch
    from safetensors import safe_open
    from transformers import AutoConfig, AutoModel

    from vilbias.models.sentence_bias import SentenceBiasModel

    model = _tiny_sentence_model()
    model.save_pretrained(tmp_path / "m")
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    assert config["model_type"] == "vilbias-sentence-bias" and config["architectures"] == ["SentenceBiasModel"]
    assert config["article_rule"] == {"statistic": "share", "threshold": 0.5, "slope": 10.0} and config["dtype"] == "float32"
    with safe_open(str(tmp_path / "m" / "model.safetensors"), "pt") as f:  # the adapter and heads only, in float16
        assert all(k.startswith(("lora.", "word_head.", "sentence_head.")) for k in f.keys())
        assert {f.get_tensor(k).dtype for k in f.keys()} == {torch.float16}
    assert type(AutoConfig.from_pretrained(tmp_path / "m")).__name__ == "SentenceBiasConfig"
    loaded, info = AutoModel.from_pretrained(tmp_path / "m", output_loading_info=True)
    assert isinstance(loaded, SentenceBiasModel) and not any(info.values()) and loaded.config.temperature == 1.5
    direct = SentenceBiasModel.from_pretrained(tmp_path / "m")
    assert torch.equal(loaded.sentence_logits(TEXTS)[0], direct.sentence_logits(TEXTS)[0])
    with torch.no_grad():
        enc = model.tokenizer(TEXTS, padding=True, return_tensors="pt")
        trained = model(attention_mask=enc["attention_mask"], input_ids=enc["input_ids"])["logits"]
    assert torch.allclose(loaded.sentence_logits(TEXTS)[0], trained, atol=1e-3)  # float16 on disk
    # a loaded model saves the same file again
    loaded.save_pretrained(tmp_path / "again")
    assert (tmp_path / "again" / "model.safetensors").read_bytes() == (tmp_path / "m" / "model.safetensors").read_bytes()


def test_fusion_classifier_round_trips_through_auto_model(tmp_path):
    import torch
    from transformers import AutoModel, AutoModelForSequenceClassification

    from vilbias.models.fusion import FusionConfig, FusionForClassification

    torch.manual_seed(0)
    model = FusionForClassification(FusionConfig(modality="text", image_encoder=None, hidden_size=8, freeze_text_encoder=True)).eval()
    model.save_pretrained(tmp_path / "f")
    assert (tmp_path / "f" / "model.safetensors").stat().st_size < 100_000  # the head: the frozen encoder comes from its source
    for auto in (AutoModel, AutoModelForSequenceClassification):
        loaded, info = auto.from_pretrained(tmp_path / "f", output_loading_info=True)
        assert isinstance(loaded, FusionForClassification) and not any(info.values())
        assert loaded.text_encoder is not None and not any(p.requires_grad for p in loaded.text_encoder.parameters())
        inputs = model.tokenize(TEXTS)
        with torch.no_grad():
            assert torch.allclose(loaded(**inputs).logits, model(**inputs).logits, atol=1e-6)
        assert loaded.predict(text=TEXTS[0])["probabilities"] == pytest.approx(model.predict(text=TEXTS[0])["probabilities"])


def test_fusion_classifier_with_trained_encoders_round_trips(tmp_path):
    """Trained encoders are saved and come back from the checkpoint (their architecture built
    from their sources' configs), buffers included."""
    import torch
    from PIL import Image
    from transformers import (
        AutoModel,
        AutoTokenizer,
        BertConfig,
        BertModel,
        CLIPImageProcessor,
        CLIPVisionConfig,
        CLIPVisionModel,
    )

    from vilbias.models.fusion import (
        MINILM,
        FusionConfig,
        FusionForClassification,
        resolve_model_path,
    )

    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(resolve_model_path(MINILM))
    BertModel(BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64)).save_pretrained(tmp_path / "bert")
    tokenizer.save_pretrained(tmp_path / "bert")
    CLIPVisionModel(CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                                     image_size=32, patch_size=8)).save_pretrained(tmp_path / "clip")
    CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}).save_pretrained(tmp_path / "clip")
    model = FusionForClassification(FusionConfig(text_encoder=str(tmp_path / "bert"), image_encoder=str(tmp_path / "clip"),
                                                 hidden_size=8, freeze_text_encoder=False, freeze_image_encoder=False)).eval()
    with torch.no_grad():  # move the encoders away from their sources
        for p in [*model.text_encoder.parameters(), *model.image_encoder.parameters()]:
            p.add_(torch.randn_like(p) * 0.01)
    model.save_pretrained(tmp_path / "f")
    loaded, info = AutoModel.from_pretrained(tmp_path / "f", output_loading_info=True)
    assert not any(info.values())
    image = Image.new("RGB", (40, 30), (200, 30, 30))
    inputs = {**model.tokenize(TEXTS[:1]), "pixel_values": model.image_encoder.preprocess([image])}
    with torch.no_grad():
        assert torch.allclose(loaded(**inputs).logits, model(**inputs).logits, atol=1e-6)


def test_push_to_hub_and_from_pretrained_repo_id(tmp_path, monkeypatch):
    import torch
    from transformers import AutoModel

    from vilbias.models.catalogue import load_model, load_sentence_model, predictor_kind
    from vilbias.models.fusion import FusionConfig, FusionForClassification

    sentence = _tiny_sentence_model()
    fusion = FusionForClassification(FusionConfig(modality="text", image_encoder=None, hidden_size=8, freeze_text_encoder=True)).eval()
    with hub_server(tmp_path / "hub") as hub:
        monkeypatch.setenv("HF_TOKEN", hub.token)
        sentence.push_to_hub("org/sentence-model")
        fusion.push_to_hub("org/fusion-model")
        from_hub = AutoModel.from_pretrained("org/sentence-model")
        with torch.no_grad():
            enc = sentence.tokenizer(TEXTS, padding=True, return_tensors="pt")
            trained = sentence(attention_mask=enc["attention_mask"], input_ids=enc["input_ids"])["logits"]
        assert torch.allclose(from_hub.sentence_logits(TEXTS)[0], trained, atol=1e-3)
        fusion_from_hub = AutoModel.from_pretrained("org/fusion-model")
        assert fusion_from_hub.predict(text=TEXTS[0])["probabilities"] == pytest.approx(fusion.predict(text=TEXTS[0])["probabilities"])
        assert predictor_kind("org/sentence-model") == "sentence" and predictor_kind("org/fusion-model") == "fusion"
        model, folder = load_sentence_model("org/sentence-model")
        assert (folder / "config.json").is_file() and model.config.lora_r == 4
        assert load_model("org/fusion-model").kind == "classifier"
        with pytest.raises(FileNotFoundError, match="org/missing was taken for a Hub model id and there is no such model"):
            load_model("org/missing")


def test_a_model_that_is_not_there_is_one_line_at_once(tmp_path, monkeypatch, caplog):
    from vilbias.models.catalogue import check_spec, load_model, load_sentence_model

    monkeypatch.chdir(tmp_path)
    (tmp_path / "outputs").mkdir()
    for name in ("outputs/does-not-exist", "./nope", "../nope", "~/surely-not-there", str(tmp_path / "nope")):
        for load in (load_model, lambda n: load_sentence_model(n)[0], check_spec):
            with pytest.raises(FileNotFoundError, match=r"does not exist \(taken for a local folder\)") as e:
                load(name)
            assert "\n" not in str(e.value)
    # a Hub id while the Hub cannot be reached: one line, no retries
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", False)
    monkeypatch.setattr("huggingface_hub.constants.ENDPOINT", "http://127.0.0.1:9")  # nothing listens on the discard port
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path / "cache"))
    caplog.set_level(logging.INFO)
    started = time.perf_counter()
    with pytest.raises(FileNotFoundError, match="org/not-cached was taken for a Hub model id, the Hub at http://127.0.0.1:9 "
                                                "cannot be reached") as e:
        load_model("org/not-cached")
    assert time.perf_counter() - started < 3 and "\n" not in str(e.value)
    assert not [r for r in caplog.records if r.name.startswith("huggingface_hub")]  # no retry log
    # offline, a Hub id that is not cached is one line too
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    with pytest.raises(FileNotFoundError, match="HF_HUB_OFFLINE is set and the cache does not hold it"):
        load_model("org/not-cached")
