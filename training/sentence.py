"""Train the Space's sentence model: a sentence-level bias scorer on BABE's expert labels.

    vilbias train sentence --sentences final_labels_SG2_public.csv --cv --threads 1 --output outputs/default_model
    vilbias train sentence --dataset ./babe --learning-rate 3e-4 --num-train-epochs 8   # a corpus built before
    vilbias train sentence --config outputs/default_model/train_sentence_config.yaml     # that run again

The model (:mod:`vilbias.models.sentence_bias`) is the packaged all-MiniLM-L6-v2 with a LoRA
adapter on its top layers, a word head trained on BABE's biased words and a sentence head. The
output folder holds the adapter and heads (about a megabyte), never a copy of MiniLM; the shipped
one is ``training/default_model``.

Options are :class:`~vilbias.training.sentence_config.SentenceConfig`, a ``TrainingArguments``
whose defaults are the shipped model's settings; training runs through ``transformers.Trainer``
(:class:`~vilbias.training.sentence_fit.SentenceTrainer`), the CV through the engine's
:func:`~vilbias.training.engine.cross_validate`, as ``vilbias train classifier --cv`` does.

What the run does, in order:

1. Reads the sentence corpus (``--dataset``, one ``vilbias build --sentences`` wrote) or builds
   it from ``--sentences`` (BABE's ``No agreement`` rows dropped), and uses **its** splits and
   folds (:func:`~vilbias.corpus.sentences.corpus_splits`, read from where its rows are stored):
   whole articles per split, as the corpus policy placed them, so ``vilbias evaluate`` on that
   corpus reproduces the figures below. A source's own test split (BABE's Hub release) is kept.
2. Caches, once, the frozen lower layers' output for every sentence (the LoRA sits above them).
3. With ``--cv``, 5-fold CV (``fold_0`` … ``fold_4``; each fold stops early and fits its
   temperature on its own validation articles, about a tenth of its training pool): macro-F1 mean ± std.
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

Outputs in ``--output``: the model (``save_pretrained``), ``metrics.json``, ``README.md`` and
``vilbias_card.json`` (the card), ``reliability.png``, the provenance record
(``training_data.json`` + ``training_ids.txt``) and ``train_sentence_config.yaml``, the options
it ran with.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import logging
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from datasets import load_dataset
from vilbias.training.engine import cross_validate
from vilbias.training.sentence_card import RELIABILITY_PNG, reliability_title, write_card
from vilbias.training.sentence_config import SentenceConfig
from vilbias.training.sentence_data import (
    Example,
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
from vilbias.config import config_dict, save_config
from vilbias.corpus.pipeline import build_sentences
from vilbias.corpus.sentences import corpus_splits
from vilbias.corpus.splits import MEANINGFUL_ROWS
from vilbias.metrics.calibration import (
    expected_calibration_error,
    plot_reliability,
    reliability_bins,
)
from vilbias.metrics.scores import closed_metrics
from vilbias.models.sentence_bias import (
    CODE_FILES,
    TOKENIZER_FILES,
    ArticleRule,
    SentenceBiasConfig,
    SentenceBiasModel,
)
from vilbias.models.sentence_runtime import CALIBRATION_FILE, EVIDENCE_FILE, runtime_evidence
from vilbias.outputs import claim_output, empty_folder
from vilbias.provenance import TRAINING_DATA, TRAINING_IDS, TrainingData, data_name, ids_digest
from vilbias.publish.model import CARD_INFO_FILE
from vilbias.task import LABEL_NAMES

logger = logging.getLogger(__name__)

PROG = "vilbias train sentence"

SETTINGS = ("per_device_train_batch_size", "num_train_epochs", "learning_rate", "lr_scheduler_type", "warmup_steps", "weight_decay",
            "patience", "seed", "max_length", "recipe", "trained_layers", "lora_r", "word_loss_weight", "opinion_loss_weight",
            "ensemble", "contrastive_epochs")
"""The options the metrics and the card state as the run's settings."""


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


