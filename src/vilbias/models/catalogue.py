"""The model catalogue: one way to name a model, one loader for every kind.

Annotation, evaluation, the judge and the stereotype audit all name models the same way, as a
string or its YAML form, and load them here (``load_model`` for a stage that asks the task's
question or classifies; ``load_chat_backend`` for a stage that only needs the chat protocol):

=========================  ==========================================================  =====================
string                     YAML (``kind:`` or its older name ``backend:``)              what it is
=========================  ==========================================================  =====================
``openai:MODEL@URL``       ``{kind: openai, model: MODEL, base_url: URL}``             an OpenAI-compatible
                                                                                       chat server (vLLM,
                                                                                       TGI, Ollama, OpenAI)
``smollm2``                ``{kind: smollm2}``                                         the embedded
                                                                                       SmolLM2-135M (text)
``transformers:MODEL``     ``{kind: transformers, model: MODEL, gguf_file: F}``        a local chat LM/VLM
``PATH`` or ``ORG/NAME``   ``{kind: checkpoint, model: PATH, revision: R}``            a checkpoint, kind
                                                                                       read from its files
=========================  ==========================================================  =====================

The YAML form carries the options a string cannot: ``params`` (sampling parameters sent with
every request), ``vision``, ``api_key_env`` (default ``OPENAI_API_KEY``; the key is read from the
environment, never stored), ``concurrency``, ``timeout_s``, ``max_retries``, ``batch_size``,
``gguf_file``, ``revision``, ``languages`` (what the model reads; :func:`declared_languages`),
``inference_precision`` and ``inference_runtime`` (how a sentence checkpoint runs; its config's
when unset, ``auto`` in the shipped one: the fastest path that answers alike on this CPU). A
checkpoint's string form carries these two as a query: ``PATH?inference_precision=float32`` (or
``...?inference_precision=int8&inference_runtime=onnxruntime``).

A checkpoint is recognised from its files: ``adapter_config.json`` → a PEFT adapter on a VLM
(its base found from the adapter); ``config.json`` with ``model_type: vilbias-fusion`` → the
fusion classifier, ``vilbias-sentence-bias`` → the sentence-level bias model; ``architectures``
``*ForSequenceClassification`` → a text classifier; ``*ForCausalLM`` → a text LM; anything else →
a VLM (``AutoModelForImageTextToText``).

Callers that show more than a label (the Space: probabilities, what the confidence means, sentence
evidence, a VLM's vote share) load a checkpoint as a predictor, ``predict(item) -> ModelOutput``
(:mod:`vilbias.models.predictors`), with :func:`load_predictor`; evaluation's classifiers are built
on the same predictors.

Each kind is declared once, beside its backend, as a :class:`~vilbias.models.kinds.ModelKind`
registered with :func:`~vilbias.models.kinds.register_kind` (``openai`` in :mod:`~vilbias.models.chat_openai`,
``transformers`` and ``smollm2`` in :mod:`~vilbias.models.chat_local`, ``checkpoint`` here): it parses
its string form, loads, and carries the capabilities the stages ask about (``spec.kind_info.local``,
``.checkpoint``, ``.scores_label_likelihood``). Adding a kind is one new module with its class and
its tests (a predictor kind: its class in :mod:`vilbias.models.predictors` and one line in
:data:`PREDICTORS`).

Why this module is long: it is the one place a model is named and loaded (the spec, the
``checkpoint`` kind and the loaders it reads a checkpoint's files with, the predictors' table);
the chat kinds live beside their backends, and what remains belongs to one lookup.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

# its lazy map: the torch-backed models load when a loader asks for one
from vilbias import models
from vilbias.languages import ANY, normalize_languages
from vilbias.models.chat import ChatBackend
from vilbias.models.chat_local import SmolLM2Kind, TransformersBackend, TransformersKind
from vilbias.models.chat_openai import OpenAIKind
from vilbias.models.kinds import (
    KINDS,
    ClassifierModel,
    GenerativeModel,
    LoadOptions,
    Model,
    ModelKind,
    kind_info,
    register_kind,
)
from vilbias.models.predictors import (
    FusionPredictor,
    NeedsGPUError,
    Predictor,
    SentencePredictor,
    VLMPredictor,
    predict_batch,
    sample_answers,
)
from vilbias.paths import looks_local
from vilbias.task import LABEL_NAMES, Item, classifier_text

# torch and transformers (with vilbias.models.fusion and vlm, built on them) load when a loader
# first reads them from the package's lazy map: naming an OpenAI-compatible server must not cost a
# torch import.

logger = logging.getLogger(__name__)

HUB_TIMEOUT_S = 3.0
"""Seconds to wait for the Hub before a Hub id is reported unreachable (``HF_HUB_ETAG_TIMEOUT``
overrides it), instead of huggingface_hub's minute of retries."""


