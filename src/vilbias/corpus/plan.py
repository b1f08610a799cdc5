"""A workdir as a build's source: which articles become rows, with which labels, in which split and fold.

:class:`WorkdirSource` is the workdir (or the embedded sample) as one of the build's sources
(:class:`~vilbias.corpus.protocol.CorpusSource`). :func:`make_plan` reads a workdir — votes from ``annotations.sqlite``, verdicts from ``reviews/``,
images from ``images/`` — and decides every row once for all configs. Memory stays flat in
corpus size apart from one small :class:`~vilbias.loading_script.biascorpus.PlanRow` per row
(and, while articles are admitted, one small tuple per annotated item: what admission needs of its
votes and reviews): votes are streamed from the store, settled with their reviews and parked in
``plan_dir/resolved.sqlite``, which :func:`~vilbias.loading_script.biascorpus.iter_examples`
reads back when rows are written.
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any

from datasets import DatasetInfo, Features
from huggingface_hub import DatasetCardData
from tqdm.auto import tqdm

from vilbias.annotate.specs import checkpoint_identity
from vilbias.annotate.store import PROMPTS, ActiveAnnotator, AnnotationStore, CallKey
from vilbias.annotate.voting import OTHER_LANGUAGE, VoteResult, hierarchical_vote
from vilbias.corpus.card import (
    PLOT_PATH,
    card_statistics,
    plot_label_by_outlet,
    render_card,
    row_languages,
    size_category,
)
from vilbias.corpus.config import CardNames
from vilbias.corpus.protocol import BuildPlan, CellKey
from vilbias.corpus.splits import Cell, SplitItem, assign_splits, story_keys
from vilbias.corpus.writer import ConfigView, card_metadata, corpus_views
from vilbias.images import InvalidImage, validate_image
from vilbias.languages import item_language
from vilbias.loading_script.biascorpus import (
    Plan,
    PlanRow,
    Resolutions,
    features,
    iter_examples,
)
from vilbias.loading_script.schema import DEFAULT, SFT, WORKDIR
from vilbias.review.outcome import AgreementTally, final_agreement, judged_labels, label_prompt
from vilbias.review.verdicts import (
    load_verdicts,
    review_outcome,
    settle_rationale,
    settle_techniques,
)
from vilbias.task import LABEL_NAMES
from vilbias.workdir import ANNOTATIONS, read_articles, read_jsonl, sample_workdir

SAMPLE_ANNOTATIONS = "annotations.jsonl"
"""A workdir may ship its calls as JSONL instead of a store (the embedded sample does)."""


class WorkdirSource:
    """A pipeline workdir, or the embedded sample (``workdir=None``), as a build's source."""

    @property
    def features(self) -> Features:
        return features(WORKDIR)

    @property
    def views(self) -> dict[str, ConfigView]:
        return corpus_views(features(WORKDIR, DEFAULT), features(WORKDIR, SFT))

    def __init__(self, workdir: str | os.PathLike | None, *, num_proc: int | None = None):
        self.workdir = Path(workdir) if workdir else None
        self.kind = "workdir" if workdir else "sample"
        self.name = str(workdir) if workdir else "embedded sample"
        self.num_proc = num_proc
        self._plan: Plan | None = None
        self._authors: dict[str, str | None] = {}

    def plan(self, scratch: Path, pinned: Mapping[str, Cell]) -> BuildPlan:
        plan = self._plan = make_plan(self.workdir, scratch, pinned=dict(pinned), num_proc=self.num_proc)
        if not plan.rows:
            reasons = Counter(e["reason"] for e in plan.exclusions).most_common(3)
            raise ValueError(f"nothing to build: every item was excluded ({len(plan.exclusions)} exclusions: "
                             + ", ".join(f"{n} {r}" for r, n in reasons) + ")")
        return BuildPlan(plan.rows, plan.split_report, plan.exclusions, count_reasons(plan.exclusions),
                         {"annotation": plan.annotation, "flagged_for_review": len(plan.flagged), "review": plan.review})

    def examples(self) -> Iterator[tuple[CellKey, dict[str, Any]]]:
        for row, example in iter_examples(self._plan, authors=self._authors):
            yield (row.split, row.fold), example

    def rationale_author(self, example: dict[str, Any]) -> str | None:
        return self._authors.pop(example["unique_id"], None)

    def card(self, repo: Path, infos: dict[str, DatasetInfo], names: CardNames, changelog: str,
             rationales: dict[str, Any] | None) -> str:
        plan = self._plan
        stats = card_statistics(plan)
        plot_label_by_outlet(plan.rows.values(), repo / PLOT_PATH)
        card_data = DatasetCardData(
            pretty_name=names.pretty_name,
            license="cc-by-nc-4.0",
            language=row_languages(plan.rows.values()),
            task_categories=["image-text-to-text", "image-classification", "text-classification"],
            tags=["media-bias", "multimodal", "news", "rationales", "vilbias"],
            size_categories=[size_category(len(plan.rows))],
        )
        card_metadata(card_data, self.views, infos, list(self.features))
        return str(render_card(card_data, stats, names=names, changelog=changelog, is_sample=self.workdir is None,
                               rationales=rationales))

    def close(self) -> None:
        """Nothing to release: the plan's files live in the build's scratch folder."""