def run_split(cfg: SentenceConfig, splits: dict[str, list[str]], config_name: str, examples: dict[str, Example],
              distant: dict[str, Example] | None = None, data: dict | None = None) -> SplitRun:
    """Train on one config's train split, stop and calibrate on its validation split, score its test
    split. Without validation rows (a file too small to fill one) it trains its full epochs and
    stays uncalibrated (temperature 1), and says so."""
    parts = {name: [examples[uid] for uid in ids] for name, ids in splits.items()}
    if not parts["train"] or not parts["test"]:
        total = sum(len(p) for p in parts.values())
        raise ValueError(f"{config_name}: {total} sentences, {len(parts['train'])} in train and {len(parts['test'])} in test: the corpus's "
                         "split policy fills test and validation from about 12 sentences, and a model without a test split cannot be "
                         "measured; give more labelled sentences")
    validation = parts["validation"] or None
    models, logs, extra = [], [], {}
    if distant:
        pre_train, pre_val, dropped = distant_for(distant, parts["validation"] + parts["test"], cfg.seed)
        extra["distant"] = {"dataset": cfg.distant_dataset, "rows": len(pre_train) + len(pre_val), "dropped_as_held_out": dropped,
                            "ids_sha256": ids_digest([e.uid for e in pre_train + pre_val]), "epochs": cfg.distant_epochs}
        logger.info("%s: distant pre-training on %d rows (%d dropped as held out)", config_name, len(pre_train), dropped)
    for member in range(cfg.ensemble):
        args = dataclasses.replace(cfg, seed=cfg.seed + member)
        # torch seeds each process at random: seed before the LoRA and head weights are drawn, so
        # a run's weights are reproducible (with the same number of threads).
        torch.manual_seed(args.seed)
        models.append(SentenceBiasModel(cfg.model_config()))
        if cfg.ensemble > 1:
            logger.info("%s: member %d/%d (seed %d)", config_name, member + 1, cfg.ensemble, args.seed)
        if distant:
            pre = dataclasses.replace(args, patience=1)
            logs.append([{**e, "phase": "distant"} for e in fit(models[-1], pre_train, pre_val, pre, epochs=cfg.distant_epochs)])
        else:
            logs.append([])
        if cfg.contrastive_epochs:
            logs[-1] += contrastive_fit(models[-1], parts["train"], args, cfg.contrastive_epochs)
        logs[-1] += fit(models[-1], parts["train"], validation, args)
    if validation:
        val_logits, _ = predict(models, parts["validation"])
        temperature = fit_sentence_temperature(val_logits, [e.label for e in parts["validation"]])
    else:
        val_logits, temperature = None, 1.0
    # each member once: the ensemble's test logits are their mean (as predict(models) computes them)
    member_logits = [predict(m, parts["test"])[0] for m in models]
    test_logits = torch.stack(member_logits).mean(0)
    member_test = [biased_probabilities(logits) for logits in member_logits]
    # The data is named as the user named it (a file by its name and sha256, a corpus folder by its
    # name, a Hub id as it is), never by a path of this machine; the ids are the corpus's rows.
    data = data or {}
    training_data = TrainingData.from_ids(
        data.get("name") or "sentences", splits["train"], config=config_name, split="train",
        **{k: v for k, v in data.items() if k in ("sha256", "corpus", "columns", "layout", "splits_from") and v},
        splits="the corpus's own (vilbias.corpus.sentences.corpus_splits: whole articles by link)",
        validation_rows=len(parts["validation"]), validation_ids_sha256=ids_digest(splits["validation"]),
        test_rows=len(parts["test"]), test_ids_sha256=ids_digest(splits["test"]), **extra)
    config = copy.deepcopy(models[0].config)
    config.members = len(models)
    return SplitRun(models, config, logs, temperature, [e.uid for e in parts["test"]], biased_probabilities(test_logits),
                    biased_probabilities(test_logits, temperature), training_data, parts["validation"], val_logits, member_test)


def scores(uids: list[str], probabilities: list[float], examples: dict[str, Example]) -> dict:
    labels = [examples[u].label for u in uids]
    predicted = [int(p >= 0.5) for p in probabilities]
    metrics = closed_metrics(labels, predicted)
    metrics["ece"] = expected_calibration_error(probabilities, labels)
    metrics["label_counts"] = {name: labels.count(i) for i, name in enumerate(LABEL_NAMES)}
    metrics["predicted_counts"] = {name: predicted.count(i) for i, name in enumerate(LABEL_NAMES)}
    return metrics


