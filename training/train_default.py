"""Train the Space's offline default: a sentence-level bias scorer on BABE's expert labels.

    python -m vilbias.training.train_default --sentences ../shared/data/babe/final_labels_SG2_public.csv
        # -> outputs/default_model/ ; the shipped copy: --output-dir training/default_model

The model (:mod:`vilbias.models.sentence_bias`) is the packaged all-MiniLM-L6-v2 with a LoRA
adapter on its top layers, a word head trained on BABE's biased words and a sentence head.
The shipped folder holds the adapter and heads (about a megabyte), never a copy of MiniLM.

What the run does, in order:

1. Builds the sentence corpus with ``vilbias build --sentences`` (BABE's ``No agreement`` rows
   dropped) and deals whole articles into splits and folds (:func:`article_splits`: sentences
   grouped by ``news_link``, so no article is both trained and tested on).
2. Caches, once, the frozen lower layers' output for every sentence (the LoRA sits above them).
3. 5-fold CV (``fold_0`` … ``fold_4``; each fold stops early and fits its temperature on its own
   validation articles, about a tenth of its training pool): macro-F1 mean ± std.
4. The final model: ``default`` train split, early stopping on validation loss; temperature and
   word threshold fitted on the validation split.
5. The article rule (statistic among :data:`ARTICLE_STATISTICS`, threshold and slope,
   :class:`~vilbias.models.sentence_bias.ArticleRule`) chosen on the final model's calibrated
   probabilities for the validation split's articles (an article's label: the majority of its
   expert labels; ties left out).
6. The ``default`` test split, whole articles never trained, stopped or calibrated on: sentence
   macro-F1, ECE before and after calibration, the reliability diagram, the article rule's
   macro-F1 on its articles.

The labels are the file's own. BABE's public SG2 file holds every SG1 sentence with SG2's label:
where the two sets disagree SG2 wins (BABE's final, larger expert pool), so SG1 is not read.

Training settings come from the tuned MiniLM recipe (``training/recipes/classifier/
babe-minilm.yaml``: batch size, epochs, schedule, warm-up, weight decay, patience, validation
-loss early stopping, seed, max length) except the learning rate: a LoRA adapter and fresh
heads train at ten times the rate of full fine-tuning.

torch and transformers are imported inside the functions that use them, so
``import vilbias.training`` stays light.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import logging
import math
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from vilbias.training.classifier_config import read_recipe
from vilbias.training.sentence_card import RELIABILITY_PNG, reliability_title, write_card
from vilbias.training.sentence_data import (
    Example,
    article_splits,
    cache_distant,
    cache_examples,
    distant_for,
)
from vilbias.training.sentence_fit import (
    biased_probabilities,
    contrastive_fit,
    fit,
    fit_sentence_temperature,
    predict,
)
from vilbias.training.sentence_rules import (
    ARTICLE_STATISTICS,
    article_groups,
    choose_article_rule,
    choose_word_threshold,
    rule_groups,
    word_f1,
)

from vilbias.argparser import ConfigParser
from vilbias.config import save_config
from vilbias.corpus.pipeline import build_sentences
from vilbias.metrics.calibration import (
    expected_calibration_error,
    plot_reliability,
    reliability_bins,
)
from vilbias.metrics.scores import closed_metrics, summarize_folds
from vilbias.models.sentence_bias import (
    ArticleRule,
    SentenceBiasConfig,
    SentenceBiasModel,
)
from vilbias.provenance import TrainingData, ids_digest
from vilbias.task import FOLDS

logger = logging.getLogger(__name__)

DEFAULT_MODEL_DIR = Path(__file__).resolve().parent / "default_model"
"""Where the shipped model lives (package data of ``vilbias.training``)."""
DEFAULT_OUTPUT = Path("outputs/default_model")
"""Where a run writes unless told otherwise (ignored by git)."""
RECIPE = "babe-minilm"


@dataclass
class DefaultModelConfig:
    """``python -m vilbias.training.train_default``: settings of the offline default's training."""

    sentences: Path = field(metadata={"help": "BABE-format CSV of expert-labelled sentences (final_labels_SG2_public.csv; SG1 works too). Its labels are used as they are: where BABE's SG1 and SG2 disagree, pass SG2, the final and larger expert set."})
    output_dir: Path = field(default=DEFAULT_OUTPUT, metadata={"help": "Where the model is written (the shipped one: training/default_model)."})
    work_dir: Path | None = field(default=None, metadata={"help": "Where the sentence corpus and the CV runs go (default: a temporary folder)."})
    recipe: str = field(default=RECIPE, metadata={"help": "Classifier recipe whose batch size, epochs, schedule, patience, weight decay, seed and max length are used."})
    learning_rate: float = field(default=5e-4, metadata={"help": "Peak learning rate: LoRA and fresh heads train ~10x hotter than full fine-tuning."})
    trained_layers: list[int] = field(default_factory=lambda: [2, 3, 4, 5], metadata={"help": "MiniLM layers carrying the LoRA adapter (the ones below are frozen and cached)."})
    lora_r: int = field(default=16, metadata={"help": "LoRA rank (alpha is twice the rank)."})
    word_loss_weight: float = field(default=0.5, metadata={"help": "Weight of the biased-word loss next to the sentence loss."})
    opinion_loss_weight: float = field(default=0.0, metadata={"help": "Weight of an auxiliary loss on BABE's label_opinion (0: none); training only, nothing of it is saved."})
    epochs: int | None = field(default=None, metadata={"help": "Most epochs per training run (default: the recipe's); early stopping may end sooner."})
    distant_dataset: str | None = field(default=None, metadata={"help": "Distant corpus to pre-train every model on before the expert labels (headline + outlet with --distant-outlet-labels, or headline + label; see vilbias.training.distant). Rows sharing a text or link with a split's validation or test rows are dropped for that split."})
    distant_outlet_labels: Path | None = field(default=None, metadata={"help": "YAML/JSON map outlet: biased | not_biased for a distant corpus labelled by outlet."})
    distant_epochs: int = field(default=1, metadata={"help": "Most epochs of distant pre-training (early stopping on the loss of a tenth of the distant rows, patience 1)."})
    contrastive_epochs: int = field(default=0, metadata={"help": "Epochs of SetFit-style contrastive pre-fine-tuning of the adapter before the usual training (0: none): sentence pairs with the same label pulled to cosine 1, others to 0."})
    ensemble: int = field(default=1, metadata={"help": "Members per model: adapters and heads trained alike from seeds seed, seed+1, …; their logits are averaged (CV folds too)."})
    cv: bool = field(default=True, metadata={"help": "Run the 5-fold CV (its macro-F1 and the data the article rule is chosen on)."})
    threads: int | None = field(default=None, metadata={"help": "torch CPU threads (default: torch's choice)."})

    def __post_init__(self):
        self.sentences, self.output_dir = Path(self.sentences), Path(self.output_dir)
        if not self.sentences.is_file():
            raise FileNotFoundError(f"{self.sentences} not found: pass BABE's final_labels_SG2_public.csv or final_labels_SG1.csv (or another BABE-format CSV)")
        if self.learning_rate <= 0 or self.lora_r < 1 or self.ensemble < 1 or not self.trained_layers:
            raise ValueError("--learning-rate, --lora-r and --ensemble must be positive and --trained-layers non-empty")

    def model_config(self, max_length: int) -> SentenceBiasConfig:
        return SentenceBiasConfig(trained_layers=sorted(self.trained_layers), lora_r=self.lora_r, lora_alpha=2 * self.lora_r,
                                  word_loss_weight=self.word_loss_weight, opinion_loss_weight=self.opinion_loss_weight, max_length=max_length)


