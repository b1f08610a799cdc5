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

import ast
import dataclasses
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from datasets import ClassLabel, Image, load_dataset
from huggingface_hub import constants

from vilbias.evaluate.config import PROBES
from vilbias.paths import looks_local, resolve_dataset
from vilbias.task import LABEL_NAMES, Item


def check_dataset(dataset: str, revision: str | None = None) -> None:
    """Fail in one line, before anything is loaded, when ``dataset`` is neither an existing folder nor
    a dataset the Hub has (:func:`vilbias.paths.resolve_dataset`: a name that looks local is never sent
    to the Hub; a Hub id costs one request, no retries).

    Raises:
        FileNotFoundError: saying what ``dataset`` was taken for and why it is not there.
        ValueError: ``dataset`` is a table file, not a built corpus (saying how to build it).
    """
    path = Path(dataset).expanduser()
    if path.is_file():
        kind = ("--sentences" if path.suffix.lower() in (".csv", ".tsv", ".xlsx") else "--from")
        raise ValueError(f"{dataset} is a file, not a corpus: build it first with `vilbias build {kind} {dataset} --output "
                         f"{path.stem}` (labelled sentences: --sentences; news items: --from), then evaluate --dataset {path.stem}")
    resolve_dataset(dataset, revision)


ARTICLE_LABEL = "multimodal_label"
"""The task label of an article corpus (``vilbias build`` from a workdir, the sample, ``--from``)."""


@dataclass
class Split:
    """One evaluated split as read: its items, and what the corpus's own features said about them."""

    items: list[Item]
    label_column: str
    """The gold label column used: the one given, else the one the corpus's features name."""
    kind: str
    """``articles`` (headline + article text, maybe an image) or ``sentences`` (one sentence a row)."""
    links: dict[str, str] = dataclasses.field(default_factory=dict)
    """Sentence corpora: unique_id -> the sentence's article link (``news_link``, may be empty): the
    sentence-level protocol's articles."""
    label_annotators: dict[str, set[str]] = dataclasses.field(default_factory=dict)
    """unique_id -> the annotators whose votes gave the row's label (empty for reviewed, imported
    or expert-labelled rows): what :func:`vilbias.evaluate.leakage.circularity` compares with the model."""


def corpus_label_column(features) -> str | None:
    """The gold label column a corpus's features name: ``multimodal_label`` (the task label of an
    article corpus, beside its ``text_label``), else its one ``ClassLabel`` over the task's labels
    (``label`` in a sentence corpus); None when the features do not say."""
    if ARTICLE_LABEL in features:
        return ARTICLE_LABEL
    labels = [name for name, f in features.items() if isinstance(f, ClassLabel) and list(f.names) == list(LABEL_NAMES)]
    return labels[0] if len(labels) == 1 else None


def _row_kind(dataset: str, config: str, columns: list[str]) -> str:
    if {"headline", "article_text"} <= set(columns):
        return "articles"
    if "text" in columns:
        return "sentences"
    if "messages" in columns:
        raise ValueError(f"{dataset} [{config}] holds conversations (the sft view): evaluate the default or a fold_K config "
                         "with --dataset-config")
    raise ValueError(f"{dataset} [{config}] has no text to evaluate (headline and article_text, or text); columns: {columns}")


def _missing_split(dataset: str, config: str, split: str, error: Exception) -> ValueError | None:
    """The one line for a split the config does not have (a small corpus leaves an empty split out)."""
    found = re.search(r'Unknown split "[^"]+"\. Should be one of (\[.*\])', str(error))
    if not found:
        return None
    return ValueError(f"{dataset} [{config}] has no {split} split (it has {', '.join(ast.literal_eval(found.group(1)))}): the "
                      "corpus has too few rows to fill it (its card names its empty splits); evaluate another split with "
                      "--split, or a fold_K config whose test split has rows with --dataset-config fold_K")


def read_split(dataset: str, config: str, split: str, *, revision: str | None = None,
               label_column: str | None = None) -> Split:
    """Read ``split`` of ``config`` (images as original bytes), the label column and the row kind
    taken from the corpus's own features unless ``label_column`` is given.

    A sentence corpus (``vilbias build --sentences``: ``text`` and ``label``) gives each sentence
    as the item's headline with no article text: every model reads a headline whole (the sentence
    model never splits it into sentences), and a classifier's input text is the sentence either way.

    Raises:
        ValueError: in one sentence when the split cannot be loaded (unknown config or split, a Hub
            repo that cannot be reached) or lacks the columns evaluation needs, naming the flag that fixes it.
    """
    local = looks_local(dataset)
    try:
        ds = load_dataset(str(Path(dataset).expanduser()) if local else dataset, config, split=split, revision=revision)
    except (ValueError, OSError) as e:  # OSError: a Hub repo not found or not reachable
        missing_split = _missing_split(dataset, config, split, e)
        if missing_split is not None:
            raise missing_split from None
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        taken = "" if local else " (taken for a Hub repo id" + (", with HF_HUB_OFFLINE set" if constants.HF_HUB_OFFLINE else "") + ")"
        raise ValueError(f"cannot load split {split!r} of {dataset}{taken} [{config}]: {reason}") from e
    kind = _row_kind(dataset, config, ds.column_names)
    own = corpus_label_column(ds.features)
    column = label_column or own
    if column is None:
        raise ValueError(f"{dataset} [{config}]: its features name no label column (a ClassLabel over {', '.join(LABEL_NAMES)}); "
                         f"name it with --label-column (columns: {', '.join(ds.column_names)})")
    if column not in ds.column_names:
        hint = f"its label column is {own!r}: drop --label-column" if own else "name another with --label-column"
        raise ValueError(f"{dataset} [{config}] has no {column!r} column; {hint}")
    if "unique_id" not in ds.column_names:
        raise ValueError(f"{dataset} [{config}] has no unique_id column: evaluation keys its answers by it")
    if "image" in ds.column_names:
        ds = ds.cast_column("image", Image(decode=False))
    items, annotators, links = [], {}, {}
    for row in ds:
        image = row.get("image")
        data = None
        if image:
            data = image.get("bytes") or (Path(image["path"]).read_bytes() if image.get("path") else None)
        sentence = kind == "sentences"
        items.append(Item(
            unique_id=str(row["unique_id"]),
            headline=(row["text"] if sentence else row["headline"]) or "",
            article_text="" if sentence else row["article_text"] or "",
            label=int(row[column]),
            image=data,
            image_caption=row.get("image_caption") or "",
            reasoning=row.get("reasoning") or "",
        ))
        annotators[str(row["unique_id"])] = label_annotators(row)
        if sentence:
            links[str(row["unique_id"])] = row.get("news_link") or ""
    return Split(items, column, kind, links, annotators)


def label_annotators(row: dict) -> set[str]:
    """The annotators whose votes gave a row its label: those of the vote ``label_source`` names
    (``multimodal``: ``votes``, ``text``: ``text_votes``); none for a label set by review, imported,
    or from a corpus without votes (expert-labelled sentences)."""
    votes = {"multimodal": row.get("votes"), "text": row.get("text_votes")}.get(row.get("label_source") or "")
    return {v["annotator"] for v in votes or () if v.get("label") is not None}


def load_split(dataset: str, config: str, split: str, *, revision: str | None = None,
               label_column: str | None = None) -> list[Item]:
    """The items of :func:`read_split`."""
    return read_split(dataset, config, split, revision=revision, label_column=label_column).items


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
