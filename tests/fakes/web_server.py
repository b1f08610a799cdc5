"""A scriptable web server on 127.0.0.1 for offline tests of anything that fetches URLs.

One server answers for any number of host names: clients map the names to 127.0.0.1 with a
resolver hook (``web.resolver``) and the server routes on the ``Host`` header, so "20 hosts"
need no ``/etc/hosts`` changes and no extra addresses. It records every request and the
highest number of requests in flight per host, which is what politeness tests assert on.

Example::

    with WebServer(latency=0.1) as web:
        web.add("news-a.test", "/a.html", Page("<html>...</html>"))
        web.add("news-a.test", "/flaky", [Page(status=429, headers={"Retry-After": "1"}), Page("ok")])
        url = web.url("news-a.test", "/a.html")       # http://news-a.test:PORT/a.html
        ...                                           # fetch with resolver=web.resolver
        assert web.max_in_flight["news-a.test"] <= 4

A route's response is a :class:`Page`, a list of pages (served in turn, the last repeats), or a
callable ``(Request) -> Page``. Pages can delay, drip their body slowly, or drop the connection.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

ANY_HOST = "*"


@dataclass
class Page:
    body: bytes | str = b""
    status: int = 200
    content_type: str = "text/html; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    """Seconds to wait before answering (on top of the server's latency)."""
    drip: float = 0.0
    """Seconds between 1 KiB body chunks: a slow response."""
    drop: bool = False
    """Close the connection without answering."""
    drop_mid_body: bool = False
    """Send the headers and half the body, then close."""

    def raw_body(self) -> bytes:
        return self.body.encode("utf-8") if isinstance(self.body, str) else self.body


@dataclass
class Request:
    method: str
    host: str
    path: str
    """Without the query string; routes match on it."""
    target: str
    """The path with its query string, as requested."""
    headers: dict[str, str]
    body: bytes


Route = Page | list[Page] | Callable[[Request], Page]

_REASONS = {200: "OK", 301: "Moved Permanently", 302: "Found", 304: "Not Modified", 404: "Not Found",
            410: "Gone", 429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
            503: "Service Unavailable"}


class WebServer:
    """See the module docstring. Use as a context manager (start/stop)."""

    def __init__(self, latency: float = 0.0):
        self.latency = latency
        self.routes: dict[tuple[str, str], Route] = {}
        self.requests: list[Request] = []
        self.hits: Counter[tuple[str, str]] = Counter()
        self.in_flight: Counter[str] = Counter()
        self.max_in_flight: Counter[str] = Counter()
        self.starts: dict[str, list[float]] = defaultdict(list)
        self.port = 0
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.base_events.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    # -- routes -----------------------------------------------------------------------------
    def add(self, host: str, path: str, route: Route) -> str:
        """Serve ``route`` at ``path`` on ``host`` (``"*"``: any host); returns the URL."""
        self.routes[(host.lower(), path)] = route
        return self.url(host, path)

    def url(self, host: str, path: str = "/") -> str:
        return f"http://{host}:{self.port}{path}"

    def resolver(self, host: str) -> list[str]:
        """Resolver hook: every host name is this server (on loopback)."""
        return ["127.0.0.1"]

    def requests_to(self, host: str, path: str | None = None) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.host == host and (path is None or r.path == path)]

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> WebServer:
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            self._server = loop.run_until_complete(
                asyncio.start_server(self._handle, "127.0.0.1", 0, limit=1 << 20, backlog=512)
            )
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.close()

        self._thread = threading.Thread(target=run, name="fake-web", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("fake web server did not start")
        return self

    def stop(self) -> None:
        loop, server = self._loop, self._server
        if loop is None or server is None:
            return

        async def shutdown() -> None:
            server.close()
            for w in list(self._writers):
                w.close()
            others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in others:
                t.cancel()
            await asyncio.gather(*others, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shutdown(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        assert self._thread is not None
        self._thread.join(10)
        self._loop = self._server = None

    def __enter__(self) -> WebServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- serving -----------------------------------------------------------------------------
    def _pick(self, req: Request) -> Page:
        route = self.routes.get((req.host, req.path)) or self.routes.get((ANY_HOST, req.path))
        with self._lock:
            n = self.hits[(req.host, req.path)]
            self.hits[(req.host, req.path)] += 1
        if route is None:
            if req.path == "/robots.txt":
                return Page(status=404, body="no robots.txt", content_type="text/plain")
            return Page(status=404, body="not found", content_type="text/plain")
        if callable(route):
            return route(req)
        if isinstance(route, list):
            return route[min(n, len(route) - 1)]
        return route

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            while True:  # keep-alive: several requests per connection
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = (lines[0].split(" ", 2) + ["", ""])[:3]
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        k, v = line.split(":", 1)
                        headers[k.strip().lower()] = v.strip()
                body = b""
                if headers.get("content-length", "0").isdigit() and int(headers.get("content-length", "0")):
                    body = await reader.readexactly(int(headers["content-length"]))
                host = headers.get("host", "").rsplit(":", 1)[0].lower()
                target = target.split("#", 1)[0]
                req = Request(method, host, target.split("?", 1)[0], target, headers, body)
                with self._lock:
                    self.requests.append(req)
                    self.in_flight[host] += 1
                    self.max_in_flight[host] = max(self.max_in_flight[host], self.in_flight[host])
                    self.starts[host].append(time.monotonic())
                try:
                    keep = await self._respond(req, writer)
                finally:
                    with self._lock:
                        self.in_flight[host] -= 1
                if not keep or headers.get("connection", "").lower() == "close":
                    return
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _respond(self, req: Request, writer: asyncio.StreamWriter) -> bool:
        page = self._pick(req)
        wait = self.latency + page.delay
        if wait:
            await asyncio.sleep(wait)
        if page.drop:
            return False
        body = page.raw_body()
        headers = {"Content-Type": page.content_type, "Content-Length": str(len(body)), **page.headers}
        head = f"HTTP/1.1 {page.status} {_REASONS.get(page.status, 'Status')}\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
        try:
            writer.write(head.encode("latin-1"))
            if page.drop_mid_body:
                writer.write(body[: len(body) // 2])
                await writer.drain()
                return False
            if page.drip:
                for i in range(0, len(body), 1024):
                    writer.write(body[i : i + 1024])
                    await writer.drain()
                    await asyncio.sleep(page.drip)
            elif req.method != "HEAD":
                writer.write(body)
            await writer.drain()
        except ConnectionError:
            return False
        return True
