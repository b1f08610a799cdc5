"""What ``--model`` and ``--judge`` name, loaded as a classifier or a generative model.

A spec is one of:

- ``openai:<model>@<base_url>``: an OpenAI-compatible chat server (vLLM, TGI, Ollama, OpenAI);
  the key comes from ``OPENAI_API_KEY``. Images are sent as data-URL parts.
- ``smollm2``: the embedded SmolLM2-135M-Instruct (text only), an offline judge of last resort.
- a checkpoint folder or Hub id (with ``--revision``), recognised from its files:
  ``adapter_config.json`` → a PEFT adapter on a VLM (loaded with ``load_vlm``, base found from
  the adapter); ``config.json`` with ``model_type: vilbias-fusion`` → a fusion classifier;
  ``architectures`` ``*ForSequenceClassification`` → a text classifier; ``*ForCausalLM`` → a
  text LM; anything else → a VLM (``AutoModelForImageTextToText``).

Generative models answer through the chat backends of :mod:`vilbias.models.chat`;
classifiers predict labels directly and have no rationale to judge.
"""

from __future__ import annotations

import io
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from huggingface_hub import hf_hub_download
from huggingface_hub.errors import EntryNotFoundError
from PIL import Image

from vilbias.evaluate.data import Item, grey_image, looks_local
from vilbias.models.chat import TransformersBackend, load_backend
from vilbias.models.vlm import load_vlm
from vilbias.task import LABEL_NAMES

# torch and transformers (with vilbias.models.fusion, which is built on them) are imported inside
# the loaders that need them: naming an OpenAI-compatible server must not cost a torch import.

logger = logging.getLogger(__name__)


def parse_spec(spec: str) -> dict[str, Any]:
    """``openai:<model>@<base_url>`` → a backend spec; ``smollm2`` → the embedded LM; else a path/id.

    Raises:
        ValueError: for an ``openai:`` spec without ``@<base_url>``.
    """
    if spec.startswith("openai:"):
        model, sep, base_url = spec[len("openai:"):].rpartition("@")
        if not sep or not model or not base_url.startswith(("http://", "https://")):
            raise ValueError(f"{spec!r}: write an OpenAI-compatible endpoint as openai:<model>@<base_url>, "
                             "e.g. openai:Qwen/Qwen2.5-VL-7B-Instruct@http://localhost:8000/v1")
        return {"backend": "openai", "model": model, "base_url": base_url}
    if spec == "smollm2":
        return {"backend": "smollm2"}
    return {"backend": "checkpoint", "model": spec}


@dataclass
class GenerativeModel:
    """A model that answers in text (``Label: … / Reasoning: …``) through a chat backend."""

    backend: Any
    """Anything with ``chat(requests, on_result=None)`` (:class:`vilbias.models.chat.ChatBackend`)."""
    name: str
    vision: bool = True
    """Whether image parts reach the model (text-only backends drop them)."""
    kind: str = "generative"
    params: dict[str, Any] = field(default_factory=dict)
    """Sampling parameters sent with every request."""


@dataclass
class ClassifierModel:
    """A classifier: ``predict(items) -> class ids``, no rationale."""

    predict: Any
    """Callable ``list[Item] -> list[int]``."""
    name: str
    uses_text: bool = True
    uses_image: bool = False
    kind: str = "classifier"


Model = GenerativeModel | ClassifierModel


def check_spec(spec: str, what: str = "model") -> None:
    """Fail in one sentence, before anything is loaded, when ``spec`` is a path that does not exist.

    Raises:
        FileNotFoundError: the path is missing or not a folder.
        ValueError: a malformed ``openai:`` spec.
    """
    if parse_spec(spec)["backend"] == "checkpoint" and looks_local(spec) and not Path(spec).expanduser().is_dir():
        raise FileNotFoundError(f"{what} {spec} does not exist: give a checkpoint folder, a Hub id, "
                                "openai:<model>@<base_url> or smollm2")


def _config_file(name_or_path: str, filename: str, revision: str | None) -> dict | None:
    path = Path(name_or_path)
    if path.is_dir():
        f = path / filename
        return json.loads(f.read_text(encoding="utf-8")) if f.is_file() else None
    if looks_local(name_or_path):
        raise FileNotFoundError(f"{name_or_path} is neither a checkpoint folder nor a Hub model id")
    try:
        local = hf_hub_download(name_or_path, filename, revision=revision)
    except EntryNotFoundError:
        return None
    return json.loads(Path(local).read_text(encoding="utf-8"))


def _label_order(id2label: dict) -> list[int]:
    """Map a classifier's output index to our class id, by label name when it uses ours."""
    names = {int(k): str(v).lower().replace(" ", "_") for k, v in (id2label or {}).items()}
    if set(names.values()) == set(LABEL_NAMES):
        return [LABEL_NAMES.index(names[i]) for i in range(len(names))]
    return list(range(len(LABEL_NAMES)))


