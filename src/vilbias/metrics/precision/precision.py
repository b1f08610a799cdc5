"""Precision of BiasCorpus labels, a local ``evaluate`` module (loads offline by path):
scikit-learn's ``precision_score`` with its arguments; an undefined ratio is 0.

    >>> from vilbias.metrics.scores import load_metric  # evaluate.load(<this folder>)
    >>> load_metric("precision").compute(predictions=[0, 0], references=[1, 0])  # nothing predicted biased
    {'precision': 0.0}
"""

from vilbias.metrics.label_metric import Precision

__all__ = ["Precision"]
