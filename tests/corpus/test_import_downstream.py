"""Everything downstream of ``build`` runs on an imported release: the README's offline baseline
commands (text and fusion classifier, ``--cv``, ``evaluate`` on the fusion checkpoint) and the
Space's model picker loading that checkpoint — at small size, with tiny random encoders."""

from __future__ import annotations

import json

import pytest

from tests.corpus.releases import items, write_2025
from tests.training_classifier.conftest import tiny_bert, tiny_clip  # noqa: F401  (fixtures)
from vilbias.cli import main
from vilbias.corpus import BuildConfig, build

FAST = ["--batch-size", "8", "--epochs", "2", "--learning-rate", "5e-3", "--patience", "0"]


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """The 2025 Hub layout (no rationales, no outlet-free rows) imported as a corpus."""
    root = tmp_path_factory.mktemp("imported")
    write_2025(root / "hub/data/dataset_cleaned.parquet", items(60))
    report = build(BuildConfig(source=str(root / "hub"), output=root / "BiasCorpus"))
    return root / "BiasCorpus", report


def test_classifiers_cv_evaluate_and_the_space_on_an_imported_corpus(imported, tiny_bert, tiny_clip, tmp_path):  # noqa: F811
    corpus, report = imported
    sizes = report["configs"]["default"]
    cache = ["--feature-cache", str(tmp_path / "cache")]

    text = tmp_path / "text"
    assert main(["train", "classifier", "--dataset", str(corpus), "--model", tiny_bert, "--output-dir", str(text), *FAST, *cache]) == 0
    metrics = json.loads((text / "metrics.json").read_text())
    assert metrics["rows"] == sizes and metrics["test"]["n"] == sizes["test"]

    fusion = tmp_path / "fusion"
    assert main(["train", "classifier", "--dataset", str(corpus), "--architecture", "fusion", "--model", tiny_bert,
                 "--image-encoder", tiny_clip, "--hidden-size", "16", "--output-dir", str(fusion), *FAST, *cache]) == 0
    assert json.loads((fusion / "metrics.json").read_text())["test"]["n"] == sizes["test"]

    cv = tmp_path / "cv"
    assert main(["train", "classifier", "--dataset", str(corpus), "--cv", "--model", tiny_bert, "--output-dir", str(cv),
                 "--epochs", "1", "--batch-size", "8", "--patience", "0", *cache]) == 0
    per_fold = json.loads((cv / "cv_metrics.json").read_text())["per_fold"]
    # One model per fold, each scored on its own fold's test rows; the folds partition the corpus.
    assert [f["n"] for f in per_fold] == [report["configs"][f"fold_{k}"]["test"] for k in range(5)]
    assert sum(f["n"] for f in per_fold) == report["rows"]

    run = tmp_path / "run"
    assert main(["evaluate", "--dataset", str(corpus), "--model", str(fusion), "--output", str(run)]) == 0
    results = json.loads((run / "results.json").read_text())
    assert results["training_data"][0]["status"] == "checked" and results["training_data"][0]["overlap"] == 0
    assert results["training_data"][0]["evaluated"] == sizes["test"]

    import yaml
    from vilbias.spaces.inputs import Limits, item_from_upload
    from vilbias.spaces.predictors import Predictors, load_model_specs

    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"models": [{"name": "imported-fusion", "title": "Fusion trained on an imported release",
                                                   "kind": "fusion", "path": str(fusion)}]}))
    (spec,) = load_model_specs(models)
    image = tmp_path / "photo.jpg"
    from datasets import load_dataset

    row = load_dataset(str(corpus), split="test")[0]
    row["image"].save(image)
    prediction = Predictors([spec]).get("imported-fusion").predict(item_from_upload(image, row["headline"], row["article_text"], Limits()))
    assert prediction.label in ("biased", "not_biased") and prediction.reads_image
    assert abs(sum(prediction.probabilities.values()) - 1) < 1e-5
