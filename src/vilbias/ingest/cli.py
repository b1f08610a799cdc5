"""``vilbias ingest``: fetch news feeds into a workdir of article–image pairs.

    vilbias ingest --feed "https://news.google.com/rss/search?q=economy&hl=en-US&gl=US&ceid=US:en" \
        --feed https://www.theguardian.com/world/rss --workdir work --max-items 500

Re-run the same command to resume: kept and dropped items are skipped, transient failures are
retried (up to --max-attempts runs). The summary at the end counts items by outcome and reason.
"""

from __future__ import annotations

import argparse
import logging

from vilbias.config import add_dataclass_arguments, dataclass_from_args
from vilbias.ingest.pipeline import IngestConfig, ingest


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_dataclass_arguments(parser, IngestConfig)


def main(args: argparse.Namespace) -> int:
    if not logging.getLogger().isEnabledFor(logging.DEBUG):
        # httpx logs every request at INFO; the progress bars and summary say enough.
        logging.getLogger("httpx").setLevel(logging.WARNING)
    config = dataclass_from_args(IngestConfig, args)
    summary = ingest(config)
    print(summary.format())
    return 0 if summary.feeds_failed < summary.feeds else 1