def our_model_types() -> dict[str, str]:
    """``model_type`` of this project's own checkpoints -> their key in :data:`PREDICTORS`, read
    from their config classes (:data:`vilbias.models.configs.CONFIGS`, imported on first use:
    they import transformers)."""
    return {config.model_type: kind for kind, config in models.CONFIGS.items()}


def local_folder(name: str, what: str = "") -> Path | None:
    """The folder ``name`` names, or None for a Hub id; one line, at once, for a local-looking
    name that does not exist."""
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    if looks_local(name):
        what = f"{what} " if what else ""
        raise FileNotFoundError(f"{what}{name} does not exist (taken for a local folder)")
    return None


def hub_file(repo_id: str, filename: str, revision: str | None = None) -> Path | None:
    """A file of a Hub model repo (from the cache when ``HF_HUB_OFFLINE`` is set or the Hub cannot
    be reached), or None when the repo has no such file. A repo that does not exist, or that
    cannot be reached and is not cached, fails in one line within :data:`HUB_TIMEOUT_S`, with
    none of huggingface_hub's retries or their logs."""
    from huggingface_hub import constants, get_hf_file_metadata, hf_hub_download, hf_hub_url
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        HTTPError,  # the base of the HTTP client's errors, whichever client huggingface_hub uses
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )
    from huggingface_hub.file_download import repo_folder_name

    taken = f"{repo_id} was taken for a Hub model id"
    local_only, reason = constants.HF_HUB_OFFLINE, "HF_HUB_OFFLINE is set"
    if not local_only:
        timeout = float(os.environ.get("HF_HUB_ETAG_TIMEOUT") or HUB_TIMEOUT_S)
        try:
            get_hf_file_metadata(hf_hub_url(repo_id, filename, revision=revision), timeout=timeout)
        except EntryNotFoundError:
            return None
        except GatedRepoError:
            raise PermissionError(f"{taken}; it is gated: accept its terms on the Hub and log in (hf auth login)") from None
        except RevisionNotFoundError:
            raise FileNotFoundError(f"{taken}; it has no revision {revision}") from None
        except RepositoryNotFoundError:
            raise FileNotFoundError(f"{taken} and there is no such model at {constants.ENDPOINT} (or it is private and "
                                    "no token was given), nor a local folder of that name") from None
        except (HTTPError, OSError) as e:  # unreachable: the cache may still hold it
            local_only, reason = True, f"the Hub at {constants.ENDPOINT} cannot be reached ({type(e).__name__})"
    try:
        return Path(hf_hub_download(repo_id, filename, revision=revision, local_files_only=local_only))
    except LocalEntryNotFoundError:  # (an EntryNotFoundError: caught first)
        cached = Path(constants.HF_HUB_CACHE, repo_folder_name(repo_id=repo_id, repo_type="model")).is_dir()
        if cached:
            return None  # the cache holds the repo, not this file
        raise FileNotFoundError(f"{taken}, {reason} and the cache does not hold it; nor is there a local folder "
                                "of that name") from None
    except EntryNotFoundError:
        return None


