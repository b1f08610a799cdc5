"""Labelled sentence corpora (BABE and its layouts) -> a text-only dataset repo.

    vilbias build --sentences final_labels_SG1.csv --output ./babe
    vilbias build --sentences final_labels_SG2.xlsx --output ./babe-sg2
    vilbias build --sentences mediabiasgroup/BABE --output ./babe-hub     # a Hub dataset (or a local copy of one)
    vilbias train classifier --dataset ./babe --recipe babe --cv

Inputs, one reader for all of them:

- **BABE's CSV** as published (Spinde et al., 2021): semicolon-separated, UTF-8 with a byte-order
  mark, header ``text;news_link;outlet;topic;type;label_bias;label_opinion;biased_words``;
  ``label_bias`` is ``Biased``, ``Non-biased`` or ``No agreement``; ``biased_words`` a Python list
  literal (``['word', 'other']`` or ``[]``). A comma- or tab-separated file with the same columns
  reads the same way (the delimiter is taken from the header line).
- **BABE's XLSX** (``final_labels_SG1.xlsx``, ``final_labels_SG2.xlsx``): the first sheet, the
  header in its first non-empty row (read with ``openpyxl``).
- **The Hub layout** of ``mediabiasgroup/BABE``: columns ``text``, ``label`` (``1`` biased,
  ``0`` not biased), ``outlet``, ``topic``, ``news_link``, ``biased_words`` (the list literal as a
  string), ``type``, ``label_opinion``, ``uuid``; splits ``train`` and ``test``, read one after the
  other (the corpus makes its own folds). As ``ORG/NAME`` or a local dataset folder (through
  ``datasets.load_dataset``), or a local ``.parquet``, ``.json``/``.jsonl`` or ``.csv`` export.

Column names are matched without regard to case; ``sentence`` is read as ``text`` and
``label_bias`` is preferred over ``label``. Labels: ``Biased``/``Non-biased`` (any case; also
``biased``/``not_biased``) or ``1``/``0``.

Rules. ``No agreement`` rows and rows without a label are left out (BABE's own protocol drops
them). An exact repeat of a sentence (same text, link and label) is merged into one row. The
same sentence and link given different labels is a *conflict*: every copy is left out. Each
row left out or merged is listed with its line in ``build_report.json`` (``exclusions``: line,
reason, unique_id) and in the card; the file is never refused for them. A file that cannot be
read, a missing text or label column, an unknown label value, an empty text or a malformed
``biased_words`` stops the build with one line naming the line. "Line" is the line of the
record's first line in a CSV, the sheet row in an XLSX, and the 1-based record number (over
the splits, in order) for Parquet, JSON and Hub datasets.

Output: the same layout as the main corpus (:mod:`vilbias.corpus.writer`): every row stored once
in ``data/{split}-fold{k}-…``, configs ``default`` (train/validation/test, 80/10/10) and
``fold_0`` ... ``fold_4`` (train/test) reading those files, a README.md whose YAML carries
``configs:`` and ``dataset_info:``. Columns: ``unique_id``, ``text``, ``news_link``, ``outlet``,
``topic``, ``type``, ``label`` (ClassLabel ``["not_biased", "biased"]``), ``label_opinion``,
``biased_words``. Splits and folds come from :func:`vilbias.corpus.splits.assign_splits`:
stratified by label, deterministic from the data (rows ordered by ``unique_id``), and the same
sentence text (after case and space normalisation) never straddles two cells.
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from datasets import ClassLabel, DatasetInfo, Features, List, Value
from huggingface_hub import DatasetCard, DatasetCardData

from vilbias.corpus.card import loading_block
from vilbias.corpus.config import CardNames
from vilbias.corpus.protocol import BuildPlan, CellKey
from vilbias.corpus.release import read_cells
from vilbias.corpus.sentence_datasets import DATASETS, OWN_DATA_TERMS
from vilbias.corpus.sentence_records import (
    OFFICIAL_SPLITS,
    REASON_TEXT,
    normalised_text,
    parse_sentence_columns,
    read_sentences,
    source_name,
)
from vilbias.corpus.splits import (
    MEANINGFUL_ROWS,
    Cell,
    SplitItem,
    assign_splits,
    group_keys,
    split_size_note,
    straddling_groups,
)
from vilbias.corpus.writer import card_metadata, corpus_views
from vilbias.task import (
    ANSWER_LABELS,
    BIASED,
    BIASED_NAME,
    FOLDS,
    LABEL_NAMES,
    N_FOLDS,
    NOT_BIASED_NAME,
    SPLITS,
)

logger = logging.getLogger(__name__)


def _features() -> Features:
    return Features(
        {
            "unique_id": Value("string"),
            "text": Value("string"),
            "news_link": Value("string"),
            "outlet": Value("string"),
            "topic": Value("string"),
            "type": Value("string"),
            "label": ClassLabel(names=LABEL_NAMES),
            "label_opinion": Value("string"),
            "biased_words": List(Value("string")),
        }
    )


# ---------------------------------------------------------------- reading records


# ---------------------------------------------------------------- one record -> one row


# ---------------------------------------------------------------- rules


# ---------------------------------------------------------------- the source


@dataclass(slots=True)
class _Placed:
    """What the report reads of a kept sentence."""

    label: int
    outlet: str
    split: str = ""
    fold: int = -1


class SentenceSource:
    """Labelled sentences (a BABE-format file, an export of the Hub layout, a dataset folder or
    ``ORG/NAME``) as a build's source: a text-only corpus, configs ``default`` and ``fold_K``."""

    kind = "sentences"
    features = _features()
    views = corpus_views(features)

    def __init__(self, source: str | Path, columns: list[str] | None = None, source_split: str | None = None):
        self.source = source
        self.columns = parse_sentence_columns(list(columns or []))
        self.source_split = source_split
        self.name = source_name(source) + (f" ({source_split})" if source_split else "")
        self._rows: list[dict] = []
        self._cells: dict[str, Cell] = {}
        self._details: dict = {}
        self._exclusions: list[dict] = []

    def plan(self, scratch: Path, pinned: Mapping[str, Cell]) -> BuildPlan:
        rows, counts, exclusions = read_sentences(self.source, self.columns, self.source_split)
        if not rows:
            raise ValueError(f"{source_name(self.source)}: no labelled sentences left after leaving out {len(exclusions)} rows")
        groups = article_groups(rows)
        cells, split_report = _assign(rows, groups, pinned)
        rows.sort(key=lambda r: r["unique_id"])
        placed = _placement(rows, cells)
        self._rows, self._cells = rows, cells
        self._details = {
            **counts,
            "source_sha256": _sha256(self.source),
            "splits_from": "source" if counts["official_splits"] else "vilbias",
            "articles": len(set(groups.values())),
            "articles_straddling": straddling_groups(groups, cells),
            "rows_kept": len(rows),
            "default": {s: _share(labels) for s, labels in placed["default"].items()},
            "folds": {name: _share(placed[name]["test"]) for name in FOLDS},
        }
        planned = {r["unique_id"]: _Placed(r["label"], r["outlet"], cells[r["unique_id"]].split, cells[r["unique_id"]].fold) for r in rows}
        self._exclusions = exclusions
        logger.info(
            "%d sentences kept (%d rows left out, %d duplicates merged)",
            len(rows), len(exclusions) - counts["duplicates_merged"], counts["duplicates_merged"],
        )
        return BuildPlan(planned, asdict(split_report), exclusions, dict(Counter(e["reason"] for e in exclusions)), self._details)

    def examples(self) -> Iterator[tuple[CellKey, dict]]:
        """Cell by cell (in ``unique_id`` order within each): the sentences fit in memory, and a cell's
        rows arriving together fill whole row groups instead of a sliver of each cell per batch."""
        def cell(r: dict) -> CellKey:
            c = self._cells[r["unique_id"]]
            return c.split, c.fold

        for r in sorted(self._rows, key=cell):
            yield cell(r), {name: r[name] for name in self.features}

    def rationale_author(self, example: dict) -> str | None:
        """Sentences carry no rationale."""
        return None

    def card(self, repo: Path, infos: dict[str, DatasetInfo], names: CardNames, changelog: str,
             rationales: dict | None = None) -> str:
        known = DATASETS.get(self._details.get("layout") or "")
        card_data = DatasetCardData(license=known.license if known else "unknown")
        if known:
            card_data.source_datasets = [known.hub_id]
        card_metadata(card_data, self.views, infos, list(self.features))
        source = self.name
        labels = Counter(r["label"] for r in self._rows)
        body = _card_body(source, self._details, {name: labels[i] for i, name in enumerate(LABEL_NAMES)}, self._exclusions,
                          names.load_name, version=f"v{names.version}" if names.repo_id else None, thin=self._thin())
        return str(DatasetCard(f"---\n{card_data.to_yaml()}\n---\n\n{body}"))

    def _thin(self) -> dict[str, str]:
        """``config/split`` -> why it means little (:func:`vilbias.corpus.splits.split_size_note`)."""
        labels = {r["unique_id"]: r["label"] for r in self._rows}
        out = {}
        for name, view in self.views.items():
            for split, cells in view.splits.items():
                members = [uid for uid, c in self._cells.items() if (c.split, c.fold) in cells]
                note = split_size_note(len(members), sum(labels[uid] == BIASED for uid in members))
                if note:
                    out[f"{name}/{split}"] = note
        return out

    def close(self) -> None:
        """Nothing to release: the sentences are read in :meth:`plan`."""


