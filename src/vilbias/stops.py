"""Stopping a long command: Ctrl-C and SIGTERM take one path, and a stop says what it kept.

A person stops a command with Ctrl-C (SIGINT), a job scheduler with SIGTERM. Python turns SIGINT
into :class:`KeyboardInterrupt` (and ``asyncio.run`` into a cancellation of its main task, then
``KeyboardInterrupt``), so every ``finally`` and ``with`` block on the way out runs: ledgers have
committed each answer as it arrived, scratch folders are removed. SIGTERM's default is to end the
process at once, with no cleanup. :func:`install` (called once by the ``vilbias`` command) sends
SIGTERM down the SIGINT path, whatever handler SIGINT has at that moment.

A stage says what a stop keeps with :func:`on_stop`: the stop becomes a :class:`Stopped` carrying
one sentence computed when it happens (``"42 articles kept in work/articles.jsonl; re-run the same
command to resume"``), which the command prints as its one line; a full disk ends the stage with
the same sentence (:class:`vilbias.outputs.DiskFull`). A stage that must finish a step
before it can keep anything (a training step, then its checkpoint) runs it under
:func:`deferred`: the first signal is only recorded (:func:`requested`) and the stage stops at its
next safe point; a second one stops at once.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator

from vilbias import outputs


class Stopped(KeyboardInterrupt):
    """A stop (Ctrl-C or SIGTERM), with what it kept in one sentence (:attr:`kept`).

    A ``KeyboardInterrupt``, so code that lets an interrupt through lets this through too."""

    def __init__(self, kept: str):
        super().__init__(kept)
        self.kept = kept


_last_signal: int | None = None
"""The signal of the latest stop (the exit status names it: 128 + its number)."""
_requested: int | None = None
"""Within :func:`deferred`: the signal waiting for the next safe point."""


def install() -> None:
    """Route SIGTERM down the SIGINT path (see the module docstring). Called by the ``vilbias``
    command; a Python caller keeps its own SIGTERM handling unless it calls this. A SIGTERM that is
    ignored or handled already (a caller's own handler) is left alone."""
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_sigterm)


def _on_sigterm(signum: int, frame) -> None:
    global _last_signal
    _last_signal = signum
    sigint = signal.getsignal(signal.SIGINT)
    if callable(sigint):
        # Python's own (KeyboardInterrupt), asyncio.run's (cancel the main task), or deferred()'s.
        sigint(signal.SIGINT, frame)
    else:
        # SIGINT is ignored (a job started with `&` from a script): SIGTERM still stops cleanly.
        raise KeyboardInterrupt


def _deferring(signum: int, frame) -> None:
    global _requested, _last_signal
    if _requested is None:
        _requested = _last_signal = signum
        return
    raise KeyboardInterrupt  # the second signal: stop now


def requested() -> bool:
    """Whether a stop is waiting for the next safe point (only ever true inside :func:`deferred`)."""
    return _requested is not None


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Within the block, the first Ctrl-C or SIGTERM is recorded, not raised: the code checks
    :func:`requested` at its safe points and stops there (raising :class:`Stopped` itself). A second
    signal raises ``KeyboardInterrupt`` at once, and so does the end of the block when a stop was
    asked for after its last safe point. Outside the main thread, or when SIGINT is ignored
    and SIGTERM is not routed here (a Python caller's own handling), signals keep their handlers."""
    global _requested
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    ours = [s for s, routed in ((signal.SIGINT, signal.default_int_handler), (signal.SIGTERM, _on_sigterm))
            if signal.getsignal(s) is routed]
    _requested = None
    try:
        with _handling(_deferring, ours):
            yield
            pending = _requested is not None  # asked for after the block's last safe point: stop now
    finally:
        _requested = None
    if pending:
        raise KeyboardInterrupt


@contextlib.contextmanager
def _handling(handler: Callable[[int, object], None], signals: list[int]) -> Iterator[None]:
    """``handler`` for ``signals`` within the block (main thread only); after it, each signal gets
    back the handler it had, unless something else replaced ``handler`` meanwhile."""
    previous = {s: signal.getsignal(s) for s in signals}
    for s in signals:
        signal.signal(s, handler)
    try:
        yield
    finally:
        for s, handler_before in previous.items():
            if signal.getsignal(s) is handler:
                signal.signal(s, handler_before)


@contextlib.contextmanager
def on_stop(kept: Callable[[], str]) -> Iterator[None]:
    """A stop inside the block becomes :class:`Stopped` with ``kept()``: what the stop kept, in one
    sentence computed when it happens (a count read from the files, and whether a re-run resumes).
    A :class:`Stopped` from inside (a stage that knows more) passes unchanged.

    A full disk inside the block is the same kind of end: it becomes
    :class:`vilbias.outputs.DiskFull` carrying ``kept()`` as well, which the command prints as its
    one line (the folder, the space free, what the step needed, what was kept)."""
    try:
        yield
    except Stopped:
        raise
    except KeyboardInterrupt:
        raise Stopped(kept()) from None
    except outputs.DiskFull as e:
        if e.kept is None:
            e.kept = kept()
        raise
    except Exception as e:
        if outputs.is_disk_full(e):
            raise outputs.disk_full(e, kept()) from e
        raise


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Ctrl-C and SIGTERM wait until the block ends, then take their usual path: for steps that
    must happen together or not at all, such as the two renames that swap a build in.

    The signals are recorded by Python-level handlers, which run in the main thread whichever
    thread the system hands a signal to. (A blocked signal mask holds only the thread that set it:
    with another thread running (a progress bar's monitor, a writer), the signal went to that one
    and the stop landed inside the block anyway.) An ignored signal stays ignored. Outside the main
    thread, where Python handles no signal, the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    handled = [s for s in (signal.SIGINT, signal.SIGTERM) if signal.getsignal(s) not in (signal.SIG_IGN, None)]
    try:
        with _handling(lambda signum, frame: caught.append(signum), handled):
            yield
    finally:
        for signum in dict.fromkeys(caught):  # each signal once, as a blocked one is delivered once
            signal.raise_signal(signum)


def leave_to_parent() -> None:
    """A pool worker's initializer: Ctrl-C, which a terminal sends to every process of the job,
    is left to the parent, which stops the pool (no worker prints a traceback of its own)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def exit_status() -> int:
    """The exit status of a stopped command: 128 + the signal's number (130 for Ctrl-C, 143 for SIGTERM)."""
    return 128 + (_last_signal or signal.SIGINT)


__all__ = ["Stopped", "deferred", "exit_status", "held", "install", "leave_to_parent", "on_stop", "requested"]