@dataclass
class ModelSpec:
    """A model, as the catalogue names it (see the module docstring for the string form)."""

    kind: str = "checkpoint"
    """``openai``, ``smollm2``, ``transformers``, ``checkpoint`` or another registered kind
    (:data:`vilbias.models.kinds.KINDS`)."""
    model: str = ""
    """Model id at the server, Hub id or local path (empty for ``smollm2``)."""
    base_url: str | None = None
    """The server's OpenAI-compatible endpoint (``openai``), e.g. ``http://localhost:8000/v1``."""
    revision: str | None = None
    """Hub revision of a checkpoint."""
    vision: bool = False
    """Whether a ``transformers`` chat model takes images (checkpoints and servers know it themselves)."""
    params: dict[str, Any] = field(default_factory=dict)
    """Sampling parameters sent with every request (temperature, max_tokens, seed, ...)."""
    api_key_env: str | None = None
    """Environment variable holding a server's key (default ``OPENAI_API_KEY``)."""
    concurrency: int = 16
    """Requests in flight to a server."""
    timeout_s: float = 120.0
    """Seconds before a server request is abandoned (and retried)."""
    max_retries: int = 5
    """Retries of a failed server request (429/5xx/timeouts), with backoff."""
    batch_size: int = 4
    """Generation batch size of a local model."""
    gguf_file: str | None = None
    """A GGUF file inside ``model`` to load with transformers' ``gguf_file=``."""
    languages: list[str] | None = None
    """The languages the model reads (ISO 639-1 codes, or ``[any]``); on an item in another it
    abstains instead of labelling. None: what the checkpoint declares (:func:`declared_languages`)."""
    inference_precision: str | None = None
    """How a sentence checkpoint runs its encoder (``auto``, ``float32``, ``bfloat16``, ``int8``:
    :attr:`~vilbias.models.configs.SentenceBiasConfig.inference_precision`). None: its config's."""
    inference_runtime: str | None = None
    """What runs a sentence checkpoint's passes (``auto``, ``torch``, ``onnxruntime``). None: its config's."""

    @classmethod
    def parse(cls, spec: str | Mapping[str, Any] | ModelSpec) -> ModelSpec:
        """The spec a string or its YAML form names.

        Raises:
            ValueError: a malformed string or an unknown kind or field, in one sentence.
        """
        if isinstance(spec, ModelSpec):
            return spec
        if isinstance(spec, Mapping):
            data = dict(spec)
            if "backend" in data:  # the annotators file's older name for the kind
                data.setdefault("kind", data.pop("backend"))
            unknown = set(data) - {f.name for f in fields(cls)}
            if unknown:
                raise ValueError(f"model spec {spec!r}: unknown field(s) {', '.join(sorted(unknown))}")
            parsed = cls(**data)
        else:
            # the registered kinds' string forms (a prefix, or a name); anything else is a checkpoint
            fields_ = next((f for info in KINDS.values() if (f := info.parse(spec)) is not None), None)
            parsed = cls(**(fields_ or {"kind": DEFAULT_KIND, "model": spec}))
        parsed.validate()
        return parsed

    @property
    def kind_info(self) -> type[ModelKind]:
        """The spec's kind and its capabilities (:mod:`vilbias.models.kinds`)."""
        return kind_info(self.kind)

    def validate(self) -> None:
        self.kind_info.validate(self)
        if not isinstance(self.params, dict):
            raise ValueError(f"model {self.model or self.kind!r}: params must be a mapping")
        try:
            normalize_languages(self.languages)
        except ValueError as e:
            raise ValueError(f"model {self.model or self.kind!r}: {e}") from None
        for name in ("inference_precision", "inference_runtime"):
            if getattr(self, name) is None:
                continue
            # the allowed values live with the sentence model's config (transformers): read only when asked for
            allowed = getattr(models, name.upper() + "S")
            if getattr(self, name) not in allowed:
                raise ValueError(f"model {self.model or self.kind!r}: {name} must be one of {', '.join(allowed)}, not {getattr(self, name)!r}")

    @property
    def inference(self) -> dict[str, str]:
        """The inference settings the spec asks for, as ``from_pretrained`` keywords."""
        return {k: v for k, v in (("inference_precision", self.inference_precision), ("inference_runtime", self.inference_runtime)) if v}

    def __str__(self) -> str:
        """The string form (options the string cannot carry are left out)."""
        return self.kind_info.to_string(self)

    @property
    def display_name(self) -> str:
        return self.model or self.kind