def article_groups(rows: list[dict]) -> dict[str, str]:
    """``{unique_id: group}``: a sentence's article (its ``news_link``) and its normalised text are
    its keys, so every sentence of an article is one group, and articles repeating a sentence join
    (:func:`~vilbias.corpus.splits.group_keys`). A source without links groups identical texts."""
    keys = {}
    for r in rows:
        link = (r.get("news_link") or "").strip()
        text = "text:" + hashlib.sha1(normalised_text(r["text"]).encode()).hexdigest()
        keys[r["unique_id"]] = [text] + ([f"link:{link}"] if link else [])
    return group_keys(keys)


def _assign(rows: list[dict], groups: Mapping[str, str], pinned: Mapping[str, Cell] | None = None):
    """Cells by the corpus's one split policy (:func:`~vilbias.corpus.splits.assign_splits`), each
    group as one story: groups are visited in the order of a hash of their name (each group's rows
    together, no outlet's URLs in a block) and a source's own splits bound where its rows go."""
    items = [
        SplitItem(
            unique_id=r["unique_id"],
            label=r["label"],
            order=hashlib.sha1(groups[r["unique_id"]].encode()).hexdigest(),
            story_keys=(groups[r["unique_id"]],),
            allowed_splits=OFFICIAL_SPLITS.get(r.get("source_split") or "", ()),
        )
        for r in rows
    ]
    return assign_splits(items, pinned=dict(pinned or {}))


