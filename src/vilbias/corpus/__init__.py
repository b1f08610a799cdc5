"""``vilbias build``: the Hub-layout dataset folder, from a workdir, a sentence file or a published release.

    from vilbias.corpus import BuildConfig, build
    report = build(BuildConfig(workdir="work", output="BiasCorpus"))

:class:`BuildConfig` (:mod:`vilbias.corpus.config`) is light; :func:`build` and
:func:`format_report` (:mod:`vilbias.corpus.pipeline`) load ``datasets`` and the image pipeline, so
they are imported when first used and ``vilbias build --help`` answers without them. The three
sources are declared here too: :func:`vilbias.corpus.pipeline.open_source` reads the one a build
names from this map, so a sentence build never imports the image pipeline (``plan.py``'s images,
``importer.py``'s release reader) and the reverse.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vilbias.lazy import attach

_import_structure = {
    "config": ["DEFAULT_OUTPUT", "BuildConfig"],  # light: what `vilbias build --help` parses
    "pipeline": ["build", "format_report"],  # datasets
    # the sources, each imported only by a build that names it
    "importer": ["ReleaseSource"],  # a published release
    "plan": ["WorkdirSource"],  # a workdir or the sample: images, the annotation store
    "sentences": ["SentenceSource"],  # a BABE-format sentence file
}
__getattr__, __dir__, __all__ = attach(__name__, _import_structure)

if TYPE_CHECKING:  # the same names, for editors and type checkers (tests/test_lazy.py keeps the two equal)
    from vilbias.corpus.config import DEFAULT_OUTPUT, BuildConfig
    from vilbias.corpus.importer import ReleaseSource
    from vilbias.corpus.pipeline import build, format_report
    from vilbias.corpus.plan import WorkdirSource
    from vilbias.corpus.sentences import SentenceSource
