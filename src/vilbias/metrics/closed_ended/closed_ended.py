"""Every closed-ended score of BiasCorpus labels in one computation, a local ``evaluate`` module
(loads offline by path): accuracy; precision, recall and F1 for ``binary`` (the ``biased``
class), ``macro`` and ``weighted``; the confusion matrix ``[[TN, FP], [FN, TP]]``.

    >>> from vilbias.metrics.scores import load_metric  # evaluate.load(<this folder>)
    >>> scores = load_metric("closed_ended").compute(predictions=[1, 0, 1, 1], references=[1, 1, 0, 1])
    >>> scores["f1_binary"], scores["confusion_matrix"]  # TP=2, FP=1, FN=1, TN=0
    (0.6666666666666666, [[0, 1], [1, 2]])
"""

from vilbias.metrics.label_metric import ClosedEnded

__all__ = ["ClosedEnded"]
