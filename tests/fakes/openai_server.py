"""An OpenAI-compatible chat-completions server on 127.0.0.1, for tests and benchmarks.

It speaks real HTTP/1.1 (keep-alive, Content-Length) on an ephemeral port from a background
thread running its own asyncio loop, so it serves hundreds of concurrent requests::

    with FakeOpenAIServer(responder=lambda body: '{"label": "biased"}', latency_s=0.05) as server:
        server.base_url          # http://127.0.0.1:PORT/v1
        server.fail_next("429", retry_after=1)
        ...
        server.requests          # the JSON bodies received (record=True)

``responder(body) -> str`` gives the assistant's text for a request body (a dict). Faults are
queued with :meth:`fail_next` and served to the next requests in arrival order:

- ``"429"``: Too Many Requests with ``Retry-After`` (seconds);
- ``"500"``: Internal Server Error;
- ``"slow"``: answers only after ``delay_s`` (longer than the client's timeout);
- ``"drop"``: closes the connection without answering;
- ``"malformed"``: 200 with a body that is not JSON;
- ``"400"``: Bad Request (not worth retrying).

``GET /v1/models`` lists the one model. ``Authorization`` headers are recorded in
``auth_headers`` so tests can check the key was sent.

``n`` is served the way vLLM serves it: one request, ``n`` choices (``index`` 0..n-1, the
responder asked once per choice), the prompt counted once in ``usage.prompt_tokens``.
``n_support="refuse"`` answers a request for ``n`` > 1 with a 400 (as servers without it do);
``"ignore"`` answers it with one choice (as llama.cpp's server and Ollama do).

The server counts its work: ``count`` requests, ``prompt_tokens`` prefilled (each answered
request prefills its prompt once, whatever its ``n``; no prefix cache), ``choices`` generated,
and ``distinct_prompt_tokens``, the least a server must prefill (each distinct model and prompt
once). A token is a whitespace-separated word of the messages' text, and an image is
:data:`IMAGE_TOKENS` tokens. ``GET /v1/stats`` returns these counts (for a server in another
process), with ``answered``, the chat requests it answered, and ``service_s``, the seconds they took in all.

``latency_s`` is the time from a request's arrival to its answer, the server's own work
(parsing, counting, the responder) included, as a real server's latency includes its own.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import selectors
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

IMAGE_TOKENS = 576
"""Prompt tokens an image counts for (LLaVA-1.5's 24 × 24 patches; servers vary)."""
N_SUPPORT = ("full", "refuse", "ignore")


def prompt_tokens(messages: list[dict[str, Any]]) -> int:
    """The fake's token count of a prompt: words of its text, :data:`IMAGE_TOKENS` per image."""
    tokens = 0
    for m in messages:
        content = m.get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for part in parts:
            if part.get("type") == "text":
                tokens += len(part["text"].split())
            elif part.get("type") == "image_url":
                tokens += IMAGE_TOKENS
    return tokens


def echo_label_responder(body: dict[str, Any]) -> str:
    """A default responder: always a valid 'not biased' answer."""
    return json.dumps({"techniques": {}, "tone": "Neutral", "label": "not biased", "rationale": "Plain reporting."})


class FakeOpenAIServer:
    def __init__(
        self,
        responder: Callable[[dict[str, Any]], str] = echo_label_responder,
        *,
        latency_s: float = 0.0,
        record: bool = True,
        model: str = "fake-model",
        n_support: str = "full",
    ):
        if n_support not in N_SUPPORT:
            raise ValueError(f"n_support must be one of {N_SUPPORT}")
        self.responder = responder
        self.n_support = n_support
        self.latency_s = latency_s
        self.record = record
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.auth_headers: list[str | None] = []
        self.count = 0
        self.prompt_tokens = 0
        self.distinct_prompt_tokens = 0
        self.choices = 0
        self.service_s = 0.0
        self.in_flight = self.peak_in_flight = 0
        """Requests being answered now, and the most at once (what a client's concurrency bound keeps)."""
        self.answered = 0
        self._prompts_seen: set[bytes] = set()
        self.faults_served: list[str] = []
        self._faults: deque[tuple[str, dict[str, Any]]] = deque()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self.port = 0

    def stats(self) -> dict[str, int]:
        """The server's work so far (see the module docstring)."""
        with self._lock:
            return {"requests": self.count, "prompt_tokens": self.prompt_tokens, "choices": self.choices,
                    "distinct_prompt_tokens": self.distinct_prompt_tokens}

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def fail_next(self, kind: str, n: int = 1, **options: Any) -> None:
        """Serve fault ``kind`` to the next ``n`` chat requests (see the module docstring)."""
        if kind not in ("400", "429", "500", "slow", "drop", "malformed"):
            raise ValueError(f"unknown fault {kind!r}")
        with self._lock:
            self._faults.extend([(kind, options)] * n)

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> FakeOpenAIServer:
        self._thread = threading.Thread(target=self._serve, name="fake-openai", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("fake OpenAI server did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._loop.is_running():
            asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(10)
        if self._thread is not None:
            self._thread.join(10)

    async def _shutdown(self) -> None:
        # Close the listener, then end open keep-alive connections before the loop stops, so
        # no handler is left pending on a closed loop.
        assert self._server is not None
        self._server.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        asyncio.get_running_loop().call_soon(asyncio.get_running_loop().stop)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _serve(self) -> None:
        # select() takes its timeout in microseconds (epoll in milliseconds, rounded up): the
        # answer leaves at its latency, not up to a millisecond after it.
        self._loop = asyncio.SelectorEventLoop(selectors.SelectSelector())
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0, backlog=1024))
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            self._server.close()
            self._loop.close()

    # -- HTTP -----------------------------------------------------------------------------

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request_line = await reader.readline()
                if not request_line:
                    return
                method, path, _ = request_line.decode("latin-1").split(" ", 2)
                headers: dict[str, str] = {}
                while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
                    name, _, value = line.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0") or 0))
                keep = await self._respond(method, path, headers, body, writer)
                if not keep:
                    return
        except (ConnectionError, asyncio.IncompleteReadError, ValueError, asyncio.CancelledError):
            return
        finally:
            writer.close()

    async def _respond(self, method: str, path: str, headers: dict[str, str], body: bytes, writer: asyncio.StreamWriter) -> bool:
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            return await self._answer(method, path, headers, body, writer)
        finally:
            self.in_flight -= 1

    async def _answer(self, method: str, path: str, headers: dict[str, str], body: bytes, writer: asyncio.StreamWriter) -> bool:
        if method == "GET" and path.rstrip("/").endswith("/models"):
            self._send(writer, 200, json.dumps({"object": "list", "data": [{"id": self.model, "object": "model"}]}))
            return True
        if method == "GET" and path.rstrip("/").endswith("/stats"):
            with self._lock:
                timing = {"answered": self.answered, "service_s": self.service_s}
            self._send(writer, 200, json.dumps({**self.stats(), **timing}))
            return True
        if method != "POST" or not path.rstrip("/").endswith("/chat/completions"):
            self._send(writer, 404, json.dumps({"error": {"message": f"no route {method} {path}"}}))
            return True
        arrived = time.perf_counter()
        with self._lock:
            fault = self._faults.popleft() if self._faults else None
            self.count += 1
            if fault:
                self.faults_served.append(fault[0])
        try:
            payload = json.loads(body)
        except json.JSONDecodeError:
            self._send(writer, 400, json.dumps({"error": {"message": "body is not JSON"}}))
            return True
        if self.record:
            with self._lock:
                self.requests.append(payload)
                self.auth_headers.append(headers.get("authorization"))
        if fault is not None:
            kind, options = fault
            if kind == "429":
                self._send(writer, 429, json.dumps({"error": {"message": "rate limited"}}), {"Retry-After": str(options.get("retry_after", 1))})
                return True
            if kind == "400":
                self._send(writer, 400, json.dumps({"error": {"message": "bad request"}}))
                return True
            if kind == "500":
                self._send(writer, 500, json.dumps({"error": {"message": "boom"}}))
                return True
            if kind == "drop":
                return False
            if kind == "malformed":
                self._send(writer, 200, '{"choices": [ this is not json')
                return True
            if kind == "slow":
                await asyncio.sleep(options.get("delay_s", 5.0))
        n = int(payload.get("n") or 1)
        if n > 1 and self.n_support == "refuse":
            self._send(writer, 400, json.dumps({"error": {"message": "n > 1 is not supported"}}))
            return True
        if self.n_support == "ignore":
            n = 1
        tokens = prompt_tokens(payload.get("messages", []))
        prompt = hashlib.sha256(json.dumps([payload.get("model"), payload.get("messages")], sort_keys=True).encode()).digest()
        with self._lock:
            self.prompt_tokens += tokens  # one prefill, whatever n
            self.choices += n
            if prompt not in self._prompts_seen:
                self._prompts_seen.add(prompt)
                self.distinct_prompt_tokens += tokens
        contents = [self.responder(payload) for _ in range(n)]
        completion = sum(len(c.split()) for c in contents)
        answer = json.dumps(
            {
                "id": f"chatcmpl-{self.count}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": payload.get("model", self.model),
                "choices": [
                    {"index": i, "message": {"role": "assistant", "content": c}, "finish_reason": "stop"}
                    for i, c in enumerate(contents)
                ],
                "usage": {"prompt_tokens": tokens, "completion_tokens": completion, "total_tokens": tokens + completion},
            }
        )
        if self.latency_s:
            await asyncio.sleep(self.latency_s - (time.perf_counter() - arrived))
        self._send(writer, 200, answer)
        with self._lock:
            self.service_s += time.perf_counter() - arrived
            self.answered += 1
        return True

    @staticmethod
    def _send(writer: asyncio.StreamWriter, status: int, body: str, extra: dict[str, str] | None = None) -> None:
        data = body.encode("utf-8")
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 429: "Too Many Requests", 500: "Internal Server Error"}[status]
        head = f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
        for k, v in (extra or {}).items():
            head += f"{k}: {v}\r\n"
        writer.write(head.encode("latin-1") + b"\r\n" + data)


def main() -> None:
    """Serve until killed: ``python -m tests.fakes.openai_server [--latency S]``; prints the
    base URL on the first line (benchmarks run the server in its own process this way)."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each answer")
    parser.add_argument("--n-support", choices=N_SUPPORT, default="full", help="how requests for n > 1 samples are served")
    args = parser.parse_args()
    server = FakeOpenAIServer(latency_s=args.latency, record=False, n_support=args.n_support).start()
    print(server.base_url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