# -- the loaders, one per kind ------------------------------------------------------------------


def load_chat_backend(spec: str | Mapping[str, Any] | ModelSpec) -> ChatBackend:
    """The chat backend a chat-kind spec names (``openai``, ``smollm2``, ``transformers``, or a
    registered kind's); a model not there fails in one line first."""
    spec = ModelSpec.parse(spec)
    if spec.kind_info.checked_on_disk:
        check_spec(spec)
    return spec.kind_info.chat_backend(spec)


def _config_file(name_or_path: str, filename: str, revision: str | None) -> dict | None:
    folder = local_folder(name_or_path)
    f = folder / filename if folder is not None else hub_file(name_or_path, filename, revision)
    return json.loads(f.read_text(encoding="utf-8")) if f is not None and f.is_file() else None


def _checkpoint_config(spec: ModelSpec) -> dict | None:
    """A checkpoint's ``config.json``, or None for a PEFT adapter (``adapter_config.json``: a VLM's)."""
    if _config_file(spec.model, "adapter_config.json", spec.revision) is not None:
        return None
    config = _config_file(spec.model, "config.json", spec.revision)
    if config is None:
        raise FileNotFoundError(f"{spec.model} has no config.json or adapter_config.json: not a model checkpoint")
    return config


DEFAULT_KIND = "checkpoint"
"""The kind of a spec string no registered kind claims: a checkpoint folder or Hub id."""


@register_kind
class CheckpointKind(ModelKind):
    """``PATH`` or ``ORG/NAME`` — a trained checkpoint, what it is read from its files: a predictor
    (this project's sentence and fusion models, a text classifier), a text LM or a VLM (a PEFT
    adapter on its base). It runs here; its languages and training-data record are its files'."""

    name = DEFAULT_KIND
    local = True
    checkpoint = True
    checked_on_disk = True

    @classmethod
    def parse(cls, text: str) -> dict[str, Any] | None:
        """A checkpoint with its inference settings as a query (``PATH?inference_precision=int8``);
        a plain path or Hub id is what no other kind claims (ModelSpec.parse's default)."""
        model, sep, query = text.partition("?")
        if not sep:
            return None
        settings = dict(part.partition("=")[::2] for part in query.split("&") if part)
        unknown = set(settings) - {"inference_precision", "inference_runtime"}
        if unknown or not model:
            raise ValueError(f"{text!r}: a checkpoint's string form takes inference_precision and inference_runtime after '?', "
                             "e.g. training/default_model?inference_precision=float32")
        return {"kind": cls.name, "model": model, **settings}

    @classmethod
    def to_string(cls, spec: ModelSpec) -> str:
        query = "&".join(f"{k}={v}" for k, v in spec.inference.items())
        return f"{spec.model}?{query}" if query else spec.model

    @classmethod
    def load(cls, spec: ModelSpec, options: LoadOptions) -> Model:
        return _checkpoint(spec, options)


