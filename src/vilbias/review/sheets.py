"""Review sheets: export one per reviewer, import their verdicts back.

``export_sheets`` writes, per reviewer, ``sheet_<reviewer>.csv`` (fill in ``verdict``,
``corrected_label``, ``corrected_rationale``, ``comment``) and ``sheet_<reviewer>.html`` (a self-contained offline page:
images inline as data URLs, no external CSS or JS) showing each item's image, text, votes,
labels and rationale. An overlap set of items goes to every reviewer, so their agreement can be
measured; the rest is dealt out round-robin. Assignment is deterministic (by a hash of the item
id), so re-exporting gives each reviewer the same items. Within a sheet, items whose rationale
fails :func:`vilbias.rationale.check_rationale` come first, their problems in the
``rationale_problems`` column and on the page, so a reviewer's time goes where the annotators were
wrong.

``import_verdicts`` validates every row of every file first and imports nothing if any row is
wrong, naming each bad row; otherwise it rewrites ``reviews/verdicts.jsonl`` atomically with the
new verdicts appended (see :mod:`vilbias.review.verdicts`). A row with an empty verdict (and no
corrected label or comment) is an item not reviewed yet and is skipped. A corrected rationale is
checked the same way: its problems are logged as warnings and counted, never refused.

The verdict concerns the ``multimodal_label`` (the task label) and its rationale. ``Incorrect``
needs a corrected label different from it; an item without a majority (flagged) needs a corrected
label whatever the verdict, since that label is what settles it. ``corrected_rationale`` replaces
the rationale in the dataset (give one with Needs Improvement, and with a label you correct or
settle: without it such a row's rationale is empty and flagged); with ``Acceptable`` on a decided
item it is refused, since an accepted rationale needs no correction.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import html
import json
import logging
import mimetypes
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vilbias.annotate.store import AnnotationStore
from vilbias.annotate.voting import Vote, VoteResult, hierarchical_vote
from vilbias.rationale import Problem, check_rationale, codes, describe
from vilbias.review.verdicts import VERDICTS, VERDICTS_FILE, load_verdicts
from vilbias.task import LABEL_NAMES, label_name, read_label
from vilbias.workdir import (
    ANNOTATIONS,
    REVIEWS,
    Article,
    atomic_write,
    read_articles,
    read_jsonl,
    utcnow,
)

logger = logging.getLogger(__name__)

SHEET_COLUMNS = [
    "unique_id", "reviewer", "outlet", "headline", "url", "text_label", "multimodal_label", "flagged",
    "agreement", "techniques", "rationale", "rationale_problems", "votes", "verdict", "corrected_label", "corrected_rationale", "comment",
]
_BALLOT_MARK = {name: name[0].upper() for name in LABEL_NAMES}
"""A ballot in the sheet: B(iased), N(ot biased); an abstention is ``-``."""


@dataclass
class ItemVotes:
    """An item's automated result under both prompts, with its raw votes."""

    text: VoteResult
    multimodal: VoteResult
    text_votes: list[Vote]
    multimodal_votes: list[Vote]


def automated_results(workdir: str | os.PathLike) -> dict[str, ItemVotes]:
    """``{item_id: ItemVotes}`` for every item the active annotation configuration voted on."""
    path = Path(workdir) / ANNOTATIONS
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: run `vilbias annotate --workdir {workdir}` first")
    out = {}
    with AnnotationStore(path) as store:
        active = store.active()
        order = {p: [a.name for a in cfg["annotators"]] for p, cfg in active.items()}
        for item_id, by_prompt in store.iter_votes():
            tv, mv = by_prompt.get("text", []), by_prompt.get("multimodal", [])
            if not tv and not mv:
                continue
            out[item_id] = ItemVotes(
                hierarchical_vote(tv, order.get("text")), hierarchical_vote(mv, order.get("multimodal")), tv, mv
            )
    return out


def _rank(item_id: str) -> str:
    return hashlib.sha256(item_id.encode("utf-8")).hexdigest()