def sentence_splits(rows: list[dict]) -> dict[str, dict[str, list[str]]]:
    """``{config: {split: [unique_id, ...]}}`` of a fresh sentence corpus of ``rows`` (as
    :func:`read_sentences` gives them), computed as ``vilbias build --sentences`` computes them:
    ``default`` (train/validation/test) and ``fold_0`` … ``fold_4``, whose test split is the fold
    and whose validation split (early stopping, calibration) is the ``validation`` split's rows
    outside the fold. A built corpus's own splits are :func:`corpus_splits`."""
    cells, _ = _assign(rows, article_groups(rows))
    return splits_of_cells(cells)


def splits_of_cells(cells: Mapping[str, Cell]) -> dict[str, dict[str, list[str]]]:
    """The configs' membership of a corpus whose rows sit in ``cells`` (see :func:`sentence_splits`)."""
    uids = sorted(cells)
    out = {"default": {s: [u for u in uids if cells[u].split == s] for s in SPLITS}}
    for k in range(N_FOLDS):
        out[FOLDS[k]] = {"train": [u for u in uids if cells[u].fold != k and cells[u].split != "validation"],
                         "validation": [u for u in uids if cells[u].fold != k and cells[u].split == "validation"],
                         "test": [u for u in uids if cells[u].fold == k]}
    return out


def corpus_splits(corpus: str | Path) -> dict[str, dict[str, list[str]]]:
    """The splits of a built sentence corpus (a folder), read from where its rows are stored
    (:func:`vilbias.corpus.release.read_cells`), never drawn again: what training, calibration and
    ``vilbias evaluate`` all use."""
    return splits_of_cells(read_cells(corpus))


def _sha256(source: str | Path) -> str | None:
    path = Path(str(source))
    if not path.is_file():
        return None
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _placement(rows: list[dict], cells: dict) -> dict[str, dict[str, list[int]]]:
    """config -> split -> the labels of its rows."""
    placed: dict[str, dict[str, list[int]]] = {"default": {s: [] for s in SPLITS}}
    placed.update({name: {"train": [], "test": []} for name in FOLDS})
    for r in rows:
        cell = cells[r["unique_id"]]
        placed["default"][cell.split].append(r["label"])
        for k in range(N_FOLDS):
            placed[FOLDS[k]]["test" if cell.fold == k else "train"].append(r["label"])
    return placed


