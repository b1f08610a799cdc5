"""The model catalogue: one spec grammar (a string and its YAML form) and one loader per kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.openai_server import FakeOpenAIServer
from vilbias.models.catalogue import (
    KINDS,
    GenerativeModel,
    ModelSpec,
    check_spec,
    load_chat_backend,
    load_model,
)
from vilbias.models.chat import ChatRequest
from vilbias.models.chat_openai import OpenAIBackend


@pytest.mark.parametrize("text, yaml_form", [
    ("openai:Qwen/Qwen2.5-VL-7B@http://h:8000/v1", {"kind": "openai", "model": "Qwen/Qwen2.5-VL-7B", "base_url": "http://h:8000/v1"}),
    ("smollm2", {"kind": "smollm2"}),
    ("transformers:HuggingFaceTB/SmolLM2-135M-Instruct", {"backend": "transformers", "model": "HuggingFaceTB/SmolLM2-135M-Instruct"}),
    ("ORG/model", {"kind": "checkpoint", "model": "ORG/model"}),
    ("./outputs/fusion", {"model": "./outputs/fusion"}),
])
def test_a_string_and_its_yaml_form_name_the_same_model(text, yaml_form):
    assert ModelSpec.parse(text) == ModelSpec.parse(yaml_form)
    assert str(ModelSpec.parse(yaml_form)) == text  # the string form round-trips
    assert ModelSpec.parse(text).kind in KINDS


def test_malformed_specs_fail_in_one_sentence(tmp_path):
    with pytest.raises(ValueError, match="openai:<model>@<base_url>"):
        ModelSpec.parse("openai:gpt-4o")
    with pytest.raises(ValueError, match="openai kind needs base_url"):
        ModelSpec.parse({"kind": "openai", "model": "m"})
    with pytest.raises(ValueError, match="unknown model kind 'llamafile'"):
        ModelSpec.parse({"backend": "llamafile", "model": "m"})
    with pytest.raises(ValueError, match="unknown field.*temprature"):
        ModelSpec.parse({"kind": "smollm2", "temprature": 0.1})
    with pytest.raises(ValueError, match="SmolLM2 is text-only"):
        ModelSpec.parse({"kind": "smollm2", "vision": True})
    with pytest.raises(FileNotFoundError, match=r"model .*nope does not exist"):
        check_spec(str(tmp_path / "nope"))
    assert check_spec(str(tmp_path)).kind == "checkpoint"  # an existing folder passes the early check


def test_a_chat_server_loads_through_the_catalogue_with_its_yaml_options(monkeypatch):
    monkeypatch.setenv("MY_KEY", "secret-value")
    with FakeOpenAIServer(lambda body: "Label: biased\nReasoning: loaded words.") as server:
        backend = load_chat_backend({"kind": "openai", "model": "m", "base_url": server.base_url, "api_key_env": "MY_KEY",
                                     "params": {"temperature": 0.3}, "concurrency": 2})
        assert isinstance(backend, OpenAIBackend) and backend.concurrency == 2
        [result] = backend.chat([ChatRequest([{"role": "user", "content": "hi"}])])
        model = load_model(f"openai:m@{server.base_url}", max_new_tokens=7, concurrency=3)
        [answer] = model.backend.chat([ChatRequest([{"role": "user", "content": "hi"}], model.params)])
    assert result.text.startswith("Label: biased") and answer.text.startswith("Label: biased")
    assert server.requests[0]["temperature"] == 0.3
    assert server.auth_headers[0] == "Bearer secret-value"
    assert isinstance(model, GenerativeModel) and model.kind == "openai" and model.name == "m"
    assert model.backend.concurrency == 3 and server.requests[1]["max_tokens"] == 7


def test_a_checkpoint_kind_is_read_from_its_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a model checkpoint"):
        load_model(str(tmp_path))
    with pytest.raises(ValueError, match="a chat backend"):
        load_chat_backend(str(tmp_path))


def test_the_sentence_model_loads_from_its_folder_and_a_bad_path_is_one_sentence(tmp_path):
    import importlib.resources

    from vilbias.models.catalogue import load_sentence_model

    folder = importlib.resources.files("vilbias.training") / "default_model"
    model, source = load_sentence_model(str(folder))
    assert source == Path(str(folder)) and (source / "metrics.json").is_file()
    article = model.score_article(["The senator's reckless, disgraceful scheme will ruin families.", "The vote is on Tuesday."])
    assert 0.0 <= article.probability <= 1.0 and len(article.sentences) == 2
    with pytest.raises(FileNotFoundError, match=r"nope does not exist \(taken for a local folder\)"):
        load_sentence_model(str(tmp_path / "nope"))


def test_a_sentence_checkpoint_spec_can_ask_for_its_inference_path():
    import importlib.resources

    from vilbias.models.catalogue import load_predictor

    folder = str(importlib.resources.files("vilbias.training") / "default_model")
    spec = ModelSpec.parse(f"{folder}?inference_precision=float32&inference_runtime=torch")
    assert spec.model == folder and spec.inference == {"inference_precision": "float32", "inference_runtime": "torch"}
    assert ModelSpec.parse(str(spec)) == spec == ModelSpec.parse({"model": folder, "inference_precision": "float32",
                                                                  "inference_runtime": "torch"})
    assert load_predictor(spec).model.runtime.choice.path == "torch/float32"
    with pytest.raises(ValueError, match="inference_precision must be one of auto, float32, bfloat16, int8, not 'fp8'"):
        ModelSpec.parse(f"{folder}?inference_precision=fp8")
    with pytest.raises(ValueError, match="takes inference_precision and inference_runtime after '\\?'"):
        ModelSpec.parse(f"{folder}?precision=int8")


def test_an_evaluation_runs_a_sentence_checkpoint_in_float32_unless_its_spec_names_a_path(cpu_with):
    """``load_model(..., exact=True)`` (what ``vilbias evaluate`` loads with): float32 on a CPU
    whose auto path would be faster (AMX here), the spec's own path when it names one."""
    import importlib.resources

    from vilbias.models.catalogue import load_model

    cpu_with("avx512f", "avx512_vnni", "amx_bf16", "amx_int8")
    folder = str(importlib.resources.files("vilbias.training") / "default_model")
    assert load_model(folder).runtime.startswith("bfloat16 on PyTorch: this CPU has amx_bf16")
    exact = load_model(folder, exact=True)
    assert exact.runtime.startswith("float32 on ONNX Runtime: asked for (inference_precision)") and exact.name == folder
    assert load_model(f"{folder}?inference_precision=auto", exact=True).runtime.startswith("bfloat16 on PyTorch")
