"""Evaluation: closed-ended metrics, LLM-judged reasoning,
robustness probes and the paper's cross-run analyses.

    from vilbias.evaluate import EvaluateConfig, evaluate
    results = evaluate(EvaluateConfig(dataset="./BiasCorpus", model="training/default_model"))
"""

from vilbias.evaluate.config import EvaluateConfig

__all__ = ["EvaluateConfig", "evaluate"]


def __getattr__(name: str):
    # The runner (datasets, models) loads on first use: `vilbias evaluate --help` parses
    # EvaluateConfig and must not pay for it.
    if name == "evaluate":
        from vilbias.evaluate.runner import evaluate

        return evaluate
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
