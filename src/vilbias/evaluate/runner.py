"""``vilbias evaluate``: score a classifier or a generative model on BiasCorpus.

    vilbias evaluate --dataset ./BiasCorpus --model outputs/classifier            # a fusion/text classifier
    vilbias evaluate --dataset ./BiasCorpus --model outputs/classifier-cv --cv    # fold_K model on fold_K/test
    vilbias evaluate --dataset ORG/BiasCorpus --dataset-revision v1.0.0 --model ORG/vilbias-smolvlm-lora \\
        --judge openai:Qwen/Qwen2.5-72B-Instruct@http://localhost:8000/v1 --shots 0 5
    vilbias evaluate --dataset ./BiasCorpus --model openai:gpt-4o@https://api.openai.com/v1 \\
        --judge openai:gpt-4o@https://api.openai.com/v1 --probes all
    vilbias evaluate compare results/run-a results/run-b results/run-c --output results/analysis

Before a model is asked anything, the evaluated rows are compared with the rows it trained on
(:mod:`vilbias.evaluate.leakage`); an overlap is refused. A generative model answers the paper's
two questions as separate generations: the closed one (label only) gives the closed-ended
metrics, the oVQA one (label + reasoning) is scored by the judge.

One run writes to ``--output`` (default ``./results/<run>``): ``results.json`` (every number, with
the dataset and model revisions, what the model trained on, the config, the seed and the prompt
versions), ``report.md`` with tables and PNG plots, and ``evaluation.sqlite`` holding each answer
and judge verdict as it arrived, so re-running the same command resumes without asking anything
twice. A run that fails before anything was stored leaves no folder behind.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import logging
import shutil
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

# models: its lazy map; the checkpoint configs (transformers) load once a model is named
from vilbias import models
from vilbias.evaluate.config import (
    CLOSED_OPTIONS,
    STORE_FILE,
    EvaluateConfig,
)
from vilbias.evaluate.data import apply_probe, check_dataset, load_split, read_split, select_shots
from vilbias.evaluate.judge import (
    JudgeJob,
    judge_messages,
    judge_prompt_version,
    rationale_check_scores,
    rule_verdict,
    run_judge,
)
from vilbias.evaluate.leakage import Circularity, SeenCheck, circularity, refuse_seen, seen_check
from vilbias.evaluate.messages import PARSERS, prompt_versions, question_messages
from vilbias.evaluate.report import finish_run, one_class
from vilbias.evaluate.sentences import sentence_protocol
from vilbias.evaluate.store import EvaluationStore
from vilbias.ledger import ask_missing
from vilbias.metrics.scores import closed_metrics, open_scores
from vilbias.models.catalogue import (
    ClassifierModel,
    GenerativeModel,
    Model,
    ModelSpec,
    check_spec,
    load_model,
    our_model_types,
)
from vilbias.models.chat import ChatRequest, chat_jobs
from vilbias.models.image_encoders import EFFICIENTNET_LITE0
from vilbias.models.scoring import OptionScorer, choose
from vilbias.outputs import claim_output, created_here
from vilbias.task import FOLDS, Item

logger = logging.getLogger(__name__)

# -- what is evaluated, checked before anything is loaded or asked --------------------------------


@dataclass
class View:
    """One evaluated split and the model scored on it (with --cv, each fold's own model)."""

    config: str
    split: str
    model: str
    items: list[Item]
    seen: SeenCheck
    circular: Circularity | None = None
    """Rows whose labels this model made itself (it annotated the corpus), flagged first in the report."""
    links: dict[str, str] = dataclasses.field(default_factory=dict)
    """Sentence corpora: unique_id -> article link (the sentence-level protocol's articles)."""

    @property
    def name(self) -> str:
        return f"{self.config}/{self.split}"


def _fold_models(cfg: EvaluateConfig) -> list[tuple[str, str, str]]:
    """``(config, split, model folder)`` per fold for --cv; refuses anything but a folder of fold models."""
    folder = Path(cfg.model)
    missing = [f for f in FOLDS if not (folder / f).is_dir()]
    if ModelSpec.parse(cfg.model).kind_info.checkpoint and folder.is_dir() and not missing:
        return [(fold, "test", str(folder / fold)) for fold in FOLDS]
    found = f"lacks {', '.join(missing)}" if folder.is_dir() else "is not a local folder of per-fold models"
    raise ValueError(
        f"refused: --cv evaluates one model per fold, but {cfg.model} {found}: one checkpoint scored on every fold's "
        f"test split scores rows it trained on; train per-fold models with `vilbias train classifier ... --cv` and "
        f"pass their folder (holding {FOLDS[0]} ... {FOLDS[-1]}), or drop --cv to evaluate this model on its own test split")


def plan_views(cfg: EvaluateConfig, *, model_given: bool = False, judge_given: bool = False) -> list[View]:
    """The views to score, each with its items and the seen-row check of its model.

    Paths are checked first (one sentence for one that does not exist; not the model or the judge
    a caller handed in loaded: ``model_given``, ``judge_given``), then the evaluated rows
    are compared with each model's training rows: nothing is loaded or asked when they overlap.

    Raises:
        FileNotFoundError: a dataset, model or judge path that does not exist.
        ValueError: rows a model trained on (unless ``allow_overlap``), --cv on one checkpoint, an empty split.
    """
    check_dataset(cfg.dataset, cfg.dataset_revision)
    if not model_given:  # a model handed in loaded needs no lookup
        check_spec(cfg.model)
    if cfg.judge and not judge_given:
        check_spec(cfg.judge, "judge")
    targets = _fold_models(cfg) if cfg.cv else [(cfg.dataset_config, cfg.split, cfg.model)]
    views = []
    for config, split, model in targets:
        read = read_split(cfg.dataset, config, split, revision=cfg.dataset_revision, label_column=cfg.label_column)
        # the column the corpus's features named, recorded in the run's config and identity
        cfg.label_column = read.label_column
        items = read.items[:cfg.limit] if cfg.limit else read.items
        if not items:
            raise ValueError(f"{cfg.dataset} [{config}/{split}] has no items")
        name = f"{config}/{split}"
        made = {i.unique_id: read.label_annotators.get(i.unique_id, set()) for i in items}
        views.append(View(config, split, model, items, seen_check(model, cfg.model_revision, name, items),
                          circularity(model, cfg.model_revision, name, cfg.dataset, cfg.dataset_revision, made), read.links))
    refuse_seen([v.seen for v in views], allow_overlap=cfg.allow_overlap)
    return views


def _identity(cfg: EvaluateConfig) -> dict[str, Any]:
    """What one results folder holds; another setup in the same folder is refused."""
    return {
        "dataset": cfg.dataset, "revision": cfg.dataset_revision, "model": cfg.model, "model_revision": cfg.model_revision,
        "cv": cfg.cv, "closed_answers": cfg.closed_answers,
        "judge": cfg.judge, "judge_prompt": judge_prompt_version() if cfg.judge else None,
        "prompts": prompt_versions(), "modality": cfg.modality, "seed": cfg.seed, "label_column": cfg.label_column,
    }


@contextlib.contextmanager
def results_store(out: Path, identity: dict[str, Any]) -> Iterator[EvaluationStore]:
    """The run's store in ``out``; a run that fails before storing anything removes the folder it made."""
    created = not out.exists() or created_here(out)  # the claim made it, to hold its lock (vilbias.outputs)
    store = EvaluationStore(out / STORE_FILE)
    try:
        store.check_identity(identity)
        yield store
    except BaseException:
        empty = store.count_rows() == 0
        store.close()
        if created and empty:
            shutil.rmtree(out, ignore_errors=True)
        raise
    store.close()


# -- asking, judging, scoring ---------------------------------------------------------------------

Setting = tuple[str, str, str]
"""(view, regime, probe)"""


Answer = dict[str, Any]
"""The fields of a stored prediction: ``status`` and ``label``, ``reasoning``, ``raw``, ``error``."""
OnAnswer = Callable[[Item, Answer], None]


def _classify(model: ClassifierModel, items: Iterable[Item], batch_size: int, on_answer: OnAnswer) -> None:
    items = iter(items)
    while batch := list(islice(items, batch_size)):
        for item, label in zip(batch, model.predict(batch), strict=True):
            on_answer(item, {"status": "ok", "label": int(label)})


def _generate(model: GenerativeModel, question: str, items: Iterable[Item], shots: list[Item], with_image: bool,
              params: dict[str, Any], on_answer: OnAnswer) -> None:
    """One generation per item for ``question``; each answer parsed as it arrives."""
    parse = PARSERS[question]

    def on_result(item: Item, result) -> None:
        if result.text is None:
            on_answer(item, {"status": "error", "error": result.error})
            return
        answer = parse(result.text)
        on_answer(item, {"status": "ok", "label": answer.label_id, "reasoning": answer.reasoning, "raw": result.text,
                         "error": answer.error})

    request = lambda item: ChatRequest(question_messages(question, item, shots, with_image=with_image), params)  # noqa: E731
    chat_jobs(model.backend, items, request, on_result)


def _choose_labels(model: GenerativeModel, items: Iterable[Item], shots: list[Item], with_image: bool,
                   on_answer: OnAnswer) -> None:
    """The closed question, constrained: the reply is the label the model gives the higher
    log-likelihood as its whole answer (:mod:`vilbias.models.scoring`); never unparseable."""
    scorer = OptionScorer(model.backend)
    for item in items:
        scores = scorer.score(ChatRequest(question_messages("closed", item, shots, with_image=with_image)), CLOSED_OPTIONS)
        label = choose(scores)
        on_answer(item, {"status": "ok", "label": label,
                         "raw": json.dumps({"answer": CLOSED_OPTIONS[label], "logprobs": scores.logprobs})})


def constrained(model: Model, cfg: EvaluateConfig) -> bool:
    """Whether ``model`` answers the closed question by label log-likelihood (a local model) rather than by generation."""
    local = isinstance(model, GenerativeModel) and getattr(model.backend, "scores_options", False)
    return cfg.closed_answers == "constrained" or (cfg.closed_answers == "auto" and local)


def _ask(model: Model, store: EvaluationStore, setting: Setting, question: str, items: list[Item], shots: list[Item],
         cfg: EvaluateConfig) -> None:
    """Ask ``question`` about every item without a stored answer (a classifier answers ``closed`` only)."""
    view, regime, probe = setting
    if isinstance(model, ClassifierModel):
        def ask(todo, on_answer):
            _classify(model, todo, cfg.batch_size, on_answer)
    elif question == "closed" and constrained(model, cfg):
        def ask(todo, on_answer):
            _choose_labels(model, todo, shots, model.vision and cfg.modality == "text+image", on_answer)
    else:
        budget = cfg.closed_max_new_tokens if question == "closed" else cfg.max_new_tokens

        def ask(todo, on_answer):
            _generate(model, question, todo, shots, model.vision and cfg.modality == "text+image",
                      {**model.params, "max_tokens": budget}, on_answer)

    ask_missing(
        items, done=store.predictions(*setting, question), key=lambda item: (item.unique_id, 0), ask=ask,
        record=lambda item, answer: store.put_prediction((view, item.unique_id, regime, probe, question, 0), **answer),
        desc=" ".join((*setting, question)),
    )


def _judge(judge: GenerativeModel, store: EvaluationStore, setting: Setting, items: list[Item], retries: int) -> None:
    """Judge every stored oVQA answer of ``setting`` that has no settled verdict."""
    view, regime, probe = setting
    answers = store.predictions(*setting, "ovqa")
    settled = store.verdicts(*setting)
    jobs = []
    for item in items:
        if (item.unique_id, 0) in settled or (item.unique_id, 0) not in answers:
            continue
        answer, key = answers[(item.unique_id, 0)], (view, item.unique_id, regime, probe, 0)
        rule = rule_verdict(answer["reasoning"])
        if rule is not None:
            store.put_verdict(key, {"status": "ok", **rule, "attempts": 0}, source="rule")
        else:
            jobs.append(JudgeJob(key, judge_messages(item, answer["label"], answer["reasoning"], with_image=judge.vision)))
    # Each job settles once (after its retries): the verdict is stored under the job's key.
    ask_missing(
        jobs, desc=f"judge {view} {regime} {probe}",
        ask=lambda todo, on_result: run_judge(judge.backend, todo, lambda key, record: on_result(key, record),
                                              retries=retries, params={"max_tokens": 512}),
        record=lambda key, record: store.put_verdict(key, record),
    )


def _score(store: EvaluationStore, setting: Setting, items: list[Item], judged: bool, cfg: EvaluateConfig
           ) -> tuple[dict | None, int]:
    """Closed metrics from the closed answers, judge scores and the rationale check of the oVQA
    answers of one setting, or None and the number of answers or verdicts still missing."""
    closed = store.predictions(*setting, "closed")
    answers = store.predictions(*setting, "ovqa") if judged else {}
    verdicts = store.verdicts(*setting) if judged else {}
    missing = sum((i.unique_id, 0) not in closed for i in items)
    missing += sum((i.unique_id, 0) not in verdicts for i in items) if judged else 0
    if missing:
        return None, missing
    view, regime, probe = setting
    references, predictions = [i.label for i in items], [closed[(i.unique_id, 0)]["label"] for i in items]
    record: dict[str, Any] = {
        "view": view, "regime": regime, "probe": probe,
        "closed": closed_metrics(references, predictions),
        # a constant model, or rows of one class: scores (and probe deltas) that measure nothing
        "degenerate": one_class(references, predictions),
        "open": open_scores([verdicts[(i.unique_id, 0)] for i in items], resamples=cfg.bootstrap, seed=cfg.seed)
        if judged else None,
        # the model-free check on the same rationales, beside the judge's faithfulness
        "rationale_check": rationale_check_scores(items, [answers[(i.unique_id, 0)] for i in items],
                                                  [verdicts[(i.unique_id, 0)] for i in items]) if judged else None,
    }
    return record, 0


# -- what the scored model is called ---------------------------------------------------------------

def _architecture(folder: Path, model: Model) -> str:
    """What a checkpoint folder holds, from its ``config.json`` (``adapter_config.json``), in a few words."""
    # the packaged encoders by the names a reader knows; any other by its id's last part
    names = {models.MINILM: "MiniLM", EFFICIENTNET_LITE0: "EfficientNet-Lite0"}
    config_file, adapter_file = folder / "config.json", folder / "adapter_config.json"
    if adapter_file.is_file():
        base = json.loads(adapter_file.read_text(encoding="utf-8")).get("base_model_name_or_path")
        return f"LoRA adapter on {Path(base).name}" if base else "LoRA adapter"
    config = json.loads(config_file.read_text(encoding="utf-8")) if config_file.is_file() else {}
    encoder = lambda name: names.get(name, Path(name or "?").name)  # noqa: E731
    ours = our_model_types().get(config.get("model_type"))
    if ours == "fusion":
        modality = config.get("modality", "text+image")
        used = [encoder(config.get(f"{m}_encoder")) for m in ("text", "image") if m in modality]
        return f"fusion: {' + '.join(used)}" + ("" if modality == "text+image" else f", {modality} only")
    if ours == "sentence":
        return f"sentence model: {encoder(config.get('encoder'))}"
    return (config.get("architectures") or [model.kind])[0]


def describe_model(spec: str, model: Model) -> tuple[str, str]:
    """What the report and plot titles call the scored model: its name (the folder's, or the id) and what
    it is, e.g. ``("fusion", "fusion: MiniLM + EfficientNet-Lite0")``, never an encoder's id alone."""
    folder = Path(spec).expanduser()
    if not folder.is_dir():
        return model.name, model.kind
    # --cv: a folder of per-fold models, trained alike; the first says what they are.
    inner = folder / FOLDS[0] if (folder / FOLDS[0]).is_dir() else folder
    return folder.resolve().name, _architecture(inner, model) + (", one per fold" if inner != folder else "")


# -- one run ------------------------------------------------------------------------------------


class _Run:
    """The state of one evaluation across its views: stored answers, records, what was used."""

    def __init__(self, cfg: EvaluateConfig, store: EvaluationStore, judge: GenerativeModel | None):
        self.cfg, self.store, self.judge = cfg, store, judge
        self.evaluations: list[dict] = []
        self.shot_ids: dict[str, dict[str, list[str]]] = {}
        self.incomplete = 0
        self.model: Model | None = None
        self.regimes: list[str] = []
        self.probes: list[str] = ["none"]

    def _settings(self, model: Model) -> bool:
        """Regimes, probes and judge for ``model``; whether its oVQA answers are judged."""
        cfg = self.cfg
        generative = isinstance(model, GenerativeModel)
        self.regimes = [f"{k}-shot" for k in sorted(set(cfg.shots))] if generative else ["classifier"]
        uses_image = model.vision and cfg.modality == "text+image" if generative else model.uses_image
        self.probes = ["none"] + [p for p in cfg.probes if uses_image or p == "headline_only"]
        skipped = sorted(set(cfg.probes) - set(self.probes))
        if skipped:
            logger.warning("probes %s skipped: this model does not see the image", skipped)
        if cfg.judge and not generative:
            logger.warning("%s is a classifier: it gives no rationale, so the judge is not used", cfg.model)
        if generative and cfg.judge and self.judge is None:
            self.judge = load_model(cfg.judge, revision=cfg.judge_revision, batch_size=cfg.batch_size, max_new_tokens=512,
                                    concurrency=cfg.concurrency, generative_only=True)
        return generative and self.judge is not None

    def view(self, view: View, model: Model) -> None:
        """Ask, judge and score every (regime, probe) of ``view``."""
        cfg, judged = self.cfg, self._settings(model)
        self.model = model
        needs_pool = isinstance(model, GenerativeModel) and any(k > 0 for k in cfg.shots)
        pool = load_split(cfg.dataset, view.config, "train", revision=cfg.dataset_revision,
                          label_column=cfg.label_column) if needs_pool else []
        evaluated = {i.unique_id for i in view.items}
        for regime in self.regimes:
            k = int(regime.split("-")[0]) if regime.endswith("-shot") else 0
            shots = select_shots(pool, k, exclude=evaluated, seed=cfg.seed)
            if k:
                self.shot_ids.setdefault(view.name, {})[regime] = [s.unique_id for s in shots]
            for probe in self.probes:
                setting, probed = (view.name, regime, probe), apply_probe(view.items, probe, seed=cfg.seed)
                # Two generations: the closed question's answers are scored, the oVQA ones judged.
                _ask(model, self.store, setting, "closed", probed, shots, cfg)
                if judged:
                    _ask(model, self.store, setting, "ovqa", probed, shots, cfg)
                    _judge(self.judge, self.store, setting, probed, cfg.judge_retries)
                record, missing = _score(self.store, setting, probed, judged, cfg)
                self.incomplete += missing
                if record is not None:
                    if probe == "none":
                        record["sentence_protocol"] = sentence_protocol(model, probed, view.links)
                    self.evaluations.append(record)

    def meta(self, views: list[View]) -> dict[str, Any]:
        """Everything ``results.json`` says about the run besides its numbers."""
        cfg, model = self.cfg, self.model
        name, architecture = describe_model(cfg.model, model)
        generative, judged = isinstance(model, GenerativeModel), any(e["open"] for e in self.evaluations)
        modality = (cfg.modality if model.vision else "text") if generative else \
            "+".join(m for m, used in (("text", model.uses_text), ("image", model.uses_image)) if used)
        return {
            "run": cfg.name,
            "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "dataset": {"id": cfg.dataset, "config": "fold_0..fold_4" if cfg.cv else cfg.dataset_config, "split": cfg.split,
                        "revision": cfg.dataset_revision},
            "model": {"id": cfg.model, "revision": cfg.model_revision, "kind": model.kind, "modality": modality,
                      "architecture": architecture, "title": f"{name} ({architecture})",
                      "runtime": getattr(model, "runtime", None)},
            "training_data": [v.seen.as_dict(cfg.allow_overlap) for v in views],
            "circularity": [dataclasses.asdict(v.circular) | {"sentence": v.circular.sentence()} for v in views if v.circular],
            "judge": {"id": cfg.judge or self.judge.name, "revision": cfg.judge_revision, "retries": cfg.judge_retries}
            if judged else None,
            "seed": cfg.seed,
            "questions": ({"closed": "label only (" + ("constrained to the labels by log-likelihood" if constrained(model, cfg)
                                                      else "generated, strictly parsed") + ")",
                           "ovqa": "label + reasoning (judged)" if judged else None}
                          if generative else {"closed": "classifier prediction", "ovqa": None}),
            "prompt_versions": {**({q: v for q, v in prompt_versions().items() if q == "closed" or judged}
                                   if generative else {}), "judge": judge_prompt_version() if judged else None},
            "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in dataclasses.asdict(cfg).items()},
            "regimes": self.regimes,
            "probes": self.probes,
            "k_shot_examples": self.shot_ids,
            "tags": {"pair": cfg.pair},
        }