def _share(labels: list[int]) -> dict:
    n = len(labels)
    return {"rows": n, "biased_share": round(sum(labels) / n, 4) if n else None}


def _card_body(source: str, report: dict, label_counts: dict[str, int], exclusions: list[dict], load_name: str,
               version: str | None = None, thin: dict[str, str] | None = None) -> str:
    known = DATASETS.get(report.get("layout") or "")
    lines = [
        "# Sentence-level media bias corpus",
        "",
        f"Built by `vilbias build --sentences {source}`"
        + (f" (sha256 `{report['source_sha256'][:12]}`)" if report.get("source_sha256") else "")
        + (f" from {known.name}." if known else " from labelled sentences of one's own (not a dataset vilbias recognises)."),
        "Text only: one sentence per row with its label (and the source's biased words where it has them); no images, "
        "no rationales, so no `sft` config. Labels are the source's own annotation, as published.",
        "",
    ]
    # the rows read, each accounted for: kept, or left out / merged for a stated reason
    by_reason: dict[str, list[int]] = {}
    for e in exclusions:
        by_reason.setdefault(e["reason"], []).append(e["line"])
    parts = [f"{len(at)} {REASON_TEXT[reason]}" for reason, at in by_reason.items()]
    lines.append(f"{report['rows_read']:,} rows read" + (f" − {' − '.join(parts)}" if parts else "")
                 + f" = **{report['rows_kept']:,} sentences** ({label_counts[BIASED_NAME]:,} {ANSWER_LABELS[BIASED]}, "
                 f"{label_counts[NOT_BIASED_NAME]:,} {ANSWER_LABELS[1 - BIASED]}).")
    lines.append("")
    for reason, at in by_reason.items():
        lines.append(f"- {REASON_TEXT[reason]}: line{'s' if len(at) != 1 else ''} {', '.join(map(str, at))}.")
    lines += ["", "## Splits", ""]
    if report.get("splits_from") == "source":
        lines.append(f"The test split is the source's own ({', '.join(report['official_splits'])} as published"
                     + (f" in `{known.hub_id}`" if known else "") + "): results on it compare with results reported on "
                     "that split. Validation is drawn from the source's train rows by vilbias's policy.")
    else:
        lines.append("The source ships no splits of its own: train/validation/test (80/10/10) and the five folds follow "
                     "vilbias's policy (label-stratified, deterministic from the data, a row's cell never moves once published).")
    lines.append(f"Whole articles stay together: the {report['articles']:,} groups (sentences sharing an article link, and "
                 "articles sharing a sentence) each sit in one split and one fold, as `vilbias train sentence` and "
                 "`vilbias evaluate` read them.")
    straddle = report.get("articles_straddling") or {}
    if straddle.get("splits") or straddle.get("folds"):
        lines.append(f"**{straddle['splits']} articles straddle two splits and {straddle['folds']} two folds**: rows keep the "
                     "cells of the earlier build they first appeared in, and that build split articles. A model trained on "
                     "`train` has read parts of those test articles. To start a clean release, build into a new folder "
                     "(`--output NEW`), where every article is placed whole.")
    lines += ["", "| config | split | rows | biased share |", "|---|---|---|---|"]

    def share(s: dict) -> str:
        return "—" if s["biased_share"] is None else f"{s['biased_share']}"

    for split, s in report["default"].items():
        lines.append(f"| default | {split} | {s['rows']} | {share(s)} |")
    for fold, s in report["folds"].items():
        lines.append(f"| {fold} | test | {s['rows']} | {share(s)} |")
    if thin:
        lines += ["", f"Splits too small to mean anything (empty ones are left out of their config, which loads without them; "
                      f"under {MEANINGFUL_ROWS} rows or one label, figures mean little): "
                      + ", ".join(f"`{name}` ({note})" for name, note in thin.items()) + "."]
    lines += [
        "",
        "BABE's protocol (stratified 5-fold, macro-F1): "
        f"`vilbias train classifier --dataset {load_name} --recipe babe --cv`; the sentence model: "
        f"`vilbias train sentence --dataset {load_name}`.",
        "",
        "## Loading",
        "",
        loading_block(load_name, sft=False, version=version),
        "",
        "## License",
        "",
        (known.terms if known else OWN_DATA_TERMS) + " The code that builds the corpus is Apache-2.0.",
        "",
    ]
    if known:
        lines += ["## Citation", "", "```bibtex", known.citation, "```", ""]
    return "\n".join(lines)