@dataclass
class Settings:
    """The recipe's values this run uses (and the learning rate it overrides)."""

    batch_size: int
    epochs: int
    learning_rate: float
    lr_scheduler: str
    warmup_ratio: float
    weight_decay: float
    patience: int
    seed: int
    max_length: int

    @classmethod
    def from_recipe(cls, cfg: DefaultModelConfig) -> Settings:
        recipe = read_recipe(cfg.recipe)
        if recipe.get("metric_for_best_model", "loss") != "loss":
            raise ValueError(f"recipe {cfg.recipe} early-stops on {recipe['metric_for_best_model']}; the default model stops on validation loss")
        return cls(batch_size=int(recipe.get("per_device_train_batch_size", 16)), epochs=cfg.epochs or math.ceil(recipe.get("num_train_epochs", 6)),
                   learning_rate=cfg.learning_rate, lr_scheduler=recipe.get("lr_scheduler_type", "linear"),
                   warmup_ratio=float(recipe.get("warmup_steps", 0.1)), weight_decay=float(recipe.get("weight_decay", 0.01)),
                   patience=int(recipe.get("patience", 2)), seed=int(recipe.get("seed", 0)), max_length=int(recipe.get("max_length") or 128))


# -- examples: cached frozen layers + word labels ---------------------------------------------