def assign(item_ids: list[str], reviewers: list[str], overlap: int) -> dict[str, list[str]]:
    """Deterministic assignment: the ``overlap`` items first in hash order go to every reviewer,
    the others round-robin. Returns ``{reviewer: [item_id, ...]}``."""
    ordered = sorted(item_ids, key=_rank)
    shared, rest = ordered[:overlap], ordered[overlap:]
    sheets = {r: list(shared) for r in reviewers}
    for i, item_id in enumerate(rest):
        sheets[reviewers[i % len(reviewers)]].append(item_id)
    return sheets


@dataclass
class ExportConfig:
    workdir: Path = field(metadata={"help": "The annotated workdir."})
    output: Path = field(metadata={"help": "Folder for the sheets (CSV + HTML per reviewer).", "deprecated": ["--out"]})
    reviewers: int = field(default=1, metadata={"help": "Number of reviewers, one sheet each."})
    reviewer_names: list[str] = field(default_factory=list, metadata={"help": "Names for the reviewers (default reviewer_1 ...)."})
    overlap: int = field(default=20, metadata={"help": "Items every reviewer gets, for inter-reviewer agreement."})
    only_unreviewed: bool = field(default=False, metadata={"help": "Leave out items that already have a verdict."})
    max_text_chars: int = field(default=4000, metadata={"help": "Article text shown in the HTML page beyond this is cut."})


def _label_text(label: str | None) -> str:
    return label or ""


def _votes_text(votes: list[Vote]) -> str:
    by: dict[str, list[str]] = {}
    for v in sorted(votes, key=lambda v: (v.annotator, v.sample)):
        by.setdefault(v.annotator, []).append(_BALLOT_MARK.get(v.label or "", "-"))
    return " | ".join(f"{a}: {''.join(s)}" for a, s in by.items())


def export_sheets(config: ExportConfig) -> dict[str, Any]:
    """Write one CSV and one HTML sheet per reviewer; return ``{reviewer: {"items", "csv", "html"}}``."""
    if config.reviewers < 1:
        raise ValueError("--reviewers must be at least 1")
    if config.overlap < 0:
        raise ValueError("--overlap cannot be negative")
    names = list(config.reviewer_names) or [f"reviewer_{i + 1}" for i in range(config.reviewers)]
    if config.reviewer_names and config.reviewers not in (1, len(names)):
        raise ValueError(f"--reviewer-names gives {len(names)} names for --reviewers {config.reviewers}")
    bad = [n for n in names if not re.fullmatch(r"[A-Za-z0-9_.-]+", n)]
    if bad or len(set(names)) != len(names):
        raise ValueError(f"reviewer names must be unique and use letters, digits, _ . - only: {names}")
    results = automated_results(config.workdir)
    articles = {a.unique_id: a for a in read_articles(config.workdir) if a.unique_id in results}
    reviewed = set(load_verdicts(config.workdir)) if config.only_unreviewed else set()
    item_ids = [i for i in articles if i not in reviewed]
    if not item_ids:
        raise ValueError("no annotated items to review (run `vilbias annotate` first, or drop --only-unreviewed)")
    sheets = assign(item_ids, names, min(config.overlap, len(item_ids)))
    out = Path(config.output)
    out.mkdir(parents=True, exist_ok=True)
    written = {}
    problems = {i: rationale_problems(articles[i], results[i]) for i in item_ids}
    for reviewer, ids in sheets.items():
        ids = sorted(ids, key=lambda i: not problems[i])  # failing rationales first, otherwise in assignment order
        rows = [_row(articles[i], results[i], reviewer, problems[i]) for i in ids]
        csv_path = out / f"sheet_{reviewer}.csv"
        html_path = out / f"sheet_{reviewer}.html"
        atomic_write(csv_path, _csv_text(rows))
        atomic_write(html_path, _html(reviewer, rows, [articles[i] for i in ids], [results[i] for i in ids],
                                      [problems[i] for i in ids], config))
        written[reviewer] = {"items": len(ids), "csv": str(csv_path), "html": str(html_path),
                             "failing_rationales": sum(bool(problems[i]) for i in ids)}
    logger.info("wrote %d sheets to %s (%d items, %d shared, %d with a failing rationale first)", len(sheets), out,
                len(item_ids), min(config.overlap, len(item_ids)), sum(bool(p) for p in problems.values()))
    return written


