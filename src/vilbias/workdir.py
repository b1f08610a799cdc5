"""The pipeline's working directory: its files, their schema, and safe ways to write them.

A workdir is what one stage leaves for the next::

    workdir/
      workdir.json            {"schema_version": "1.1", "created_at": ...}
      articles.jsonl          one Article per kept item          (ingest)
      images/<sha256>.<ext>   original image bytes, content-addressed (ingest)
      ingest_errors.jsonl     one IngestError per failed fetch    (ingest)
      annotations.sqlite      every LLM call, raw and parsed      (annotate)
      reviews/                exported sheets, verdicts.jsonl     (review)

The exact field lists are in ``docs/workdir.md``; :data:`SCHEMA_VERSION` is bumped whenever a
field is added (minor) or changes meaning (major). Readers accept any minor version of their
major version.

Writers append whole lines to a file opened in append mode (:func:`append_jsonl`): a line that
cannot be written whole (a full disk) is cut off again, and a process killed at any moment leaves
at most one torn *last* line, which :func:`read_jsonl` skips with a warning. Files that are
rewritten as a whole go through :func:`atomic_write` (:mod:`vilbias.outputs`: a temporary file
renamed over the old one, with the permissions the user's umask gives).
"""

from __future__ import annotations

import datetime as dt
import email.utils
import hashlib
import json
import logging
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

from vilbias.outputs import atomic_write, claim_output

logger = logging.getLogger(__name__)

SCHEMA_VERSION = "1.1"
"""1.1 added ``Article.language``; a 1.0 workdir reads as 1.1 with the language unknown (``""``)."""

ARTICLES = "articles.jsonl"
IMAGES = "images"
INGEST_ERRORS = "ingest_errors.jsonl"
ANNOTATIONS = "annotations.sqlite"
REVIEWS = "reviews"
MANIFEST = "workdir.json"


class WorkdirError(ValueError):
    """The workdir is missing, of an unknown schema version, or holds a malformed record."""


@dataclass
class Article:
    """One kept news item: an article and its first image. A line of ``articles.jsonl``."""

    unique_id: str
    """Stable id: ``sha256(canonical url)[:16]``; the same article always gets the same id."""
    url: str
    """Canonical URL (rel=canonical / og:url, tracking parameters removed)."""
    outlet: str
    headline: str
    article_text: str
    image_path: str
    """Relative to the workdir: ``images/<sha256>.<ext>``."""
    source_url: str = ""
    """The URL the article was fetched from (after redirects), before canonicalisation."""
    feed_url: str = ""
    published: str | None = None
    """ISO 8601, or None when the page gives no date."""
    image_url: str = ""
    image_caption: str = ""
    fetched_at: str = ""
    """ISO 8601 UTC time of the fetch. Orders rows for the stable split."""
    item_url: str = ""
    """The feed item's own link (e.g. a Google News link), so a re-run recognises it unresolved."""
    language: str = ""
    """ISO 639-1 code of the headline and text, detected at ingest (:func:`vilbias.languages.detect_language`);
    "" when unknown (too little text to tell, or a workdir of schema 1.0). Annotators that do not
    read it abstain (status ``other_language``); the corpus's ``language`` column and the card's
    ``language:`` come from it. (Schema 1.1.)"""

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Article:
        missing = [k for k in ("unique_id", "url", "headline", "article_text", "image_path") if not d.get(k)]
        if missing:
            raise WorkdirError(f"article record {d.get('unique_id', '?')!r} lacks {', '.join(missing)}")
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in d.items() if k in known})

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class IngestError:
    """A line of ``ingest_errors.jsonl``: one failed attempt at one URL."""

    url: str
    stage: str
    """``feed`` | ``resolve`` | ``article`` | ``image``."""
    reason: str
    feed_url: str = ""
    attempt: int = 1
    detail: str = ""
    retryable: bool = False
    """Transient failures are retried on later runs (a bounded number of times); filter and
    duplicate decisions are recorded too, not retryable, so a re-run does not fetch them again."""
    at: str = field(default_factory=lambda: utcnow())


