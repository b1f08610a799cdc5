"""A sentence model's card: what it says about the data, the protocol, the figures and their
limits, rendered from the run's metrics and provenance. The prose is in
``vilbias/publish/templates/sentence/`` (summary, evaluation, intended use, limitations, usage
snippet and the reliability diagram's title); this module computes what those templates are given.

The data is named as the user named it (``metrics["data"]``: file name, sha256, rows, columns) and
credited only when it is a dataset vilbias recognises (BABE, MBIB: from the Hub id or BABE's own
columns), with that dataset's terms as its publishers state them and its citation.
"""

from __future__ import annotations

import json
from pathlib import Path

from vilbias.corpus.sentence_datasets import DATASETS, OWN_DATA_TERMS
from vilbias.corpus.sentence_records import REASON_TEXT
from vilbias.models.sentence_bias import (
    ArticleRule,
)
from vilbias.provenance import TrainingData, read_training_data
from vilbias.publish.model import ModelCardInfo, render_model_card, render_section
from vilbias.task import ANSWER_LABELS, BIASED, BIASED_NAME, NOT_BIASED_NAME

RELIABILITY_PNG = "reliability.png"


def babe_set(source: str) -> str:
    """``SG1``/``SG2`` from BABE's file names (``final_labels_SG2_public.csv``), else the name."""
    name = Path(source).name
    return next((tag for tag in ("SG2", "SG1") if tag in name.upper()), name)


def reliability_title(source: str, n: int, articles: int, before: float, after: float) -> str:
    """The reliability diagram's title (``templates/sentence/reliability_title.txt``)."""
    tag = babe_set(source)
    data = f"BABE {tag}" if tag in ("SG1", "SG2") else tag  # BABE's files by their set, anything else by its name
    return render_section("sentence/reliability_title.txt", data=data, n=n, articles=articles, before=before, after=after)


def _data(metrics: dict) -> dict:
    """``metrics["data"]``; a run recorded before it existed names its source file only."""
    return metrics.get("data") or {"name": metrics["source"], "layout": "babe" if "final_labels" in metrics["source"] else None}


def counts_line(data: dict, metrics: dict) -> str:
    """``3,074 rows read − 1 `No agreement` (left out) − 1 exact repeat … = 3,072 sentences (1,507 …, 1,565 …)``:
    the rows read, each accounted for, then the label counts."""
    corpus = metrics["corpus"]
    parts = [f"{n} {REASON_TEXT[reason]}" for reason, n in (("no_agreement", data.get("excluded_no_agreement") or corpus.get("excluded_no_agreement")),
                                                        ("duplicate", data.get("duplicates_merged")),
                                                        ("conflicting_labels", data.get("excluded_conflicting"))) if n]
    labels = corpus["label_counts"]
    return (f"{corpus['rows_read']:,} rows read" + "".join(f" − {p}" for p in parts) + f" = {corpus['rows_kept']:,} sentences "
            f"({labels[BIASED_NAME]:,} {ANSWER_LABELS[BIASED]}, {labels[NOT_BIASED_NAME]:,} {ANSWER_LABELS[1 - BIASED]})")


