"""BiasCorpus as a ``datasets`` builder: features, configs and split generation over a plan.

``load_dataset`` no longer runs loading scripts (datasets ≥ 4), so this builder is not uploaded;
``vilbias build`` uses its features and :func:`iter_examples` to write the Parquet repository
that *is* uploaded. It is also usable directly from Python, over a plan made by the build stage::

    from vilbias.corpus.plan import make_plan
    from vilbias.loading_script.biascorpus import BiasCorpus

    make_plan("work", "plan")                                   # workdir=None: the embedded sample
    builder = BiasCorpus(config_name="fold_3", plan_dir="plan")
    builder.download_and_prepare()
    ds = builder.as_dataset()

Configs: ``default`` (train/validation/test), ``fold_0`` … ``fold_4`` (train/test) and ``sft``
(TRL's vision conversational format, same membership as ``default``). Each row has a *cell*: a
split and a fold, decided by the plan.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import datasets
from vilbias.loading_script import schema
from vilbias.loading_script.schema import BUILDER, DEFAULT, PLAN, RELEASE, SFT, WORKDIR

from vilbias import task
from vilbias.ledger import Ledger, Table
from vilbias.rationale import check_rationale, codes
from vilbias.task import N_FOLDS, SPLITS
from vilbias.workdir import Article, read_articles

_DESCRIPTION = (
    "BiasCorpus: news article-image pairs labelled biased / not biased, each with a rationale: by LLM "
    "annotators with hierarchical majority voting and human review, or imported from expert labels "
    "(the dataset card says which, from the data)."
)
# The Hub repository is chosen when the corpus is published (`vilbias publish dataset`); its card
# names it. A builder used from Python has no repository to point to.
_HOMEPAGE = ""
_LICENSE = "cc-by-nc-4.0"


def features(source: str = WORKDIR, config: str | None = None) -> datasets.Features:
    """The ``datasets.Features`` of the columns :mod:`~vilbias.loading_script.schema` declares: what a
    ``source`` build stores (``config`` None: every config reads its columns from the same Parquet
    files), or what its ``config`` (``default`` or ``sft``) reads. Read at call time, so a column
    registered after import (:func:`~vilbias.loading_script.schema.register_column`) is in it."""
    return datasets.Features.from_dict({c.name: c.feature for c in schema.columns(source, config)})


DEFAULT_FEATURES = features(WORKDIR, DEFAULT)
SFT_FEATURES = features(WORKDIR, SFT)
STORED_FEATURES = features(WORKDIR)
"""What a stored row holds: every config reads its columns from the same Parquet files. These
constants are the schema as declared when the module loaded; the build reads :func:`features`."""


Cell = tuple[str, int]
"""(split, fold): where a row lives. Every config's splits are unions of cells."""
CELLS: tuple[Cell, ...] = tuple((s, k) for s in SPLITS for k in range(N_FOLDS))


@dataclass(frozen=True)
class View:
    """One config of the repository: which cells make each of its splits, and which columns it reads."""

    name: str
    splits: dict[str, tuple[Cell, ...]]
    columns: str
    """``default`` (every column of a row) or ``sft`` (the conversation columns)."""
    description: str
    family: str
    """Views of one family are listed together in the card (``fold_0`` … ``fold_4``)."""
    same_rows_as: str | None = None
    """A view with the same membership as another, read with other columns (``sft``: ``default``)."""


def _views() -> dict[str, View]:
    default = View("default", {s: tuple(c for c in CELLS if c[0] == s) for s in SPLITS}, "default",
                   "Train/validation/test (80/10/10), one row per article-image pair.", "default")
    folds = [View(f"fold_{k}", {"train": tuple(c for c in CELLS if c[1] != k), "test": tuple(c for c in CELLS if c[1] == k)},
                  "default", f"Cross-validation fold {k}: test = fold {k}, train = the other four.", "fold")
             for k in range(N_FOLDS)]
    sft = View("sft", default.splits, "sft", "TRL vision conversational format; same membership as default.", "sft",
               same_rows_as="default")
    return {v.name: v for v in (default, *folds, sft)}


VIEWS: dict[str, View] = _views()
"""The table of dataset views, declared once: the builder's configs, the writer's ``configs:`` and
data files, the card's tables and the evaluation's leakage check all read it."""


RESOLVED = Table("resolved", key=("unique_id",), columns=("data",), types={"data": "TEXT NOT NULL"})