# -- splits: whole articles ------------------------------------------------------------------


# -- training -----------------------------------------------------------------------------------


# -- choices made on validation data ------------------------------------------------------------


# -- one split: train, calibrate, score ---------------------------------------------------------


@dataclass
class SplitRun:
    models: list
    """One trained model per ensemble member."""
    config: SentenceBiasConfig
    """The saved model's config (``members`` set)."""
    log: list[dict]
    """Per member, its per-epoch log."""
    temperature: float
    test_uids: list[str]
    test_raw: list[float]
    """P(biased) on the test split before calibration."""
    test_calibrated: list[float]
    training_data: TrainingData
    validation: list[Example]
    validation_logits: object
    member_test_raw: list[list[float]]
    """Each member's P(biased) on the test split (what one member alone would score)."""


def run_split(cfg: DefaultModelConfig, settings: Settings, splits: dict[str, list[str]], config_name: str, examples: dict[str, Example],
              distant: dict[str, Example] | None = None) -> SplitRun:
    """Train on one config's train split, stop and calibrate on its validation split, score its test split."""
    import torch


    parts = {name: [examples[uid] for uid in ids] for name, ids in splits.items()}
    models, logs, extra = [], [], {}
    if distant:
        pre_train, pre_val, dropped = distant_for(distant, parts["validation"] + parts["test"], settings.seed)
        extra["distant"] = {"dataset": cfg.distant_dataset, "rows": len(pre_train) + len(pre_val), "dropped_as_held_out": dropped,
                            "ids_sha256": ids_digest([e.uid for e in pre_train + pre_val]), "epochs": cfg.distant_epochs}
        logger.info("%s: distant pre-training on %d rows (%d dropped as held out)", config_name, len(pre_train), dropped)
    for member in range(cfg.ensemble):
        member_settings = dataclasses.replace(settings, seed=settings.seed + member)
        # torch seeds each process at random: seed before the LoRA and head weights are drawn, so
        # a run's weights are reproducible (with the same number of threads).
        torch.manual_seed(member_settings.seed)
        models.append(SentenceBiasModel(cfg.model_config(settings.max_length)))
        if cfg.ensemble > 1:
            logger.info("%s: member %d/%d (seed %d)", config_name, member + 1, cfg.ensemble, member_settings.seed)
        if distant:
            pre = dataclasses.replace(member_settings, epochs=cfg.distant_epochs, patience=1)
            logs.append([{**e, "phase": "distant"} for e in fit(models[-1], pre_train, pre_val, pre)])
        else:
            logs.append([])
        if cfg.contrastive_epochs:
            logs[-1] += contrastive_fit(models[-1], parts["train"], member_settings, cfg.contrastive_epochs)
        logs[-1] += fit(models[-1], parts["train"], parts["validation"], member_settings)
    val_logits, _ = predict(models, parts["validation"])
    temperature = fit_sentence_temperature(val_logits, [e.label for e in parts["validation"]])
    # each member once: the ensemble's test logits are their mean (as predict(models) computes them)
    member_logits = [predict(m, parts["test"])[0] for m in models]
    test_logits = torch.stack(member_logits).mean(0)
    member_test = [biased_probabilities(logits) for logits in member_logits]
    # The dataset is the source CSV (the corpus folder is a build of it, often temporary); its
    # sha256 names the file wherever it sits, the ids are BABE rows as `vilbias build --sentences` keys them.
    training_data = TrainingData.from_ids(
        str(cfg.sentences.resolve()), splits["train"], config=config_name, split="train",
        built_with="vilbias build --sentences", splits="sentence_data.article_splits (whole articles by news_link)",
        csv_sha256=_sha256(cfg.sentences), validation_rows=len(parts["validation"]),
        validation_ids_sha256=ids_digest(splits["validation"]), test_rows=len(parts["test"]),
        test_ids_sha256=ids_digest(splits["test"]), **extra)
    config = copy.deepcopy(models[0].config)
    config.members = len(models)
    return SplitRun(models, config, logs, temperature, [e.uid for e in parts["test"]], biased_probabilities(test_logits),
                    biased_probabilities(test_logits, temperature), training_data, parts["validation"], val_logits, member_test)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def scores(uids: list[str], probabilities: list[float], examples: dict[str, Example]) -> dict:
    labels = [examples[u].label for u in uids]
    metrics = closed_metrics(labels, [int(p >= 0.5) for p in probabilities])
    metrics["ece"] = expected_calibration_error(probabilities, labels)
    return metrics


