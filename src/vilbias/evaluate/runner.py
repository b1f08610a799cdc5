"""``vilbias evaluate``: score a classifier or a generative model on BiasCorpus.

    vilbias evaluate --dataset ./BiasCorpus --model outputs/classifier            # a fusion/text classifier
    vilbias evaluate --dataset ORG/BiasCorpus --revision v1.0.0 --model ORG/vilbias-smolvlm-lora \\
        --judge openai:Qwen/Qwen2.5-72B-Instruct@http://localhost:8000/v1 --shots 0 5 --cv
    vilbias evaluate --dataset ./BiasCorpus --model openai:gpt-4o@https://api.openai.com/v1 \\
        --judge openai:gpt-4o@https://api.openai.com/v1 --probes all
    vilbias evaluate compare results/run-a results/run-b results/run-c --output results/analysis

One run writes to ``--output`` (default ``./results/<run>``): ``results.json`` (every number, with
the dataset and model revisions, the config, the seed and the prompt versions), ``report.md``
with tables and PNG plots, and ``evaluation.sqlite`` holding each answer and judge verdict as it
arrived, so re-running the same command resumes without asking anything twice.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vilbias.evaluate.data import PROBES, Item, apply_probe, load_split, select_shots
from vilbias.evaluate.models import ClassifierModel, GenerativeModel, Model, load_model
from vilbias.evaluate.store import EvaluationStore

logger = logging.getLogger(__name__)

N_FOLDS = 5
STORE_FILE = "evaluation.sqlite"
RESULTS_FILE = "results.json"


@dataclass
class EvaluateConfig:
    dataset: str | None = field(default=None, metadata={"help": "Dataset folder (as `vilbias build` writes it) or Hub repo id."})
    model: str | None = field(default=None, metadata={
        "help": "Checkpoint folder, Hub id, or openai:<model>@<base_url> (key from OPENAI_API_KEY)."})
    config: str = field(default="default", metadata={"help": "Dataset config to evaluate: default or fold_K."})
    split: str = field(default="test", metadata={"help": "Split to evaluate (k-shot examples always come from train)."})
    revision: str | None = field(default=None, metadata={"help": "Dataset revision (tag such as v1.0.0)."})
    model_revision: str | None = field(default=None, metadata={"help": "Revision of a Hub --model."})
    cv: bool = field(default=False, metadata={"help": "Evaluate fold_0..fold_4 (test split of each) and report mean ± std."})
    shots: list[int] = field(default_factory=lambda: [0], metadata={
        "help": "Prompting regimes for generative models: 0 = zero-shot, k = k-shot (paper: 0 5)."})
    modality: str = field(default="text+image", metadata={
        "help": "Generative models: send the image (text+image) or not (text).", "choices": ["text+image", "text"]})
    probes: list[str] = field(default_factory=list, metadata={
        "help": "Robustness probes besides the plain run: no_image swap_image headline_only, or all."})
    judge: str | None = field(default=None, metadata={
        "help": "LLM judge for the rationales: checkpoint, Hub id, openai:<model>@<base_url> or smollm2."})
    judge_revision: str | None = field(default=None, metadata={"help": "Revision of a Hub --judge."})
    judge_retries: int = field(default=2, metadata={"help": "Times an invalid judge reply is asked again before it counts as a failure."})
    output: Path | None = field(default=None, metadata={"help": "Results folder (default ./results/<run>)."})
    run_name: str | None = field(default=None, metadata={"help": "Name of the run (default: from model and config)."})
    seed: int = field(default=0, metadata={"help": "Seed for k-shot draws, image swaps and bootstrap (paper: 0)."})
    bootstrap: int = field(default=1000, metadata={"help": "Bootstrap resamples for the open-ended 95% intervals."})
    limit: int | None = field(default=None, metadata={"help": "Evaluate only the first N items of each split (smoke runs)."})
    batch_size: int = field(default=8, metadata={"help": "Batch size of local models."})
    max_new_tokens: int = field(default=256, metadata={"help": "Answer length budget of generative models."})
    concurrency: int = field(default=16, metadata={"help": "Requests in flight to an OpenAI-compatible server."})
    load_in_4bit: bool = field(default=False, metadata={"help": "Load a VLM base in 4-bit NF4 (as QLoRA trained it)."})
    merge: bool = field(default=False, metadata={"help": "Merge a LoRA adapter into its base before generating."})
    label_column: str = field(default="multimodal_label", metadata={"help": "Gold label column."})
    train_fraction: float | None = field(default=None, metadata={
        "help": "Share of train the model was trained on, recorded for the data-size scaling analysis."})
    pair: str | None = field(default=None, metadata={
        "help": "Name pairing a text-only and a text+image run for the modality-gap analysis."})

    def __post_init__(self):
        if self.output is not None:
            self.output = Path(self.output)
        # Checked here, not by argparse: `vilbias evaluate compare` goes through the same parser without them.
        if not self.dataset or not self.model:
            raise ValueError("--dataset and --model are required "
                             "(or `vilbias evaluate compare RUN_DIR ...` to analyse finished runs)")
        if self.cv and self.config != "default":
            raise ValueError("--cv evaluates every fold_K itself; drop --config")
        if "all" in self.probes:
            self.probes = list(PROBES[1:])
        unknown = set(self.probes) - set(PROBES[1:])
        if unknown:
            raise ValueError(f"unknown probe(s) {sorted(unknown)}; choose from {', '.join(PROBES[1:])} or all")
        if not self.shots or any(k < 0 for k in self.shots):
            raise ValueError("--shots takes one or more non-negative k (0 = zero-shot)")
        if self.judge_retries < 0 or self.bootstrap < 1 or (self.limit is not None and self.limit < 1):
            raise ValueError("--judge-retries must be >= 0, --bootstrap and --limit >= 1")
        if self.train_fraction is not None and not 0 < self.train_fraction <= 1:
            raise ValueError("--train-fraction must be in (0, 1]")

    @property
    def name(self) -> str:
        if self.run_name:
            return self.run_name
        model = re.sub(r"^openai:", "", self.model or "").split("@")[0].rstrip("/")
        model = Path(model).name or "model"
        return re.sub(r"[^A-Za-z0-9._+-]+", "-", f"{model}-{'cv' if self.cv else self.config}-{self.split}")

    @property
    def output_dir(self) -> Path:
        return self.output if self.output is not None else Path("results") / self.name


@dataclass
class CompareConfig:
    run_dirs: list[Path] = field(metadata={
        "positional": True, "help": "Folders of finished `vilbias evaluate` runs (each holds results.json)."})
    output: Path = field(default=Path("results/analysis"), metadata={
        "help": "Where analysis.json, analysis.md and the plots go."})

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
    from vilbias.evaluate.analysis import compare_runs

    return compare_runs(cfg.run_dirs, cfg.output)


def _regimes(model: Model, shots: list[int]) -> list[str]:
    if isinstance(model, ClassifierModel):
        return ["classifier"]
    return [f"{k}-shot" for k in sorted(set(shots))]


def _uses_image(model: Model, cfg: EvaluateConfig) -> bool:
    if isinstance(model, ClassifierModel):
        return model.uses_image
    return model.vision and cfg.modality == "text+image"


def _modality(model: Model, cfg: EvaluateConfig) -> str:
    if isinstance(model, ClassifierModel):
        return "+".join(m for m, used in (("text", model.uses_text), ("image", model.uses_image)) if used)
    return cfg.modality if model.vision else "text"


class _Progress:
    def __init__(self, total: int, desc: str):
        from tqdm.auto import tqdm

        self.bar = tqdm(total=total, desc=desc, disable=total == 0, leave=False)

    def __call__(self) -> None:
        self.bar.update(1)

    def close(self) -> None:
        self.bar.close()


def _answer(model: Model, store: EvaluationStore, view: str, regime: str, probe: str, items: list[Item],
            shots: list[Item], with_image: bool, batch_size: int) -> None:
    """Ask the model about every item that has no stored answer; store each as it arrives."""
    from vilbias.task import parse_answer

    done = store.predictions(view, regime, probe)
    todo = [item for item in items if (item.unique_id, 0) not in done]
    if not todo:
        return
    progress = _Progress(len(todo), f"{view} {regime} {probe}")
    try:
        if isinstance(model, ClassifierModel):
            for start in range(0, len(todo), batch_size):
                batch = todo[start:start + batch_size]
                for item, label in zip(batch, model.predict(batch), strict=True):
                    store.put_prediction((view, item.unique_id, regime, probe, 0), status="ok", label=int(label))
                    progress()
            return
        from vilbias.models.chat import ChatRequest
        from vilbias.evaluate.messages import answer_messages

        def on_result(index: int, result) -> None:
            key = (view, todo[index].unique_id, regime, probe, 0)
            if result.text is None:
                store.put_prediction(key, status="error", error=result.error)
            else:
                answer = parse_answer(result.text)
                store.put_prediction(key, status="ok", label=answer.label_id, reasoning=answer.reasoning,
                                     raw=result.text, error=answer.error)
            progress()

        requests = (ChatRequest(answer_messages(item, shots, with_image=with_image), model.params) for item in todo)
        model.backend.chat(requests, on_result=on_result)
    finally:
        progress.close()


def _judge(judge: GenerativeModel, store: EvaluationStore, view: str, regime: str, probe: str,
           items: list[Item], retries: int) -> None:
    """Judge every stored answer of (view, regime, probe) that has no settled verdict."""
    from vilbias.evaluate.judge import JudgeJob, judge_messages, rule_verdict, run_judge

    answers = store.predictions(view, regime, probe)
    settled = store.verdicts(view, regime, probe)
    jobs = []
    for item in items:
        key = (item.unique_id, 0)
        if key in settled or key not in answers:
            continue
        answer = answers[key]
        full_key = (view, item.unique_id, regime, probe, 0)
        rule = rule_verdict(answer["reasoning"])
        if rule is not None:
            store.put_verdict(full_key, {"status": "ok", **rule, "attempts": 0}, source="rule")
            continue
        jobs.append(JudgeJob(full_key, judge_messages(item, answer["label"], answer["reasoning"], with_image=judge.vision)))
    if not jobs:
        return
    progress = _Progress(len(jobs), f"judge {view} {regime} {probe}")

    def on_verdict(key, record) -> None:
        store.put_verdict(key, record)
        progress()

    try:
        run_judge(judge.backend, jobs, on_verdict, retries=retries, params={"max_tokens": 512})
    finally:
        progress.close()


def _score(store: EvaluationStore, view: str, regime: str, probe: str, items: list[Item], judged: bool,
           cfg: EvaluateConfig) -> tuple[dict | None, int]:
    """Metrics of one (view, regime, probe), or None and the number of items still missing."""
    from vilbias.metrics.scores import closed_metrics, open_scores

    answers = store.predictions(view, regime, probe)
    missing = sum((i.unique_id, 0) not in answers for i in items)
    verdicts = store.verdicts(view, regime, probe) if judged else {}
    if judged:
        missing += sum((i.unique_id, 0) not in verdicts for i in items)
    if missing:
        return None, missing
    refs = [i.label for i in items]
    preds = [answers[(i.unique_id, 0)]["label"] for i in items]
    record: dict[str, Any] = {"view": view, "regime": regime, "probe": probe, "closed": closed_metrics(refs, preds), "open": None}
    if judged:
        record["open"] = open_scores([verdicts[(i.unique_id, 0)] for i in items], resamples=cfg.bootstrap, seed=cfg.seed)
    return record, 0


def _views(cfg: EvaluateConfig) -> list[tuple[str, str]]:
    if cfg.cv:
        return [(f"fold_{k}", "test") for k in range(N_FOLDS)]
    return [(cfg.config, cfg.split)]


def evaluate(cfg: EvaluateConfig, *, model: Model | None = None, judge: GenerativeModel | None = None) -> dict:
    """Run one evaluation (see the module docstring) and write its results.

    Args:
        cfg: the run's settings.
        model: an already loaded model (Python callers, tests); loaded from ``cfg.model`` when None.
        judge: an already loaded judge; loaded from ``cfg.judge`` when None and one is named.

    Returns:
        The results dict also written to ``results.json``.

    Raises:
        RuntimeError: when calls failed for transport reasons (server down); what did arrive is
            stored, and re-running the same command asks only the rest.
    """
    from vilbias.evaluate.judge import judge_prompt_version
    from vilbias.task import prompt_version
    from vilbias.evaluate.report import finish_run

    out = cfg.output_dir
    out.mkdir(parents=True, exist_ok=True)
    if model is None:
        model = load_model(cfg.model, revision=cfg.model_revision, batch_size=cfg.batch_size,
                           max_new_tokens=cfg.max_new_tokens, load_in_4bit=cfg.load_in_4bit, merge=cfg.merge,
                           concurrency=cfg.concurrency)
    if judge is None and cfg.judge and isinstance(model, GenerativeModel):
        judge = load_model(cfg.judge, revision=cfg.judge_revision, batch_size=cfg.batch_size, max_new_tokens=512,
                           concurrency=cfg.concurrency, generative_only=True)
    if cfg.judge and isinstance(model, ClassifierModel):
        logger.warning("%s is a classifier: it gives no rationale, so the judge is not used", cfg.model)
    judged = judge is not None and isinstance(model, GenerativeModel)
    regimes = _regimes(model, cfg.shots)
    uses_image = _uses_image(model, cfg)
    probes = ["none"] + [p for p in cfg.probes if uses_image or p == "headline_only"]
    skipped = sorted(set(cfg.probes) - set(probes))
    if skipped:
        logger.warning("probes %s skipped: this model does not see the image", skipped)

    store = EvaluationStore(out / STORE_FILE)
    try:
        store.check_identity({
            "dataset": cfg.dataset, "revision": cfg.revision, "model": cfg.model, "model_revision": cfg.model_revision,
            "judge": cfg.judge if judged else None, "judge_prompt": judge_prompt_version() if judged else None,
            "answer_prompt": prompt_version(), "modality": cfg.modality, "seed": cfg.seed, "label_column": cfg.label_column,
        })
        evaluations, shot_ids, incomplete = [], {}, 0
        for config_name, split in _views(cfg):
            view = f"{config_name}/{split}"
            items = load_split(cfg.dataset, config_name, split, revision=cfg.revision, label_column=cfg.label_column)
            if cfg.limit:
                items = items[:cfg.limit]
            if not items:
                raise ValueError(f"{cfg.dataset} [{view}] has no items")
            needs_pool = isinstance(model, GenerativeModel) and any(k > 0 for k in cfg.shots)
            pool = load_split(cfg.dataset, config_name, "train", revision=cfg.revision,
                              label_column=cfg.label_column) if needs_pool else []
            evaluated = {i.unique_id for i in items}
            for regime in regimes:
                k = int(regime.split("-")[0]) if regime.endswith("-shot") else 0
                shots = select_shots(pool, k, exclude=evaluated, seed=cfg.seed)
                if k:
                    shot_ids.setdefault(view, {})[regime] = [s.unique_id for s in shots]
                for probe in probes:
                    probed = apply_probe(items, probe, seed=cfg.seed)
                    _answer(model, store, view, regime, probe, probed, shots, uses_image, cfg.batch_size)
                    if judged:
                        _judge(judge, store, view, regime, probe, probed, cfg.judge_retries)
                    record, missing = _score(store, view, regime, probe, probed, judged, cfg)
                    incomplete += missing
                    if record is not None:
                        evaluations.append(record)
        if incomplete:
            raise RuntimeError(
                f"{incomplete} answers or verdicts are missing after transport errors (see the log); what arrived "
                f"is stored in {out / STORE_FILE}: re-run the same command to ask only the rest")
    finally:
        store.close()

    meta = {
        "run": cfg.name,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "dataset": {"id": cfg.dataset, "config": "fold_0..fold_4" if cfg.cv else cfg.config, "split": cfg.split,
                    "revision": cfg.revision},
        "model": {"id": cfg.model or model.name, "revision": cfg.model_revision, "kind": model.kind,
                  "modality": _modality(model, cfg)},
        "judge": {"id": cfg.judge or judge.name, "revision": cfg.judge_revision, "retries": cfg.judge_retries}
        if judged else None,
        "seed": cfg.seed,
        "prompt_versions": {"answer": prompt_version() if isinstance(model, GenerativeModel) else None,
                            "judge": judge_prompt_version() if judged else None},
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in dataclasses.asdict(cfg).items()},
        "regimes": regimes,
        "probes": probes,
        "k_shot_examples": shot_ids,
        "tags": {"train_fraction": cfg.train_fraction, "pair": cfg.pair},
    }
    return finish_run(meta, evaluations, out)