def utcnow() -> str:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()


def unique_id_for(canonical_url: str) -> str:
    """The stable item id of a canonical URL."""
    return hashlib.sha256(canonical_url.encode("utf-8")).hexdigest()[:16]


def claim_workdir(workdir: str | os.PathLike, command: str) -> Path:
    """Refuse, in one line, a ``workdir`` that is neither new, empty nor a workdir
    (:func:`vilbias.outputs.claim_output`): a stage writes its files into a workdir, never into a
    folder of someone else's files. Files a user keeps beside a workdir's own are left alone."""
    return claim_output(workdir, command, signs=(MANIFEST, ARTICLES, ANNOTATIONS), flag="--workdir")


def init_workdir(workdir: str | os.PathLike, command: str = "vilbias ingest") -> Path:
    """Create ``workdir`` (or check an existing one's schema version) and return it.

    Raises:
        vilbias.outputs.OutputRefused: ``workdir`` is a non-empty folder that is not a workdir.
    """
    claim_workdir(workdir, command)
    root = Path(workdir)
    (root / IMAGES).mkdir(parents=True, exist_ok=True)
    manifest = root / MANIFEST
    if manifest.exists():
        check_schema(root)
    else:
        atomic_write(manifest, json.dumps({"schema_version": SCHEMA_VERSION, "created_at": utcnow()}, indent=2) + "\n")
    return root


def check_schema(workdir: str | os.PathLike) -> None:
    manifest = Path(workdir) / MANIFEST
    if not manifest.exists():
        return  # workdirs written before the manifest existed are read as 1.x
    version = json.loads(manifest.read_text())["schema_version"]
    if version.split(".")[0] != SCHEMA_VERSION.split(".")[0]:
        raise WorkdirError(
            f"{workdir} has workdir schema {version}, this vilbias reads {SCHEMA_VERSION}: "
            "re-run the pipeline with a matching vilbias version"
        )


def append_jsonl(path: str | os.PathLike, record: dict[str, Any]) -> None:
    """Append one record as a whole line. A line the disk has no room for is cut off again (the file
    ends as it was, and the error is raised); a kill leaves at most a torn last line."""
    line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        _repair_torn_tail(fd, path)
        end = os.fstat(fd).st_size
        rest = memoryview(line)
        try:
            while rest:
                rest = rest[os.write(fd, rest):]  # a nearly full disk takes part of a write
        except OSError as e:
            os.ftruncate(fd, end)
            e.needed = len(line)  # for the full-disk line (vilbias.outputs.DiskFull)
            raise
    finally:
        os.close(fd)


def _repair_torn_tail(fd: int, path: str | os.PathLike) -> None:
    """If a killed writer left a last line without its newline, end it so the next record
    starts on a line of its own (the torn line is then skipped by readers)."""
    size = os.fstat(fd).st_size
    if size == 0:
        return
    with open(path, "rb") as f:
        f.seek(size - 1)
        if f.read(1) != b"\n":
            os.write(fd, b"\n")


def read_jsonl(path: str | os.PathLike) -> Iterator[dict[str, Any]]:
    """Yield the records of a JSONL file, skipping (and logging) torn or malformed lines."""
    path = Path(path)
    if not path.exists():
        return
    with path.open("rb") as f:
        for lineno, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except json.JSONDecodeError:
                logger.warning("%s:%d: skipping a torn or malformed line", path, lineno)
                continue
            if isinstance(record, dict):
                yield record


def read_articles(workdir: str | os.PathLike) -> Iterator[Article]:
    """Yield the workdir's articles in the order they were ingested, first copy of an id wins."""
    check_schema(workdir)
    seen: set[str] = set()
    for record in read_jsonl(Path(workdir) / ARTICLES):
        article = Article.from_dict(record)
        if article.unique_id in seen:
            continue
        seen.add(article.unique_id)
        yield article


