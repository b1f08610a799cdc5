"""What ``vilbias ingest`` is told: :class:`IngestConfig` and its fetch settings.

Apart from the fetcher and the pipeline so that parsing the command line (and ``--help``) does not
import ``httpx``; :mod:`vilbias.ingest.net` and :mod:`vilbias.ingest.pipeline` re-export them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from vilbias import __version__
from vilbias.ingest.urls import is_http_url

DEFAULT_USER_AGENT = (
    f"vilbias/{__version__} (research crawler for the BiasCorpus dataset; "
    "+https://huggingface.co/datasets/vilbias/BiasCorpus)"
)

Resolver = Callable[[str], Sequence[str]]
"""Maps a host name to IP address strings. Tests inject one to serve many host names from
loopback without touching ``/etc/hosts``."""


@dataclass
class FetchSettings:
    """How the fetcher behaves. ``vilbias ingest`` takes these fields as flags (all but those
    marked ``cli: False``), with the help text below."""

    timeout: float = field(default=20.0, metadata={"help": "Seconds for connect and each read; a request gets 3x."})
    max_retries: int = field(default=3, metadata={"help": "In-run retries on 429/5xx/timeouts, with backoff and jitter."})
    backoff: float = field(
        default=0.5, metadata={"cli": False, "help": "First retry delay in seconds; doubles each retry, with +/-50% jitter."}
    )
    max_retry_after: float = field(
        default=60.0, metadata={"help": "Longest Retry-After honoured in-run; longer fails the item until the next run."}
    )
    per_host: int = field(default=4, metadata={"help": "Requests in flight per host."})
    concurrency: int = field(default=32, metadata={"help": "Requests in flight over all hosts."})
    rate: float = field(default=5.0, metadata={"help": "Request starts per second per host (0: unlimited)."})
    user_agent: str = field(default=DEFAULT_USER_AGENT, metadata={"help": "User-Agent header; keep it honest."})
    ignore_robots: bool = field(default=False, metadata={"help": "Do not obey robots.txt (only for sites you own)."})
    allow_private_addresses: bool = field(
        default=False,
        metadata={"help": "Allow fetching from loopback/private/link-local addresses (tests, intranets)."},
    )
    max_page_bytes: int = field(default=5 * 1024 * 1024, metadata={"cli": False, "help": "Size cap of pages and feeds."})
    max_image_bytes: int = field(default=25 * 1024 * 1024, metadata={"cli": False, "help": "Size cap of images."})
    resolver: Resolver | None = field(
        default=None, repr=False, metadata={"cli": False, "help": "Host name -> addresses hook (tests serve many hosts from loopback)."}
    )

    def validate(self) -> None:
        """Fail fast on settings no run can work with."""
        if self.per_host < 1 or self.concurrency < 1:
            raise ValueError("--per-host and --concurrency must be at least 1")
        if self.timeout <= 0 or self.max_retries < 0 or self.rate < 0:
            raise ValueError("--timeout must be positive, --max-retries and --rate non-negative")


@dataclass
class IngestConfig:
    """Settings of ``vilbias ingest``; every field is also a command-line flag, and so are
    ``fetch``'s (:class:`FetchSettings`: ``--timeout``, ``--per-host``, ``--allow-private-addresses`` ...)."""

    workdir: Path = field(metadata={"help": "Workdir to create or resume (articles.jsonl, images/, ingest_errors.jsonl). A non-empty folder that "
                                          "is no workdir is refused; files of yours beside a workdir's own are left alone."})
    feed: list[str] = field(default_factory=list, metadata={"help": "Feed URL (RSS/Atom, Google News RSS); repeatable."})
    feeds_file: Path | None = field(default=None, metadata={"help": "File with one feed URL per line (# comments allowed)."})
    max_items: int | None = field(
        default=None, metadata={"help": "Stop once the workdir holds this many articles (counts earlier runs)."}
    )
    min_sentences: int = field(default=20, metadata={"help": "Drop articles with fewer sentences (paper: 20)."})
    max_attempts: int = field(
        default=3, metadata={"help": "Runs in which a transiently failing URL is tried before it is given up."}
    )
    workers: int = field(
        default=0,
        metadata={
            "help": "Processes for extraction and image checks (0: one background thread). "
            "Raise it when the CPU, not the network, limits the run."
        },
    )
    progress: bool = field(default=True, metadata={"help": "Progress bars on stderr: on unless --no-progress is given."})
    fetch: FetchSettings = field(
        default_factory=FetchSettings,
        # Its fields are flags of their own: `vilbias ingest` parses FetchSettings beside this config.
        metadata={"cli": False, "help": "Fetching: safety, politeness, retries."},
    )

    def feed_urls(self) -> list[str]:
        urls = list(self.feed)
        if self.feeds_file is not None:
            path = Path(self.feeds_file)
            if not path.is_file():
                raise FileNotFoundError(f"--feeds-file {path} does not exist")
            urls += [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
        return list(dict.fromkeys(urls))

    def validate(self) -> list[str]:
        """Check the settings before any work starts; returns the feed URLs."""
        urls = self.feed_urls()
        if not urls:
            raise ValueError("give at least one --feed URL or a --feeds-file")
        bad = [u for u in urls if not is_http_url(u)]
        if bad:
            raise ValueError(f"feed URLs must be absolute http(s) URLs: {', '.join(bad)}")
        if self.min_sentences < 1:
            raise ValueError("--min-sentences must be at least 1")
        if self.max_items is not None and self.max_items < 1:
            raise ValueError("--max-items must be at least 1")
        if self.max_attempts < 1:
            raise ValueError("--max-attempts must be at least 1")
        self.fetch.validate()
        return urls
