"""Run a ``trl sft`` recipe on BiasCorpus, with prompt tuning / IA3, a run record and a model card.

    vilbias train sft --recipe training/recipes/SmolVLM-Instruct/lora.yaml
    vilbias train sft --recipe training/recipes/SmolVLM-Instruct/lora.yaml --max_steps 20 --output_dir out
    vilbias train sft --recipe training/recipes/SmolVLM-Instruct/lora.yaml --method prompt_tuning
    vilbias train sft --recipe training/recipes/SmolVLM-Instruct/qlora.yaml --push_to_hub --hub_model_id ORG/NAME

A recipe is a flat YAML of TRL's own fields (``ScriptArguments``, ``SFTConfig``, ``ModelConfig``),
so ``trl sft --config <recipe>`` runs the lora/qlora/full recipes unchanged. Parsing goes through
TRL's ``TrlParser`` (``--config`` plus any ``--field value`` override) and the model/PEFT/quantisation
set-up through TRL's helpers, exactly as ``trl/scripts/sft.py`` does; this module adds what
``trl sft`` cannot express:

- ``method``: ``prompt_tuning`` (PEFT ``PromptTuningConfig``) and ``ia3`` (PEFT's (IA)³, the
  adapter method standing in for the paper's bottleneck "Adapters", which PEFT does not provide:
  like them it inserts small trained modules into the frozen network's activations instead of
  adding weight deltas), besides ``lora``/``qlora``/``full`` set by TRL's flags;
- a run record, ``run_record.json`` in ``output_dir``: trainable-parameter share, peak memory (GPU
  when there is one, else process RSS), wall time, throughput;
- the training-data record (:mod:`vilbias.provenance`): ``training_data.json`` (dataset, revision,
  config, split, rows, ids digest) and ``training_ids.txt`` (the train split's ``unique_id`` values), so
  ``vilbias evaluate`` refuses to score a row the adapter trained on;
- with ``push_to_hub``, the adapter (or full weights) + processor pushed with a vilbias model card.

Why this module is long: it is one command's script, as trl's own ``trl/scripts/sft.py`` is: the
recipe's arguments, the vision data collator, prompt tuning / IA3, the run record and the card
read top to bottom in the order a run does them; split, each part would be read alone by nobody.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import yaml
from datasets import load_dataset
from vilbias.training.preflight import quiet_bitsandbytes
from vilbias.training.recipe import read_recipe, resolve_recipe

from vilbias.models.vlm import save_merged
from vilbias.outputs import claim_output
from vilbias.provenance import TRAINING_DATA, TrainingData, read_training_data
from vilbias.publish.model import CARD_INFO_FILE, ModelCardInfo, push_model

# torch, trl and peft are imported inside the functions that use them (as trl/scripts/sft.py does).

logger = logging.getLogger(__name__)

METHODS = ("lora", "qlora", "full", "prompt_tuning", "ia3")
RUN_RECORD = "run_record.json"

# Hyperparameters copied into the run record and the model card (the paper's Table 5 settings).
_RECORDED_HYPERPARAMETERS = (
    "per_device_train_batch_size", "gradient_accumulation_steps", "num_train_epochs", "max_steps",
    "learning_rate", "max_grad_norm", "lr_scheduler_type", "warmup_steps", "bf16", "seed", "max_length",
    "assistant_only_loss", "activation_checkpointing",
)


@dataclass
class VilbiasSFTArguments:
    """What a vilbias SFT run adds to TRL's fields. Recipes may set these too (``trl sft`` cannot run those)."""

    method: str | None = field(
        default=None,
        metadata={"help": "Fine-tuning method: lora, qlora, full, prompt_tuning or ia3. Unset: inferred from "
                          "TRL's flags (use_peft -> lora, plus load_in_4bit -> qlora, neither -> full).",
                  "choices": list(METHODS)},
    )
    num_virtual_tokens: int = field(
        default=20, metadata={"help": "prompt_tuning: number of trained soft-prompt tokens prepended to the input."}
    )
    ia3_target_modules: list[str] | None = field(
        default=None,
        metadata={"help": "ia3: module names whose activations are rescaled (default: the language model's "
                          "k_proj, v_proj and down_proj, as in the (IA)³ paper)."},
    )
    dataset_revision: str | None = field(
        default=None, metadata={"help": "Dataset tag or commit (e.g. v1.0.0), recorded and passed to load_dataset."}
    )
    evaluation_results: str | None = field(
        default=None,
        metadata={"help": "JSON file of evaluation results (vilbias evaluate) to include in the model card."},
    )
    merged_output_dir: str | None = field(
        default=None,
        metadata={"help": "lora/qlora/ia3: also merge the adapter into its base and save the standalone model here, "
                          "with the same training-data record and a card."},
    )


