"""BiasCorpus's columns, declared once: :data:`COLUMNS`.

Each :class:`Column` says everything the package needs to know about one column of the corpus:

- its **name** and **feature** (the ``datasets`` feature, in the dict form the card's
  ``dataset_info:`` spells: :data:`STRING`, :func:`value`, :func:`list_of`, :data:`IMAGE`,
  :data:`LABEL` ...);
- **what fills it**: in a build from a workdir (:attr:`Column.workdir`: a field of the workdir's
  article, of the plan's row, or of the votes and review the plan settled), and in a published
  release imported with ``vilbias build --from`` (:attr:`Column.target`: the source's column mapped
  to it with ``--column``; else :attr:`Column.imported`, what an import writes);
- **where it shows**: the ``default`` config (and the folds), the ``sft`` config, the card's field
  table (:attr:`Column.card`) and the ``--column`` targets with their help.

The builder (:mod:`vilbias.loading_script.biascorpus`) turns these into its ``datasets.Features``
and fills the rows of a workdir build from them; the importer (:mod:`vilbias.corpus.importer`) and
its presets, ``vilbias build --help`` and the card (:mod:`vilbias.corpus.card`) read them too. The
order of :data:`COLUMNS` is the order of the stored Parquet columns. ``docs/architecture.md``
("Adding a dataset column") has the recipe.

This module imports nothing heavy (no ``datasets``): ``vilbias build --help`` lists the ``--column``
targets from it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from vilbias.task import LABEL_NAMES

WORKDIR = "workdir"
"""A build from a pipeline workdir (or the embedded sample)."""
RELEASE = "release"
"""A published release imported with ``vilbias build --from``."""
SOURCES = (WORKDIR, RELEASE)
DEFAULT = "default"
SFT = "sft"
"""The two column sets a config reads (:attr:`vilbias.loading_script.biascorpus.View.columns`):
``default`` (also the folds') and ``sft``."""

ARTICLE, PLAN, RESOLVED, BUILDER = "article", "plan", "resolved", "builder"
"""What fills a column in a workdir build (:attr:`Column.workdir`)."""


def value(dtype: str) -> dict[str, Any]:
    """A ``datasets.Value`` of ``dtype`` (``string``, ``int32``, ``float32`` ...)."""
    return {"dtype": dtype, "_type": "Value"}


def list_of(feature: dict[str, Any]) -> dict[str, Any]:
    """A ``datasets.List`` of ``feature`` (a feature, or a dict of them for a list of records)."""
    return {"feature": feature, "_type": "List"}


STRING = value("string")
IMAGE = {"_type": "Image"}
"""``datasets.Image``: the original encoded bytes (and a file name)."""
LABEL = {"names": list(LABEL_NAMES), "_type": "ClassLabel"}
"""``datasets.ClassLabel`` over the task's labels."""
BALLOT = {"annotator": STRING, "sample": value("int32"), "label": STRING}
"""One annotator call's vote: ``label`` null for an abstention."""
MESSAGES = list_of({"role": STRING, "content": list_of({"type": STRING, "text": STRING})})
"""TRL's vision conversational format (the image's place is a ``{"type": "image"}`` content part)."""


@dataclass(frozen=True, eq=False)
class Column:
    """One column of the corpus. Everything but ``name``, ``feature`` and ``card`` has a default
    that suits a plain ``default`` column of both kinds of build."""

    name: str
    feature: dict[str, Any]
    """Its ``datasets`` feature in dict form (``datasets.Features.from_dict`` reads it)."""
    card: str | None
    """Its meaning in the card's field table of a workdir build: a Jinja template over the card's
    figures (``n_reviewed``, ``label_sources`` ...). None: the column shares the table row of the
    column before it (``headline`` is listed with ``outlet``)."""
    workdir: str = ARTICLE
    """What fills it in a workdir build: ``article`` (the workdir Article's field of the same
    name, ``article.FIELD`` for another), ``plan`` / ``plan.FIELD`` (the plan's row:
    :class:`~vilbias.loading_script.biascorpus.PlanRow`, the labels and the review verdict),
    ``resolved`` / ``resolved.KEY`` (the votes and review the plan settled for the row:
    ``vilbias.corpus.plan``'s resolution), or ``builder`` (computed by the builder itself: the image
    bytes, the conversation, the rationale check)."""
    target: str | None = None
    """Help for an importable field: set, ``vilbias build --from`` maps a source column to it
    (``--column NAME=SOURCE``, or a source column of the same name), stored as its text (the
    importer converts the few that need it: labels, dates, image bytes)."""
    imported: Any = None
    """What an imported release stores when no source column fills it (a source records no votes,
    no review): None (null), or a value (a tuple stands for a list)."""
    card_imported: str | None = None
    """Its meaning in the field table of an imported release's card; None: :attr:`card`."""
    default: bool = True
    """A column of the ``default`` config (and of ``fold_0`` … ``fold_4``)."""
    sft: int | None = None
    """Its place among the ``sft`` config's columns (TRL reads ``messages`` first); None: not in ``sft``."""
    sources: tuple[str, ...] = SOURCES
    """The builds that store it: ``workdir`` and ``release``."""

    def __post_init__(self) -> None:
        where = self.workdir.partition(".")[0]
        if where not in (ARTICLE, PLAN, RESOLVED, BUILDER):
            raise ValueError(f"column {self.name!r}: workdir={self.workdir!r} is not article, plan, resolved or builder (.FIELD)")
        if not (self.default or self.sft is not None):
            raise ValueError(f"column {self.name!r} is in no config: give it default=True or an sft place")

    def fill(self) -> tuple[str, str]:
        """``(where, key)`` of :attr:`workdir`: ``("article", "outlet")``."""
        where, _, key = self.workdir.partition(".")
        return where, key or self.name


COLUMNS: list[Column] = [
    Column("unique_id", STRING, "stable id: first 16 hex digits of sha256(canonical URL)", sft=2,
           target="the row's id, required: rows are keyed by it across releases",
           card_imported="the source's `unique_id` (rows are keyed by it across the source's releases)"),
    Column("outlet", STRING, "the article; `url` is canonical, `published` ISO 8601 or null", target="publisher name"),
    Column("headline", STRING, None, target="the headline: it or article_text is required"),
    Column("article_text", STRING, None, target="the article body"),
    Column("url", STRING, None, target="the article's canonical URL"),
    Column("published", STRING, None, target="publication date, stored as ISO 8601"),
    Column("image", IMAGE, "the article's first image, original encoded bytes", workdir=BUILDER, sft=1,
           target="embedded image bytes or a path into --images or the zip, required",
           card_imported="the image the source pairs with the article, original encoded bytes"),
    Column("image_url", STRING, "where the image came from; alt text or figcaption (may be empty)",
           target="where the image was fetched from"),
    Column("image_caption", STRING, None, target="image description or caption"),
    Column("text_label", LABEL, "the text-only prompt's label (-1 when its vote had no majority)", workdir="plan",
           target="the text-only label",
           card_imported="{% if imported.columns.text_label %}the source's text-only label (`{{ imported.columns.text_label }}`), "
                         "mapped as in *Imported release* (-1 when it has none or an unknown one){% else %}-1 throughout: the source "
                         "has no text-only label{% endif %}"),
    Column("multimodal_label", LABEL, "**the task label**: the vote `label_source` names{% if n_reviewed %}, a reviewer's where "
                                      "the row was reviewed{% endif %}", workdir="plan.label", sft=3,
           target="the task label, text + image, required",
           card_imported="**the task label**: the source's label (`{{ imported.columns.multimodal_label }}`), mapped as in "
                         "*Imported release*"),
    # "multimodal" (annotators that saw the image), "text" (no vision annotator took part: the label
    # did not see the image), "review" (set or overturned by human review), "import" (an imported release)
    Column("label_source", STRING, "which vote gave the label: {% for s, n in label_sources.items() %}`{{ s }}` ({{ n }}{% if s == "
                                   "\"text\" %}: the text-only prompt, the image not seen{% elif s == \"multimodal\" %}: the text + "
                                   "image prompt{% elif s == \"review\" %}: set or overturned by review{% endif %}){% if not loop.last %}, "
                                   "{% endif %}{% endfor %}", workdir="plan", imported="import",
           card_imported="`import` throughout: the label is the source's"),
    Column("reasoning", STRING, "the rationale: {% if n_reviewed %}a reviewer's corrected one when given, else {% endif %}the majority "
                                "annotator's{% if n_rationale_missing %} (empty when review set the label without one: see "
                                "`review_flag`){% endif %}", workdir="resolved.row_reasoning", target="the rationale for the label",
           card_imported="{% if imported.no_rationale < imported.kept %}the source's rationale (`{{ imported.columns.reasoning }}`), "
                         "as written (null when a row has none){% else %}null throughout: the source has no rationales{% endif %}"),
    # vilbias.rationale's problem codes for `reasoning`, empty when it passes. Not an sft column.
    Column("rationale_problems", list_of(STRING), "the rationale check's problem codes for `reasoning` (empty when it passes; see "
                                                  "*Rationale check*)", workdir=BUILDER),
    Column("techniques", list_of(STRING), "techniques a majority of annotators judged present{% if n_corrected_techniques %}, or a "
                                          "reviewer's corrected ones where given ({{ n_corrected_techniques }} row{{ \"s\" if "
                                          "n_corrected_techniques != 1 }}){% endif %}{% if n_techniques_cleared %}; empty where review "
                                          "set the label without giving techniques ({{ n_techniques_cleared }} row{{ \"s\" if "
                                          "n_techniques_cleared != 1 }}: judged by no one for that label){% endif %}",
           workdir="resolved", imported=(), card_imported="empty: the source records no techniques"),
    Column("votes", list_of(BALLOT), "every call of the text+image and text-only prompts; label null = abstention", workdir="resolved",
           imported=(), card_imported="empty: no vilbias annotator voted on an imported row"),
    Column("text_votes", list_of(BALLOT), None, workdir="resolved", imported=()),
    Column("agreement", value("float32"), "share of non-abstaining votes for the final label{% if n_reviewed %} (the reviewed one "
                                          "where review changed it){% endif %}", workdir="plan", card_imported="null: no votes"),
    Column("review", STRING, "the reviewers' majority verdict: `acceptable` / `needs_improvement` / `incorrect` / `unreviewed`{% if "
                             "not n_reviewed %} (`unreviewed` throughout: no row has been reviewed){% endif %}", workdir="plan",
           imported="unreviewed", card_imported="`unreviewed` throughout: no one reviewed this import"),
    # what the human review put into the row: a reviewer's rationale (also in `reasoning`), the
    # reviewers' comments and number, and a flag for a rationale the review left wanting
    Column("corrected_rationale", STRING, "a reviewer's rationale for the label (null when none was given)", workdir="resolved",
           card_imported="null: no review"),
    Column("review_comments", list_of(STRING), "the reviewers' comments", workdir="resolved", imported=(),
           card_imported="empty: no review"),
    Column("n_reviewers", value("int32"), "how many reviewers judged the row (0 = unreviewed)", workdir="resolved", imported=0,
           card_imported="0: no review"),
    Column("review_flag", STRING, "`rationale_not_corrected` (Needs Improvement, no corrected rationale: `reasoning` is the "
                                  "annotators'), `rationale_missing` (label set by review without a rationale: `reasoning` is empty), "
                                  "or null", workdir="resolved", card_imported="null: no review"),
    # The card's `language:` lists the rows' languages.
    Column("language", STRING, "the headline and text's language (ISO 639-1), detected at ingest; empty when unknown", workdir="plan",
           card_imported="the headline and text's language (ISO 639-1), detected by the import; empty when unknown"),
    # An import keeps the source's label strings verbatim beside the mapped ClassLabels: the
    # mapping is a documented default, not a rename.
    Column("source_label", STRING, "the source's label strings, verbatim (before the mapping)", sources=(RELEASE,)),
    Column("source_text_label", STRING, None, sources=(RELEASE,)),
    Column("messages", MESSAGES, "user: image + headline + article cut to {{ sft_words }} words + the question; assistant: "
                                 "`Label: …`{{ \" / `Reasoning: …`\" if rationales.with_rationale else \" alone\" }}",
           workdir=BUILDER, default=False, sft=0),
]
"""Every column of the corpus, in the stored order. Add one here (or :func:`register_column`)."""


def register_column(column: Column, *, before: str | None = None) -> Column:
    """Add ``column`` to :data:`COLUMNS` (before the column named ``before``; default: before
    ``messages``, the conversation that ends every stored row), for a column declared outside this
    module. Builds that start after it store the column.

    Raises:
        ValueError: a column of that name exists, or ``before`` names none.
    """
    names = [c.name for c in COLUMNS]
    if column.name in names:
        raise ValueError(f"the corpus already has a column {column.name!r}")
    before = before or "messages"
    if before not in names:
        raise ValueError(f"register_column: no column {before!r} to put {column.name!r} before")
    COLUMNS.insert(names.index(before), column)
    return column


def columns(source: str = WORKDIR, config: str | None = None) -> list[Column]:
    """The columns a ``source`` build stores (``config`` None), or those its ``config`` reads, in
    that config's order (``sft``: by :attr:`Column.sft`)."""
    if source not in SOURCES:
        raise ValueError(f"source {source!r} is not one of {', '.join(SOURCES)}")
    stored = [c for c in COLUMNS if source in c.sources]
    if config is None:
        return stored
    if config == DEFAULT:
        return [c for c in stored if c.default]
    if config == SFT:
        return sorted((c for c in stored if c.sft is not None), key=lambda c: c.sft)
    raise ValueError(f"config {config!r} is not {DEFAULT} or {SFT}")


def import_targets() -> dict[str, str]:
    """The fields an imported table can fill, with their help: ``--column TARGET=SOURCE`` names one."""
    return {c.name: c.target for c in columns(RELEASE) if c.target}


def feature_text(feature: dict[str, Any]) -> str:
    """A feature as the card's field table names its type: ``string``, ``list of string``, ``Image`` ..."""
    kind = feature.get("_type")
    if kind == "Value":
        return "float" if feature["dtype"].startswith("float") else feature["dtype"]
    if kind == "ClassLabel":
        return "ClassLabel " + "/".join(f"`{n}`" for n in feature["names"])
    if kind == "List":
        inner = feature["feature"]
        return "list of " + ("{" + ", ".join(inner) + "}" if "_type" not in inner else feature_text(inner))
    return kind or "{" + ", ".join(feature) + "}"


def grouped(cols: Iterable[Column]) -> list[list[Column]]:
    """``cols`` in the card's field-table rows: a column whose :attr:`Column.card` is None joins the row before."""
    rows: list[list[Column]] = []
    for c in cols:
        if c.card is None and rows:
            rows[-1].append(c)
        else:
            rows.append([c])
    return rows


__all__ = [
    "ARTICLE", "BALLOT", "BUILDER", "COLUMNS", "DEFAULT", "IMAGE", "LABEL", "MESSAGES", "PLAN", "RELEASE", "RESOLVED", "SFT",
    "SOURCES", "STRING", "WORKDIR", "Column", "columns", "feature_text", "grouped", "import_targets", "list_of",
    "register_column", "value",
]
