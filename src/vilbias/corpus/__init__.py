"""``vilbias build``: the Hub-layout dataset folder.

    vilbias build                              # the embedded sample -> ./BiasCorpus
    vilbias build --workdir work --output out  # a pipeline workdir
    vilbias build --workdir work --previous ORG/BiasCorpus@v1.0.0   # keep v1.0.0's splits
    vilbias build --from vector-institute/newsmediabias-plus --output nmb  # import a published release

The folder is byte-for-byte what ``vilbias publish dataset`` uploads: ``README.md`` (card with
``configs:`` and ``dataset_info:`` YAML), the rows stored once as
``data/{split}-fold{k}-NNNNN-of-NNNNN.parquet`` (every config reads its splits from these files,
see :mod:`vilbias.corpus.writer`), ``assets/label_by_outlet.png`` and ``build_report.json``.

``--from SOURCE`` imports a published release instead of a workdir (NewsMediaBias-Plus, the
ViLBias paper's release, or any table of news items): :mod:`vilbias.corpus.importer`.

Splits never move: when the output folder already holds a build, or ``--previous`` names a
release, every row of that release keeps its split and fold (:mod:`vilbias.corpus.release`).
The folder is written next to the output and swapped in at the end, so a failed or killed build
leaves the previous folder as it was.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from huggingface_hub import DatasetCardData
from tqdm.auto import tqdm

from vilbias import __version__
from vilbias.corpus.card import (
    PLOT_PATH,
    card_statistics,
    plot_label_by_outlet,
    render_card,
    size_category,
)
from vilbias.corpus.importer import import_release
from vilbias.corpus.plan import make_plan
from vilbias.corpus.release import looks_like_hub_id, previous_cells
from vilbias.corpus.sentences import build_sentences
from vilbias.corpus.writer import REPORT, RepoWriter, card_metadata, corpus_views
from vilbias.loading_script.biascorpus import (
    DEFAULT_FEATURES,
    SFT_FEATURES,
    STORED_FEATURES,
    Plan,
    PlanRow,
    Resolutions,
    iter_examples,
)
from vilbias.task import LABEL_NAMES

logger = logging.getLogger(__name__)

DEFAULT_OUTPUT = Path("BiasCorpus")
"""Where ``vilbias build`` writes by default. Not ``./vilbias``: a folder named like the package
in the working directory would shadow an editable install of it."""


@dataclass
class BuildConfig:
    """What ``vilbias build`` builds and where."""

    workdir: Path | None = field(
        default=None, metadata={"help": "Pipeline workdir to build from (articles.jsonl, images/, annotations.sqlite, reviews/). Omit to build the embedded sample."}
    )
    output: Path = field(
        default=DEFAULT_OUTPUT, metadata={"help": "Output folder in Hub layout; `load_dataset(<output>)` loads it. Replaced atomically; an existing build there is the previous release whose splits are kept."}
    )
    sentences: Path | None = field(
        default=None, metadata={"help": "Build a text-only sentence corpus from a BABE-format CSV instead of a workdir."}
    )
    source: str | None = field(
        default=None,
        metadata={
            "aliases": ["--from"],
            "help": "Import a published release instead of a workdir: a Hub dataset ORG/NAME[@REVISION] (token from HF_TOKEN or "
            "`hf auth login`), or a local Parquet/CSV/JSONL/XLSX file, a folder of them, or a .zip. NewsMediaBias-Plus v1 "
            "(2024), its 2025 Hub release and the ViLBias paper's release are recognised from their columns; see docs/import.md.",
        },
    )
    images: Path | None = field(
        default=None,
        metadata={"help": "With --from: the folder the table's image paths are relative to (default: the zip's own images, or the table's folder). Embedded image bytes need none."},
    )
    preset: str | None = field(
        default=None,
        metadata={
            "help": "With --from: force a layout instead of recognising it from the columns: nmb-plus-v1, nmb-plus-2025 or vilbias-paper.",
            "choices": ["nmb-plus-v1", "nmb-plus-2025", "vilbias-paper"],
        },
    )
    columns: list[str] = field(
        default_factory=list,
        metadata={
            "aliases": ["--column"],
            "help": "With --from: map a corpus field to a source column, TARGET=SOURCE (repeatable), e.g. --column unique_id=id "
            "--column image=image_path. Targets: unique_id, outlet, headline, article_text, image, image_caption, image_url, url, "
            "published, reasoning, multimodal_label, text_label.",
        },
    )
    label_map: str | None = field(
        default=None,
        metadata={"help": "With --from: how the source's label strings map to the labels, \"A=biased,B=not_biased\" (replaces the preset's map; matched without regard to case)."},
    )
    source_license: str | None = field(
        default=None,
        metadata={"help": "With --from: the source's licence id (e.g. cc-by-nc-4.0), overriding the preset's and the Hub card's. A licence with ND or NC makes `vilbias publish dataset` create the repo private."},
    )
    previous: str | None = field(
        default=None,
        metadata={"help": "The previous release whose rows keep their split and fold: a built folder or a Hub dataset ORG/NAME[@REVISION]. Default: the existing build in --output, if any."},
    )
    repo_id: str = field(default="vilbias/BiasCorpus", metadata={"help": "Hub repo id the card's loading examples name."})
    version: str = field(default="1.0.0", metadata={"help": "Release version the card's pinning example names."})
    pretty_name: str = field(default="BiasCorpus", metadata={"help": "Dataset name in the card."})
    max_shard_size: str = field(default="500MB", metadata={"help": "Parquet shard size cap, as datasets parses it (e.g. 500MB)."})
    num_proc: int | None = field(
        default=None, metadata={"help": "Processes for image validation (default: all cores above 2,000 images, else 1)."}
    )

    def __post_init__(self) -> None:
        if self.workdir is not None:
            self.workdir = Path(self.workdir)
            if not (self.workdir / "articles.jsonl").exists():
                raise FileNotFoundError(f"{self.workdir} is not a workdir (no articles.jsonl): run `vilbias ingest --workdir {self.workdir}` first")
        given = [flag for flag, value in (("--workdir", self.workdir), ("--sentences", self.sentences), ("--from", self.source)) if value is not None]
        if len(given) > 1:
            raise ValueError(f"{' and '.join(given)} are alternatives: build from one of them")
        if self.source is None and (self.images or self.preset or self.columns or self.label_map or self.source_license):
            raise ValueError("--images, --preset, --column, --label-map and --source-license go with --from SOURCE")
        self.columns = list(self.columns or [])
        if self.sentences is not None and not Path(self.sentences).exists() and not looks_like_hub_id(str(self.sentences)):
            raise FileNotFoundError(f"sentence file {self.sentences} does not exist")
        self.output = Path(self.output)


def _write_rows(plan: Plan, repo: Path, max_shard_size: str) -> tuple[dict[str, Any], int]:
    """Write every row once, into its cell's shards, in one pass (each article and image read
    once). Returns the configs' infos and the bytes written."""
    writer = RepoWriter(repo, STORED_FEATURES, corpus_views(DEFAULT_FEATURES, SFT_FEATURES), max_shard_size=max_shard_size)
    batch: list[tuple[PlanRow, dict]] = []

    def flush() -> None:
        table = writer.to_table([e for _, e in batch])
        by_cell: dict[tuple[str, int], list[int]] = {}
        for i, (row, _) in enumerate(batch):
            by_cell.setdefault((row.split, row.fold), []).append(i)
        for cell, idx in by_cell.items():
            writer.add(cell, table.take(idx))
        batch.clear()

    for item in tqdm(iter_examples(plan), total=len(plan.rows), desc="writing", unit=" rows"):
        batch.append(item)
        if len(batch) >= writer.row_group_size:
            flush()
    if batch:
        flush()
    infos = writer.close()
    return infos, writer.corpus_bytes()