def count_reasons(exclusions: list[dict[str, str]]) -> dict[str, int]:
    """Exclusions per reason (a review flag's reason and an image's own error folded into their
    kind; an unread language kept: ``other_language:de``)."""
    return dict(Counter(e["reason"].split(":")[0] if not e["reason"].startswith(("invalid_image", OTHER_LANGUAGE))
                        else ":".join(e["reason"].split(":")[:2]) for e in exclusions))


def make_plan(
    workdir: str | os.PathLike | None,
    plan_dir: str | os.PathLike,
    *,
    pinned: dict[str, Cell] | None = None,
    num_proc: int | None = None,
) -> Plan:
    """Resolve votes and reviews, validate images and assign a cell to every article.

    Args:
        workdir: The pipeline workdir; None for the embedded sample.
        plan_dir: Scratch folder for ``plan.json`` and ``resolved.sqlite``.
        pinned: ``{unique_id: Cell}`` of a previous release; those rows keep their cells.
        num_proc: Processes for image validation (default: all cores above 2,000 images).
    """
    workdir = Path(workdir) if workdir else sample_workdir()
    plan_dir = Path(plan_dir)
    plan_dir.mkdir(parents=True, exist_ok=True)
    store_path = _annotation_store(workdir, plan_dir)
    resolved_path = plan_dir / "resolved.sqlite"
    plan = Plan(workdir=str(workdir), store=str(store_path), resolved=str(resolved_path))
    plan.annotation, admission = _resolve_votes(store_path, resolved_path, load_verdicts(workdir))
    candidates, meta = _admit_articles(workdir, plan, admission)
    del admission  # not held while images are checked
    split_items = _check_images(candidates, meta, plan, num_proc)
    cells, report = assign_splits(split_items, pinned=pinned)
    for uid, cell in cells.items():
        plan.rows[uid].split, plan.rows[uid].fold = cell.split, cell.fold
    plan.split_report = asdict(report)
    plan.save(plan_dir / "plan.json")
    return plan


def _annotation_store(workdir: Path, plan_dir: Path) -> Path:
    """The workdir's store, or one imported into ``plan_dir`` from its JSONL export."""
    store_path = workdir / ANNOTATIONS
    if store_path.exists():
        return store_path
    jsonl = workdir / SAMPLE_ANNOTATIONS
    if not jsonl.exists():
        raise FileNotFoundError(f"{workdir} has no {ANNOTATIONS}: run `vilbias annotate --workdir {workdir}` first")
    store_path = plan_dir / ANNOTATIONS
    store_path.unlink(missing_ok=True)
    _import_annotations(jsonl, store_path)
    return store_path


def _import_annotations(jsonl: Path, store_path: Path) -> None:
    """Load a JSONL export of calls into a fresh store."""
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
                status=r.get("status"), problem=r.get("problem"),
            )
        for prompt, names in order.items():
            if names:
                store.set_active(prompt, "sample", [ActiveAnnotator(n, "sample") for n in names], samples[prompt])


def _resolution(mm: VoteResult, text: VoteResult, votes: dict[str, list], label_from: str = "multimodal") -> dict[str, Any]:
    """An item's settled votes: the row's label, rationale and techniques from the ``label_from``
    prompt's vote (``multimodal``; ``text`` when no vision annotator took part)."""
    chosen = mm if label_from == "multimodal" else text
    return {
        "label": chosen.label,
        "label_source": label_from,
        "flag_reason": chosen.reason,
        "text_label": text.label,
        "reasoning": chosen.rationale,
        "rationale_from": chosen.rationale_from,
        "techniques": chosen.techniques,
        "votes": [v.ballot() for v in sorted(votes.get("multimodal", []), key=lambda v: (v.annotator, v.sample))],
        "text_votes": [v.ballot() for v in sorted(votes.get("text", []), key=lambda v: (v.annotator, v.sample))],
        "agreement": chosen.agreement,
        "annotator_labels": chosen.annotator_labels,
        # every prompt's, for the annotators' agreement with the final label (card and review stats alike)
        "prompt_annotator_labels": {"text": judged_labels(text, votes.get("text", [])),
                                    "multimodal": judged_labels(mm, votes.get("multimodal", []))},
    }


