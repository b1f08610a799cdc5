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
import sqlite3
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import datasets

from vilbias import task
from vilbias.task import LABEL_NAMES, N_FOLDS, SPLITS
from vilbias.workdir import read_articles

_DESCRIPTION = (
    "BiasCorpus: news article-image pairs labelled biased / not biased by LLM annotators with "
    "hierarchical majority voting and human review, each with a rationale."
)
_HOMEPAGE = "https://huggingface.co/datasets/vilbias/BiasCorpus"
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
        "reasoning": datasets.Value("string"),
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

    def save(self, path: Path) -> None:
        path.write_text(json.dumps({**asdict(self), "rows": [asdict(r) for r in self.rows.values()]}))

    @classmethod
    def load(cls, path: Path) -> Plan:
        d = json.loads(path.read_text())
        rows = {r["unique_id"]: PlanRow(**r) for r in d.pop("rows")}
        return cls(**d, rows=rows)


@dataclass
class BiasCorpusConfig(datasets.BuilderConfig):
    """A BiasCorpus view over the plan in ``plan_dir``."""

    plan_dir: str | None = None
    """Folder holding ``plan.json`` and ``resolved.sqlite``, made by :func:`vilbias.corpus.plan.make_plan`."""
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
            plan_file = Path(self.config.plan_dir or "") / "plan.json"
            if not self.config.plan_dir or not plan_file.exists():
                raise ValueError(
                    "BiasCorpus generates rows from a build plan: make one with "
                    "vilbias.corpus.plan.make_plan(workdir, plan_dir) and pass plan_dir=..."
                )
            self._cached_plan = Plan.load(plan_file)
        return self._cached_plan

    def _split_generators(self, dl_manager: datasets.DownloadManager) -> list[datasets.SplitGenerator]:
        if self.config.kind == "fold":
            fold = self.config.fold
            return [
                datasets.SplitGenerator(name=datasets.Split.TRAIN, gen_kwargs={"keep": lambda r, f=fold: r.fold != f}),
                datasets.SplitGenerator(name=datasets.Split.TEST, gen_kwargs={"keep": lambda r, f=fold: r.fold == f}),
            ]
        return [datasets.SplitGenerator(name=split, gen_kwargs={"keep": lambda r, s=split: r.split == s}) for split in SPLITS]

    def _generate_examples(self, keep):
        columns = list(self.info.features)
        for row, example in iter_examples(self._plan(), keep):
            yield row.unique_id, {c: example[c] for c in columns}


def iter_examples(plan: Plan, keep=None):
    """Yield ``(PlanRow, stored example)`` for every planned row, in ingestion order, reading each
    article, its resolved annotation and its image once. A stored example has every column of
    :data:`STORED_FEATURES` (``default``'s columns plus the ``sft`` conversation)."""
    workdir = Path(plan.workdir)
    db = sqlite3.connect(plan.resolved)
    try:
        for art in read_articles(workdir):
            row = plan.rows.get(art.unique_id)
            if row is None or (keep is not None and not keep(row)):
                continue
            res = json.loads(db.execute("SELECT data FROM resolved WHERE unique_id=?", (art.unique_id,)).fetchone()[0])
            # Settled by the plan: a reviewer's rationale, else the annotators' for their own
            # label; a label set by review without one has none (flagged), never another label's.
            reasoning = res["row_reasoning"]
            yield row, {
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
                "messages": task.messages(art.headline, art.article_text, row.label, reasoning),
            }
    finally:
        db.close()


__all__ = ["BiasCorpus", "BiasCorpusConfig", "DEFAULT_FEATURES", "IMPORTED_FEATURES", "IMPORTED_STORED_FEATURES", "SFT_FEATURES", "STORED_FEATURES", "Plan", "PlanRow", "iter_examples"]
