"""Review sheets: export one per reviewer, import their verdicts back.

``export_sheets`` writes, per reviewer, ``sheet_<reviewer>.csv`` (fill in ``verdict``,
``corrected_label``, ``corrected_rationale``, ``corrected_techniques``, ``comment``) and
``sheet_<reviewer>.html`` (a self-contained offline page: images inline as data URLs, no external
CSS or JS) showing each item's image, text, votes, labels and rationale. An overlap set of items
goes to every reviewer, so their agreement can be measured; the rest is dealt out round-robin.
Assignment is deterministic (by a hash of the item id), so re-exporting gives each reviewer the
same items. Within a sheet, items whose rationale fails :func:`vilbias.rationale.check_rationale`
come first, their problems in the ``rationale_problems`` column and on the page, so a reviewer's
time goes where the annotators were wrong.

What a sheet shows of an item is the vote of the prompt that labels the items
(:func:`vilbias.review.outcome.label_prompt`: the text + image prompt when vision annotators were
asked it, else the text prompt, as with the offline default annotator), the same vote the build
starts from; ``label_source`` names it. A reviewer's verdicts already imported are filled in on
every new sheet.

A re-export never overwrites a sheet a reviewer may have worked on: a ``sheet_<reviewer>.csv``
holding a filled-in cell (unless it already is, byte for byte, the sheet the export would
write), or any file of that name that is not a vilbias review sheet, is left as it is and the new
sheet goes beside it (``sheet_<reviewer>.2.csv`` and ``.html``, the first number free or holding
no filled-in cell). Nothing else in the folder is touched.

``import_verdicts`` reads each sheet as the reviewer's spreadsheet program saved it (Excel,
LibreOffice, Google Sheets in any locale: :mod:`vilbias.review.spreadsheets`) and judges each on
its own: a sheet imports when every row of it is valid; one with a bad row (each named) or that
cannot be read (the cause named) imports nothing, and the others still import. The verdicts are
appended to ``reviews/verdicts.jsonl``, rewritten atomically (see :mod:`vilbias.review.verdicts`). A row with an empty verdict (and no
corrected label, rationale, techniques or comment) is an item not reviewed yet and is skipped; a
row equal to the reviewer's verdict already imported is skipped as unchanged. A corrected
rationale is checked the same way as the annotators': its problems are logged as warnings and
counted, never refused.

The verdict concerns the ``multimodal_label`` (the task label: the label prompt's vote) and its
rationale. ``Incorrect`` needs a corrected label different from it; an item without a majority
(flagged) needs a corrected label whatever the verdict, since that label is what settles it.
``corrected_rationale`` replaces the rationale in the dataset (give one with Needs Improvement,
and with a label you correct or settle: without it such a row's rationale is empty and flagged);
``corrected_techniques`` (technique names or ids, comma-separated, or ``none``) replaces the
techniques (a label you correct or settle keeps none of the annotators'). With ``Acceptable`` on
a decided item both are refused, since what is accepted needs no correction.

Why this module is long: export and import are the two halves of one sheet format (its columns,
its verdict words, its per-item checks); kept together so the two cannot drift apart.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import html
import io
import json
import logging
import mimetypes
import re
from collections import Counter
from pathlib import Path
from typing import Any

from vilbias.annotate.voting import Vote
from vilbias.languages import describe_languages, detect_language
from vilbias.outputs import hold, writing
from vilbias.rationale import Problem, check_rationale, codes, describe
from vilbias.review.config import ExportConfig, ImportConfig
from vilbias.review.outcome import ItemVotes, automated_results, unread_by
from vilbias.review.spreadsheets import UnreadableSheet, read_sheet
from vilbias.review.verdicts import VERDICTS, VERDICTS_FILE, Verdict, load_verdicts
from vilbias.task import ALL_NAMES, LABEL_NAMES, label_name, read_label
from vilbias.workdir import (
    REVIEWS,
    Article,
    atomic_write,
    claim_workdir,
    read_articles,
    read_jsonl,
    utcnow,
)

logger = logging.getLogger(__name__)

__all__ = ["SHEET_COLUMNS", "ExportConfig", "ImportConfig", "ItemVotes", "assign", "automated_results", "export_sheets",
           "import_verdicts", "parse_techniques", "rationale_problems"]

FILL_COLUMNS = ["verdict", "corrected_label", "corrected_rationale", "corrected_techniques", "comment"]
"""The columns a reviewer fills in; the others are read-only context."""
SHEET_COLUMNS = [
    "unique_id", "reviewer", "outlet", "headline", "url", "text_label", "multimodal_label", "label_source", "flagged",
    "agreement", "techniques", "rationale", "rationale_problems", "votes", *FILL_COLUMNS,
]
_BALLOT_MARK = {name: name[0].upper() for name in LABEL_NAMES}
"""A ballot in the sheet: B(iased), N(ot biased); an abstention is ``-``."""
_VERDICT_TEXT = {"acceptable": "Acceptable", "needs_improvement": "Needs Improvement", "incorrect": "Incorrect"}
NO_TECHNIQUES = "none"
"""``corrected_techniques`` for a reviewer who judges no technique present."""
_TECHNIQUE_IDS = {" ".join(k.replace("_", " ").lower().split()): tid for tid, name in ALL_NAMES.items() for k in (tid, name)}
HTML_GENERATOR = "vilbias review export"
"""The page's ``<meta name="generator">``: how a re-export recognises a page it may replace."""


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