class Resolutions(Ledger):
    """``resolved.sqlite`` in a plan folder: each row's settled annotation (votes, labels,
    rationale, review columns) as JSON, written by the build plan and read when rows are written."""

    def __init__(self, path: str | Path):
        super().__init__(path, [RESOLVED], version=1, name="build plan")

    def get(self, unique_id: str) -> dict[str, Any] | None:
        row = self.query("SELECT data FROM resolved WHERE unique_id=?", (unique_id,))
        return json.loads(row[0][0]) if row else None

    def get_many(self, unique_ids: list[str]) -> list[dict[str, Any] | None]:
        """:meth:`get` of each id, in one query per 500 ids (a query per row was a third of a
        build plan's reading)."""
        found: dict[str, str] = {}
        for i in range(0, len(unique_ids), 500):
            part = unique_ids[i : i + 500]
            found.update(self.query(f"SELECT unique_id, data FROM resolved WHERE unique_id IN ({','.join('?' * len(part))})", part))
        return [json.loads(found[uid]) if uid in found else None for uid in unique_ids]

    def put_all(self, items: list[tuple[str, dict[str, Any]]]) -> None:
        self.put(RESOLVED, [(uid, json.dumps(data)) for uid, data in items])

    def items(self):
        """Every ``(unique_id, resolution)``, streamed."""
        for uid, data in self.stream("SELECT unique_id, data FROM resolved"):
            yield uid, json.loads(data)

IMPORTED_FEATURES = features(RELEASE, DEFAULT)
"""``default``'s columns for a release imported with ``vilbias build --from`` (the source's label
strings kept verbatim beside the mapped ClassLabels: ``source_label``, ``source_text_label``)."""
IMPORTED_STORED_FEATURES = features(RELEASE)


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
    label_source: str = "multimodal"
    """Which vote gave ``label``: ``multimodal``, ``text`` or ``review`` (the ``label_source`` column)."""
    language: str = ""
    """The article's language (the ``language`` column; "" when unknown)."""


@dataclass
class Plan:
    """What the build decided, shared by every config. Written to ``plan.json`` in the plan folder."""

    workdir: str
    store: str
    resolved: str
    rows: dict[str, PlanRow] = field(default_factory=dict)
    exclusions: list[dict[str, str]] = field(default_factory=list)
    flagged: dict[str, str] = field(default_factory=dict)
    split_report: dict[str, Any] = field(default_factory=dict)
    annotation: dict[str, Any] = field(default_factory=dict)
    review: dict[str, Any] = field(default_factory=dict)
    """Cohen's κ and the annotators' agreement with the final labels
    (:meth:`vilbias.review.outcome.AgreementTally.result`), for the card and the build report."""

    def save(self, path: Path) -> None:
        # Field by field, not asdict(self): that copied every row deeply and was then replaced by
        # the list below (~0.8 s of an 8,000-row build); the other fields are plain JSON already.
        names = [f.name for f in fields(PlanRow)]
        rows = [{n: getattr(r, n) for n in names} for r in self.rows.values()]
        path.write_text(json.dumps({f.name: rows if f.name == "rows" else getattr(self, f.name) for f in fields(self)}))

    @classmethod
    def load(cls, path: Path) -> Plan:
        d = json.loads(path.read_text())
        rows = {r["unique_id"]: PlanRow(**r) for r in d.pop("rows")}
        return cls(**d, rows=rows)


@dataclass
class BiasCorpusConfig(datasets.BuilderConfig):
    """A BiasCorpus view (:data:`VIEWS`) over the plan in ``plan_dir``."""

    plan_dir: str | None = None
    """Folder holding ``plan.json`` and ``resolved.sqlite``, made by :func:`vilbias.corpus.plan.make_plan`."""


class BiasCorpus(datasets.GeneratorBasedBuilder):
    """BiasCorpus: multimodal news bias with rationales."""

    VERSION = datasets.Version("1.0.0")
    BUILDER_CONFIG_CLASS = BiasCorpusConfig
    BUILDER_CONFIGS = [BiasCorpusConfig(name=v.name, description=v.description) for v in VIEWS.values()]
    DEFAULT_CONFIG_NAME = "default"
    # Image rows are ~100 KB: small row groups keep memory flat and suit the dataset viewer.
    DEFAULT_WRITER_BATCH_SIZE = 100

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description=_DESCRIPTION,
            features=features(WORKDIR, VIEWS[self.config.name].columns),
            homepage=_HOMEPAGE,
            license=_LICENSE,
        )

    def _plan(self) -> Plan:
        if getattr(self, "_cached_plan", None) is None:
            plan_file = Path(self.config.plan_dir or "") / "plan.json"
            if not self.config.plan_dir or not plan_file.exists():
                raise ValueError(
                    "BiasCorpus generates rows from a build plan: make one with "
                    "vilbias.corpus.plan.make_plan(workdir, plan_dir) and pass plan_dir=..."
                )
            self._cached_plan = Plan.load(plan_file)
        return self._cached_plan

    def _split_generators(self, dl_manager: datasets.DownloadManager) -> list[datasets.SplitGenerator]:
        # A split no planned row falls in is left out, as the written repository's configs leave
        # it out: `datasets` cannot read a split of no rows ("Instruction ... corresponds to no data").
        occupied = {(r.split, r.fold) for r in self._plan().rows.values()}
        return [
            datasets.SplitGenerator(name=split, gen_kwargs={"keep": lambda r, cells=frozenset(cells): (r.split, r.fold) in cells})
            for split, cells in VIEWS[self.config.name].splits.items() if occupied & set(cells)
        ]

    def _generate_examples(self, keep):
        columns = list(self.info.features)
        for row, example in iter_examples(self._plan(), keep):
            yield row.unique_id, {c: example[c] for c in columns}


