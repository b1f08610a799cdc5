"""Sentence corpora in BABE's published format -> a text-only dataset repo.

    vilbias build --sentences final_labels_SG2.csv --output ./babe
    vilbias train classifier --dataset ./babe --cv

Input: the CSV that BABE (Spinde et al., 2021) publishes — semicolon-separated, UTF-8 with a
byte-order mark, header ``text;news_link;outlet;topic;type;label_bias;label_opinion;biased_words``;
``label_bias`` is ``Biased``, ``Non-biased`` or ``No agreement``; ``biased_words`` is a Python
list literal (``['word', 'other']`` or ``[]``).

Output: the same layout as the main corpus (:mod:`vilbias.corpus.writer`): every row stored once
in ``data/{split}-fold{k}-…``, configs ``default`` (train/validation/test, 80/10/10) and
``fold_0`` ... ``fold_4`` (train/test) reading those files, a README.md whose YAML carries
``configs:`` and ``dataset_info:``. Columns: ``unique_id``, ``text``,
``news_link``, ``outlet``, ``topic``, ``type``, ``label`` (ClassLabel
``["not_biased", "biased"]``), ``label_opinion``, ``biased_words``.

Rules: ``No agreement`` rows are excluded and counted (BABE's own protocol drops them); an
exact repeat of a row (same text, link and label) is kept once and counted; the same sentence
and link with different labels is an error, as is any other label value or a malformed
``biased_words``. Splits and folds come from :func:`vilbias.corpus.splits.assign_splits`:
stratified by label, deterministic from the data (rows ordered by ``unique_id``), and the same
sentence text (after case and space normalisation) never straddles two cells.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import logging
import re
import shutil
from collections import Counter
from pathlib import Path

from vilbias.corpus.splits import SplitItem, assign_splits
from vilbias.corpus.writer import DATA_DIR, RepoWriter, card_metadata, corpus_views
from vilbias.task import FOLDS, LABEL_NAMES, N_FOLDS, SPLITS

logger = logging.getLogger(__name__)

BABE_COLUMNS = ("text", "news_link", "outlet", "topic", "type", "label_bias", "label_opinion", "biased_words")
LABEL_MAP = {"Biased": 1, "Non-biased": 0}
NO_AGREEMENT = "No agreement"


def _features():
    from datasets import ClassLabel, Features, List, Value

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


def _parse_words(raw: str, line: int) -> list[str]:
    raw = (raw or "").strip()
    if not raw:
        return []
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError) as e:
        raise ValueError(f"line {line}: biased_words is not a list literal: {raw[:80]!r}") from e
    if not isinstance(value, (list, tuple)) or not all(isinstance(w, str) for w in value):
        raise ValueError(f"line {line}: biased_words must be a list of strings, got {raw[:80]!r}")
    return list(value)


def _norm_text(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower())


def _uid(link: str, text: str) -> str:
    return hashlib.sha256(f"{link}\n{text}".encode()).hexdigest()[:20]


def read_sentences(csv_path: str | Path) -> tuple[list[dict], dict, list[dict]]:
    """Parse a BABE-format CSV into rows (label as class id), counts, and the dropped rows
    (``{"unique_id", "line", "reason"}``, reason ``no_agreement`` or ``duplicate``).

    Raises:
        ValueError: a missing column, an unknown ``label_bias``, a malformed ``biased_words``,
            an empty text, or one sentence given two different labels.
    """
    rows: dict[str, dict] = {}
    counts = Counter()
    exclusions: list[dict] = []
    with open(csv_path, encoding="utf-8-sig", newline="") as f:
        reader = csv.DictReader(f, delimiter=";")
        missing = [c for c in BABE_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(
                f"{csv_path}: missing column(s) {missing}; expected BABE's semicolon-separated header "
                f"{';'.join(BABE_COLUMNS)} (found {reader.fieldnames})"
            )
        for line, rec in enumerate(reader, start=2):
            counts["rows_read"] += 1
            label_raw = (rec["label_bias"] or "").strip()
            if label_raw == NO_AGREEMENT:
                counts["excluded_no_agreement"] += 1
                uid = _uid((rec["news_link"] or "").strip(), (rec["text"] or "").strip())
                exclusions.append({"unique_id": uid, "line": line, "reason": "no_agreement"})
                continue
            if label_raw not in LABEL_MAP:
                raise ValueError(
                    f"line {line}: label_bias {label_raw!r} is not one of {[*LABEL_MAP, NO_AGREEMENT]}"
                )
            text = (rec["text"] or "").strip()
            if not text:
                raise ValueError(f"line {line}: empty text")
            link = (rec["news_link"] or "").strip()
            uid = _uid(link, text)
            row = {
                "unique_id": uid,
                "text": text,
                "news_link": link,
                "outlet": (rec["outlet"] or "").strip(),
                "topic": (rec["topic"] or "").strip(),
                "type": (rec["type"] or "").strip(),
                "label": LABEL_MAP[label_raw],
                "label_opinion": (rec["label_opinion"] or "").strip(),
                "biased_words": _parse_words(rec["biased_words"], line),
            }
            if uid in rows:
                if rows[uid]["label"] != row["label"]:
                    raise ValueError(f"line {line}: this sentence and link appear earlier with a different label")
                counts["duplicates_dropped"] += 1
                exclusions.append({"unique_id": uid, "line": line, "reason": "duplicate"})
                continue
            rows[uid] = row
    counts = {k: counts[k] for k in ("rows_read", "excluded_no_agreement", "duplicates_dropped")}
    return list(rows.values()), counts, exclusions


def write_repo(output_dir: Path, rows: list[dict], cells: dict, features, body: str) -> None:
    """Write the sentences, each once, into their cells' shards with the shared
    :class:`~vilbias.corpus.writer.RepoWriter`; ``default`` and ``fold_K`` read those files."""
    from huggingface_hub import DatasetCard, DatasetCardData

    views = corpus_views(features)
    output_dir.mkdir(parents=True, exist_ok=True)
    # Old shards of a previous build would otherwise be picked up by the split globs.
    shutil.rmtree(output_dir / DATA_DIR, ignore_errors=True)
    for name in FOLDS:
        shutil.rmtree(output_dir / name, ignore_errors=True)  # the earlier layout's per-config copies
    writer = RepoWriter(output_dir, features, views)
    by_cell: dict[tuple[str, int], list[dict]] = {}
    for r in rows:
        cell = cells[r["unique_id"]]
        by_cell.setdefault((cell.split, cell.fold), []).append({name: r[name] for name in features})
    for cell, examples in by_cell.items():
        writer.add(cell, writer.to_table(examples))
    infos = writer.close()
    card_data = DatasetCardData()
    card_metadata(card_data, views, infos, list(features))
    DatasetCard(f"---\n{card_data.to_yaml()}\n---\n\n{body}").save(output_dir / "README.md")


def build_sentences(csv_path: str | Path, output_dir: str | Path) -> dict:
    """Build a text-only sentence corpus repo from a BABE-format CSV.

    Args:
        csv_path: the labelled sentences (see the module docstring for the format).
        output_dir: where the repo folder is written (created; its ``data/`` and ``fold_K/``
            folders are replaced).

    Returns:
        A report: rows read, kept, excluded as ``No agreement``, duplicates dropped, label
        counts, and per split/fold the row count and biased share.
    """
    import json
    import time

    started = time.monotonic()
    csv_path, output_dir = Path(csv_path), Path(output_dir)
    rows, counts, exclusions = read_sentences(csv_path)
    if not rows:
        raise ValueError(f"{csv_path}: no labelled sentences left after excluding {NO_AGREEMENT!r} rows")
    items = [
        SplitItem(
            unique_id=r["unique_id"],
            label=r["label"],
            order=r["unique_id"],
            story_keys=("text:" + hashlib.sha1(_norm_text(r["text"]).encode()).hexdigest(),),
        )
        for r in rows
    ]
    cells, split_report = assign_splits(items)
    rows.sort(key=lambda r: r["unique_id"])
    features = _features()
    placed: dict[str, dict[str, list[int]]] = {"default": {s: [] for s in SPLITS}}
    placed.update({name: {"train": [], "test": []} for name in FOLDS})
    for r in rows:
        cell = cells[r["unique_id"]]
        placed["default"][cell.split].append(r["label"])
        for k in range(N_FOLDS):
            placed[FOLDS[k]]["test" if cell.fold == k else "train"].append(r["label"])

    def share(labels: list[int]) -> dict:
        n = len(labels)
        return {"rows": n, "biased_share": round(sum(labels) / n, 4) if n else None}

    n = len(rows)
    report = {
        # The keys `vilbias build` prints (vilbias.corpus.format_report) ...
        "rows": n,
        "source": str(csv_path),
        "configs": {name: {split: len(labels) for split, labels in splits.items()} for name, splits in placed.items()},
        "corpus_biased_share": round(sum(r["label"] for r in rows) / n, 4),
        "label_share": {
            f"{name}/{split}": (sum(labels) / len(labels) if labels else 0.0)
            for name, splits in placed.items()
            for split, labels in splits.items()
        },
        "groups": {
            "groups": split_report.groups,
            "multi_row_groups": split_report.multi_row_groups,
            "largest_group": split_report.largest_group,
        },
        "groups_not_kept_whole": split_report.not_kept_whole,
        "exclusions": exclusions,
        "exclusion_counts": dict(Counter(e["reason"] for e in exclusions)),
        # ... and the sentence corpus's own figures.
        **counts,
        "rows_kept": n,
        "label_counts": {name: sum(1 for r in rows if r["label"] == i) for i, name in enumerate(LABEL_NAMES)},
        "default": {s: share(labels) for s, labels in placed["default"].items()},
        "folds": {name: share(placed[name]["test"]) for name in FOLDS},
        "output": str(output_dir),
    }
    body = _card_body(csv_path.name, report)
    write_repo(output_dir, rows, cells, features, body)
    report["seconds"] = round(time.monotonic() - started, 1)
    (output_dir / "build_report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    logger.info("built %d sentences (%d excluded as No agreement) into %s", len(rows), counts["excluded_no_agreement"], output_dir)
    return report


def _card_body(source: str, report: dict) -> str:
    lines = [
        "# Sentence-level media bias corpus",
        "",
        f"Built by `vilbias build --sentences {source}` from labelled sentences in BABE's format.",
        f"{report['rows_kept']} sentences kept ({report['label_counts']['biased']} biased, "
        f"{report['label_counts']['not_biased']} not biased); {report['excluded_no_agreement']} "
        f"`No agreement` rows excluded; {report['duplicates_dropped']} duplicate rows dropped.",
        "",
        "| config | split | rows | biased share |",
        "|---|---|---|---|",
    ]
    for split, s in report["default"].items():
        lines.append(f"| default | {split} | {s['rows']} | {s['biased_share']} |")
    for fold, s in report["folds"].items():
        lines.append(f"| {fold} | test | {s['rows']} | {s['biased_share']} |")
    lines += [
        "",
        "Folds are stratified by label and deterministic from the data. BABE's protocol: "
        "`vilbias train classifier --dataset <this folder> --cv` (stratified 5-fold, macro-F1).",
        "",
    ]
    return "\n".join(lines)