def _fusion_classifier(spec: str, revision: str | None) -> ClassifierModel:
    from vilbias.models.fusion import FusionForClassification, compose_text

    model = FusionForClassification.from_pretrained(spec, revision=revision)
    order = {name: LABEL_NAMES.index(name) for name in LABEL_NAMES}

    def predict(items: list[Item]) -> list[int]:
        out = []
        for item in items:
            image = None
            if model.config.uses_image:
                # The fusion head cannot run without an image: a removed image becomes uniform grey.
                image = Image.open(io.BytesIO(item.image if item.image is not None else grey_image())).convert("RGB")
            text = compose_text(item.headline, item.article_text) if model.config.uses_text else None
            out.append(order[model.predict(image=image, text=text)["label"]])
        return out

    return ClassifierModel(predict, name=spec, uses_text=model.config.uses_text, uses_image=model.config.uses_image)


def _text_classifier(spec: str, revision: str | None, batch_size: int) -> ClassifierModel:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from vilbias.models.fusion import compose_text

    tokenizer = AutoTokenizer.from_pretrained(spec, revision=revision)
    model = AutoModelForSequenceClassification.from_pretrained(spec, revision=revision).eval()
    order = _label_order(model.config.id2label)
    max_length = min(getattr(tokenizer, "model_max_length", 512) or 512, 512)

    def predict(items: list[Item]) -> list[int]:
        out = []
        for start in range(0, len(items), batch_size):
            batch = items[start:start + batch_size]
            inputs = tokenizer([compose_text(i.headline, i.article_text) for i in batch], truncation=True,
                               max_length=max_length, padding=True, return_tensors="pt").to(model.device)
            with torch.inference_mode():
                logits = model(**inputs).logits
            out.extend(order[int(j)] for j in logits.argmax(-1).tolist())
        return out

    return ClassifierModel(predict, name=spec, uses_text=True, uses_image=False)


def load_model(spec: str, *, revision: str | None = None, batch_size: int = 8, max_new_tokens: int = 256,
               load_in_4bit: bool = False, merge: bool = False, concurrency: int = 16,
               generative_only: bool = False) -> Model:
    """Load what ``spec`` names (see the module docstring).

    Args:
        spec: ``openai:<model>@<base_url>``, ``smollm2``, a checkpoint folder or a Hub id.
        revision: Hub revision of a checkpoint.
        batch_size: generation / classification batch size for local models.
        max_new_tokens: answer length budget.
        load_in_4bit: load a VLM base as 4-bit NF4 (as QLoRA trained it).
        merge: merge a LoRA adapter into its base before generating.
        concurrency: requests in flight for an OpenAI-compatible server.
        generative_only: refuse classifiers (the judge must write text).
    """
    params = {"temperature": 0.0, "max_tokens": max_new_tokens}
    parsed = parse_spec(spec)
    if parsed["backend"] == "openai":
        backend = load_backend({**parsed, "concurrency": concurrency})
        return GenerativeModel(backend, name=spec.rpartition("@")[0], vision=True, kind="openai", params=params)
    if parsed["backend"] == "smollm2":
        return GenerativeModel(load_backend({"backend": "smollm2", "batch_size": batch_size}), name="smollm2",
                               vision=False, kind="transformers-text", params=params)
    if _config_file(spec, "adapter_config.json", revision) is not None:
        return _vlm(spec, revision, batch_size, load_in_4bit, merge, params)
    config = _config_file(spec, "config.json", revision)
    if config is None:
        raise FileNotFoundError(f"{spec} has no config.json or adapter_config.json: not a model checkpoint")
    architectures = config.get("architectures") or []
    if config.get("model_type") == "vilbias-fusion" or any(a.endswith("ForSequenceClassification") for a in architectures):
        if generative_only:
            raise ValueError(f"{spec} is a classifier; the judge must be a generative model")
        if config.get("model_type") == "vilbias-fusion":
            return _fusion_classifier(spec, revision)
        return _text_classifier(spec, revision, batch_size)
    if any(a.endswith("ForCausalLM") for a in architectures):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(spec, revision=revision)
        model = AutoModelForCausalLM.from_pretrained(spec, revision=revision, dtype="auto").eval()
        backend = TransformersBackend(model, tokenizer, vision=False, params=params, batch_size=batch_size)
        return GenerativeModel(backend, name=spec, vision=False, kind="transformers-text", params=params)
    return _vlm(spec, revision, batch_size, load_in_4bit, merge, params)


def _vlm(spec, revision, batch_size, load_in_4bit, merge, params) -> GenerativeModel:

    model, processor = load_vlm(spec, revision=revision, load_in_4bit=load_in_4bit, merge=merge)
    backend = TransformersBackend(model, processor, vision=True, params=params, batch_size=batch_size)
    return GenerativeModel(backend, name=spec, vision=True, kind="transformers-vlm", params=params)
