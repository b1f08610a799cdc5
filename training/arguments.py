"""What every vilbias training config is built on: ``transformers.TrainingArguments`` (as TRL's
``SFTConfig`` is), :func:`redeclared` (a field of it with vilbias's default and transformers' own
help, as TRL redeclares the fields whose defaults it changes) and :class:`TrainingConfig`, the
part the classifier and sentence configs share (the output folder as a path, recipes of their
fields, the checks of the fields both read)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from vilbias.training import recipe as recipes
from vilbias.training.preflight import quiet_bitsandbytes

quiet_bitsandbytes()  # transformers' Trainer imports PEFT and with it bitsandbytes; no 4-bit here
from transformers import TrainingArguments  # noqa: E402

_HELP = {f.name: f.metadata.get("help", "") for f in dataclasses.fields(TrainingArguments)}


def redeclared(name: str, default: Any, **metadata: Any) -> Any:
    """A ``TrainingArguments`` field with vilbias's default, transformers' help, and ``metadata`` (aliases)."""
    return field(default=default, metadata={"help": _HELP[name], **metadata})


@dataclass
class TrainingConfig(TrainingArguments):
    """``TrainingArguments`` with what every vilbias training command adds: ``--recipe`` files of
    its fields (:meth:`read_recipe`), ``output_path``, and the batch size and epochs checked
    before anything loads. Subclasses name their data field (``dataset``, ``sentences``), which a
    recipe may not set."""

    data_field: ClassVar[str] = ""

    # What every vilbias model trains with: decoupled weight decay 0.01 and seed 0 (the ViLBias
    # paper's and BABE's settings, which the sentence model's recipe keeps), the validation split
    # scored each epoch (early stopping), and every column handed to the collator (which picks).
    weight_decay: float = redeclared("weight_decay", 0.01)
    seed: int = redeclared("seed", 0)
    eval_strategy: str = redeclared("eval_strategy", "epoch")
    remove_unused_columns: bool = redeclared("remove_unused_columns", False)

    def __post_init__(self):
        if self.per_device_train_batch_size < 1 or self.num_train_epochs <= 0:
            raise ValueError("--per-device-train-batch-size and --num-train-epochs must be positive")
        super().__post_init__()

    @property
    def output_path(self) -> Path:
        """``output_dir`` as a path."""
        return Path(self.output_dir)

    @classmethod
    def read_recipe(cls, recipe: str | Path) -> dict[str, Any]:
        """A recipe's values: fields of this config other than ``recipe`` and its data field.

        Raises:
            FileNotFoundError: no such recipe.
            ValueError: the recipe sets a field this config does not have.
        """
        return recipes.read_recipe(recipe, {f.name for f in dataclasses.fields(cls) if f.init} - {"recipe", cls.data_field})[1]


__all__ = ["TrainingArguments", "TrainingConfig", "redeclared"]
