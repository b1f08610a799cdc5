"""int8 and bfloat16 for the shipped sentence model on this CPU: what each path costs in accuracy,
whether its answer depends on the batch, what it gains per core, and how near it comes to the peak
of the kernels it runs on.

    .venv/bin/python benchmarks/bench_sentence_int8.py [--articles 12]

Variants, each timed by CPU time on one core (``process_time``, best of 3 over real-length
articles, one article per call in batches of 16 sentences, no sentence cache) against the plain
fp32 PyTorch call; the paths ``from_pretrained`` loads (:mod:`vilbias.models.sentence_runtime`)
and, made here, the options measured for the layers the int8 graph keeps in fp32:

- **plain fp32 torch**: ``inference_runtime="torch"`` (the exact path).
- **ONNX Runtime fp32**: ``inference_runtime="onnxruntime", inference_precision="float32"``.
- **static int8**: ``inference_precision="int8"``: ONNX Runtime's static quantisation of the
  attention projections and feed-forward inputs (``sentence_runtime.INT8_LAYERS``), activation
  ranges from the checkpoint's ``runtime_evidence.json``; the feed-forward output, the attention
  products and the heads stay fp32.
- **static int8, feed-forward output too** (made here): the same with every linear layer in int8.
- **dynamic int8** (made here): ``quantize_dynamic`` on the layers static int8 quantises
  (activations quantised per batch).
- **bf16 linear layers** (made here): every linear layer of the encoder in bfloat16 (AMX), the
  attention products, GELU and layer norms fp32.
- **bfloat16**: ``inference_precision="bfloat16"``: the encoder's weights in bfloat16 and its
  passes under autocast (matrix products, attention and activations in bfloat16).

For each: macro-F1 and sentences flagged otherwise than fp32 flags them on the held-out test split
(the shipped card's, 308 BABE SG2 sentences); the largest change of a sentence's logits when it is
scored alone rather than among other articles' sentences (0: the answer does not depend on the
batch); and the share of the peak, by CPU time on one core, of the kernel that runs most of its
FLOPs (``bench_sentence_speed.kernel_peaks``: the library kernels measured on a 2048 x 2048
product, so the share is true whatever the CPU's vector width). Printed first: the CPU, its flags,
and the path ``auto`` (the shipped setting) chooses here, with its reason. Reads ``../shared/data``
(a benchmark, not product code).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_sentence_speed as speed  # noqa: E402  (the articles, the test split, FLOPs and the peaks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--articles", type=int, default=12)
    parser.add_argument("--smoke", action="store_true", help="A tiny run of every step, in seconds, for the test suite (tests/test_benchmarks.py); its figures mean nothing.")
    args = parser.parse_args()
    if args.smoke:
        args.articles, speed.PEAK_N, speed.PEAK_SECONDS = 3, 256, 0.01  # the batch check joins three
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import onnx
    import onnxruntime as ort
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from torch import nn
    from transformers import AutoModel

    from vilbias.metrics.scores import closed_metrics
    from vilbias.models.catalogue import shipped_sentence_model
    from vilbias.models.predictors import item_sentences
    from vilbias.models.sentence_runtime import (
        EVIDENCE_FILE,
        INT8_LAYERS,
        Int8Scales,
        calibration_sentences,
        describe_cpu,
        onnx_graph,
        quantize_static,
        read_evidence,
        weight_scales,
    )
    from vilbias.task import Item

    torch.set_num_threads(1)
    folder = shipped_sentence_model()
    chosen = AutoModel.from_pretrained(folder)  # the shipped setting, auto
    print(f"CPU: {describe_cpu()}")
    print(f"auto chooses: {chosen.runtime_reason}")
    articles = [item_sentences(Item("", a["headline"], a["text"], -1, None))[:2 if args.smoke else 120] for a in speed.real_articles(args.articles, pages=1 if args.smoke else None)]
    test = speed.babe_test_split()[:4 if args.smoke else None]

    def load(runtime: str, precision: str):
        model = AutoModel.from_pretrained(folder, inference_runtime=runtime, inference_precision=precision)
        model._cache = None  # every sentence through the encoder
        return model

    plain = load("torch", "float32")
    onnx_fp32 = load("onnxruntime", "float32")
    static = load("onnxruntime", "int8")
    bf16 = load("torch", "bfloat16")

    # the options made here: ONNX Runtime sessions put in a float32 ONNX Runtime model's place, and bf16 linear layers
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads, options.log_severity_level = 1, 1, 3
    graph = onnx_graph(plain)  # the float32 graph loading onnx_fp32 made (the same weights), from the ONNX cache
    graph = graph.read_bytes() if isinstance(graph, Path) else graph
    proto = onnx.load_from_string(graph)
    matmuls = [n.name for n in proto.graph.node if n.op_type in ("MatMul", "Gemm")]
    every_linear = re.compile(INT8_LAYERS.pattern.replace("|intermediate/dense)", "|intermediate/dense|output/dense)"))
    calibration = calibration_sentences(folder)
    calibration = calibration[:4] if args.smoke and calibration else calibration  # smoke: calibrated on a few
    all_int8 = quantize_static(graph, plain, Int8Scales(sentences=lambda: calibration), every_linear)[0]
    with tempfile.TemporaryDirectory(prefix="bench-int8-") as tmp:
        (Path(tmp) / "fp32.onnx").write_bytes(graph)
        int8_nodes = [n for n in matmuls if INT8_LAYERS.fullmatch(n)]
        quantize_dynamic(Path(tmp) / "fp32.onnx", Path(tmp) / "dynamic.onnx", weight_type=QuantType.QInt8, per_channel=True,
                         nodes_to_exclude=[n for n in matmuls if n not in int8_nodes],
                         extra_options={"DefaultTensorType": 1, "TensorQuantOverrides": weight_scales(proto, int8_nodes)})
        dynamic_graph = (Path(tmp) / "dynamic.onnx").read_bytes()

    def with_session(graph_bytes: bytes):
        model = load("onnxruntime", "float32")
        model.runtime.session = ort.InferenceSession(graph_bytes, options, providers=["CPUExecutionProvider"])
        return model

    class BF16Linear(nn.Module):
        def __init__(self, linear: nn.Linear):
            super().__init__()
            self.weight = nn.Parameter(linear.weight.detach().bfloat16(), requires_grad=False)
            self.bias = nn.Parameter(linear.bias.detach().bfloat16(), requires_grad=False)

        def forward(self, x):
            return nn.functional.linear(x.bfloat16(), self.weight, self.bias).float()

    bf16_linears = load("torch", "float32")
    for module in list(bf16_linears.bert.encoder.modules()):
        for name, child in list(module.named_children()):
            if isinstance(child, nn.Linear):
                setattr(module, name, BF16Linear(child))

    variants = {  # name -> (model, the kernel that runs most of its FLOPs)
        "plain fp32 torch": (plain, "fp32 (PyTorch)"),
        "ONNX Runtime fp32": (onnx_fp32, "fp32 (ONNX Runtime)"),
        "static int8 (FFN output fp32)": (static, "int8 (ONNX Runtime)"),
        "static int8, FFN output int8 too": (with_session(all_int8), "int8 (ONNX Runtime)"),
        "dynamic int8 (FFN output fp32)": (with_session(dynamic_graph), "int8 (ONNX Runtime)"),
        "bf16 linear layers (rest fp32)": (bf16_linears, "bf16 (PyTorch)"),
        "bfloat16 (autocast)": (bf16, "bf16 (PyTorch)"),
    }
    cpu = {name: [] for name in variants}
    for model, _ in variants.values():
        model.sentence_logits(articles[0])
    for _ in range(1 if args.smoke else 3):  # alternated, so that other load on the machine weighs on each alike
        for name, (model, _) in variants.items():
            start = time.process_time()
            for article in articles:
                model.sentence_logits(article)
            cpu[name].append((time.process_time() - start) / len(articles))
    peaks = speed.kernel_peaks()
    flops = speed.encoder_flops(plain, articles)
    base = min(cpu["plain fp32 torch"])
    print(f"{len(articles)} articles, {flops / 1e9:.1f} GFLOP each; one core's measured peak: "
          + ", ".join(f"{k} {v:.0f}" for k, v in peaks.items()) + " G(FL)OP/s; load " + speed.load_average())
    texts, gold = [r["text"] for r in test], [r["label"] for r in test]
    reference = None
    for name, (model, kernel) in variants.items():
        probs = model.biased_probability(model.sentence_logits(texts)[0])
        flags = (probs >= 0.5).numpy()
        reference = flags if reference is None else reference
        f1 = closed_metrics(gold, flags.astype(int).tolist())["f1_macro"]
        alone = model.sentence_logits(articles[0])[0]
        shared = model.sentence_logits(articles[0] + articles[1] + articles[2])[0][:len(articles[0])]
        print(f"  {name:34s} {1 / min(cpu[name]):5.2f} articles/s per core  {base / min(cpu[name]):4.2f}x  "
              f"{flops / min(cpu[name]) / 1e9 / peaks[kernel]:4.0%} of the {kernel} peak  macro-F1 {f1:.4f}  "
              f"flipped {int((flags != reference).sum())}/{len(texts)}  batch changes logits by up to {float((alone - shared).abs().max()):.1e}")
    best_fp32 = max(peaks["fp32 (PyTorch)"], peaks["fp32 (ONNX Runtime)"])
    print(f"=> at these FLOPs no fp32 path can exceed {best_fp32 / (flops / base / 1e9):.2f}x the plain call per core; "
          f"bf16 {peaks['bf16 (PyTorch)'] / (flops / base / 1e9):.1f}x, int8 {peaks['int8 (ONNX Runtime)'] / (flops / base / 1e9):.1f}x "
          "(the kernels' peaks; the layer norms, softmax and GELU between them are not in it)")
    evidence = read_evidence(folder)
    if evidence:
        paths = ", ".join(f"{k} macro-F1 {v['macro_f1']:.4f} flipped {v['flipped']}" for k, v in evidence["paths"].items())
        print(f"the checkpoint's {EVIDENCE_FILE} ({evidence['measured_on']['cpu']}): float32 {evidence['reference']['macro_f1']:.4f}; {paths}")


if __name__ == "__main__":
    main()
