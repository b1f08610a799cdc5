"""End to end: a tiny VLM fine-tuned with LoRA for two steps, evaluated from its folder through
generation, parsing, metrics and an OpenAI-compatible judge; its training-data record (written by
the SFT run) keeps it off the rows it trained on."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.tiny_vlm import build_tiny_vlm
from vilbias.evaluate import EvaluateConfig, evaluate
from vilbias.task import CLOSED_QUESTION


@pytest.fixture(scope="module")
def adapter(sample_dataset_dir, tmp_path_factory):
    from vilbias.training.sft import parse_recipe, run_sft

    root = tmp_path_factory.mktemp("e2e")
    base = build_tiny_vlm("llava_next", root / "base")
    run_sft(*parse_recipe("training/recipes/llava-v1.6-mistral-7b-hf/lora.yaml", [
        "--model_name_or_path", str(base), "--dataset_name", str(sample_dataset_dir), "--output_dir", str(root / "adapter"),
        "--max_steps", "2", "--use_cpu", "true", "--bf16", "false", "--dtype", "float32", "--save_strategy", "no"]))
    return root / "adapter"


def test_tiny_adapter_end_to_end(sample_dataset_dir, adapter, tmp_path):
    assert (adapter / "adapter_config.json").is_file()
    verdict = '{"reasoning_accuracy": 0, "faithfulness": 1, "justification": "Argues the other way."}'
    with FakeOpenAIServer(lambda body: verdict) as judge:
        cfg = EvaluateConfig(dataset=str(sample_dataset_dir), model=str(adapter), judge=f"openai:judge@{judge.base_url}",
                             shots=[0, 1], limit=4, max_new_tokens=12, batch_size=4, output=tmp_path / "run", bootstrap=50)
        results = evaluate(cfg)
    assert results["model"]["kind"] == "transformers-vlm" and results["regimes"] == ["0-shot", "1-shot"]
    (check,) = results["training_data"]
    assert (check["status"], check["overlap"], check["training_data"]["config"]) == ("checked", 0, "sft")
    raw = json.loads((tmp_path / "run" / "results.json").read_text())
    for s in raw["summary"]:
        closed = s["closed"]
        # a two-step random model rarely writes a label: whatever it wrote is scored, none dropped
        assert s["views"] == 1 and 0 <= closed["accuracy"]["mean"] <= 1
        assert sum(map(sum, s["confusion_matrix"])) == 4
    for e in raw["evaluations"]:
        o = e["open"]
        assert o["n"] == 4 and o["judged"] == 4 and o["judge_failures"] == 0
        # the judge is asked only about oVQA answers with a rationale; the rest are 0/0 by rule
        assert o["faithfulness"]["percent"] == 100.0 * (4 - o["rule_zero"]) / 4
        assert e["closed"]["unparseable"] == round(e["closed"]["unparseable_rate"] * 4)
    assert not any(CLOSED_QUESTION in json.dumps(r) for r in judge.requests)  # the judge sees oVQA answers only
    # a local model answers the closed question constrained to the labels: never unparseable
    assert raw["questions"]["closed"] == "label only (constrained to the labels by log-likelihood)"
    assert all(e["closed"]["unparseable"] == 0 for e in raw["evaluations"])
    db = sqlite3.connect(tmp_path / "run" / "evaluation.sqlite")
    closed = [json.loads(r[0]) for r in db.execute("SELECT raw FROM predictions WHERE question='closed'")]
    assert len(closed) == 8 and all(c["answer"] in ("biased", "not biased") and len(c["logprobs"]) == 2 for c in closed)
    assert db.execute("SELECT COUNT(*) FROM predictions WHERE question='ovqa'").fetchone()[0] == 8
    assert (tmp_path / "run" / "confusion_matrix_0-shot.png").stat().st_size > 5000


def test_tiny_adapter_is_refused_on_a_fold_it_trained_on(sample_dataset_dir, adapter, tmp_path):
    """The documented old usage (the sft adapter scored on a fold's test split) stops before the model loads."""
    cfg = EvaluateConfig(dataset=str(sample_dataset_dir), model=str(adapter), dataset_config="fold_1", output=tmp_path / "run")
    with pytest.raises(ValueError, match=r"^refused: 10 of the 13 rows to score \(fold_1/test\) are rows .*adapter trained on "
                                         r"\(49 rows of .*, config `sft`, split `train`"):
        evaluate(cfg)
    assert not (tmp_path / "run").exists()
