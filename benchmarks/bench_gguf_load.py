"""Loading the embedded SmolLM2 GGUF: transformers as it is vs the file parsed once
(:func:`vilbias.models.chat_local.gguf_parsed_once`, what ``TransformersBackend.from_pretrained``
does for every ``gguf_file``).

    .venv/bin/python benchmarks/bench_gguf_load.py [--rounds 3] [--gguf FILE]

Each load runs in a fresh interpreter (``python bench_gguf_load.py --child plain|once``), so that
no cache carries from one to the next; vilbias is imported before the clock starts. A load is the
product's (``TransformersBackend.from_pretrained``: the config, the tokenizer, then the model from
that config, all from the GGUF file, dequantised to float32), ``plain`` with the cache taken out;
``--gguf`` names another file (a local path).
Rounds alternate the two contenders; printed: the CPU, each contender's best wall and CPU seconds,
and the ratio plain / once. ``--smoke`` (the test suite): one round on a tiny random Llama GGUF
written in a temporary folder (a 32-token vocabulary: what makes SmolLM2's parse slow is its 49,152).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def child(mode: str, gguf: Path) -> None:
    import torch  # noqa: F401  (what the load imports, imported before the clock starts)
    import transformers.integrations.ggml  # noqa: F401
    import transformers.modeling_gguf_pytorch_utils  # noqa: F401
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer  # noqa: F401

    from vilbias.models import chat_local

    if mode == "plain":
        chat_local.gguf_parsed_once = contextlib.nullcontext  # the product's load, without the cache
    wall, cpu = time.perf_counter(), time.process_time()
    chat_local.TransformersBackend.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype="float32", device="cpu")
    print(json.dumps({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}))


def tiny_gguf(path: Path) -> Path:
    """A random one-layer Llama (hidden size 16) with a byte-level BPE vocabulary of 32 tokens, as
    a GGUF file transformers loads like any other."""
    import gguf
    import numpy as np

    hidden, ffn, heads = 16, 32, 2
    tokens = ["<unk>", "<s>", "</s>", *map(chr, range(97, 123)), "\u0120", "ab", "\u0120a"]
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_context_length(64)
    writer.add_embedding_length(hidden)
    writer.add_block_count(1)
    writer.add_feed_forward_length(ffn)
    writer.add_head_count(heads)
    writer.add_head_count_kv(heads)
    writer.add_rope_dimension_count(hidden // heads)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(len(tokens))
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types([gguf.TokenType.CONTROL] * 3 + [gguf.TokenType.NORMAL] * (len(tokens) - 3))
    writer.add_token_merges(["a b", "\u0120 a"])
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    rng = np.random.default_rng(0)
    for name, shape in (("token_embd", (len(tokens), hidden)), ("output", (len(tokens), hidden)), ("blk.0.attn_q", (hidden, hidden)),
                        ("blk.0.attn_k", (hidden, hidden)), ("blk.0.attn_v", (hidden, hidden)), ("blk.0.attn_output", (hidden, hidden)),
                        ("blk.0.ffn_gate", (ffn, hidden)), ("blk.0.ffn_up", (ffn, hidden)), ("blk.0.ffn_down", (hidden, ffn))):
        writer.add_tensor(f"{name}.weight", (rng.standard_normal(shape) * 0.02).astype(np.float32))
    for name in ("output_norm", "blk.0.attn_norm", "blk.0.ffn_norm"):
        writer.add_tensor(f"{name}.weight", np.ones(hidden, np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def run_child(mode: str, gguf: Path) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TQDM_DISABLE": "1", "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, __file__, "--child", mode, "--gguf", str(gguf)], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"the {mode} load failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--gguf", type=Path, help="a GGUF file to load (default: the embedded SmolLM2-135M-Instruct)")
    parser.add_argument("--smoke", action="store_true", help="A tiny run of every step, in seconds, for the test suite (tests/test_benchmarks.py); its figures mean nothing.")
    parser.add_argument("--child", choices=["plain", "once"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.gguf)
        return
    from vilbias.models.chat_local import SMOLLM2_GGUF, smollm2_dir
    from vilbias.models.sentence_runtime import describe_cpu

    with tempfile.TemporaryDirectory(prefix="bench-gguf-") as scratch:
        if args.smoke:
            args.rounds, args.gguf = 1, tiny_gguf(Path(scratch) / "tiny.gguf")
        gguf = (args.gguf or smollm2_dir() / SMOLLM2_GGUF).resolve()
        print(f"CPU: {describe_cpu()}; loading config, tokenizer and model of {gguf.name} ({gguf.stat().st_size / 1e6:.1f} MB), "
              f"{args.rounds} rounds")
        best: dict[str, dict] = {}
        for _ in range(args.rounds):
            for mode in ("plain", "once"):
                got = run_child(mode, gguf)
                best[mode] = {k: min(v, best.get(mode, got)[k]) for k, v in got.items()}
    for mode, label in (("plain", "transformers as it is"), ("once", "parsed once (shipped)")):
        print(f"  {label:24s} {best[mode]['wall']:6.2f} s wall  {best[mode]['cpu']:6.2f} s CPU")
    print(f"=> {best['plain']['wall'] / best['once']['wall']:.2f}x faster by wall time, "
          f"{best['plain']['cpu'] / best['once']['cpu']:.2f}x by CPU time")


if __name__ == "__main__":
    main()
