"""No seen row is scored: the evaluated rows against the model's training rows, before any answer.

Every checkpoint vilbias writes records the rows it trained on (:mod:`vilbias.provenance`:
``training_data.json`` + ``training_ids.txt`` beside the weights). ``vilbias evaluate`` reads that
record for each model it is about to ask, compares its ids with the evaluated rows' ``unique_id``
and refuses any overlap, naming the count and the way out. ``--allow-overlap`` scores them anyway
(a deliberate measurement of the leak) and the report says so. A model without a record (an
OpenAI-compatible server, the embedded SmolLM2, someone else's Hub model) cannot be checked: it
is evaluated with a warning in the report.

A model scored on labels it made itself (it was the corpus's annotator: the build report records
each annotator's model and its identity) is flagged on the report's first line
(:func:`circularity`): its scores measure its agreement with itself.

    check = seen_check("outputs/smolvlm-lora", None, "fold_0/test", items)
    refuse_seen([check], allow_overlap=False)     # ValueError naming the count when rows overlap
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from huggingface_hub import constants

from vilbias.annotate.specs import DEFAULT_NAME, checkpoint_identity
from vilbias.loading_script.biascorpus import VIEWS
from vilbias.models.catalogue import ModelSpec, shipped_sentence_model
from vilbias.provenance import TrainingData, read_training_data
from vilbias.task import Item


@dataclass
class SeenCheck:
    """What one model trained on, compared with the rows it is about to be scored on."""

    view: str
    """The evaluated ``config/split``."""
    model: str
    training_data: TrainingData | None
    evaluated: int
    """Rows evaluated."""
    seen: list[str]
    """Evaluated ids the model trained on."""
    note: str | None = None
    """Why there is no record to check against (None when there is one)."""

    @property
    def status(self) -> str:
        """``checked`` (a record, no overlap), ``overlap`` (a record, seen rows) or ``unchecked`` (no record)."""
        if self.training_data is None:
            return "unchecked"
        return "overlap" if self.seen else "checked"

    def as_dict(self, allow_overlap: bool) -> dict[str, Any]:
        record = None
        if self.training_data is not None:
            t = self.training_data
            record = {"dataset": t.dataset, "revision": t.revision, "config": t.config, "split": t.split, "rows": t.rows,
                      "ids_sha256": t.ids_sha256, "extra": t.extra, "description": t.describe()}
        return {"view": self.view, "model": self.model, "status": self.status, "training_data": record,
                "evaluated": self.evaluated, "overlap": len(self.seen), "overlap_ids": self.seen,
                "allow_overlap": allow_overlap, "note": self.note}


def model_training_data(spec: str, revision: str | None = None) -> tuple[TrainingData | None, str | None]:
    """The training-data record of ``spec`` and, when there is none, why.

    Raises:
        ValueError: the record exists but is corrupted (its ids do not match its digest).
    """
    if not ModelSpec.parse(spec).kind_info.checkpoint:
        return None, f"{spec} is not a vilbias checkpoint, so it has no training-data record"
    local = Path(spec).is_dir()
    if not local and constants.HF_HUB_OFFLINE:
        return None, f"{spec}: the Hub is offline (HF_HUB_OFFLINE), so its training-data record could not be read"
    record = read_training_data(spec, revision=None if local else revision)
    if record is None:
        return None, f"{spec} has no training-data record (training_data.json): a model trained elsewhere"
    return record, None


def seen_check(spec: str, revision: str | None, view: str, items: Sequence[Item]) -> SeenCheck:
    """Compare the ``items`` of ``view`` with what the model ``spec`` trained on."""
    record, note = model_training_data(spec, revision)
    seen = record.overlap(i.unique_id for i in items) if record is not None else []
    return SeenCheck(view, spec, record, len(items), seen, note)


@dataclass
class Circularity:
    """Rows whose labels the scored model made itself (it annotated the corpus): scoring it on
    them measures its agreement with itself, not the task."""

    view: str
    model: str
    annotators: list[str]
    """The corpus's annotators that are this model."""
    rows: int
    """Evaluated rows whose label came from those annotators' votes."""
    evaluated: int

    def sentence(self) -> str:
        return (f"circular: {self.rows} of the {self.evaluated} scored rows ({self.view}) were labelled by {self.model} itself "
                f"(the corpus's annotator {', '.join(self.annotators)}): these scores measure the model's agreement with "
                "its own labels, not the task; score it on labels it did not make (a corpus annotated by other models, "
                "reviewed rows, or expert labels such as `vilbias build --sentences`)")


