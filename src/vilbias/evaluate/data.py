"""Evaluation items, k-shot example selection and the robustness probes.

Items come from the ``default`` config (or a ``fold_K``) of a BiasCorpus folder or Hub repo,
with the image's original bytes. Probes are pure functions from items to items:

- ``none``: the item as it is;
- ``no_image``: the image removed (generative models get no image part; a fusion classifier,
  which cannot run without one, gets a uniform grey image);
- ``swap_image``: the image of another evaluated item (a fixed, seeded derangement);
- ``headline_only``: the article text dropped, the headline kept.

A model whose F1 barely moves when its image is removed or swapped is not using the image: the
unimodal-shortcut check.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from pathlib import Path

from datasets import Image, load_dataset
from huggingface_hub import constants

from vilbias.paths import looks_local, resolve_dataset
from vilbias.task import Item

PROBES = ("none", "no_image", "swap_image", "headline_only")


def check_dataset(dataset: str, revision: str | None = None) -> None:
    """Fail in one line, before anything is loaded, when ``dataset`` is neither an existing folder nor
    a dataset the Hub has (:func:`vilbias.paths.resolve_dataset`: a name that looks local is never sent
    to the Hub; a Hub id costs one request, no retries).

    Raises:
        FileNotFoundError: saying what ``dataset`` was taken for and why it is not there.
    """
    resolve_dataset(dataset, revision)


def load_split(dataset: str, config: str, split: str, *, revision: str | None = None,
               label_column: str = "multimodal_label") -> list[Item]:
    """Read ``split`` of ``config`` as :class:`Item` records (images as original bytes).

    Raises:
        ValueError: in one sentence when the split cannot be loaded (unknown config or split, a Hub
            repo that cannot be reached) or lacks the columns evaluation needs.
    """
    local = looks_local(dataset)
    try:
        ds = load_dataset(str(Path(dataset).expanduser()) if local else dataset, config, split=split, revision=revision)
    except (ValueError, OSError) as e:  # OSError: a Hub repo not found or not reachable
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        taken = "" if local else " (taken for a Hub repo id" + (", with HF_HUB_OFFLINE set" if constants.HF_HUB_OFFLINE else "") + ")"
        raise ValueError(f"cannot load split {split!r} of {dataset}{taken} [{config}]: {reason}") from e
    if label_column not in ds.column_names:
        raise ValueError(f"{dataset} [{config}] has no {label_column!r} column; columns: {ds.column_names}")
    missing = {"unique_id", "headline", "article_text"} - set(ds.column_names)
    if missing:
        raise ValueError(f"{dataset} [{config}] lacks {sorted(missing)}: evaluate the default or fold_K config, not sft")
    if "image" in ds.column_names:
        ds = ds.cast_column("image", Image(decode=False))
    items = []
    for row in ds:
        image = row.get("image")
        data = None
        if image:
            data = image.get("bytes") or (Path(image["path"]).read_bytes() if image.get("path") else None)
        items.append(Item(
            unique_id=str(row["unique_id"]),
            headline=row["headline"] or "",
            article_text=row["article_text"] or "",
            label=int(row[label_column]),
            image=data,
            image_caption=row.get("image_caption") or "",
            reasoning=row.get("reasoning") or "",
        ))
    return items


def select_shots(pool: Sequence[Item], k: int, *, exclude: set[str], seed: int = 0) -> list[Item]:
    """``k`` examples from ``pool`` (a train split), balanced by label, never an excluded item.

    Examples come ``k // 2`` per label (the odd one from the ``biased`` class), drawn with a
    fixed seed, then interleaved so the order does not teach a label; evaluated items are
    excluded by id even if they also appear in the pool.

    Raises:
        ValueError: when the pool lacks enough examples of a label.
    """
    if k <= 0:
        return []
    rng = random.Random(seed)
    by_label: dict[int, list[Item]] = {0: [], 1: []}
    for item in sorted(pool, key=lambda i: i.unique_id):  # independent of the pool's order
        if item.unique_id not in exclude and item.reasoning.strip():
            by_label[item.label].append(item)
    wanted = {1: k - k // 2, 0: k // 2}
    picked: dict[int, list[Item]] = {}
    for label, n in wanted.items():
        if len(by_label[label]) < n:
            raise ValueError(f"{k}-shot needs {n} training examples of label {label} with a rationale; the pool has {len(by_label[label])}")
        picked[label] = rng.sample(by_label[label], n)
    shots = []
    for i in range(max(wanted.values())):
        for label in (1, 0):
            if i < len(picked[label]):
                shots.append(picked[label][i])
    return shots


def apply_probe(items: Sequence[Item], probe: str, *, seed: int = 0) -> list[Item]:
    """``items`` under ``probe`` (one of :data:`PROBES`); same order, same ids and labels."""
    if probe == "none":
        return list(items)
    if probe == "no_image":
        return [dataclasses.replace(i, image=None) for i in items]
    if probe == "headline_only":
        return [dataclasses.replace(i, article_text="") for i in items]
    if probe == "swap_image":
        if len(items) < 2:
            raise ValueError("swap_image needs at least two items")
        order = list(range(len(items)))
        random.Random(seed).shuffle(order)
        # Each item takes the image of the next one in a seeded cycle: a derangement, so no
        # item keeps its own image.
        donor = {order[p]: order[(p + 1) % len(order)] for p in range(len(order))}
        return [dataclasses.replace(item, image=items[donor[n]].image, image_caption=items[donor[n]].image_caption)
                for n, item in enumerate(items)]
    raise ValueError(f"unknown probe {probe!r}; choose from {', '.join(PROBES)}")
