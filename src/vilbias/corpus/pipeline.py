"""``vilbias build``: the Hub-layout dataset folder, from any of its three sources.

    vilbias build                              # the embedded sample -> ./BiasCorpus
    vilbias build --workdir work --output out  # a pipeline workdir
    vilbias build --workdir work --previous ORG/BiasCorpus@v1.0.0   # keep v1.0.0's splits
    vilbias build --sentences babe.csv --output babe                # a labelled sentence file
    vilbias build --from vector-institute/newsmediabias-plus --output nmb  # import a published release
    vilbias build --config BiasCorpus/build_config.yaml              # again, as that build ran

One path for every source (:class:`~vilbias.corpus.protocol.CorpusSource`): **plan** (the
source decides its rows; splits and folds from :func:`vilbias.corpus.splits.assign_splits`) →
**write** (every row once into its cell's shards, :class:`~vilbias.corpus.writer.RepoWriter`) →
**swap in** (the folder is written next to the output and renamed over it at the end, so a failed
or killed build leaves the previous folder as it was) → **report** (``build_report.json``, the
same keys whatever the source; what only one source has sits in its ``source`` section; first,
``warning``: what a reader must know before the figures, e.g. that the rationales mostly fail the
rationale check, else null; ``rationale_check`` is null for a corpus without rationales).

The folder is byte-for-byte what ``vilbias publish dataset`` uploads: ``README.md`` (card with
``configs:`` and ``dataset_info:`` YAML), the rows stored once as
``data/{split}-fold{k}-NNNNN-of-NNNNN.parquet`` (every config reads its splits from these files),
``assets/label_by_outlet.png`` (not for sentences), ``build_report.json`` and
``build_config.yaml`` (the options this build ran with: ``vilbias build --config`` re-runs it).

Splits never move: when the output folder already holds a build, or ``--previous`` names a
release, every row of that release keeps its split and fold (:mod:`vilbias.corpus.release`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections import Counter
from pathlib import Path
from typing import Any

from datasets import DatasetInfo
from tqdm.auto import tqdm

# corpus: its lazy map, of the three sources among others
from vilbias import __version__, corpus
from vilbias.config import save_config
from vilbias.corpus.card import row_statistics
from vilbias.corpus.config import BuildConfig, Origin
from vilbias.corpus.protocol import BuildPlan, CellKey, CorpusSource
from vilbias.corpus.rationales import RationaleTally, describe_codes
from vilbias.corpus.release import previous_cells
from vilbias.corpus.splits import MEANINGFUL_ROWS
from vilbias.corpus.writer import REPORT, RepoWriter, claim_build_output, swap_in
from vilbias.outputs import expect_bytes, writing
from vilbias.task import LABEL_NAMES
from vilbias.workdir import sample_workdir

logger = logging.getLogger(__name__)

GROUP_KEYS = ("groups", "multi_row_groups", "largest_group", "rows_linked_by", "pinned")
"""The split report's figures the build report states under ``groups``."""


def open_source(config: BuildConfig) -> CorpusSource:
    """The source ``config`` names (:meth:`BuildConfig.origin`), ready to plan. Each source's module
    is imported when a build names it (the package's lazy map), so a sentence build never loads the
    image pipeline and the reverse."""
    origin = config.origin()
    if origin.kind == "release":
        return corpus.ReleaseSource(origin.location, images=config.images, preset=config.preset, columns=config.columns,
                                    label_map=config.label_map, license=config.source_license, num_proc=config.num_proc)
    if origin.kind == "sentences":
        return corpus.SentenceSource(origin.location, columns=config.columns, source_split=config.source_split)
    return corpus.WorkdirSource(origin.location, num_proc=config.num_proc)


def _source_bytes(origin: Origin) -> int | None:
    """Roughly what a build of ``origin`` writes, for a full disk's message: the size of a local source
    (a workdir's images and texts; its annotation store holds far more than the rows take); None for
    a Hub dataset."""
    location = sample_workdir() if origin.kind == "sample" else Path(origin.location or "")
    if location.is_file():
        return location.stat().st_size
    if not location.is_dir():
        return None
    return sum(p.stat().st_size for p in location.rglob("*") if p.is_file() and p.suffix != ".sqlite")


