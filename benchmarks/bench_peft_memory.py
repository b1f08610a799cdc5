"""Peak memory and trainable share of full fine-tuning vs LoRA vs QLoRA (and prompt tuning, IA3).

    .venv/bin/python benchmarks/bench_peft_memory.py [--steps 2] [--hidden 768 --layers 12]

Builds a random LLaVA-NeXT VLM (Mistral text + CLIP vision) of >= 100M parameters from a config,
so weights dominate memory, and runs the SmolVLM-style recipe path (`run_sft` on the embedded
sample's ``sft`` config) once per method, each in a fresh process so one run's peak cannot leak
into another's. Peak memory is CUDA max-allocated on a GPU, else process RSS. Prints each
method's figures as a ratio against full fine-tuning (the plain baseline).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
METHODS = ["full", "lora", "qlora", "ia3", "prompt_tuning"]


def one_run(method: str, model_dir: str, data_dir: str, out: str, steps: int, cpu: bool) -> None:
    from vilbias.training.sft import parse_recipe, run_sft

    overrides = ["--model_name_or_path", model_dir, "--dataset_name", data_dir, "--output_dir", out,
                 "--max_steps", str(steps), "--save_strategy", "no", "--method", method, "--logging_steps", "1"]
    if cpu:  # bf16 needs a GPU; on CPU the comparison runs in fp32
        overrides += ["--use_cpu", "true", "--bf16", "false", "--dtype", "float32"]
    record = run_sft(*parse_recipe(ROOT / "training/recipes/llava-v1.6-mistral-7b-hf/lora.yaml", overrides))
    print("RECORD " + json.dumps(record, default=str))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=768)
    parser.add_argument("--intermediate", type=int, default=2048)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--methods", nargs="+", default=METHODS)
    parser.add_argument("--one", nargs=4, metavar=("METHOD", "MODEL", "DATA", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--smoke", action="store_true", help="A tiny run of every step, in seconds, for the test suite (tests/test_benchmarks.py); its figures mean nothing.")
    args = parser.parse_args()
    if args.smoke:
        args.steps, args.hidden, args.intermediate, args.layers, args.methods = 1, 32, 64, 1, ["lora"]
    import torch

    cpu = not torch.cuda.is_available()
    if args.one:
        one_run(*args.one, steps=args.steps, cpu=cpu)
        return 0

    sys.path.insert(0, str(ROOT))
    from tests.fakes.tiny_vlm import build_tiny_vlm
    from vilbias.corpus import BuildConfig, build

    work = Path(tempfile.mkdtemp(prefix="bench-peft-"))
    build(BuildConfig(output=work / "data"))
    model_dir = build_tiny_vlm("llava_next", work / "model", hidden=args.hidden, intermediate=args.intermediate,
                               layers=args.layers)
    records = {}
    for method in args.methods:
        proc = subprocess.run([sys.executable, __file__, "--steps", str(args.steps), "--one", method, str(model_dir),
                               str(work / "data"), str(work / f"out-{method}")], capture_output=True, text=True)
        line = next((x for x in proc.stdout.splitlines() if x.startswith("RECORD ")), None)
        if line is None:
            print(f"{method}: failed\n{proc.stderr[-3000:]}")
            continue
        records[method] = json.loads(line[len("RECORD "):])
    base = records.get("full")
    total = next(iter(records.values()))["total_parameters"] if records else 0
    print(f"\nmodel: random LLaVA-NeXT, {total / 1e6:.1f}M parameters; {args.steps} steps; device: "
          f"{'cpu (peak RSS)' if cpu else torch.cuda.get_device_name() + ' (peak CUDA allocated)'}")
    print(f"{'method':<14}{'trainable':>12}{'share':>10}{'peak MiB':>11}{'vs full':>9}{'wall s':>8}")
    for method, r in records.items():
        ratio = r["peak_memory_bytes"] / base["peak_memory_bytes"] if base else float("nan")
        print(f"{method:<14}{r['trainable_parameters']:>12,}{100 * r['trainable_share']:>9.3f}%"
              f"{r['peak_memory_bytes'] / 2**20:>11.0f}{ratio:>9.2f}{r['wall_time_s']:>8.1f}")
    order = [m for m in ("qlora", "lora", "full") if m in records]
    peaks = [records[m]["peak_memory_bytes"] for m in order]
    print(f"QLoRA < LoRA < full: {peaks == sorted(peaks) and len(set(peaks)) == len(peaks)}")
    return 0 if len(records) == len(args.methods) else 1  # a method that failed fails the run


if __name__ == "__main__":
    sys.exit(main())