def _checkpoint(spec: ModelSpec, options: LoadOptions) -> Model:
    name, revision = spec.model, spec.revision
    config = _checkpoint_config(spec)
    if config is None:
        return _vlm(spec, options)
    architectures = config.get("architectures") or []
    ours = our_model_types().get(config.get("model_type"))
    if ours == "sentence" and options.exact and spec.inference_precision is None:
        spec = replace(spec, inference_precision="float32")
    if ours or any(a.endswith("ForSequenceClassification") for a in architectures):
        if options.generative_only:
            raise ValueError(f"{name} is a classifier; the judge must be a generative model")
        return _classifier(PREDICTORS[ours](spec), name) if ours else _text_classifier(spec, options.batch_size)
    if any(a.endswith("ForCausalLM") for a in architectures):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(name, revision=revision)
        model = AutoModelForCausalLM.from_pretrained(name, revision=revision, dtype="auto").eval()
        backend = TransformersBackend(model, tokenizer, vision=False, params=options.params, batch_size=options.batch_size)
        return GenerativeModel(backend, name=name, vision=False, kind="transformers-text", params=options.params)
    return _vlm(spec, options)


def _vlm(spec: ModelSpec, options: LoadOptions) -> GenerativeModel:
    model, processor = load_vlm_model(spec.model, revision=spec.revision, load_in_4bit=options.load_in_4bit, merge=options.merge)
    backend = TransformersBackend(model, processor, vision=True, params=options.params, batch_size=options.batch_size)
    return GenerativeModel(backend, name=spec.model, vision=True, kind="transformers-vlm", params=options.params)


# -- the checkpoints themselves, for callers that need more than a label (the Space) ----------------


def load_vlm_model(name_or_path: str, *, revision: str | None = None, load_in_4bit: bool = False, merge: bool = False,
                   device_map: str | None = None) -> tuple[Any, Any]:
    """``(model, processor)`` of a VLM checkpoint: a full model, or a PEFT adapter on its base."""
    return models.load_vlm(name_or_path, revision=revision, load_in_4bit=load_in_4bit, merge=merge, device_map=device_map)


def load_fusion(name_or_path: str, *, revision: str | None = None) -> Any:
    """The fusion classifier (:class:`vilbias.models.fusion.FusionForClassification`) of a folder or Hub repo."""
    return models.FusionForClassification.from_pretrained(name_or_path, revision=revision)


def load_sentence_model(name_or_path: str, *, revision: str | None = None, **inference: str) -> tuple[Any, Path]:
    """The sentence-level bias model (:class:`vilbias.models.sentence_bias.SentenceBiasModel`) of
    a folder or Hub repo, and the local folder it was read from (its metrics and card live there);
    ``inference`` (``inference_precision``, ``inference_runtime``) overrides its config's."""
    folder = local_folder(name_or_path)
    if folder is None:
        from huggingface_hub import snapshot_download

        if hub_file(name_or_path, "config.json", revision) is None:  # fails fast when unreachable
            raise FileNotFoundError(f"{name_or_path} has no config.json: not a sentence model")
        folder = Path(snapshot_download(name_or_path, revision=revision))
    return models.SentenceBiasModel.from_pretrained(folder, **inference), folder


def _label_order(id2label: dict) -> list[int]:
    """Map a classifier's output index to our class id, by label name when it uses ours."""
    names = {int(k): str(v).lower().replace(" ", "_") for k, v in (id2label or {}).items()}
    if set(names.values()) == set(LABEL_NAMES):
        return [LABEL_NAMES.index(names[i]) for i in range(len(names))]
    return list(range(len(LABEL_NAMES)))


def _classifier(predictor: Predictor, name: str) -> ClassifierModel:
    """A predictor as evaluation's classifier: its labels, one item at a time."""
    sentences = getattr(predictor, "sentence_probabilities", None)
    config = getattr(getattr(predictor, "model", None), "config", None)
    return ClassifierModel(lambda items: [out.label_id for out in predict_batch(predictor, items)], name=name,
                           uses_text=predictor.reads_text, uses_image=predictor.reads_image,
                           sentence_probabilities=(lambda texts: sentences(texts)[1]) if sentences else None,
                           article_rule=getattr(config, "article_rule", None),
                           runtime=getattr(getattr(predictor, "model", None), "runtime_reason", None))


