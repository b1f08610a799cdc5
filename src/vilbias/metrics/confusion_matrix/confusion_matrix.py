"""Confusion matrix of BiasCorpus labels, a local ``evaluate`` module (loads offline by path):
``[[TN, FP], [FN, TP]]``, rows gold and columns predicted, in ``labels`` order (default ``[0, 1]``).

    >>> from vilbias.metrics.scores import load_metric  # evaluate.load(<this folder>)
    >>> load_metric("confusion_matrix").compute(predictions=[1, 0, 1], references=[1, 1, 0])
    {'confusion_matrix': [[0, 1], [1, 1]]}
"""

from vilbias.metrics.label_metric import ConfusionMatrix

__all__ = ["ConfusionMatrix"]
