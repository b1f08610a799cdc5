"""The ``openai`` chat backend: any chat-completions server (vLLM, SGLang, llama.cpp, Ollama, TGI,
OpenAI), async with bounded concurrency, per-call timeouts, retries with backoff and jitter, and
the structured-output and ``n`` fallbacks described in :mod:`vilbias.models.chat`.

Every backend of the process sends through one HTTP client (:class:`_Client`): one event loop on a
thread of its own and one keep-alive connection pool. The annotators of a run, the image
descriptions and the next run in the same process (a Space, a test) reuse the connections the
first one opened, so no backend pays for its own pool, loop and connection ramp. The backends
that send to one endpoint at once share one budget of requests in flight there (:class:`_Budget`):
several annotators asked together keep the server at its limit, never over it.

Why this module is long: the shared client and the endpoint budgets, the backend's request loop
and its retries and fallbacks (structured output, ``n``) are one path that a request takes, read
together.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import concurrent.futures
import contextlib
import email.utils
import json
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import replace
from typing import Any

from vilbias.models.chat import STRUCTURED_FIELDS, ChatRequest, ChatResult, OnResult, collect
from vilbias.models.kinds import GenerativeModel, LoadOptions, ModelKind, register_kind

logger = logging.getLogger(__name__)

RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
REJECTED_STATUS = {400, 422}
"""How a server says it does not take a request field: the request is retried once without
its structured-output fields (or, for ``n`` > 1, one sample per request)."""


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


STOP_WAIT_S = 1.0
"""How long a stopped :meth:`OpenAIBackend.chat` waits for its requests to be cancelled."""


class _Budget:
    """The requests in flight at one endpoint, shared by every backend of the process that sends to
    it: at most the largest ``concurrency`` among the backends sending now (each also stays within
    its own). Waiters are served first come, first served, so backends asked together interleave.
    Used on the client's loop only."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.limits: list[int] = []
        self._waiters: collections.deque[asyncio.Future] = collections.deque()

    @property
    def limit(self) -> int:
        return max(self.limits, default=1)

    def join(self, concurrency: int) -> None:
        self.limits.append(concurrency)
        self._wake()

    def leave(self, concurrency: int) -> None:
        self.limits.remove(concurrency)
        self._wake()

    async def __aenter__(self) -> None:
        if self.in_flight < self.limit and not self._waiters:
            self.in_flight += 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter  # granted: _wake counted it in flight
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                await self.__aexit__(None, None, None)  # granted, then cancelled: hand it on
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
            raise

    async def __aexit__(self, *exc: Any) -> None:
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        while self._waiters and self.in_flight < self.limit:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self.in_flight += 1
                waiter.set_result(None)


class _Client:
    """The process's HTTP client: an event loop on a daemon thread and one ``aiohttp`` session
    (a keep-alive pool without a global cap: each backend bounds its own requests in flight).
    Made on first use, again after a fork; closed at exit."""

    _lock = threading.Lock()
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None
    _pid: int | None = None
    _session: Any = None
    _budgets: dict[str, _Budget] = {}

    @classmethod
    def budget(cls, url: str) -> _Budget:
        """The in-flight budget of the endpoint ``url`` (on the client's loop only)."""
        if (budget := cls._budgets.get(url)) is None:
            budget = cls._budgets[url] = _Budget()
        return budget

    @classmethod
    def loop(cls) -> asyncio.AbstractEventLoop:
        with cls._lock:
            if cls._loop is None or cls._pid != os.getpid() or cls._thread is None or not cls._thread.is_alive():
                import aiohttp  # noqa: F401  (imported here, before the loop thread needs it)

                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="vilbias-http", daemon=True)
                thread.start()
                cls._loop, cls._thread, cls._pid, cls._session, cls._budgets = loop, thread, os.getpid(), None, {}
            return cls._loop

    @classmethod
    def session(cls) -> Any:
        """The shared session (on the client's loop only)."""
        if cls._session is None or cls._session.closed:
            import aiohttp

            cls._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        return cls._session

    @classmethod
    def run(cls, coro: Coroutine[Any, Any, Any], running: set[concurrent.futures.Future] | None = None) -> Any:
        """Run ``coro`` on the client's loop and wait for it. A stop (Ctrl-C, SIGTERM) or any
        error here cancels it: its requests end before this raises (within :data:`STOP_WAIT_S`).
        ``running`` holds the run meanwhile (another thread may cancel it: :meth:`OpenAIBackend.cancel`)."""
        loop = cls.loop()
        if threading.current_thread() is cls._thread:
            coro.close()
            raise RuntimeError("OpenAIBackend.chat was called from inside a result callback; await achat there")
        future = asyncio.run_coroutine_threadsafe(coro, loop)
        if running is not None:
            running.add(future)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            concurrent.futures.wait([future], timeout=STOP_WAIT_S)
            raise
        finally:
            if running is not None:
                running.discard(future)

    @classmethod
    def close(cls) -> None:
        with cls._lock:
            loop, session, cls._session = cls._loop, cls._session, None
            if loop is None or cls._pid != os.getpid() or not loop.is_running():
                return
        if session is not None and not session.closed:
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(session.close(), loop).result(STOP_WAIT_S)
        loop.call_soon_threadsafe(loop.stop)