def parse_techniques(value: str) -> tuple[list[str] | None, list[str]]:
    """A ``corrected_techniques`` cell -> ``(technique ids, unknown names)``: ids or names
    (``word_choice``, ``Word Choice``), comma- or semicolon-separated, any case; ``none`` for no
    technique (``[]``); an empty cell is not given (None)."""
    value = (value or "").strip()
    if not value:
        return None, []
    if value.lower() == NO_TECHNIQUES:
        return [], []
    ids, unknown = [], []
    for part in re.split(r"[,;]", value):
        key = " ".join(part.replace("_", " ").lower().split())
        if key:
            (ids.append(_TECHNIQUE_IDS[key]) if key in _TECHNIQUE_IDS else unknown.append(part.strip()))
    return list(dict.fromkeys(ids)), unknown


def _techniques_text(techniques: list[str] | tuple[str, ...] | None) -> str:
    if techniques is None:
        return ""
    return ", ".join(techniques) if techniques else NO_TECHNIQUES


def _label_text(label: str | None) -> str:
    return label or ""


def _votes_text(votes: list[Vote], language: str = "") -> str:
    """``annotator: BBN | ...``; an annotator that does not read the item's language (``language``)
    is shown as such, not as an abstention like any other."""
    by: dict[str, list[str]] = {}
    for v in sorted(votes, key=lambda v: (v.annotator, v.sample)):
        by.setdefault(v.annotator, []).append(_BALLOT_MARK.get(v.label or "", "-"))
    unread = unread_by(votes)
    where = describe_languages([language]) if language else "the article's language"
    return " | ".join(f"{a}: " + (f"abstained, does not read {where}" if a in unread else "".join(s)) for a, s in by.items())


def _language(article: Article, result: ItemVotes) -> str:
    """The language of an item some annotator does not read, as ingest recorded it (detected now
    for a workdir written before ingest recorded it, as annotate does); "" when no one abstained."""
    if not (unread_by(result.text_votes) or unread_by(result.multimodal_votes)):
        return ""
    return article.language or detect_language(f"{article.headline}\n\n{article.article_text}")


def _filled(verdict: Verdict | None) -> dict[str, str]:
    """The fill-in cells showing a verdict already imported (empty cells without one)."""
    if verdict is None:
        return dict.fromkeys(FILL_COLUMNS, "")
    return {
        "verdict": _VERDICT_TEXT[verdict.verdict],
        "corrected_label": (verdict.corrected_label or "").replace("_", " "),
        "corrected_rationale": verdict.corrected_rationale,
        "corrected_techniques": _techniques_text(verdict.corrected_techniques),
        "comment": verdict.comment,
    }


