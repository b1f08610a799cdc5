"""BiasCorpus as a ``datasets`` builder: features, configs and split generation in one place.

``load_dataset`` no longer runs loading scripts (datasets ≥ 4), so this builder is not uploaded;
``vilbias build`` runs it to write the Parquet repository that *is* uploaded. It is also usable
directly from Python::

    from vilbias.loading_script.biascorpus import BiasCorpus

    builder = BiasCorpus(config_name="fold_3", workdir="work")   # workdir=None: the embedded sample
    builder.download_and_prepare()
    ds = builder.as_dataset()

Configs: ``default`` (train/validation/test), ``fold_0`` … ``fold_4`` (train/test) and ``sft``
(TRL's vision conversational format, same membership as ``default``). Split assignment is
:func:`vilbias.build.splits.assign_splits`; the plan (which rows, which labels, which cells) is
computed once per source and shared by all configs.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import datasets
from tqdm.auto import tqdm

from vilbias import LABEL_NAMES, QUESTION
from vilbias.annotate.store import PROMPTS, ActiveAnnotator, AnnotationStore, CallKey
from vilbias.annotate.voting import VoteResult, hierarchical_vote
from vilbias.build.splits import (
    N_FOLDS,
    SPLIT_SHARES,
    Cell,
    SplitItem,
    assign_splits,
    story_keys,
)
from vilbias.images import InvalidImage, validate_image
from vilbias.review.verdicts import load_verdicts, resolve_review
from vilbias.workdir import ANNOTATIONS, read_articles, read_jsonl

logger = logging.getLogger(__name__)

_DESCRIPTION = (
    "BiasCorpus: news article-image pairs labelled biased / not biased by LLM annotators with "
    "hierarchical majority voting and human review, each with a rationale."
)
_HOMEPAGE = "https://huggingface.co/datasets/vilbias/BiasCorpus"
_LICENSE = "cc-by-nc-4.0"

SFT_ARTICLE_WORDS = 300
"""Article text in the ``sft`` prompt is cut to its first 300 words (≈400 tokens) at a word
boundary, marked with " […]", so a VLM prompt with image tokens stays within a few thousand."""
ANSWER_LABELS = {0: "not biased", 1: "biased"}

_BALLOT = {"annotator": datasets.Value("string"), "sample": datasets.Value("int32"), "label": datasets.Value("string")}

DEFAULT_FEATURES = datasets.Features(
    {
        "unique_id": datasets.Value("string"),
        "outlet": datasets.Value("string"),
        "headline": datasets.Value("string"),
        "article_text": datasets.Value("string"),
        "url": datasets.Value("string"),
        "published": datasets.Value("string"),
        "image": datasets.Image(),
        "image_url": datasets.Value("string"),
        "image_caption": datasets.Value("string"),
        "text_label": datasets.ClassLabel(names=LABEL_NAMES),
        "multimodal_label": datasets.ClassLabel(names=LABEL_NAMES),
        "reasoning": datasets.Value("string"),
        "techniques": datasets.List(datasets.Value("string")),
        "votes": datasets.List(_BALLOT),
        "text_votes": datasets.List(_BALLOT),
        "agreement": datasets.Value("float32"),
        "review": datasets.Value("string"),
    }
)
_CONTENT = {"type": datasets.Value("string"), "text": datasets.Value("string")}
SFT_FEATURES = datasets.Features(
    {
        "messages": datasets.List({"role": datasets.Value("string"), "content": datasets.List(_CONTENT)}),
        "images": datasets.List(datasets.Image()),
        "unique_id": datasets.Value("string"),
        "multimodal_label": datasets.ClassLabel(names=LABEL_NAMES),
    }
)


def sample_workdir() -> Path:
    """The embedded sample shipped inside the package (a small annotated workdir)."""
    from importlib.resources import files

    return Path(str(files("vilbias.sample")))


# -- the plan: which rows, with which labels, in which cells ----------------------------------


@dataclass
class PlanRow:
    unique_id: str
    label: int
    text_label: int
    review: str
    outlet: str
    agreement: float | None
    image_path: str
    image_ext: str
    split: str = ""
    fold: int = -1


@dataclass
class Plan:
    """What the build decided, shared by every config. Written to ``plan.json`` in ``plan_dir``."""

    workdir: str
    store: str
    resolved: str
    rows: dict[str, PlanRow] = field(default_factory=dict)
    exclusions: list[dict[str, str]] = field(default_factory=list)
    flagged: dict[str, str] = field(default_factory=dict)
    split_report: dict[str, Any] = field(default_factory=dict)
    annotation: dict[str, Any] = field(default_factory=dict)

    def save(self, path: Path) -> None:
        path.write_text(json.dumps({**asdict(self), "rows": [asdict(r) for r in self.rows.values()]}))

    @classmethod
    def load(cls, path: Path) -> Plan:
        d = json.loads(path.read_text())
        rows = {r["unique_id"]: PlanRow(**r) for r in d.pop("rows")}
        return cls(**d, rows=rows)


def _import_sample_annotations(jsonl: Path, store_path: Path) -> None:
    """Load a JSONL export of calls (the embedded sample's format) into a fresh store."""
    order: dict[str, list[str]] = {p: [] for p in PROMPTS}
    samples: dict[str, int] = dict.fromkeys(PROMPTS, 0)
    with AnnotationStore(store_path) as store:
        for r in read_jsonl(jsonl):
            prompt = r["prompt"]
            if r["annotator"] not in order[prompt]:
                order[prompt].append(r["annotator"])
            samples[prompt] = max(samples[prompt], int(r["sample"]) + 1)
            store.record_call(
                CallKey(r["item_id"], prompt, r["annotator"], "sample", int(r["sample"]), "sample"),
                model=r.get("model", r["annotator"]), raw=r.get("raw", ""), label=r.get("label"), tone=r.get("tone"),
                techniques=r.get("techniques") or {}, rationale=r.get("rationale", ""),
            )
        for prompt, names in order.items():
            if names:
                store.set_active(prompt, "sample", [ActiveAnnotator(n, "sample") for n in names], samples[prompt])


def _resolution(mm: VoteResult, text: VoteResult, votes: dict[str, list]) -> dict[str, Any]:
    fallback = {}
    for v in votes.get("multimodal", []):
        if v.label and v.rationale.strip():
            fallback.setdefault(v.label, v.rationale)
    return {
        "label": mm.label,
        "flag_reason": mm.reason,
        "text_label": text.label,
        "reasoning": mm.rationale,
        "fallback_reasoning": fallback,
        "techniques": mm.techniques,
        "votes": [v.ballot() for v in sorted(votes.get("multimodal", []), key=lambda v: (v.annotator, v.sample))],
        "text_votes": [v.ballot() for v in sorted(votes.get("text", []), key=lambda v: (v.annotator, v.sample))],
        "agreement": mm.agreement,
        "annotator_labels": mm.annotator_labels,
    }


def _check_image(args: tuple[str, str]) -> tuple[str, str | None, int | None, str | None, str]:
    """Worker: ``(unique_id, path)`` -> ``(unique_id, sha256, phash, ext, error)``."""
    unique_id, path = args
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        return unique_id, None, None, None, f"unreadable: {e.strerror or e}"
    try:
        info = validate_image(data)
    except InvalidImage as e:
        return unique_id, None, None, None, str(e)
    return unique_id, info.sha256, info.phash, info.ext, ""


def make_plan(
    workdir: str | os.PathLike | None,
    plan_dir: str | os.PathLike,
    *,
    pinned: dict[str, Cell] | None = None,
    num_proc: int | None = None,
) -> Plan:
    """Resolve votes and reviews, validate images and assign cells for every article.

    Memory stays flat in corpus size apart from one small :class:`PlanRow` per row: votes are
    streamed from the store and their resolution parked in ``plan_dir/resolved.sqlite``.
    """
    workdir = Path(workdir) if workdir else sample_workdir()
    plan_dir = Path(plan_dir)
    plan_dir.mkdir(parents=True, exist_ok=True)
    store_path = workdir / ANNOTATIONS
    if not store_path.exists():
        store_path = plan_dir / ANNOTATIONS
        store_path.unlink(missing_ok=True)
        jsonl = workdir / "annotations.jsonl"
        if not jsonl.exists():
            raise FileNotFoundError(
                f"{workdir} has no {ANNOTATIONS}: run `vilbias annotate --workdir {workdir}` first"
            )
        _import_sample_annotations(jsonl, store_path)

    resolved_path = plan_dir / "resolved.sqlite"
    resolved_path.unlink(missing_ok=True)
    db = sqlite3.connect(resolved_path)
    db.execute("CREATE TABLE resolved(unique_id TEXT PRIMARY KEY, data TEXT NOT NULL)")
    annotated = flagged_n = 0
    with AnnotationStore(store_path) as store:
        active = store.active()
        batch = []
        for item_id, votes in tqdm(store.iter_votes(), desc="votes", unit=" items", leave=False):
            mm = hierarchical_vote(votes.get("multimodal", []), [a.name for a in active.get("multimodal", {}).get("annotators", [])] or None)
            tv = hierarchical_vote(votes.get("text", []), [a.name for a in active.get("text", {}).get("annotators", [])] or None)
            batch.append((item_id, json.dumps(_resolution(mm, tv, votes))))
            annotated += 1
            flagged_n += mm.flagged
            if len(batch) >= 1000:
                db.executemany("INSERT OR REPLACE INTO resolved VALUES(?,?)", batch)
                batch.clear()
        db.executemany("INSERT OR REPLACE INTO resolved VALUES(?,?)", batch)
    db.commit()

    plan = Plan(workdir=str(workdir), store=str(store_path), resolved=str(resolved_path))
    plan.annotation = {
        "annotators": {p: [a.name for a in cfg["annotators"]] for p, cfg in active.items()},
        "samples": {p: cfg["samples"] for p, cfg in active.items()},
        "prompt_versions": {p: cfg["prompt_version"] for p, cfg in active.items()},
        "items_annotated": annotated,
        "items_flagged": flagged_n,
    }
    verdicts = load_verdicts(workdir)
    candidates: list[tuple[str, str]] = []
    meta: dict[str, tuple] = {}
    for art in read_articles(workdir):
        row = db.execute("SELECT data FROM resolved WHERE unique_id=?", (art.unique_id,)).fetchone()
        if row is None:
            plan.exclusions.append({"unique_id": art.unique_id, "reason": "not_annotated"})
            continue
        res = json.loads(row[0])
        review, label = resolve_review(verdicts.get(art.unique_id, []), res["label"])
        if label is None:
            plan.flagged[art.unique_id] = res["flag_reason"] or "no_majority"
            plan.exclusions.append({"unique_id": art.unique_id, "reason": f"flagged_for_review:{res['flag_reason'] or 'no_majority'}"})
            continue
        text_label = LABEL_NAMES.index(res["text_label"]) if res["text_label"] else -1
        meta[art.unique_id] = (
            LABEL_NAMES.index(label), text_label, review, art.outlet, res["agreement"], art.image_path,
            art.fetched_at, story_keys(art.url, art.headline),
        )
        candidates.append((art.unique_id, str(workdir / art.image_path)))
    db.close()

    split_items = []
    if num_proc is None:
        num_proc = min(os.cpu_count() or 1, 8) if len(candidates) > 2000 else 1
    with ProcessPoolExecutor(num_proc) if num_proc > 1 else contextlib.nullcontext() as pool:
        results = pool.map(_check_image, candidates, chunksize=256) if pool else map(_check_image, candidates)
        for uid, sha, phash, ext, error in tqdm(results, total=len(candidates), desc="images", unit=" img", leave=False):
            if error:
                plan.exclusions.append({"unique_id": uid, "reason": f"invalid_image:{error}"})
                continue
            label, text_label, review, outlet, agreement, image_path, order, stories = meta.pop(uid)
            plan.rows[uid] = PlanRow(uid, label, text_label, review, outlet, agreement, image_path, ext)
            split_items.append(SplitItem(uid, label, order, sha, phash, stories))

    cells, report = assign_splits(split_items, pinned=pinned)
    for uid, cell in cells.items():
        plan.rows[uid].split, plan.rows[uid].fold = cell.split, cell.fold
    plan.split_report = asdict(report)
    plan.save(plan_dir / "plan.json")
    return plan


# -- examples ---------------------------------------------------------------------------------


def truncate_words(text: str, budget: int = SFT_ARTICLE_WORDS) -> str:
    words = text.split()
    if len(words) <= budget:
        return text.strip()
    return " ".join(words[:budget]) + " […]"


def sft_prompt(headline: str, article_text: str) -> str:
    """The user turn's text: headline, article (cut to :data:`SFT_ARTICLE_WORDS`), question."""
    return f"Headline: {headline}\n\nArticle: {truncate_words(article_text)}\n\n{QUESTION}"


def sft_answer(label: int, reasoning: str) -> str:
    return f"Label: {ANSWER_LABELS[label]}\nReasoning: {reasoning.strip()}"


def sft_messages(headline: str, article_text: str, label: int | None = None, reasoning: str = "") -> list[dict]:
    """Conversation in TRL's vision format; without ``label`` it is the prompt alone."""
    messages = [
        {"role": "user", "content": [{"type": "image", "text": None}, {"type": "text", "text": sft_prompt(headline, article_text)}]}
    ]
    if label is not None:
        messages.append({"role": "assistant", "content": [{"type": "text", "text": sft_answer(label, reasoning)}]})
    return messages


@dataclass
class BiasCorpusConfig(datasets.BuilderConfig):
    """A BiasCorpus view. ``workdir=None`` builds the embedded sample."""

    workdir: str | None = None
    plan_dir: str | None = None
    """Where a plan computed by :func:`make_plan` lives; computed on first use when unset."""
    kind: str = "default"
    fold: int = -1


class BiasCorpus(datasets.GeneratorBasedBuilder):
    """BiasCorpus: multimodal news bias with rationales."""

    VERSION = datasets.Version("1.0.0")
    BUILDER_CONFIG_CLASS = BiasCorpusConfig
    BUILDER_CONFIGS = [
        BiasCorpusConfig(name="default", description="Train/validation/test (80/10/10), one row per article-image pair."),
        *[
            BiasCorpusConfig(name=f"fold_{k}", kind="fold", fold=k, description=f"Cross-validation fold {k}: test = fold {k}, train = the other four.")
            for k in range(N_FOLDS)
        ],
        BiasCorpusConfig(name="sft", kind="sft", description="TRL vision conversational format; same membership as default."),
    ]
    DEFAULT_CONFIG_NAME = "default"
    # Image rows are ~100 KB: small row groups keep memory flat and suit the dataset viewer.
    DEFAULT_WRITER_BATCH_SIZE = 100

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description=_DESCRIPTION,
            features=SFT_FEATURES if self.config.kind == "sft" else DEFAULT_FEATURES,
            homepage=_HOMEPAGE,
            license=_LICENSE,
        )

    def _plan(self) -> Plan:
        if getattr(self, "_cached_plan", None) is None:
            if self.config.plan_dir and (Path(self.config.plan_dir) / "plan.json").exists():
                self._cached_plan = Plan.load(Path(self.config.plan_dir) / "plan.json")
            else:
                plan_dir = self.config.plan_dir or tempfile.mkdtemp(prefix="vilbias-plan-")
                self._cached_plan = make_plan(self.config.workdir, plan_dir)
        return self._cached_plan

    def _split_generators(self, dl_manager: datasets.DownloadManager) -> list[datasets.SplitGenerator]:
        if self.config.kind == "fold":
            fold = self.config.fold
            return [
                datasets.SplitGenerator(name=datasets.Split.TRAIN, gen_kwargs={"keep": lambda r, f=fold: r.fold != f}),
                datasets.SplitGenerator(name=datasets.Split.TEST, gen_kwargs={"keep": lambda r, f=fold: r.fold == f}),
            ]
        return [
            datasets.SplitGenerator(name=name, gen_kwargs={"keep": lambda r, s=split: r.split == s})
            for name, split in ((datasets.Split.TRAIN, "train"), (datasets.Split.VALIDATION, "validation"), (datasets.Split.TEST, "test"))
        ]

    def _generate_examples(self, keep):
        sft = self.config.kind == "sft"
        for row, example, sft_example in iter_examples(self._plan(), keep):
            yield row.unique_id, sft_example if sft else example


