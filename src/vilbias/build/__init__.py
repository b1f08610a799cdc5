"""``vilbias build``: the Hub-layout dataset folder (DESIGN §4).

    vilbias build                              # the embedded sample -> ./vilbias
    vilbias build --workdir work --output out  # a pipeline workdir
    vilbias build --workdir work --previous ./vilbias-v1.0.0   # keep v1.0.0's splits

The folder is byte-for-byte what ``vilbias publish dataset`` uploads: ``README.md`` (card with
``configs:`` and ``dataset_info:`` YAML), ``data/{split}-NNNNN-of-NNNNN.parquet`` for ``default``,
``fold_K/…`` and ``sft/…`` for the other configs, ``assets/label_by_outlet.png`` and
``build_report.json``. It is written next to the output and swapped in at the end, so a failed or
killed build leaves the previous folder as it was.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

REPORT = "build_report.json"


@dataclass
class BuildConfig:
    """What ``vilbias build`` builds and where."""

    workdir: Path | None = field(
        default=None, metadata={"help": "Pipeline workdir to build from (articles.jsonl, images/, annotations.sqlite, reviews/). Omit to build the embedded sample."}
    )
    output: Path = field(
        default=Path("vilbias"), metadata={"help": "Output folder in Hub layout; `load_dataset(<output>)` loads it. Replaced atomically."}
    )
    sentences: Path | None = field(
        default=None, metadata={"help": "Build a text-only sentence corpus from a BABE-format CSV instead of a workdir."}
    )
    previous: Path | None = field(
        default=None, metadata={"help": "A previous release's folder: its rows keep their split and fold (stability across relabels and late admissions)."}
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
        if self.sentences is not None and not Path(self.sentences).exists():
            raise FileNotFoundError(f"sentence file {self.sentences} does not exist")
        if self.previous is not None and not (Path(self.previous) / "README.md").exists():
            raise FileNotFoundError(f"--previous {self.previous} is not a built dataset folder")
        self.output = Path(self.output)


def read_release_cells(folder: str | os.PathLike) -> dict[str, Any]:
    """``{unique_id: Cell}`` of a built release folder, read from its Parquet ``unique_id``
    columns only (no images are loaded)."""
    import pyarrow.parquet as pq

    from vilbias.build.splits import Cell

    folder = Path(folder)
    split_of: dict[str, str] = {}
    for split in ("train", "validation", "test"):
        for f in sorted((folder / "data").glob(f"{split}-*.parquet")):
            for uid in pq.read_table(f, columns=["unique_id"]).column(0).to_pylist():
                split_of[uid] = split
    fold_of: dict[str, int] = {}
    for k in range(5):
        for f in sorted((folder / f"fold_{k}").glob("test-*.parquet")):
            for uid in pq.read_table(f, columns=["unique_id"]).column(0).to_pylist():
                fold_of[uid] = k
    return {uid: Cell(s, fold_of[uid]) for uid, s in split_of.items() if uid in fold_of}


def _config_specs() -> dict[str, Any]:
    from vilbias.build.writer import ConfigSpec
    from vilbias.loading_script.biascorpus import DEFAULT_FEATURES, SFT_FEATURES

    splits = ("train", "validation", "test")
    specs = {"default": ConfigSpec("data", DEFAULT_FEATURES, splits)}
    specs.update({f"fold_{k}": ConfigSpec(f"fold_{k}", DEFAULT_FEATURES, ("train", "test")) for k in range(5)})
    specs["sft"] = ConfigSpec("sft", SFT_FEATURES, splits)
    return specs


def _write_configs(plan: Any, repo: Path, max_shard_size: str) -> dict[str, Any]:
    """Write every config in one pass over the rows (each article and image read once)."""
    from tqdm.auto import tqdm

    from vilbias.build.writer import RepoWriter
    from vilbias.loading_script.biascorpus import iter_examples

    specs = _config_specs()
    writer = RepoWriter(repo, specs, max_shard_size=max_shard_size)
    batch: list[tuple[Any, dict, dict]] = []

    def flush() -> None:
        # Each row is converted to Arrow once per schema, then sliced into its 7 destinations.
        rows = [r for r, _, _ in batch]
        default = writer.to_table("default", [e for _, e, _ in batch])
        sft = writer.to_table("sft", [s for _, _, s in batch])
        for split in ("train", "validation", "test"):
            idx = [i for i, r in enumerate(rows) if r.split == split]
            if idx:
                writer.add_table("default", split, default.take(idx))
                writer.add_table("sft", split, sft.take(idx))
        for k in range(5):
            test = [i for i, r in enumerate(rows) if r.fold == k]
            train = [i for i, r in enumerate(rows) if r.fold != k]
            if test:
                writer.add_table(f"fold_{k}", "test", default.take(test))
            if train:
                writer.add_table(f"fold_{k}", "train", default.take(train))
        batch.clear()

    for item in tqdm(iter_examples(plan), total=len(plan.rows), desc="writing", unit=" rows"):
        batch.append(item)
        if len(batch) >= writer.row_group_size:
            flush()
    if batch:
        flush()
    return writer.close()


def build(config: BuildConfig) -> dict[str, Any]:
    """Build the dataset folder and return the build report (also written as ``build_report.json``)."""
    if config.sentences is not None:
        from vilbias.build.sentences import build_sentences

        return build_sentences(config.sentences, config.output)

    from huggingface_hub import DatasetCardData

    from vilbias import __version__
    from vilbias.build.card import PLOT_PATH, card_statistics, plot_label_by_outlet, render_card
    from vilbias.build.writer import card_metadata
    from vilbias.loading_script.biascorpus import make_plan

    started = time.perf_counter()
    output = config.output.resolve()
    output.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".vilbias-build-", dir=output.parent))
    try:
        repo = scratch / "repo"
        repo.mkdir()
        pinned = read_release_cells(config.previous) if config.previous else None
        plan_dir = scratch / "plan"
        plan = make_plan(config.workdir, plan_dir, pinned=pinned, num_proc=config.num_proc)
        if not plan.rows:
            raise ValueError(f"nothing to build: every item was excluded ({len(plan.exclusions)} exclusions)")
        infos = _write_configs(plan, repo, config.max_shard_size)

        import sqlite3

        db = sqlite3.connect(plan.resolved)
        automated = {}
        for uid, data in db.execute("SELECT unique_id, data FROM resolved"):
            label = json.loads(data)["label"]
            automated[uid] = None if label is None else ["not_biased", "biased"].index(label)
        db.close()
        stats = card_statistics(plan, automated)
        plot_label_by_outlet(plan, repo / PLOT_PATH)

        card_data = DatasetCardData(
            pretty_name=config.pretty_name,
            license="cc-by-nc-4.0",
            language=["en"],
            task_categories=["image-text-to-text", "image-classification", "text-classification"],
            tags=["media-bias", "multimodal", "news", "rationales", "vilbias"],
            size_categories=[_size_category(len(plan.rows))],
        )
        card_metadata(card_data, _config_specs(), infos)
        is_sample = config.workdir is None
        changelog = (
            f"Built against the previous release in `{config.previous}`: its {len(pinned)} rows kept their split and fold."
            if pinned
            else "First build. `vilbias publish dataset` replaces this section with the rows added, removed and relabelled since the previous release tag."
        )
        card = render_card(
            card_data, stats, repo_id=config.repo_id, version=config.version, changelog=changelog,
            is_sample=is_sample, pretty_name=config.pretty_name,
        )
        (repo / "README.md").write_text(str(card), encoding="utf-8")

        report = {
            "vilbias_version": __version__,
            "source": "embedded sample" if is_sample else str(config.workdir),
            "rows": len(plan.rows),
            "configs": {name: {str(s): info.splits[s].num_examples for s in info.splits} for name, info in infos.items()},
            "label_share": {
                f"{r['config']}/{r['split']}": round(r["share"], 4) for r in stats["split_table"]
            },
            "corpus_biased_share": round(stats["biased_share"], 4),
            "groups": {k: plan.split_report[k] for k in ("groups", "multi_row_groups", "largest_group", "rows_linked_by", "pinned")},
            "groups_not_kept_whole": plan.split_report["not_kept_whole"],
            "annotation": plan.annotation,
            "flagged_for_review": len(plan.flagged),
            "exclusions": plan.exclusions,
            "exclusion_counts": _count_reasons(plan.exclusions),
            "seconds": round(time.perf_counter() - started, 2),
        }
        (repo / REPORT).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")

        # Swap in: the old folder is kept until the new one is in place.
        old = None
        if output.exists():
            old = scratch / "previous-output"
            os.replace(output, old)
        os.replace(repo, output)
        return report
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _count_reasons(exclusions: list[dict[str, str]]) -> dict[str, int]:
    from collections import Counter

    return dict(Counter(e["reason"].split(":")[0] if not e["reason"].startswith("invalid_image") else "invalid_image:" + e["reason"].split(":")[1] for e in exclusions))


def _size_category(n: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if n < limit:
            return name
    return "n>1M"


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
        lines.append(f"  excluded {len(report['exclusions'])}: " + ", ".join(f"{k} {v}" for k, v in report["exclusion_counts"].items()))
        for e in report["exclusions"][:20]:
            lines.append(f"    {e['unique_id']}: {e['reason']}")
        if len(report["exclusions"]) > 20:
            lines.append(f"    … {len(report['exclusions']) - 20} more in build_report.json")
    return "\n".join(lines)
