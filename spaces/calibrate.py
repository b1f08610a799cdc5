"""Check the offline default's calibration on BABE: refit its temperature on the validation split
and measure the expected calibration error (ECE) before and after on the splits it never
trained on.

    python -m vilbias.spaces.calibrate --sentences final_labels_SG1.csv [--model-dir DIR] [--diagram out.png]

``python -m vilbias.training.train_default`` fits the temperature when it trains the model (NLL on
the validation split; the figures and the reliability diagram are in the model card and the
Space's "How this works" panel). This command recomputes them from the shipped folder alone, with
the model's own forward pass, so anyone can check what the card says.
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
from pathlib import Path

from vilbias.corpus.sentences import build_sentences
from vilbias.task import LABEL_NAMES


def split_probabilities(model, corpus: Path, split: str) -> tuple[list[float], list[float], list[int]]:
    """Raw and calibrated P(biased), and the labels, of one split of the ``default`` config."""
    from datasets import load_dataset

    rows = load_dataset(str(corpus), "default", split=split)
    logits, _ = model.sentence_logits(list(rows["text"]))
    biased = LABEL_NAMES.index("biased")
    raw = logits.softmax(-1)[:, biased].tolist()
    calibrated = (logits / model.config.temperature).softmax(-1)[:, biased].tolist()
    return raw, calibrated, list(rows["label"])


def calibration_report(sentences: str | Path, model_dir: str | Path | None = None, diagram: Path | None = None) -> dict:
    """The temperature refitted on the validation split, and ECE before/after per held-out split;
    with ``diagram``, the test split's reliability diagram drawn as training draws it."""
    # torch comes with these two modules: imported here, not at the top.
    from vilbias.training.train_default import (
        DEFAULT_MODEL_DIR,
        plot_reliability,
        reliability_title,
    )

    from vilbias.models.sentence_bias import (
        SentenceBiasModel,
        expected_calibration_error,
        fit_temperature,
        reliability_bins,
    )

    model = SentenceBiasModel.from_pretrained(model_dir or DEFAULT_MODEL_DIR)
    report = {"shipped_temperature": model.config.temperature}
    with tempfile.TemporaryDirectory(prefix="vilbias-calibrate-") as tmp:
        build_sentences(sentences, Path(tmp) / "babe")
        for split in ("validation", "test"):
            raw, calibrated, labels = split_probabilities(model, Path(tmp) / "babe", split)
            report[split] = {"rows": len(labels), "ece_before": expected_calibration_error(raw, labels),
                             "ece_after": expected_calibration_error(calibrated, labels)}
            if split == "validation":
                report["refitted_temperature"] = fit_temperature([[1 - p, p] for p in raw], labels)
            elif diagram is not None:
                plot_reliability(reliability_bins(raw, labels), reliability_bins(calibrated, labels), Path(diagram),
                                 reliability_title(len(labels), report["test"]["ece_before"], report["test"]["ece_after"]))
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", required=True, help="BABE's final_labels_SG1.csv (the file the model was trained from).")
    parser.add_argument("--model-dir", default=None, help="A saved sentence-bias model (default: the shipped one).")
    parser.add_argument("--diagram", type=Path, default=None, help="Also draw the test split's reliability diagram to this PNG.")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    report = calibration_report(args.sentences, args.model_dir, args.diagram)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
