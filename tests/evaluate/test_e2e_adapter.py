"""End to end: a tiny VLM fine-tuned with LoRA for two steps, evaluated from its folder through
generation, parsing, metrics and an OpenAI-compatible judge."""

from __future__ import annotations

import json

from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.tiny_vlm import build_tiny_vlm
from vilbias.evaluate import EvaluateConfig, evaluate


def test_tiny_adapter_end_to_end(sample_dataset_dir, tmp_path):
    from vilbias.training.sft import parse_recipe, run_sft

    base = build_tiny_vlm("llava_next", tmp_path / "base")
    adapter = tmp_path / "adapter"
    run_sft(*parse_recipe("training/recipes/llava-v1.6-mistral-7b-hf/lora.yaml", [
        "--model_name_or_path", str(base), "--dataset_name", str(sample_dataset_dir), "--output_dir", str(adapter),
        "--max_steps", "2", "--use_cpu", "true", "--bf16", "false", "--dtype", "float32", "--save_strategy", "no"]))
    assert (adapter / "adapter_config.json").is_file()

    verdict = '{"reasoning_accuracy": 0, "faithfulness": 1, "justification": "Argues the other way."}'
    with FakeOpenAIServer(lambda body: verdict) as judge:
        cfg = EvaluateConfig(dataset=str(sample_dataset_dir), model=str(adapter), judge=f"openai:judge@{judge.base_url}",
                             shots=[0, 1], limit=4, max_new_tokens=12, batch_size=4, output=tmp_path / "run", bootstrap=50)
        results = evaluate(cfg)
    assert results["model"]["kind"] == "transformers-vlm" and results["regimes"] == ["0-shot", "1-shot"]
    raw = json.loads((tmp_path / "run" / "results.json").read_text())
    for s in raw["summary"]:
        closed = s["closed"]
        # a two-step random model rarely writes a label: whatever it wrote is scored, none dropped
        assert s["views"] == 1 and 0 <= closed["accuracy"]["mean"] <= 1
        assert sum(map(sum, s["confusion_matrix"])) == 4
    for e in raw["evaluations"]:
        o = e["open"]
        assert o["n"] == 4 and o["judged"] == 4 and o["judge_failures"] == 0
        # the judge is asked only about answers with a rationale; the rest are 0/0 by rule
        assert o["faithfulness"]["percent"] == 100.0 * (4 - o["rule_zero"]) / 4
        assert e["closed"]["unparseable"] == round(e["closed"]["unparseable_rate"] * 4)
    assert (tmp_path / "run" / "confusion_matrix_0-shot.png").stat().st_size > 5000
