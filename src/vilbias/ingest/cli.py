"""``vilbias ingest``: fetch news feeds into a workdir of article–image pairs.

    vilbias ingest --feed "https://news.google.com/rss/search?q=economy&hl=en-US&gl=US&ceid=US:en" \
        --feed https://www.theguardian.com/world/rss --workdir work --max-items 500
    vilbias ingest --config work/ingest_config.yaml     # the options the last run used

Re-run the same command to resume: kept and dropped items are skipped, transient failures are
retried (up to --max-attempts runs). The summary at the end counts items by outcome and reason.
Each run writes its options to ``<workdir>/ingest_config.yaml``. A run that leaves the workdir
without any article says why (from ``ingest_errors.jsonl``) and exits with status 1; the workdir
is still one (``workdir.json``, an empty ``articles.jsonl``), and annotate and build say it is
empty rather than "run ingest first".
"""

from __future__ import annotations

import logging
from pathlib import Path

from vilbias.argparser import ConfigParser
from vilbias.config import save_config
from vilbias.stops import on_stop
from vilbias.workdir import ARTICLES, read_jsonl, why_no_articles


def main(argv: list[str], prog: str = "vilbias ingest") -> int:
    from vilbias.ingest.config import FetchSettings, IngestConfig

    config, config.fetch = ConfigParser([IngestConfig, FetchSettings], prog=prog,
                                        description=__doc__.splitlines()[0]).parse(argv)
    from vilbias.ingest.pipeline import ingest

    if not logging.getLogger().isEnabledFor(logging.DEBUG):
        # httpx logs every request at INFO; the progress bars and summary say enough.
        logging.getLogger("httpx").setLevel(logging.WARNING)
    # Every record is a whole appended line, written as its item is decided (vilbias.workdir.append_jsonl).
    with on_stop(lambda: f"{_articles_kept(config.workdir)} articles kept in {Path(config.workdir) / ARTICLES}; "
                         "re-run the same command to resume (kept and dropped items are skipped)"):
        summary = ingest(config)
    print(summary.format())
    save_config(config.workdir, "ingest", config, config.fetch)
    if summary.articles_total == 0:
        # Nothing for the next stage: say why and fail, so `ingest && annotate` stops here.
        print(f"nothing kept: {config.workdir} holds no articles: {why_no_articles(config.workdir)}")
        return 1
    return 0 if summary.feeds_failed < summary.feeds else 1


def _articles_kept(workdir: str | Path) -> int:
    """The records in ``articles.jsonl`` (after a stop: what it kept, every line whole)."""
    path = Path(workdir) / ARTICLES
    return sum(1 for _ in read_jsonl(path)) if path.is_file() else 0
