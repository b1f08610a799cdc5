"""No seen row is scored: the overlap check runs before the model is asked anything; --cv means
per-fold models; bad paths fail in one sentence and leave no results folder."""

from __future__ import annotations

import json

import pytest

from tests.evaluate.conftest import ScriptedBackend, write_provenance
from vilbias.evaluate import EvaluateConfig, evaluate
from vilbias.models.catalogue import GenerativeModel


def _asked_nothing():
    return ScriptedBackend(lambda m: pytest.fail("the model was asked before the overlap check"))


@pytest.fixture
def default_train_model(sample_dataset_dir, tmp_path):
    """A checkpoint folder that trained on default/train (= sft/train): the documented fine-tuned adapter."""
    return write_provenance(tmp_path / "adapter", sample_dataset_dir, "sft", "train")


def test_overlap_is_refused_before_the_model_is_asked(sample_dataset_dir, default_train_model, tmp_path):
    backend = _asked_nothing()
    cfg = EvaluateConfig(dataset=str(sample_dataset_dir), model=str(default_train_model), dataset_config="fold_0",
                         output=tmp_path / "run")
    with pytest.raises(ValueError) as e:
        evaluate(cfg, model=GenerativeModel(backend, name="adapter"))
    message = str(e.value)
    # 10 of fold_0's 13 test rows are in default/train on the embedded sample
    assert message.startswith("refused: 10 of the 13 rows to score (fold_0/test) are rows")
    assert "--dataset-config default --split test" in message and "--cv" in message and "--allow-overlap" in message
    assert backend.requests == [] and not (tmp_path / "run").exists()


def test_allow_overlap_scores_them_and_says_so(sample_dataset_dir, default_train_model, tmp_path):
    cfg = EvaluateConfig(dataset=str(sample_dataset_dir), model=str(default_train_model), dataset_config="fold_0",
                         output=tmp_path / "run", allow_overlap=True)
    results = evaluate(cfg, model=GenerativeModel(ScriptedBackend(lambda m: "biased"), name="adapter"))
    (check,) = results["training_data"]
    assert (check["status"], check["overlap"], check["evaluated"], check["allow_overlap"]) == ("overlap", 10, 13, True)
    assert check["training_data"]["config"] == "sft" and check["training_data"]["rows"] == 49
    assert len(results["warnings"]) == 1 and "10 of 13 scored rows" in results["warnings"][0]
    report = (tmp_path / "run" / "report.md").read_text()
    assert "overlap allowed (--allow-overlap)" in report and "**Warning:**" in report


def test_own_test_split_is_checked_clean(sample_dataset_dir, default_train_model, tmp_path):
    cfg = EvaluateConfig(dataset=str(sample_dataset_dir), model=str(default_train_model), output=tmp_path / "run")
    results = evaluate(cfg, model=GenerativeModel(ScriptedBackend(lambda m: "biased"), name="adapter"))
    (check,) = results["training_data"]
    assert (check["status"], check["overlap"], check["evaluated"]) == ("checked", 0, 10) and results["warnings"] == []
    assert "| default/test | `" in (tmp_path / "run" / "report.md").read_text()


def test_a_model_without_a_record_is_evaluated_with_a_warning(sample_dataset_dir, tmp_path):
    bare = tmp_path / "someone-elses-model"
    bare.mkdir()
    results = evaluate(EvaluateConfig(dataset=str(sample_dataset_dir), model=str(bare), output=tmp_path / "run"),
                       model=GenerativeModel(ScriptedBackend(lambda m: "biased"), name="x"))
    assert results["training_data"][0]["status"] == "unchecked"
    assert "not checked for training rows" in results["warnings"][0] and "no training-data record" in results["warnings"][0]
    assert "**unchecked** (no record)" in (tmp_path / "run" / "report.md").read_text()


