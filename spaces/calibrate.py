"""Fit the offline default's softmax temperature on the embedded sample's validation split.

    python -m vilbias.spaces.calibrate          # prints the temperature for spaces/models.yaml

The fusion head was trained on 49 rows, so its raw softmax is not a probability anyone should
read; temperature scaling (one parameter, fitted by negative log-likelihood on held-out rows)
is the least that makes "62%" mean something. On 7 validation rows it stays rough, which the
Space says.
"""

from __future__ import annotations

import argparse
import io
import logging
import tempfile


def validation_probabilities(model_dir=None) -> tuple[list[list[float]], list[int]]:
    """The packaged default's uncalibrated probabilities and gold labels on the sample's
    validation split (the split the build assigns)."""
    from PIL import Image
    from vilbias.loading_script.biascorpus import iter_examples
    from vilbias.training.train_default import DEFAULT_MODEL_DIR

    from vilbias.corpus.plan import make_plan
    from vilbias.models.fusion import FusionForClassification, compose_text
    from vilbias.task import LABEL_NAMES

    model = FusionForClassification.from_pretrained(model_dir or DEFAULT_MODEL_DIR)
    probabilities, labels = [], []
    with tempfile.TemporaryDirectory(prefix="vilbias-calibrate-") as tmp:
        plan = make_plan(None, tmp)
        for row, example in iter_examples(plan, keep=lambda r: r.split == "validation"):
            image = Image.open(io.BytesIO(example["image"]["bytes"])).convert("RGB")
            out = model.predict(image, compose_text(example["headline"], example["article_text"]))
            probabilities.append([out["probabilities"][name] for name in LABEL_NAMES])
            labels.append(row.label)
    return probabilities, labels


def main(argv: list[str] | None = None) -> int:
    from vilbias.spaces.predictors import fit_temperature

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", default=None, help="A saved fusion model (default: the packaged one).")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    probabilities, labels = validation_probabilities(args.model_dir)
    print(f"temperature: {fit_temperature(probabilities, labels)}  ({len(labels)} validation rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
