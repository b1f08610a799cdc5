"""Records ``babe_first_epoch.json``, the reference of
``test_default_model.py::test_train_sentence_retraces_the_shipped_run_on_babe``:

1. the shipped run's first epoch retraced in full (``vilbias train sentence``'s default split and
   defaults, one torch thread, as the test sets them up), each optimizer step's training loss and
   batch size kept; it must end at the shipped ``metrics.json``'s epoch-1 figures (1e-5);
2. the same retrace stopped after ``--steps`` optimizer steps and scored on the validation split;
   its training loss must be the mean of the first ``--steps`` losses of 1.

Run from the repository root, with ``../shared/data/babe`` in place (about 5 minutes on one core)::

    OMP_NUM_THREADS=1 .venv/bin/python -m tests.training_classifier.record_babe_first_epoch
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

OUT = Path(__file__).with_name("babe_first_epoch.json")


def main() -> None:
    import torch
    from datasets import load_dataset
    from transformers import TrainerCallback
    from vilbias.training import sentence_fit
    from vilbias.training.sentence_config import SentenceConfig
    from vilbias.training.sentence_data import cache_examples

    from tests.real_data import SHARED_DATA
    from vilbias.corpus.pipeline import build_sentences
    from vilbias.corpus.sentences import sentence_splits
    from vilbias.models.catalogue import shipped_sentence_model
    from vilbias.models.sentence_bias import SentenceBiasModel
    from vilbias.provenance import ids_digest

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--output", type=Path, default=OUT)
    options = parser.parse_args()
    steps_wanted = options.steps
    metrics = json.loads((shipped_sentence_model() / "metrics.json").read_text(encoding="utf-8"))
    record = json.loads((shipped_sentence_model() / "training_data.json").read_text(encoding="utf-8"))
    sentences = SHARED_DATA / "babe" / "final_labels_SG2_public.csv"
    tmp = Path(tempfile.mkdtemp(prefix="vilbias-record-"))
    cfg = SentenceConfig(sentences=sentences, output_dir=str(tmp / "out"))
    build_sentences(sentences, tmp / "babe")
    rows = list(load_dataset(str(tmp / "babe"), "default", split="train+validation+test"))
    split = sentence_splits(rows)["default"]
    assert ids_digest(split["train"]) == record["ids_sha256"]
    torch.set_num_threads(metrics["settings"]["threads"])

    steps: list[list] = []
    add = sentence_fit.EpochLog.add

    def kept(self, loss, weight):  # every training step's loss, as the epoch log adds it up
        steps.append([loss, weight])
        return add(self, loss, weight)

    sentence_fit.EpochLog.add = kept

    class Stop(TrainerCallback):
        def __init__(self, after: int | None):
            self.after = after

        def on_step_end(self, args, state, control, **kwargs):
            if self.after is not None and state.global_step >= self.after:
                control.should_training_stop = True

        def on_epoch_end(self, args, state, control, **kwargs):
            control.should_training_stop = True

    def retrace(after: int | None) -> dict:
        steps.clear()
        torch.manual_seed(cfg.seed)  # as run_split seeds before the adapter and heads are drawn
        model = SentenceBiasModel(cfg.model_config())
        examples = cache_examples(model, rows)
        [log] = sentence_fit.fit(model, [examples[u] for u in split["train"]], [examples[u] for u in split["validation"]], cfg,
                                 callbacks=(Stop(after),))
        return {"train_loss": log["train_loss"], "validation_loss": log["validation_loss"], "steps": list(steps)}

    epoch, shipped = retrace(None), metrics["log"][0][0]
    assert abs(epoch["train_loss"] - shipped["train_loss"]) < 1e-5, (epoch["train_loss"], shipped)
    assert abs(epoch["validation_loss"] - shipped["validation_loss"]) < 1e-5, (epoch["validation_loss"], shipped)
    first = retrace(steps_wanted)
    assert first["steps"] == epoch["steps"][:steps_wanted]
    reference = {
        "about": ("The shipped BABE run's first epoch, step by step: each optimizer step's training loss and batch size, "
                  "recorded by tests/training_classifier/record_babe_first_epoch.py (one torch thread) from a retrace of "
                  "`vilbias train sentence`'s default split with the command's defaults, which ended at the shipped "
                  f"metrics.json's epoch-1 figures (train loss within {abs(epoch['train_loss'] - shipped['train_loss']):.0e}, "
                  f"validation loss within {abs(epoch['validation_loss'] - shipped['validation_loss']):.0e}). first_steps: "
                  "the same retrace stopped after `steps` optimizer steps (its training loss is the mean of the first "
                  "`steps` entries of first_epoch.steps, to the last digit), then scored on the validation split."),
        "first_epoch": {"train_loss": epoch["train_loss"], "validation_loss": epoch["validation_loss"], "steps": epoch["steps"]},
        "first_steps": {"steps": steps_wanted, "train_loss": first["train_loss"], "validation_loss": first["validation_loss"]},
    }
    text = json.dumps(reference, separators=(", ", ": ")).replace("], [", "],\n  [")
    options.output.write_text(text + "\n", encoding="utf-8")
    print(f"wrote {options.output}")


if __name__ == "__main__":
    main()