atexit.register(_Client.close)


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
        self.n_rejected: str | None = None
        """Why the server does not draw ``n`` > 1 samples per request (its rejection, or its answer
        with fewer choices), once known: later samples are asked one request each."""
        self._n_accepted = False
        self._probe: asyncio.Lock | None = None
        self._slots: asyncio.Semaphore | None = None
        self._headers: dict[str, str] = {}
        self._timeout: Any = None
        self._model_json = json.dumps(model).encode()
        self._encoded: dict[tuple[int, bool], tuple[Any, bytes]] = {}
        self._budget: _Budget | None = None
        self._state_loop: asyncio.AbstractEventLoop | None = None
        self._active = 0
        """This backend's chats running now (on the client's loop they share its slots)."""
        self._running: set[concurrent.futures.Future] = set()

    def __repr__(self) -> str:  # never show the key
        return f"OpenAIBackend(model={self.model!r}, url={self.url!r}, concurrency={self.concurrency})"

    def chat(self, requests: Iterable[ChatRequest], on_result: OnResult | None = None) -> list[ChatResult]:
        """Ask every request, ``concurrency`` in flight, through the process's shared HTTP client;
        ``on_result`` is called on the client's thread, as each result arrives."""
        return collect(requests, lambda reqs, cb: _Client.run(self._achat(reqs, cb), self._running), on_result)

    def cancel(self) -> None:
        """Cancel this backend's :meth:`chat` calls running now, from any thread (a stage that
        asks several backends at once, each from a thread of its own, stops them all this way):
        each raises ``CancelledError`` in its caller once its requests are cancelled."""
        for future in list(self._running):
            future.cancel()

    async def achat(self, requests: Iterable[ChatRequest], on_result: OnResult) -> None:
        """Async form of :meth:`chat` for callers already inside an event loop (a session of its
        own, closed at the end: the shared one belongs to the client's loop)."""
        import aiohttp

        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=self.concurrency)) as session:
            await self._achat(requests, on_result, session)

    async def _achat(self, requests: Iterable[ChatRequest], on_result: OnResult, session: Any = None) -> None:
        import aiohttp

        loop = asyncio.get_running_loop()
        if not (self._active and session is None and self._state_loop is loop):
            # The first chat of this backend now (chats running at once on the client's loop, as
            # a stage's phases are, share what follows: the backend's bound holds over them all).
            self._state_loop = loop if session is None else None
            self._headers = {"Content-Type": "application/json"}
            if self._api_key:
                self._headers["Authorization"] = f"Bearer {self._api_key}"
            self._timeout = aiohttp.ClientTimeout(total=self.timeout_s)
            # At most `concurrency` requests of this backend at the server (the pool is shared),
            # and at most the budget of the endpoint, shared by all the backends sending to it
            # from the client's loop (a session of the caller's own, achat, has one of its own).
            self._slots = asyncio.Semaphore(self.concurrency)
            self._budget = _Client.budget(self.url) if session is None else _Budget()
            # Requests for n > 1 samples go out at once (most servers take n). The first answer
            # that lacks samples finds out, under this lock, whether the server takes n; until
            # then the requests in flight with n (at most `concurrency`) are not wasted: a refusal
            # costs the server no prefill, and a server that ignores n answers one sample, which
            # is kept.
            self._probe = asyncio.Lock()
        session = session or _Client.session()
        budget = self._budget
        assert budget is not None
        source = enumerate(requests)

        async def worker() -> None:
            # Workers pull from one shared iterator: at most `concurrency` requests are
            # materialised and in flight, whatever the iterable's length.
            for index, request in source:
                stored = on_result(index, await self._call(session, request))
                if stored is not None:
                    # The caller stores results in groups and has too many awaiting storage
                    # (the annotate stage: past `concurrency` uncommitted requests' results;
                    # below that it returns None and the worker goes on at once): this worker
                    # takes no new request until the group it is handed is stored.
                    await stored

        self._active += 1
        budget.join(self.concurrency)
        workers = [asyncio.ensure_future(worker()) for _ in range(self.concurrency)]
        try:
            await asyncio.gather(*workers)
        finally:  # one worker failed or the run was cancelled: the others stop too
            for w in workers:
                w.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            budget.leave(self.concurrency)
            self._active -= 1

    def _body(self, request: ChatRequest, *, plain: bool = False) -> bytes:
        """The JSON body ``{"model", "messages", **params, "n"}``; ``plain`` leaves out the
        structured-output fields. Message lists and parameter dicts are encoded once per object:
        requests of one item share its messages, and the answer schema in the parameters is the
        largest part of a body, so a run encodes it once per prompt and sample, not per call."""
        messages = self._encode(request.messages, False, json.dumps)
        params = self._encode(request.params, plain, lambda p: self._params_json(p, plain))
        n = b', "n": %d' % request.n if request.n > 1 else b""
        return b'{"model": ' + self._model_json + b', "messages": ' + messages + params + n + b"}"

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
        if request.n == 1:
            return (await self._ask(session, request))[0]
        if self.n_rejected is not None:
            return await self._one_by_one(session, request, [])
        result, status = await self._ask(session, request)
        got = list(result.samples) or ([result] if _answered(result) else [])
        if len(got) >= request.n:
            self._n_accepted = True
            return result
        if self._n_accepted:
            return result  # the server takes n: what is missing failed for a reason of its own
        assert self._probe is not None
        async with self._probe:  # one request finds out why; the others wait for its finding
            if self.n_rejected is None and not self._n_accepted:
                return await self._learn_n(session, request, result, status, got)
        if self.n_rejected is not None:
            return await self._one_by_one(session, request, got)
        return result

    async def _learn_n(self, session: Any, request: ChatRequest, result: ChatResult, status: int | None, got: list[ChatResult]) -> ChatResult:
        """Learn from an answer to a request for ``n`` samples that lacks some whether the server
        takes ``n``: a rejection (when one sample alone is answered) or fewer choices say it does
        not; then the samples still missing are asked one request each, and so are all later
        ones."""
        if status in REJECTED_STATUS:
            # Whether n was what the server refused shows when one sample alone is answered.
            first, _ = await self._ask(session, request.sample(0))
            if not _answered(first):
                return result
            reason, got = result.error, [first]
        elif got:
            reason = f"asked for n={request.n}, the server returned {len(got)} choice(s)"
        else:
            return result  # failed for another reason (timeouts, 5xx): nothing learnt
        logger.warning("%s does not take n > 1 (%s); asking one sample per request", self.url, reason)
        self.n_rejected = reason
        return await self._one_by_one(session, request, got)

    async def _one_by_one(self, session: Any, request: ChatRequest, got: list[ChatResult]) -> ChatResult:
        """The samples of ``request`` not in ``got``, one request each (``seed + i``)."""
        rest = await asyncio.gather(*(self._ask(session, request.sample(i)) for i in range(len(got), request.n)))
        samples = [replace(r, sampling_fallback=self.n_rejected) for r in [*got, *(r for r, _ in rest)]]
        return ChatResult.of_samples(samples)

    async def _ask(self, session: Any, request: ChatRequest) -> tuple[ChatResult, int | None]:
        """One request (its ``n`` samples), with the structured-output fallback; the result and
        the HTTP status of the request as sent."""
        if not any(k in request.params or k in self.params for k in STRUCTURED_FIELDS):
            return await self._post(session, self._body(request), request.n)
        if self.structured_rejected is not None:
            return await self._post(session, self._body(request, plain=True), request.n, {"structured": False, "fallback": self.structured_rejected})
        result, status = await self._post(session, self._body(request), request.n, {"structured": True})
        if status not in REJECTED_STATUS:
            return result, status
        # The server refused the request: if it answers without the structured-output fields,
        # they were what it refused. Then the answer is parsed strictly, and the backend stops
        # sending them.
        retry, _ = await self._post(session, self._body(request, plain=True), request.n, {"structured": False, "fallback": result.error})
        if not _answered(retry):
            return result, status
        if self.structured_rejected is None:
            logger.warning("%s rejected structured output (%s); asking without it and parsing strictly", self.url, result.error)
            self.structured_rejected = result.error
        return _each(retry, attempts=result.attempts + retry.attempts, latency_s=result.latency_s + retry.latency_s), 200

    async def _post(self, session: Any, data: bytes, n: int = 1, marks: dict[str, Any] | None = None) -> tuple[ChatResult, int | None]:
        """One request with retries; returns the result and the last HTTP status (None when no
        response came). ``marks`` are fields of each answer it gets (``structured``, ``fallback``)."""
        import aiohttp

        start = time.perf_counter()
        error = "not attempted"
        attempt = 0
        status: int | None = None
        for attempt in range(self.max_retries + 1):
            wait: float | None = None
            status = None
            try:
                async with self._slots, self._budget, session.post(self.url, data=data, headers=self._headers, timeout=self._timeout) as response:
                    body = await response.read()
                    status, retry_after = response.status, response.headers.get("Retry-After")
            except asyncio.TimeoutError:
                error = f"timeout after {self.timeout_s}s"
            except aiohttp.ClientError as e:  # refused, reset, dropped mid-response
                error = f"connection error: {type(e).__name__}: {e}"
            else:
                if status == 200:
                    return self._parse(body, start, attempt + 1, n, marks or {}), status
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
    def _parse(body: bytes, start: float, attempts: int, n: int = 1, marks: dict[str, Any] | None = None) -> ChatResult:
        latency = time.perf_counter() - start
        try:
            choices = json.loads(body)["choices"]
            first = choices[0]
            if n > 1:
                choices = sorted(choices, key=lambda c: c.get("index", 0))[:n]
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as e:
            snippet = body[:200].decode("utf-8", "replace")
            return ChatResult(None, f"malformed response: {type(e).__name__}: {snippet}", latency, attempts)
        if n == 1:
            return _choice(first, latency, attempts, marks or {})
        # Each choice is its own sample: one malformed choice does not discard the others.
        return ChatResult.of_samples([_choice(c, latency, attempts, marks or {}) for c in choices])


