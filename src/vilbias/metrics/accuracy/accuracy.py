"""Accuracy of BiasCorpus labels, a local ``evaluate`` module (loads offline by path).

    >>> import evaluate
    >>> from importlib.resources import files
    >>> accuracy = evaluate.load(str(files("vilbias.metrics") / "accuracy"))  # or vilbias.metrics.scores.load_metric("accuracy")
    >>> accuracy.compute(predictions=[1, 0, 1], references=[1, 1, 1])
    {'accuracy': 0.6666666666666666}
"""

from vilbias.metrics.label_metric import Accuracy

__all__ = ["Accuracy"]