def iter_examples(plan: Plan, keep=None):
    """Yield ``(PlanRow, default example, sft example)`` for every planned row, in ingestion
    order, reading each article, its resolved annotation and its image once."""
    workdir = Path(plan.workdir)
    db = sqlite3.connect(plan.resolved)
    try:
        for art in read_articles(workdir):
            row = plan.rows.get(art.unique_id)
            if row is None or (keep is not None and not keep(row)):
                continue
            res = json.loads(db.execute("SELECT data FROM resolved WHERE unique_id=?", (art.unique_id,)).fetchone()[0])
            reasoning = res["reasoning"]
            if res["label"] != LABEL_NAMES[row.label]:
                # A reviewer overturned or settled the label: the annotators' majority
                # rationale argues for the other label, so take one that argues for this one.
                reasoning = res["fallback_reasoning"].get(LABEL_NAMES[row.label], "")
            image = {"bytes": (workdir / row.image_path).read_bytes(), "path": Path(row.image_path).name}
            example = {
                "unique_id": art.unique_id,
                "outlet": art.outlet,
                "headline": art.headline,
                "article_text": art.article_text,
                "url": art.url,
                "published": art.published,
                "image": image,
                "image_url": art.image_url,
                "image_caption": art.image_caption,
                "text_label": row.text_label,
                "multimodal_label": row.label,
                "reasoning": reasoning,
                "techniques": res["techniques"],
                "votes": res["votes"],
                "text_votes": res["text_votes"],
                "agreement": row.agreement,
                "review": row.review,
            }
            sft_example = {
                "messages": sft_messages(art.headline, art.article_text, row.label, reasoning),
                "images": [image],
                "unique_id": art.unique_id,
                "multimodal_label": row.label,
            }
            yield row, example, sft_example
    finally:
        db.close()


__all__ = ["BiasCorpus", "BiasCorpusConfig", "DEFAULT_FEATURES", "SFT_FEATURES", "Plan", "make_plan", "iter_examples", "sample_workdir", "sft_messages", "SPLIT_SHARES"]