def _choice(choice: Any, latency: float, attempts: int, marks: dict[str, Any]) -> ChatResult:
    """One choice of a chat completion as a result; an answer (or refusal) gets ``marks``."""
    try:
        message = choice["message"]
        content, refusal = message.get("content"), message.get("refusal")
    except (KeyError, TypeError, AttributeError) as e:
        return ChatResult(None, f"malformed response: {type(e).__name__} in a choice", latency, attempts)
    finish = choice.get("finish_reason")
    if isinstance(refusal, str) and refusal and not content:
        return ChatResult(None, f"refusal: {refusal}", latency, attempts, refusal=refusal, finish_reason=finish, **marks)
    if not isinstance(content, str):
        return ChatResult(None, f"malformed response: content is {type(content).__name__}", latency, attempts)
    return ChatResult(content, None, latency, attempts, finish_reason=finish, **marks)


def _answered(result: ChatResult) -> bool:
    """Did the server answer (some of) the request: text, a refusal, or several samples?"""
    return bool(result.samples) or result.text is not None or result.refusal is not None


def _each(result: ChatResult, **fields: Any) -> ChatResult:
    """``result`` with ``fields`` replaced, in it and in each of its samples."""
    if not result.samples:
        return replace(result, **fields)
    return ChatResult.of_samples([replace(r, **fields) for r in result.samples])


