"""Confusion matrix for BiasCorpus labels, a local ``evaluate`` module (loads offline by path).

    >>> import evaluate
    >>> from importlib.resources import files
    >>> metric = evaluate.load(str(files("vilbias.metrics") / "confusion_matrix"))  # or vilbias.metrics.scores.load_metric("confusion_matrix")
    >>> metric.compute(predictions=[1, 0, 1], references=[1, 1, 0])
    {'confusion_matrix': [[0, 1], [1, 1]]}

Rows are gold classes, columns predictions, in ``labels`` order (default ``[0, 1]`` =
``not_biased, biased``): ``[[TN, FP], [FN, TP]]``.
"""

import datasets
import evaluate
from sklearn.metrics import confusion_matrix

_DESCRIPTION = "Counts of (gold, predicted) pairs; rows gold, columns predicted."
_INPUTS = """
Args:
    predictions (`list[int]`): predicted class ids.
    references (`list[int]`): gold class ids.
    labels (`list[int]`): row/column order (default [0, 1]).
Returns:
    confusion_matrix (`list[list[int]]`)
"""


class ConfusionMatrix(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="",
            inputs_description=_INPUTS,
            features=datasets.Features({"predictions": datasets.Value("int32"), "references": datasets.Value("int32")}),
        )

    def _compute(self, predictions, references, labels=None):
        matrix = confusion_matrix(references, predictions, labels=[0, 1] if labels is None else labels)
        return {"confusion_matrix": matrix.tolist()}
