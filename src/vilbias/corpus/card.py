"""The dataset card, rendered from the data.

Statistics come from the build plan; the template is ``dataset_card/README.md.jinja``. The YAML
header carries ``configs:`` (data files per config and split, as ``push_to_hub`` writes them) and
``dataset_info:`` (features with ClassLabel names and the ``image`` dtype, split sizes), so the
folder loads with ``load_dataset(folder, config)`` and on the Hub alike.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections import Counter
from collections.abc import Iterable, Mapping
from importlib.resources import files
from pathlib import Path
from typing import Any

import jinja2
from huggingface_hub import DatasetCard, DatasetCardData

from vilbias import __version__
from vilbias.annotate.store import AnnotationStore
from vilbias.annotate.voting import OTHER_LANGUAGE
from vilbias.corpus.config import CardNames
from vilbias.corpus.protocol import PlannedRow
from vilbias.corpus.splits import MEANINGFUL_ROWS, split_size_note
from vilbias.loading_script.biascorpus import VIEWS, Plan, Resolutions
from vilbias.loading_script.schema import (
    DEFAULT,
    RELEASE,
    SFT,
    WORKDIR,
    Column,
    columns,
    feature_text,
    grouped,
)
from vilbias.review.verdicts import RATIONALE_MISSING, RATIONALE_NOT_CORRECTED
from vilbias.task import ARTICLE_WORDS, BIASED, BIASED_NAME, LABEL_NAMES, NOT_BIASED_NAME

CHANGELOG_START = "<!-- changelog:start -->"
CHANGELOG_END = "<!-- changelog:end -->"
"""The card's changelog sits between these markers; ``vilbias publish`` rewrites what is between."""
LOADING_START = "<!-- loading:start -->"
LOADING_END = "<!-- loading:end -->"
"""The card's loading examples sit between these markers: the folder that was built, until
``vilbias publish dataset`` rewrites them for its repo and release tag (:func:`insert_loading`)."""
PLOT_PATH = "assets/label_by_outlet.png"


def loading_block(name: str, *, sft: bool, version: str | None = None) -> str:
    """The card's loading examples for ``name`` (a folder or a Hub repo), between the markers;
    ``version`` (a tag such as ``v1.0.0``) adds the pinning example."""
    pad = max(len(name), 10)
    lines = [
        LOADING_START, "```python", "from datasets import load_dataset", "",
        f'ds = load_dataset("{name}"){" " * (pad - len(name))}                      # train / validation / test',
        f'fold = load_dataset("{name}", "fold_3"){" " * (pad - len(name))}          # 5-fold CV: train / test',
    ]
    if sft:
        lines.append(f'sft = load_dataset("{name}", "sft", split="train"){" " * (pad - len(name))} # TRL vision conversational format')
    if version:
        lines.append(f'pinned = load_dataset("{name}", "fold_0", revision="{version}")  # pin this release')
    lines.append("```")
    if sft:
        lines += ["", f"`trl sft` trains on the `sft` config directly (`dataset_name: {name}`, `dataset_config: sft`)."]
    if not version:
        lines += ["", f"`{name}` is the folder `vilbias build` wrote. Once published (`vilbias publish dataset --repo-id ORG/NAME "
                      "--version X.Y.Z`), this section names the repo and the release tag to pin."]
    lines.append(LOADING_END)
    return "\n".join(lines)


def insert_loading(card: str, repo_id: str, tag: str) -> str:
    """``card`` with its loading examples naming ``repo_id`` at ``tag`` (publishing); a card
    without the markers is returned as it is."""
    start, end = card.find(LOADING_START), card.find(LOADING_END)
    if start < 0 or end < start:
        return card
    block = card[start:end + len(LOADING_END)]
    return card[:start] + loading_block(repo_id, sft='"sft"' in block, version=tag) + card[end + len(LOADING_END):]


def annotator_audits(store: str | Path) -> list[dict[str, Any]]:
    """The stereotype audits stored for the annotators (``vilbias audit annotators``), newest per
    annotator and modality; [] when none were run. Read through the annotate stage's store (the
    audit stage writes them there with :meth:`AnnotationStore.put_annotator_audit`)."""
    with AnnotationStore(store) as db:
        rows = db.annotator_audits()
    audits: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        s = r["summary"]
        audits.setdefault((r["annotator"], r["modality"]), {
            "annotator": r["annotator"], "modality": r["modality"], "probe_version": r["probe_version"],
            "questions": r["questions"], "answered": r["answered"], "factuality_accuracy": s.get("factuality_accuracy"),
            "first_option_rate": s.get("first_option_rate"), "headline": s.get("headline") or "",
        })
    return sorted(audits.values(), key=lambda a: (a["annotator"], a["modality"]))


