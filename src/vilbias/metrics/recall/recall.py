"""Recall of BiasCorpus labels, a local ``evaluate`` module (loads offline by path):
scikit-learn's ``recall_score`` with its arguments (``average="macro"`` averages both classes).
"""

from vilbias.metrics.label_metric import Recall

__all__ = ["Recall"]