def _text_classifier(spec: ModelSpec, batch_size: int) -> ClassifierModel:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(spec.model, revision=spec.revision)
    model = AutoModelForSequenceClassification.from_pretrained(spec.model, revision=spec.revision).eval()
    order = _label_order(model.config.id2label)
    max_length = min(getattr(tokenizer, "model_max_length", 512) or 512, 512)

    def predict(items: list[Item]) -> list[int]:
        out = []
        for start in range(0, len(items), batch_size):
            batch = items[start:start + batch_size]
            inputs = tokenizer([classifier_text(i.headline, i.article_text) for i in batch], truncation=True,
                               max_length=max_length, padding=True, return_tensors="pt").to(model.device)
            with torch.inference_mode():
                logits = model(**inputs).logits
            out.extend(order[int(j)] for j in logits.argmax(-1).tolist())
        return out

    return ClassifierModel(predict, name=spec.model, uses_text=True, uses_image=False)


# -- predictors: a loaded model behind ``predict(item) -> ModelOutput`` (vilbias.models.predictors) --


def _sentence_predictor(spec: ModelSpec, *, split_sentences: Callable[[str], list[str]] | None = None,
                        max_sentences: int | None = None) -> SentencePredictor:
    model, folder = load_sentence_model(spec.model, revision=spec.revision, **spec.inference)
    return SentencePredictor(model, folder, split_sentences=split_sentences, max_sentences=max_sentences)


def _fusion_predictor(spec: ModelSpec, *, temperature: float = 1.0, calibration: str = "") -> FusionPredictor:
    return FusionPredictor(load_fusion(spec.model, revision=spec.revision), temperature=temperature, calibration=calibration)


def _vlm_predictor(spec: ModelSpec, *, samples: int = 5, max_new_tokens: int = 160, load_in_4bit: bool = False,
                   generate: Callable[..., list] = sample_answers) -> VLMPredictor:
    import torch

    cuda = torch.cuda.is_available()
    if load_in_4bit and not cuda:
        raise NeedsGPUError(f"{spec.model} is a 4-bit model and needs a CUDA GPU")
    model, processor = load_vlm_model(spec.model, revision=spec.revision, load_in_4bit=load_in_4bit,
                                      device_map="auto" if cuda else None)
    return VLMPredictor(model, processor, samples=samples, max_new_tokens=max_new_tokens, generate=generate)


PREDICTORS: dict[str, Callable[..., Predictor]] = {
    "sentence": _sentence_predictor,
    "fusion": _fusion_predictor,
    "vlm": _vlm_predictor,
}
"""predictor kind -> loader ``(spec, **options) -> Predictor``. A new kind is a class in
:mod:`vilbias.models.predictors`, its loader here and its line in this dict."""


@dataclass(frozen=True)
class ResolvedModel:
    """A model spec resolved once (:func:`resolve_model`): the spec, its kind with the kind's
    capabilities, and for a checkpoint what its files say. A stage resolves each spec once and
    asks this object again and again: its files are read once, whatever is asked."""

    spec: ModelSpec
    checkpoint_kind: str | None
    """What a checkpoint is (:func:`checkpoint_kind`); None for the other kinds."""
    languages: tuple[str, ...]
    """What the model reads (:func:`declared_languages`)."""

    @property
    def kind(self) -> type[ModelKind]:
        """The registered kind (:mod:`vilbias.models.kinds`): ``kind.local``, ``kind.checkpoint``, ..."""
        return self.spec.kind_info

    @property
    def predictor_kind(self) -> str:
        """The key of :data:`PREDICTORS` its files name (a checkpoint)."""
        return self.checkpoint_kind if self.checkpoint_kind in PREDICTORS else "vlm"