def row_statistics(rows: Iterable[PlannedRow], split_report: Mapping[str, Any]) -> dict[str, Any]:
    """The card's size, per-view split and outlet figures, from rows with ``label``, ``split``,
    ``fold`` and ``outlet`` (a pipeline plan's rows and an imported release's alike)."""
    rows = list(rows)
    n = len(rows)
    biased = sum(r.label == BIASED for r in rows)
    table = []
    for view in VIEWS.values():
        if view.same_rows_as:  # sft: default's rows again
            continue
        for split, cells in view.splits.items():
            members = [r for r in rows if (r.split, r.fold) in cells]
            b = sum(r.label == BIASED for r in members)
            table.append({"config": view.name, "split": split, "rows": len(members), BIASED_NAME: b,
                          NOT_BIASED_NAME: len(members) - b, "share": b / len(members) if members else 0.0})
    thin = [{"name": f"{r['config']}/{r['split']}", "note": note} for r in table
            if (note := split_size_note(r["rows"], r[BIASED_NAME])) is not None]
    outlets = Counter(r.outlet or "" for r in rows)
    outlet_biased = Counter(r.outlet or "" for r in rows if r.label == BIASED)
    languages = Counter(getattr(r, "language", "") or "unknown" for r in rows)
    return {
        # rows per language (the `language` column), most common first
        "languages": dict(languages.most_common()),
        "n_rows": n,
        "n_biased": biased,
        "n_not_biased": n - biased,
        "biased_share": biased / n if n else 0.0,
        "n_outlets": len([o for o in outlets if o]),
        "n_no_outlet": outlets[""],
        "split_table": table,
        # splits with no row (left out of their config's `configs:`) or too few to mean anything
        "empty_splits": [t["name"] for t in thin if t["note"] == "empty"],
        "small_splits": [t for t in thin if t["note"] != "empty"],
        "top_outlets": [{"outlet": o or "(unknown)", "rows": c, "share": outlet_biased[o] / c} for o, c in outlets.most_common(10)],
        "split_report": split_report,
        "config_rows": config_rows(),
    }


def row_languages(rows: Iterable[PlannedRow]) -> list[str] | None:
    """The card's ``language:``: the languages the rows hold (their ``language``), most common
    first; None (left out of the card) when no row's language is known."""
    counts = Counter(getattr(r, "language", "") for r in rows)
    return [code for code, _ in counts.most_common() if code] or None


def config_rows() -> list[dict[str, str]]:
    """The card's table of configs, one row per view family (``fold_0`` … ``fold_4`` together)."""
    families: dict[str, list[Any]] = {}
    for view in VIEWS.values():
        families.setdefault(view.family, []).append(view)
    out = []
    for views in families.values():
        names = f"`{views[0].name}`" if len(views) == 1 else f"`{views[0].name}` … `{views[-1].name}`"
        out.append({"names": names, "family": views[0].family, "splits": " / ".join(views[0].splits)})
    return out


def card_statistics(plan: Plan) -> dict[str, Any]:
    """Figures the card states, from the plan (rows, cells, reviews, annotation summary). κ and
    the annotators' agreement are ``plan.review``: the computation ``vilbias review stats`` prints
    (:class:`vilbias.review.outcome.AgreementTally`), so both state the same numbers."""
    rows = list(plan.rows.values())
    reviewed = [r for r in rows if r.review != "unreviewed"]
    agreements = [r.agreement for r in rows if r.agreement is not None]
    ann = plan.annotation
    return {
        **row_statistics(rows, plan.split_report),
        **annotation_rates(ann),
        **review_columns(plan),
        "annotation": ann,
        # which vote gave each row's label, most common first ("text": labels that did not see the image)
        "label_sources": dict(Counter(r.label_source for r in rows).most_common()),
        "n_flagged_excluded": len(plan.flagged),
        # items left out because no annotator reads their language, per language
        "unread_languages": dict(Counter(e["reason"].partition(":")[2] for e in plan.exclusions
                                         if e["reason"].startswith(f"{OTHER_LANGUAGE}:")).most_common()),
        "mean_agreement": sum(agreements) / len(agreements) if agreements else 0.0,
        "unanimous_share": sum(a == 1.0 for a in agreements) / len(agreements) if agreements else 0.0,
        "n_reviewed": len(reviewed),
        "review_counts": dict(Counter(r.review for r in reviewed)),
        "kappa": plan.review.get("cohen_kappa"),
        "annotator_audits": annotator_audits(plan.store),
        "kappa_n": plan.review.get("kappa_items", 0),
        "annotator_agreement": plan.review.get("annotator_agreement", {}),
        "annotator_items": plan.review.get("annotator_items", {}),
    }


