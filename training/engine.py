"""The training engine: one Hugging Face ``Trainer`` set-up for every model the project trains.
The classifiers (text, fusion) train through :func:`fit` with the paper's settings, early stopping
on the validation split, optional focal loss and class weights, and the metrics the evaluation
reports; :func:`probabilities` scores a split with one. The sentence model
(:mod:`vilbias.training.sentence_fit`) subclasses the same ``Trainer`` over cached features, with
:func:`warmup_schedule` and :class:`BestEpoch` from here. :func:`cross_validate` is the one 5-fold
loop both ``--cv`` runs go through."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import math
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from transformers import TrainerCallback
from vilbias.training import distant
from vilbias.training.classifier_config import ClassifierConfig
from vilbias.training.classifier_data import (
    Collator,
    featurize,
)
from vilbias.training.feature_cache import FeatureCache, encoder_identity
from vilbias.training.losses import balanced_class_weights, make_compute_loss_func

from vilbias import stops
from vilbias.config import config_dict
from vilbias.metrics.scores import (
    closed_metrics,
    summarize_folds,
)
from vilbias.models.fusion import FusionConfig, FusionForClassification, resolve_model_path
from vilbias.task import FOLDS, LABEL_NAMES

logger = logging.getLogger(__name__)


def build_model(cfg: ClassifierConfig, init_encoder: Path | None = None):
    """(model, tokenizer, max_length) for the configured architecture; ``init_encoder`` (a
    pre-trained encoder folder) replaces the encoder's weights, the head stays fresh."""
    from transformers import AutoModel, AutoModelForSequenceClassification, AutoTokenizer

    id2label = dict(enumerate(LABEL_NAMES))
    if cfg.architecture == "fusion":
        uses_text = "text" in cfg.modality
        model = FusionForClassification(FusionConfig(
            text_encoder=cfg.model if uses_text else None,
            image_encoder=cfg.image_encoder if "image" in cfg.modality else None,
            modality=cfg.modality, hidden_size=cfg.hidden_size,
            freeze_text_encoder=cfg.freeze_text_encoder, freeze_image_encoder=cfg.freeze_image_encoder,
        ))
        tokenizer = model.tokenizer
        max_length = _max_length(cfg, tokenizer, model.text_encoder.config if uses_text else None)
        model.config.max_text_length = max_length
    else:
        path = resolve_model_path(cfg.model)
        tokenizer = AutoTokenizer.from_pretrained(path)
        if tokenizer.pad_token is None:
            # GPT-2 and other decoders ship without a pad token; the classifier reads the last
            # non-pad token, so padding with EOS is the usual choice.
            tokenizer.pad_token = tokenizer.eos_token
        model = AutoModelForSequenceClassification.from_pretrained(
            path, num_labels=len(LABEL_NAMES), id2label=id2label, label2id={n: i for i, n in id2label.items()}
        )
        model.config.pad_token_id = tokenizer.pad_token_id
        max_length = _max_length(cfg, tokenizer, model.config)
    if init_encoder is not None:
        # The saved config keeps naming the base model; the weights carry the pre-training.
        distant.encoder_of(model).load_state_dict(AutoModel.from_pretrained(str(init_encoder)).state_dict())
    return model, tokenizer, max_length


def _max_length(cfg: ClassifierConfig, tokenizer, model_config) -> int:
    if cfg.max_length:
        return cfg.max_length
    if tokenizer is None:  # the image-only control reads no text
        return 0
    limits = [512, tokenizer.model_max_length or 512]
    if model_config is not None and getattr(model_config, "max_position_embeddings", None):
        limits.append(model_config.max_position_embeddings)
    return int(min(limits))


def _compute_metrics(eval_pred) -> dict:
    logits, labels = eval_pred
    scores = closed_metrics(labels.tolist(), logits.argmax(-1).tolist())
    for key in ("confusion_matrix", "n", "unparseable", "unparseable_rate"):
        scores.pop(key)
    return scores


