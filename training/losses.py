"""Focal loss (Lin et al., 2017), the paper's optional loss for the classifier baselines."""

from __future__ import annotations


def focal_loss(logits, labels, *, alpha: float = 1.0, gamma: float = 2.0):
    """Mean focal loss ``-alpha * (1 - p_t) ** gamma * log(p_t)`` over a batch.

    With ``gamma=0`` and ``alpha=1`` it is exactly the cross-entropy; larger ``gamma``
    down-weights examples the model already gets right.

    Args:
        logits: ``(batch, num_labels)`` float tensor.
        labels: ``(batch,)`` class ids.
        alpha: constant weight on every example (the paper uses 1).
        gamma: focusing exponent (the paper uses 2).
    """
    import torch.nn.functional as F

    log_p = F.log_softmax(logits.float(), dim=-1).gather(1, labels.long().unsqueeze(1)).squeeze(1)
    return (-alpha * (1.0 - log_p.exp()) ** gamma * log_p).mean()


def make_compute_loss_func(alpha: float, gamma: float):
    """A ``compute_loss_func`` for :class:`transformers.Trainer` that applies :func:`focal_loss`."""

    def compute_loss(outputs, labels, num_items_in_batch=None):
        return focal_loss(outputs["logits"], labels, alpha=alpha, gamma=gamma)

    return compute_loss