def rationale_check(example: dict[str, Any], techniques: list[str] | None) -> list[str]:
    """The problem codes of a stored example's ``reasoning`` (:func:`vilbias.rationale.check_rationale`
    against its headline, article text, caption, label and ``techniques``; None skips the technique
    comparison, for a source that records none). ``[]`` when it passes; ``["empty"]`` when there is none."""
    return codes(check_rationale(
        example["reasoning"], article_text=example["article_text"] or "", headline=example["headline"] or "",
        caption=example["image_caption"] or "", label=example["multimodal_label"], techniques=techniques,
    ))


def rationale_author(resolution: dict[str, Any]) -> str | None:
    """Who wrote a workdir row's ``reasoning``: ``reviewer`` for a corrected rationale, else the
    annotator whose rationale the vote took; None when the row has none."""
    if resolution.get("corrected_rationale"):
        return "reviewer"
    if not (resolution.get("row_reasoning") or "").strip():
        return None
    return resolution.get("rationale_from") or "annotators"


def _with_resolutions(rows: Iterator[tuple[Article, PlanRow]], resolutions: Resolutions, chunk: int = 500):
    """``(article, row, resolution)`` in order, the resolutions read ``chunk`` rows at a time."""
    while part := list(itertools.islice(rows, chunk)):
        yield from ((art, row, res) for (art, row), res in zip(part, resolutions.get_many([a.unique_id for a, _ in part]), strict=True))


def iter_examples(plan: Plan, keep=None, authors: dict[str, str | None] | None = None):
    """Yield ``(PlanRow, stored example)`` for every planned row, in ingestion order, reading each
    article, its resolved annotation and its image once. A stored example has every column of
    :func:`features` (``default``'s columns plus the ``sft`` conversation), each filled as its
    declaration says (:attr:`vilbias.loading_script.schema.Column.workdir`). ``authors``,
    when given, receives each yielded row's :func:`rationale_author` before the row is yielded."""
    workdir = Path(plan.workdir)
    # (column, where, key) of what an article, the plan's row or its resolution fills; the rest
    # (the builder's own) below
    fills = [(c.name, *c.fill()) for c in schema.columns(WORKDIR)]
    built = {name for name, where, _ in fills if where == BUILDER}
    fills = [f for f in fills if f[1] != BUILDER]
    for name, where, key in fills:
        holder = {"article": Article, "plan": PlanRow}.get(where)
        if holder is not None and key not in holder.__dataclass_fields__:
            raise ValueError(f"column {name!r} is filled from {where}.{key} (its workdir=), and {holder.__name__} has no field {key!r}: "
                             "add the field, or name the article field, plan field or resolution key that fills it")
    def kept() -> Iterator[tuple[Article, PlanRow]]:
        for art in read_articles(workdir):
            row = plan.rows.get(art.unique_id)
            if row is not None and (keep is None or keep(row)):
                yield art, row

    resolutions = Resolutions(plan.resolved)
    try:
        for art, row, res in _with_resolutions(kept(), resolutions):
            example = {name: res[key] if where == schema.RESOLVED else getattr(row if where == PLAN else art, key)
                       for name, where, key in fills}
            example["image"] = {"bytes": (workdir / row.image_path).read_bytes(), "path": Path(row.image_path).name}
            # Settled by the plan: a reviewer's rationale, else the annotators' for their own
            # label; a label set by review without one has none (flagged), never another label's.
            example["messages"] = task.messages(art.headline, art.article_text, row.label, example["reasoning"])
            # techniques review cleared (a label it set, none given) were judged by no one: nothing to compare
            example["rationale_problems"] = rationale_check(example, None if res.get("techniques_cleared") else res["techniques"])
            if authors is not None:
                authors[art.unique_id] = rationale_author(res)
            missing = built - example.keys()
            if missing:
                raise ValueError(f"columns {', '.join(sorted(missing))} say the builder fills them (workdir='builder'), and it does not: "
                                 "name the article field, plan field or resolution key that does")
            yield row, example
    finally:
        resolutions.close()


__all__ = [
    "BiasCorpus", "BiasCorpusConfig", "CELLS", "DEFAULT_FEATURES", "IMPORTED_FEATURES", "IMPORTED_STORED_FEATURES", "SFT_FEATURES",
    "STORED_FEATURES", "VIEWS", "Plan", "PlanRow", "Resolutions", "View", "features", "iter_examples", "rationale_author",
    "rationale_check",
]
