"""Accuracy for BiasCorpus labels, a local ``evaluate`` module (loads offline by path).

    >>> import evaluate
    >>> from importlib.resources import files
    >>> accuracy = evaluate.load(str(files("vilbias.metrics") / "accuracy"))  # or vilbias.metrics.scores.load_metric("accuracy")
    >>> accuracy.compute(predictions=[1, 0, 1], references=[1, 1, 1])
    {'accuracy': 0.6666666666666666}
"""

import datasets
import evaluate
from sklearn.metrics import accuracy_score

_DESCRIPTION = "Share of predictions equal to the reference label: (TP + TN) / N."
_INPUTS = """
Args:
    predictions (`list[int]`): predicted class ids (0 = not_biased, 1 = biased).
    references (`list[int]`): gold class ids.
Returns:
    accuracy (`float`): in [0, 1].
"""


class Accuracy(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="",
            inputs_description=_INPUTS,
            features=datasets.Features({"predictions": datasets.Value("int32"), "references": datasets.Value("int32")}),
        )

    def _compute(self, predictions, references):
        return {"accuracy": float(accuracy_score(references, predictions))}
