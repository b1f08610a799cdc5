"""What the audit commands are told: :class:`AuditConfig` (``audit run``), :class:`AnnotatorAuditConfig`
(``audit annotators``), :class:`MetricsConfig` (``audit metrics``), :class:`AuditSpaceConfig`
(``audit space``) and :class:`ProbesetConfig` (``audit probeset``), with the command line's
modality words."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vilbias.audit.questions import PARADIGMS
from vilbias.audit.statistics import MetricOptions
from vilbias.models.scoring import CHOICE_STYLES, NORMALIZATIONS

logger = logging.getLogger(__name__)


MODALITY_WORDS = {"text+image": "image", "text": "text"}
"""The command line's modalities (the words of ``vilbias evaluate --modality`` and the classifier's) ->
VIGNETTE's name of the question variant, which responses files, summaries and plots keep."""


_OLD_MODALITY_WORDS = {"image": "text+image"}


def command_line_modalities(values: list[str] | None) -> list[str] | None:
    """``values`` in the command line's words; VIGNETTE's ``image`` is still taken, with a deprecation line."""
    if values is None:
        return None
    for old in set(values) & set(_OLD_MODALITY_WORDS):
        logger.warning("--modalities %s is deprecated and will be removed in the next release; use %s",
                       old, _OLD_MODALITY_WORDS[old])
    return [_OLD_MODALITY_WORDS.get(v, v) for v in values]


@dataclass
class AuditConfig:
    output: Path = field(metadata={
        "help": "Output folder: audit.sqlite (every call), responses.jsonl, summary.json, metrics/. New, empty, or an "
                "earlier audit's, which is resumed; a folder of other files is refused.",
        "deprecated": ["--out"]})
    model: str | None = field(default=None, metadata={
        "help": "The model: openai:<model>@<base_url> (a chat server), smollm2 (the embedded text LM), or a "
                "transformers checkpoint folder / Hub id (scored by option log-likelihood)."})
    manifest: Path | None = field(default=None, metadata={
        "help": "Paired images: a manifest.jsonl, a folder holding one, or a folder in VIGNETTE's image layout "
                "(default: the embedded probe set, rendered into <output>/probeset)."})
    space: Path | None = field(default=None, metadata={
        "help": "Question space JSON (identities, activities, roles, traits) from `vilbias audit space` "
                "(default: the embedded stratified subset)."})
    paradigms: list[str] = field(default_factory=lambda: list(PARADIGMS), metadata={
        "help": "Paradigms to ask: factuality, perception, stereotyping, decision.", "choices": list(PARADIGMS)})
    modalities: list[str] | None = field(default=None, metadata={
        "help": "text+image (the question with the paired image) and/or text (the people described in words). "
                "Default: both for a vision model, text for a text-only one.", "metavar": "{text+image,text}"})
    limit: int | None = field(default=None, metadata={
        "help": "Ask only the questions of the first N pairs (the embedded manifest lists pairs round-robin "
                "over the eight dimensions)."})
    temperature: float = field(default=0.7, metadata={
        "help": "Sampling temperature of the answer (VIGNETTE samples at 0.7); 0 takes the most likely option."})
    seed: int = field(default=0, metadata={"help": "Seed of the sampled answers (per question for local models)."})
    choice: str = field(default="json_schema", metadata={
        "help": "How a chat server is constrained to the options: json_schema, structured_outputs (vLLM >= 0.10), "
                "guided_choice (vLLM < 0.12) or none (the reply is matched to an option).",
        "choices": list(CHOICE_STYLES)})
    normalize: str = field(default="sum", metadata={
        "help": "Local models: choose on the options' summed log-probabilities (sum) or per token (mean).",
        "choices": list(NORMALIZATIONS)})
    max_new_tokens: int = field(default=48, metadata={
        "help": "Reply budget of a chat server (an option, or its JSON).", "deprecated": ["--max-tokens"]})
    concurrency: int = field(default=16, metadata={"help": "Chat server: requests in flight."})
    model_revision: str | None = field(default=None, metadata={"help": "Revision of a Hub --model.", "deprecated": ["--revision"]})
    load_in_4bit: bool = field(default=False, metadata={"help": "Load a local VLM in 4-bit NF4 (bitsandbytes, GPU)."})
    metrics: bool = field(default=True, metadata={"help": "Write the metrics and plots to <output>/metrics at the end."})
    alpha: float = field(default=0.05, metadata={
        "help": "Significance threshold of the metrics: p < alpha is significant, intervals are (1 - alpha)."})
    progress: bool = field(default=True, metadata={"help": "Show a progress bar."})
    backend: Any = field(default=None, metadata={"cli": False, "help": "A ready chat backend (Python callers, tests)."})
    model_name: str | None = field(default=None, metadata={"cli": False, "help": "Name stored with the calls (default: --model)."})
    vision: bool | None = field(default=None, metadata={"cli": False, "help": "Whether the ready backend sees images."})
    model_identity: dict[str, Any] | None = field(default=None, metadata={
        "cli": False, "help": "What identifies the model in the fingerprint (default: the spec)."})

    def __post_init__(self):
        self.modalities = command_line_modalities(self.modalities)

    def validate(self) -> None:
        """Fail before anything is loaded or asked."""
        if self.model is None and self.backend is None:
            raise ValueError("name the model to audit with --model (openai:<model>@<base_url>, smollm2, or a checkpoint)")
        if not self.paradigms or set(self.paradigms) - set(PARADIGMS):
            raise ValueError(f"--paradigms must name some of {', '.join(PARADIGMS)}")
        if self.modalities is not None and (not self.modalities or set(self.modalities) - set(MODALITY_WORDS)):
            raise ValueError(f"--modalities must name some of {', '.join(MODALITY_WORDS)}")
        if self.choice not in CHOICE_STYLES:
            raise ValueError(f"--choice must be one of {', '.join(CHOICE_STYLES)}")
        if self.normalize not in NORMALIZATIONS:
            raise ValueError(f"--normalize must be one of {', '.join(NORMALIZATIONS)}")
        if self.temperature < 0:
            raise ValueError("--temperature must be >= 0")
        if self.limit is not None and self.limit < 1:
            raise ValueError("--limit must be at least 1")
        if self.max_new_tokens < 1 or self.concurrency < 1:
            raise ValueError("--max-new-tokens and --concurrency must be at least 1")
        if self.manifest is not None and not Path(self.manifest).exists():
            raise FileNotFoundError(f"manifest {self.manifest} does not exist")
        if self.space is not None and not Path(self.space).is_file():
            raise FileNotFoundError(f"question space {self.space} does not exist")