def annotation_rates(ann: Mapping[str, Any]) -> dict[str, Any]:
    """Item rates (flagged = ties + no majority; items no annotator reads counted apart) and, per
    prompt, call abstention rates by kind."""
    n = ann.get("items_annotated") or 0
    reasons = ann.get("flag_reasons", {})
    ties = reasons.get("tie", 0)
    # items no annotator reads (their language): abstained on, left out, not awaiting review
    unread = reasons.get(OTHER_LANGUAGE, 0)
    flagged = ann.get("items_flagged", 0) - unread

    def share(x: int, total: int) -> float:
        return x / total if total else 0.0

    abstentions = {}
    for prompt, c in ann.get("calls", {}).items():
        calls = c.get("calls", 0)
        abstentions[prompt] = {
            "calls": calls,
            "abstained": share(calls - c.get("valid", 0), calls),
            "format": share(c.get("unparseable", 0), calls),
            "invalid": share(c.get("invalid", 0), calls),
            "refused": share(c.get("refused", 0), calls),
            "failed": share(c.get("failed", 0), calls),
            "other_language": share(c.get(OTHER_LANGUAGE, 0), calls),
        }
    return {
        "n_flagged": flagged,
        "flag_rate": share(flagged, n),
        "tie_rate": share(ties, n),
        "no_majority_rate": share(flagged - ties, n),
        "n_ties": ties,
        "n_no_majority": flagged - ties,
        "n_other_language": unread,
        "abstentions": abstentions,
    }


def review_columns(plan: Plan) -> dict[str, Any]:
    """Counts over the rows of what review put into them (from the plan's resolutions).

    Only reviewed rows' resolutions are read: an unreviewed row (no verdict) has no review flag,
    corrected rationale or techniques, comment or cleared techniques
    (:func:`~vilbias.review.verdicts.settle_rationale`, :func:`~vilbias.review.verdicts.settle_techniques`).
    Reading and parsing every row's was ~0.2 s of an 8,000-row build that nobody reviewed."""
    flags: Counter[str] = Counter()
    corrected = commented = corrected_techniques = cleared = 0
    uids = [uid for uid, row in plan.rows.items() if row.review != "unreviewed"]
    flags[""] += len(plan.rows) - len(uids)
    with Resolutions(plan.resolved) as resolutions:
        for res in resolutions.get_many(uids):
            flags[res["review_flag"] or ""] += 1
            corrected += res["corrected_rationale"] is not None
            commented += bool(res["review_comments"])
            corrected_techniques += res.get("corrected_techniques") is not None
            cleared += bool(res.get("techniques_cleared"))
    return {
        "n_corrected_techniques": corrected_techniques,
        "n_techniques_cleared": cleared,
        "n_corrected_rationale": corrected,
        "n_commented": commented,
        "n_rationale_not_corrected": flags[RATIONALE_NOT_CORRECTED],
        "n_rationale_missing": flags[RATIONALE_MISSING],
    }


CODE_TEXT = {
    "empty": "no rationale, or under three words",
    "cut_off": "stops mid-sentence",
    "repeats_itself": "repeats itself",
    "quote_not_in_article": "quotes text the article does not contain",
    "argues_other_label": "argues for the other label",
    "names_absent_technique": "names a technique the row marks absent",
}
"""How the card words each problem code of :data:`vilbias.rationale.CODES`."""


def label_share_by_outlet(rows: Iterable[PlannedRow], top: int = 15) -> tuple[list[str], list[int], list[int]]:
    """What the card's figure shows: the ``top`` outlets by rows (ties in the order the rows name
    them first), fewest first as the bars run bottom up, and each one's biased and not-biased rows."""
    counts, biased_counts = Counter(), Counter()
    for r in rows:
        counts[r.outlet or "(unknown)"] += 1
        biased_counts[r.outlet or "(unknown)"] += r.label == 1
    outlets = [o for o, _ in counts.most_common(top)][::-1]
    biased = [biased_counts[o] for o in outlets]
    return outlets, biased, [counts[o] - b for o, b in zip(outlets, biased, strict=True)]