def resolve_model(spec: str | Mapping[str, Any] | ModelSpec | ResolvedModel) -> ResolvedModel:
    """``spec`` parsed and, for a checkpoint, its config read, once (see :class:`ResolvedModel`).

    Raises:
        FileNotFoundError: a checkpoint without ``config.json`` or ``adapter_config.json``.
        ValueError: a malformed spec.
    """
    if isinstance(spec, ResolvedModel):
        return spec
    parsed = ModelSpec.parse(spec)
    if not parsed.kind_info.checkpoint:
        return ResolvedModel(parsed, None, normalize_languages(parsed.languages) if parsed.languages else (ANY,))
    config = _checkpoint_config(parsed)
    kind = _kind_of(config)
    if parsed.languages:
        languages = normalize_languages(parsed.languages)
    elif config is not None and config.get("languages"):
        languages = normalize_languages(config["languages"])
    else:
        languages = KIND_LANGUAGES.get(kind, (ANY,))
    return ResolvedModel(parsed, kind, languages)


def _kind_of(config: dict | None) -> str:
    """:func:`checkpoint_kind` from a checkpoint's ``config.json`` (None: a PEFT adapter)."""
    if config is None:
        return "vlm"
    ours = our_model_types().get(config.get("model_type"))
    if ours:
        return ours
    architectures = config.get("architectures") or []
    if any(a.endswith("ForSequenceClassification") for a in architectures):
        return "text_classifier"
    if any(a.endswith("ForCausalLM") for a in architectures):
        return "causal_lm"
    return "vlm"


def predictor_kind(spec: str | Mapping[str, Any] | ModelSpec | ResolvedModel) -> str:
    """The key of :data:`PREDICTORS` a checkpoint's files name (as :func:`load_model` reads them)."""
    return resolve_model(spec).predictor_kind


def checkpoint_kind(spec: str | Mapping[str, Any] | ModelSpec | ResolvedModel) -> str:
    """What a checkpoint is, from its files (as :func:`load_model` reads them): a key of
    :data:`PREDICTORS` for our own models and VLMs, ``causal_lm`` for a text LM and
    ``text_classifier`` for a ``*ForSequenceClassification`` of another project."""
    resolved = resolve_model(spec)
    return resolved.checkpoint_kind if resolved.checkpoint_kind is not None else _kind_of(_checkpoint_config(resolved.spec))


KIND_LANGUAGES: dict[str, tuple[str, ...]] = {"sentence": ("en",)}
"""Checkpoint kinds whose every model reads the same languages when its config declares none:
the sentence model's encoder (all-MiniLM-L6-v2) and its training data (BABE) are English."""


def declared_languages(spec: str | Mapping[str, Any] | ModelSpec | ResolvedModel) -> tuple[str, ...]:
    """The languages a model reads, as ISO 639-1 codes, or ``("any",)``
    (:data:`vilbias.languages.ANY`): the spec's ``languages``, else the ``languages`` its
    checkpoint's ``config.json`` records, else its kind's (:data:`KIND_LANGUAGES`: the shipped
    sentence model reads English), else any (chat models, VLMs, classifiers of other projects).

    Example::

        >>> declared_languages(str(shipped_sentence_model()))
        ('en',)
        >>> declared_languages("openai:Qwen/Qwen2.5-VL-7B-Instruct@http://localhost:8000/v1")
        ('any',)
    """
    return resolve_model(spec).languages


def shipped_sentence_model() -> Path:
    """The sentence-level bias model shipped with vilbias (``training/default_model``, package data
    of ``vilbias.training``): the Space's and the annotate stage's offline default."""
    from importlib import resources

    return Path(str(resources.files("vilbias.training") / "default_model"))


