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

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import datasets

from vilbias import task
from vilbias.ledger import Ledger, Table
from vilbias.rationale import check_rationale, codes
from vilbias.task import LABEL_NAMES, N_FOLDS, SPLITS
from vilbias.workdir import read_articles

_DESCRIPTION = (
    "BiasCorpus: news article-image pairs labelled biased / not biased, each with a rationale: by LLM "
    "annotators with hierarchical majority voting and human review, or imported from expert labels "
    "(the dataset card says which, from the data)."
)
# The Hub repository is chosen when the corpus is published (`vilbias publish dataset`); its card
# names it. A builder used from Python has no repository to point to.
_HOMEPAGE = ""
_LICENSE = "cc-by-nc-4.0"

_BALLOT = {"annotator": datasets.Value("string"), "sample": datasets.Value("int32"), "label": datasets.Value("string")}
_CONTENT = {"type": datasets.Value("string"), "text": datasets.Value("string")}
_MESSAGES = datasets.List({"role": datasets.Value("string"), "content": datasets.List(_CONTENT)})

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
        # Which vote the row's label (multimodal_label) came from: "multimodal" (annotators that saw
        # the image), "text" (text-only annotators: no vision annotator took part, so the label did
        # not see the image), "review" (set or overturned by human review), "import" (an imported release).
        "label_source": datasets.Value("string"),
        "reasoning": datasets.Value("string"),
        # The model-free rationale check's result for `reasoning` (vilbias.rationale): its problem
        # codes, empty when the rationale passes. Not an sft column.
        "rationale_problems": datasets.List(datasets.Value("string")),
        "techniques": datasets.List(datasets.Value("string")),
        "votes": datasets.List(_BALLOT),
        "text_votes": datasets.List(_BALLOT),
        "agreement": datasets.Value("float32"),
        "review": datasets.Value("string"),
        # What the human review put into the row: a reviewer's rationale (also in `reasoning`),
        # the reviewers' comments and number, and a flag for a rationale the review left wanting.
        "corrected_rationale": datasets.Value("string"),
        "review_comments": datasets.List(datasets.Value("string")),
        "n_reviewers": datasets.Value("int32"),
        "review_flag": datasets.Value("string"),
        # The headline and text's language (ISO 639-1, detected at ingest; "" when unknown). The
        # card's `language:` lists the rows' languages.
        "language": datasets.Value("string"),
    }
)
SFT_FEATURES = datasets.Features(
    {
        "messages": _MESSAGES,
        "image": datasets.Image(),
        "unique_id": datasets.Value("string"),
        "multimodal_label": datasets.ClassLabel(names=LABEL_NAMES),
    }
)
STORED_FEATURES = datasets.Features({**DEFAULT_FEATURES, "messages": _MESSAGES})
"""What a stored row holds: every config reads its columns from the same Parquet files."""


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

    def put_all(self, items: list[tuple[str, dict[str, Any]]]) -> None:
        self.put(RESOLVED, [(uid, json.dumps(data)) for uid, data in items])

    def items(self):
        """Every ``(unique_id, resolution)``, streamed."""
        for uid, data in self.stream("SELECT unique_id, data FROM resolved"):
            yield uid, json.loads(data)

IMPORTED_FEATURES = datasets.Features(
    {
        **DEFAULT_FEATURES,
        # An imported release (`vilbias build --from`) keeps the source's label strings verbatim
        # beside the mapped ClassLabels: the mapping is a documented default, not a rename.
        "source_label": datasets.Value("string"),
        "source_text_label": datasets.Value("string"),
    }
)
"""``default``'s columns for a release imported with ``vilbias build --from``."""
IMPORTED_STORED_FEATURES = datasets.Features({**IMPORTED_FEATURES, "messages": _MESSAGES})


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
        path.write_text(json.dumps({**asdict(self), "rows": [asdict(r) for r in self.rows.values()]}))

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
            features=SFT_FEATURES if VIEWS[self.config.name].columns == "sft" else DEFAULT_FEATURES,
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


def iter_examples(plan: Plan, keep=None, authors: dict[str, str | None] | None = None):
    """Yield ``(PlanRow, stored example)`` for every planned row, in ingestion order, reading each
    article, its resolved annotation and its image once. A stored example has every column of
    :data:`STORED_FEATURES` (``default``'s columns plus the ``sft`` conversation). ``authors``,
    when given, receives each yielded row's :func:`rationale_author` before the row is yielded."""
    workdir = Path(plan.workdir)
    resolutions = Resolutions(plan.resolved)
    try:
        for art in read_articles(workdir):
            row = plan.rows.get(art.unique_id)
            if row is None or (keep is not None and not keep(row)):
                continue
            res = resolutions.get(art.unique_id)
            # Settled by the plan: a reviewer's rationale, else the annotators' for their own
            # label; a label set by review without one has none (flagged), never another label's.
            reasoning = res["row_reasoning"]
            example = {
                "unique_id": art.unique_id,
                "outlet": art.outlet,
                "headline": art.headline,
                "article_text": art.article_text,
                "url": art.url,
                "published": art.published,
                "image": {"bytes": (workdir / row.image_path).read_bytes(), "path": Path(row.image_path).name},
                "image_url": art.image_url,
                "image_caption": art.image_caption,
                "text_label": row.text_label,
                "multimodal_label": row.label,
                "label_source": row.label_source,
                "reasoning": reasoning,
                "techniques": res["techniques"],
                "votes": res["votes"],
                "text_votes": res["text_votes"],
                "agreement": row.agreement,
                "review": row.review,
                "corrected_rationale": res["corrected_rationale"],
                "review_comments": res["review_comments"],
                "n_reviewers": res["n_reviewers"],
                "review_flag": res["review_flag"],
                "language": row.language,
                "messages": task.messages(art.headline, art.article_text, row.label, reasoning),
            }
            # techniques review cleared (a label it set, none given) were judged by no one: nothing to compare
            example["rationale_problems"] = rationale_check(example, None if res.get("techniques_cleared") else res["techniques"])
            if authors is not None:
                authors[art.unique_id] = rationale_author(res)
            yield row, example
    finally:
        resolutions.close()


__all__ = [
    "BiasCorpus", "BiasCorpusConfig", "CELLS", "DEFAULT_FEATURES", "IMPORTED_FEATURES", "IMPORTED_STORED_FEATURES", "SFT_FEATURES",
    "STORED_FEATURES", "VIEWS", "Plan", "PlanRow", "Resolutions", "View", "iter_examples", "rationale_author", "rationale_check",
]