def plot_label_by_outlet(rows: Iterable[PlannedRow], path: Path, top: int = 15) -> None:
    """Horizontal stacked bars: rows per outlet split by label (the card's figure,
    :func:`label_share_by_outlet`'s figures)."""
    # matplotlib's Figure drawn on its Agg canvas, without pyplot: pyplot's import and backend
    # set-up cost ~1 s of every build, for a figure that is only ever written to a file.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    outlets, biased, not_biased = label_share_by_outlet(rows, top)
    fig = Figure(figsize=(8, 0.45 * len(outlets) + 1.4), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    ax.barh(outlets, biased, color="#d1495b", label=LABEL_NAMES[1])
    ax.barh(outlets, not_biased, left=biased, color="#00798c", label=LABEL_NAMES[0])
    for y, (b, nb) in enumerate(zip(biased, not_biased, strict=True)):
        ax.text(b + nb, y, f" {b / (b + nb):.0%} biased", va="center", fontsize=8)
    ax.set_xlabel("articles")
    ax.set_title("Label share by outlet")
    ax.legend(loc="lower right", frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    ax.set_xlim(0, max(b + nb for b, nb in zip(biased, not_biased, strict=True)) * 1.25 if outlets else 1)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)


def render_card(
    card_data: DatasetCardData,
    stats: dict[str, Any],
    *,
    names: CardNames,
    changelog: str,
    is_sample: bool,
    rationales: dict[str, Any] | None,
) -> DatasetCard:
    """The :class:`huggingface_hub.DatasetCard` for a build, from the Jinja template. ``stats``
    holds :func:`row_statistics` and, for a workdir, :func:`card_statistics`; an import adds
    ``imported`` (the report's ``source`` section)."""
    template = files("vilbias.dataset_card") / "README.md.jinja"
    version = f"v{names.version}" if names.repo_id else None
    defaults = {"imported": None, "n_reviewed": 0, "label_sources": {}}
    figures = dict(
        pretty_name=names.pretty_name,
        loading=loading_block(names.load_name, sft=True, version=version),
        load_name=names.load_name,
        rationales=rationales,
        code_names=CODE_TEXT,
        changelog=changelog,
        is_sample=is_sample,
        vilbias_version=__version__,
        built_at=dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d"),
        sft_words=ARTICLE_WORDS,
        meaningful_rows=MEANINGFUL_ROWS,
        changelog_start=CHANGELOG_START,
        changelog_end=CHANGELOG_END,
        **{**defaults, **stats},
    )
    source = RELEASE if figures["imported"] else WORKDIR
    # DatasetCard.from_template's own steps (the card data's fields, then the figures, over the
    # template; the card data as YAML), with the template compiled once a process: compiling it
    # was ~70 ms of every build.
    values = {**card_data.to_dict(), **figures, "fields": field_table(source, figures), "sft_row": sft_row(source, figures)}
    return DatasetCard(_template(template.read_text(encoding="utf-8")).render(card_data=card_data.to_yaml(), **values))


@functools.lru_cache(maxsize=64)
def _template(text: str) -> jinja2.Template:
    """``jinja2.Template(text)``, compiled once a process (the card's, and each column's meaning)."""
    return jinja2.Template(text)


def _meaning(column: Column, source: str, figures: Mapping[str, Any]) -> str:
    """A column's meaning in the card, its declaration's template rendered over the card's figures."""
    text = column.card_imported if source == RELEASE and column.card_imported is not None else column.card
    return _template(text or "").render(**figures).strip()


def field_table(source: str, figures: Mapping[str, Any]) -> list[dict[str, str]]:
    """The card's table of ``default``'s fields, from the columns' declarations
    (:mod:`vilbias.loading_script.schema`): ``names``, ``type`` and ``meaning`` per table row."""
    out = []
    for row in grouped(columns(source, DEFAULT)):
        types = list(dict.fromkeys(feature_text(c.feature) for c in row))
        out.append({"names": ", ".join(f"`{c.name}`" for c in row), "type": " / ".join(types),
                    "meaning": _meaning(row[0], source, figures)})
    return out


def sft_row(source: str, figures: Mapping[str, Any]) -> str:
    """What an ``sft`` row is, for the card's table of configs: its columns, each that is not a
    ``default`` column with its meaning."""
    return ", ".join(f"`{c.name}`" + ("" if c.default else f" ({_meaning(c, source, figures)})") for c in columns(source, SFT))


def size_category(n: int) -> str:
    """The Hub's ``size_categories`` value for ``n`` rows."""
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if n < limit:
            return name
    return "n>1M"
