"""Training losses of the classifier baselines: the cross-entropy, optionally weighted by class,
and the focal loss (Lin et al., 2017), the paper's optional loss.

torch is imported inside the functions (``import vilbias.training`` stays light).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence


def focal_loss(logits, labels, *, alpha: float = 1.0, gamma: float = 2.0, weight=None):
    """Mean focal loss ``-alpha * w_y * (1 - p_t) ** gamma * log(p_t)`` over a batch.

    With ``gamma=0``, ``alpha=1`` and no ``weight`` it is exactly the cross-entropy; larger
    ``gamma`` down-weights examples the model already gets right.

    Args:
        logits: ``(batch, num_labels)`` float tensor.
        labels: ``(batch,)`` class ids.
        alpha: constant weight on every example (the paper uses 1).
        gamma: focusing exponent (the paper uses 2).
        weight: optional ``(num_labels,)`` per-class weights; the mean is then weighted, as
            ``torch.nn.functional.cross_entropy`` does it.
    """
    import torch.nn.functional as F

    labels = labels.long()
    log_p = F.log_softmax(logits.float(), dim=-1).gather(1, labels.unsqueeze(1)).squeeze(1)
    per_example = -alpha * (1.0 - log_p.exp()) ** gamma * log_p
    if weight is None:
        return per_example.mean()
    w = weight.to(per_example.device, per_example.dtype)[labels]
    return (w * per_example).sum() / w.sum()


def balanced_class_weights(labels: Sequence[int], num_labels: int) -> list[float]:
    """``n / (num_labels * count_c)`` per class (scikit-learn's "balanced"); 1.0 for an absent class."""
    counts = Counter(int(y) for y in labels)
    n = len(labels)
    return [n / (num_labels * counts[c]) if counts[c] else 1.0 for c in range(num_labels)]


def make_compute_loss_func(loss: str = "cross_entropy", *, alpha: float = 1.0, gamma: float = 2.0, class_weights: Sequence[float] | None = None):
    """A ``compute_loss_func`` for :class:`transformers.Trainer`: the focal loss, or the
    cross-entropy weighted by ``class_weights``.

    Args:
        loss: ``"focal"`` or ``"cross_entropy"``.
        alpha, gamma: the focal loss's parameters.
        class_weights: per-class weights (see :func:`balanced_class_weights`), or None.
    """
    import torch
    import torch.nn.functional as F

    weight = torch.tensor(class_weights, dtype=torch.float32) if class_weights is not None else None

    def compute_loss(outputs, labels, num_items_in_batch=None):
        logits = outputs["logits"]
        if loss == "focal":
            return focal_loss(logits, labels, alpha=alpha, gamma=gamma, weight=weight)
        return F.cross_entropy(logits.float(), labels.long(), weight=None if weight is None else weight.to(logits.device))

    return compute_loss
