"""The sentence model's training, through the project's training engine
(:mod:`vilbias.training.engine`): a Hugging Face ``Trainer`` with the recipe's settings, early
stopping on validation loss with the best epoch kept (:class:`~vilbias.training.engine.BestEpoch`),
and what the sentence model needs on top, in one small subclass (:class:`SentenceTrainer`):

- batches of cached frozen-layer outputs (:class:`~vilbias.training.sentence_data.Example`),
  length-grouped by :func:`~vilbias.training.sentence_data.length_grouped_batches`;
- AdamW over every trained weight with the recipe's warm-up and schedule
  (:func:`~vilbias.training.engine.warmup_schedule`);
- the per-epoch log (sample-weighted training loss, validation loss, seconds);
- the SetFit-style contrastive stage as a second loss.

Prediction through the trained layers and the temperature fit are here too."""

from __future__ import annotations

import dataclasses
import logging
import math
import random
import tempfile
import time

import torch
from torch.utils.data import DataLoader
from transformers import Trainer, TrainerCallback
from vilbias.training.engine import BestEpoch, warmup_schedule
from vilbias.training.sentence_config import SentenceConfig
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

logger = logging.getLogger(__name__)


class LengthGroupedBatches:
    """A batch sampler: each epoch, :func:`length_grouped_batches` over the examples' indices,
    drawn from one ``random.Random(seed)`` that runs on across epochs. ``min_size`` leaves out
    batches too small for the loss (the contrastive stage needs pairs)."""

    def __init__(self, examples: list[Example], batch_size: int, seed: int, min_size: int = 1):
        self.lengths = [e.layer_input.shape[0] for e in examples]
        self.batch_size, self.rng, self.min_size = batch_size, random.Random(seed), min_size

    def __iter__(self):
        batches = length_grouped_batches(list(range(len(self.lengths))), self.batch_size, self.rng, key=self.lengths.__getitem__)
        return (b for b in batches if len(b) >= self.min_size)

    def __len__(self) -> int:
        # Every chunk of 50 batches but the last is full, so the count is the plain ceiling.
        return math.ceil(len(self.lengths) / self.batch_size)


def pair_loss(model, batch: dict):
    """SetFit's CosineSimilarityLoss over every pair in the batch: the mean-pooled embeddings'
    cosine regressed to 1 (same label) or 0 (different labels). Returns (loss, pairs)."""
    hidden = model.run_trained_layers(batch["layer_input"], batch["attention_mask"])
    emb = torch.nn.functional.normalize(mean_pool(hidden, batch["attention_mask"]), dim=-1)
    i, j = torch.triu_indices(len(emb), len(emb), 1)
    target = (batch["labels"][i] == batch["labels"][j]).float()
    return torch.nn.functional.mse_loss((emb[i] * emb[j]).sum(-1), target), len(i)


class EpochLog(TrainerCallback):
    """The per-epoch log the model's metrics keep: the training loss weighted by examples (or,
    in the contrastive stage, pairs), the validation loss, and the epoch's seconds."""

    def __init__(self, phase: str | None = None):
        self.phase, self.rows, self.loss, self.weight, self.started = phase, [], 0.0, 0, 0.0

    def add(self, loss: float, weight: int) -> None:
        self.loss, self.weight = self.loss + loss * weight, self.weight + weight

    def on_epoch_begin(self, args, state, control, **kwargs):
        self.loss, self.weight, self.started = 0.0, 0, time.perf_counter()

    def on_epoch_end(self, args, state, control, **kwargs):
        if self.phase:  # no validation in this phase: the epoch ends here
            self._row({"phase": self.phase})

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        self._row({"validation_loss": metrics["eval_loss"]})

    def _row(self, extra: dict) -> None:
        row = {"epoch": len(self.rows) + 1, "train_loss": self.loss / max(self.weight, 1), **extra,
               "seconds": time.perf_counter() - self.started}
        self.rows.append({k: row[k] for k in ("epoch", "phase", "train_loss", "validation_loss", "seconds") if k in row})
        logger.info("%sepoch %d: %s loss %.4f%s (%.0f s)", f"{self.phase} " if self.phase else "", row["epoch"],
                    "pair" if self.phase == "contrastive" else "train", row["train_loss"],
                    f", validation loss {row['validation_loss']:.4f}" if "validation_loss" in row else "", row["seconds"])


