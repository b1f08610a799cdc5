"""The classifier baselines' data: splits, the validation carve-out, nested training subsets,
and model inputs.

A fold has only train/test, so early stopping needs a validation slice carved out of the fold's
train split. That slice, and the ``--train-fractions`` subsets, are drawn by one pure rule,
:func:`stratified_group_prefix`: rows are joined into groups (rows sharing an image's bytes or a
story — canonical URL, normalised headline — for BiasCorpus; the same normalised text for a
sentence corpus), groups are put in a seeded order within each label stratum, and a share is a
prefix of each stratum's order. So the slice is stratified and no group straddles it, and the
subsets for growing fractions are nested (each holds every smaller one).

torch (and :mod:`vilbias.models.fusion`, which imports it) is imported inside the functions that
need it, so ``import vilbias.training`` stays light.
"""

from __future__ import annotations

import hashlib
import io
import re
from collections import Counter
from pathlib import Path
from typing import Any

from datasets import Dataset, DatasetDict, Image, load_dataset
from PIL import Image as PILImage
from vilbias.training.feature_cache import compute_image_features

from vilbias.corpus.splits import story_keys
from vilbias.task import classifier_text

VALIDATION_SHARE = 0.1
"""Share of a fold's train split held out (stratified, group-aware) for early stopping: folds
have no validation split of their own."""


# ---------------------------------------------------------------- grouping and shares (pure)


def _norm_text(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower())


