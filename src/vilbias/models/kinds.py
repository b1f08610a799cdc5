"""Model kinds: each declared once, beside the class that implements it, with what callers need to know.

A model spec (:class:`vilbias.models.catalogue.ModelSpec`) names its kind (``openai``,
``smollm2``, ``transformers``, ``checkpoint``, or one a user registers). The kind is a class
registered with :func:`register_kind` where its backend is defined (lm-evaluation-harness's
``@register_model``, lerobot's ``register_subclass``): it parses its string form, validates a
spec, loads it, and carries the capabilities the stages ask about as attributes — annotate,
evaluate and the audit read ``spec.kind_info.local``, never compare kind strings::

    from vilbias.models.kinds import ModelKind, register_kind

    @register_kind
    class EchoKind(ModelKind):
        name = "echo"
        prefix = "echo:"              # "echo:MODEL" in a spec string
        local = True                  # runs here: a local grammar, K samples in one call

        @classmethod
        def chat_backend(cls, spec):
            return EchoBackend(spec.model)

Adding a kind is that one file (imported before the spec is parsed) plus its tests.

What a loaded model is — :class:`GenerativeModel` (answers in text through a chat backend) or
:class:`ClassifierModel` (labels, no rationale) — is defined here too, so a kind's module can build
one without importing the catalogue.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:  # for annotations only
    from vilbias.models.chat import ChatBackend

ModelSpec = Any
"""A :class:`vilbias.models.catalogue.ModelSpec` (the catalogue imports this module, so the kinds
take the spec by its fields, not its class)."""


@dataclass
class GenerativeModel:
    """A model that answers in text (``Label: … / Reasoning: …``) through a chat backend."""

    backend: Any
    """Anything with ``chat(requests, on_result=None)`` (:class:`vilbias.models.chat.ChatBackend`)."""
    name: str
    vision: bool = True
    """Whether image parts reach the model (text-only backends drop them)."""
    kind: str = "generative"
    params: dict[str, Any] = field(default_factory=dict)
    """Sampling parameters sent with every request."""


@dataclass
class ClassifierModel:
    """A classifier: ``predict(items) -> class ids``, no rationale."""

    predict: Any
    """Callable ``list[Item] -> list[int]``."""
    name: str
    uses_text: bool = True
    uses_image: bool = False
    kind: str = "classifier"
    sentence_probabilities: Any = None
    """Sentence models: callable ``list[str] -> list[float]``, the calibrated P(biased) of each text
    read as one sentence (what the sentence-level protocol scores: ECE, articles); None otherwise."""
    article_rule: Any = None
    """Sentence models: how an article's label follows from its sentences' probabilities
    (:class:`vilbias.models.sentence_bias.ArticleRule`); None otherwise."""
    runtime: str | None = None
    """How the model runs on this machine and why (a sentence model's ``runtime_reason``), for the report."""


Model = GenerativeModel | ClassifierModel


@dataclass
class LoadOptions:
    """How a stage wants a model loaded (what the spec itself does not say)."""

    batch_size: int = 8
    max_new_tokens: int = 256
    load_in_4bit: bool = False
    """Load a VLM base as 4-bit NF4 (as QLoRA trained it)."""
    merge: bool = False
    """Merge a LoRA adapter into its base before generating."""
    concurrency: int | None = None
    """Requests in flight to a server (default: the spec's)."""
    generative_only: bool = False
    """Refuse classifiers (a judge must write text)."""
    exact: bool = False
    """Run a sentence checkpoint on its exact path, float32, unless the spec names a precision:
    an evaluation then reports the model as trained, the same figures on every CPU, instead of the
    faster path this CPU would choose (int8 on a CPU with VNNI but no AMX moves a probability by up
    to 0.07: the shipped model's test ECE 0.034 where the card says 0.029)."""

    @property
    def params(self) -> dict[str, Any]:
        return {"temperature": 0.0, "max_tokens": self.max_new_tokens}


class ModelKind:
    """One kind of model a spec can name. Subclass it beside the backend, set :attr:`name` and the
    capabilities, and decorate it with :func:`register_kind`."""

    name: ClassVar[str] = ""
    """The spec's ``kind:`` (the annotators file's ``backend:``)."""
    prefix: ClassVar[str | None] = None
    """The string form ``PREFIX<model>`` (``openai:`` takes ``<model>@<base_url>``), or None."""
    needs_model: ClassVar[bool] = True
    """A spec of this kind must name a model."""
    local: ClassVar[bool] = False
    """Generates in this process: answers held to the task's JSON Schema by a local grammar (needs
    llguidance), K samples asked as ``num_return_sequences``, rationales bounded to fit the budget."""
    checkpoint: ClassVar[bool] = False
    """A trained checkpoint read from its files: what it is, the languages it reads and its
    training-data record come from them, its identity is its files."""
    checked_on_disk: ClassVar[bool] = False
    """Its model is a folder or a Hub id checked before anything loads (one line when it is not there)."""
    scores_label_likelihood: ClassVar[bool] = True
    """Closed answers can be taken by comparing the labels' log-likelihoods (a server cannot)."""
    text_only: ClassVar[bool] = False
    """Never reads images."""
    remote: ClassVar[bool] = False
    """Asked over the network (a client, cheap to make): annotate asks such annotators together,
    their requests streaming through their server's one budget of requests in flight."""

    @classmethod
    def parse(cls, text: str) -> dict[str, Any] | None:
        """The spec fields a string of this kind names, or None when ``text`` is not one."""
        if cls.prefix and text.startswith(cls.prefix):
            return {"kind": cls.name, "model": text[len(cls.prefix):]}
        return None

    @classmethod
    def to_string(cls, spec: ModelSpec) -> str:
        """The string form (options the string cannot carry are left out)."""
        return f"{cls.prefix}{spec.model}" if cls.prefix else spec.model

    @classmethod
    def validate(cls, spec: ModelSpec) -> None:
        """Raise ValueError, in one sentence, for a spec of this kind that cannot run."""
        if cls.needs_model and not spec.model:
            raise ValueError(f"the {cls.name} kind needs a model")
        if cls.text_only and spec.vision:
            raise ValueError(f"a {cls.name} model is text-only; set vision: false")

    @classmethod
    def chat_backend(cls, spec: ModelSpec) -> ChatBackend:
        """The chat backend a spec of this kind names."""
        raise ValueError(f"{spec}: a {cls.name} model is not a chat backend")

    @classmethod
    def load(cls, spec: ModelSpec, options: LoadOptions) -> Model:
        """The model a spec of this kind names, as a stage asks for it (a chat kind: its backend)."""
        return GenerativeModel(cls.chat_backend(spec), name=spec.model or cls.name, vision=spec.vision and not cls.text_only,
                               kind=cls.name, params=options.params)


KINDS: dict[str, type[ModelKind]] = {}
"""Every registered kind, by name: what :class:`~vilbias.models.catalogue.ModelSpec` accepts."""


def register_kind(cls: type[ModelKind]) -> type[ModelKind]:
    """Declare a model kind (a class decorator); a second kind of the same name is refused."""
    if not cls.name:
        raise ValueError(f"{cls.__name__}: a model kind needs a name")
    known = KINDS.get(cls.name, cls)
    # the same class met again (its module imported a second time, as doctest collection does) replaces itself
    if (known.__module__, known.__qualname__) != (cls.__module__, cls.__qualname__):
        raise ValueError(f"model kind {cls.name!r} is already registered by {known.__module__}.{known.__qualname__}")
    KINDS[cls.name] = cls
    return cls


def kind_info(name: str) -> type[ModelKind]:
    """The registered kind ``name``.

    Raises:
        ValueError: no such kind, naming the registered ones.
    """
    if name not in KINDS:
        raise ValueError(f"unknown model kind {name!r}: use {', '.join(KINDS)}")
    return KINDS[name]


__all__ = ["KINDS", "ClassifierModel", "GenerativeModel", "LoadOptions", "Model", "ModelKind", "kind_info", "register_kind"]
