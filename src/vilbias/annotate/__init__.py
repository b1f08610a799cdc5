"""LLM-as-annotator (and any catalogue model): prompts, backends, hierarchical voting and the call store.

    vilbias annotate --workdir work --annotators paper    # the paper's three VLMs on vLLM, K=3
    vilbias annotate --workdir work                       # offline: the shipped BABE sentence model (text prompt)

From Python: ``annotate(AnnotateConfig(workdir="work"))``. See ``docs/annotate.md``.
"""

from typing import TYPE_CHECKING

from vilbias.lazy import attach

_import_structure = {
    "config": ["AnnotateConfig"],
    "pipeline": ["annotate"],  # the models, the store
    "specs": ["DEFAULT_ANNOTATORS", "AnnotatorSpec", "load_annotators"],
}
__getattr__, __dir__, __all__ = attach(__name__, _import_structure)

if TYPE_CHECKING:  # the same names, for editors and type checkers (tests/test_lazy.py keeps the two equal)
    from vilbias.annotate.config import AnnotateConfig
    from vilbias.annotate.pipeline import annotate
    from vilbias.annotate.specs import DEFAULT_ANNOTATORS, AnnotatorSpec, load_annotators