@register_kind
class OpenAIKind(ModelKind):
    """``openai:MODEL@URL`` — an OpenAI-compatible chat server (vLLM, TGI, Ollama, OpenAI): asked
    over HTTP, K samples in one request (``n``), structured answers by the server's JSON Schema
    support; it cannot score the labels' log-likelihoods."""

    name = "openai"
    prefix = "openai:"
    scores_label_likelihood = False
    remote = True

    @classmethod
    def parse(cls, text: str) -> dict[str, Any] | None:
        if not text.startswith(cls.prefix):
            return None
        model, sep, base_url = text[len(cls.prefix):].rpartition("@")
        if not sep or not model or not base_url.startswith(("http://", "https://")):
            raise ValueError(f"{text!r}: write an OpenAI-compatible endpoint as openai:<model>@<base_url>, "
                             "e.g. openai:Qwen/Qwen2.5-VL-7B-Instruct@http://localhost:8000/v1")
        return {"kind": cls.name, "model": model, "base_url": base_url}

    @classmethod
    def to_string(cls, spec) -> str:
        return f"{cls.prefix}{spec.model}@{spec.base_url}"

    @classmethod
    def validate(cls, spec) -> None:
        if not spec.base_url:
            raise ValueError(f"model {spec.model!r}: the openai kind needs base_url (e.g. http://localhost:8000/v1)")
        super().validate(spec)

    @classmethod
    def chat_backend(cls, spec) -> OpenAIBackend:
        # the key is read from the environment when the backend is made, never stored in the spec
        return OpenAIBackend(spec.model, spec.base_url, api_key=os.environ.get(spec.api_key_env or "OPENAI_API_KEY") or None,
                             params=dict(spec.params), concurrency=spec.concurrency, timeout_s=spec.timeout_s,
                             max_retries=spec.max_retries)

    @classmethod
    def load(cls, spec, options: LoadOptions) -> GenerativeModel:
        if options.concurrency is not None:
            spec = replace(spec, concurrency=options.concurrency)
        return GenerativeModel(cls.chat_backend(spec), name=spec.model, vision=True, kind=cls.name, params=options.params)
