"""GPU check of the recipe path: bf16 LoRA and 4-bit CUDA QLoRA on a tiny VLM; prints figures.

    .venv/bin/python benchmarks/gpu_check_sft.py

Runs the llava-v1.6 lora and qlora recipes unchanged (bf16: true, dtype bfloat16, NF4 + double
quantisation) except for the model (a tiny random LLaVA-NeXT), the dataset (the embedded sample)
and 5 steps, then reloads the QLoRA adapter over a 4-bit base and generates once.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="A tiny run of every step, in seconds, for the test suite (tests/test_benchmarks.py); its figures mean nothing.")
    steps = "1" if parser.parse_args().smoke else "5"
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device: run this on the GPU machine")
        return 1
    sys.path.insert(0, str(ROOT))
    from PIL import Image
    from vilbias.training.sft import parse_recipe, run_sft

    from tests.fakes.tiny_vlm import build_tiny_vlm
    from vilbias.corpus import BuildConfig, build
    from vilbias.models.vlm import generate_answers, load_vlm

    work = Path(tempfile.mkdtemp(prefix="gpu-check-sft-"))
    build(BuildConfig(output=work / "data"))
    model_dir = build_tiny_vlm("llava_next", work / "model", hidden=256, intermediate=512, layers=4)
    print(f"device: {torch.cuda.get_device_name()}")
    for method in ("lora", "qlora"):
        record = run_sft(*parse_recipe(ROOT / f"training/recipes/llava-v1.6-mistral-7b-hf/{method}.yaml", [
            "--model_name_or_path", str(model_dir), "--dataset_name", str(work / "data"),
            "--output_dir", str(work / method), "--max_steps", steps, "--save_strategy", "no"]))
        print(f"{method}: bf16={record['hyperparameters']['bf16']} steps={record['train_steps']} "
              f"loss={record['train_loss']:.3f} trainable={100 * record['trainable_share']:.2f}% "
              f"peak={record['peak_memory_bytes'] / 2**20:.1f} MiB ({record['peak_memory_kind']}) "
              f"wall={record['wall_time_s']:.1f}s samples/s={record['train_samples_per_second']:.2f}")
    model, processor = load_vlm(work / "qlora", load_in_4bit=True, dtype="bfloat16", device_map="cuda")
    n4 = sum(type(m).__name__ == "Linear4bit" for m in model.modules())
    answer = generate_answers(model, processor, [(Image.new("RGB", (64, 48)), "Headline", "Text.")],
                              max_new_tokens=8)[0]
    print(f"4-bit reload: {n4} Linear4bit layers on {model.device}; generated {answer.raw!r} "
          f"(parse error: {answer.error})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