def make_parser(prog: str = "vilbias train sft", *, recipe: bool = False):
    """TRL's own ``trl sft`` parser (same dataclasses), extended with :class:`VilbiasSFTArguments`.

    With ``recipe`` it is the parser of ``vilbias train sft``: TRL's ``TrlParser`` with its config
    file spelled ``--recipe`` (required), read as the command is parsed so that flags override the
    recipe wherever they stand.
    """
    from trl import DatasetMixtureConfig, ModelConfig, ScriptArguments, SFTConfig, TrlParser

    dataclass_types = (ScriptArguments, SFTConfig, ModelConfig, DatasetMixtureConfig, VilbiasSFTArguments)
    if not recipe:
        return TrlParser(dataclass_types, prog=prog)

    class RecipeParser(TrlParser):
        """TRL's parser with ``--recipe``: its fields become the parser's defaults (its ``env:`` mapping
        goes to the environment, as in TRL), so flags given anywhere override the recipe."""

        def parse_known_args(self, args=None, namespace=None):
            args = sys.argv[1:] if args is None else list(args)
            given = _recipe_of(args)
            if given:
                self._read_recipe(given)
            namespace, extras = super().parse_known_args(args, namespace)
            if extras:
                self.error(f"unrecognized arguments: {' '.join(extras)}")
            return namespace, extras

        def _read_recipe(self, given: str) -> None:
            try:
                path, fields = read_recipe(given)
            except (FileNotFoundError, ValueError) as e:
                self.error(str(e))
            unknown = self.set_defaults_with_config(**fields)[::2]  # it returns ["--name", "value", ...]
            if unknown:
                self.error(f"recipe {path} sets unknown field(s): {', '.join(name[2:] for name in unknown)}")

    help_ = "Run a trl sft recipe: --recipe RECIPE.yaml, then any TRL or vilbias field as --name value."
    # No abbreviations: among this many flags a mistyped one would silently set its longer neighbour.
    parser = RecipeParser(dataclass_types, prog=prog, description=help_, allow_abbrev=False)
    parser.add_argument("--recipe", required=True, metavar="RECIPE.yaml", default=argparse.SUPPRESS,
                        help="Flat YAML of this command's fields (e.g. training/recipes/SmolVLM-Instruct/lora.yaml, "
                             "or SmolVLM-Instruct/lora.yaml from the installed recipes); flags override it.")
    return parser


def _recipe_of(argv: list[str]) -> str | None:
    finder = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    finder.add_argument("--recipe")
    return finder.parse_known_args(argv)[0].recipe


def asks_for_4bit(argv: list[str]) -> bool:
    """Whether a command line (or its recipe) asks for 4-bit weights (``load_in_4bit``, ``method: qlora``)."""
    values: dict[str, Any] = {}
    given = _recipe_of(argv)
    if given:
        try:
            values = yaml.safe_load(resolve_recipe(given).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError):
            values = {}  # the parser reports it
    values = values if isinstance(values, dict) else {}
    four_bit, method = bool(values.get("load_in_4bit")), values.get("method")
    for i, arg in enumerate(argv):
        name, eq, value = arg.partition("=")
        value = value if eq else (argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("--") else "true")
        if name in ("--load_in_4bit", "--load-in-4bit"):
            four_bit = value.lower() in ("true", "yes", "1")
        elif name == "--method":
            method = value
    return four_bit or method == "qlora"


def parse_args(argv: list[str], prog: str = "vilbias train sft") -> tuple:
    """``vilbias train sft``'s command line: the recipe's fields, overridden by the flags given.

    Returns:
        `(ScriptArguments, SFTConfig, ModelConfig, DatasetMixtureConfig, VilbiasSFTArguments)`, completed
        as :func:`parse_recipe` completes them.
    """
    parser = make_parser(prog, recipe=True)
    parsed = parser.parse_args_into_dataclasses(args=list(argv))[:len(parser.dataclass_types)]  # not --recipe's namespace
    return _complete(resolve_recipe(_recipe_of(list(argv))), parsed)


