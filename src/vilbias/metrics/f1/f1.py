"""F1 of BiasCorpus labels, a local ``evaluate`` module (loads offline by path): scikit-learn's
``f1_score`` with its arguments; ``average="binary"`` scores the ``biased`` class.

    >>> import evaluate
    >>> from importlib.resources import files
    >>> metric = evaluate.load(str(files("vilbias.metrics") / "f1"))  # or vilbias.metrics.scores.load_metric("f1")
    >>> metric.compute(predictions=[1, 0, 1, 1], references=[1, 1, 0, 1])["f1"]  # binary, pos_label=1: TP=2, FP=1, FN=1
    0.6666666666666666
"""

from vilbias.metrics.label_metric import F1

__all__ = ["F1"]
