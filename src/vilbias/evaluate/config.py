"""What ``vilbias evaluate`` and ``vilbias evaluate compare`` are told: their configs, checked before
anything is loaded or asked (see :mod:`vilbias.evaluate.runner` for the run itself).

This module imports nothing heavy at load time (``datasets``, the model catalogue, matplotlib: the
analysis imports it when it draws), so that parsing a command line and ``--help`` stay fast.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from vilbias.evaluate.analysis import compare_runs
from vilbias.task import ANSWER_LABELS, LABEL_NAMES

STORE_FILE = "evaluation.sqlite"
RESULTS_FILE = "results.json"
CLOSED_ANSWERS = ("auto", "constrained", "generated")
CLOSED_OPTIONS = [ANSWER_LABELS[i] for i in range(len(LABEL_NAMES))]
"""The closed question's possible answers, indexed by class id (``not biased``, ``biased``)."""
PROBES = ("none", "no_image", "swap_image", "headline_only")
"""The plain run, then the robustness probes :func:`vilbias.evaluate.data.apply_probe` applies."""


@dataclass
class EvaluateConfig:
    dataset: str | None = field(default=None, metadata={"help": "Dataset folder (as `vilbias build` writes it) or Hub repo id."})
    model: str | None = field(default=None, metadata={
        "help": "Checkpoint folder, Hub id, openai:<model>@<base_url> (key from OPENAI_API_KEY) or smollm2; "
                "with --cv, a folder holding one model per fold (fold_0 ... fold_4)."})
    # Not `config`: --config is every command's YAML file of options.
    dataset_config: str = field(default="default", metadata={"help": "Dataset config to evaluate: default or fold_K."})
    split: str = field(default="test", metadata={"help": "Split to evaluate (k-shot examples always come from train)."})
    dataset_revision: str | None = field(default=None, metadata={
        "help": "Dataset revision (tag such as v1.0.0).", "deprecated": ["--revision"]})
    model_revision: str | None = field(default=None, metadata={"help": "Revision of a Hub --model."})
    cv: bool = field(default=False, metadata={
        "help": "Cross-validated evaluation of per-fold models: --model is a folder of fold_0..fold_4 (as "
                "`vilbias train classifier --cv` writes it); each fold's model is scored on its own fold's test "
                "split, reported per fold and as mean ± std."})
    allow_overlap: bool = field(default=False, metadata={
        "help": "Score rows the model trained on anyway (a deliberate leak measurement); the report says so."})
    shots: list[int] = field(default_factory=lambda: [0], metadata={
        "help": "Prompting regimes for generative models: 0 = zero-shot, k = k-shot (paper: 0 5)."})
    modality: str = field(default="text+image", metadata={
        "help": "Generative models: send the image (text+image) or not (text).", "choices": ["text+image", "text"]})
    probes: list[str] = field(default_factory=list, metadata={
        "help": "Robustness probes besides the plain run: no_image swap_image headline_only, or all."})
    judge: str | None = field(default=None, metadata={
        "help": "LLM judge of the oVQA rationales: checkpoint, Hub id, openai:<model>@<base_url> or smollm2. "
                "Without one, generative models answer the closed question only."})
    judge_revision: str | None = field(default=None, metadata={"help": "Revision of a Hub --judge."})
    judge_retries: int = field(default=2, metadata={"help": "Times an invalid judge reply is asked again before it counts as a failure."})
    output: Path | None = field(default=None, metadata={
        "help": "Results folder (default ./results/<run>): new, empty, or an earlier run's, which is resumed (files beside "
                "its own are left alone); a folder of other files is refused.", "deprecated": ["--output-dir", "--output_dir"]})
    run_name: str | None = field(default=None, metadata={"help": "Name of the run (default: from model and config)."})
    seed: int = field(default=0, metadata={"help": "Seed for k-shot draws, image swaps and bootstrap (paper: 0)."})
    bootstrap: int = field(default=1000, metadata={"help": "Bootstrap resamples for the open-ended 95% intervals."})
    limit: int | None = field(default=None, metadata={"help": "Evaluate only the first N items of each split (smoke runs)."})
    batch_size: int = field(default=8, metadata={"help": "Batch size of local models."})
    max_new_tokens: int = field(default=256, metadata={"help": "Length budget of oVQA answers (label + reasoning)."})
    closed_answers: str = field(default="auto", metadata={
        "help": "How the closed question is answered: constrained (a local model's reply is the label it gives the "
                "higher log-likelihood), generated (free generation, strictly parsed: the label alone or unparseable), "
                "or auto (constrained for local models, generated for servers).",
        "choices": list(CLOSED_ANSWERS)})
    closed_max_new_tokens: int = field(default=16, metadata={
        "help": "Length budget of generated closed answers: the label fits; a longer answer is not label-only anyway."})
    concurrency: int = field(default=16, metadata={"help": "Requests in flight to an OpenAI-compatible server."})
    load_in_4bit: bool = field(default=False, metadata={"help": "Load a VLM base in 4-bit NF4 (as QLoRA trained it)."})
    merge: bool = field(default=False, metadata={"help": "Merge a LoRA adapter into its base before generating."})
    label_column: str | None = field(default=None, metadata={
        "help": "Gold label column (default: the one the corpus's features name: multimodal_label in an article corpus, "
                "label in a sentence corpus from `vilbias build --sentences`)."})
    pair: str | None = field(default=None, metadata={
        "help": "Name pairing a text-only and a text+image run for the modality-gap analysis."})

    def __post_init__(self):
        # why: the catalogue loads the predictors (numpy, PIL); `vilbias evaluate --help` parses this class without them
        from vilbias.models.catalogue import ModelSpec

        if self.output is not None:
            self.output = Path(self.output)
        # Checked here, not by argparse: `vilbias evaluate compare` goes through the same parser without them.
        if not self.dataset or not self.model:
            raise ValueError("--dataset and --model are required "
                             "(or `vilbias evaluate compare RUN_DIR ...` to analyse finished runs)")
        if self.cv and (self.dataset_config != "default" or self.split != "test"):
            raise ValueError("--cv scores each fold's model on its own fold's test split; drop --dataset-config and --split")
        if "all" in self.probes:
            self.probes = list(PROBES[1:])
        unknown = set(self.probes) - set(PROBES[1:])
        if unknown:
            raise ValueError(f"unknown probe(s) {sorted(unknown)}; choose from {', '.join(PROBES[1:])} or all")
        if not self.shots or any(k < 0 for k in self.shots):
            raise ValueError("--shots takes one or more non-negative k (0 = zero-shot)")
        if self.judge_retries < 0 or self.bootstrap < 1 or (self.limit is not None and self.limit < 1):
            raise ValueError("--judge-retries must be >= 0, --bootstrap and --limit >= 1")
        if self.max_new_tokens < 1 or self.closed_max_new_tokens < 1:
            raise ValueError("--max-new-tokens and --closed-max-new-tokens must be >= 1")
        if self.closed_answers == "constrained" and not ModelSpec.parse(self.model).kind_info.scores_label_likelihood:
            raise ValueError("--closed-answers constrained scores the labels with a local model; a server's closed "
                             "answers are generated and strictly parsed (--closed-answers generated or auto)")

    @property
    def name(self) -> str:
        if self.run_name:
            return self.run_name
        model = re.sub(r"^openai:", "", self.model or "").split("@")[0].rstrip("/")
        model = Path(model).name or "model"
        return re.sub(r"[^A-Za-z0-9._+-]+", "-", f"{model}-{'cv' if self.cv else self.dataset_config}-{self.split}")

    @property
    def output_dir(self) -> Path:
        return self.output if self.output is not None else Path("results") / self.name


@dataclass
class CompareConfig:
    run_dirs: list[Path] = field(metadata={
        "positional": True, "help": "Folders of finished `vilbias evaluate` runs (each holds results.json)."})
    output: Path = field(default=Path("results/analysis"), metadata={
        "help": "Where analysis.json, analysis.md and the plots go: a new or empty folder, or an earlier analysis (its files "
                "are rewritten); a folder of other files is refused."})

    def __post_init__(self):
        self.run_dirs = [Path(p) for p in self.run_dirs]
        self.output = Path(self.output)
        if not self.run_dirs:
            raise ValueError("compare needs one or more RUN_DIR folders of finished `vilbias evaluate` runs")


def compare(cfg: CompareConfig) -> dict:
    """The paper's analyses across finished runs (:func:`vilbias.evaluate.analysis.compare_runs`).

    Returns:
        The analysis dict also written to ``analysis.json`` in ``cfg.output``.
    """
    return compare_runs(cfg.run_dirs, cfg.output)
