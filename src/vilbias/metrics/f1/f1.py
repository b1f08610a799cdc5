"""F1 for BiasCorpus labels, a local ``evaluate`` module (loads offline by path).

    >>> import evaluate
    >>> from importlib.resources import files
    >>> metric = evaluate.load(str(files("vilbias.metrics") / "f1"))  # or vilbias.metrics.scores.load_metric("f1")
    >>> metric.compute(predictions=[1, 0, 1, 1], references=[1, 1, 0, 1])["f1"]  # binary, pos_label=1: TP=2, FP=1, FN=1
    0.6666666666666666

Same arguments as scikit-learn's ``f1_score``: ``average="binary"`` scores the ``biased``
class (``pos_label=1``); ``"macro"`` and ``"weighted"`` average both classes. Undefined ratios are 0
(``zero_division=0``), as the paper's tables use.
"""

import datasets
import evaluate
from sklearn.metrics import f1_score

_DESCRIPTION = "F1: the harmonic mean of precision and recall, 2PR / (P + R)."
_INPUTS = """
Args:
    predictions (`list[int]`): predicted class ids (0 = not_biased, 1 = biased).
    references (`list[int]`): gold class ids.
    average (`str`): "binary" (default), "macro", "weighted" or "micro".
    pos_label (`int`): the positive class for "binary" (default 1 = biased).
    labels (`list[int]`): classes to score (default [0, 1], so a class absent from a small set still counts).
    zero_division (`float`): value of an undefined ratio (default 0).
Returns:
    f1 (`float`)
"""


class F1(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="",
            inputs_description=_INPUTS,
            features=datasets.Features({"predictions": datasets.Value("int32"), "references": datasets.Value("int32")}),
        )

    def _compute(self, predictions, references, average="binary", pos_label=1, labels=None, zero_division=0):
        score = f1_score(
            references, predictions, average=average, pos_label=pos_label,
            labels=[0, 1] if labels is None else labels, zero_division=zero_division,
        )
        return {"f1": float(score)}