def run_cv(cfg: SentenceConfig, splits: dict[str, dict[str, list[str]]], examples: dict[str, Example],
           distant: dict[str, Example] | None = None) -> dict:
    """5-fold CV through :func:`~vilbias.training.engine.cross_validate`: per-fold test metrics
    (calibrated on each fold's own validation articles) and their mean ± std."""

    def train_fold(name: str) -> dict:
        run = run_split(cfg, splits[name], name, examples, distant)
        fold = scores(run.test_uids, run.test_calibrated, examples)
        fold |= {"temperature": run.temperature, "epochs_run": [sum("phase" not in e for e in log) for log in run.log]}
        if len(run.models) > 1:
            fold["members_f1_macro"] = [scores(run.test_uids, p, examples)["f1_macro"] for p in run.member_test_raw]
        logger.info("%s macro-F1 %.4f", name, fold["f1_macro"])
        return fold

    per_fold, summary = cross_validate(train_fold)
    if cfg.ensemble > 1:
        # what one member alone scores, averaged over members: the ensemble's gain is the difference
        alone = [statistics.mean(f["members_f1_macro"]) for f in per_fold]
        summary["member_f1_macro"] = {"mean": statistics.mean(alone), "std": statistics.stdev(alone)}
    return {"per_fold": per_fold, "summary": summary}


MODEL_FILES = ("README.md", "config.json", "model.safetensors", "metrics.json", RELIABILITY_PNG, TRAINING_DATA,
               TRAINING_IDS, CARD_INFO_FILE, CALIBRATION_FILE, "train_sentence_config.yaml", "train_default_config.yaml",
               EVIDENCE_FILE, *CODE_FILES, *TOKENIZER_FILES)
"""Everything :func:`write_outputs` writes: the only files it may replace."""


CALIBRATION_SENTENCES = 256


def int8_calibration(texts: dict[str, str], seed: int, n: int = CALIBRATION_SENTENCES) -> dict:
    """What :data:`~vilbias.models.sentence_bias.CALIBRATION_FILE` holds: ``n`` distinct sentences
    of the training split (``texts``: row id -> sentence), drawn with ``seed``; they fix the
    activation scales of the model's int8 graph on ONNX Runtime (never validation or test rows)."""
    import random

    pool = sorted(set(texts.values()))
    random.Random(seed).shuffle(pool)
    return {"purpose": "activation scales of the int8 graph on ONNX Runtime (inference_precision: int8)",
            "split": "train", "seed": seed, "sentences": pool[:n]}


def claim_model_dir(out: Path) -> Path:
    """Refuse, in one line, an ``--output`` that is not new, empty or an earlier sentence model holding
    only :data:`MODEL_FILES`: the run replaces that folder as a whole (:func:`vilbias.outputs.claim_output`)."""
    return claim_output(out, PROG, signs=(CARD_INFO_FILE, "train_sentence_config.yaml"), replaces=MODEL_FILES)


def write_outputs(cfg: SentenceConfig, final: SplitRun, metrics: dict, examples: dict[str, Example]) -> None:
    """The model folder: config, adapter + heads, metrics, card, reliability diagram, provenance, options."""
    out = cfg.output_path
    claim_model_dir(out)  # again: the run took a while
    if out.exists():
        empty_folder(out)  # its content, not the folder: the folder's writer lock stays held (vilbias.outputs)
    saved = SentenceBiasModel.ensemble(final.models, final.config)
    # how it runs once loaded (see SentenceBiasConfig.inference_runtime): the loader picks the fastest
    # path for the CPU it finds that the evidence written below shows answering as float32 does
    saved.config.inference_runtime, saved.config.inference_precision = "auto", "auto"
    saved.save_pretrained(out)
    texts = {uid: examples[uid].text for uid in final.training_data.ids if uid in examples}
    (out / CALIBRATION_FILE).write_text(json.dumps(int8_calibration(texts, cfg.seed), indent=1, ensure_ascii=False) + "\n",
                                        encoding="utf-8")
    labels = [examples[u].label for u in final.test_uids]
    # how each faster path (int8, bfloat16) answers the test split next to float32: the loader's evidence
    runtime_evidence(out, [examples[u].text for u in final.test_uids], labels, ids=final.test_uids, split="test")
    plot_reliability(reliability_bins(final.test_raw, labels), reliability_bins(final.test_calibrated, labels), out / RELIABILITY_PNG,
                     reliability_title(metrics["source"], len(labels), metrics["test"]["articles"], metrics["test"]["ece_before"], metrics["test"]["ece"]))
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
    final.training_data.write(out)
    write_card(out, metrics, final.training_data, final.models)
    save_config(out, "train sentence", cfg, command=PROG)