def run_cv(cfg: DefaultModelConfig, settings: Settings, splits: dict[str, dict[str, list[str]]], examples: dict[str, Example],
           distant: dict[str, Example] | None = None) -> dict:
    """5-fold CV: per-fold test metrics and their mean ± std."""
    per_fold = []
    for k, name in enumerate(FOLDS):
        logger.info("CV fold %d/%d", k + 1, len(FOLDS))
        run = run_split(cfg, settings, splits[name], name, examples, distant)
        fold = scores(run.test_uids, run.test_calibrated, examples)
        fold |= {"temperature": run.temperature, "epochs_run": [sum("phase" not in e for e in log) for log in run.log]}
        if len(run.models) > 1:
            fold["members_f1_macro"] = [scores(run.test_uids, p, examples)["f1_macro"] for p in run.member_test_raw]
        per_fold.append(fold)
        logger.info("fold %d macro-F1 %.4f", k, fold["f1_macro"])
    summary = summarize_folds(per_fold)
    if cfg.ensemble > 1:
        # what one member alone scores, averaged over members: the ensemble's gain is the difference
        alone = [statistics.mean(f["members_f1_macro"]) for f in per_fold]
        summary["member_f1_macro"] = {"mean": statistics.mean(alone), "std": statistics.stdev(alone)}
    return {"per_fold": per_fold, "summary": summary}


# -- outputs ------------------------------------------------------------------------------------


def write_outputs(cfg: DefaultModelConfig, final: SplitRun, metrics: dict, examples: dict[str, Example]) -> None:
    """The shipped folder: config, adapter + heads, metrics, card, reliability diagram, provenance."""
    out = cfg.output_dir
    if out.exists():
        shutil.rmtree(out)
    SentenceBiasModel.ensemble(final.models, final.config).save_pretrained(out)
    labels = [examples[u].label for u in final.test_uids]
    plot_reliability(reliability_bins(final.test_raw, labels), reliability_bins(final.test_calibrated, labels), out / RELIABILITY_PNG,
                     reliability_title(metrics["source"], len(labels), metrics["test"]["articles"], metrics["test"]["ece_before"], metrics["test"]["ece"]))
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
    final.training_data.write(out)
    write_card(cfg, out, metrics, final.training_data, final.models)


def _links_f1(groups: list[tuple[list[float], int]], rule: ArticleRule) -> dict:
    labels = [y for _, y in groups]
    predicted = [int(rule.value(p) >= rule.threshold) for p, _ in groups]
    out = closed_metrics(labels, predicted)
    return {"groups": len(groups), "f1_macro": out["f1_macro"], "accuracy": out["accuracy"]}


