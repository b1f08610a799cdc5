"""Distant supervision: pre-train the classifier on headlines labelled by their outlet, then
fine-tune on the expert labels (BABE's method, Spinde et al., 2021).

    vilbias train classifier --dataset ./babe --recipe babe --cv \\
        --distant-dataset headlines.csv --distant-outlet-labels outlets.yaml     # one command
    vilbias train classifier --dataset ./babe --recipe babe --distant-dataset headlines.csv \\
        --distant-outlet-labels outlets.yaml --distant-only --output-dir pre   # or two:
    vilbias train classifier --dataset ./babe --recipe babe --cv --init-encoder pre/encoder

The distant corpus is a CSV/XLSX/Parquet/JSON file, a dataset folder or a Hub id, read by the
sentence reader (:func:`vilbias.corpus.sentences.read_records`). Columns: the headline
(``headline``, ``title``, ``text`` or ``sentence``) and either a ``label`` (``biased`` /
``not_biased``, ``Biased`` / ``Non-biased``, ``1`` / ``0``) or an ``outlet`` (``outlet``,
``media_name``, ``source``) mapped by ``--distant-outlet-labels``, a YAML or JSON mapping
``outlet: biased | not_biased`` (outlets compared lower-cased; rows of unmapped outlets are left
out and counted). An optional link column (``news_link``, ``url``, ``link``) ties a headline to
its article. Exact repeats are merged; a headline given both labels is left out.

**No leak.** Pre-training on the sentences being evaluated, even with outlet labels, would leak
them. Before each pre-training, every distant row whose normalised text equals a held-out row's
text (the fold's validation and test rows; with ``--distant-only``, every row of ``--dataset``),
or whose link equals a held-out row's link, is dropped and counted. The kept rows' ids digest
names the pre-training, so folds that keep the same rows share one pre-training
(``<output-dir>/distant/<digest>/encoder``).

Pre-training follows BABE's code: 10% of the distant corpus held out for early stopping on its
loss (patience 1), the encoder's weights then initialise the fine-tuning model, whose
classification head starts afresh.

The pre-training itself runs in :mod:`vilbias.training.classifier` (``pretrain_distant``), with
the same ``fit`` as the fine-tuning; this module holds the corpus, the guard and the settings.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import re
from pathlib import Path

import yaml
from datasets import Dataset, DatasetDict
from vilbias.training.classifier_data import group_ids, stratified_group_prefix, texts

from vilbias.corpus.sentence_records import read_records
from vilbias.provenance import ids_digest
from vilbias.task import LABEL_NAMES, read_label

logger = logging.getLogger(__name__)

TEXT_COLUMNS = ("headline", "title", "text", "sentence")
OUTLET_COLUMNS = ("outlet", "media_name", "source")
LINK_COLUMNS = ("news_link", "url", "link")
DISTANT_VALIDATION_SHARE = 0.1


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", str(text or "").strip().lower())


def _pick(record: dict, names: tuple[str, ...]) -> str | None:
    lower = {str(k).strip().lower(): k for k in record}
    return next((lower[n] for n in names if n in lower), None)


def _label(value, line: int, what: str) -> int:
    label = read_label(value)
    if label is None:
        raise ValueError(f"line {line}: {what} {value!r} is not biased/not_biased (or 1/0)")
    return label


def read_outlet_labels(path: str | Path) -> dict[str, int]:
    """``outlet (lower-cased) -> class id`` from a YAML or JSON mapping."""
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping outlet: biased | not_biased")
    return {_norm(outlet): _label(value, i, f"outlet {outlet!r}") for i, (outlet, value) in enumerate(data.items(), start=1)}


def read_distant(source: str, outlet_labels: dict[str, int] | None) -> tuple[list[dict], dict]:
    """Distant rows ``{"unique_id", "text", "label", "link"}`` and counts of what was left out."""
    by_text: dict[str, dict] = {}
    counts = {"rows_read": 0, "unmapped_outlet": 0, "conflicting": 0, "duplicates": 0}
    columns = None
    for line, record, _split in read_records(source):
        if columns is None:
            columns = {k: _pick(record, names) for k, names in (("text", TEXT_COLUMNS), ("label", ("label",)), ("outlet", OUTLET_COLUMNS), ("link", LINK_COLUMNS))}
            if columns["text"] is None or (columns["label"] is None and (columns["outlet"] is None or outlet_labels is None)):
                raise ValueError(f"{source}: needs a headline column and a label column, or an outlet column with --distant-outlet-labels (found {list(record)})")
        counts["rows_read"] += 1
        text = str(record.get(columns["text"]) or "").strip()
        if columns["label"] is not None:
            label = _label(record.get(columns["label"]), line, "label")
        else:
            label = outlet_labels.get(_norm(record.get(columns["outlet"])))
            if label is None:
                counts["unmapped_outlet"] += 1
                continue
        if not text:
            continue
        key = _norm(text)
        link = str(record.get(columns["link"]) or "").strip() if columns["link"] else ""
        if key in by_text:
            if by_text[key]["label"] == label:
                counts["duplicates"] += 1
            else:
                by_text[key]["label"] = None  # both labels: neither is trusted
            continue
        by_text[key] = {"unique_id": hashlib.sha256(key.encode()).hexdigest()[:20], "text": text, "label": label, "link": link}
    rows = [r for r in by_text.values() if r["label"] is not None]
    counts["conflicting"] = sum(1 for r in by_text.values() if r["label"] is None)
    return rows, counts


def drop_held_out(rows: list[dict], held_texts: list[str], held_links: list[str]) -> tuple[list[dict], int]:
    """The distant rows that share neither a normalised text nor a link with held-out rows."""
    texts = {_norm(t) for t in held_texts}
    links = {link.strip() for link in held_links if link and link.strip()}
    kept = [r for r in rows if _norm(r["text"]) not in texts and not (r["link"] and r["link"] in links)]
    return kept, len(rows) - len(kept)


def held_out_of(*splits) -> tuple[list[str], list[str]]:
    """Texts and links of dataset splits (the rows a pre-training must not see)."""
    held_texts, held_links = [], []
    for split in splits:
        held_texts += texts(split)
        if "news_link" in split.column_names or "url" in split.column_names:
            held_links += list(split["news_link" if "news_link" in split.column_names else "url"])
    return held_texts, held_links


def encoder_of(model):
    """The pre-trained encoder inside a classifier: the fusion model's text encoder or a
    transformers model's base model."""
    return model.text_encoder if hasattr(model, "text_encoder") else model.base_model


