"""What ``vilbias train sentence`` is told: :class:`SentenceConfig`, a ``transformers.TrainingArguments``
(as :class:`~vilbias.training.classifier_config.ClassifierConfig` and TRL's ``SFTConfig`` are) with
the shipped sentence model's settings as its defaults and the sentence model's own fields added.

Every ``Trainer`` setting is the ``TrainingArguments`` field of that name
(``--per-device-train-batch-size``, ``--num-train-epochs``, ``--learning-rate``,
``--lr-scheduler-type``, ``--warmup-steps`` (below 1: a share of the steps), ``--weight-decay``,
``--seed``, ``--output`` (``output_dir``)) and reaches the ``Trainer`` as it is. A recipe
(``--recipe PATH.yaml``, flat YAML of these fields) and ``--config FILE.yaml`` give defaults;
flags override both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from vilbias.training.arguments import TrainingConfig, redeclared

from vilbias.models.configs import SentenceBiasConfig
from vilbias.provenance import is_hub_id

_MODEL = SentenceBiasConfig()
"""The architecture's defaults (:class:`SentenceBiasConfig`), which the command's defaults are."""


@dataclass
class SentenceConfig(TrainingConfig):
    """``TrainingArguments`` for the Space's sentence model (MiniLM + LoRA, word and sentence heads)
    on a BABE-format file, with the shipped model's settings as defaults."""

    data_field = "sentences"

    # -- TrainingArguments fields with the shipped model's values: the tuned MiniLM classifier's
    # schedule (batch 16, at most 6 epochs, linear decay after 10% warm-up, weight decay 0.01,
    # seed 0; training/recipes/classifier/babe-minilm.yaml) at ten times its learning rate (a LoRA
    # adapter and fresh heads train hotter than full fine-tuning); the validation loss each epoch
    # for early stopping, whose best weights are kept in memory (no checkpoints: an epoch costs
    # less than writing one), no gradient clipping, on the CPU where the cached features are.
    output_dir: str | None = redeclared(
        "output_dir", "outputs/default_model", aliases=["--output"], deprecated=["--output-dir"],
        help="Where the model goes: a new or empty folder, or an earlier sentence model holding only its own files, which "
             "is replaced; a folder holding anything else is refused.")
    per_device_train_batch_size: int = redeclared("per_device_train_batch_size", 16)
    per_device_eval_batch_size: int = redeclared("per_device_eval_batch_size", 128)
    num_train_epochs: float = redeclared("num_train_epochs", 6.0, deprecated=["--epochs"])
    learning_rate: float = redeclared("learning_rate", 5e-4)
    lr_scheduler_type: str = redeclared("lr_scheduler_type", "linear")
    warmup_steps: float = redeclared("warmup_steps", 0.1)
    save_strategy: str = redeclared("save_strategy", "no")
    logging_strategy: str = redeclared("logging_strategy", "no")
    prediction_loss_only: bool = redeclared("prediction_loss_only", True)
    max_grad_norm: float = redeclared("max_grad_norm", 0.0)
    use_cpu: bool = redeclared("use_cpu", True)

    # -- the sentence model's own fields
    sentences: Path | None = field(default=None, metadata={"help": "Labelled sentences to build the corpus from and train on (what `vilbias build --sentences` reads: BABE's final_labels_SG2_public.csv, a CSV of text and label columns, …). Its labels are used as they are: where BABE's SG1 and SG2 disagree, pass SG2, the final and larger expert set."})
    dataset: str | None = field(default=None, metadata={"help": "Instead of --sentences: a built sentence corpus (a folder `vilbias build --sentences` wrote, or a Hub id ORG/NAME). Training, early stopping, calibration and the test figures use its own splits."})
    columns: list[str] = field(default_factory=list, metadata={"aliases": ["--column"], "metavar": "FIELD=COLUMN", "help": "With --sentences: a field read from another column, as `vilbias build --sentences --column` (text, label, news_link, …)."})
    source_split: str | None = field(default=None, metadata={"help": "With --sentences naming a dataset whose splits are not train/test (MBIB's tasks): the split to build, as `vilbias build --source-split`."})
    recipe: str | None = field(default=None, metadata={"help": "Recipe YAML (a path, or a name under training/recipes/) of this command's fields: its values are the defaults, flags override them."})
    cv: bool = field(default=False, metadata={"help": "Also run the 5-fold CV (whole articles per fold) and report its macro-F1 mean ± std."})
    work_dir: Path | None = field(default=None, metadata={"help": "Where the sentence corpus is built (default: a temporary folder)."})
    patience: int = field(default=2, metadata={"help": "Epochs without a lower validation loss before stopping (the best epoch's weights are kept); 0: never stop early."})
    max_length: int = field(default=_MODEL.max_length, metadata={"help": "Tokens per sentence (BABE's longest is about 130)."})
    trained_layers: list[int] = field(default_factory=lambda: list(_MODEL.trained_layers), metadata={"help": "MiniLM layers carrying the LoRA adapter (the ones below are frozen and their output cached once)."})
    lora_r: int = field(default=_MODEL.lora_r, metadata={"help": "LoRA rank (alpha is twice the rank)."})
    word_loss_weight: float = field(default=_MODEL.word_loss_weight, metadata={"help": "Weight of the biased-word loss next to the sentence loss."})
    opinion_loss_weight: float = field(default=_MODEL.opinion_loss_weight, metadata={"help": "Weight of an auxiliary loss on BABE's label_opinion (0: none); training only, nothing of it is saved."})
    distant_dataset: str | None = field(default=None, metadata={"help": "Distant corpus to pre-train every model on before the expert labels (headline + outlet with --distant-outlet-labels, or headline + label; see vilbias.training.distant). Rows sharing a text or link with a split's validation or test rows are dropped for that split."})
    distant_outlet_labels: Path | None = field(default=None, metadata={"help": "YAML/JSON map outlet: biased | not_biased for a distant corpus labelled by outlet."})
    distant_epochs: int = field(default=1, metadata={"help": "Most epochs of distant pre-training (early stopping on the loss of a tenth of the distant rows, patience 1)."})
    contrastive_epochs: int = field(default=0, metadata={"help": "Epochs of SetFit-style contrastive pre-fine-tuning of the adapter before the usual training (0: none): sentence pairs with the same label pulled to cosine 1, others to 0."})
    ensemble: int = field(default=1, metadata={"help": "Members per model: adapters and heads trained alike from seeds seed, seed+1, …; their logits are averaged (CV folds too)."})
    threads: int | None = field(default=None, metadata={"help": "torch CPU threads (default: torch's choice). The shipped model was trained with 1: weights depend on it."})

    def __post_init__(self):
        if isinstance(self.output_dir, Path):  # as TrainingArguments keeps it: a string
            self.output_dir = str(self.output_dir)
        if (self.sentences is None) == (self.dataset is None):
            raise ValueError("train on labelled sentences: --sentences FILE (built into a corpus first) or --dataset CORPUS (one built "
                             "by `vilbias build --sentences`), one of them")
        if self.sentences is not None:
            self.sentences = Path(self.sentences)
            if not self.sentences.exists() and not is_hub_id(str(self.sentences)):
                raise FileNotFoundError(f"{self.sentences} not found: pass BABE's final_labels_SG2_public.csv or final_labels_SG1.csv "
                                        "(or a CSV of text and label columns)")
        elif self.columns or self.source_split:
            raise ValueError("--column and --source-split go with --sentences (a built corpus has its columns and splits)")
        elif Path(self.dataset).exists() and not (Path(self.dataset) / "build_report.json").is_file():
            raise FileNotFoundError(f"--dataset {self.dataset} is not a corpus `vilbias build --sentences` wrote (no build_report.json); "
                                    f"build it with `vilbias build --sentences FILE --output {self.dataset}`, or pass the file with --sentences")
        if self.max_length < 8:
            raise ValueError(f"--max-length {self.max_length} leaves no room for a sentence: at least 8 tokens (BABE's longest "
                             "sentence is about 130; a longer one is read in overlapping windows)")
        if self.learning_rate <= 0 or self.lora_r < 1 or self.ensemble < 1 or not self.trained_layers:
            raise ValueError("--learning-rate, --lora-r and --ensemble must be positive and --trained-layers non-empty")
        super().__post_init__()

    @property
    def epochs(self) -> int:
        """Whole epochs: the cached-feature batches make no partial epoch."""
        return math.ceil(self.num_train_epochs)

    def model_config(self) -> SentenceBiasConfig:
        """The architecture these options train."""
        return SentenceBiasConfig(trained_layers=sorted(self.trained_layers), lora_r=self.lora_r, lora_alpha=2 * self.lora_r,
                                  word_loss_weight=self.word_loss_weight, opinion_loss_weight=self.opinion_loss_weight,
                                  max_length=self.max_length)