@dataclass
class AnnotatorAuditConfig:
    workdir: Path = field(metadata={"help": "The annotation workdir; results go to <workdir>/audit/ and annotations.sqlite."})
    annotators: Path | None = field(default=None, metadata={
        "help": "The annotators file of `vilbias annotate` (default: the embedded SmolLM2-135M-Instruct)."})
    paradigms: list[str] = field(default_factory=lambda: list(PARADIGMS), metadata={
        "help": "Paradigms to ask.", "choices": list(PARADIGMS)})
    modalities: list[str] = field(default_factory=lambda: ["text"], metadata={
        "help": "text for every annotator; text+image too for vision annotators.", "metavar": "{text+image,text}"})
    limit: int | None = field(default=None, metadata={"help": "Only the first N pairs of the probe set (a quick check)."})
    choice: str = field(default="json_schema", metadata={
        "help": "How chat servers are constrained to the options (see `vilbias audit run --help`).",
        "choices": ["json_schema", "structured_outputs", "guided_choice", "none"]})
    metrics: bool = field(default=True, metadata={"help": "Write each annotator's metrics and plots."})
    progress: bool = field(default=True, metadata={"help": "Progress bars on stderr: on unless --no-progress is given."})
    annotator_specs: list[Any] | None = field(default=None, metadata={"cli": False, "help": "AnnotatorSpecs given from Python."})
    backends: dict[str, Any] | None = field(default=None, metadata={"cli": False, "help": "Ready backends by annotator name."})

    def __post_init__(self):
        self.modalities = command_line_modalities(self.modalities)
        if not self.modalities or set(self.modalities) - set(MODALITY_WORDS):
            raise ValueError(f"--modalities must name some of {', '.join(MODALITY_WORDS)}")


@dataclass
class MetricsConfig:
    responses: Path = field(metadata={"help": "A responses file (JSON Lines or CSV; format in docs/audit.md)."})
    output: Path = field(metadata={"help": "Folder for the metric tables (CSV, metrics.json) and plots: new, empty or earlier metrics "
                                         "(rewritten); a folder of other files is refused.", "deprecated": ["--out"]})
    plots: bool = field(default=True, metadata={"help": "Draw the figures too."})
    # Its field (--alpha) is a flag of its own: `audit metrics` parses MetricOptions beside this config.
    statistics: MetricOptions = field(default_factory=MetricOptions, metadata={"cli": False, "help": "Significance and intervals"})


@dataclass
class AuditSpaceConfig:
    vignette: Path = field(metadata={"help": "Folder with VIGNETTE's activities.json, roles.json, sscm_dictionary.csv, "
                                             "merged_descriptors_visibility.csv."})
    output: Path = field(metadata={"help": "Where to write the question space JSON (for --space); an existing file is replaced only "
                                         "when it is a question space.", "deprecated": ["--out"]})
    subset: bool = field(default=False, metadata={"help": "Write the embedded stratified subset instead of the full space."})


@dataclass
class ProbesetConfig:
    output: Path = field(metadata={"help": "Folder for the rendered probe set (manifest.jsonl + images/): new, empty or an earlier probe "
                                         "set (its images are kept); a folder of other files is refused.", "deprecated": ["--out"]})
    limit: int | None = field(default=None, metadata={"help": "Only the first N pairs."})
