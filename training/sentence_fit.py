"""The sentence model's own training loop: AdamW over the adapter and heads with warm-up, early
stopping on validation loss (best epoch kept), the SetFit-style contrastive stage, prediction
through the trained layers, and the temperature fit. (The classifiers train through
:mod:`vilbias.training.engine`; moving this loop onto it is still to do.)"""

from __future__ import annotations

import logging
import math
import random
import time
from typing import TYPE_CHECKING

from vilbias.training.sentence_data import (
    Example,
    collate,
    length_grouped_batches,
)

from vilbias.metrics.calibration import (
    fit_temperature,
)
from vilbias.models.fusion import mean_pool
from vilbias.task import biased_probability

if TYPE_CHECKING:  # only types arguments; train_default imports this module
    from vilbias.training.train_default import Settings

logger = logging.getLogger(__name__)


def _lr_lambda(settings: Settings, total: int):
    warm = int(settings.warmup_ratio * total)

    def factor(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        if settings.lr_scheduler == "constant":
            return 1.0
        progress = (step - warm) / max(1, total - warm)
        return 0.5 * (1 + math.cos(math.pi * progress)) if settings.lr_scheduler == "cosine" else max(0.0, 1 - progress)

    return factor


def validation_loss(model, examples: list[Example], batch_size: int = 128) -> float:
    import torch

    model.eval()
    total = 0.0
    with torch.no_grad():
        for start in range(0, len(examples), batch_size):
            chunk = examples[start:start + batch_size]
            total += float(model(**collate(chunk))["loss"]) * len(chunk)
    return total / len(examples)


def fit(model, train: list[Example], validation: list[Example], settings: Settings) -> list[dict]:
    """Train the adapter and heads; stop when the validation loss has not improved for
    ``patience`` epochs and keep the best epoch's weights. Returns the per-epoch log."""
    import torch

    torch.manual_seed(settings.seed)
    rng = random.Random(settings.seed)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=settings.learning_rate, weight_decay=settings.weight_decay)
    total = settings.epochs * math.ceil(len(train) / settings.batch_size)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _lr_lambda(settings, total))
    best, best_state, waited, log = math.inf, None, 0, []
    for epoch in range(1, settings.epochs + 1):
        model.train()
        started, train_loss = time.perf_counter(), 0.0
        for batch in length_grouped_batches(train, settings.batch_size, rng):
            loss = model(**collate(batch))["loss"]
            loss.backward()
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            train_loss += loss.item() * len(batch)
        val = validation_loss(model, validation)
        log.append({"epoch": epoch, "train_loss": train_loss / len(train), "validation_loss": val, "seconds": time.perf_counter() - started})
        logger.info("epoch %d: train loss %.4f, validation loss %.4f (%.0f s)", epoch, log[-1]["train_loss"], val, log[-1]["seconds"])
        if val < best:
            best, best_state, waited = val, model.trained_state_dict(), 0
        else:
            waited += 1
            if settings.patience and waited >= settings.patience:
                break
    model.load_trained_state_dict(best_state)
    model.eval()
    return log


def contrastive_fit(model, train: list[Example], settings: Settings, epochs: int) -> list[dict]:
    """SetFit's first stage (Tunstall et al., 2022, *Efficient Few-Shot Learning Without
    Prompts*) on the adapter: the mean-pooled sentence embeddings of every pair in a batch are
    regressed to cosine 1 (same label) or 0 (different labels), SetFit's CosineSimilarityLoss.
    All pairs within a batch stand in for SetFit's sampled pairs (the same objective, no second
    pass over the data). Only the LoRA weights move; the heads train afterwards in :func:`fit`."""
    import torch


    rng = random.Random(settings.seed)
    params = [p for n, p in model.named_parameters() if p.requires_grad and "lora_" in n]
    optimizer = torch.optim.AdamW(params, lr=settings.learning_rate, weight_decay=settings.weight_decay)
    total = epochs * math.ceil(len(train) / settings.batch_size)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _lr_lambda(settings, total))
    log = []
    for epoch in range(1, epochs + 1):
        model.train()
        started, total_loss, pairs = time.perf_counter(), 0.0, 0
        for batch in length_grouped_batches(train, settings.batch_size, rng):
            if len(batch) < 2:
                continue
            b = collate(batch)
            hidden = model.run_trained_layers(b["layer_input"], b["attention_mask"])
            emb = torch.nn.functional.normalize(mean_pool(hidden, b["attention_mask"]), dim=-1)
            i, j = torch.triu_indices(len(batch), len(batch), 1)
            target = (b["labels"][i] == b["labels"][j]).float()
            loss = torch.nn.functional.mse_loss((emb[i] * emb[j]).sum(-1), target)
            loss.backward()
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            total_loss, pairs = total_loss + loss.item() * len(i), pairs + len(i)
        log.append({"epoch": epoch, "phase": "contrastive", "train_loss": total_loss / max(pairs, 1), "seconds": time.perf_counter() - started})
        logger.info("contrastive epoch %d: pair loss %.4f (%.0f s)", epoch, log[-1]["train_loss"], log[-1]["seconds"])
    return log


def predict(models, examples: list[Example], batch_size: int = 128):
    """Raw sentence logits ``(N, 2)`` and per-example word probabilities, through the trained
    layers only (the frozen ones are cached); a list of models is an ensemble whose sentence and
    word logits are averaged, as :class:`~vilbias.models.sentence_bias.SentenceBiasModel` does."""
    import torch

    models = models if isinstance(models, list) else [models]
    logits, word_probs = [], []
    for model in models:
        model.eval()
    with torch.no_grad():
        for start in range(0, len(examples), batch_size):
            chunk = examples[start:start + batch_size]
            batch = collate(chunk)
            outs = [model(**batch) for model in models]
            logits.append(torch.stack([o["logits"].float() for o in outs]).mean(0))
            probs = torch.stack([o["word_logits"].float() for o in outs]).mean(0).sigmoid()
            word_probs += [probs[i, :e.layer_input.shape[0]].tolist() for i, e in enumerate(chunk)]
    return torch.cat(logits), word_probs


def biased_probabilities(logits, temperature: float = 1.0) -> list[float]:
    return biased_probability(logits, temperature).tolist()


def fit_sentence_temperature(logits, labels: list[int]) -> float:
    return fit_temperature(logits.softmax(-1).tolist(), labels)