def _links_f1(groups: list[tuple[list[float], int]], rule: ArticleRule) -> dict:
    labels = [y for _, y in groups]
    predicted = [int(rule.value(p) >= rule.threshold) for p, _ in groups]
    out = closed_metrics(labels, predicted)
    return {"groups": len(groups), "f1_macro": out["f1_macro"], "accuracy": out["accuracy"]}


def finish_final(final: SplitRun, examples: dict[str, Example], rule: ArticleRule) -> dict:
    """Word threshold and article rule into the model's config; the test split's figures."""
    if final.validation:
        _, word_probs = predict(final.models, final.validation)
        word_threshold, word_score = choose_word_threshold(final.validation, word_probs)
    else:
        word_threshold, word_score = SentenceBiasConfig().word_threshold, None
    final.config.temperature = final.temperature
    final.config.word_threshold = word_threshold
    final.config.article_rule = rule
    test = scores(final.test_uids, final.test_calibrated, examples)
    test["ece_before"] = expected_calibration_error(final.test_raw, [examples[u].label for u in final.test_uids])
    test["articles"] = len({examples[u].link or u for u in final.test_uids})
    test_words = [examples[u] for u in final.test_uids]
    _, test_word_probs = predict(final.models, test_words)
    validation = {"rows": len(final.validation), "temperature": final.temperature, "word_threshold": word_threshold, "word_f1": word_score}
    if final.validation:
        val_labels = [e.label for e in final.validation]
        validation |= {"ece_before": expected_calibration_error(biased_probabilities(final.validation_logits), val_labels),
                       "ece_after": expected_calibration_error(biased_probabilities(final.validation_logits, final.temperature), val_labels)}
    return {
        "test": test,
        "validation": validation,
        "test_word_f1": word_f1(test_words, test_word_probs, word_threshold),
        "article_rule_on_test_links": _links_f1(article_groups(final.test_uids, final.test_calibrated, examples), rule),
        "log": final.log,
    }


def degenerate_note(metrics: dict) -> str | None:
    """Why the test figures mean little, or None: a test split under
    :data:`~vilbias.corpus.splits.MEANINGFUL_ROWS` rows or of one label, predictions of one class (it
    learned nothing the test split can show), a model trained without validation."""
    test, notes = metrics["test"], []
    labels, predicted = test["label_counts"], test["predicted_counts"]
    if test["n"] < MEANINGFUL_ROWS or min(labels.values()) == 0:
        notes.append(f"the test split has {test['n']} sentence{'s' if test['n'] != 1 else ''}"
                     + (" of one label" if min(labels.values()) == 0 else "") + ": too few to mean anything")
    if min(predicted.values()) == 0:
        only = next(name for name, n in predicted.items() if n)
        notes.append(f"the model predicts {only} for every test sentence: it learned nothing the test split can show "
                     "(its macro-F1 and ECE are a constant's)")
    if not metrics["validation"]["rows"]:
        notes.append("no validation split (too few rows to fill one): no early stopping, probabilities uncalibrated")
    return "; ".join(notes) or None