def rationale_problems(article: Article, result: ItemVotes) -> list[Problem]:
    """What the rationale check finds in an item's automated rationale (none for an item with no
    majority label: there is no label for it to argue)."""
    mm = result.multimodal
    if mm.label is None:
        return []
    return check_rationale(mm.rationale, article_text=article.article_text, headline=article.headline,
                           caption=article.image_caption, label=mm.label, techniques=mm.techniques)


def _row(article: Article, result: ItemVotes, reviewer: str, problems: list[Problem]) -> dict[str, Any]:
    mm = result.multimodal
    return {
        "unique_id": article.unique_id,
        "reviewer": reviewer,
        "outlet": article.outlet,
        "headline": article.headline,
        "url": article.url,
        "text_label": _label_text(result.text.label),
        "multimodal_label": _label_text(mm.label),
        "flagged": mm.reason or "",
        "agreement": f"{mm.agreement:.2f}" if mm.agreement is not None else "",
        "techniques": ", ".join(mm.techniques),
        "rationale": mm.rationale,
        "rationale_problems": describe(problems),
        "votes": _votes_text(result.multimodal_votes),
        "verdict": "",
        "corrected_label": "",
        "corrected_rationale": "",
        "comment": "",
    }


def _csv_text(rows: list[dict[str, Any]]) -> str:
    import io

    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=SHEET_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


_CSS = """
body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
article{border:1px solid #ccc;border-radius:8px;padding:1rem;margin:1.5rem 0}
img{max-width:100%;max-height:24rem;display:block;margin:.5rem 0}
.label{font-weight:bold}.flagged,.problems{color:#b00}.meta{color:#666;font-size:.9em}
table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:.2rem .5rem;text-align:left}
pre{white-space:pre-wrap;font-family:inherit}
"""


def _data_url(path: Path) -> str:
    mime = mimetypes.guess_type(path.name)[0] or "image/jpeg"
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


def _html(reviewer: str, rows: list[dict[str, Any]], articles: list[Article], results: list[ItemVotes],
          problems: list[list[Problem]], config: ExportConfig) -> str:
    e = html.escape
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>Review sheet: {e(reviewer)}</title><style>{_CSS}</style></head><body>",
        f"<h1>Review sheet: {e(reviewer)}</h1>",
        "<p>For each item, fill in <code>verdict</code> (Acceptable / Needs Improvement / Incorrect), "
        "<code>corrected_label</code> (biased / not biased; required for Incorrect and for flagged items), "
        "<code>corrected_rationale</code> (the rationale the dataset should carry: give one with Needs Improvement "
        "and with a label you correct or settle) "
        f"and <code>comment</code> in <code>sheet_{e(reviewer)}.csv</code>, then run "
        "<code>vilbias review import --workdir DIR sheet.csv</code>.</p>",
        f"<p>{sum(map(bool, problems))} of {len(rows)} items come first because their rationale fails the rationale "
        "check (a quotation not in the article, an argument for the other label, a technique marked absent, an empty, "
        "cut-off or repeating text); their problems are listed under the rationale.</p>",
    ]
    for n, (row, article, result, found) in enumerate(zip(rows, articles, results, problems, strict=True), 1):
        image = Path(config.workdir) / article.image_path
        img = f"<img src='{_data_url(image)}' alt='{e(article.image_caption)}'>" if image.is_file() else "<p>(image missing)</p>"
        text = article.article_text
        if len(text) > config.max_text_chars:
            text = text[: config.max_text_chars] + " [...]"
        mm = result.multimodal
        label = (
            f"<span class='label'>{e(mm.label)}</span>" if mm.label else f"<span class='label flagged'>no majority ({e(mm.reason or '')})</span>"
        )
        vote_rows = "".join(
            f"<tr><td>{e(prompt)}</td><td>{e(_votes_text(votes))}</td></tr>"
            for prompt, votes in (("text", result.text_votes), ("multimodal", result.multimodal_votes))
        )
        parts.append(
            f"<article id='{e(article.unique_id)}'><h2>{n}. {e(article.headline)}</h2>"
            f"<p class='meta'>{e(article.outlet)} · <code>{e(article.unique_id)}</code> · {e(article.url)}</p>"
            f"{img}<p class='meta'>Caption: {e(article.image_caption or '(none)')}</p>"
            f"<p>Multimodal label: {label} · text label: {e(result.text.label or 'no majority')}"
            f" · agreement: {e(row['agreement'] or '-')}</p>"
            f"<p>Rationale: {e(mm.rationale or '(none)')}</p>"
            + (f"<ul class='problems'>{''.join(f'<li><code>{e(p.code)}</code> {e(p.passage)}</li>' for p in found)}</ul>"
               if found else "")
            + f"<p>Techniques: {e(row['techniques'] or '(none)')}</p>"
            f"<table><tr><th>prompt</th><th>votes (B biased, N not biased, - abstained)</th></tr>{vote_rows}</table>"
            f"<details><summary>Article text</summary><pre>{e(text)}</pre></details></article>"
        )
    parts.append("</body></html>\n")
    return "".join(parts)


