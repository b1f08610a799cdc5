"""A model spec is resolved once into an object that carries its capabilities, and the annotate
stage asks that object: a checkpoint's files are read once per annotator, not once per question."""

from __future__ import annotations

import vilbias.models.catalogue as catalogue
from tests.models import echo_kind  # registers the "echo" kind
from vilbias.annotate.classifiers import load_annotator, resolve_annotator
from vilbias.annotate.specs import DEFAULT_ANNOTATORS, AnnotatorSpec
from vilbias.models.catalogue import (
    ResolvedModel,
    checkpoint_kind,
    declared_languages,
    resolve_model,
    shipped_sentence_model,
)


def test_a_chat_kind_resolves_without_reading_files(monkeypatch):
    monkeypatch.setattr(catalogue, "_checkpoint_config", lambda spec: (_ for _ in ()).throw(AssertionError("read")))
    resolved = resolve_model("openai:m@http://localhost:1/v1")
    assert resolved.kind.name == "openai" and not resolved.kind.local and resolved.checkpoint_kind is None
    assert resolved.languages == ("any",)
    assert resolve_model(resolved) is resolved  # resolving a resolved model is free
    assert resolve_model({"kind": "echo", "model": "m", "languages": ["de"]}).languages == ("de",)
    assert resolve_model("echo:m").kind is echo_kind.EchoKind


def test_a_checkpoint_is_read_once_and_answers_every_question(monkeypatch):
    reads = []
    real = catalogue._checkpoint_config
    monkeypatch.setattr(catalogue, "_checkpoint_config", lambda spec: reads.append(spec.model) or real(spec))
    resolved = resolve_model(str(shipped_sentence_model()))
    assert isinstance(resolved, ResolvedModel) and len(reads) == 1
    assert (resolved.checkpoint_kind, resolved.predictor_kind, resolved.languages) == ("sentence", "sentence", ("en",))
    # the catalogue's questions are asked of the resolved object: no further reads
    assert checkpoint_kind(resolved) == "sentence" and declared_languages(resolved) == ("en",) and len(reads) == 1


def test_the_annotate_stage_resolves_each_annotator_once(monkeypatch):
    reads = []
    real = catalogue._checkpoint_config
    monkeypatch.setattr(catalogue, "_checkpoint_config", lambda spec: reads.append(spec.model) or real(spec))
    annotator = resolve_annotator(DEFAULT_ANNOTATORS[0])
    assert annotator.deterministic and annotator.languages == ("en",) and annotator.local and len(reads) == 1
    assert resolve_annotator(annotator) is annotator
    chat = resolve_annotator(AnnotatorSpec(name="s", kind="openai", model="m", base_url="http://localhost:1/v1"))
    assert not chat.deterministic and not chat.local and chat.languages == ("any",) and len(reads) == 1
    backend = load_annotator(chat, ".")  # the resolved object, loaded: nothing parsed or read again
    assert backend.model == "m" and len(reads) == 1