@writing()  # the sheets folder is this export's alone until it returns (vilbias.outputs)
def export_sheets(config: ExportConfig) -> dict[str, Any]:
    """Write one CSV and one HTML sheet per reviewer; return ``{reviewer: {"items", "csv", "html",
    "failing_rationales", "prefilled", "kept"}}`` (``prefilled``: rows showing a verdict already
    imported; ``kept``: what was left in place at the sheet's first name, see :func:`kept_text`,
    or None)."""
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
    out = Path(config.output)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--output {out} is a file, not a folder: give a folder for the sheets")
    results = automated_results(config.workdir)
    articles = {a.unique_id: a for a in read_articles(config.workdir) if a.unique_id in results}
    verdicts = load_verdicts(config.workdir)
    mine = {(v.unique_id, v.reviewer): v for vs in verdicts.values() for v in vs}
    reviewed = set(verdicts) if config.only_unreviewed else set()
    item_ids = [i for i in articles if i not in reviewed]
    if not item_ids:
        raise ValueError("no annotated items to review (run `vilbias annotate` first, or drop --only-unreviewed)")
    sheets = assign(item_ids, names, min(config.overlap, len(item_ids)))
    hold(out, "vilbias review export")  # one export into a folder at a time: the sheets to keep are decided below
    written: dict[str, Any] = {}
    taken: set[Path] = set()  # this run's sheets: a reviewer named "bob.2" never gets bob's second sheet
    problems = {i: rationale_problems(articles[i], results[i]) for i in item_ids}
    for reviewer, ids in sheets.items():
        ids = sorted(ids, key=lambda i: not problems[i])  # failing rationales first, otherwise in assignment order
        rows = [_row(articles[i], results[i], reviewer, problems[i], mine.get((i, reviewer))) for i in ids]
        text = _csv_text(rows)
        csv_path, html_path, kept = _sheet_paths(out, reviewer, text, mine, taken)
        taken.add(csv_path)
        atomic_write(csv_path, text)
        atomic_write(html_path, _html(reviewer, csv_path.name, rows, [articles[i] for i in ids], [results[i] for i in ids],
                                      [problems[i] for i in ids], config))
        written[reviewer] = {"items": len(ids), "csv": str(csv_path), "html": str(html_path),
                             "failing_rationales": sum(bool(problems[i]) for i in ids),
                             "prefilled": sum(bool(r["verdict"]) for r in rows), "kept": kept}
    logger.info("wrote %d sheets to %s (%d items, %d shared, %d with a failing rationale first)", len(sheets), out,
                len(item_ids), min(config.overlap, len(item_ids)), sum(bool(p) for p in problems.values()))
    return written


def _sheet_paths(out: Path, reviewer: str, text: str, imported: dict[tuple[str, str], Verdict],
                 taken: set[Path]) -> tuple[Path, Path, dict[str, Any] | None]:
    """Where a reviewer's new sheet goes: ``sheet_<reviewer>.csv`` / ``.html``, unless a file
    there must be kept (see :func:`_keep_reason`); then the first free ``sheet_<reviewer>.<n>``.
    Returns the CSV and HTML paths and what was kept at the first name (None when nothing)."""
    kept = None
    n = 1
    while True:
        stem = f"sheet_{reviewer}" if n == 1 else f"sheet_{reviewer}.{n}"
        csv_path, html_path = out / f"{stem}.csv", out / f"{stem}.html"
        reason = {"path": str(csv_path), "foreign": True} if csv_path in taken else _keep_reason(
            csv_path, html_path, reviewer, text, imported)
        if reason is None:
            return csv_path, html_path, kept
        if kept is None:
            kept = reason
        n += 1


def _keep_reason(csv_path: Path, html_path: Path, reviewer: str, text: str,
                 imported: dict[tuple[str, str], Verdict]) -> dict[str, Any] | None:
    """Why the pair ``csv_path``/``html_path`` may not be written for ``reviewer`` (None: both
    are free, or are review sheets that may be). A sheet CSV holding a filled-in cell is kept
    unless it already is, byte for byte, the new sheet ``text`` (a re-export that changes nothing
    writes no new file); any file that is not a review sheet of this reviewer is kept (it is
    someone else's)."""
    if html_path.exists() and not _is_sheet_page(html_path):
        return {"path": str(html_path), "foreign": True}
    if not csv_path.exists():
        return None
    old = _read_sheet(csv_path)
    if old is None or any((r.get("reviewer") or "").strip() != reviewer for r in old):
        return {"path": str(csv_path), "foreign": True}
    filled = [r for r in old if any((r.get(c) or "").strip() for c in FILL_COLUMNS)]
    if not filled or csv_path.read_bytes() == text.encode("utf-8"):
        return None
    not_imported = 0
    for r in filled:
        record, _ = _check_row(r, set(), {}, {})
        stored = imported.get((r.get("unique_id", ""), r.get("reviewer", "")))
        not_imported += record is None or stored is None or _record(record) != stored.record()
    return {"path": str(csv_path), "foreign": False, "verdicts": len(filled), "not_imported": not_imported}