def _automated_labels(plan: Plan) -> dict[str, int | None]:
    """The annotators' label of every annotated item (before review), as a class id."""
    with Resolutions(plan.resolved) as resolutions:
        return {uid: None if res["label"] is None else LABEL_NAMES.index(res["label"]) for uid, res in resolutions.items()}


def _render_card(config: BuildConfig, plan: Plan, infos: dict[str, Any], stats: dict[str, Any], previous: str | None, pinned: int) -> str:
    card_data = DatasetCardData(
        pretty_name=config.pretty_name,
        license="cc-by-nc-4.0",
        language=["en"],
        task_categories=["image-text-to-text", "image-classification", "text-classification"],
        tags=["media-bias", "multimodal", "news", "rationales", "vilbias"],
        size_categories=[size_category(len(plan.rows))],
    )
    card_metadata(card_data, corpus_views(DEFAULT_FEATURES, SFT_FEATURES), infos, list(STORED_FEATURES))
    changelog = (
        f"Built against the previous release in `{previous}`: its {pinned} rows still here kept their split and fold."
        if previous
        else "First build. `vilbias publish dataset` replaces this section with the rows added, removed and relabelled since the previous release tag."
    )
    card = render_card(
        card_data, stats, repo_id=config.repo_id, version=config.version, changelog=changelog,
        is_sample=config.workdir is None, pretty_name=config.pretty_name,
    )
    return str(card)