def load_predictor(spec: str | Mapping[str, Any] | ModelSpec | ResolvedModel, kind: str | None = None, **options: Any) -> Predictor:
    """The checkpoint ``spec`` names, behind :class:`vilbias.models.predictors.Predictor`.

    Args:
        spec: A checkpoint (path or Hub id, or its YAML form with ``revision``), or one resolved already.
        kind: A key of :data:`PREDICTORS`; None reads it from the checkpoint's files.
        **options: The kind's options: ``sentence``: ``split_sentences``, ``max_sentences``;
            ``fusion``: ``temperature``, ``calibration``; ``vlm``: ``samples``, ``max_new_tokens``,
            ``load_in_4bit``, ``generate``.
    """
    resolved = spec if isinstance(spec, ResolvedModel) else None
    parsed = resolved.spec if resolved else ModelSpec.parse(spec)
    if not parsed.kind_info.checkpoint:
        raise ValueError(f"{parsed}: a {parsed.kind} model is a chat backend (load_model), not a predictor checkpoint")
    if kind is None:  # a kind given by the caller needs no look at the checkpoint's files
        resolved = resolved or resolve_model(parsed)
        kind = resolved.predictor_kind
    if kind not in PREDICTORS:
        raise ValueError(f"unknown predictor kind {kind!r}: use {', '.join(PREDICTORS)}")
    predictor = PREDICTORS[kind](parsed, **options)
    if not getattr(predictor, "languages", None):  # a predictor may declare its own; else its checkpoint's
        predictor.languages = (resolved or resolve_model(parsed)).languages  # callers check items against it (check_language)
    return predictor


def check_spec(spec: str | Mapping[str, Any] | ModelSpec, what: str = "model") -> ModelSpec:
    """Parse ``spec`` and fail in one sentence, before anything is loaded, when it names a
    checkpoint or ``transformers`` model that is not there: a local folder that does not exist, or
    a Hub id the Hub does not have (one request, no retries; offline or unreachable, one the cache
    does not hold).

    Raises:
        FileNotFoundError: the path is missing or not a folder; the Hub has no such model.
        PermissionError: a gated Hub model.
        ValueError: a malformed spec.
    """
    parsed = ModelSpec.parse(spec)
    if not parsed.kind_info.checked_on_disk:
        return parsed
    if looks_local(parsed.model) and not Path(parsed.model).expanduser().is_dir():
        raise FileNotFoundError(f"{what} {parsed.model} does not exist (taken for a local folder): give a checkpoint "
                                "folder, a Hub id, openai:<model>@<base_url>, transformers:<model> or smollm2")
    if not looks_local(parsed.model):
        # One request (offline or unreachable, a look in the cache): a model that is not there fails
        # here in one line, before a dataset is read or anything loaded, not in transformers'
        # loaders after a minute of retries. A cached repo without this file passes (an adapter's).
        hub_file(parsed.model, parsed.gguf_file or "config.json", parsed.revision)
    return parsed


def load_model(spec: str | Mapping[str, Any] | ModelSpec, *, revision: str | None = None, **options: Any) -> Model:
    """Load what ``spec`` names (see the module docstring).

    Args:
        spec: A spec string or its YAML form.
        revision: Hub revision of a checkpoint (overrides the spec's).
        **options: Fields of :class:`LoadOptions` (batch size, answer budget, 4-bit, merge, ...).
    """
    parsed = ModelSpec.parse(spec)
    if revision is not None:
        parsed = ModelSpec(**{**asdict(parsed), "revision": revision})
    return parsed.kind_info.load(parsed, LoadOptions(**options))


__all__ = [
    "KIND_LANGUAGES", "ClassifierModel", "GenerativeModel", "KINDS", "CheckpointKind", "OpenAIKind", "SmolLM2Kind",
    "TransformersKind", "LoadOptions", "Model", "ModelSpec", "PREDICTORS", "check_spec", "checkpoint_kind", "declared_languages",
    "hub_file", "load_chat_backend", "ResolvedModel", "resolve_model", "load_fusion", "load_model", "load_predictor", "load_sentence_model", "load_vlm_model",
    "local_folder", "looks_local", "our_model_types", "predictor_kind", "shipped_sentence_model",
]