def test_cli_refuses_the_documented_old_usage(sample_dataset_dir, default_train_model, tmp_path, capsys):
    """`--cv` with one checkpoint, or one fold's test split, scored rows the adapter trained on."""
    from vilbias.cli import main

    base = ["evaluate", "--dataset", str(sample_dataset_dir), "--model", str(default_train_model)]
    assert main([*base, "--cv", "--output", str(tmp_path / "cv")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("vilbias evaluate: error: refused: --cv evaluates one model per fold") and "lacks fold_0" in err
    assert main([*base, "--config", "fold_3", "--output", str(tmp_path / "f3")]) == 2  # --config is the YAML file now
    assert capsys.readouterr().err == ("vilbias evaluate: error: --config reads a YAML file of options now; the dataset "
                                       "config is --dataset-config fold_3\n")
    assert main([*base, "--dataset-config", "fold_3", "--output", str(tmp_path / "f3")]) == 2
    err = capsys.readouterr().err.strip().split("\n")[-1]  # after the datasets progress bars of loading the split
    assert err.startswith("vilbias evaluate: error: refused: 9 of the 13 rows to score (fold_3/test)")
    assert not (tmp_path / "cv").exists() and not (tmp_path / "f3").exists()


def test_cv_refuses_a_fold_model_that_saw_its_fold(sample_dataset_dir, tmp_path):
    folds = tmp_path / "folds"
    for k in range(5):  # fold_2's model trained on default/train: it has seen most of fold_2/test
        write_provenance(folds / f"fold_{k}", sample_dataset_dir, "default" if k == 2 else f"fold_{k}", "train")
    with pytest.raises(ValueError, match=r"refused: 10 of the 13 rows to score \(fold_2/test\)"):
        evaluate(EvaluateConfig(dataset=str(sample_dataset_dir), model=str(folds), cv=True, output=tmp_path / "run"))
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("flag, message", [
    ("--dataset", "--dataset ./nope was taken for a local folder and does not exist: give the folder `vilbias build` "
                  "wrote, or a Hub repo id ORG/NAME"),
    ("--model", "model ./nope does not exist"),  # the catalogue's sentence (vilbias.models.catalogue.check_spec)
    ("--judge", "judge ./nope does not exist"),
])
def test_missing_paths_fail_in_one_sentence_and_leave_nothing(flag, message, sample_dataset_dir, tmp_path, capsys,
                                                              monkeypatch):
    from vilbias.cli import main

    monkeypatch.chdir(tmp_path)
    args = {"--dataset": str(sample_dataset_dir), "--model": "smollm2", "--judge": "smollm2", flag: "./nope"}
    assert main(["evaluate", *[x for kv in args.items() for x in kv]]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"vilbias evaluate: error: {message}") and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []  # no results folder, half-written or not


def test_a_run_that_fails_before_any_answer_leaves_no_folder(sample_dataset_dir, tmp_path):
    not_a_model = tmp_path / "empty"
    not_a_model.mkdir()
    with pytest.raises(FileNotFoundError, match="no config.json or adapter_config.json"):
        evaluate(EvaluateConfig(dataset=str(sample_dataset_dir), model=str(not_a_model), output=tmp_path / "run"))
    assert not (tmp_path / "run").exists()
    # a folder holding answers (transport errors) is kept, so the same command resumes
    flaky = ScriptedBackend(lambda m: None)
    with pytest.raises(RuntimeError, match="re-run the same command"):
        evaluate(EvaluateConfig(dataset=str(sample_dataset_dir), model="stub", output=tmp_path / "kept"),
                 model=GenerativeModel(flaky, name="stub"))
    assert (tmp_path / "kept" / "evaluation.sqlite").is_file()
    assert not (tmp_path / "kept" / "results.json").exists()
    # a folder of another setup is refused, and left as it was
    with pytest.raises(ValueError, match="another setup"):
        evaluate(EvaluateConfig(dataset=str(sample_dataset_dir), model="other", output=tmp_path / "kept"),
                 model=GenerativeModel(flaky, name="other"))
    assert json.loads(json.dumps(sorted(p.name for p in (tmp_path / "kept").iterdir())))[0] == "evaluation.sqlite"