def finish_final(cfg: DefaultModelConfig, final: SplitRun, examples: dict[str, Example], rule: ArticleRule) -> dict:
    """Word threshold and article rule into the model's config; the test split's figures."""
    _, word_probs = predict(final.models, final.validation)
    word_threshold, word_score = choose_word_threshold(final.validation, word_probs)
    final.config.temperature = final.temperature
    final.config.word_threshold = word_threshold
    final.config.article_rule = rule
    test = scores(final.test_uids, final.test_calibrated, examples)
    test["ece_before"] = expected_calibration_error(final.test_raw, [examples[u].label for u in final.test_uids])
    test["articles"] = len({examples[u].link or u for u in final.test_uids})
    test_words = [examples[u] for u in final.test_uids]
    _, test_word_probs = predict(final.models, test_words)
    val_labels = [e.label for e in final.validation]
    return {
        "test": test,
        "validation": {"rows": len(final.validation), "temperature": final.temperature,
                       "ece_before": expected_calibration_error(biased_probabilities(final.validation_logits), val_labels),
                       "ece_after": expected_calibration_error(biased_probabilities(final.validation_logits, final.temperature), val_labels),
                       "word_threshold": word_threshold, "word_f1": word_score},
        "test_word_f1": word_f1(test_words, test_word_probs, word_threshold),
        "article_rule_on_test_links": _links_f1(article_groups(final.test_uids, final.test_calibrated, examples), rule),
        "log": final.log,
    }


def train_default(cfg: DefaultModelConfig) -> dict:
    """Build the corpus, run CV, choose the article rule, train, calibrate and write the model."""
    import torch


    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    started = time.perf_counter()
    settings = Settings.from_recipe(cfg)
    with tempfile.TemporaryDirectory(prefix="vilbias-default-") as tmp:
        work = Path(cfg.work_dir or tmp)
        corpus = work / "babe"
        report = build_sentences(cfg.sentences, corpus)
        from datasets import load_dataset

        rows = list(load_dataset(str(corpus), "default", split="train+validation+test"))
        base = SentenceBiasModel(cfg.model_config(settings.max_length))
        examples = cache_examples(base, rows)
        distant, distant_counts = cache_distant(base, cfg) if cfg.distant_dataset else (None, None)
        splits = article_splits(rows)
        cv = run_cv(cfg, settings, splits, examples, distant) if cfg.cv else None
        final = run_split(cfg, settings, splits["default"], "default", examples, distant)
        # The rule sits on the final model's calibrated probabilities, so it is chosen on those,
        # for the validation split's articles (never the test split's).
        pool = dict(zip([e.uid for e in final.validation], biased_probabilities(final.validation_logits, final.temperature), strict=True))
        rule, candidates = choose_article_rule(rule_groups(pool, examples), ARTICLE_STATISTICS)
        metrics = {"source": cfg.sentences.name, "corpus": {**{k: report["source"][k] for k in ("rows_read", "excluded_no_agreement", "rows_kept")}, "label_counts": report["label_counts"]},
                   "settings": dataclasses.asdict(settings) | {"recipe": cfg.recipe, "trained_layers": cfg.trained_layers, "lora_r": cfg.lora_r,
                                                              "word_loss_weight": cfg.word_loss_weight, "opinion_loss_weight": cfg.opinion_loss_weight, "ensemble": cfg.ensemble,
                                                              "contrastive_epochs": cfg.contrastive_epochs,
                                                              "distant": distant_counts and {"dataset": cfg.distant_dataset, **distant_counts, "epochs": cfg.distant_epochs},
                                                              "threads": torch.get_num_threads()},
                   "cv": cv, "article_rule": dataclasses.asdict(rule) | {"candidates": candidates, "chosen_on": "validation"}}
        metrics |= finish_final(cfg, final, examples, rule)
        metrics["wall_time_s"] = round(time.perf_counter() - started, 1)
        write_outputs(cfg, final, metrics, examples)
    return metrics


PROG = "python -m vilbias.training.train_default"


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    (cfg,) = ConfigParser([DefaultModelConfig], prog=prog, description=__doc__.splitlines()[0]).parse(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    m = train_default(cfg)
    if m["cv"]:
        s = m["cv"]["summary"]["f1_macro"]
        print(f"5-fold CV macro-F1 {s['mean']:.4f} ± {s['std']:.4f}")
    t = m["test"]
    print(f"test split ({t['n']} sentences never seen): macro-F1 {t['f1_macro']:.4f}, ECE {t['ece_before']:.4f} -> {t['ece']:.4f}")
    r = m["article_rule"]
    print(f"article rule: {ArticleRule(r['statistic'], r['threshold'], r['slope']).describe()} (chosen on {r['chosen_on']} data)")
    save_config(cfg.output_dir, "train_default", cfg, command=prog)
    print(f"saved to {cfg.output_dir} in {m['wall_time_s']:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