def evaluate(cfg: EvaluateConfig, *, model: Model | None = None, judge: GenerativeModel | None = None) -> dict:
    """Run one evaluation (see the module docstring) and write its results.

    Args:
        cfg: the run's settings.
        model: an already loaded model (Python callers, tests); loaded from ``cfg.model`` when None. Its
            training-data record is still read from ``cfg.model``. Not with ``cfg.cv`` (one model per fold).
        judge: an already loaded judge; loaded from ``cfg.judge`` when None and one is named.

    Returns:
        The results dict also written to ``results.json``.

    Raises:
        FileNotFoundError: a dataset, model or judge path that does not exist (nothing is created).
        ValueError: rows the model trained on, unless ``cfg.allow_overlap``; a folder of another setup.
        vilbias.outputs.OutputRefused: ``--output`` holds files no evaluation wrote (nothing is written).
        RuntimeError: when calls failed for transport reasons (server down); what did arrive is
            stored, and re-running the same command asks only the rest.
    """
    if cfg.cv and model is not None:
        raise ValueError("with --cv each fold's model is loaded from its own folder; do not pass one model")
    # A results folder is new, empty or an earlier run's (resumed); never a folder of someone else's files.
    claim_output(cfg.output_dir, "vilbias evaluate", signs=(STORE_FILE, "evaluate_config.yaml"))
    views = plan_views(cfg, model_given=model is not None, judge_given=judge is not None)
    out = cfg.output_dir
    with results_store(out, _identity(cfg)) as store:
        run = _Run(cfg, store, judge)
        for view in views:
            run.view(view, model if model is not None else load_model(
                view.model, revision=cfg.model_revision, batch_size=cfg.batch_size, max_new_tokens=cfg.max_new_tokens,
                load_in_4bit=cfg.load_in_4bit, merge=cfg.merge, concurrency=cfg.concurrency, exact=True))
        if run.incomplete:
            raise RuntimeError(
                f"{run.incomplete} answers or verdicts are missing after transport errors (see the log); what arrived "
                f"is stored in {out / STORE_FILE}: re-run the same command to ask only the rest")
    return finish_run(run.meta(views), run.evaluations, out)