def command_line(cfg: SentenceConfig) -> str:
    """The command that ran: every option set to other than its default, files named by their names
    (what the card's "Reproduce" line shows, run from the folder holding them)."""
    default = {f.name: f.default if f.default is not dataclasses.MISSING else
               (f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
               for f in dataclasses.fields(SentenceConfig) if f.init}
    parts = [PROG]
    for name in ("sentences", "dataset", *sorted(n for n in default if n not in ("sentences", "dataset"))):
        value = getattr(cfg, name, None)
        if name not in REPRODUCED or value == default.get(name) or value is None:
            continue
        flag = "--output" if name == "output_dir" else "--" + name.replace("_", "-")
        if name == "columns":
            parts += [f"--column {c}" for c in value]
        elif isinstance(value, bool):
            parts.append(flag)
        elif isinstance(value, list):
            parts.append(f"{flag} {' '.join(map(str, value))}")
        elif name in ("sentences", "dataset", "distant_dataset", "distant_outlet_labels") or (name == "output_dir" and Path(value).is_absolute()):
            parts.append(f"{flag} {data_name(value)}")
        else:
            parts.append(f"{flag} {value:g}" if isinstance(value, float) else f"{flag} {value}")
    return " ".join(parts)


REPRODUCED = ("sentences", "dataset", "columns", "source_split", "output_dir", *SETTINGS, "cv", "distant_dataset",
              "distant_outlet_labels", "distant_epochs", "threads")
"""The options the "Reproduce" line repeats when they differ from their defaults (``output_dir`` as ``--output``)."""


def data_record(cfg: SentenceConfig, report: dict | None) -> dict:
    """What the model trained on, as the user named it: the file (name, sha256, rows, columns) or the
    corpus (its name, and the source its build report names), and whether the data is a dataset
    vilbias recognises (BABE, MBIB: credited and cited) or one's own (credited to nobody)."""
    source = (report or {}).get("source") or {}
    name = data_name(cfg.sentences if cfg.sentences is not None else cfg.dataset)
    return {"name": name, "sha256": source.get("source_sha256"), "corpus": None if cfg.sentences is not None else name,
            "source": source.get("name"), **{key: source.get(key) for key in REPORTED}}


REPORTED = ("columns", "layout", "rows_read", "rows_kept", "excluded_no_agreement", "duplicates_merged", "excluded_conflicting",
            "splits_from", "official_splits", "articles_straddling")
"""What a model's ``metrics.json`` repeats of its corpus's build report (``source`` section)."""


def _corpus(cfg: SentenceConfig, tmp: str) -> tuple[Path, dict | None]:
    """The corpus to train on and its build report: ``--dataset`` as it is (a Hub id downloaded), or
    ``--sentences`` built into ``--work-dir`` (default: a temporary folder)."""
    if cfg.sentences is not None:
        corpus = Path(cfg.work_dir or tmp) / "corpus"
        return corpus, build_sentences(cfg.sentences, corpus, columns=cfg.columns, source_split=cfg.source_split)
    folder = Path(cfg.dataset)
    if not folder.exists():
        from huggingface_hub import snapshot_download  # only for a corpus named by Hub id

        folder = Path(snapshot_download(cfg.dataset, repo_type="dataset"))
    report = folder / "build_report.json"
    return folder, json.loads(report.read_text(encoding="utf-8")) if report.is_file() else None


def train_sentence(cfg: SentenceConfig) -> dict:
    """Read or build the corpus, run CV (``cfg.cv``), choose the article rule, train, calibrate and
    write the model to ``cfg.output_dir`` (with the options it ran with, ``train_sentence_config.yaml``).
    Every split is the corpus's own (:func:`~vilbias.corpus.sentences.corpus_splits`).

    Returns:
        The metrics also written to ``metrics.json``: ``cv`` (``per_fold`` and ``summary``, or
        None), ``test``, ``validation``, ``article_rule``, ``article_rule_on_test_links``, ``settings``,
        ``data`` (what it trained on), ``command`` and ``warning`` (why the figures mean little, or None).
    """
    claim_model_dir(cfg.output_path)  # before anything is built or trained
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="vilbias-sentence-") as tmp:
        corpus, report = _corpus(cfg, tmp)
        splits = corpus_splits(corpus)
        wanted = {uid for part in splits["default"].values() for uid in part}
        rows = [r for r in load_dataset(str(corpus), "default", split="+".join(s for s in ("train", "validation", "test")
                                                                             if splits["default"][s])) if r["unique_id"] in wanted]
        data = data_record(cfg, report)
        base = SentenceBiasModel(cfg.model_config())
        examples = cache_examples(base, rows)
        distant, distant_counts = cache_distant(base, cfg.distant_dataset, cfg.distant_outlet_labels) if cfg.distant_dataset else (None, None)
        cv = run_cv(cfg, splits, examples, distant) if cfg.cv else None
        final = run_split(cfg, splits["default"], "default", examples, distant, data)
        if final.validation:
            # The rule sits on the final model's calibrated probabilities, so it is chosen on those,
            # for the validation split's articles (never the test split's).
            pool = dict(zip([e.uid for e in final.validation], biased_probabilities(final.validation_logits, final.temperature), strict=True))
            rule, candidates = choose_article_rule(rule_groups(pool, examples), ARTICLE_STATISTICS)
            chosen_on = "validation"
        else:
            rule, candidates, chosen_on = ArticleRule(ARTICLE_STATISTICS[0], 0.5), {"groups": 0}, "nothing (no validation split: the default rule)"
        settings = {k: v for k, v in config_dict(cfg).items() if k in SETTINGS}
        labels = [examples[u].label for u in splits["default"]["train"] + splits["default"]["validation"] + splits["default"]["test"]]
        metrics = {"source": data["name"], "data": data, "command": command_line(cfg),
                   "corpus": {"rows_read": data["rows_read"] or len(rows), "excluded_no_agreement": data["excluded_no_agreement"] or 0,
                              "rows_kept": len(rows), "label_counts": {"not_biased": labels.count(0), "biased": labels.count(1)}},
                   "settings": settings | {"distant": distant_counts and {"dataset": cfg.distant_dataset, **distant_counts, "epochs": cfg.distant_epochs},
                                           "threads": torch.get_num_threads()},
                   "cv": cv, "article_rule": dataclasses.asdict(rule) | {"candidates": candidates, "chosen_on": chosen_on}}
        metrics |= finish_final(final, examples, rule)
        metrics["warning"] = degenerate_note(metrics)
        metrics["wall_time_s"] = round(time.perf_counter() - started, 1)
        write_outputs(cfg, final, metrics, examples)
    return metrics


