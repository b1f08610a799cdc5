"""Whole runs with scripted models: metrics, k-shot leakage, judge, resume, reports, analyses, CLI."""

from __future__ import annotations

import json
import sqlite3

import pytest
from sklearn.metrics import f1_score

from tests.evaluate.conftest import (
    ScriptedBackend,
    headline_of,
    is_closed,
    two_questions,
    write_provenance,
)
from tests.fakes.openai_server import FakeOpenAIServer
from vilbias.evaluate import EvaluateConfig, evaluate
from vilbias.evaluate.config import CompareConfig
from vilbias.models.catalogue import GenerativeModel

GOOD = '{"reasoning_accuracy": 1, "faithfulness": 1, "justification": "Cites the headline."}'


def scripted_answers(items):
    """Closed question: items 0-5 right, 6-7 wrong, 8 unparseable, 9 right. oVQA: the same labels with a
    rationale, except 8 (unparseable) and 9 (a label with no rationale)."""
    closed, ovqa = {}, {}
    for n, item in enumerate(items):
        label = item.label if n < 6 or n == 9 else 1 - item.label
        word = "biased" if label else "not biased"
        closed[item.headline] = "I cannot tell." if n == 8 else word
        ovqa[item.headline] = ("I cannot tell." if n == 8 else
                               f"Label: {word}" if n == 9 else f"Label: {word}\nReasoning: The headline says {n}.")
    return two_questions(lambda m: closed[headline_of(m)], lambda m: ovqa[headline_of(m)])


def test_generative_run_metrics_judge_reports(sample_dataset_dir, test_items, tmp_path):
    model = GenerativeModel(ScriptedBackend(scripted_answers(test_items)), name="stub")
    judge_backend = ScriptedBackend(lambda m: GOOD)
    cfg = EvaluateConfig(dataset=str(sample_dataset_dir), model="stub", judge="stub-judge", shots=[0, 5],
                         output=tmp_path / "run", probes=["all"], bootstrap=200)
    results = evaluate(cfg, model=model, judge=GenerativeModel(judge_backend, name="stub-judge"))

    plain = {s["regime"]: s for s in results["summary"] if s["probe"] == "none"}
    refs = [i.label for i in test_items]
    preds = [i.label if n < 6 or n == 9 else 1 - i.label for n, i in enumerate(test_items)]
    preds[8] = 1 - test_items[8].label  # unparseable = wrong
    closed = plain["0-shot"]["closed"]
    assert closed["accuracy"]["mean"] == pytest.approx(0.7)
    assert closed["f1_binary"]["mean"] == pytest.approx(f1_score(refs, preds))
    assert closed["f1_macro"]["mean"] == pytest.approx(f1_score(refs, preds, average="macro"))
    assert closed["unparseable_rate"]["mean"] == pytest.approx(0.1)
    # open-ended: 8 judged by the judge (all 1/1), the unparseable one and the empty one 0/0 by rule
    plain_eval = [e for e in results["evaluations"] if e["regime"] == "0-shot" and e["probe"] == "none"][0]
    assert plain_eval["open"]["rule_zero"] == 2 and plain_eval["open"]["judged"] == 10
    assert plain_eval["open"]["reasoning_accuracy"]["percent"] == pytest.approx(80.0)
    # the stub answers by headline, so probes that keep the headline change nothing
    assert all(abs(p["delta_f1_binary"]) < 1e-12 for p in results["probe_deltas"])
    assert {p["probe"] for p in results["probe_deltas"]} == {"no_image", "swap_image", "headline_only"}

    # k-shot: 5 shots from train, none evaluated, shown before the question
    shot_ids = results["k_shot_examples"]["default/test"]["5-shot"]
    assert len(shot_ids) == 5 and not set(shot_ids) & {i.unique_id for i in test_items}
    evaluated_headlines = {i.headline for i in test_items}
    five = [r for r in model.backend.requests if len(r.messages) == 11]
    assert len(five) == 80  # 10 items x 4 probes x 2 questions
    for request in five:
        shown = [p["text"] for m in request.messages[:-1] if m["role"] == "user" for p in m["content"] if p["type"] == "text"]
        assert not any(h in text for h in evaluated_headlines for text in shown)
        answers = [m["content"][0]["text"] for m in request.messages if m["role"] == "assistant"]
        # shots answer in the asked question's own format: the label alone, or label + reasoning
        assert all(a in ("biased", "not biased") for a in answers) == is_closed(request.messages)
    no_image = [r for r in model.backend.requests if len(r.messages) == 1 and r.messages[0]["content"][0]["type"] == "text"]
    assert len(no_image) == 20

    out = tmp_path / "run"
    saved = json.loads((out / "results.json").read_text())
    assert saved["dataset"]["id"] == str(sample_dataset_dir) and saved["seed"] == 0
    assert saved["prompt_versions"]["ovqa"].startswith("sft-") and saved["prompt_versions"]["judge"].startswith("judge-")
    assert saved["prompt_versions"]["closed"].startswith("closed-")
    report = (out / "report.md").read_text()
    assert "## Open-ended (oVQA, LLM judge)" in report and "| 0-shot | swap_image |" in report
    for plot in saved["plots"]:
        assert (out / plot).stat().st_size > 5000 and (out / plot).read_bytes()[:4] == b"\x89PNG"
    # every probe delta is zero (the stub reads the headline): a bar plot of them would be empty axes
    assert "confusion_matrix_5-shot.png" in saved["plots"] and "probes.png" not in saved["plots"]
    assert not (out / "probes.png").exists() and "Every delta is zero, so there is no probe plot." in report
    assert saved["degenerate"] is None and "do not measure the task" not in report


