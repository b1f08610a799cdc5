"""The annotators (``specs``): who is asked, as model specs of the catalogue plus the annotate stage's own fields.

The annotators file (YAML)::

    annotators:
      - name: qwen2.5-vl-7b
        backend: openai            # openai | transformers | smollm2 | checkpoint
        model: Qwen/Qwen2.5-VL-7B-Instruct
        base_url: http://localhost:8000/v1
        api_key_env: OPENAI_API_KEY  # optional; the default variable
        vision: true               # sees the image (needed for the multimodal prompt)
        structured_output: json_schema   # or none: the server cannot decode under a schema
        params: {temperature: 0.7, max_tokens: 512}
        concurrency: 32            # openai: requests in flight
      - name: llama3.1-8b
        backend: transformers
        model: meta-llama/Llama-3.1-8B-Instruct
        params: {temperature: 0.7, max_tokens: 512}
        batch_size: 8
      - name: babe-sentence-model
        backend: checkpoint        # any checkpoint the catalogue loads: read from its files
        model: path/to/default_model
        languages: [en]            # optional: what it reads (default: what the checkpoint declares;
                                   # the sentence model: en; chat models: any)

Shipped files are named by their stem: ``--annotators paper`` is the paper's three open VLMs
served by vLLM (``vilbias/annotate/annotators/paper.yaml``); ``--annotators smollm2`` the embedded
SmolLM2-135M-Instruct. Without a file, the sentence-level bias model shipped with vilbias (trained
on BABE's expert labels, ``training/default_model``) is the one annotator
(:data:`DEFAULT_ANNOTATORS`); it reads the text only, so only the text prompt is asked. A
checkpoint that labels without writing text (the sentence model, a fusion classifier) answers
from its evidence, one sample per item (:mod:`vilbias.annotate.classifiers`).

An annotator's model fields are a model spec of :mod:`vilbias.models.catalogue` (``backend:`` is
the spec's kind); ``name``, ``structured_output`` and ``serve`` are the annotate stage's own.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from collections import Counter
from dataclasses import dataclass, fields
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from vilbias.languages import normalize_languages
from vilbias.models.catalogue import ModelSpec, check_spec, local_folder, shipped_sentence_model

STRUCTURED_OUTPUT = ("json_schema", "none")


@dataclass(kw_only=True)
class AnnotatorSpec(ModelSpec):
    """One annotator: a model spec of the catalogue (its kind is the annotators file's
    ``backend:``), with the annotate stage's own fields."""

    name: str
    kind: str = "openai"
    structured_output: str = "json_schema"
    """``json_schema``: ask for the answer's JSON Schema (a server that rejects it is asked
    again without, and marked); ``none``: never ask (servers without structured output)."""
    serve: str | None = None
    """How to start the server (e.g. the ``vllm serve`` command); documentation only."""

    @classmethod
    def from_dict(cls, entry: dict[str, Any]) -> AnnotatorSpec:
        """An annotators-file entry (``backend:`` is the spec's ``kind``)."""
        entry = dict(entry)
        if "backend" in entry:
            entry["kind"] = entry.pop("backend")
        return cls(**entry)

    @property
    def backend(self) -> str:
        """The annotators file's name for the spec's kind."""
        return self.kind

    def model_spec(self) -> ModelSpec:
        """The model in the catalogue's terms, without the annotate stage's fields."""
        return ModelSpec(**{f.name: getattr(self, f.name) for f in fields(ModelSpec)})

    def fingerprint(self) -> str:
        """What makes this annotator's answers what they are. Where it is served (URL, key,
        concurrency, the serve command) is left out, so moving a model to another server re-asks
        nothing. ``structured_output`` counts only when switched off (stores written before it
        existed keep their fingerprints). How the K samples are requested (one request with ``n``,
        or one per sample on a server without it) is left out too: either way the samples are the
        annotator's, so a store written one way is complete for the other."""
        model = checkpoint_identity(self.model, self.revision) if self.kind_info.checkpoint else self.model
        payload = {"backend": self.backend, "model": model, "vision": self.vision, "params": self.params, "gguf_file": self.gguf_file}
        if self.structured_output != "json_schema":
            payload["structured_output"] = self.structured_output
        if self.languages:  # declared in the file: which items the annotator abstains on
            payload["languages"] = list(normalize_languages(self.languages))
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:12]

    def validate(self, *, check_model: bool = True) -> None:
        """Raise ValueError, in one line naming the annotator, for a spec that cannot run; with
        ``check_model`` (off for a backend the caller hands in ready), also for a model that is not there."""
        where = f"annotator {self.name!r}"
        if not self.name or not isinstance(self.name, str):
            raise ValueError("every annotator needs a name")
        try:
            super().validate()  # an unknown kind: one line naming the registered ones
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
        if check_model and self.kind_info.checked_on_disk:  # a model that is not there: one line, before any loading
            try:
                check_spec(self.model_spec(), self.backend)
            except (FileNotFoundError, PermissionError, ValueError) as e:
                raise ValueError(f"{where}: {e}") from None
        if self.structured_output not in STRUCTURED_OUTPUT:
            raise ValueError(f"{where}: structured_output {self.structured_output!r} is not one of {', '.join(STRUCTURED_OUTPUT)}")
        if "response_format" in self.params:
            raise ValueError(f"{where}: leave response_format out of params; structured_output sets it")
        # a chat kind generating here holds answers to the schema by a local grammar (a generative
        # checkpoint is checked when it is loaded: only then is it known not to be a predictor)
        local_chat = self.kind_info.local and not self.kind_info.checkpoint
        if local_chat and self.structured_output == "json_schema" and importlib.util.find_spec("llguidance") is None:
            raise ValueError(f"{where}: constrained decoding needs llguidance: pip install llguidance (or set structured_output: none)")


