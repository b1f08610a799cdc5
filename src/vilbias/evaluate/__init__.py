"""Evaluation: closed-ended metrics, LLM-judged reasoning,
robustness probes and the paper's cross-run analyses.

    from vilbias.evaluate import EvaluateConfig, evaluate
    results = evaluate(EvaluateConfig(dataset="./BiasCorpus", model="training/default_model"))
"""

from vilbias.evaluate.config import EvaluateConfig
from vilbias.evaluate.runner import evaluate

__all__ = ["EvaluateConfig", "evaluate"]
