"""A sign of life from a long command whose progress bar is off.

With ``--no-progress`` (or a bar that only moves when an item completes), a command waiting on a
server that does not answer would say nothing for minutes. :func:`heartbeat` logs one line, at
INFO, every :data:`HEARTBEAT_S` seconds while its block runs: what is done and what the command is
waiting on, as the caller describes it at that moment::

    with heartbeat(lambda: f"ingest: {done} of {total} items; waiting on {host}", enabled=not config.progress):
        ...
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator

logger = logging.getLogger(__name__)

HEARTBEAT_S = 10.0
"""Seconds between two lines of :func:`heartbeat`: at least one line this often."""


@contextlib.contextmanager
def heartbeat(describe: Callable[[], str], *, enabled: bool = True, every: float | None = None,
              log: logging.Logger = logger) -> Iterator[None]:
    """Log ``describe()`` every ``every`` seconds (default :data:`HEARTBEAT_S`) while the block runs.

    Args:
        describe: what the command has done and is waiting on, in one line; called from a thread of
            its own, so it only reads (counters, a dict of requests in flight).
        enabled: False when a progress bar already shows the command moving.
        every: seconds between lines.
        log: the logger the lines go to (the command's own, so ``-q`` silences them).
    """
    if not enabled:
        yield
        return
    interval = HEARTBEAT_S if every is None else every
    done = threading.Event()

    def beat() -> None:
        while not done.wait(interval):
            try:
                log.info("%s", describe())
            except Exception:  # a description read mid-update is skipped, never fatal
                log.debug("heartbeat description failed", exc_info=True)

    thread = threading.Thread(target=beat, name="vilbias-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


__all__ = ["HEARTBEAT_S", "heartbeat"]