def main(argv: list[str], prog: str = "vilbias train sft") -> int:
    """``vilbias train sft --recipe RECIPE.yaml [--field value ...]``."""
    quiet_bitsandbytes(four_bit=asks_for_4bit(list(argv)))
    record = run_sft(*parse_args(argv, prog))
    print(json.dumps({k: record[k] for k in ("method", "trainable_share", "peak_memory_bytes", "wall_time_s",
                                             "train_samples_per_second")}, indent=1))
    print(f"saved to {record['output_dir']}")
    return 0


def parse_recipe(recipe: str | Path, overrides: list[str] | None = None):
    """Parse a recipe (:func:`vilbias.training.recipe.read_recipe`) plus ``--field value``
    overrides with TRL's parser: the recipe's values become the parser's defaults.

    Returns:
        `(ScriptArguments, SFTConfig, ModelConfig, DatasetMixtureConfig, VilbiasSFTArguments)`
    """
    path, values = read_recipe(recipe)
    parser = make_parser()
    unknown = parser.set_defaults_with_config(**values)[::2]  # it returns ["--name", "value", ...]
    if unknown:
        raise ValueError(f"recipe {path} sets unknown field(s): {', '.join(name[2:] for name in unknown)}")
    return _complete(path, parser.parse_args_into_dataclasses(args=list(overrides or [])))


def _complete(path: Path, parsed: tuple) -> tuple:
    """What a vilbias recipe adds to TRL's parsing: its training template found beside it, ``method`` applied."""
    script_args, training_args, model_args, dataset_args, extra = parsed
    # A recipe names its training template relative to the checkout (so `trl sft` finds it from
    # the repository root); an installed wheel carries it next to the recipe.
    template = training_args.chat_template_path
    if template and not Path(template).exists() and (path.parent / Path(template).name).is_file():
        training_args.chat_template_path = str(path.parent / Path(template).name)
    apply_method(extra.method, model_args)
    return script_args, training_args, model_args, dataset_args, extra


def apply_method(method: str | None, model_args) -> str:
    """Set TRL's ModelConfig flags for ``method`` (None: keep the recipe's) and return the method's name."""
    if method is None:
        return infer_method(model_args)
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")
    model_args.use_peft = method in ("lora", "qlora")
    model_args.load_in_4bit = method == "qlora"
    if method == "qlora":
        model_args.bnb_4bit_quant_type = "nf4"
        model_args.use_bnb_nested_quant = True
    return method


def infer_method(model_args) -> str:
    if model_args.use_peft:
        return "qlora" if model_args.load_in_4bit else "lora"
    if model_args.load_in_4bit or model_args.load_in_8bit:
        raise ValueError("a quantised base model can only be trained through an adapter: set use_peft: true")
    return "full"


def method_peft_config(method: str, model_args, extra: VilbiasSFTArguments):
    """The PEFT config for ``method``: TRL's LoRA config for lora/qlora, ours for the others, None for full."""
    from peft import IA3Config, PromptTuningConfig, TaskType
    from trl import get_peft_config

    if method in ("lora", "qlora"):
        return get_peft_config(model_args)
    if method == "prompt_tuning":
        return PromptTuningConfig(task_type=TaskType.CAUSAL_LM, num_virtual_tokens=extra.num_virtual_tokens)
    if method == "ia3":
        targets = extra.ia3_target_modules or ["k_proj", "v_proj", "down_proj"]
        # (IA)³ rescales a feed-forward layer's input, attention projections' output
        feedforward = [t for t in targets if t in ("down_proj", "fc2")]
        # Restricted to the language model: the vision tower's modules share these names.
        def pattern(names):
            return rf"^(?!.*vision).*\.({'|'.join(names)})$"

        return IA3Config(task_type=TaskType.CAUSAL_LM, target_modules=pattern(targets),
                         feedforward_modules=pattern(feedforward) if feedforward else [])
    return None


def count_parameters(model) -> tuple[int, int]:
    """``(trainable, total)`` parameters, counting a 4-bit bitsandbytes weight by its unpacked size."""
    trainable = total = 0
    for param in model.parameters():
        n = param.numel()
        if param.__class__.__name__ == "Params4bit":
            n = int(param.quant_state.shape.numel()) if getattr(param, "quant_state", None) else n * 2
        total += n
        if param.requires_grad:
            trainable += n
    return trainable, total