Admission = tuple[str | None, str | None, str, str | None, int, str, float | None, dict[str, dict[str, str | None]]]
"""What :func:`_admit_articles` needs of an item's settled votes and reviews: its automated label,
final label, review, flag reason, text label (index, -1 for none), label source, agreement with the
final label and ``prompt_annotator_labels``."""


def _resolve_votes(store_path: Path, resolved_path: Path,
                   verdicts: Mapping[str, list[Any]]) -> tuple[dict[str, Any], dict[str, Admission]]:
    """Run the hierarchical vote for every annotated item and settle its reviews (``verdicts``)
    into ``resolved.sqlite``; return the annotation summary the card states and each item's
    :data:`Admission`.

    An item is settled here, where its resolution is in hand, and written once: admission used to
    read every resolution back from ``resolved.sqlite``, parse its JSON and write the settled one
    again (~0.7 s of CPU at 8,000 rows). The admissions kept in memory are small: their
    ``prompt_annotator_labels`` are shared between the items that have the same ones."""
    resolved_path.unlink(missing_ok=True)
    resolutions = Resolutions(resolved_path)
    annotated = flagged = 0
    reasons: Counter[str] = Counter()
    admission: dict[str, Admission] = {}
    shared: dict[tuple, dict[str, dict[str, str | None]]] = {}
    with AnnotationStore(store_path) as store:
        active = store.active()
        label_from = label_prompt(active)
        names = {p: [a.name for a in cfg["annotators"]] or None for p, cfg in active.items()}
        batch = []
        for item_id, votes in tqdm(store.iter_votes(), desc="votes", unit=" items", leave=False):
            mm = hierarchical_vote(votes.get("multimodal", []), names.get("multimodal"))
            tv = hierarchical_vote(votes.get("text", []), names.get("text"))
            res = _resolution(mm, tv, votes, label_from)
            admission[item_id] = _admission(res, verdicts.get(item_id, []), shared)
            batch.append((item_id, res))
            annotated += 1
            flagged += res["label"] is None
            reasons[res["flag_reason"] or "decided"] += 1
            if len(batch) >= 1000:
                resolutions.put_all(batch)
                batch.clear()
        resolutions.put_all(batch)
        calls = {p: Counter() for p in active}
        for (prompt, _), counts in store.call_counts().items():
            calls[prompt].update(counts)
        structured = {name: mode["mode"] for name, mode in store.structured_output().items()}
        models = annotator_models(store, active)
    resolutions.close()
    return {
        "flag_reasons": {k: v for k, v in reasons.items() if k != "decided"},
        "calls": {p: dict(c) for p, c in calls.items()},
        "structured_output": structured,
        "annotators": {p: [a.name for a in cfg["annotators"]] for p, cfg in active.items()},
        "annotator_models": models,
        "samples": {p: _samples(cfg) for p, cfg in active.items()},
        "prompt_versions": {p: cfg["prompt_version"] for p, cfg in active.items()},
        "items_annotated": annotated,
        "items_flagged": flagged,
        "label_prompt": label_from,
    }, admission


def _admission(res: dict[str, Any], verdicts: list[Any], shared: dict[tuple, dict[str, dict[str, str | None]]]) -> Admission:
    """An item's :data:`Admission`; its resolution ``res`` settled with its reviews in place when
    review leaves it a label (the rows the build may write), as admission did."""
    outcome = review_outcome(verdicts, res["label"])
    label = outcome.label
    if label is not None:
        _settle_review(res, outcome)
    labels = res.get("prompt_annotator_labels") or {}
    labels = shared.setdefault(tuple((p, tuple(d.items())) for p, d in labels.items()), labels)
    text_label = LABEL_NAMES.index(res["text_label"]) if res["text_label"] else -1
    ballots = res["votes"] if res.get("label_source", "multimodal") == "multimodal" else res["text_votes"]
    agreement = final_agreement((b["label"] for b in ballots), label) if label is not None else None
    return (res["label"], label, outcome.review, res["flag_reason"], text_label, res.get("label_source", "multimodal"),
            agreement, labels)


def annotator_models(store: AnnotationStore, active: dict[str, Any]) -> dict[str, dict[str, str]]:
    """annotator -> the model it ran (as its spec named it) and that model's identity
    (:func:`vilbias.annotate.specs.checkpoint_identity`: a local checkpoint by its files, wherever
    it lies). ``vilbias evaluate`` compares a scored model's identity with these, to flag a model
    scored on labels it made itself."""
    out = {}
    for cfg in active.values():
        for a in cfg["annotators"]:
            found = store.query("SELECT model FROM calls WHERE annotator=? AND fingerprint=? LIMIT 1", (a.name, a.fingerprint))
            if not found or not found[0][0]:
                continue
            model = found[0][0]
            try:
                identity = checkpoint_identity(model, None)
            except (FileNotFoundError, OSError):  # the folder has moved since: its name is all there is
                identity = model
            out[a.name] = {"model": model, "identity": identity}
    return out


