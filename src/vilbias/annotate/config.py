"""What ``vilbias annotate`` is told: :class:`AnnotateConfig`, validated before any model loads."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from vilbias.annotate import prompts as prompting
from vilbias.annotate.classifiers import PredictorAnnotator
from vilbias.annotate.specs import DEFAULT_ANNOTATORS, AnnotatorSpec, load_annotators
from vilbias.models.chat import ChatBackend
from vilbias.workdir import require_articles

logger = logging.getLogger(__name__)


@dataclass
class AnnotateConfig:
    workdir: Path = field(metadata={"help": "The workdir written by `vilbias ingest` (holds articles.jsonl)."})
    annotators: Path | None = field(
        default=None, metadata={"help": "YAML file listing the annotators, or a shipped one by name (paper, smollm2). Default: the "
                                        "sentence-level bias model shipped with vilbias (trained on BABE's expert labels; text only; reads English and "
                                        "abstains on other languages)."}
    )
    samples: int = field(default=3, metadata={"help": "K: samples asked of each annotator per item and prompt (majority of K)."})
    prompts: list[str] | None = field(
        default=None,
        metadata={
            "help": "Which prompts to ask: text, multimodal (default: both when every annotator sees images, else text).",
            "choices": list(prompting.PROMPT_NAMES),
        },
    )
    limit: int | None = field(default=None, metadata={"help": "Annotate only the first N items (for a trial run)."})
    max_article_chars: int = field(
        default=prompting.DEFAULT_MAX_ARTICLE_CHARS, metadata={"help": "Article text beyond this is cut from the prompt (small context windows)."}
    )
    progress: bool = field(default=True, metadata={"help": "Progress bars on stderr: on unless --no-progress is given."})
    annotator_specs: list[AnnotatorSpec] | None = field(
        default=None, metadata={"cli": False, "help": "Annotators given from Python (instead of a file)."}
    )
    backends: dict[str, ChatBackend | PredictorAnnotator] | None = field(
        default=None, metadata={"cli": False, "help": "Ready backends by annotator name (tests, reuse of a loaded model)."}
    )

    def resolve_annotators(self) -> list[AnnotatorSpec]:
        """Validate the config and return the annotators, before anything expensive starts."""
        require_articles(self.workdir)  # never ingested: run ingest first; ingested but empty: why
        if self.samples < 1:
            raise ValueError("--samples must be at least 1")
        if self.prompts is not None and (not self.prompts or set(self.prompts) - set(prompting.PROMPT_NAMES)):
            raise ValueError(f"--prompts must name some of {', '.join(prompting.PROMPT_NAMES)}")
        if self.limit is not None and self.limit < 1:
            raise ValueError("--limit must be at least 1")
        if self.annotator_specs is not None:
            specs = list(self.annotator_specs)
            for s in specs:
                s.validate(check_model=s.name not in (self.backends or {}))  # a ready backend needs no model lookup
        elif self.annotators is not None:
            specs = load_annotators(self.annotators)
        else:
            specs = list(DEFAULT_ANNOTATORS)
            logger.info("no annotators file: annotating with %s, the sentence-level bias model shipped with vilbias (trained on "
                        "BABE's expert labels; text only, one sample per item). Name others with --annotators (e.g. paper, smollm2).",
                        specs[0].name)
        return specs

    def resolve_prompts(self, specs: list[AnnotatorSpec]) -> list[str]:
        """The prompts to ask. The multimodal prompt sends the image, so every annotator must see
        it: a text-only one is refused rather than left to answer without the image."""
        text_only = [s.name for s in specs if not s.vision]
        if self.prompts is None:
            if len(text_only) == len(specs):
                logger.info("asking the text prompt only: no annotator sees images (multimodal_label needs vision annotators, e.g. --annotators paper)")
                return ["text"]
            prompts = list(prompting.PROMPT_NAMES)
        else:
            prompts = list(dict.fromkeys(self.prompts))
        if "multimodal" in prompts and text_only:
            raise ValueError(
                f"the multimodal prompt sends the image, but annotator(s) {', '.join(text_only)} are text-only "
                "(vision: false). Set vision: true for models that take images, use vision annotators "
                "(e.g. --annotators paper), or ask the text prompt only (--prompts text)."
            )
        return prompts