@dataclass
class ImportConfig:
    workdir: Path = field(metadata={"help": "The annotated workdir."})
    files: list[Path] = field(default_factory=list, metadata={"positional": True, "help": "Filled-in sheet CSV files."})


def _norm_verdict(value: str) -> str | None:
    v = re.sub(r"[\s-]+", "_", value.strip().lower())
    return v if v in VERDICTS else None


def import_verdicts(config: ImportConfig) -> dict[str, Any]:
    """Validate every row of ``config.files``; import all of them or none.

    Raises:
        ValueError: naming every bad row (``file:line: problem``); nothing is written.
    """
    if not config.files:
        raise ValueError("give at least one sheet file to import")
    results = automated_results(config.workdir)
    automated = {i: r.multimodal.label for i, r in results.items()}
    articles = {a.unique_id: a for a in read_articles(config.workdir)}
    known = set(articles)
    errors: list[str] = []
    records: list[dict[str, Any]] = []
    seen: dict[tuple[str, str], str] = {}
    skipped = 0
    now = utcnow()
    for path in map(Path, config.files):
        if not path.is_file():
            errors.append(f"{path}: file not found")
            continue
        with path.open(newline="", encoding="utf-8-sig") as f:
            reader = csv.DictReader(f)
            missing = [c for c in ("unique_id", "reviewer", "verdict", "corrected_label", "comment") if c not in (reader.fieldnames or [])]
            if missing:
                errors.append(f"{path}: missing columns {missing}")
                continue
            for row in reader:
                where = f"{path}:{reader.line_num}"
                record, problems = _check_row(row, known, automated)
                if record is None and not problems:
                    skipped += 1
                    continue
                key = (record or {}).get("unique_id", ""), (record or {}).get("reviewer", "")
                if record is not None and key in seen:
                    problems.append(f"reviewer {key[1]!r} already judged this item at {seen[key]}")
                if record is not None:
                    seen.setdefault(key, where)
                if problems:
                    errors.extend(f"{where}: {p}" for p in problems)
                    continue
                records.append({**record, "sheet": path.name, "imported_at": now})
    if errors:
        raise ValueError(f"nothing imported; {len(errors)} problem(s):\n" + "\n".join(errors))
    failing = _check_corrected_rationales(records, articles, results)
    target = Path(config.workdir) / REVIEWS / VERDICTS_FILE
    existing = [json.dumps(r, ensure_ascii=False) for r in read_jsonl(target)]
    lines = existing + [json.dumps(r, ensure_ascii=False) for r in records]
    atomic_write(target, "".join(line + "\n" for line in lines))
    counts = Counter(r["verdict"] for r in records)
    logger.info("imported %d verdicts (%d rows not reviewed yet)", len(records), skipped)
    return {"imported": len(records), "skipped": skipped, "verdicts": dict(counts), "file": str(target),
            "corrected_rationales": sum(bool(r["corrected_rationale"]) for r in records),
            "failing_corrected_rationales": len(failing),
            "rationale_problems": dict(Counter(c for found in failing.values() for c in codes(found)))}