def test_resume_asks_nothing_twice(sample_dataset_dir, test_items, tmp_path):
    answer = scripted_answers(test_items)
    cfg = EvaluateConfig(dataset=str(sample_dataset_dir), model="stub", judge="j", output=tmp_path / "run", bootstrap=50)
    first = ScriptedBackend(answer, stop_after=4)
    with pytest.raises(KeyboardInterrupt):
        evaluate(cfg, model=GenerativeModel(first, name="stub"), judge=GenerativeModel(ScriptedBackend(lambda m: GOOD), name="j"))
    second = ScriptedBackend(answer)
    judge_first = ScriptedBackend(lambda m: GOOD, stop_after=3)
    with pytest.raises(KeyboardInterrupt):
        evaluate(cfg, model=GenerativeModel(second, name="stub"), judge=GenerativeModel(judge_first, name="j"))
    assert len(first.requests) == 4 and len(second.requests) == 6 + 10  # the rest of the closed answers, every oVQA one
    third, judge_second = ScriptedBackend(answer), ScriptedBackend(lambda m: GOOD)
    results = evaluate(cfg, model=GenerativeModel(third, name="stub"), judge=GenerativeModel(judge_second, name="j"))
    assert third.requests == [] and len(judge_first.requests) + len(judge_second.requests) == 8
    for closed in (True, False):
        asked = [headline_of(r.messages) for r in first.requests + second.requests if is_closed(r.messages) == closed]
        assert sorted(asked) == sorted(i.headline for i in test_items)
    assert results["summary"][0]["closed"]["accuracy"]["mean"] == pytest.approx(0.7)
    # another model in the same folder is refused rather than mixed in
    with pytest.raises(ValueError, match="another setup"):
        evaluate(EvaluateConfig(dataset=str(sample_dataset_dir), model="other", output=tmp_path / "run"),
                 model=GenerativeModel(third, name="other"))


def test_transport_errors_are_retried_on_resume(sample_dataset_dir, test_items, tmp_path):
    answer = scripted_answers(test_items)
    down = {test_items[0].headline}
    flaky = ScriptedBackend(lambda m: None if headline_of(m) in down else answer(m))
    cfg = EvaluateConfig(dataset=str(sample_dataset_dir), model="stub", output=tmp_path / "run")
    with pytest.raises(RuntimeError, match="1 answers or verdicts are missing"):
        evaluate(cfg, model=GenerativeModel(flaky, name="stub"))
    db = sqlite3.connect(tmp_path / "run" / "evaluation.sqlite")
    assert db.execute("SELECT COUNT(*) FROM predictions WHERE status='error'").fetchone()[0] == 1
    healthy = ScriptedBackend(answer)
    evaluate(cfg, model=GenerativeModel(healthy, name="stub"))
    assert [headline_of(r.messages) for r in healthy.requests] == [test_items[0].headline]