@writing()  # the output folder is this build's alone until it returns (vilbias.outputs)
def build(config: BuildConfig) -> dict[str, Any]:
    """Build the dataset folder ``config.output`` from the source ``config`` names; return the build
    report (also written as ``build_report.json``, beside ``build_config.yaml``).

    Raises:
        ValueError: nothing is left to build, or the source cannot be read as asked (nothing is written).
        FileNotFoundError: the source or ``--previous`` does not exist.
        vilbias.outputs.OutputRefused: ``config.output`` holds something a build did not write (nothing is written).
    """
    started = time.perf_counter()
    output = claim_build_output(config.output)  # before the source is read: a refused folder costs nothing
    expect_bytes(output, _source_bytes(config.origin()))
    with contextlib.closing(open_source(config)) as source:
        pinned, previous = previous_cells(config.previous, output)
        with swap_in(output) as repo:
            plan = source.plan(repo.parent / "plan", pinned)
            tally = RationaleTally(exclude_failed=config.exclude_failed_rationales) if "reasoning" in source.features else None
            infos, corpus_bytes = write_rows(source, repo, config.max_shard_size, tally)
            rationales = tally.summary() if tally is not None else None
            kept = sum(1 for uid in plan.rows if uid in pinned)
            card = source.card(repo, infos, config.card_names, changelog(previous, kept), rationales)
            (repo / "README.md").write_text(card, encoding="utf-8")
            report = {
                "warning": rationales["warning"] if rationales else None,
                "vilbias_version": __version__,
                "source": {"kind": source.kind, "name": source.name, **plan.details},
                **plan_figures(plan),
                "configs": {name: {str(s): info.splits[s].num_examples for s in info.splits} for name, info in infos.items()},
                "rationale_check": rationales,
                "previous_release": {"source": previous, "rows": len(pinned), "kept": kept, "dropped": len(pinned) - kept},
                "corpus_bytes": corpus_bytes,
                "seconds": round(time.perf_counter() - started, 2),
            }
            (repo / REPORT).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
            save_config(repo, "build", config)
    logger.info("built %d rows from %s into %s", report["rows"], source.name, output)
    if report.get("warning"):
        logger.warning("%s: %s", output, report["warning"])
    return report


def build_sentences(source: str | Path, output_dir: str | Path, columns: list[str] | None = None,
                    source_split: str | None = None) -> dict[str, Any]:
    """Build a text-only sentence corpus repo from labelled sentences: ``vilbias build --sentences``
    from Python (:func:`build` with ``BuildConfig(sentences=source, output=output_dir)``).

    Args:
        source: a BABE-format CSV or XLSX, a Parquet/JSON/CSV export of the Hub layout, a
            dataset folder, or a Hub dataset id ``ORG/NAME`` (see :mod:`vilbias.corpus.sentences`).
        output_dir: where the repo folder is written (replaced when the build succeeds).
        columns: ``--column FIELD=COLUMN`` pairs for a table whose columns are named otherwise.
        source_split: ``--source-split``: the one split of a dataset whose splits are not train/test.

    Returns:
        The build report (also ``output_dir/build_report.json``); its ``source`` section has the
        rows read, kept, left out and merged, and per split and fold the row count and biased share.
    """
    return build(BuildConfig(sentences=Path(source), output=Path(output_dir), columns=list(columns or []), source_split=source_split))


def write_rows(source: CorpusSource, repo: Path, max_shard_size: str,
               tally: RationaleTally | None = None) -> tuple[dict[str, DatasetInfo], int]:
    """Every planned row once, into its cell's shards, one row group of examples at a time; each
    counted by ``tally`` (which may make its ``sft`` answer the label alone) before it is written.
    Returns the configs' ``DatasetInfo`` and the bytes written (one copy of the corpus).

    Row groups are converted to Arrow here and written by a thread while the next are read
    (:class:`~vilbias.corpus.writer.RepoWriter`'s ``write_ahead``: Parquet writing releases the
    GIL, so the two overlap on two cores). A/B at 8,000 rows, fresh interpreters, one locked run
    each: an import 17.8 -> 15.4 s wall at the same CPU time (24.2 / 24.0 s), a workdir build
    12.3 -> 11.3 s wall (CPU 18.1 / 18.0 s)."""
    writer = RepoWriter(repo, source.features, source.views, max_shard_size=max_shard_size, write_ahead=True)
    batch: list[tuple[CellKey, dict[str, Any]]] = []
    try:
        with tqdm(desc="writing", unit=" rows") as bar:
            for item in source.examples():
                if tally is not None:
                    tally.add(item[1], source.rationale_author(item[1]))
                batch.append(item)
                if len(batch) >= writer.row_group_size:
                    writer.add_rows(batch)
                    bar.update(len(batch))
                    batch.clear()
            if batch:
                writer.add_rows(batch)
                bar.update(len(batch))
        infos = writer.close()
    finally:
        writer.shutdown()  # a stop or an error: no write left running in a folder about to be removed
    return infos, writer.corpus_bytes()