class PeakMemory:
    """Peak memory over a block: CUDA allocated bytes when a GPU is used, else the process's RSS.

    RSS is sampled by a background thread (every ``interval`` seconds), because ``ru_maxrss`` only
    ever grows over the process's life and would charge one run for an earlier one's peak.
    """

    def __init__(self, use_cuda: bool, interval: float = 0.02):
        self.use_cuda, self.interval = use_cuda, interval
        self.peak = self.baseline = 0
        self.kind = "cuda_max_allocated" if use_cuda else "process_rss"
        self._stop = threading.Event()

    def _sample(self):
        process = psutil.Process()
        while not self._stop.is_set():
            self.peak = max(self.peak, process.memory_info().rss)
            self._stop.wait(self.interval)

    def __enter__(self):
        if self.use_cuda:
            import torch

            torch.cuda.reset_peak_memory_stats()
            self.baseline = torch.cuda.memory_allocated()
        else:
            self.baseline = self.peak = psutil.Process().memory_info().rss
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        if self.use_cuda:
            import torch

            self.peak = torch.cuda.max_memory_allocated()
        else:
            self._stop.set()
            self._thread.join()
            self.peak = max(self.peak, psutil.Process().memory_info().rss)
        return False


def _load_dataset(script_args, dataset_args, extra):
    from trl import get_dataset

    if dataset_args.datasets:
        return get_dataset(dataset_args)
    if not script_args.dataset_name:
        raise ValueError("the recipe names no dataset: set dataset_name (a repo id or a built folder)")
    return load_dataset(script_args.dataset_name, name=script_args.dataset_config,
                        revision=extra.dataset_revision, streaming=script_args.dataset_streaming)


def training_data(train_split, script_args, dataset_args, extra: VilbiasSFTArguments) -> TrainingData | None:
    """What the run trains on: the train split's rows by ``unique_id`` (the ``sft`` config carries it).

    None, with a warning, for a dataset without ``unique_id`` (not a BiasCorpus build): evaluation
    then cannot check that a test row was not trained on, and says so.
    """
    if "unique_id" not in (train_split.column_names or []):
        logger.warning("the train split has no unique_id column: no training-data record is written, so "
                       "`vilbias evaluate` cannot check this model for rows it trained on")
        return None
    # Streaming splits are read once more, for the one column.
    ids = [str(row["unique_id"]) for row in train_split.select_columns(["unique_id"])]
    if dataset_args.datasets:
        names = " + ".join(d.path for d in dataset_args.datasets)
        return TrainingData.from_ids(names, ids, revision=None, config="mixture", split="train")
    return TrainingData.from_ids(script_args.dataset_name, ids, revision=extra.dataset_revision,
                                 config=script_args.dataset_config or "default", split=script_args.dataset_train_split)


def _trainer(script_args, training_args, model_args, dataset, method: str, extra: VilbiasSFTArguments):
    """TRL's ``SFTTrainer`` as ``trl sft`` builds it, with ``method``'s PEFT config."""
    from trl import SFTTrainer, get_quantization_config

    model_init_kwargs = dict(revision=model_args.model_revision, trust_remote_code=training_args.trust_remote_code,
                             attn_implementation=model_args.attn_implementation, dtype=model_args.dtype)
    model_init_kwargs.update(training_args.model_init_kwargs or {})
    training_args.model_init_kwargs = model_init_kwargs
    return SFTTrainer(
        model=model_args.model_name_or_path,
        args=training_args,
        train_dataset=dataset[script_args.dataset_train_split],
        eval_dataset=dataset[script_args.dataset_test_split] if training_args.eval_strategy != "no" else None,
        quantization_config=get_quantization_config(model_args),
        peft_config=method_peft_config(method, model_args, extra),
    )


