"""The shipped sentence model's card: what it says about the data, the protocol, the figures and
their limits, rendered from the run's metrics and provenance. The prose is in
``vilbias/publish/templates/sentence/`` (summary, intended use, limitations, usage snippet and the
reliability diagram's title); this module computes what those templates are given."""

from __future__ import annotations

from pathlib import Path

from vilbias.models.sentence_bias import (
    ArticleRule,
)
from vilbias.provenance import TrainingData
from vilbias.publish.model import ModelCardInfo, render_model_card, render_section

RELIABILITY_PNG = "reliability.png"


def babe_set(source: str) -> str:
    """``SG1``/``SG2`` from BABE's file names (``final_labels_SG2_public.csv``), else the name."""
    name = Path(source).name
    return next((tag for tag in ("SG2", "SG1") if tag in name.upper()), name)


def reliability_title(source: str, n: int, articles: int, before: float, after: float) -> str:
    """The reliability diagram's title (``templates/sentence/reliability_title.txt``)."""
    return render_section("sentence/reliability_title.txt", babe_set=babe_set(source), n=n, articles=articles, before=before, after=after)


def card_info(metrics: dict, training_data: TrainingData, models: list):
    """The model card (``vilbias publish model`` renders the same from ``vilbias_card.json``)."""

    test = metrics["test"]
    results = [{"metric_type": "f1", "metric_name": "f1 (macro), sentences never seen", "value": test["f1_macro"], "split": "test"},
               {"metric_type": "accuracy", "value": test["accuracy"], "split": "test"}]
    if metrics.get("cv"):
        results.append({"metric_type": "f1", "metric_name": "f1 (macro), 5-fold CV mean", "value": metrics["cv"]["summary"]["f1_macro"]["mean"],
                        "split": "test", "config": "fold_0..fold_4"})
    trainable = sum(v.numel() for model in models for v in model.trained_state_dict().values())
    return ModelCardInfo(
        base_model="sentence-transformers/all-MiniLM-L6-v2", dataset=f"BABE ({babe_set(metrics['source'])})", dataset_config="default",
        method="lora", task="text-classification", hyperparameters=metrics["settings"],
        trainable_params=trainable, total_params=trainable + sum(p.numel() for p in models[0].bert.parameters() if not p.requires_grad),
        wall_time_s=metrics["wall_time_s"], eval_results=results, license="cc-by-nc-4.0",
        usage_snippet=render_section("sentence/usage.py.jinja"), library_name="peft",
        model_name="vilbias offline default (sentence-level bias, MiniLM + LoRA)", summary=card_summary(metrics, training_data),
        intended_use=render_section("sentence/intended_use.md"), limitations=limitations(metrics),
        tags=["babe", "sentence-classification", "token-classification"], training_data=training_data,
    )


def limitations(m: dict) -> str:
    return render_section("sentence/limitations.md", m=m)


def card_summary(m: dict, training_data: TrainingData) -> str:
    """The card's own sections: data and terms, provenance, evaluation, article rule, calibration."""
    rule = ArticleRule(m["article_rule"]["statistic"], m["article_rule"]["threshold"], m["article_rule"]["slope"])
    return render_section(
        "sentence/summary.md", m=m, cv=m.get("cv"), babe_set=babe_set(m["source"]), trained_layers=m["settings"]["trained_layers"],
        training_data=training_data.describe(), rule=rule, reliability_png=RELIABILITY_PNG,
    )


def write_card(out: Path, metrics: dict, training_data: TrainingData, models: list) -> None:
    """``README.md`` and ``vilbias_card.json`` from the run's metrics (``models``: for the
    parameter counts only)."""

    info = card_info(metrics, training_data, models)
    info.save(out)
    render_model_card(info).save(out / "README.md")
