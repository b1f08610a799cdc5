"""The ingest stage: feeds in, a workdir's ``articles.jsonl`` + ``images/`` out.

For every feed item: resolve a Google News link to the publisher, fetch the page, extract it,
filter it (multimedia, non-article, too few sentences, duplicate URL or text), then take the
first image candidate that downloads and validates, store its original bytes content-addressed
and append the :class:`~vilbias.workdir.Article` line. Everything not kept is one line of
``ingest_errors.jsonl`` with a reason code, so a re-run knows what was decided.

Resumption: a re-run skips every item whose feed link is already in ``articles.jsonl`` or has a
permanent reason in ``ingest_errors.jsonl``; items that failed for a transient reason (timeout,
5xx, 429, dropped connection) are tried again until they have failed ``max_attempts`` runs.
Records are whole appended lines and images are written atomically before the line that names
them, so a kill at any moment loses nothing written and leaves no half record.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import multiprocessing
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

from vilbias import stops
from vilbias.images import ImageInfo, validate_image
from vilbias.ingest.config import IngestConfig
from vilbias.ingest.extract import Extracted, extract_article
from vilbias.ingest.feeds import (
    FeedError,
    FeedItem,
    is_google_news_link,
    parse_feed,
    resolve_google_news,
)
from vilbias.ingest.item import PAGE_ACCEPT, NoUsableImage, first_usable_image
from vilbias.ingest.net import Fetcher, FetchFailed
from vilbias.ingest.text import content_hash, decode_html
from vilbias.ingest.urls import canonicalize_url, host_of
from vilbias.outputs import is_disk_full, writing
from vilbias.progress import heartbeat
from vilbias.progress_flag import follows_progress_flag
from vilbias.text import count_sentences
from vilbias.workdir import (
    ARTICLES,
    INGEST_ERRORS,
    Article,
    IngestError,
    append_jsonl,
    init_workdir,
    read_jsonl,
    store_image,
    unique_id_for,
    utcnow,
)

logger = logging.getLogger(__name__)

# Reasons an item is dropped for good: retrying cannot change the outcome.
FILTER_REASONS = (
    "too_few_sentences", "multimedia", "not_an_article", "not_html", "no_usable_image",
    "duplicate_url", "duplicate_content",
)


@dataclass
class IngestSummary:
    """What one run did. ``dropped`` counts filter decisions, ``failed`` fetch failures, both
    by reason code."""

    feeds: int = 0
    feeds_failed: int = 0
    items_seen: int = 0
    """Distinct item links over all feeds."""
    already_done: int = 0
    """Skipped: kept or decided in an earlier run."""
    given_up: int = 0
    """Skipped: failed transiently in ``max_attempts`` earlier runs."""
    fetched: int = 0
    """Article pages downloaded."""
    kept: int = 0
    languages: dict[str, int] = field(default_factory=dict)
    """Articles kept this run per language (ISO 639-1; ``unknown`` when too short to tell)."""
    dropped: dict[str, int] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)
    articles_total: int = 0
    """Articles in the workdir after the run."""
    feeds_seconds: float = 0.0
    """Wall time reading feeds."""
    items_seconds: float = 0.0
    """Wall time processing items."""

    def to_dict(self) -> dict:
        return asdict(self)

    def format(self) -> str:
        lines = [
            f"feeds            {self.feeds} ({self.feeds_failed} failed)",
            f"items seen       {self.items_seen}",
            f"already done     {self.already_done}",
            f"given up         {self.given_up}",
            f"pages fetched    {self.fetched}",
            f"kept             {self.kept} (workdir now holds {self.articles_total})",
            *([f"languages        {', '.join(f'{code} {n}' for code, n in sorted(self.languages.items(), key=lambda kv: (-kv[1], kv[0])))}"]
              if self.languages else []),
            f"time             {self.feeds_seconds:.1f}s feeds, {self.items_seconds:.1f}s items",
        ]
        for title, counts in (("dropped", self.dropped), ("failed", self.failed)):
            lines.append(f"{title:<16} {sum(counts.values())}")
            lines += [f"  {reason:<22} {n}" for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
        return "\n".join(lines)


class _Drop(Exception):
    """An item is not kept; ``reason`` says why, ``stage`` where it was decided."""

    def __init__(self, stage: str, reason: str, detail: str = "", *, retryable: bool = False):
        super().__init__(reason)
        self.stage, self.reason, self.detail, self.retryable = stage, reason, detail, retryable


def analyse_page(content: bytes, charset: str | None, url: str, min_sentences: int) -> tuple[Extracted, int]:
    """Decode, extract and count sentences (the CPU-bound part; runs in a worker)."""
    extracted = extract_article(decode_html(content, charset), url)
    return extracted, count_sentences(extracted.text, stop_at=min_sentences, language=extracted.language or "en")


def check_image(data: bytes) -> ImageInfo:
    """:func:`vilbias.images.validate_image`, at module level so a process pool can run it."""
    return validate_image(data)


def _interleave_hosts(items: list[FeedItem]) -> list[FeedItem]:
    """Order items round-robin over their hosts (feed order kept within a host).

    Feeds list one outlet's items together; processed in that order, every worker would wait
    on the same host's per-host limit while the other hosts sit idle.
    """
    by_host: dict[str, list[FeedItem]] = {}
    for item in items:
        by_host.setdefault(host_of(item.link), []).append(item)
    queues = list(by_host.values())
    out: list[FeedItem] = []
    for i in range(max((len(q) for q in queues), default=0)):
        out.extend(q[i] for q in queues if i < len(q))
    return out


class _State:
    """What the workdir already holds, loaded once at the start of a run."""

    def __init__(self, root: Path, max_attempts: int):
        self.urls: set[str] = set()
        self.hashes: set[str] = set()
        self.done_links: set[str] = set()
        self.retry_counts: Counter[str] = Counter()
        self.articles = 0
        for rec in read_jsonl(root / ARTICLES):
            if not rec.get("unique_id") or not rec.get("url"):
                continue
            self.articles += 1 if rec["url"] not in self.urls else 0
            self.urls.add(rec["url"])
            self.hashes.add(content_hash(rec.get("article_text", "")))
            for key in ("item_url", "source_url", "url"):
                if rec.get(key):
                    self.done_links.add(rec[key])
        for rec in read_jsonl(root / INGEST_ERRORS):
            if rec.get("stage") == "feed" or not rec.get("url"):
                continue
            if rec.get("retryable"):
                self.retry_counts[rec["url"]] += 1
            else:
                self.done_links.add(rec["url"])
        self.given_up = {u for u, n in self.retry_counts.items() if n >= max_attempts}


def ingest(config: IngestConfig) -> IngestSummary:
    """Run the ingest stage (see the module docstring); returns the run's summary.

    Example::

        from vilbias.ingest import IngestConfig, ingest
        summary = ingest(IngestConfig(workdir="work", feed=["https://example.com/rss.xml"]))
        print(summary.format())
    """
    return asyncio.run(ingest_async(config))


@follows_progress_flag
async def ingest_async(config: IngestConfig) -> IngestSummary:
    """:func:`ingest` for callers already inside an event loop (notebooks, async apps)."""
    feed_urls = config.validate()
    # The workdir is this run's alone until it returns (vilbias.outputs: its writer lock).
    with writing():
        return await _Run(config, feed_urls).run()


class _Run:
    def __init__(self, config: IngestConfig, feed_urls: list[str]):
        self.config = config
        self.feed_urls = feed_urls
        self.root = init_workdir(config.workdir)
        # An ingest that keeps nothing still leaves articles.jsonl: later stages tell an empty
        # workdir from one never ingested.
        (self.root / ARTICLES).touch()
        self.state = _State(self.root, config.max_attempts)
        self.summary = IngestSummary(feeds=len(feed_urls), articles_total=self.state.articles)
        self.claimed_urls: set[str] = set()
        self.claimed_hashes: set[str] = set()
        self.items_todo: int | None = None
        """Items this run processes (None while the feeds are read)."""
        self.items_done = 0

    def _executor(self) -> concurrent.futures.Executor:
        if self.config.workers > 0:
            # forkserver: forking this (threaded) process could copy a lock held by another
            # thread into a worker and hang it.
            return concurrent.futures.ProcessPoolExecutor(
                self.config.workers, mp_context=multiprocessing.get_context("forkserver"), initializer=stops.leave_to_parent
            )
        return concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="vilbias-ingest")

    async def run(self) -> IngestSummary:
        self.executor = self._executor()
        try:
            async with Fetcher(self.config.fetch) as fetcher:
                self.fetcher = fetcher
                # without progress bars, a line every few seconds says the run is alive and what it waits on
                with heartbeat(self._doing, enabled=not self.config.progress, log=logger):
                    t0 = time.monotonic()
                    items = await self._read_feeds()
                    t1 = time.monotonic()
                    self.summary.feeds_seconds = t1 - t0
                    await self._process_all(self._select(items))
                    self.summary.items_seconds = time.monotonic() - t1
        finally:
            self.executor.shutdown(wait=True, cancel_futures=True)
        self.summary.articles_total = self.state.articles
        # The caller shows the summary (the command prints it once); logged again it came twice.
        logger.debug("ingest done:\n%s", self.summary.format())
        return self.summary

    def _doing(self) -> str:
        """What the run has done and waits on, in one line (the heartbeat's)."""
        s = self.summary
        done = (f"{self.items_done} of {self.items_todo} items done, {s.kept} kept" if self.items_todo is not None
                else f"reading {s.feeds} feed{'s' if s.feeds != 1 else ''}")
        waiting = self.fetcher.waiting()
        return f"ingest: {done}" + (f"; waiting on {waiting}" if waiting else "")

    async def _process_all(self, todo: list[FeedItem]) -> None:
        self.items_todo = len(todo)
        if not todo:
            return
        bar = tqdm(total=len(todo), desc="articles", unit="item", disable=not self.config.progress)
        queue: asyncio.Queue[FeedItem] = asyncio.Queue()
        for item in todo:
            queue.put_nowait(item)
        # Enough workers to keep every host's slots busy; the fetcher enforces the limits.
        n_workers = min(len(todo), self.config.fetch.concurrency * 2)
        await asyncio.gather(*(self._worker(queue, bar) for _ in range(n_workers)))
        bar.close()

    async def _read_feeds(self) -> list[FeedItem]:
        bar = tqdm(total=len(self.feed_urls), desc="feeds", unit="feed", disable=not self.config.progress)

        async def one(url: str) -> list[FeedItem]:
            try:
                response = await self.fetcher.get(
                    url, kind="feed", accept="application/rss+xml, application/atom+xml, application/xml;q=0.9, */*;q=0.5"
                )
                return parse_feed(response.content, url, response.headers.get("content-type"))
            except (FetchFailed, FeedError) as e:
                reason = e.reason if isinstance(e, FetchFailed) else "bad_feed"
                detail = e.detail if isinstance(e, FetchFailed) else str(e)
                self.summary.feeds_failed += 1
                self._record(url, "feed", reason, detail, url, retryable=getattr(e, "retryable", False), count=False)
                logger.warning("feed %s failed: %s", url, reason)
                return []
            finally:
                bar.update(1)

        results = await asyncio.gather(*(one(u) for u in self.feed_urls))
        bar.close()
        return [item for items in results for item in items]

    def _select(self, items: list[FeedItem]) -> list[FeedItem]:
        seen: set[str] = set()
        todo = []
        for item in items:
            if item.link in seen:
                continue
            seen.add(item.link)
            self.summary.items_seen += 1
            if item.link in self.state.done_links:
                self.summary.already_done += 1
            elif item.link in self.state.given_up:
                self.summary.given_up += 1
            else:
                todo.append(item)
        return _interleave_hosts(todo)

    def _full(self) -> bool:
        return self.config.max_items is not None and self.state.articles >= self.config.max_items

    async def _worker(self, queue: asyncio.Queue, bar) -> None:
        while not queue.empty() and not self._full():
            item = queue.get_nowait()
            try:
                await self._process(item)
            except _Drop as d:
                self._record(item.link, d.stage, d.reason, d.detail, item.feed_url, retryable=d.retryable)
            except Exception as e:
                if is_disk_full(e):
                    raise  # not the item's fault: the run ends, saying so (vilbias.outputs.DiskFull)
                # A page that trips a bug must not end the run for every other item: record it
                # (retryable, so it is tried again once the bug is fixed) and go on.
                logger.exception("unexpected error on %s", item.link)
                self._record(item.link, "article", "internal_error", f"{type(e).__name__}: {e}", item.feed_url, retryable=True)
            self.items_done += 1
            bar.update(1)
            bar.set_postfix(kept=self.summary.kept, refresh=False)

    def _record(self, url, stage, reason, detail, feed_url, *, retryable: bool, count: bool = True) -> None:
        if count:
            bucket = self.summary.failed if retryable or reason not in FILTER_REASONS else self.summary.dropped
            bucket[reason] = bucket.get(reason, 0) + 1
        error = IngestError(url=url, stage=stage, reason=reason, feed_url=feed_url, attempt=self.state.retry_counts[url] + 1)
        # detail and retryable extend the IngestError line (docs/ingest.md).
        append_jsonl(self.root / INGEST_ERRORS, {**asdict(error), "detail": detail[:500], "retryable": retryable})

    async def _publisher_link(self, item: FeedItem) -> str:
        """The item's link, a Google News link resolved to the publisher's URL."""
        if not is_google_news_link(item.link):
            return item.link
        try:
            return await resolve_google_news(item.link, self.fetcher)
        except FetchFailed as e:
            raise _Drop("resolve", e.reason, e.detail, retryable=e.retryable) from None

    def _check_new_url(self, url: str) -> None:
        if url in self.state.urls or url in self.claimed_urls:
            raise _Drop("article", "duplicate_url", url)

    async def _analyse(self, link: str) -> tuple[Extracted, str]:
        """Fetch and read the page; drops what the filters reject. Returns the extraction and
        the URL the page came from."""
        try:
            page = await self.fetcher.get(link, accept=PAGE_ACCEPT)
        except FetchFailed as e:
            raise _Drop("article", e.reason, e.detail, retryable=e.retryable) from None
        self.summary.fetched += 1
        if not page.is_html:
            raise _Drop("article", "not_html", page.content_type)
        extracted, n_sentences = await asyncio.get_running_loop().run_in_executor(
            self.executor, analyse_page, page.content, page.charset, page.url, self.config.min_sentences
        )
        if extracted.page_kind == "multimedia":
            raise _Drop("article", "multimedia", extracted.kind_detail)
        if extracted.page_kind == "non_article":
            raise _Drop("article", "not_an_article", extracted.kind_detail)
        if n_sentences < self.config.min_sentences:
            raise _Drop("article", "too_few_sentences", f"{n_sentences} < {self.config.min_sentences}")
        return extracted, page.url

    async def _process(self, item: FeedItem) -> None:
        link = await self._publisher_link(item)
        try:
            # The feed link is already a kept article's canonical URL: no need to fetch it.
            self._check_new_url(canonicalize_url(link))
        except ValueError as e:
            raise _Drop("resolve", "bad_url", str(e)) from None
        extracted, source_url = await self._analyse(link)
        digest = extracted.content_hash
        # Claim URL and text before the next await, so two copies racing through the workers
        # cannot both be kept.
        self._check_new_url(extracted.url)
        if digest in self.state.hashes or digest in self.claimed_hashes:
            raise _Drop("article", "duplicate_content", extracted.url)
        self.claimed_urls.add(extracted.url)
        self.claimed_hashes.add(digest)
        try:
            await self._keep(item, extracted, source_url, digest)
        finally:
            self.claimed_urls.discard(extracted.url)
            self.claimed_hashes.discard(digest)

    async def _validate_image(self, data: bytes) -> ImageInfo:
        return await asyncio.get_running_loop().run_in_executor(self.executor, check_image, data)

    async def _keep(self, item: FeedItem, extracted: Extracted, source_url: str, digest: str) -> None:
        try:
            found = await first_usable_image(self.fetcher, extracted.images, self._validate_image, drawings=extracted.drawings)
        except NoUsableImage as e:
            # If a candidate only failed transiently the page may still yield an image next run.
            raise _Drop("image", "no_usable_image", str(e), retryable=e.transient) from None
        # store_image fsyncs: keep that wait off the event loop.
        image_path = await asyncio.to_thread(store_image, self.root, found.data, found.info.ext)
        if self._full():
            # Checked after the last await so --max-items is exact; the stored image is
            # harmless (content-addressed) and the item is taken up by a later run.
            return
        article = Article(
            unique_id=unique_id_for(extracted.url),
            url=extracted.url,
            outlet=(item.outlet or extracted.outlet) if extracted.outlet_guessed else extracted.outlet,
            headline=extracted.headline or item.title,
            article_text=extracted.text,
            image_path=image_path,
            source_url=source_url,
            feed_url=item.feed_url,
            published=extracted.published or item.published,
            image_url=found.candidate.url,
            image_caption=found.candidate.caption,
            fetched_at=utcnow(),
            language=extracted.language,
        )
        # item_url extends the Article line so a re-run recognises the feed link (a Google
        # News link differs from every URL of the article itself).
        append_jsonl(self.root / ARTICLES, {**article.to_dict(), "item_url": item.link})
        self.state.urls.add(extracted.url)
        self.state.hashes.add(digest)
        self.state.done_links.add(item.link)
        self.state.articles += 1
        self.summary.kept += 1
        language = extracted.language or "unknown"
        self.summary.languages[language] = self.summary.languages.get(language, 0) + 1
