"""Fetching the web politely and safely: one :class:`Fetcher` for feeds, pages, images.

What every request gets:

* **Safety.** Only ``http``/``https``. Every TCP connection, redirects included, goes through
  :class:`GuardedBackend`, which resolves the host itself, refuses loopback, private,
  link-local and other non-global addresses (unless ``allow_private_addresses``), and connects to the
  address it checked, so a DNS answer cannot change between the check and the connection.
  Proxies from the environment are ignored for the same reason.
* **Politeness.** An honest User-Agent; robots.txt obeyed (cached per origin); at most
  ``per_host`` requests in flight per host and at most ``rate`` request starts per second per
  host; a 429's ``Retry-After`` pauses the whole host, not just that request.
* **Robustness.** Timeouts on connect/read and an overall deadline per request (a server
  dripping bytes cannot hold a worker forever); retries with exponential backoff and jitter on
  429, 5xx, timeouts and dropped connections; a size cap enforced while streaming (on the
  decoded bytes, so a gzip bomb is cut off too).

Failures raise :class:`FetchFailed` with a short ``reason`` code (``http_404``, ``timeout``,
``blocked_address``, ...) and whether a later run may succeed (``retryable``).
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import ipaddress
import logging
import random
import socket
import ssl
import time
import urllib.robotparser
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import httpcore
import httpx

from vilbias.ingest.config import FetchSettings, Resolver
from vilbias.ingest.urls import host_of, is_http_url

logger = logging.getLogger(__name__)

ROBOTS_TOKEN = "vilbias"
MAX_REDIRECTS = 5


class FetchFailed(Exception):
    """A URL could not be fetched. ``reason`` is a short code, ``retryable`` says whether a
    later run may succeed (a timeout may, a 404 will not)."""

    def __init__(self, url: str, reason: str, detail: str = "", *, retryable: bool = False):
        super().__init__(f"{url}: {reason}" + (f" ({detail})" if detail else ""))
        self.url = url
        self.reason = reason
        self.detail = detail
        self.retryable = retryable


class BlockedAddress(Exception):
    """Raised inside the transport when a host resolves to an address we must not reach."""

    def __init__(self, host: str, address: str):
        super().__init__(f"{host} resolves to non-public address {address}")
        self.host = host
        self.address = address


def is_public_address(address: str) -> bool:
    """True when ``address`` is a globally routable unicast address."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """An httpcore network backend that resolves, checks, then connects to the checked address."""

    def __init__(self, *, allow_private_addresses: bool, resolver: Resolver | None = None):
        self._inner = httpcore.AnyIOBackend()
        self._allow_private_addresses = allow_private_addresses
        self._resolver = resolver

    async def _resolve(self, host: str, port: int) -> list[str]:
        try:
            ipaddress.ip_address(host)
            return [host]
        except ValueError:
            pass
        try:
            if self._resolver is not None:
                return list(self._resolver(host))
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as e:  # socket.gaierror: the name does not resolve
            raise httpcore.ConnectError(f"{host} does not resolve ({e})") from None
        return list(dict.fromkeys(info[4][0] for info in infos))

    async def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        addresses = await self._resolve(host, port)
        if not addresses:
            raise httpcore.ConnectError(f"{host} does not resolve")
        if not self._allow_private_addresses:
            # Refuse if *any* answer is private: picking the public one would still let a
            # hostile DNS server steer a later connection.
            for address in addresses:
                if not is_public_address(address):
                    raise BlockedAddress(host, address)
        last: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout=timeout, local_address=local_address, socket_options=socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as e:
                last = e
        assert last is not None
        raise last

    async def connect_unix_socket(self, path, timeout=None, socket_options=None):
        raise httpcore.ConnectError("unix sockets are not fetched")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class GuardedTransport(httpx.AsyncHTTPTransport):
    """httpx's transport with its connection pool built on :class:`GuardedBackend`."""

    def __init__(self, backend: GuardedBackend, ssl_context: ssl.SSLContext, *, max_connections: int):
        # httpx does not expose httpcore's network_backend; its transport only keeps the pool
        # it builds in __init__ (with its own SSL context and proxies from the environment,
        # both unwanted here), so the pool is built here instead of calling that __init__.
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=max_connections,
            max_keepalive_connections=max_connections,
            keepalive_expiry=5.0,
            network_backend=backend,
        )


@dataclass
class Response:
    url: str
    """The final URL, after redirects."""
    status: int
    headers: httpx.Headers
    content: bytes

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()

    @property
    def is_html(self) -> bool:
        """An HTML page, or a response that does not say what it is."""
        return self.content_type in ("text/html", "application/xhtml+xml", "")

    @property
    def charset(self) -> str | None:
        for part in self.headers.get("content-type", "").split(";")[1:]:
            k, _, v = part.partition("=")
            if k.strip().lower() == "charset" and v.strip():
                return v.strip().strip("\"'")
        return None