def build(config: BuildConfig) -> dict[str, Any]:
    """Build the dataset folder and return the build report (also written as ``build_report.json``)."""
    if config.sentences is not None:
        return build_sentences(config.sentences, config.output)
    if config.source is not None:

        return import_release(config)
    started = time.perf_counter()
    output = config.output.resolve()
    pinned, previous = previous_cells(config.previous, output)
    output.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".vilbias-build-", dir=output.parent))
    try:
        repo = scratch / "repo"
        repo.mkdir()
        plan = make_plan(config.workdir, scratch / "plan", pinned=pinned, num_proc=config.num_proc)
        if not plan.rows:
            reasons = Counter(e["reason"] for e in plan.exclusions).most_common(3)
            raise ValueError(f"nothing to build: every item was excluded ({len(plan.exclusions)} exclusions: "
                             + ", ".join(f"{n} {r}" for r, n in reasons) + ")")
        infos, corpus_bytes = _write_rows(plan, repo, config.max_shard_size)
        stats = card_statistics(plan, _automated_labels(plan))
        plot_label_by_outlet(plan.rows.values(), repo / PLOT_PATH)
        kept = sum(1 for uid in plan.rows if uid in pinned)
        (repo / "README.md").write_text(_render_card(config, plan, infos, stats, previous, kept), encoding="utf-8")
        report = _report(config, plan, infos, stats, started)
        report["previous_release"] = {"source": previous, "rows": len(pinned), "kept": kept, "dropped": len(pinned) - kept}
        report["corpus_bytes"] = corpus_bytes
        (repo / REPORT).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        # Swap in: the old folder is kept until the new one is in place.
        if output.exists():
            os.replace(output, scratch / "previous-output")
        os.replace(repo, output)
        return report
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _report(config: BuildConfig, plan: Plan, infos: dict[str, Any], stats: dict[str, Any], started: float) -> dict[str, Any]:
    return {
        "vilbias_version": __version__,
        "source": "embedded sample" if config.workdir is None else str(config.workdir),
        "rows": len(plan.rows),
        "configs": {name: {str(s): info.splits[s].num_examples for s in info.splits} for name, info in infos.items()},
        "label_share": {f"{r['config']}/{r['split']}": round(r["share"], 4) for r in stats["split_table"]},
        "corpus_biased_share": round(stats["biased_share"], 4),
        "groups": {k: plan.split_report[k] for k in ("groups", "multi_row_groups", "largest_group", "rows_linked_by", "pinned")},
        "groups_not_kept_whole": plan.split_report["not_kept_whole"],
        "annotation": plan.annotation,
        "flagged_for_review": len(plan.flagged),
        "exclusions": plan.exclusions,
        "exclusion_counts": _count_reasons(plan.exclusions),
        "seconds": round(time.perf_counter() - started, 2),
    }


def _count_reasons(exclusions: list[dict[str, str]]) -> dict[str, int]:
    return dict(Counter(e["reason"].split(":")[0] if not e["reason"].startswith("invalid_image") else "invalid_image:" + e["reason"].split(":")[1] for e in exclusions))


def format_report(report: dict[str, Any]) -> str:
    """The printed summary of a build report."""
    lines = [f"built {report['rows']} rows from {report['source']} in {report['seconds']} s"]
    for name, splits in report["configs"].items():
        lines.append(f"  {name:<8} " + "  ".join(f"{s}={n}" for s, n in splits.items()))
    shares = report["label_share"]
    lines.append(f"  biased share: corpus {report['corpus_biased_share']:.3f}; " + ", ".join(f"{k} {v:.3f}" for k, v in shares.items() if k.startswith("default/")))
    g = report["groups"]
    lines.append(f"  groups: {g['groups']} ({g['multi_row_groups']} with several rows, largest {g['largest_group']}); not kept whole: {len(report['groups_not_kept_whole'])}")
    if report["exclusions"]:
        lines.append(f"  excluded {sum(report['exclusion_counts'].values())}: " + ", ".join(f"{k} {v}" for k, v in report["exclusion_counts"].items()))
        for e in report["exclusions"][:20]:
            lines.append(f"    {e['unique_id']}: {e['reason']}")
        if len(report["exclusions"]) > 20:
            lines.append(f"    … {len(report['exclusions']) - 20} more in build_report.json")
    imported = report.get("imported") or {}
    if imported.get("unknown_labels"):
        values = ", ".join(f"{v!r} ({n})" for v, n in imported["unknown_labels"].items())
        lines.append(f"  unknown label values: {values}; to take them: {imported['label_map_hint']}")
    if imported:
        lines.append(f"  source licence: {imported['license'] or 'unknown (pass --source-license)'}"
                     + (f" (forbids {' and '.join(imported['restricted'])}: `vilbias publish dataset` creates the repo private)" if imported["restricted"] else ""))
    return "\n".join(lines)