def test_cv_scores_each_fold_model_on_its_own_fold(sample_dataset_dir, tmp_path, monkeypatch):
    """--cv takes a folder of per-fold models (as `vilbias train classifier --cv` writes it): fold_K's model,
    whose record lists fold_K's train rows, is loaded and scored on fold_K/test only."""
    from vilbias.evaluate import runner

    folds = tmp_path / "classifier-cv"
    for k in range(5):
        write_provenance(folds / f"fold_{k}", sample_dataset_dir, f"fold_{k}", "train")
    loaded = []

    def load_model(spec, **kwargs):
        loaded.append(spec)
        return GenerativeModel(ScriptedBackend(lambda m: "biased"), name=spec)

    monkeypatch.setattr(runner, "load_model", load_model)
    cfg = EvaluateConfig(dataset=str(sample_dataset_dir), model=str(folds), cv=True, output=tmp_path / "cv")
    results = evaluate(cfg)
    assert loaded == [str(folds / f"fold_{k}") for k in range(5)]
    assert [e["view"] for e in results["evaluations"]] == [f"fold_{k}/test" for k in range(5)]
    assert [(t["view"], t["model"], t["status"], t["overlap"]) for t in results["training_data"]] == [
        (f"fold_{k}/test", str(folds / f"fold_{k}"), "checked", 0) for k in range(5)]
    per_fold = [e["closed"]["recall_binary"] for e in results["evaluations"]]
    assert per_fold == [1.0] * 5  # always "biased": recall 1 on every fold
    s = results["summary"][0]
    assert s["views"] == 5 and s["closed"]["recall_binary"] == {"mean": 1.0, "std": 0.0}
    assert s["closed"]["accuracy"]["std"] > 0
    assert results["warnings"] == [] and "± " in (tmp_path / "cv" / "report.md").read_text()


def test_config_checks():
    with pytest.raises(ValueError, match="--dataset and --model are required"):
        EvaluateConfig()
    with pytest.raises(ValueError, match="unknown probe"):
        EvaluateConfig(dataset="d", model="m", probes=["blur"])
    with pytest.raises(ValueError, match="one or more RUN_DIR"):
        CompareConfig(run_dirs=[])
    with pytest.raises(ValueError, match="drop --dataset-config and --split"):
        EvaluateConfig(dataset="d", model="m", cv=True, dataset_config="fold_1")
    with pytest.raises(ValueError, match="a server's closed answers are generated"):
        EvaluateConfig(dataset="d", model="openai:m@http://h/v1", closed_answers="constrained")


def test_cli_against_openai_compatible_servers(sample_dataset_dir, test_items, tmp_path, monkeypatch):
    """`vilbias evaluate` end to end over HTTP: the model and the judge are OpenAI-compatible
    servers; the judge refuses one item for good and sends invalid JSON once for another."""
    from vilbias.cli import main

    answer = scripted_answers(test_items)
    refused, flaky = test_items[0].headline, test_items[1].headline
    seen = set()

    def judge(body):
        text = body["messages"][1]["content"][-1]["text"]
        if refused in text:
            return "I'm sorry, I can't assess this content."
        if flaky in text and flaky not in seen:
            seen.add(flaky)
            return "Here you go: reasoning accuracy 1"
        return GOOD

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret")
    with FakeOpenAIServer(lambda body: answer(body["messages"])) as model_server, FakeOpenAIServer(judge) as judge_server:
        out = tmp_path / "cli"
        code = main(["evaluate", "--dataset", str(sample_dataset_dir), "--model", f"openai:stub-vlm@{model_server.base_url}",
                     "--judge", f"openai:stub-judge@{judge_server.base_url}", "--judge-retries", "1",
                     "--output", str(out), "--bootstrap", "100"])
        assert code == 0
        assert model_server.auth_headers[0] == "Bearer sk-test-secret" and len(model_server.requests) == 20
        assert model_server.requests[0]["messages"][0]["content"][0]["type"] == "image_url"
        results = json.loads((out / "results.json").read_text())
        o = results["evaluations"][0]["open"]
        assert o["judge_failures"] == 1 and o["judged"] == 9 and o["judge_failure_rate"] == 0.1
        assert len(judge_server.requests) == 8 + 1 + 1  # 8 judged, 1 retry for the flaky one, 1 for the refusal
        assert results["model"]["id"] == f"openai:stub-vlm@{model_server.base_url}"
        assert "sk-test-secret" not in (out / "results.json").read_text() + (out / "report.md").read_text()
        n_model = len(model_server.requests)
        assert main(["evaluate", "--config", str(out / "evaluate_config.yaml")]) == 0  # the options the run saved
        assert len(model_server.requests) == n_model and len(judge_server.requests) == 10  # resumed: nothing asked