def group_ids(keys: list[tuple[str, ...]]) -> list[int]:
    """Group id per row (the index of the group's first row): rows sharing any key are one group."""
    parent = list(range(len(keys)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first: dict[str, int] = {}
    for i, row_keys in enumerate(keys):
        for key in row_keys:
            j = first.setdefault(key, i)
            a, b = find(i), find(j)
            if a != b:
                parent[max(a, b)] = min(a, b)
    return [find(i) for i in range(len(keys))]


def stratified_group_prefix(labels: list[int], groups: list[int], share: float, seed: int | str) -> list[int]:
    """Positions of about ``share`` of the rows, stratified by label and made of whole groups.

    Each group joins the stratum of its most common label; within a stratum, groups are visited
    in a seeded order and taken until the stratum's quota (``round(share * rows)``) is reached.
    The order does not depend on ``share``, so a larger share always contains a smaller one.
    """
    members: dict[int, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(g, []).append(i)
    strata: dict[int, list[int]] = {}
    for g, rows in members.items():
        stratum = Counter(labels[i] for i in rows).most_common(1)[0][0]
        strata.setdefault(stratum, []).append(g)
    chosen: list[int] = []
    for _, stratum_groups in sorted(strata.items()):
        quota = round(share * sum(len(members[g]) for g in stratum_groups))
        taken = 0
        for g in sorted(stratum_groups, key=lambda g: hashlib.sha256(f"{seed}|{g}|{members[g][0]}".encode()).hexdigest()):
            if taken >= quota:
                break
            chosen += members[g]
            taken += len(members[g])
    return sorted(chosen)


# ---------------------------------------------------------------- columns


def label_column(ds, wanted: str | None) -> str:
    columns = ds.column_names
    for name in [wanted] if wanted else ["multimodal_label", "label"]:
        if name in columns:
            return name
    raise ValueError(f"no label column {wanted or 'multimodal_label/label'} in {columns}; pass --label-column")


def texts(ds) -> list[str]:

    if "headline" in ds.column_names:
        return [classifier_text(h, a) for h, a in zip(ds["headline"], ds["article_text"], strict=True)]
    if "text" in ds.column_names:
        return list(ds["text"])
    raise ValueError(f"no text columns (headline/article_text or text) in {ds.column_names}")


def image_bytes(ds) -> list[bytes]:
    if "image" not in ds.column_names:
        raise ValueError("the image modality needs an 'image' column; this dataset is text-only (use --modality text)")
    out = []
    for i, value in enumerate(ds.cast_column("image", Image(decode=False))["image"]):
        if not value or not value.get("bytes"):
            if value and value.get("path"):
                out.append(Path(value["path"]).read_bytes())
                continue
            raise ValueError(f"row {i} ({ds[i].get('unique_id', '?')}) has no image")
        out.append(value["bytes"])
    return out


def row_ids(ds) -> list[str]:
    return list(ds["unique_id"]) if "unique_id" in ds.column_names else [str(i) for i in range(len(ds))]


def group_keys(ds) -> list[tuple[str, ...]]:
    """What ties rows together: image bytes and story (BiasCorpus), or normalised text (sentences)."""
    n = len(ds)
    keys: list[list[str]] = [[] for _ in range(n)]
    if "image" in ds.column_names:
        for row, data in zip(keys, image_bytes(ds), strict=True):
            row.append("image:" + hashlib.sha256(data).hexdigest())
    if "headline" in ds.column_names:
        urls = ds["url"] if "url" in ds.column_names else [""] * n
        for row, url, headline in zip(keys, urls, ds["headline"], strict=True):
            row.extend(story_keys(url or "", headline or ""))
    elif "text" in ds.column_names:
        for row, text in zip(keys, ds["text"], strict=True):
            row.append("text:" + hashlib.sha1(_norm_text(text).encode()).hexdigest())
    return [tuple(k) for k in keys]


# ---------------------------------------------------------------- splits


def load_splits(dataset: str, config_name: str, *, revision: str | None, label: str | None, seed: int):
    """``(DatasetDict train/validation/test, label column)``; a fold's validation is carved out of
    its train split (:data:`VALIDATION_SHARE`, stratified, group-aware, seeded)."""
    ds = load_dataset(dataset, config_name, revision=revision)
    missing = {"train", "test"} - set(ds)
    if missing:
        raise ValueError(missing_split_message(dataset, config_name, missing))
    column = label_column(ds["train"], label)
    if "validation" not in ds:
        # A fold has none; a small corpus's default may have none (the build leaves an empty split
        # out). Too few training rows for a slice leave it empty: train_one then trains without
        # early stopping and says so.
        train = ds["train"]
        held = set(stratified_group_prefix(list(train[column]), group_ids(group_keys(train)), VALIDATION_SHARE, seed))
        if held and len(held) == len(train):
            raise ValueError(f"{dataset} [{config_name}]: the validation carve-out took every training row (its groups are too large)")
        ds = DatasetDict(
            train=train.select([i for i in range(len(train)) if i not in held]),
            validation=train.select(sorted(held)),
            test=ds["test"],
        )
    return ds, column


def missing_split_message(dataset: str, config_name: str, missing) -> str:
    """The one line for a config without a train or test split (a small corpus's build leaves an
    empty split out of its config)."""
    return (f"{dataset} [{config_name}] has no {' or '.join(sorted(missing))} split: the corpus has too few rows to fill it "
            "(its card and build_report.json name the empty splits); pick a config that has train and test with "
            "--dataset-config, or build a larger corpus")


def check_splits(dataset: str, config_names, revision: str | None) -> None:
    """Fail in one line, before any training, when a config lacks a train or test split (``--cv``
    checks every fold first rather than stopping after training the earlier ones)."""
    from datasets import get_dataset_split_names

    for name in config_names:
        missing = {"train", "test"} - set(get_dataset_split_names(dataset, name, revision=revision))
        if missing:
            raise ValueError(missing_split_message(dataset, name, missing))


def train_subset(train, label: str, fraction: float, seed: int):
    """The nested, stratified, group-aware ``fraction`` of a training split."""
    if fraction >= 1:
        return train
    keep = stratified_group_prefix(list(train[label]), group_ids(group_keys(train)), fraction, f"fraction|{seed}")
    return train.select(keep)


# ---------------------------------------------------------------- model inputs


class Collator:
    """Pads tokens, stacks precomputed features, and turns image bytes into pixel values
    (only for an image encoder that is being trained, whose features cannot be cached)."""

    def __init__(self, tokenizer=None, image_encoder=None):
        self.tokenizer = tokenizer
        self.image_encoder = image_encoder

    def __call__(self, rows: list[dict]) -> dict:
        import torch

        batch: dict[str, Any] = {}
        tok = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in rows[0]]
        if tok:
            batch.update(self.tokenizer.pad([{k: r[k] for k in tok} for r in rows], return_tensors="pt"))
        for key in ("text_features", "image_features"):
            if key in rows[0]:
                batch[key] = torch.tensor([r[key] for r in rows], dtype=torch.float32)
        if "image_bytes" in rows[0]:
            batch["pixel_values"] = self.image_encoder.preprocess([PILImage.open(io.BytesIO(r["image_bytes"])) for r in rows])
        batch["labels"] = torch.tensor([r["labels"] for r in rows], dtype=torch.long)
        return batch


def _text_features(model, tokenizer, items: list[str], max_length: int, batch_size: int = 32):
    import torch

    out = []
    model.text_encoder.eval()
    device = next(model.parameters()).device
    with torch.no_grad():
        for start in range(0, len(items), batch_size):
            enc = tokenizer(items[start : start + batch_size], truncation=True, max_length=max_length, padding=True, return_tensors="pt")
            enc = {k: v.to(device) for k, v in enc.items()}
            out.extend(model.encode_text(enc["input_ids"], enc["attention_mask"], enc.get("token_type_ids")).float().cpu().tolist())
    return out


def featurize(cfg, split, label: str, model, tokenizer, max_length: int, cache=None):
    """The model's training columns for one split (``labels`` + tokens and/or features)."""
    if not len(split):  # an empty validation slice (a tiny corpus): training runs without it
        return Dataset.from_dict({"labels": [], "unique_id": []})
    columns: dict[str, list] = {"labels": list(split[label])}
    fusion = cfg.architecture == "fusion"
    uses_text = not fusion or model.config.uses_text
    uses_image = fusion and model.config.uses_image
    if uses_text:
        items = texts(split)
        if fusion and cfg.freeze_text_encoder:
            # A frozen encoder gives the same vector every epoch: encode once per run.
            columns["text_features"] = _text_features(model, tokenizer, items, max_length)
        else:
            columns.update(tokenizer(items, truncation=True, max_length=max_length))
    if uses_image:
        images = image_bytes(split)
        if cfg.freeze_image_encoder:
            columns["image_features"] = compute_image_features(model.image_encoder, images, cache).tolist()
        else:
            columns["image_bytes"] = images
    columns["unique_id"] = row_ids(split)
    return Dataset.from_dict(columns)