def checkpoint_identity(model: str, revision: str | None) -> str:
    """What a checkpoint is, for the fingerprint: a local folder by its config and the size and
    first MiB of each weights file (so moving the folder re-asks nothing and retraining it in place
    re-asks everything); a Hub id by its id and revision."""
    folder = local_folder(model) if model else None
    if folder is None:
        return f"{model}@{revision}" if revision else model
    h = hashlib.sha256()
    for f in sorted(folder.iterdir()):
        if f.name == "config.json" or f.suffix in (".safetensors", ".bin", ".pt"):
            h.update(f.name.encode())
            h.update(str(f.stat().st_size).encode())
            with f.open("rb") as fh:
                h.update(fh.read(1 << 20))
    return "sha256:" + h.hexdigest()


DEFAULT_NAME = "babe-sentence-model"
DEFAULT_ANNOTATORS = [AnnotatorSpec(name=DEFAULT_NAME, kind="checkpoint", model=str(shipped_sentence_model()))]
"""Used when no annotators file is given: the sentence-level bias model shipped with vilbias
(trained on BABE's expert labels), text only, one sample per item; asked the text prompt only."""


def shipped_annotators() -> dict[str, Path]:
    """The annotator files shipped with vilbias, by name (``paper`` -> ``annotators/paper.yaml``)."""
    folder = resources.files("vilbias.annotate") / "annotators"
    return {Path(f.name).stem: Path(str(f)) for f in folder.iterdir() if f.name.endswith(".yaml")}


def load_annotators(path: str | Path) -> list[AnnotatorSpec]:
    """Read and validate an annotators YAML file (see the module docstring), or a shipped one
    by name (:func:`shipped_annotators`)."""
    path = Path(path)
    if not path.is_file() and str(path) in (shipped := shipped_annotators()):
        path = shipped[str(path)]
    if not path.is_file():
        raise FileNotFoundError(f"annotators file {path} does not exist (shipped: {', '.join(sorted(shipped))})")
    data = yaml.safe_load(path.read_text()) or {}
    entries = data.get("annotators") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"{path}: expected a non-empty list under 'annotators:'")
    known = set(AnnotatorSpec.__dataclass_fields__) | {"backend"}
    specs = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ValueError(f"{path}: annotator #{i + 1} is not a mapping")
        unknown = sorted(set(entry) - known)
        if unknown:
            raise ValueError(f"{path}: annotator #{i + 1} has unknown fields {unknown}; known: {sorted(known)}")
        spec = AnnotatorSpec.from_dict(entry)
        spec.validate()
        specs.append(spec)
    names = Counter(s.name for s in specs)
    if dupes := [n for n, c in names.items() if c > 1]:
        raise ValueError(f"{path}: annotator names must be unique, repeated: {dupes}")
    return specs


def smollm2_annotator() -> AnnotatorSpec:
    """The embedded SmolLM2-135M-Instruct as an annotator (the shipped ``smollm2`` file): the chat
    model that needs neither a server nor a checkpoint (the stereotype audit's default)."""
    return load_annotators("smollm2")[0]
