"""LLM-as-annotator (and any catalogue model): prompts, backends, hierarchical voting and the call store.

    vilbias annotate --workdir work --annotators paper    # the paper's three VLMs on vLLM, K=3
    vilbias annotate --workdir work                       # offline: the shipped BABE sentence model (text prompt)

From Python: ``annotate(AnnotateConfig(workdir="work"))``. See ``docs/annotate.md``.
"""

from vilbias.annotate.pipeline import AnnotateConfig, annotate
from vilbias.annotate.specs import DEFAULT_ANNOTATORS, AnnotatorSpec, load_annotators

__all__ = ["DEFAULT_ANNOTATORS", "AnnotateConfig", "AnnotatorSpec", "annotate", "load_annotators"]
