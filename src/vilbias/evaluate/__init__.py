"""Evaluation: closed-ended metrics, LLM-judged reasoning,
robustness probes and the paper's cross-run analyses.

    from vilbias.evaluate import EvaluateConfig, evaluate
    results = evaluate(EvaluateConfig(dataset="./BiasCorpus", model="training/default_model"))
"""

from typing import TYPE_CHECKING

from vilbias.lazy import attach

_import_structure = {
    "config": ["EvaluateConfig"],  # light: what `vilbias evaluate --help` parses
    "runner": ["evaluate"],  # datasets, the models
}
__getattr__, __dir__, __all__ = attach(__name__, _import_structure)

if TYPE_CHECKING:  # the same names, for editors and type checkers (tests/test_lazy.py keeps the two equal)
    from vilbias.evaluate.config import EvaluateConfig
    from vilbias.evaluate.runner import evaluate