def distant_splits(rows: list[dict], seed: int) -> DatasetDict:
    """Train and validation (10%, stratified) of the distant rows."""
    labels = [r["label"] for r in rows]
    held = set(stratified_group_prefix(labels, group_ids([(r["unique_id"],) for r in rows]), DISTANT_VALIDATION_SHARE, f"distant|{seed}"))
    columns = lambda idx: {"unique_id": [rows[i]["unique_id"] for i in idx], "text": [rows[i]["text"] for i in idx], "label": [labels[i] for i in idx]}  # noqa: E731
    train = [i for i in range(len(rows)) if i not in held]
    return DatasetDict(train=Dataset.from_dict(columns(train)), validation=Dataset.from_dict(columns(sorted(held))))


def pretraining_config(cfg):
    """The classifier config of the pre-training run: BABE's distant settings, loss early stopping
    (patience 1), plain cross-entropy, nothing of the fine-tuning's own extras."""
    return dataclasses.replace(
        cfg, num_train_epochs=cfg.distant_epochs, per_device_train_batch_size=cfg.distant_batch_size,
        learning_rate=cfg.distant_learning_rate or cfg.learning_rate, metric_for_best_model="loss", greater_is_better=False, patience=1, loss="cross_entropy", class_weighting="none", distant_dataset=None, distant_only=False,
        init_encoder=None, ensemble_seeds=[], train_fractions=[],
    )


def prepare(cfg, held_texts: list[str], held_links: list[str]) -> tuple[list[dict], dict, Path]:
    """The distant rows to pre-train on (held-out rows dropped), their record for the provenance,
    and the folder their pre-training lives in (named by the rows and settings)."""
    outlets = read_outlet_labels(cfg.distant_outlet_labels) if cfg.distant_outlet_labels else None
    rows, counts = read_distant(cfg.distant_dataset, outlets)
    rows, dropped = drop_held_out(rows, held_texts, held_links)
    if len(rows) < 10 or len({r["label"] for r in rows}) < 2:
        raise ValueError(f"distant corpus {cfg.distant_dataset}: {len(rows)} usable rows left ({dropped} held out): too few, or one label only")
    pre = pretraining_config(cfg)
    settings = {"epochs": pre.num_train_epochs, "batch_size": pre.per_device_train_batch_size, "learning_rate": pre.learning_rate}
    digest = ids_digest([r["unique_id"] for r in rows])
    record = {
        "dataset": cfg.distant_dataset, "outlet_labels": cfg.distant_outlet_labels, **counts, "rows": len(rows),
        "dropped_as_held_out": dropped, "ids_sha256": digest,
        "label_counts": {n: sum(r["label"] == i for r in rows) for i, n in enumerate(LABEL_NAMES)}, **settings,
    }
    key = hashlib.sha256(json.dumps([digest, cfg.model, cfg.architecture, cfg.modality, cfg.max_length, cfg.seed, settings], sort_keys=True).encode()).hexdigest()[:16]
    return rows, record, Path(cfg.output_dir) / "distant" / key