def _corpus_annotator_models(dataset: str, revision: str | None) -> dict[str, dict[str, str]]:
    """annotator -> ``{"model", "identity"}`` from the corpus's ``build_report.json`` (a folder, or
    the Hub repo's copy); {} when it records none (an import, sentences, an older build)."""
    folder = Path(dataset).expanduser()
    report = folder / "build_report.json" if folder.is_dir() else None
    if report is None and not constants.HF_HUB_OFFLINE:
        from huggingface_hub import hf_hub_download

        try:
            report = Path(hf_hub_download(dataset, "build_report.json", repo_type="dataset", revision=revision))
        except Exception:  # noqa: BLE001 - a repo without the report, or unreachable: nothing recorded
            return {}
    if report is None or not report.is_file():
        return {}
    try:
        source = json.loads(report.read_text(encoding="utf-8")).get("source") or {}
    except (json.JSONDecodeError, AttributeError):
        return {}
    return (source.get("annotation") or {}).get("annotator_models") or {}


def circularity(spec: str, revision: str | None, view: str, dataset: str, dataset_revision: str | None,
                label_annotators: Mapping[str, set[str]]) -> Circularity | None:
    """Whether the model ``spec`` annotated the rows it is about to be scored on: its identity
    (:func:`vilbias.annotate.specs.checkpoint_identity`, a checkpoint by its files) against the
    annotators' the corpus's build report records, and the annotators whose votes gave each
    evaluated row its label (``label_annotators``). None when no scored row's label is its own."""
    labelled = {a for names in label_annotators.values() for a in names}
    if not labelled:
        return None
    parsed = ModelSpec.parse(spec)
    try:
        identity = checkpoint_identity(parsed.model, revision) if parsed.kind_info.checkpoint else str(parsed)
    except (FileNotFoundError, OSError):
        return None
    models = _corpus_annotator_models(dataset, dataset_revision)
    if not models and DEFAULT_NAME in labelled:
        # a build that recorded no models: the default annotator's name means the shipped model
        models = {DEFAULT_NAME: {"identity": checkpoint_identity(str(shipped_sentence_model()), None)}}
    same = sorted(name for name, m in models.items() if name in labelled and m.get("identity") == identity)
    rows = sum(1 for names in label_annotators.values() if names & set(same))
    return Circularity(view, spec, same, rows, len(label_annotators)) if rows else None


def _own_test_split(record: TrainingData) -> str:
    # A view with another's membership (sft: default's) is evaluated on that one, which has the columns.
    view = VIEWS.get(record.config)
    config = view.same_rows_as or record.config if view else record.config
    return f"--dataset-config {config} --split test"


def refuse_seen(checks: Sequence[SeenCheck], *, allow_overlap: bool) -> None:
    """Refuse to score rows a model trained on, unless ``allow_overlap``.

    Raises:
        ValueError: naming the count, the views and the way out.
    """
    leaking = [c for c in checks if c.seen]
    if not leaking or allow_overlap:
        return
    seen, evaluated = sum(len(c.seen) for c in leaking), sum(c.evaluated for c in leaking)
    views = ", ".join(c.view for c in leaking)
    first = leaking[0]
    own = _own_test_split(first.training_data)
    if f"--dataset-config {first.view.split('/')[0]} --split {first.view.split('/')[-1]}" == own:
        # the model's own test split overlaps its training rows: this corpus split its data otherwise
        raise ValueError(
            f"refused: {seen} of the {evaluated} rows of {views} are rows {first.model} trained on "
            f"({first.training_data.describe()}): this corpus's splits are not the ones the model trained with (a build "
            "that placed sentences of one article in train and test, or another file). Build a corpus from the file it trained "
            "on into a new folder (`vilbias build --sentences FILE --output NEW`) and evaluate on that; --allow-overlap scores "
            "them anyway and says so in the report")
    raise ValueError(
        f"refused: {seen} of the {evaluated} rows to score ({views}) are rows {first.model} trained on "
        f"({first.training_data.describe()}); evaluate it on its own test split ({_own_test_split(first.training_data)}), "
        "or train one model per fold with `vilbias train classifier ... --cv` and evaluate that folder with --cv "
        "(each fold's model on its own fold's test split); --allow-overlap scores them anyway and says so in the report")