def kept_text(kept: dict[str, Any]) -> str:
    """A file :func:`export_sheets` left in place, in words."""
    if kept["foreign"]:
        return f"kept {kept['path']}: it is not this reviewer's review sheet"
    return (f"kept {kept['path']}: it holds {kept['verdicts']} filled-in row(s), {kept['not_imported']} not imported yet"
            + (" (run `vilbias review import` on it)" if kept["not_imported"] else ""))


def _read_sheet(path: Path) -> list[dict[str, str]] | None:
    """The rows of a review sheet, or None when the file is not one (no ``unique_id``,
    ``reviewer`` and ``verdict`` columns, or not readable as a sheet: see :func:`read_sheet`)."""
    try:
        return [row for _, row in read_sheet(path, ("unique_id", "reviewer", "verdict")).rows]
    except UnreadableSheet:
        return None


def _is_sheet_page(path: Path) -> bool:
    """Whether ``path`` is a page ``review export`` wrote (its generator tag, or the title of
    pages written before the tag existed)."""
    try:
        head = path.read_text(encoding="utf-8", errors="replace")[:600]
    except OSError:
        return False
    return f"<meta name='generator' content='{HTML_GENERATOR}'>" in head or head.startswith(
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>Review sheet: ")


def rationale_problems(article: Article, result: ItemVotes) -> list[Problem]:
    """What the rationale check finds in an item's automated rationale (none for an item with no
    majority label: there is no label for it to argue)."""
    auto = result.automated
    if auto.label is None:
        return []
    return check_rationale(auto.rationale, article_text=article.article_text, headline=article.headline,
                           caption=article.image_caption, label=auto.label, techniques=auto.techniques)


def _row(article: Article, result: ItemVotes, reviewer: str, problems: list[Problem], verdict: Verdict | None) -> dict[str, Any]:
    auto = result.automated
    return {
        "unique_id": article.unique_id,
        "reviewer": reviewer,
        "outlet": article.outlet,
        "headline": article.headline,
        "url": article.url,
        "text_label": _label_text(result.text.label),
        "multimodal_label": _label_text(auto.label),
        "label_source": result.label_prompt,
        "flagged": auto.reason or "",
        "agreement": f"{auto.agreement:.2f}" if auto.agreement is not None else "",
        "techniques": ", ".join(auto.techniques),
        "rationale": auto.rationale,
        "rationale_problems": describe(problems),
        "votes": _votes_text(result.votes, _language(article, result)),
        **_filled(verdict),
    }


def _csv_text(rows: list[dict[str, Any]]) -> str:
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
pre{white-space:pre-wrap;font-family:inherit}.rationale{white-space:pre-wrap}
"""


def _data_url(path: Path) -> str:
    mime = mimetypes.guess_type(path.name)[0] or "image/jpeg"
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


def _html(reviewer: str, csv_name: str, rows: list[dict[str, Any]], articles: list[Article], results: list[ItemVotes],
          problems: list[list[Problem]], config: ExportConfig) -> str:
    e = html.escape
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<meta name='generator' content='{HTML_GENERATOR}'>",
        f"<title>Review sheet: {e(reviewer)}</title><style>{_CSS}</style></head><body>",
        f"<h1>Review sheet: {e(reviewer)}</h1>",
        "<p>For each item, fill in <code>verdict</code> (Acceptable / Needs Improvement / Incorrect), "
        "<code>corrected_label</code> (biased / not biased; required for Incorrect and for flagged items), "
        "<code>corrected_rationale</code> (the rationale the dataset should carry: give one with Needs Improvement "
        "and with a label you correct or settle), <code>corrected_techniques</code> (the techniques present, "
        f"comma-separated, or <code>{NO_TECHNIQUES}</code>: a label you correct or settle keeps none of the annotators') "
        f"and <code>comment</code> in <code>{e(csv_name)}</code>, then run "
        f"<code>vilbias review import --workdir DIR {e(csv_name)}</code>.</p>",
        f"<p>{sum(map(bool, problems))} of {len(rows)} items come first because their rationale fails the rationale "
        "check (a quotation not in the article, an argument for the other label, a technique marked absent, an empty, "
        "cut-off or repeating text); their problems are listed under the rationale.</p>",
    ]
    prefilled = sum(bool(r["verdict"]) for r in rows)
    if prefilled:
        parts.append(f"<p>{prefilled} of {len(rows)} items show your verdict already imported; change it in the CSV "
                     "to replace it.</p>")
    for n, (row, article, result, found) in enumerate(zip(rows, articles, results, problems, strict=True), 1):
        image = Path(config.workdir) / article.image_path
        img = f"<img src='{_data_url(image)}' alt='{e(article.image_caption)}'>" if image.is_file() else "<p>(image missing)</p>"
        text = article.article_text
        if len(text) > config.max_text_chars:
            text = text[: config.max_text_chars] + " [...]"
        auto = result.automated
        label = (
            f"<span class='label'>{e(auto.label)}</span>" if auto.label
            else f"<span class='label flagged'>no label ({e((auto.reason or '').replace('_', ' '))})</span>"
        )
        vote_rows = "".join(
            f"<tr><td>{e(prompt)}</td><td>{e(_votes_text(votes, _language(article, result)))}</td></tr>"
            for prompt, votes in (("text", result.text_votes), ("multimodal", result.multimodal_votes)) if votes
        )
        verdict = (f"<p class='meta'>Your verdict already imported: {e(row['verdict'])}"
                   + (f", label {e(row['corrected_label'])}" if row["corrected_label"] else "") + "</p>") if row["verdict"] else ""
        parts.append(
            f"<article id='{e(article.unique_id)}'><h2>{n}. {e(article.headline)}</h2>"
            f"<p class='meta'>{e(article.outlet)} · <code>{e(article.unique_id)}</code> · {e(article.url)}</p>"
            f"{img}<p class='meta'>Caption: {e(article.image_caption or '(none)')}</p>"
            f"<p>Label (the {e(result.label_prompt)} prompt's vote): {label} · text label: {e(result.text.label or 'none')}"
            f" · agreement: {e(row['agreement'] or '-')}</p>"
            f"<p class='rationale'>Rationale: {e(auto.rationale or '(none)')}</p>"
            + (f"<ul class='problems'>{''.join(f'<li><code>{e(p.code)}</code> {e(p.passage)}</li>' for p in found)}</ul>"
               if found else "")
            + f"<p>Techniques: {e(row['techniques'] or '(none)')}</p>"
            f"<table><tr><th>prompt</th><th>votes (B biased, N not biased, - abstained)</th></tr>{vote_rows}</table>"
            f"{verdict}<details><summary>Article text</summary><pre>{e(text)}</pre></details></article>"
        )
    parts.append("</body></html>\n")
    return "".join(parts)


def _norm_verdict(value: str) -> str | None:
    v = re.sub(r"[\s-]+", "_", value.strip().lower())
    return v if v in VERDICTS else None


def _record(record: dict[str, Any]) -> dict[str, Any]:
    """A checked row as :meth:`Verdict.record` spells it (for comparing with what is imported)."""
    return {k: record[k] for k in ("unique_id", "reviewer", "verdict", "corrected_label", "corrected_rationale",
                                   "corrected_techniques", "comment")}


IMPORT_COLUMNS = ("unique_id", "reviewer", "verdict", "corrected_label", "comment")
"""The columns a sheet must have to be imported (``corrected_rationale``, ``corrected_techniques``
and ``label_source`` are optional: sheets exported before they existed still import)."""


class SheetsRefused(ValueError):
    """Some sheets were not imported; the message names each with its cause or its bad rows, and
    what was imported from the others. :attr:`result` is what :func:`import_verdicts` would return."""

    def __init__(self, message: str, result: dict[str, Any]):
        super().__init__(message)
        self.result = result


@writing()  # the workdir is this import's alone until it returns (vilbias.outputs)
def import_verdicts(config: ImportConfig) -> dict[str, Any]:
    """Import each sheet of ``config.files`` whose every row is valid; a sheet with a bad row, or
    one that cannot be read, is not imported, and the others are.

    Each sheet is read as a spreadsheet program saved it (:func:`vilbias.review.spreadsheets.read_sheet`:
    UTF-8, UTF-16 or a code page such as cp1252, a BOM, ``,`` ``;`` tab or ``|`` between columns, or
    an ``.xlsx`` workbook). The returned ``files`` list says per sheet what was imported
    (``imported``, ``skipped``, ``unchanged``, ``read_as``) or why it was not (``problems``).

    Raises:
        SheetsRefused: a sheet was not imported (the others were); the message names each
            (``file: cause``, or ``file:line: problem`` for each bad row) and what was imported.
    """
    if not config.files:
        raise ValueError("give at least one sheet file to import")
    results = automated_results(config.workdir)
    claim_workdir(config.workdir, "vilbias review import")  # one writer of verdicts.jsonl at a time
    automated = {i: r.automated.label for i, r in results.items()}
    flags = {i: r.automated.reason or "no votes" for i, r in results.items()}
    articles = {a.unique_id: a for a in read_articles(config.workdir)}
    known = set(articles)
    stored = {(v.unique_id, v.reviewer): v for vs in load_verdicts(config.workdir).values() for v in vs}
    records: list[dict[str, Any]] = []
    files: list[dict[str, Any]] = []
    seen: dict[tuple[str, str], str] = {}  # (item, reviewer) -> where an imported sheet judged it
    now = utcnow()
    for path in dict.fromkeys(map(Path, config.files)):  # a sheet named twice is read once
        outcome = _import_sheet(path, known, automated, flags, stored, seen)
        files.append(outcome)
        if not outcome["problems"]:
            records += [{**r, "sheet": path.name, "imported_at": now} for r in outcome.pop("records")]
    failing = _check_corrected_rationales(records, articles, results)
    target = Path(config.workdir) / REVIEWS / VERDICTS_FILE
    if records:
        lines = [json.dumps(r, ensure_ascii=False) for r in read_jsonl(target)] + [json.dumps(r, ensure_ascii=False) for r in records]
        atomic_write(target, "".join(line + "\n" for line in lines))
    counts = Counter(r["verdict"] for r in records)
    imported = [f for f in files if not f["problems"]]
    logger.info("imported %d verdicts from %d of %d sheets", len(records), len(imported), len(files))
    result = {"imported": len(records), "skipped": sum(f["skipped"] for f in imported),
              "unchanged": sum(f["unchanged"] for f in imported), "verdicts": dict(counts), "file": str(target),
              "files": [{k: v for k, v in f.items() if k != "records"} for f in files],
              "corrected_rationales": sum(bool(r["corrected_rationale"]) for r in records),
              "corrected_techniques": sum(r["corrected_techniques"] is not None for r in records),
              "failing_corrected_rationales": len(failing),
              "rationale_problems": dict(Counter(c for found in failing.values() for c in codes(found)))}
    refused = [f for f in files if f["problems"]]
    if refused:
        raise SheetsRefused(refused_text(result), result)
    return result


def refused_text(result: dict[str, Any]) -> str:
    """What :class:`SheetsRefused` says: each sheet not imported, with its cause or bad rows, then
    what was imported from the others."""
    lines = []
    for f in result["files"]:
        if not f["problems"]:
            continue
        if f["unreadable"]:
            lines.append(f"nothing imported from {f['problems'][0]}")
        else:
            lines.append(f"nothing imported from {f['file']}: {len(f['problems'])} problem(s) (fix them and import it again):")
            lines += [f"  {p}" for p in f["problems"]]
    good = [f for f in result["files"] if not f["problems"]]
    if good:
        names = ", ".join(Path(f["file"]).name for f in good)
        lines.append(f"imported {result['imported']} verdicts from the other {_sheets(len(good))} ({names}) into {result['file']}")
    return "\n".join(lines)


def _sheets(n: int) -> str:
    return f"{n} sheet" if n == 1 else f"{n} sheets"


def _import_sheet(path: Path, known: set[str], automated: dict[str, str | None], flags: dict[str, str],
                  stored: dict[tuple[str, str], Verdict], seen: dict[tuple[str, str], str]) -> dict[str, Any]:
    """One sheet's rows checked: ``{"file", "read_as", "records", "skipped", "unchanged", "problems",
    "unreadable"}``. ``seen`` (what the sheets imported so far judged) takes this sheet's rows only
    when it has no problem."""
    outcome: dict[str, Any] = {"file": str(path), "read_as": "", "records": [], "imported": 0, "skipped": 0, "unchanged": 0,
                               "problems": [], "unreadable": False}
    try:
        sheet = read_sheet(path, IMPORT_COLUMNS)
    except UnreadableSheet as e:
        outcome.update(problems=[str(e)], unreadable=True)
        return outcome
    outcome["read_as"] = sheet.read_as
    mine: dict[tuple[str, str], str] = {}
    for line, row in sheet.rows:
        where = f"{path}:{line}"
        record, problems = _check_row(row, known, automated, flags)
        if record is None and not problems:
            outcome["skipped"] += 1
            continue
        key = (record or {}).get("unique_id", ""), (record or {}).get("reviewer", "")
        if record is not None and (key in mine or key in seen):
            problems.append(f"reviewer {key[1]!r} already judged this item at {mine.get(key) or seen[key]}")
        if record is not None:
            mine.setdefault(key, where)
        if record is not None and key in stored and _record(record) == stored[key].record():
            outcome["unchanged"] += 1  # a verdict already imported, shown again on a later sheet
            continue
        if problems:
            outcome["problems"] += [f"{where}: {p}" for p in problems]
            continue
        outcome["records"].append(record)
    if not outcome["problems"]:
        seen.update(mine)
        outcome["imported"] = len(outcome["records"])
    return outcome


def _check_corrected_rationales(records: list[dict[str, Any]], articles: dict[str, Article],
                                results: dict[str, ItemVotes]) -> dict[tuple[str, str], list[Problem]]:
    """Check each corrected rationale against its article, the label it is written for (the
    reviewer's corrected label, else the automated one) and the techniques the row will carry:
    the reviewer's corrected ones, else the annotators' when the label is theirs (a label set by
    review without techniques carries none, judged by no one: nothing to compare). Warn about
    each one that fails."""
    failing = {}
    for r in records:
        result = results.get(r["unique_id"])
        automated = result.automated.label if result else None
        label = r["corrected_label"] or automated
        if not r["corrected_rationale"] or label is None:
            continue
        techniques = r["corrected_techniques"]
        if techniques is None and result and label == automated:
            techniques = result.automated.techniques
        article = articles[r["unique_id"]]
        found = check_rationale(r["corrected_rationale"], article_text=article.article_text, headline=article.headline,
                                caption=article.image_caption, label=label, techniques=techniques)
        if found:
            failing[(r["unique_id"], r["reviewer"])] = found
            logger.warning("%s: %s's corrected rationale for %s fails the rationale check (imported anyway): %s",
                           r["sheet"], r["reviewer"], r["unique_id"], describe(found))
    return failing


def _check_row(row: dict[str, str], known: set[str], automated: dict[str, str | None],
               flags: dict[str, str]) -> tuple[dict[str, Any] | None, list[str]]:
    """One sheet row -> ``(record, problems)``; ``(None, [])`` for a row not reviewed yet."""
    item = (row.get("unique_id") or "").strip()
    reviewer = (row.get("reviewer") or "").strip()
    verdict_raw = (row.get("verdict") or "").strip()
    corrected_raw = (row.get("corrected_label") or "").strip()
    rationale = (row.get("corrected_rationale") or "").strip()  # absent from sheets exported before it existed
    techniques_raw = (row.get("corrected_techniques") or "").strip()  # likewise
    comment = (row.get("comment") or "").strip()
    if not verdict_raw:
        if corrected_raw or comment or rationale or techniques_raw:
            return None, ["corrected_label, corrected_rationale, corrected_techniques or comment given without a verdict"]
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
    techniques, unknown = parse_techniques(techniques_raw)
    if unknown:
        problems.append(f"unknown technique(s) {', '.join(map(repr, unknown))} in corrected_techniques "
                        f"(use {', '.join(ALL_NAMES)}, or {NO_TECHNIQUES})")
    auto = automated.get(item)
    if verdict == "incorrect" and corrected is None and not corrected_raw:
        problems.append("verdict Incorrect needs a corrected_label")
    elif verdict == "incorrect" and corrected is not None and corrected == auto:
        problems.append(f"verdict Incorrect but corrected_label equals the automated label {auto!r}")
    elif item in known and auto is None and corrected is None and not corrected_raw:
        why = flags.get(item, "not annotated").replace("_", " ")
        problems.append(f"the item has no automated label ({why}): give a corrected_label")
    if verdict == "acceptable" and auto is not None and corrected in (None, auto):
        if rationale:
            problems.append("corrected_rationale with verdict Acceptable: use Needs Improvement to replace an accepted label's rationale")
        if techniques is not None:
            problems.append("corrected_techniques with verdict Acceptable: use Needs Improvement to change an accepted label's techniques")
    record = {
        "unique_id": item, "reviewer": reviewer, "verdict": verdict, "corrected_label": corrected,
        "corrected_rationale": rationale, "corrected_techniques": techniques, "comment": comment,
    }
    return record, problems