class _HostGate:
    """Per-host concurrency, start rate and Retry-After pause."""

    def __init__(self, per_host: int, rate: float):
        self.sem = asyncio.Semaphore(per_host)
        self.interval = 1.0 / rate if rate > 0 else 0.0
        self.next_start = 0.0
        self.paused_until = 0.0
        self.lock = asyncio.Lock()

    async def wait_turn(self) -> None:
        async with self.lock:
            now = time.monotonic()
            start = max(now, self.next_start, self.paused_until)
            self.next_start = start + self.interval
        if start > now:
            await asyncio.sleep(start - now)


def _retry_after_seconds(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """The process's TLS context (its settings never change; loading the CA certificates takes
    ~50 ms, which a Space paid on every article fetched by URL)."""
    return httpx.create_ssl_context()


class Fetcher:
    """An async HTTP client with the safety and politeness rules above. Use as a context manager.

    Example::

        async with Fetcher(FetchSettings(timeout=10)) as f:
            page = await f.get("https://example.com/news/a.html")
    """

    def __init__(self, settings: FetchSettings | None = None):
        self.settings = settings or FetchSettings()
        s = self.settings
        self._gates: dict[str, _HostGate] = {}
        self._global = asyncio.Semaphore(s.concurrency)
        self._robots: dict[str, urllib.robotparser.RobotFileParser | FetchFailed] = {}
        self._robots_locks: dict[str, asyncio.Lock] = {}
        self._backend = GuardedBackend(allow_private_addresses=s.allow_private_addresses, resolver=s.resolver)
        self._ssl_context = _ssl_context()
        # One client (connection pool) per host: httpcore scans every pooled connection each
        # time a request is queued or released, which with one shared pool of hundreds of
        # connections costs more CPU than the requests themselves.
        self._clients: dict[str, httpx.AsyncClient] = {}
        self.requests_made = 0
        self.in_flight: dict[int, tuple[str, float]] = {}
        """Requests under way: request number -> (URL, monotonic start), for a command's heartbeat."""

    def _client(self, host: str) -> httpx.AsyncClient:
        client = self._clients.get(host)
        if client is None:
            client = self._clients[host] = httpx.AsyncClient(
                transport=GuardedTransport(self._backend, self._ssl_context, max_connections=self.settings.per_host),
                timeout=httpx.Timeout(self.settings.timeout),
                headers={"User-Agent": self.settings.user_agent, "Accept-Encoding": "gzip, deflate"},
                follow_redirects=False,
                trust_env=False,
            )
        return client

    async def __aenter__(self) -> Fetcher:
        return self

    async def __aexit__(self, *exc) -> None:
        for client in self._clients.values():
            await client.aclose()

    def waiting(self) -> str:
        """The requests under way, in words: ``"2 requests, the longest to example.com for 47 s"`` ("" for none)."""
        now = time.monotonic()
        flights = sorted(self.in_flight.values(), key=lambda f: f[1])
        if not flights:
            return ""
        url, started = flights[0]
        many = f"{len(flights)} requests, the longest" if len(flights) > 1 else "1 request,"
        return f"{many} to {host_of(url)} for {now - started:.0f} s"

    def _gate(self, host: str) -> _HostGate:
        if host not in self._gates:
            self._gates[host] = _HostGate(self.settings.per_host, self.settings.rate)
        return self._gates[host]

    async def get(
        self, url: str, *, kind: str = "page", accept: str | None = None, form: dict[str, str] | None = None
    ) -> Response:
        """GET ``url`` (POST when ``form`` is given) following up to five redirects, each
        checked like the first request.

        Args:
            url: An absolute http(s) URL.
            kind: ``page``, ``feed`` or ``image``; picks the size cap.
            accept: The Accept header.
            form: Form fields to POST instead of a GET (Google News link resolution needs it).

        Raises:
            FetchFailed: with the reason the URL could not be fetched.
        """
        limit = self.settings.max_image_bytes if kind == "image" else self.settings.max_page_bytes
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            if not is_http_url(current):
                raise FetchFailed(current, "bad_scheme", "only http and https are fetched")
            if not self.settings.ignore_robots and not await self._allowed(current):
                raise FetchFailed(current, "robots_disallowed")
            response = await self._get_with_retries(current, limit, accept, form)
            if response.status in (301, 302, 303, 307, 308) and "location" in response.headers:
                current = urljoin(current, response.headers["location"])
                form = None  # a redirected POST is re-requested as a GET, as browsers do
                continue
            if response.status >= 400:
                raise FetchFailed(
                    current, f"http_{response.status}", retryable=response.status in (408, 425, 429) or response.status >= 500
                )
            return response
        raise FetchFailed(url, "too_many_redirects")

    async def _get_with_retries(
        self, url: str, limit: int, accept: str | None, form: dict[str, str] | None = None
    ) -> Response:
        s = self.settings
        host = host_of(url)
        gate = self._gate(host)
        attempt = 0
        while True:
            wait = None
            try:
                response = await self._get_once(url, limit, accept, gate, form)
            except FetchFailed as e:
                if not e.retryable or attempt >= s.max_retries:
                    raise
                logger.debug("retrying %s after %s", url, e.reason)
            else:
                if response.status not in (429, 500, 502, 503, 504) or attempt >= s.max_retries:
                    return response
                wait = _retry_after_seconds(response.headers.get("retry-after"))
                if wait is not None and wait > s.max_retry_after:
                    raise FetchFailed(url, f"http_{response.status}", f"Retry-After {wait:.0f}s", retryable=True)
                if wait is not None:
                    # The server told us when this host is ready again: hold all its requests.
                    gate.paused_until = max(gate.paused_until, time.monotonic() + wait)
                logger.debug("retrying %s after HTTP %d", url, response.status)
            if wait is None:
                wait = s.backoff * (2**attempt) * random.uniform(0.5, 1.5)
            attempt += 1
            await asyncio.sleep(wait)

    async def _get_once(
        self, url: str, limit: int, accept: str | None, gate: _HostGate, form: dict[str, str] | None
    ) -> Response:
        headers = {"Accept": accept} if accept else {}
        async with self._global, gate.sem:
            await gate.wait_turn()
            self.requests_made += 1
            number = self.requests_made
            self.in_flight[number] = (url, time.monotonic())
            try:
                return await asyncio.wait_for(self._stream(url, limit, headers, form), timeout=3 * self.settings.timeout)
            except BlockedAddress as e:
                raise FetchFailed(url, "blocked_address", str(e)) from None
            except (asyncio.TimeoutError, httpx.TimeoutException) as e:
                raise FetchFailed(url, "timeout", type(e).__name__, retryable=True) from None
            except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as e:
                raise FetchFailed(url, "connection_dropped", str(e)[:200], retryable=True) from None
            except httpx.ConnectError as e:
                raise FetchFailed(url, "connect_failed", str(e)[:200], retryable=True) from None
            except httpx.DecodingError as e:
                raise FetchFailed(url, "bad_encoding", str(e)[:200]) from None
            except (httpx.InvalidURL, httpx.UnsupportedProtocol, httpx.LocalProtocolError) as e:
                raise FetchFailed(url, "bad_url", str(e)[:200]) from None
            except httpx.HTTPError as e:  # anything else httpx reports about this one request
                raise FetchFailed(url, "request_failed", f"{type(e).__name__}: {e}"[:200]) from None
            finally:
                del self.in_flight[number]

    async def _stream(self, url: str, limit: int, headers: dict[str, str], form: dict[str, str] | None) -> Response:
        method = "POST" if form is not None else "GET"
        async with self._client(host_of(url)).stream(method, url, headers=headers, data=form) as r:
            declared = r.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > limit:
                raise FetchFailed(url, "too_large", f"Content-Length {declared} > {limit}")
            chunks: list[bytes] = []
            size = 0
            async for chunk in r.aiter_bytes():
                size += len(chunk)
                if size > limit:
                    raise FetchFailed(url, "too_large", f"more than {limit} bytes")
                chunks.append(chunk)
            return Response(url=str(r.url), status=r.status_code, headers=r.headers, content=b"".join(chunks))

    async def _allowed(self, url: str) -> bool:
        parts = urlsplit(url)
        origin = f"{parts.scheme.lower()}://{parts.netloc.lower()}"
        if origin not in self._robots:
            lock = self._robots_locks.setdefault(origin, asyncio.Lock())
            async with lock:
                if origin not in self._robots:
                    self._robots[origin] = await self._load_robots(origin)
        rules = self._robots[origin]
        if isinstance(rules, FetchFailed):
            raise FetchFailed(url, rules.reason, rules.detail, retryable=rules.retryable)
        return rules.can_fetch(ROBOTS_TOKEN, url)

    async def _load_robots(self, origin: str) -> urllib.robotparser.RobotFileParser | FetchFailed:
        parser = urllib.robotparser.RobotFileParser(origin + "/robots.txt")
        robots_url = origin + "/robots.txt"
        try:
            current = robots_url
            for _ in range(MAX_REDIRECTS + 1):
                response = await self._get_with_retries(current, 512 * 1024, "text/plain")
                if response.status in (301, 302, 303, 307, 308) and "location" in response.headers:
                    current = urljoin(current, response.headers["location"])
                    if not is_http_url(current):
                        break
                    continue
                break
        except FetchFailed as e:
            if e.reason in ("blocked_address", "connect_failed"):
                return e  # the host itself is refused or unreachable: that is the reason, not robots.txt
            # RFC 9309 §2.3.1.3: an unreachable robots.txt means "assume complete disallow".
            return FetchFailed(robots_url, "robots_unavailable", e.reason, retryable=True)
        if response.status >= 500:
            return FetchFailed(robots_url, "robots_unavailable", f"HTTP {response.status}", retryable=True)
        if response.status >= 400 or response.status in (301, 302, 303, 307, 308):
            parser.allow_all = True  # RFC 9309 §2.3.1.3: no robots.txt means no rules
            return parser
        parser.parse(response.content.decode("utf-8", "replace").splitlines())
        return parser
