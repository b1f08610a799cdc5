"""The metrics of the packaged ``evaluate`` modules: ``accuracy/``, ``precision/``, ``recall/``,
``f1/``, ``confusion_matrix/`` and ``closed_ended/`` (all of them in one computation) each hold
one thin script that imports its metric from here.

``evaluate``'s own metric scripts keep shared code out of the script the same way: a script
imports it from an installed library (scikit-learn, ``evaluate.utils``) or from a file beside it,
and ``evaluate.load(<folder>)`` copies only the script. ``vilbias`` is installed wherever its
metrics load, so ``evaluate.load(str(METRICS_DIR / "f1"))`` still works offline.

The base classes are abstract: ``evaluate`` takes the first concrete ``EvaluationModule`` subclass
it finds in a script as the script's metric, so a script imports its one metric and no other.
"""

from __future__ import annotations

import abc
import inspect

import datasets
import evaluate
import sklearn.metrics
from evaluate.naming import camelcase_to_snakecase

LABELS = [0, 1]
"""The classes scored by default, in ``not_biased, biased`` order: a class absent from a small set
still counts (its row of the confusion matrix is zeros, its F1 is 0)."""

FEATURES = datasets.Features({"predictions": datasets.Value("int32"), "references": datasets.Value("int32")})

_IDS = """
Args:
    predictions (`list[int]`): predicted class ids (0 = not_biased, 1 = biased).
    references (`list[int]`): gold class ids.
"""

_AVERAGED = """    average (`str`): "binary" (default), "macro", "weighted" or "micro".
    pos_label (`int`): the positive class for "binary" (default 1 = biased).
    labels (`list[int]`): classes to score (default [0, 1], so a class absent from a small set still counts).
    zero_division (`float`): value of an undefined ratio (default 0).
"""


class LabelMetric(evaluate.Metric, abc.ABC):
    """An ``evaluate`` metric over BiasCorpus label ids, whose result is named as the metric is
    (``self.name``: ``evaluate`` makes it the class name in snake case, ``ConfusionMatrix`` ->
    ``confusion_matrix``). A subclass says what it measures in its docstring, documents its extra
    arguments in ``arguments`` and what it returns in ``returns``, and implements ``_compute``."""

    arguments: str = ""
    returns: str = "(`float`)"

    def _info(self):
        return evaluate.MetricInfo(
            description=inspect.getdoc(self),
            citation="",
            # self.name is set only after _info returns; this is how evaluate computes it
            inputs_description=f"{_IDS}{self.arguments}Returns:\n    {camelcase_to_snakecase(type(self).__name__)} {self.returns}\n",
            features=FEATURES,
        )

    @abc.abstractmethod
    def _compute(self, predictions, references, **kwargs) -> dict: ...


class AveragedMetric(LabelMetric):
    """Precision, recall or F1 (abstract): scikit-learn's ``<name>_score`` with its arguments.
    ``average="binary"`` scores the ``biased`` class (``pos_label=1``); ``"macro"`` and
    ``"weighted"`` average both classes. Undefined ratios are 0 (``zero_division=0``), as the
    paper's tables use."""

    arguments = _AVERAGED

    def _compute(self, predictions, references, average="binary", pos_label=1, labels=None, zero_division=0):
        score = getattr(sklearn.metrics, f"{self.name}_score")
        value = score(references, predictions, average=average, pos_label=pos_label,
                      labels=LABELS if labels is None else labels, zero_division=zero_division)
        return {self.name: float(value)}


class Precision(AveragedMetric):
    """Precision: TP / (TP + FP)."""


class Recall(AveragedMetric):
    """Recall: TP / (TP + FN)."""


class F1(AveragedMetric):
    """F1: the harmonic mean of precision and recall, 2PR / (P + R)."""


class Accuracy(LabelMetric):
    """Share of predictions equal to the reference label: (TP + TN) / N."""

    returns = "(`float`): in [0, 1]."

    def _compute(self, predictions, references):
        return {self.name: float(sklearn.metrics.accuracy_score(references, predictions))}


class ConfusionMatrix(LabelMetric):
    """Counts of (gold, predicted) pairs: rows gold, columns predicted, in ``labels`` order
    (default ``[0, 1]`` = ``not_biased, biased``), so ``[[TN, FP], [FN, TP]]``."""

    arguments = "    labels (`list[int]`): row/column order (default [0, 1]).\n"
    returns = "(`list[list[int]]`)"

    def _compute(self, predictions, references, labels=None):
        matrix = sklearn.metrics.confusion_matrix(references, predictions, labels=LABELS if labels is None else labels)
        return {self.name: matrix.tolist()}


class ClosedEnded(LabelMetric):
    """Every closed-ended score in one computation: accuracy, precision, recall and F1 for each
    average (``binary`` scores the ``biased`` class), and the confusion matrix, from the
    scikit-learn functions the single-score modules call (``precision_recall_fscore_support``
    gives the same three numbers as ``precision_score``, ``recall_score`` and ``f1_score``).
    One ``evaluate`` computation where the single-score modules take eleven; what
    :func:`vilbias.metrics.scores.closed_metrics` reports."""

    arguments = """    averages (`list[str]`): the averages scored (default ["binary", "macro", "weighted"]).
    zero_division (`float`): value of an undefined ratio (default 0).
"""
    returns = ("(`dict`): `accuracy`; `precision_<average>`, `recall_<average>` and `f1_<average>` for each average; "
               "`confusion_matrix` (`[[TN, FP], [FN, TP]]`).")

    def _compute(self, predictions, references, averages=("binary", "macro", "weighted"), zero_division=0):
        out = {"accuracy": float(sklearn.metrics.accuracy_score(references, predictions))}
        for average in averages:
            precision, recall, f1, _ = sklearn.metrics.precision_recall_fscore_support(
                references, predictions, average=average, pos_label=1, labels=LABELS, zero_division=zero_division)
            out |= {f"precision_{average}": float(precision), f"recall_{average}": float(recall), f"f1_{average}": float(f1)}
        out["confusion_matrix"] = sklearn.metrics.confusion_matrix(references, predictions, labels=LABELS).tolist()
        return out
