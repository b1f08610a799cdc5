"""Evaluation: closed-ended metrics, LLM-judged reasoning,
robustness probes and the paper's cross-run analyses.

    from vilbias.evaluate import EvaluateConfig, evaluate
    results = evaluate(EvaluateConfig(dataset="./BiasCorpus", model="training/default_model"))
"""

from vilbias.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    "config": ["EvaluateConfig"],  # light: what `vilbias evaluate --help` parses
    "runner": ["evaluate"],  # datasets, the models
})