def card_info(metrics: dict, training_data: TrainingData, models: list | None = None, model_ref: str = "MODEL_FOLDER",
              params: tuple[int, int] | None = None) -> ModelCardInfo:
    """The model card (``vilbias publish model`` renders the same from ``vilbias_card.json``);
    ``models`` give the parameter counts, or ``params`` (trainable, total) as recorded."""
    data = _data(metrics)
    known = DATASETS.get(data.get("layout") or "")
    hub_type = known.hub_id if known else data["name"]
    shown = f"{known.name.split(' (')[0]}{' ' + babe_set(data['name']) if babe_set(data['name']) in ('SG1', 'SG2') else ''} ({data['name']})" \
        if known else data["name"]
    test, article = metrics["test"], metrics["article_rule_on_test_links"]
    results = [{"metric_type": "f1", "metric_name": "sentence macro-F1 (test sentences never seen)", "value": test["f1_macro"], "split": "test"},
               {"metric_type": "accuracy", "metric_name": "sentence accuracy", "value": test["accuracy"], "split": "test"},
               {"metric_type": "f1", "metric_name": f"article macro-F1 ({article['groups']} test articles, article rule)",
                "value": article["f1_macro"], "split": "test"},
               {"metric_type": "ece", "metric_name": "expected calibration error (10 bins)", "value": test["ece"], "split": "test"}]
    if metrics.get("cv"):
        results.append({"metric_type": "f1", "metric_name": "sentence macro-F1, 5-fold CV mean", "value": metrics["cv"]["summary"]["f1_macro"]["mean"],
                        "split": "test", "config": "fold_0..fold_4"})
    if params is None:
        trainable = sum(v.numel() for model in models for v in model.trained_state_dict().values())
        params = (trainable, trainable + sum(p.numel() for p in models[0].bert.parameters() if not p.requires_grad))
    if data.get("corpus"):
        reproduce = f"vilbias evaluate --dataset {data['corpus']} --model {model_ref}"
    else:
        extra = " ".join(f"--{p}" for p in metrics.get("command", "").split(" --")[1:] if p.startswith(("column ", "source-split ")))
        reproduce = (f"vilbias build --sentences {data['name']}{' ' + extra if extra else ''} --output corpus\n"
                     f"vilbias evaluate --dataset corpus --model {model_ref}")
    return ModelCardInfo(
        base_model="sentence-transformers/all-MiniLM-L6-v2", dataset=hub_type, dataset_name=shown, dataset_config="default",
        method="lora", task="text-classification", hyperparameters=metrics["settings"],
        trainable_params=params[0], total_params=params[1],
        wall_time_s=metrics["wall_time_s"], eval_results=results, license="cc-by-nc-4.0" if known else "unknown",
        usage_snippet=render_section("sentence/usage.py.jinja", model_ref=model_ref), library_name="transformers",
        # an adapter and heads over a named encoder, run by the checkpoint's own code: the Hub's
        # hosted inference does not run custom code
        card_metadata={"base_model_relation": "adapter", "inference": False},
        model_name=f"Sentence-level media bias (MiniLM + LoRA), trained on {shown}", summary=card_summary(metrics, training_data),
        evaluation=render_section("sentence/evaluation.md", m=metrics, cv=metrics.get("cv"), data=data, reproduce_evaluation=reproduce,
                               has_words=data.get("layout") == "babe" or "biased_words" in [c.lower() for c in data.get("columns") or []]),
        intended_use=render_section("sentence/intended_use.md"), limitations=limitations(metrics),
        citation=known.citation if known else "",
        tags=[*(["babe"] if data.get("layout") == "babe" else []), "sentence-classification", "token-classification"],
        training_data=training_data,
    )


def limitations(m: dict) -> str:
    return render_section("sentence/limitations.md", m=m, babe=_data(m).get("layout") == "babe")


def card_summary(m: dict, training_data: TrainingData) -> str:
    """The card's own sections: data and terms, provenance, article rule, calibration."""
    data = _data(m)
    known = DATASETS.get(data.get("layout") or "")
    rule = ArticleRule(m["article_rule"]["statistic"], m["article_rule"]["threshold"], m["article_rule"]["slope"])
    return render_section(
        "sentence/summary.md", m=m, data=data, known=known, terms=known.terms if known else OWN_DATA_TERMS,
        counts=counts_line(data, m), babe_set=babe_set(data["name"]), trained_layers=m["settings"]["trained_layers"],
        training_data=training_data.describe(), rule=rule, reliability_png=RELIABILITY_PNG,
    )


def write_card(out: Path, metrics: dict, training_data: TrainingData, models: list) -> None:
    """``README.md`` and ``vilbias_card.json`` from the run's metrics (``models``: for the
    parameter counts only)."""

    info = card_info(metrics, training_data, models, model_ref=str(out) if not Path(out).is_absolute() else Path(out).name)
    info.save(out)
    render_model_card(info).save(out / "README.md")



def rerender(folder: str | Path) -> None:
    """The card of a trained sentence model again, from its own ``metrics.json``, provenance and
    recorded parameter counts: what a maintainer runs after a card template changes (the weights
    and the figures stay as trained)."""
    folder = Path(folder)
    metrics = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
    recorded = ModelCardInfo.load(folder)
    info = card_info(metrics, read_training_data(folder), params=(recorded.trainable_params, recorded.total_params),
                     model_ref=str(folder) if not folder.is_absolute() else folder.name)
    info.save(folder)
    render_model_card(info).save(folder / "README.md")