def training_arguments(cfg: ClassifierConfig, run_dir: Path, seed: int, *, tokens: bool = True) -> ClassifierConfig:
    """The ``Trainer`` arguments of one run: ``cfg`` itself (a ``TrainingArguments``), with what
    belongs to this run: its checkpoint folder, its seed (an ensemble member's), progress bars that
    follow the log level, no push from the Trainer (vilbias pushes once, with its card), and no
    pinned memory without an accelerator to pin it for (torch warns about it on every epoch)."""
    import torch

    strategy = cfg.train_sampling_strategy
    if strategy == "group_by_length" and not tokens:
        strategy = "random"  # length-grouped batches need token ids to measure (not cached features)
    return dataclasses.replace(
        cfg, output_dir=str(run_dir / "checkpoints"), seed=seed, train_sampling_strategy=strategy,
        disable_tqdm=not logger.isEnabledFor(logging.INFO), push_to_hub=False,
        dataloader_pin_memory=cfg.dataloader_pin_memory and torch.accelerator.is_available(),
    )


def warmup_schedule(optimizer, kind: str, warmup_ratio: float, total: int):
    """Linear warm-up over ``int(warmup_ratio * total)`` steps from ``1/warm`` of the peak (the
    first step already learns), then ``constant``, ``cosine`` or ``linear`` decay to 0: the
    schedule the shipped sentence model was trained with (transformers' own warm-up starts at 0)."""
    import torch

    warm = int(warmup_ratio * total)

    def factor(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        if kind == "constant":
            return 1.0
        progress = (step - warm) / max(1, total - warm)
        return 0.5 * (1 + math.cos(math.pi * progress)) if kind == "cosine" else max(0.0, 1 - progress)

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


class BestEpoch(TrainerCallback):
    """Early stopping on the validation loss, with the best epoch's weights kept in memory and
    restored when training ends: for models whose trained part is small (an adapter and heads),
    where writing a checkpoint each epoch would cost more than the epoch.

    Args:
        patience: Epochs without improvement before stopping (0: never stop early).
        state_of: Returns the trained weights (a state dict detached from the model).
        load_state: Puts such a state dict back.
    """

    def __init__(self, patience: int, state_of, load_state):
        self.patience, self.state_of, self.load_state = patience, state_of, load_state
        self.best, self.state, self.waited = math.inf, None, 0

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        loss = metrics["eval_loss"]
        if loss < self.best:
            self.best, self.state, self.waited = loss, self.state_of(), 0
        else:
            self.waited += 1
            if self.patience and self.waited >= self.patience:
                control.should_training_stop = True

    def on_train_end(self, args, state, control, **kwargs):
        if self.state is not None:
            self.load_state(self.state)


def make_trainer(cfg: ClassifierConfig, model, tokenizer, data: dict, run_dir: Path, seed: int):
    """The ``Trainer`` with the configured loss (focal and/or class-weighted), early stopping and
    best-checkpoint reload."""
    from transformers import EarlyStoppingCallback, Trainer

    weights = balanced_class_weights(data["train"]["labels"], len(LABEL_NAMES)) if cfg.class_weighting == "balanced" else None
    custom_loss = cfg.loss == "focal" or weights is not None
    drop = lambda d: d.remove_columns([c for c in ("unique_id",) if c in d.column_names])  # noqa: E731
    return Trainer(
        model=model,
        args=training_arguments(cfg, run_dir, seed, tokens="input_ids" in data["train"].column_names),
        train_dataset=drop(data["train"]),
        eval_dataset=drop(data["validation"]),
        data_collator=Collator(tokenizer, getattr(model, "image_encoder", None)),
        compute_metrics=_compute_metrics,
        callbacks=[EarlyStoppingCallback(early_stopping_patience=cfg.patience)] if cfg.patience > 0 else [],
        compute_loss_func=make_compute_loss_func(cfg.loss, alpha=cfg.focal_alpha, gamma=cfg.focal_gamma, class_weights=weights) if custom_loss else None,
    )


RESUME_FILE = "vilbias_resume.json"
"""Written last into a checkpoint saved on a stop: it resumes the run whose fingerprint it holds."""


def _run_fingerprint(cfg: ClassifierConfig, splits, label: str, seed: int, init_encoder: Path | None) -> str:
    """What a resumed run must share with the stopped one: every setting, the seed, the label and
    the rows of each split in their order."""
    rows = {name: hashlib.sha256("\n".join(map(str, split["unique_id"] if "unique_id" in split.column_names else
                                                range(len(split)))).encode()).hexdigest() for name, split in splits.items()}
    what = {"settings": config_dict(cfg), "seed": seed, "label": label, "init_encoder": str(init_encoder), "rows": rows}
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()


class SaveOnStop(TrainerCallback):
    """Stops training at the next optimizer step (or epoch) boundary after a Ctrl-C or SIGTERM
    (:func:`vilbias.stops.deferred`), with a full checkpoint (weights, optimizer, scheduler, RNG
    and trainer state: ``Trainer._save_checkpoint`` as transformers' own SIGTERM checkpointing
    calls it) that ``Trainer.train(resume_from_checkpoint=...)`` continues exactly: the next step
    sees the batch and random state it would have seen, and the log (each epoch's loss and
    ``grad_norm``, the run's ``train_loss``) is the one a run never stopped writes. Checked at the
    start of a step or epoch, so the previous step's logging, evaluation and epoch checkpoint are
    done. The epoch checkpoints keep the model only (``save_only_model``), so only a stop's
    checkpoint resumes. The record also keeps torch's CPU thread count, which the re-run trains
    with (:func:`torch_threads`): float sums split over another number of threads round
    differently, so the weights would differ.

    A stop in the middle of an epoch resumes exactly because the record also keeps the random
    state the epoch began with (``epoch_rng``: Python's, NumPy's and torch's CPU generator, as
    :meth:`on_epoch_begin` found them), put back when the resumed epoch begins. transformers does
    not: the epoch's batch order is drawn when its dataloader is iterated, from torch's global
    generator (the length-grouped sampler, ``train_sampling_strategy="group_by_length"``, the
    classifiers' default, calls ``torch.randperm`` without a generator of its own, and the
    ``DataLoader`` draws its base seed there too), and on a mid-epoch resume ``_run_epoch`` skips
    the epoch's first batches (``skip_first_batches``) of an order drawn from the fresh process's
    state, loading the checkpoint's RNG state (``_load_rng_state``) only after the first batch.
    The resumed epoch then trained on other batches: its logged loss and ``grad_norm`` differed
    and every later weight drifted (at an epoch boundary transformers loads the state before the
    order is drawn, which is why those stops always resumed exactly). A stop asked for between an
    epoch's start and its first step waits for that step's end: its random state at that point is
    past the order's draw, and transformers, seeing an epoch boundary, would load it before the
    draw. Likewise a stop asked for as a run resumes mid-epoch waits for the resumed epoch's first
    step to begin (the stop's own step again), when the random state is the stop's again.

    Args:
        trainer: The ``Trainer`` this callback is added to.
        fingerprint: The run's identity (:func:`_run_fingerprint`): a checkpoint of another run is not resumed.
    """

    def __init__(self, trainer, fingerprint: str):
        self.trainer, self.fingerprint = trainer, fingerprint
        self.logging: dict[str, Any] | None = None
        self.epoch_first_step: int | None = None  # the global step the current epoch began at
        self.epoch_rng: dict[str, Any] | None = None  # the random state it began with (_rng_state)

    @property
    def checkpoints(self) -> Path:
        return Path(self.trainer.args.output_dir)

    def resumable(self) -> Path | None:
        """The latest checkpoint a stop of this same run saved, or None. (A record without the
        epoch's random state, from before it was kept, is not resumed: it would not resume exactly.)"""
        found = []
        for folder in self.checkpoints.glob("checkpoint-*"):
            try:
                record = json.loads((folder / RESUME_FILE).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if record.get("fingerprint") == self.fingerprint and "epoch_rng" in record:
                found.append((record["step"], folder, record))
        if not found:
            return None
        _, folder, self.logging = max(found, key=lambda f: f[0])
        return folder

    def on_train_begin(self, args, state, control, **kwargs):
        if self.logging is not None:
            # The losses so far: the resumed epoch logs its loss over all its steps, and the run's
            # train_loss covers the whole run, as if it had not stopped.
            self.trainer._tr_loss += self.logging["loss_since_log"]
            self.trainer._globalstep_last_logged = self.logging["last_logged_step"]
            self.trainer._total_loss_scalar = self.logging["logged_loss"]
            self.trainer._initial_global_step = self.logging["first_step"]

    def on_epoch_begin(self, args, state, control, **kwargs):
        resumed, self.logging = self.logging, None
        if resumed is not None:
            # The epoch the stop fell in: the random state it began with (transformers loads the
            # stop's own state after the epoch's first batch, or here before it at an epoch boundary).
            self.epoch_first_step, self.epoch_rng = resumed["epoch_first_step"], resumed["epoch_rng"]
            _set_rng_state(self.epoch_rng)
        else:
            self.epoch_first_step, self.epoch_rng = state.global_step, _rng_state()
        if state.global_step == self.epoch_first_step:  # not a resumed epoch's middle: its state is the epoch's start
            self._stop_if_asked(state)

    def on_step_begin(self, args, state, control, **kwargs):
        # At the epoch's first step a stop waits for its end (see the class docstring); before the
        # run's first step there is nothing to keep.
        if state.global_step != self.epoch_first_step or state.global_step == 0:
            self._stop_if_asked(state)

    def _stop_if_asked(self, state) -> None:
        if not stops.requested():
            return
        import torch

        if state.global_step == 0:
            raise stops.Stopped("training stopped before its first step: nothing kept; a re-run starts over")
        trainer, args = self.trainer, self.trainer.args
        only_model = args.save_only_model
        args.save_only_model = False  # this one resumes: optimizer, scheduler and RNG states too
        try:
            trainer._save_checkpoint(trainer.model, trial=None)
        finally:
            args.save_only_model = only_model
        folder = self.checkpoints / f"checkpoint-{state.global_step}"
        record = {"fingerprint": self.fingerprint, "step": state.global_step, "loss_since_log": trainer._tr_loss.item(),
                  "last_logged_step": trainer._globalstep_last_logged, "logged_loss": trainer._total_loss_scalar,
                  "first_step": trainer._initial_global_step, "torch_threads": torch.get_num_threads(),
                  "epoch_first_step": self.epoch_first_step, "epoch_rng": self.epoch_rng}
        (folder / RESUME_FILE).write_text(json.dumps(record) + "\n", encoding="utf-8")
        raise stops.Stopped(f"training stopped at step {state.global_step} of {state.max_steps}; checkpoint {folder} "
                            "kept: re-run the same command to resume from it")


def _rng_state() -> dict[str, Any]:
    """The random state an epoch's batch order is drawn from, as JSON: Python's, NumPy's (legacy
    global) and torch's CPU generator (an accelerator's generators draw no batch order, and
    transformers' own RNG file puts them back after the resumed epoch's first batch)."""
    import random

    import torch

    version, internal, gauss = random.getstate()
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    return {"python": [version, list(internal), gauss],
            "numpy": [kind, keys.tolist(), int(pos), int(has_gauss), float(cached)],
            "torch": torch.random.get_rng_state().tolist()}


def _set_rng_state(saved: dict[str, Any]) -> None:
    """Put back a :func:`_rng_state`."""
    import random

    import torch

    version, internal, gauss = saved["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, keys, pos, has_gauss, cached = saved["numpy"]
    np.random.set_state((kind, np.array(keys, dtype=np.uint32), pos, has_gauss, cached))
    torch.random.set_rng_state(torch.tensor(saved["torch"], dtype=torch.uint8))


@contextlib.contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """Within the block, torch runs its CPU operations on ``threads`` threads (None: as it is);
    the caller's setting comes back after. A run resumed from a stop's checkpoint trains with the
    stopped run's count: the same steps summed over another number of threads round differently
    in the last bits, so a re-run with another ``OMP_NUM_THREADS`` (or in a process that changed
    it) would not end at the weights of the run never stopped."""
    import torch

    before = torch.get_num_threads()
    if threads and threads != before:
        logger.info("training on %d torch threads as the stopped run did (this process has %d), so that it resumes exactly",
                    threads, before)
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


@dataclass
class Fitted:
    """One trained model and what it was trained with."""

    model: Any
    tokenizer: Any
    trainer: Any
    data: dict
    max_length: int
    train_runtime_s: float


def fit(cfg: ClassifierConfig, splits, label: str, run_dir: Path, *, seed: int, init_encoder: Path | None = None) -> Fitted:
    """Train one model on ``splits["train"]``, early-stopping on ``splits["validation"]``; the
    best validation checkpoint is the one returned."""
    from transformers import set_seed

    set_seed(seed)
    model, tokenizer, max_length = build_model(cfg, init_encoder)
    cache = None
    if cfg.architecture == "fusion" and model.config.uses_image and cfg.freeze_image_encoder:
        cache = FeatureCache(encoder_identity(cfg.image_encoder), cfg.feature_cache)
    data = {name: featurize(cfg, split, label, model, tokenizer, max_length, cache) for name, split in splits.items()}
    if cache is not None:
        logger.info("image features: %d from cache, %d computed (%s)", cache.hits, cache.misses, cache.dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    trainer = make_trainer(cfg, model, tokenizer, data, run_dir, seed)
    # A stop (Ctrl-C, SIGTERM) finishes the step under way and saves a checkpoint this same run resumes from.
    on_stop = SaveOnStop(trainer, _run_fingerprint(cfg, splits, label, seed, init_encoder))
    trainer.add_callback(on_stop)
    resume = on_stop.resumable()
    if resume is None:
        shutil.rmtree(run_dir / "checkpoints", ignore_errors=True)  # another run's, or model-only: not resumable
    else:
        logger.info("resuming %s from its checkpoint at step %s", run_dir, resume.name.rpartition("-")[2])
    with stops.deferred(), torch_threads(on_stop.logging.get("torch_threads") if resume else None):
        result = trainer.train(resume_from_checkpoint=str(resume) if resume else None)
    shutil.rmtree(run_dir / "checkpoints", ignore_errors=True)
    return Fitted(trainer.model, tokenizer, trainer, data, max_length, result.metrics.get("train_runtime", 0.0))


def probabilities(model, collator, dataset, batch_size: int = 64) -> np.ndarray:
    """Class probabilities for ``dataset``'s rows, in its order. (``Trainer.predict`` is not used:
    with length-grouped batching it also reorders evaluation batches.)"""
    import torch

    rows = dataset.remove_columns([c for c in ("unique_id",) if c in dataset.column_names])
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    out = []
    with torch.no_grad():
        for start in range(0, len(rows), batch_size):
            batch = collator([rows[i] for i in range(start, min(start + batch_size, len(rows)))])
            batch.pop("labels")
            out.append(model(**{k: v.to(device) for k, v in batch.items()}).logits.float().softmax(-1).cpu().numpy())
    model.train(was_training)
    return np.concatenate(out)


def cross_validate(train_fold: Callable[[str], dict]) -> tuple[list[dict], dict]:
    """5-fold cross-validation: ``train_fold(name)`` trains on ``fold_K``'s train split and returns
    its test metrics, for ``fold_0`` … ``fold_4`` in order (each fold's test split is that fold;
    the other four are its training pool). Returns the per-fold metrics and their mean ± std."""
    per_fold = []
    for k, name in enumerate(FOLDS):
        logger.info("fold %d/%d", k + 1, len(FOLDS))
        per_fold.append(train_fold(name))
    return per_fold, summarize_folds(per_fold)
