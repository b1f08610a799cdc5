"""Check the offline default's calibration on BABE: refit its temperature on the validation split
and measure the expected calibration error (ECE) before and after on the splits it never
trained on.

    python -m vilbias.spaces.calibrate --sentences final_labels_SG2_public.csv [--model-dir DIR] [--diagram out.png]

``vilbias train sentence`` fits the temperature when it trains the model (NLL on
the validation split; the figures and the reliability diagram are in the model card and the
Space's "How this works" panel). This command recomputes them from the shipped folder alone, with
the model's own forward pass (loaded through the catalogue, in float32 as the card measured it),
so anyone can check what the card says.
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
from pathlib import Path

from vilbias.corpus.pipeline import build_sentences
from vilbias.metrics.calibration import (
    expected_calibration_error,
    fit_temperature,
    plot_reliability,
    reliability_bins,
)
from vilbias.models.catalogue import ModelSpec, load_predictor, shipped_sentence_model


def split_probabilities(predictor, rows: list[dict], ids: list[str]) -> tuple[list[float], list[float], list[int]]:
    """Raw and calibrated P(biased), and the labels, of the rows named by ``ids`` (``predictor``: a
    sentence predictor of :func:`vilbias.models.catalogue.load_predictor`)."""
    wanted = set(ids)
    chosen = [r for r in rows if r["unique_id"] in wanted]
    raw, calibrated = predictor.sentence_probabilities([r["text"] for r in chosen])
    return raw, calibrated, [r["label"] for r in chosen]


def calibration_report(sentences: str | Path, model_dir: str | Path | None = None, diagram: Path | None = None) -> dict:
    """The temperature refitted on the validation split, and ECE before/after per held-out split;
    with ``diagram``, the test split's reliability diagram drawn as training draws it."""
    # why: torch comes with these modules: imported here, not at the top.
    from datasets import load_dataset
    from vilbias.training.sentence_card import reliability_title

    from vilbias.corpus.sentences import sentence_splits

    # float32, the path the card's figures were measured on, whatever faster path this CPU offers
    # (int8 on VNNI moves the refitted temperature by 3 %)
    spec = ModelSpec(model=str(model_dir or shipped_sentence_model()), inference_precision="float32")
    predictor = load_predictor(spec, "sentence")
    report = {"shipped_temperature": predictor.model.config.temperature}
    with tempfile.TemporaryDirectory(prefix="vilbias-calibrate-") as tmp:
        build_sentences(sentences, Path(tmp) / "babe")
        rows = list(load_dataset(str(Path(tmp) / "babe"), "default", split="train+validation+test"))
        # the splits training used: whole articles (corpus.sentences.sentence_splits)
        splits = sentence_splits(rows)["default"]
        for split in ("validation", "test"):
            raw, calibrated, labels = split_probabilities(predictor, rows, splits[split])
            report[split] = {"rows": len(labels), "ece_before": expected_calibration_error(raw, labels),
                             "ece_after": expected_calibration_error(calibrated, labels)}
            if split == "validation":
                report["refitted_temperature"] = fit_temperature([[1 - p, p] for p in raw], labels)
            elif diagram is not None:
                articles = len({r["news_link"] or r["unique_id"] for r in rows if r["unique_id"] in set(splits["test"])})
                plot_reliability(reliability_bins(raw, labels), reliability_bins(calibrated, labels), Path(diagram),
                                 reliability_title(str(sentences), len(labels), articles, report["test"]["ece_before"],
                                                   report["test"]["ece_after"]))
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", required=True, help="The BABE file the model was trained from (final_labels_SG2_public.csv for the shipped one).")
    parser.add_argument("--model-dir", default=None, help="A saved sentence-bias model (default: the shipped one).")
    parser.add_argument("--diagram", type=Path, default=None, help="Also draw the test split's reliability diagram to this PNG.")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    report = calibration_report(args.sentences, args.model_dir, args.diagram)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