def parse_config(argv: list[str], prog: str = PROG) -> SentenceConfig:
    """The config of a command line: the recipe's values, then ``--config FILE.yaml``'s, then the flags given.

    Raises:
        SystemExit: a one-line usage error (unknown flag, bad value, unknown recipe, missing file).
    """
    parser = ConfigParser([SentenceConfig], prog=prog, description=(__doc__ or "").strip().splitlines()[0])
    finder = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    finder.add_argument("--recipe")
    name = finder.parse_known_args(argv)[0].recipe
    try:
        if name:
            parser.set_file_defaults(SentenceConfig.read_recipe(name), f"recipe {name}")
        (cfg,) = parser.parse(argv)
    except (FileNotFoundError, ValueError) as e:
        parser.error(str(e))
    return cfg


def main(argv: list[str], prog: str = PROG) -> int:
    cfg = parse_config(list(argv), prog)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    m = train_sentence(cfg)
    if m["cv"]:
        s = m["cv"]["summary"]["f1_macro"]
        print(f"5-fold CV macro-F1 {s['mean']:.4f} ± {s['std']:.4f}")
    t = m["test"]
    print(f"test split ({t['n']} sentence{'s' if t['n'] != 1 else ''} never seen): macro-F1 {t['f1_macro']:.4f}, ECE {t['ece_before']:.4f} -> {t['ece']:.4f}")
    r = m["article_rule"]
    print(f"article rule: {ArticleRule(r['statistic'], r['threshold'], r['slope']).describe()} (chosen on {r['chosen_on']} data)")
    print(f"saved to {cfg.output_dir} in {m['wall_time_s']:.0f} s")
    if m["warning"]:  # last, where a reader looks for the verdict
        print(f"warning: {m['warning']}")
    return 0