class EmptyWorkdir(WorkdirError):
    """The workdir was made by ``vilbias ingest`` but holds no article: the message says why
    (from ``ingest_errors.jsonl``) and what to check."""


def require_articles(workdir: str | os.PathLike) -> Path:
    """Check that ``workdir`` holds at least one article before a stage reads it (annotate, build).

    Raises:
        FileNotFoundError: no ingest ever wrote it (no ``workdir.json``, no ``articles.jsonl``):
            run ``vilbias ingest`` first.
        EmptyWorkdir: ingest ran and kept nothing; the message names the reasons it recorded.
    """
    root = Path(workdir)
    if not (root / MANIFEST).is_file() and not (root / ARTICLES).is_file():
        raise FileNotFoundError(f"{root} is not a workdir (no {ARTICLES}): run `vilbias ingest --workdir {root}` first")
    if next(read_jsonl(root / ARTICLES), None) is None:
        raise EmptyWorkdir(f"{root} holds no articles: {why_no_articles(root)}")
    return root


def why_no_articles(workdir: str | os.PathLike) -> str:
    """Why ingest kept nothing in ``workdir``, read from ``ingest_errors.jsonl`` (each URL's latest
    line), with what to check: one sentence."""
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for rec in read_jsonl(Path(workdir) / INGEST_ERRORS):
        latest[(rec.get("stage", ""), rec.get("url", ""))] = rec
    feeds = Counter(r.get("reason", "?") for (stage, _), r in latest.items() if stage == "feed")
    items = Counter(r.get("reason", "?") for (stage, _), r in latest.items() if stage != "feed")

    def counted(c: Counter) -> str:
        return ", ".join(f"{n} {reason}" for reason, n in sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))

    if not items and feeds:
        return (f"every feed failed ({counted(feeds)}; see {INGEST_ERRORS}): check the --feed URLs and that this "
                "machine reaches them, then run `vilbias ingest` again")
    if not items:
        return ("the feeds listed no items (an empty feed, or a page that is not RSS/Atom): check that each --feed URL "
                "lists entries, then run `vilbias ingest` again")
    advice = []
    if items.get("too_few_sentences"):
        advice.append("--min-sentences lowers the 20-sentence minimum")
    if items.get("no_usable_image"):
        advice.append("every kept article needs a photo of its own")
    if set(items) - {"too_few_sentences", "no_usable_image", "not_an_article", "multimedia", "duplicate_url", "duplicate_content", "not_html"}:
        advice.append("failed fetches are tried again by the next run")
    return (f"ingest kept none of the {sum(items.values())} items it read ({counted(items)}; see {INGEST_ERRORS})"
            + (": " + "; ".join(advice) if advice else ""))


def store_image(workdir: str | os.PathLike, data: bytes, ext: str) -> str:
    """Store original image bytes content-addressed; return the workdir-relative path."""
    digest = hashlib.sha256(data).hexdigest()
    rel = f"{IMAGES}/{digest}.{ext.lower().lstrip('.')}"
    target = Path(workdir) / rel
    if not target.exists():
        atomic_write(target, data)
    return rel


def sample_workdir() -> Path:
    """The embedded sample shipped inside the package (a small annotated workdir)."""
    return Path(str(files("vilbias.sample")))


def iso_date(value: Any) -> str | None:
    """A date as the workdir and the corpus store it (``published``): ISO 8601 with its timezone
    kept, or None when empty or unreadable (never a guess). Takes ``datetime``/``date`` objects,
    ISO 8601 text and RFC 2822 text (as feeds and ``Last-Modified`` write it)."""
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    text = "" if value is None else str(value).strip()
    if not text:
        return None
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).isoformat()
    except ValueError:
        pass
    try:
        return email.utils.parsedate_to_datetime(text).isoformat()
    except (TypeError, ValueError, IndexError):
        return None
