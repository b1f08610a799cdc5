"""Push a trained model (weights or adapters + processor/tokenizer) with its model card.

The training code calls :func:`push_model` after saving its output folder; the CLI does the same
from a folder a run left behind::

    vilbias publish model --repo-id ORG/vilbias-roberta-lora --source outputs/roberta-lora

The card is rendered from ``templates/model_card.md`` with ``ModelCard.from_template``: base
model, the dataset repo and the exact revision trained on, what the checkpoint trained on (its
:class:`vilbias.provenance.TrainingData`: config, split, row count, ids digest; the ids file sits
beside the weights), method and hyperparameters, the trainable-parameter share, evaluation
results as ``model-index``, intended use, limitations and a usage snippet that loads the
checkpoint and runs one prediction. The card's ``datasets:`` metadata links the dataset repo and
its ``training_data:`` metadata names the revision, config, split, rows and ids digest.

The card's prose lives in templates too: a training run computes the figures and names and
renders its sections (summary, intended use, limitations, usage snippet) with
:func:`render_section` from ``templates/<kind>/`` (``generic/`` here, ``classifier/`` for
``vilbias train classifier``, ``sentence/`` for the shipped sentence model). Usage snippets
build the model's input with :func:`vilbias.task.classifier_text` / :func:`vilbias.task.user_prompt`,
so they feed exactly what training fed.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from huggingface_hub import CommitOperationAdd, EvalResult, HfApi, ModelCard, ModelCardData
from huggingface_hub.utils import filter_repo_objects

from vilbias.provenance import TrainingData
from vilbias.publish.hub import check_token, resolve_token
from vilbias.task import (
    ANSWER_LABELS,
    BIASED,
    BIASED_NAME,
    NOT_BIASED_NAME,
    classifier_text,
    user_prompt,
)

logger = logging.getLogger(__name__)

CARD_INFO_FILE = "vilbias_card.json"
"""What a training run writes next to its weights so ``vilbias publish model`` can render the card."""

PEFT_METHODS = ("lora", "qlora", "adapter", "prompt_tuning")

# What a model repo needs: weights/adapters, configs, tokenizer/processor files, the card.
# Optimizer states, checkpoints and TensorBoard runs stay local.
ALLOW_PATTERNS = [
    "*.safetensors", "*.json", "*.txt", "*.model", "*.jinja", "*.md", "*.gguf",
    "pytorch_model*.bin", "adapter_model.bin", "*.tiktoken", "*.py",
]
IGNORE_PATTERNS = [
    "checkpoint-*", "checkpoint-*/**", "runs/**", "**/.ipynb_checkpoints/**", "optimizer.*",
    "scheduler.*", "rng_state*", "trainer_state.json", "training_args.bin", "**/__pycache__/**",
]


def _template_source(name: str) -> str:
    return resources.files("vilbias.publish").joinpath(f"templates/{name}").read_text(encoding="utf-8")


# Rendered as ModelCard.from_template renders model_card.md (jinja2's defaults: no block trimming,
# a file's last newline dropped), but an undefined value is an error, not an empty string.
_SECTIONS = jinja2.Environment(loader=jinja2.FunctionLoader(_template_source), undefined=jinja2.StrictUndefined)
_SECTIONS.filters["json"] = json.dumps
_SECTIONS.globals.update(
    biased_name=BIASED_NAME, not_biased_name=NOT_BIASED_NAME,
    biased_answer=ANSWER_LABELS[BIASED], not_biased_answer=ANSWER_LABELS[1 - BIASED],
    classifier_text=classifier_text, user_prompt=user_prompt,
)


def render_section(name: str, **values: Any) -> str:
    """Render ``templates/<name>`` (a card section or a usage snippet) with ``values``.

    Every template also sees the task's label names (``biased_name``, ``not_biased_name``), their
    spelling in an answer (``biased_answer``, ``not_biased_answer``), :func:`~vilbias.task.classifier_text`
    and :func:`~vilbias.task.user_prompt`, and a ``json`` filter (a Python string literal)."""
    return _SECTIONS.get_template(name).render(**values)


DEFAULT_INTENDED_USE = render_section("generic/intended_use.md")
DEFAULT_LIMITATIONS = render_section("generic/limitations.md")


@dataclass
class ModelCardInfo:
    """Everything the model card states, collected by the training code.

    ``eval_results`` entries are dicts with ``metric_type`` (e.g. ``"f1"``), ``metric_name``
    (display name, optional), ``value``, ``split`` and ``config`` (defaults to
    ``dataset_config``).
    """

    base_model: str = field(metadata={"help": "Hub id (or path) of the model that was fine-tuned."})
    dataset: str = field(metadata={"help": "Dataset repo id trained on (or a local dataset's name): the model-index `dataset.type`."})
    method: str = field(metadata={"help": "lora | qlora | full | prompt_tuning | adapter | classifier-..."})
    task: str = field(default="text-classification", metadata={"help": "pipeline_tag: text-classification or image-text-to-text."})
    dataset_config: str = field(default="default", metadata={"help": "Dataset config trained on."})
    dataset_revision: str | None = field(default=None, metadata={"help": "Exact dataset revision (tag or commit) trained on."})
    hyperparameters: dict[str, Any] = field(default_factory=dict, metadata={"help": "Training settings to report."})
    trainable_params: int | None = field(default=None, metadata={"help": "Parameters updated by training."})
    total_params: int | None = field(default=None, metadata={"help": "All parameters of the model."})
    peak_memory_mb: float | None = field(default=None, metadata={"help": "Peak accelerator/host memory of the run."})
    wall_time_s: float | None = field(default=None, metadata={"help": "Training wall time."})
    eval_results: list[dict[str, Any]] = field(default_factory=list, metadata={"help": "Metrics, see class docstring."})
    usage_snippet: str = field(default="", metadata={"help": "Python that loads the checkpoint and predicts once; generated when empty."})
    license: str = field(default="apache-2.0", metadata={"help": "License of the weights."})
    language: list[str] = field(default_factory=lambda: ["en"], metadata={"help": "Languages."})
    tags: list[str] = field(default_factory=list, metadata={"help": "Extra Hub tags."})
    library_name: str | None = field(default=None, metadata={"help": "peft for adapter methods, else transformers, unless set."})
    model_name: str | None = field(default=None, metadata={"help": "Card title and model-index name; the repo name when empty."})
    summary: str = field(default="", metadata={"help": "One paragraph on what the model does."})
    dataset_name: str | None = field(default=None, metadata={"help": "How the card names the data (model-index `dataset.name`); `dataset` when empty."})
    evaluation: str = field(default="", metadata={"help": "Markdown opening the card's one Evaluation section, before the table of results."})
    citation: str = field(default="", metadata={"help": "BibTeX of the data (and work) to cite; the card's Citation section when given."})
    card_metadata: dict[str, Any] = field(default_factory=dict, metadata={"help": "More YAML metadata the Hub reads (e.g. base_model_relation, inference)."})
    intended_use: str = field(default=DEFAULT_INTENDED_USE, metadata={"help": "Intended use section."})
    limitations: str = field(default=DEFAULT_LIMITATIONS, metadata={"help": "Limitations section."})
    training_data: TrainingData | None = field(default=None, metadata={
        "help": "What the checkpoint trained on (vilbias.provenance.TrainingData); the card states it and links "
                "the dataset revision. Its ids stay in training_ids.txt beside the weights."})

    def save(self, folder: str | Path) -> Path:
        """Write this info as ``vilbias_card.json`` in ``folder`` (read back by :meth:`load`)."""
        path = Path(folder) / CARD_INFO_FILE
        data = dataclasses.asdict(self)
        if self.training_data is not None:
            data["training_data"] = _training_record(self.training_data)
        path.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, folder: str | Path) -> ModelCardInfo:
        """Read ``vilbias_card.json`` from ``folder``.

        Raises:
            FileNotFoundError: with what to do when the folder has none.
        """
        path = Path(folder) / CARD_INFO_FILE
        if not path.is_file():
            raise FileNotFoundError(
                f"{path} not found: the training commands write it next to the weights; for a "
                f"folder trained elsewhere, write one with ModelCardInfo(...).save({str(folder)!r})"
            )
        data = json.loads(path.read_text(encoding="utf-8"))
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"{path}: unknown fields {unknown}")
        if data.get("training_data") is not None:
            data["training_data"] = TrainingData(**data["training_data"])
        return cls(**data)


def _training_record(training_data: TrainingData) -> dict[str, Any]:
    """The record without its ids (those live in ``training_ids.txt``; a card carries the digest)."""
    return {k: v for k, v in dataclasses.asdict(training_data).items() if k != "ids"}


def _dataset_link(dataset: str, revision: str | None) -> str | None:
    """The Hub page of a dataset repo at ``revision``; None for a local folder."""
    if "/" not in dataset or Path(dataset).exists() or Path(dataset).is_absolute():
        return None
    return f"https://huggingface.co/datasets/{dataset}" + (f"/tree/{revision}" if revision else "")


def _default_usage_snippet(repo_id: str, info: ModelCardInfo) -> str:
    """Python that loads the checkpoint and predicts once, feeding exactly what training fed (the
    task's user prompt for a VLM, its classifier input text for a classifier)."""
    kind = "vlm" if info.task == "image-text-to-text" else "classifier"
    return render_section(f"generic/usage_{kind}.py.jinja", repo_id=repo_id)


def _eval_results(info: ModelCardInfo, revision: str | None) -> list[EvalResult]:
    return [
        EvalResult(
            task_type=info.task,
            dataset_type=info.dataset,
            dataset_name=info.dataset_name or info.dataset,
            dataset_config=r.get("config") or info.dataset_config,
            dataset_split=r["split"],
            dataset_revision=revision,
            metric_type=r["metric_type"],
            metric_name=r.get("metric_name"),
            metric_value=float(r["value"]),
        )
        for r in info.eval_results
    ]


def _card_data(info: ModelCardInfo, name: str, revision: str | None) -> ModelCardData:
    """The card's YAML: ``datasets:`` links the dataset repo; ``training_data:`` pins revision, rows and digest."""
    datasets = [info.dataset] if _dataset_link(info.dataset, None) else []
    if info.training_data is not None:
        datasets += [d for d in info.training_data.card_datasets() if d not in datasets]
    extra = {"training_data": _training_record(info.training_data)} if info.training_data is not None else {}
    return ModelCardData(
        model_name=name,
        base_model=info.base_model,
        datasets=datasets or None,
        eval_results=_eval_results(info, revision) or None,
        language=info.language,
        library_name=info.library_name or ("peft" if info.method in PEFT_METHODS else "transformers"),
        license=info.license,
        pipeline_tag=info.task,
        tags=["vilbias", "media-bias", info.method, *info.tags],
        **extra,
        **info.card_metadata,
    )


def render_model_card(info: ModelCardInfo, repo_id: str | None = None):
    """Render the model card for ``info`` from ``templates/model_card.md``.

    Args:
        info: what the card states.
        repo_id: the model repo, used for the title and the generated usage snippet.

    Returns:
        `huggingface_hub.ModelCard` with ``model-index``, ``base_model``, ``datasets``,
        ``training_data`` (when recorded), ``license``, ``pipeline_tag`` and ``library_name`` in its YAML.
    """
    name = info.model_name or (repo_id.split("/")[-1] if repo_id else f"{info.base_model.split('/')[-1]}-vilbias")
    trained = info.training_data
    revision = info.dataset_revision or (trained.revision if trained is not None else None)
    if info.trainable_params is not None and info.total_params:
        share = 100.0 * info.trainable_params / info.total_params
        trainable_line = f"{info.trainable_params:,} of {info.total_params:,} ({share:.3g}%)"
    else:
        trainable_line = "not recorded"
    summary = info.summary or render_section(
        "generic/summary.md", base_model=info.base_model, method=info.method, vlm=info.task == "image-text-to-text")
    template = _template_source("model_card.md")
    return ModelCard.from_template(
        _card_data(info, name, revision),
        template_str=template,
        model_name=name,
        summary=summary,
        base_model=info.base_model,
        dataset=info.dataset,
        dataset_link=_dataset_link(info.dataset, revision),
        dataset_config=info.dataset_config,
        dataset_revision=revision,
        training_data=trained,
        training_data_link=_dataset_link(trained.dataset, trained.revision) if trained is not None else None,
        method=info.method,
        task=info.task,
        trainable_line=trainable_line,
        peak_memory_mb=info.peak_memory_mb,
        wall_time_s=info.wall_time_s,
        hyperparameters=info.hyperparameters,
        eval_results=info.eval_results,
        usage_snippet=(info.usage_snippet or _default_usage_snippet(repo_id or name, info)).strip(),
        intended_use=info.intended_use.strip(),
        limitations=info.limitations.strip(),
        evaluation=info.evaluation.strip(),
        citation=info.citation.strip(),
    )


def _check_model_folder(source: Path) -> None:
    if not source.is_dir():
        raise FileNotFoundError(f"model folder {source} does not exist")
    weights = [p for pattern in ("*.safetensors", "pytorch_model*.bin", "adapter_model.bin", "*.gguf") for p in source.glob(pattern)]
    if not weights:
        raise FileNotFoundError(
            f"{source} holds no weights (*.safetensors, pytorch_model*.bin, adapter_model.bin, *.gguf): "
            "point --source at the folder save_pretrained wrote"
        )


def rendered_by_vilbias(readme: Path) -> bool:
    """Whether ``readme`` is a model card :func:`render_model_card` wrote (its tags hold ``vilbias``)."""
    try:
        return "vilbias" in (ModelCard.load(readme).data.tags or [])
    except (ValueError, OSError):  # no card metadata, unreadable
        return False


def push_model(
    source_dir: str | Path,
    repo_id: str,
    *,
    info: ModelCardInfo,
    token: str | None = None,
    private: bool = False,
    commit_message: str | None = None,
) -> str:
    """Upload the folder with its rendered card as ``README.md``, as one commit.

    The card is also written into ``source_dir/README.md`` when there is none or it is a card
    vilbias rendered (tagged ``vilbias``); any other ``README.md`` there (one of your own, or the
    one a trainer wrote) stays as it is, and only the Hub gets the new card.

    Args:
        source_dir: the folder ``save_pretrained`` wrote (weights or adapters, config,
            processor/tokenizer files).
        repo_id: ``ORG/NAME`` of the model repo (created if missing).
        info: what the card states.
        token: Hub token; ``HF_TOKEN`` or the saved login when omitted.
        private: create the repo private (an existing repo keeps its visibility).
        commit_message: defaults to "Upload <method> model trained on <dataset>@<revision>".

    Returns:
        The commit id on ``main`` holding the upload.
    """
    source = Path(source_dir)
    _check_model_folder(source)
    token = resolve_token(token)
    api = HfApi()
    check_token(api, token)
    card = render_model_card(info, repo_id)
    readme = source / "README.md"
    if not readme.exists() or rendered_by_vilbias(readme):
        card.save(readme)
    info.save(source)
    api.create_repo(repo_id, repo_type="model", private=private, exist_ok=True, token=token)
    message = commit_message or (
        f"Upload {info.method} model trained on {info.dataset}@{info.dataset_revision or 'unpinned'}"
    )
    files = sorted(p.relative_to(source).as_posix() for p in source.rglob("*") if p.is_file())
    operations = [CommitOperationAdd(path_in_repo=f, path_or_fileobj=source / f) for f in
                  filter_repo_objects(files, allow_patterns=ALLOW_PATTERNS, ignore_patterns=IGNORE_PATTERNS) if f != "README.md"]
    operations.append(CommitOperationAdd(path_in_repo="README.md", path_or_fileobj=str(card).encode()))
    commit = api.create_commit(repo_id, operations, repo_type="model", commit_message=message, token=token)
    logger.info("pushed %s to %s (commit %s)", source, repo_id, commit.oid)
    return commit.oid