class SentenceTrainer(Trainer):
    """``Trainer`` over cached examples: length-grouped batches, the model's own loss (or the
    contrastive pair loss), and the per-epoch log."""

    def __init__(self, *args, batches: LengthGroupedBatches, log: EpochLog, contrastive: bool = False, callbacks=(), **kwargs):
        super().__init__(*args, data_collator=collate, callbacks=[log, *callbacks], **kwargs)
        self.batches, self.epoch_log, self.contrastive = batches, log, contrastive

    # Each loader draws its workers' base seed from its own generator, not torch's global one,
    # which dropout draws from: the weights then depend on the seed alone.
    def get_train_dataloader(self):
        return self.accelerator.prepare(DataLoader(self.train_dataset, batch_sampler=self.batches, collate_fn=collate,
                                                   generator=torch.Generator()))

    def get_eval_dataloader(self, eval_dataset=None):
        return self.accelerator.prepare(DataLoader(eval_dataset or self.eval_dataset, batch_size=self.args.eval_batch_size,
                                                   collate_fn=collate, generator=torch.Generator()))

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        if self.contrastive:
            (loss, weight), outputs = pair_loss(model, inputs), None
        else:
            outputs = model(**inputs)
            loss, weight = outputs["loss"], len(inputs["labels"])
        if model.training:
            self.epoch_log.add(loss.item(), weight)
        return (loss, outputs) if return_outputs else loss


def _train(model, train: list[Example], validation: list[Example] | None, args: SentenceConfig, *, epochs: int,
           params: list, contrastive: bool = False, callbacks: tuple = ()) -> list[dict]:
    # AdamW with decay on every trained weight and a warm-up from 1/warm of the peak: the optimizer
    # and schedule the shipped model was trained with (the Trainer's own would exempt biases and
    # norms from decay and warm up from 0).
    optimizer = torch.optim.AdamW(params, lr=args.learning_rate, weight_decay=args.weight_decay)
    total = epochs * math.ceil(len(train) / args.per_device_train_batch_size)
    scheduler = warmup_schedule(optimizer, str(getattr(args.lr_scheduler_type, "value", args.lr_scheduler_type)), args.warmup_steps, total)
    log = EpochLog("contrastive" if contrastive else None)
    callbacks = [*callbacks] + ([] if validation is None else [BestEpoch(args.patience, model.trained_state_dict, model.load_trained_state_dict)])
    with tempfile.TemporaryDirectory(prefix="vilbias-sentence-") as run_dir:
        run_args = dataclasses.replace(args, output_dir=run_dir, num_train_epochs=epochs, eval_strategy="epoch" if validation is not None else "no")
        trainer = SentenceTrainer(
            model=model, args=run_args, train_dataset=train, eval_dataset=validation, optimizers=(optimizer, scheduler),
            batches=LengthGroupedBatches(train, args.per_device_train_batch_size, args.seed, min_size=2 if contrastive else 1),
            log=log, contrastive=contrastive, callbacks=callbacks)
        trainer.train()
    model.eval()
    return log.rows


def fit(model, train: list[Example], validation: list[Example], args: SentenceConfig, epochs: int | None = None,
        callbacks: tuple = ()) -> list[dict]:
    """Train the adapter and heads for at most ``epochs`` (default: ``args``'); stop when the
    validation loss has not improved for ``args.patience`` epochs and keep the best epoch's
    weights. ``callbacks``: more ``TrainerCallback``s. Returns the per-epoch log."""
    return _train(model, train, validation, args, epochs=epochs or args.epochs, params=[p for p in model.parameters() if p.requires_grad],
                  callbacks=callbacks)


def contrastive_fit(model, train: list[Example], args: SentenceConfig, epochs: int) -> list[dict]:
    """SetFit's first stage (Tunstall et al., 2022, *Efficient Few-Shot Learning Without
    Prompts*) on the adapter: :func:`pair_loss` over every pair in a batch stands in for SetFit's
    sampled pairs (the same objective, no second pass over the data). Only the LoRA weights move;
    the heads train afterwards in :func:`fit`."""
    params = [p for n, p in model.named_parameters() if p.requires_grad and "lora_" in n]
    return _train(model, train, None, args, epochs=epochs, params=params, contrastive=True)


def predict(models, examples: list[Example], batch_size: int = 128):
    """Raw sentence logits ``(N, 2)`` and per-example word probabilities, through the trained
    layers only (the frozen ones are cached); a list of models is an ensemble whose sentence and
    word logits are averaged, as :class:`~vilbias.models.sentence_bias.SentenceBiasModel` does."""
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