def _check_corrected_rationales(records: list[dict[str, Any]], articles: dict[str, Article],
                                results: dict[str, ItemVotes]) -> dict[tuple[str, str], list[Problem]]:
    """Check each corrected rationale against its article and the label it is written for (the
    reviewer's corrected label, else the automated one); warn about each one that fails. The
    annotators' techniques are compared only when the label is theirs."""
    failing = {}
    for r in records:
        result = results.get(r["unique_id"])
        automated = result.multimodal.label if result else None
        label = r["corrected_label"] or automated
        if not r["corrected_rationale"] or label is None:
            continue
        article = articles[r["unique_id"]]
        found = check_rationale(r["corrected_rationale"], article_text=article.article_text, headline=article.headline,
                                caption=article.image_caption, label=label,
                                techniques=result.multimodal.techniques if result and label == automated else None)
        if found:
            failing[(r["unique_id"], r["reviewer"])] = found
            logger.warning("%s: %s's corrected rationale for %s fails the rationale check (imported anyway): %s",
                           r["sheet"], r["reviewer"], r["unique_id"], describe(found))
    return failing


def _check_row(row: dict[str, str], known: set[str], automated: dict[str, str | None]) -> tuple[dict[str, Any] | None, list[str]]:
    """One sheet row -> ``(record, problems)``; ``(None, [])`` for a row not reviewed yet."""
    item = (row.get("unique_id") or "").strip()
    reviewer = (row.get("reviewer") or "").strip()
    verdict_raw = (row.get("verdict") or "").strip()
    corrected_raw = (row.get("corrected_label") or "").strip()
    rationale = (row.get("corrected_rationale") or "").strip()  # absent from sheets exported before it existed
    comment = (row.get("comment") or "").strip()
    if not verdict_raw:
        if corrected_raw or comment or rationale:
            return None, ["corrected_label, corrected_rationale or comment given without a verdict"]
        return None, []
    problems = []
    if item not in known:
        problems.append(f"unknown item {item!r}")
    if not reviewer:
        problems.append("reviewer is empty")
    verdict = _norm_verdict(verdict_raw)
    if verdict is None:
        problems.append(f"bad verdict {verdict_raw!r} (use Acceptable, Needs Improvement or Incorrect)")
    corrected_id = read_label(corrected_raw) if corrected_raw else None
    corrected = None if corrected_id is None else label_name(corrected_id)
    if corrected_raw and corrected is None:
        problems.append(f"bad corrected_label {corrected_raw!r} (use biased or not biased)")
    auto = automated.get(item)
    if verdict == "incorrect" and corrected is None and not corrected_raw:
        problems.append("verdict Incorrect needs a corrected_label")
    elif verdict == "incorrect" and corrected is not None and corrected == auto:
        problems.append(f"verdict Incorrect but corrected_label equals the automated label {auto!r}")
    elif item in known and auto is None and corrected is None and not corrected_raw:
        problems.append("the item has no automated label (no majority): give a corrected_label")
    if verdict == "acceptable" and rationale and auto is not None and corrected in (None, auto):
        problems.append("corrected_rationale with verdict Acceptable: use Needs Improvement to replace an accepted label's rationale")
    record = {
        "unique_id": item, "reviewer": reviewer, "verdict": verdict, "corrected_label": corrected,
        "corrected_rationale": rationale, "comment": comment,
    }
    return record, problems