def run_sft(script_args, training_args, model_args, dataset_args, extra: VilbiasSFTArguments) -> dict[str, Any]:
    """Train as ``trl sft`` would, with ``extra.method``; write the run record, the training-data
    record (:mod:`vilbias.provenance`) and the card info beside the weights (and push, if asked).

    Mirrors ``trl.scripts.sft.main``: model init kwargs from ``ModelConfig``, TRL's quantisation and
    LoRA helpers, ``SFTTrainer`` on the train split. Returns the run record.

    Raises:
        vilbias.outputs.OutputRefused: ``output_dir`` or ``merged_output_dir`` holds files no sft run
            wrote (checked before the model loads; nothing is written).
    """
    claim_run_dir(training_args.output_dir)
    if extra.merged_output_dir:
        claim_merged_dir(extra.merged_output_dir)
    import torch

    method = apply_method(extra.method, model_args)
    started = time.perf_counter()
    # The trainer would push TRL's own card at every save; vilbias pushes once, with its card, below.
    push, training_args.push_to_hub = training_args.push_to_hub, False
    use_cuda = torch.cuda.is_available() and not training_args.use_cpu

    dataset = _load_dataset(script_args, dataset_args, extra)
    trained_on = training_data(dataset[script_args.dataset_train_split], script_args, dataset_args, extra)
    with PeakMemory(use_cuda) as memory:
        trainer = _trainer(script_args, training_args, model_args, dataset, method, extra)
        trainable, total = count_parameters(trainer.model)
        train_started = time.perf_counter()
        output = trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)
        train_time = time.perf_counter() - train_started
    trainer.save_model(training_args.output_dir)
    tokens = max((log.get("num_tokens", 0) for log in trainer.state.log_history), default=0)
    record = {
        "method": method, "base_model": model_args.model_name_or_path, "base_model_revision": model_args.model_revision,
        "dataset": script_args.dataset_name, "dataset_config": script_args.dataset_config,
        "dataset_revision": extra.dataset_revision, "output_dir": str(training_args.output_dir),
        "training_data": trained_on.describe() if trained_on is not None else None,
        "trainable_parameters": trainable, "total_parameters": total, "trainable_share": trainable / total,
        "peak_memory_bytes": memory.peak, "peak_memory_kind": memory.kind, "memory_before_bytes": memory.baseline,
        "device": torch.cuda.get_device_name() if use_cuda else "cpu",
        "wall_time_s": time.perf_counter() - started, "train_runtime_s": train_time,
        "train_steps": trainer.state.global_step,
        "train_samples_per_second": output.metrics.get("train_samples_per_second"),
        "train_tokens_per_second": tokens / train_time if tokens and train_time else None,
        "train_loss": output.metrics.get("train_loss"),
        **_settings(training_args, model_args, extra, method),
    }
    if trainer.accelerator.is_main_process:
        _write_outputs(training_args.output_dir, record, trained_on)
        if push:
            push_run(training_args.output_dir, training_args.hub_model_id, record)
    trainer.end()
    if extra.merged_output_dir and trainer.accelerator.is_main_process:
        merge_run(training_args.output_dir, extra.merged_output_dir)
    return record


def claim_run_dir(output_dir: str | Path) -> Path:
    """Refuse an ``output_dir`` that is not new, empty or an earlier sft run's (what the trainer and
    :func:`_write_outputs` write): the trainer writes ``README.md``, ``config.json`` and checkpoints there."""
    return claim_output(output_dir, "vilbias train sft", flag="--output_dir",
                        signs=(RUN_RECORD, TRAINING_DATA, CARD_INFO_FILE, "trainer_state.json", "checkpoint-*"))


def claim_merged_dir(merged_dir: str | Path) -> Path:
    """Refuse a ``merged_output_dir`` that is not new, empty or an earlier merge's."""
    return claim_output(merged_dir, "vilbias train sft", flag="--merged_output_dir", signs=(TRAINING_DATA, CARD_INFO_FILE))


def merge_run(output_dir: str | Path, merged_dir: str | Path) -> Path:
    """Merge a finished adapter run into its base (:func:`vilbias.models.vlm.save_merged`): the
    standalone model, its training-data record and its card info (``vilbias publish model`` pushes it)."""
    claim_merged_dir(merged_dir)
    record = json.loads(Path(output_dir, RUN_RECORD).read_text(encoding="utf-8"))
    if record["method"] not in ("lora", "qlora", "ia3"):
        raise ValueError(f"a {record['method']} run has no adapter weights to merge into its base")
    save_merged(output_dir, merged_dir)
    info = model_card_info(record, training_data=read_training_data(merged_dir))
    info.library_name, info.tags = "transformers", [*info.tags, "merged"]
    info.save(merged_dir)
    return Path(merged_dir)