def plan_figures(plan: BuildPlan) -> dict[str, Any]:
    """The report's figures of a plan: rows, labels, shares per config and split, groups, exclusions."""
    stats = row_statistics(plan.rows.values(), plan.split_report)
    labels = Counter(r.label for r in plan.rows.values())
    return {
        "rows": len(plan.rows),
        "label_counts": {name: labels[i] for i, name in enumerate(LABEL_NAMES)},
        "label_share": {f"{r['config']}/{r['split']}": round(r["share"], 4) if r["rows"] else None for r in stats["split_table"]},
        "corpus_biased_share": round(stats["biased_share"], 4),
        # splits with no row (left out of their config, which loads without them) or too few to mean anything
        "empty_splits": stats["empty_splits"],
        "small_splits": {t["name"]: t["note"] for t in stats["small_splits"]},
        "groups": {k: plan.split_report[k] for k in GROUP_KEYS},
        "groups_not_kept_whole": plan.split_report["not_kept_whole"],
        "exclusions": plan.exclusions,
        "exclusion_counts": plan.exclusion_counts,
    }


def changelog(previous: str | None, kept: int) -> str:
    """The card's changelog before publishing: what the build kept of the previous release."""
    if previous:
        return f"Built against the previous release in `{previous}`: its {kept} rows still here kept their split and fold."
    return "First build. `vilbias publish dataset` replaces this section with the rows added, removed and relabelled since the previous release tag."


def format_report(report: dict[str, Any]) -> str:
    """The printed summary of a build report."""
    source = report["source"]
    lines = [f"WARNING: {report['warning']}"] if report.get("warning") else []
    excluded = sum(report["exclusion_counts"].values())
    # the rows written and the rows left out, as parts of one whole: the splits below add up to the first
    lines.append(f"built {report['rows']} rows from {source['name']} in {report['seconds']} s"
                 + (f" ({report['rows']} kept, {excluded} excluded of {report['rows'] + excluded})" if excluded else ""))
    for name, splits in report["configs"].items():
        lines.append(f"  {name:<8} " + "  ".join(f"{s}={n}" for s, n in splits.items()))
    if report.get("empty_splits"):
        lines.append(f"  empty, left out of their config (sft as default): {', '.join(report['empty_splits'])}")
    if report.get("small_splits"):
        lines.append(f"  too small to mean anything (< {MEANINGFUL_ROWS} rows or one label): "
                     + ", ".join(f"{k} ({v})" for k, v in report["small_splits"].items()))
    shares = report["label_share"]
    lines.append(f"  biased share: corpus {report['corpus_biased_share']:.3f}; " + ", ".join(f"{k} {v:.3f}" for k, v in shares.items() if k.startswith("default/") and v is not None))
    g = report["groups"]
    lines.append(f"  groups: {g['groups']} ({g['multi_row_groups']} with several rows, largest {g['largest_group']}); not kept whole: {len(report['groups_not_kept_whole'])}")
    if report["exclusions"]:
        lines.append(f"  excluded {excluded}: " + ", ".join(f"{k} {v}" for k, v in report["exclusion_counts"].items()))
        for e in report["exclusions"][:20]:
            lines.append(f"    {e['unique_id']}: {e['reason']}")
        if len(report["exclusions"]) > 20:
            lines.append(f"    … {len(report['exclusions']) - 20} more in build_report.json")
    if report.get("rationale_check"):
        rc = report["rationale_check"]
        line = f"  rationale check: {rc['passed']} of {rc['rows']} rows pass"
        if rc["by_code"]:
            line += f"; problems: {describe_codes(rc['by_code'])}"
        if rc["exclude_failed"]:
            line += f"; {rc['sft_label_only']} failing rationales kept out of sft (answer = label alone)"
        lines.append(line)
    if source.get("unknown_labels"):
        values = ", ".join(f"{v!r} ({n})" for v, n in source["unknown_labels"].items())
        lines.append(f"  unknown label values: {values}; to take them: {source['label_map_hint']}")
    if source["kind"] == "release":
        lines.append(f"  source licence: {source['license'] or 'unknown (pass --source-license)'}"
                     + (f" (forbids {' and '.join(source['restricted'])}: `vilbias publish dataset` creates the repo private)" if source["restricted"] else ""))
    return "\n".join(lines)
