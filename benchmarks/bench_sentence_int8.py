"""int8 for the shipped sentence model on this CPU: what each ONNX Runtime quantisation costs in
accuracy, whether its answer depends on the batch, and what it gains per core.

    .venv/bin/python benchmarks/bench_sentence_int8.py [--articles 12]

Variants, each timed by CPU time on one core (``process_time``, best of 3 over real-length
articles, one article per call in batches of 16 sentences) against the plain fp32 PyTorch call:

- **ONNX Runtime fp32**: the shipped setting (the model's own export, ``inference_runtime``).
- **dynamic int8**: ``onnxruntime.quantization.quantize_dynamic`` of the same graph, int8 weights
  per channel, activations quantised per batch, on the layers static int8 quantises
  (``sentence_runtime.INT8_LAYERS``: the feed-forward output, attention products and heads stay float32).
- **static int8**: what ``from_pretrained(folder, inference_precision="int8")`` loads
  (``vilbias.models.sentence_runtime``): ``quantize_static`` on the same layers, activation scales
  fixed by MinMax calibration on the 256 training sentences the checkpoint carries.

For each: macro-F1 and sentences whose flag differs from fp32 on the held-out test split; the
largest change of a sentence's logits when it is scored alone rather than among other articles'
sentences (0 means the answer does not depend on the batch). Reads ``../shared/data`` (a
benchmark, not product code).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_sentence_speed as speed  # noqa: E402  (the articles, the test split and the peak)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--articles", type=int, default=12)
    parser.add_argument("--smoke", action="store_true", help="A tiny run of every step, in seconds, for the test suite (tests/test_benchmarks.py); its figures mean nothing.")
    args = parser.parse_args()
    if args.smoke:
        args.articles = 3  # the batch check joins three
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import numpy as np
    import onnx
    import onnxruntime as ort
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModel
    from vilbias.training.sentence_data import article_splits

    from vilbias.corpus.sentences import read_sentences
    from vilbias.metrics.scores import closed_metrics
    from vilbias.models.catalogue import shipped_sentence_model
    from vilbias.models.predictors import item_sentences
    from vilbias.models.sentence_runtime import INT8_LAYERS, _export_onnx
    from vilbias.task import Item, biased_probability

    torch.set_num_threads(1)
    folder = shipped_sentence_model()
    plain = AutoModel.from_pretrained(folder, inference_runtime="torch")
    plain._cache = None
    tok = plain.tokenizer
    articles = [item_sentences(Item("", a["headline"], a["text"], -1, None))[:120] for a in speed.real_articles(args.articles)]
    rows = read_sentences(speed.BABE)[0]
    splits = article_splits(rows)["default"]
    test = [r for r in rows if r["unique_id"] in set(splits["test"])][:32 if args.smoke else None]

    def encode(texts, **kw):
        enc = tok(texts, truncation=True, max_length=plain.config.max_length, return_tensors="np", **kw)
        return {"input_ids": enc["input_ids"].astype(np.int64), "attention_mask": enc["attention_mask"].astype(np.int64)}

    def run(session, sentences):
        order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
        out = np.zeros((len(sentences), 2), dtype=np.float32)
        for start in range(0, len(order), 16):
            idx = order[start:start + 16]
            out[idx] = session.run(None, encode([sentences[i] for i in idx], padding=True))[0]
        return out

    # fp32 and static int8 as from_pretrained loads them; dynamic int8 on the same layers, made here
    shipped = AutoModel.from_pretrained(folder, inference_precision="float32", inference_runtime="onnxruntime")
    static = AutoModel.from_pretrained(folder, inference_precision="int8", inference_runtime="onnxruntime")
    work = Path(tempfile.mkdtemp())
    (work / "fp32.onnx").write_bytes(_export_onnx(plain))
    matmuls = [n.name for n in onnx.load(str(work / "fp32.onnx")).graph.node if n.op_type in ("MatMul", "Gemm")]
    quantize_dynamic(work / "fp32.onnx", work / "dynamic.onnx", weight_type=QuantType.QInt8, per_channel=True,
                     nodes_to_exclude=[n for n in matmuls if not INT8_LAYERS.fullmatch(n)], extra_options={"DefaultTensorType": 1})
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads, options.log_severity_level = 1, 1, 3
    sessions = {"ONNX Runtime fp32 (shipped)": shipped._session,
                "dynamic int8, FFN output in fp32": ort.InferenceSession(str(work / "dynamic.onnx"), options, providers=["CPUExecutionProvider"]),
                "static int8, FFN output in fp32": static._session}
    variants = {"plain fp32 torch": lambda s: plain.sentence_logits(s)[0].numpy()}
    for name, session in sessions.items():
        variants[name] = (lambda bound: lambda s: run(bound, s))(session)

    texts, gold = [r["text"] for r in test], [r["label"] for r in test]
    reference = None
    cpu = {name: [] for name in variants}
    for fn in variants.values():
        fn(articles[0])
    for _ in range(3):
        for name, fn in variants.items():
            start = time.process_time()
            for article in articles:
                fn(article)
            cpu[name].append((time.process_time() - start) / len(articles))
    peak = speed.peak_gflops(threads=1)["fp32"]
    flops = speed.encoder_flops(plain, articles)
    base = min(cpu["plain fp32 torch"])
    print(f"{len(articles)} articles, {flops / 1e9:.1f} GFLOP each; one core's fp32 peak {peak:.0f} GFLOP/s; CPU: {speed._cpu()}")
    for name, fn in variants.items():
        logits = fn(texts)
        flags = (biased_probability(torch.from_numpy(np.asarray(logits)), plain.config.temperature) >= 0.5).numpy()
        reference = flags if reference is None else reference
        f1 = closed_metrics(gold, flags.astype(int).tolist())["f1_macro"]
        alone, shared = fn(articles[0]), fn(articles[0] + articles[1] + articles[2])[:len(articles[0])]
        print(f"  {name:36s} {1 / min(cpu[name]):5.2f} articles/s per core  {base / min(cpu[name]):4.2f}x  "
              f"{flops / min(cpu[name]) / 1e9 / peak:4.0%} of the fp32 peak  macro-F1 {f1:.4f}  flipped {int((flags != reference).sum())}/{len(texts)}  "
              f"batch changes logits by up to {np.abs(alone - shared).max():.1e}")


if __name__ == "__main__":
    main()
