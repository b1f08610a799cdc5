"""``vilbias build``: the Hub-layout dataset folder, from a workdir, a sentence file or a published release.

    from vilbias.corpus import BuildConfig, build
    report = build(BuildConfig(workdir="work", output="BiasCorpus"))

:class:`BuildConfig` (:mod:`vilbias.corpus.config`) is light; :func:`build` and
:func:`format_report` (:mod:`vilbias.corpus.pipeline`) load ``datasets`` and the image pipeline, so
they are imported when first used and ``vilbias build --help`` answers without them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vilbias.corpus.config import DEFAULT_OUTPUT, BuildConfig

if TYPE_CHECKING:
    from vilbias.corpus.pipeline import build, format_report

__all__ = ["DEFAULT_OUTPUT", "BuildConfig", "build", "format_report"]


def __getattr__(name: str) -> Any:
    if name in ("build", "format_report"):
        from vilbias.corpus import pipeline

        return getattr(pipeline, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
