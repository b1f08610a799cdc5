"""``--no-progress``: a command that is asked for no progress bars shows none, the libraries' included.

A stage's own bars follow its config's ``progress`` field (``tqdm(..., disable=not config.progress)``);
the bars the libraries start while it runs (transformers' "Loading weights" when a model loads,
huggingface_hub's downloads, datasets' "Map" and "Generating split") follow each library's own
switch. :func:`follows_progress_flag` sets those switches from the field for the length of the
stage, and puts them back as they were after::

    @follows_progress_flag
    def annotate(config: AnnotateConfig) -> dict: ...

Every stage function whose config has a ``progress`` field carries it (ingest, annotate, audit
run, audit annotators), so Python callers passing ``progress=False`` get what ``--no-progress``
gives on the command line.

An environment variable the user set (``HF_HUB_DISABLE_PROGRESS_BARS``,
``HF_DATASETS_DISABLE_PROGRESS_BARS``) keeps priority, as those libraries document.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import sys
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


@contextlib.contextmanager
def progress_bars(enabled: bool) -> Iterator[None]:
    """Within the block, the libraries' progress bars are as they were (``enabled``) or off;
    after it, as they were before."""
    if enabled:
        yield
        return
    # A library is switched only where it is loaded already: importing transformers (~1 s) or
    # datasets (2-3 s) for its switch costs as long as a short stage, and annotate uses neither
    # (the command line has transformers loaded: its parser is transformers'). One the stage
    # imports meanwhile starts with its bars off, as huggingface_hub's are then (transformers reads
    # that switch at import; a stage that uses datasets imports it with its modules, before the call).
    import huggingface_hub.utils as hub

    transformers_logging = importlib.import_module("transformers.utils.logging") if "transformers" in sys.modules else None
    datasets_bars = importlib.import_module("datasets.utils") if "datasets" in sys.modules else None
    transformers_on = transformers_logging is not None and transformers_logging.is_progress_bar_enabled()
    hub_off = hub.are_progress_bars_disabled()
    datasets_off = datasets_bars is None or datasets_bars.are_progress_bars_disabled()
    hub.disable_progress_bars()
    if transformers_logging is not None:
        transformers_logging.disable_progress_bar()  # its own switch, and huggingface_hub's
    if datasets_bars is not None:
        datasets_bars.disable_progress_bars()
    try:
        yield
    finally:
        if transformers_on or (transformers_logging is None and "transformers.utils.logging" in sys.modules and not hub_off):
            # on before, or imported within the block (so started off): on, as it was or would have started
            importlib.import_module("transformers.utils.logging").enable_progress_bar()  # huggingface_hub's too: set next
        if hub_off:
            hub.disable_progress_bars()
        else:
            hub.enable_progress_bars()
        if not datasets_off:
            datasets_bars.enable_progress_bars()


def follows_progress_flag(stage: F) -> F:
    """Decorator for a stage function whose first argument is a config with a ``progress`` field:
    the libraries' bars are off for the call when ``config.progress`` is False (:func:`progress_bars`)."""

    if inspect.iscoroutinefunction(stage):

        @functools.wraps(stage)
        async def run_async(config, *args, **kwargs):
            with progress_bars(getattr(config, "progress", True)):
                return await stage(config, *args, **kwargs)

        return run_async  # type: ignore[return-value]

    @functools.wraps(stage)
    def run(config, *args, **kwargs):
        with progress_bars(getattr(config, "progress", True)):
            return stage(config, *args, **kwargs)

    return run  # type: ignore[return-value]


__all__ = ["follows_progress_flag", "progress_bars"]