def test_compare_runs_and_model_index(sample_dataset_dir, test_items, tmp_path):
    from vilbias.evaluate.report import write_model_index
    from vilbias.publish.model import ModelCardInfo

    runs = []
    for n, (acc_share, fraction, pair, modality) in enumerate([(1.0, 1.0, "m", "text+image"), (0.6, 0.5, None, "text+image"),
                                                               (0.3, 0.25, "m", "text")]):
        right = int(acc_share * len(test_items))
        def answer(messages, right=right):
            i = [t.headline for t in test_items].index(headline_of(messages))
            label = test_items[i].label if i < right else 1 - test_items[i].label
            word = "biased" if label else "not biased"
            return word if is_closed(messages) else f"Label: {word}\nReasoning: reason {i}"
        def judge(messages, right=right):
            i = int(messages[1]["content"][-1]["text"].split("reason ")[1].split()[0])
            return GOOD if i < right else GOOD.replace('"reasoning_accuracy": 1', '"reasoning_accuracy": 0')
        # the share of the training set comes from the model's own training-data record (either key)
        model_dir = write_provenance(tmp_path / "fractions" / f"m{n}", sample_dataset_dir, "default", "train",
                                     **{"fraction" if n == 1 else "train_fraction": fraction})
        cfg = EvaluateConfig(dataset=str(sample_dataset_dir), model=str(model_dir), judge="j", output=tmp_path / f"r{n}",
                             pair=pair, modality=modality, bootstrap=50)
        evaluate(cfg, model=GenerativeModel(ScriptedBackend(answer), name=f"m{n}"),
                 judge=GenerativeModel(ScriptedBackend(judge), name="j"))
        runs.append(tmp_path / f"r{n}")
    untagged = tmp_path / "r-untagged"  # a model without a record is left out of the scaling plot
    evaluate(EvaluateConfig(dataset=str(sample_dataset_dir), model="stub", output=untagged),
             model=GenerativeModel(ScriptedBackend(lambda m: "biased"), name="stub"))

    from vilbias.cli import main

    assert main(["evaluate", "compare", *map(str, runs), str(untagged), "--output", str(tmp_path / "analysis")]) == 0
    analysis = json.loads((tmp_path / "analysis" / "analysis.json").read_text())
    assert analysis["closed_vs_open"]["pearson"]["r"] == pytest.approx(1.0)
    (series,) = analysis["scaling"]
    assert series == "fractions 0-shot"
    assert [(p["train_fraction"], p["train_rows"]) for p in analysis["scaling"][series]] == [
        (0.25, [49]), (0.5, [49]), (1.0, [49])]
    assert [p["f1_binary"] for p in analysis["scaling"][series]] == sorted(p["f1_binary"] for p in analysis["scaling"][series])
    (gap,) = analysis["modality_gap"]
    assert gap["pair"] == "m" and gap["delta_f1"] == pytest.approx(gap["f1_text_image"] - gap["f1_text"]) and gap["delta_f1"] > 0
    for plot in ("closed_vs_open.png", "scaling.png", "modality_gap.png"):
        assert (tmp_path / "analysis" / plot).stat().st_size > 5000
    assert "Pearson r = 1.000" in (tmp_path / "analysis" / "analysis.md").read_text()
    # the untagged stub answers "biased" to everything: named as such above the analyses
    assert list(analysis["degenerate_runs"]) == ["stub-default-test"]
    assert "- `stub-default-test`: the model predicts biased for every scored row" in (
        tmp_path / "analysis" / "analysis.md").read_text()

    folder = tmp_path / "model"
    folder.mkdir()
    ModelCardInfo(base_model="tiny/vlm", dataset="org/BiasCorpus", method="lora", task="image-text-to-text",
                  eval_results=[{"metric_type": "loss", "value": 0.5, "split": "validation"}]).save(folder)
    info, card = write_model_index(runs[0], folder)
    names = [e.get("metric_name") for e in info.eval_results]
    assert "accuracy, 0-shot" in names and "reasoning accuracy (LLM judge, %), 0-shot" in names
    assert any(e["metric_type"] == "loss" for e in info.eval_results)  # other entries kept
    readme = (folder / "README.md").read_text()
    assert "model-index" in readme and "reasoning_accuracy" in readme
    again, _ = write_model_index(runs[0], folder)
    assert len(again.eval_results) == len(info.eval_results)  # replaced, not duplicated
    assert "(*)" not in (folder / "README.md").read_text()
    # a constant model's figures go into the card flagged as such, with the reason
    stub, _ = write_model_index(untagged, folder)
    from vilbias.evaluate.report import eval_results

    flagged = {e["metric_name"] for e in eval_results(json.loads((untagged / "results.json").read_text()))}
    assert flagged and all(e["note"].endswith("not evidence that the model tells the classes apart")
                           for e in stub.eval_results if e.get("metric_name") in flagged)
    readme = (folder / "README.md").read_text()
    assert readme.count("(*) |") == len(flagged)
    assert "(*) stub" in readme and "the model predicts biased for every scored row" in readme