def _samples(cfg: dict[str, Any]) -> int | str:
    """Samples per annotator of one prompt: K, or each annotator's own where they differ (a
    deterministic model is asked one)."""
    own = {a.name: a.samples_of(cfg["samples"]) for a in cfg["annotators"]}
    if len(set(own.values())) <= 1:
        return next(iter(own.values()), cfg["samples"])
    return ", ".join(f"{name} {k}" for name, k in own.items())


def _admit_articles(workdir: Path, plan: Plan, admission: Mapping[str, Admission]) -> tuple[list[tuple[str, str]], dict[str, tuple]]:
    """Articles with a decided label (after review); the others are excluded with a reason.

    Every annotated article also adds to the review's κ and the annotators' agreement with the
    final label (``plan.review``, what the card states), the same computation as ``vilbias
    review stats``; a row's ``agreement`` is the share of its label prompt's votes for its final
    label (:func:`~vilbias.review.outcome.final_agreement`).
    """
    tally = AgreementTally()
    candidates: list[tuple[str, str]] = []
    meta: dict[str, tuple] = {}
    for art in read_articles(workdir):
        found = admission.get(art.unique_id)
        if found is None:
            plan.exclusions.append({"unique_id": art.unique_id, "reason": "not_annotated"})
            continue
        automated, label, review, flag_reason, text_label, label_source, agreement, annotator_labels = found
        tally.add(automated, label, review != "unreviewed", annotator_labels)
        language = art.language or item_language(art.headline, art.article_text)
        if label is None and flag_reason == OTHER_LANGUAGE:
            # No annotator reads the article's language: every one abstained. Not a question
            # for review unless a reviewer labels it (then it is admitted above).
            plan.exclusions.append({"unique_id": art.unique_id, "reason": f"{OTHER_LANGUAGE}:{language or 'unknown'}"})
            continue
        if label is None:
            reason = flag_reason or "no_majority"
            plan.flagged[art.unique_id] = reason
            plan.exclusions.append({"unique_id": art.unique_id, "reason": f"flagged_for_review:{reason}"})
            continue
        # a label the review set or overturned is the reviewers'; otherwise the vote's prompt's
        source = "review" if label != automated else label_source
        meta[art.unique_id] = (
            LABEL_NAMES.index(label), text_label, review, art.outlet, agreement, art.image_path,
            art.fetched_at, story_keys(art.url, art.headline), source, language,
        )
        candidates.append((art.unique_id, str(workdir / art.image_path)))
    plan.review = tally.result()
    return candidates, meta


def _settle_review(res: dict[str, Any], outcome: Any) -> dict[str, Any]:
    """The resolution with what the reviews put into the row (rationale, techniques, review columns)."""
    reasoning, flag = settle_rationale(outcome, res["label"], res["reasoning"])
    techniques, cleared = settle_techniques(outcome, res["label"], res["techniques"])
    res.update(
        techniques=techniques,
        techniques_cleared=cleared,
        corrected_techniques=outcome.corrected_techniques,
        row_reasoning=reasoning,
        corrected_rationale=outcome.corrected_rationale,
        review_comments=outcome.comments,
        n_reviewers=outcome.reviewers,
        review_flag=flag,
    )
    return res


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


def _check_images(candidates: list[tuple[str, str]], meta: dict[str, tuple], plan: Plan, num_proc: int | None) -> list[SplitItem]:
    """Validate every candidate's image (in parallel for large corpora); valid rows enter the plan."""
    split_items = []
    if num_proc is None:
        num_proc = min(os.cpu_count() or 1, 8) if len(candidates) > 2000 else 1
    with ProcessPoolExecutor(num_proc) if num_proc > 1 else contextlib.nullcontext() as pool:
        results = pool.map(_check_image, candidates, chunksize=256) if pool else map(_check_image, candidates)
        for uid, sha, phash, ext, error in tqdm(results, total=len(candidates), desc="images", unit=" img", leave=False):
            if error:
                plan.exclusions.append({"unique_id": uid, "reason": f"invalid_image:{error}"})
                continue
            label, text_label, review, outlet, agreement, image_path, order, stories, source, language = meta.pop(uid)
            plan.rows[uid] = PlanRow(uid, label, text_label, review, outlet, agreement, image_path, ext, label_source=source,
                                     language=language)
            split_items.append(SplitItem(uid, label, order, sha, phash, stories))
    return split_items