def _settings(training_args, model_args, extra: VilbiasSFTArguments, method: str) -> dict[str, Any]:
    """The run record's hyperparameters, quantisation, PEFT settings and evaluation results."""
    peft = None
    if method in ("lora", "qlora"):
        peft = {"lora_r": model_args.lora_r, "lora_alpha": model_args.lora_alpha,
                "lora_dropout": model_args.lora_dropout, "target_modules": model_args.lora_target_modules}
    elif method == "prompt_tuning":
        peft = {"num_virtual_tokens": extra.num_virtual_tokens}
    elif method == "ia3":
        peft = {"target_modules": extra.ia3_target_modules or ["k_proj", "v_proj", "down_proj"]}
    return {
        "hyperparameters": {k: getattr(training_args, k) for k in _RECORDED_HYPERPARAMETERS},
        "quantization": ({"load_in_4bit": True, "bnb_4bit_quant_type": model_args.bnb_4bit_quant_type,
                          "double_quant": model_args.use_bnb_nested_quant, "compute_dtype": model_args.dtype}
                         if model_args.load_in_4bit else None),
        "peft": peft,
        "evaluation": (json.loads(Path(extra.evaluation_results).read_text(encoding="utf-8"))
                       if extra.evaluation_results else None),
    }


def _write_outputs(output_dir: str | Path, record: dict[str, Any], trained_on: TrainingData | None) -> None:
    """Beside the weights: the run record, the training-data record and the card info."""
    Path(output_dir, RUN_RECORD).write_text(json.dumps(record, indent=2, default=str), encoding="utf-8")
    if trained_on is not None:
        trained_on.write(output_dir)
    logger.info("trainable %.4f%% of %d parameters, peak %s %.1f MiB, %.1f s", 100 * record["trainable_share"],
                record["total_parameters"], record["peak_memory_kind"], record["peak_memory_bytes"] / 2**20,
                record["wall_time_s"])
    # What the card states, so `vilbias publish model --source OUTPUT_DIR` can push it later
    model_card_info(record, training_data=trained_on).save(output_dir)


def push_run(output_dir: str | Path, repo_id: str | None, record: dict[str, Any] | None = None) -> str:
    """Push a finished run's folder (adapter or full weights + processor) with a vilbias model card.

    Uses the Hub-publishing stage (:func:`vilbias.publish.model.push_model`), whose card contract
    is: base model, dataset + revision, what the checkpoint trained on (the training-data record,
    pushed with its ids file), method, hyperparameters, trainable share, memory, evaluation results
    when available, usage snippet.
    """
    if not repo_id:
        raise ValueError("push_to_hub needs hub_model_id (ORG/NAME)")
    record = record or json.loads(Path(output_dir, RUN_RECORD).read_text(encoding="utf-8"))
    info = model_card_info(record, repo_id, training_data=read_training_data(output_dir))
    return push_model(output_dir, repo_id, info=info)


def model_card_info(record: dict[str, Any], repo_id: str | None = None, *,
                    training_data: TrainingData | None = None) -> ModelCardInfo:
    """The :class:`vilbias.publish.model.ModelCardInfo` of a run record (what the card states).

    Without ``repo_id`` the usage snippet is left to the publishing stage's default.
    """
    evaluation = record.get("evaluation") or []
    if isinstance(evaluation, dict):  # {"f1": 0.8, ...}: test-split metrics
        evaluation = [{"metric_type": k, "value": v, "split": "test"} for k, v in evaluation.items()]
    hyperparameters = {**record["hyperparameters"], **(record.get("peft") or {}),
                       **(record.get("quantization") or {})}
    return ModelCardInfo(
        base_model=record["base_model"],
        dataset=record["dataset"],
        method=record["method"],
        task="image-text-to-text",
        dataset_config=record.get("dataset_config") or "sft",
        dataset_revision=record.get("dataset_revision"),
        hyperparameters=hyperparameters,
        trainable_params=record["trainable_parameters"],
        total_params=record["total_parameters"],
        peak_memory_mb=round(record["peak_memory_bytes"] / 2**20, 1),
        wall_time_s=round(record["wall_time_s"], 1),
        eval_results=evaluation,
        usage_snippet=USAGE_SNIPPET.replace("{repo_id}", repo_id) if repo_id else "",
        library_name="transformers" if record["method"] == "full" else "peft",
        tags=["vilbias", "media-bias", "trl", "sft", record["method"]],
        training_data=training_data,
    )


USAGE_SNIPPET = """from PIL import Image
from vilbias.models.vlm import generate_answers, load_vlm

model, processor = load_vlm("{repo_id}")  # adapter repos load their base model underneath
answer = generate_answers(model, processor, [(Image.open("news.jpg"), "Headline ...", "Article text ...")])[0]
print(answer.label, answer.reasoning)  # label None + answer.error when the output is unparseable"""


__all__ = ["VilbiasSFTArguments", "make_parser", "parse_recipe", "run_sft", "push_run", "merge_run", "training_data",
           "count_parameters", "PeakMemory", "METHODS"]
