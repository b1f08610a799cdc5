"""The sentence model's inference settings: the checkpoint's ``inference_precision`` and
``inference_runtime`` decide how ``from_pretrained`` prepares it (``auto``: the fastest path that
answers alike on this CPU, by the checkpoint's evidence), and keywords ask for any path."""

from __future__ import annotations

from pathlib import Path

import pytest

TEXTS = ["Radical activists rammed through a disastrous, reckless scheme.", "The council approved the budget on Tuesday."]


@pytest.fixture(scope="module")
def folder():
    from vilbias.models.catalogue import shipped_sentence_model

    return shipped_sentence_model()


def test_float32_keyword_is_the_exact_path_and_int8_quantizes_every_encoder_linear(folder, tmp_path):
    import torch
    from torch import nn
    from transformers import AutoModel

    from vilbias.models.sentence_bias import SentenceBiasModel

    exact = AutoModel.from_pretrained(folder, inference_precision="float32", inference_runtime="torch")
    assert exact.config.inference_precision == "float32"
    int8 = SentenceBiasModel.from_pretrained(folder, inference_precision="int8", inference_runtime="torch")
    quantized = torch.ao.nn.quantized.dynamic.Linear
    assert not any(isinstance(m, nn.Linear) for m in int8.bert.modules())
    assert sum(isinstance(m, quantized) for m in int8.bert.modules()) == sum(isinstance(m, nn.Linear) for m in exact.bert.modules())
    assert isinstance(int8.sentence_head[1], nn.Linear)  # the heads stay float32
    fast, slow = int8.sentence_logits(TEXTS)[0], exact.sentence_logits(TEXTS)[0]
    assert not torch.equal(fast, slow) and (fast - slow).abs().max() < 1.0
    assert fast.argmax(-1).tolist() == slow.argmax(-1).tolist() == [1, 0]
    # the setting is the checkpoint's: saved, it loads back quantized
    int8.config.save_pretrained(tmp_path)
    assert '"inference_precision": "int8"' in (tmp_path / "config.json").read_text()


def test_an_unknown_setting_is_one_line():
    from vilbias.models.configs import SentenceBiasConfig

    with pytest.raises(ValueError, match="inference_precision must be one of .*'float32', 'bfloat16', 'int8'.*not 'fp8'"):
        SentenceBiasConfig(inference_precision="fp8")
    with pytest.raises(ValueError, match="inference_runtime must be one of .*'auto', 'torch', 'onnxruntime'.*not 'tvm'"):
        SentenceBiasConfig(inference_runtime="tvm")


def test_onnxruntime_gives_the_exact_paths_outputs(folder):
    import torch
    from transformers import AutoModel

    from vilbias.models.sentence_bias import SentenceBiasModel

    fast = AutoModel.from_pretrained(folder, inference_runtime="onnxruntime", inference_precision="float32")
    exact = SentenceBiasModel.from_pretrained(folder, inference_runtime="torch", inference_precision="float32")
    assert fast.runtime.session is not None and exact.runtime.session is None
    assert fast.runtime_reason.startswith("float32 on ONNX Runtime: asked for")
    texts = TEXTS + ["Officials said the plan would cost $4 billion over ten years, according to the report."] * 3
    (a, words_a), (b, words_b) = fast.sentence_logits(texts), exact.sentence_logits(texts)
    assert torch.allclose(a, b, atol=1e-4) and a.argmax(-1).tolist() == b.argmax(-1).tolist()
    assert [w[0] for w in words_a] == [w[0] for w in words_b]
    assert max(abs(x - y) for u, v in zip(words_a, words_b, strict=True) for x, y in zip(u[1], v[1], strict=True)) < 1e-4
    # without onnxruntime the same checkpoint runs on torch, and says so
    import importlib.util

    original = importlib.util.find_spec
    try:
        importlib.util.find_spec = lambda name, *a: None if name == "onnxruntime" else original(name, *a)
        fallback = SentenceBiasModel.from_pretrained(folder, inference_runtime="onnxruntime", inference_precision="float32")
    finally:
        importlib.util.find_spec = original
    assert fallback.runtime.session is None and "onnxruntime is not installed" in fallback.runtime_reason
    exact._cache.clear()  # it holds TEXTS as scored in the batch above; scored alone, they match to the bit
    assert torch.equal(fallback.sentence_logits(TEXTS)[0], exact.sentence_logits(TEXTS)[0])


def test_passes_side_by_side_give_the_one_pass_outputs(folder):
    """On ONNX Runtime a model loaded with N torch threads runs its length-sorted slices on N
    single-core passes at once: the outputs are those of one pass after another."""
    import torch

    from vilbias.models.sentence_bias import SentenceBiasModel

    texts = [f"Sentence number {i} says{' very' * (i % 7)} little about the plan." for i in range(40)]
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        parallel = SentenceBiasModel.from_pretrained(folder, inference_runtime="onnxruntime", inference_precision="float32")
    finally:
        torch.set_num_threads(before)
    single = SentenceBiasModel.from_pretrained(folder, inference_runtime="torch", inference_precision="float32")
    assert parallel.passes_at_once == 2 and single.passes_at_once == 1 and single._workers is None
    (a, words_a), (b, words_b) = parallel.sentence_logits(texts), single.sentence_logits(texts)
    assert torch.allclose(a, b, atol=1e-4) and [w[0] for w in words_a] == [w[0] for w in words_b]


def test_a_sentence_read_again_comes_from_the_cache(folder):
    import torch

    from vilbias.models.sentence_bias import SentenceBiasModel
    from vilbias.models.sentence_runtime import SentenceCache

    model = SentenceBiasModel.from_pretrained(folder, inference_runtime="torch", inference_precision="float32")
    texts = TEXTS + [TEXTS[0]]  # a repeat within one call is scored once
    logits, words = model.sentence_logits(texts)
    assert torch.equal(logits[0], logits[2]) and words[0] == words[2]
    assert len(model._cache) == 2 and model._cache.hits == 0
    again, words_again = model.sentence_logits(list(reversed(texts)))
    assert model._cache.hits == 3 and torch.equal(again, logits.flip(0)) and words_again == list(reversed(words))
    model._cache.clear()  # scored anew, the same answer
    assert torch.equal(model.sentence_logits(texts)[0], logits)
    # A shorter window reads a long sentence in other windows: its score is computed, not the cached one
    long = " ".join(["The reckless plan, critics said, would ruin the town and everyone in it."] * 6)
    full = model.sentence_logits([long])[0]
    model.config.max_length = 24
    short, cached = model.sentence_logits([long])[0], model._cache
    model._cache = None  # the same pass without a cache
    assert torch.equal(short, model.sentence_logits([long])[0]) and not torch.equal(short, full)
    model._cache = cached
    model.train()  # its weights may change now: nothing cached is served
    assert len(model._cache) == 0
    model.eval()
    small = SentenceCache(maxsize=2)  # least recently used out first
    for text in ("a", "b", "c"):
        small.put(text, torch.zeros(2), ([], []))
    assert small.get("a") is None and small.get("c") is not None and len(small) == 2


def test_the_exported_graph_is_kept_and_reused(folder, monkeypatch):
    """The ONNX export (~2 s) happens once per weights, config and library versions: the graph is
    kept in $HF_HOME/vilbias/onnx and a later load reads it."""
    import huggingface_hub

    from vilbias.models import sentence_runtime
    from vilbias.models.sentence_bias import SentenceBiasModel

    first = SentenceBiasModel.from_pretrained(folder, inference_runtime="onnxruntime", inference_precision="float32")
    path = sentence_runtime.onnx_graph(first)
    assert path.parent == Path(huggingface_hub.constants.HF_HOME) / "vilbias" / "onnx" and path.stat().st_size > 1e6
    # another config: another graph (its key; the path a load of it would export to, not exported here: ~2 s)
    other = SentenceBiasModel.from_pretrained(folder, temperature=2.0, inference_runtime="torch", inference_precision="float32")
    assert sentence_runtime._graph_path(other, None, sentence_runtime.weights_digest(other)) != path

    def no_export(model):
        raise AssertionError("exported again")

    monkeypatch.setattr(sentence_runtime, "_export_onnx", no_export)
    again = SentenceBiasModel.from_pretrained(folder, inference_runtime="onnxruntime", inference_precision="float32")
    assert again.sentence_logits(TEXTS)[0].argmax(-1).tolist() == [1, 0]


def test_the_evidence_exports_once_and_its_graphs_serve_the_loads(folder, tmp_path, monkeypatch):
    """``runtime_evidence`` (what ``train sentence`` writes last) exports the float32 graph once
    and makes the int8 graph once, and keeps both where the loads of either path find them: a
    graph's cache key leaves out how the model is run (RUNTIME_FIELDS), and an int8 graph never
    shares a key with a float32 one."""
    import json
    import shutil

    import huggingface_hub

    from vilbias.models import sentence_runtime
    from vilbias.models.sentence_bias import SentenceBiasModel
    from vilbias.models.sentence_runtime import CALIBRATION_FILE, runtime_evidence

    monkeypatch.setattr(huggingface_hub.constants, "HF_HOME", str(tmp_path / "hf"))
    small = tmp_path / "model"
    shutil.copytree(folder, small)
    saved = json.loads((small / CALIBRATION_FILE).read_text(encoding="utf-8"))
    (small / CALIBRATION_FILE).write_text(json.dumps({**saved, "sentences": saved["sentences"][:16]}), encoding="utf-8")
    made = {"export": 0, "quantize": 0}
    export, quantize = sentence_runtime._export_onnx, sentence_runtime.quantize_static

    def counted(name, fn):
        def call(*args, **kwargs):
            made[name] += 1
            return fn(*args, **kwargs)
        return call

    monkeypatch.setattr(sentence_runtime, "_export_onnx", counted("export", export))
    monkeypatch.setattr(sentence_runtime, "quantize_static", counted("quantize", quantize))
    evidence = runtime_evidence(small, TEXTS, [1, 0])
    assert made == {"export": 1, "quantize": 1}
    assert set(evidence["paths"]) == {"onnxruntime/float32", "onnxruntime/int8", "torch/bfloat16"}
    for precision in ("float32", "int8"):
        model = SentenceBiasModel.from_pretrained(small, inference_runtime="onnxruntime", inference_precision=precision)
        assert model.runtime.choice.path == f"onnxruntime/{precision}"
    assert made == {"export": 1, "quantize": 1}
    assert len(list((tmp_path / "hf" / "vilbias" / "onnx").glob("*.onnx"))) == 2


def test_int8_on_onnxruntime_is_static_and_answers_alike_in_every_batch(folder, tmp_path, monkeypatch):
    """int8 on ONNX Runtime: the attention projections and feed-forward inputs in int8, their
    activation scales fixed by the ranges the checkpoint's evidence carries (else by its calibration
    sentences), so a sentence's logits do not depend on what shares its batch; without either, one line."""
    import json
    import shutil

    import torch

    from vilbias.models import sentence_runtime
    from vilbias.models.sentence_bias import SentenceBiasModel
    from vilbias.models.sentence_runtime import CALIBRATION_FILE, EVIDENCE_FILE

    small = tmp_path / "model"
    shutil.copytree(folder, small)
    (small / EVIDENCE_FILE).unlink()  # no saved ranges: calibrated on the checkpoint's sentences
    saved = json.loads((small / CALIBRATION_FILE).read_text(encoding="utf-8"))
    assert saved["split"] == "train" and len(saved["sentences"]) == 256
    saved["sentences"] = saved["sentences"][:16]  # enough to check the mechanism quickly
    (small / CALIBRATION_FILE).write_text(json.dumps(saved), encoding="utf-8")
    int8 = SentenceBiasModel.from_pretrained(small, inference_precision="int8")
    assert int8.runtime.choice.path == "onnxruntime/int8"
    exact = SentenceBiasModel.from_pretrained(small, inference_runtime="torch", inference_precision="float32")
    texts = TEXTS + [f"Officials said the plan would cost ${i} billion over ten years." for i in range(20)]
    alone = int8.sentence_logits(TEXTS)[0]
    int8._cache.clear()
    together = int8.sentence_logits(texts)[0]
    assert (alone - together[:2]).abs().max() < 1e-5  # the same answer in another batch
    reference = exact.sentence_logits(texts)[0]
    assert not torch.equal(together, reference) and (together - reference).abs().max() < 0.5
    assert together.argmax(-1).tolist()[:2] == [1, 0]
    (small / CALIBRATION_FILE).unlink()
    with pytest.raises(ValueError, match="int8 on onnxruntime needs the checkpoint's runtime_evidence.json or int8_calibration.json"):
        SentenceBiasModel.from_pretrained(small, inference_precision="int8")
    # the shipped checkpoint's evidence carries the ranges: its int8 graph is made without calibrating

    def no_calibration():
        raise AssertionError("calibrated")

    monkeypatch.setattr(sentence_runtime, "calibration_sentences", lambda *a, **k: no_calibration())
    shipped = SentenceBiasModel.from_pretrained(folder, inference_precision="int8")
    assert shipped.sentence_logits(TEXTS)[0].argmax(-1).tolist() == [1, 0]


def test_bfloat16_runs_on_torch_and_answers_alike(folder):
    import torch

    from vilbias.models.sentence_bias import SentenceBiasModel

    bf16 = SentenceBiasModel.from_pretrained(folder, inference_precision="bfloat16")
    exact = SentenceBiasModel.from_pretrained(folder, inference_runtime="torch", inference_precision="float32")
    assert bf16.runtime.choice.path == "torch/bfloat16" and next(bf16.bert.parameters()).dtype == torch.bfloat16
    fast, slow = bf16.sentence_logits(TEXTS)[0], exact.sentence_logits(TEXTS)[0]
    assert fast.dtype == torch.float32 and (fast - slow).abs().max() < 0.2
    assert fast.argmax(-1).tolist() == slow.argmax(-1).tolist() == [1, 0]
    with pytest.raises(ValueError, match="bfloat16 runs on PyTorch"):
        SentenceBiasModel.from_pretrained(folder, inference_precision="bfloat16", inference_runtime="onnxruntime")


def test_bfloat16_passes_take_longer_batches_and_a_predictor_answers_as_in_short_ones(folder):
    """AMX gains from taller matrices: a bfloat16 model prefers passes of 64 sentences, the others
    16; a predictor left to choose uses the model's size, and the answers stay alike."""
    from vilbias.models.predictors import SentencePredictor
    from vilbias.models.sentence_bias import SentenceBiasModel
    from vilbias.models.sentence_runtime import BFLOAT16_BATCH
    from vilbias.task import Item

    bf16 = SentenceBiasModel.from_pretrained(folder, inference_precision="bfloat16")
    exact = SentenceBiasModel.from_pretrained(folder, inference_runtime="torch", inference_precision="float32")
    assert (bf16.preferred_batch_size, exact.preferred_batch_size) == (BFLOAT16_BATCH, 16) == (64, 16)
    sizes = []
    bf16._slice_size = lambda n, size, real=bf16._slice_size: sizes.append(size) or real(n, size)
    item = Item("", "Council approves budget", " ".join(TEXTS * 20), -1, None)
    predictor = SentencePredictor(bf16)
    long = predictor.predict(item)
    bf16._cache.clear()  # read anew, not from the cache
    short = predictor.predict_batch([item], batch_size=4)[0]
    assert sizes == [64, 4]
    assert long.label == short.label and abs(long.probabilities["biased"] - short.probabilities["biased"]) < 0.02


def test_a_bfloat16_call_of_few_sentences_takes_shorter_passes():
    """Passes of about a call's sentences / 12 in bfloat16 (16 at least, the batch size at most): the
    Space's passes over a few articles pad less; 30 articles' sentences keep passes of 64."""
    from vilbias.models.sentence_runtime import BFLOAT16_BATCH, Runtime, RuntimeChoice

    bf16, exact = Runtime(RuntimeChoice("torch", "bfloat16", "")), Runtime(RuntimeChoice("torch", "float32", ""))
    assert [bf16.slice_size(n, BFLOAT16_BATCH) for n in (5, 26, 200, 400, 780, 5000)] == [16, 16, 17, 34, 64, 64]
    assert bf16.slice_size(200, 8) == 8  # never more than the caller's batches
    assert [exact.slice_size(n, 16) for n in (5, 200, 5000)] == [16, 16, 16]  # other paths: the batch size


EVIDENCE = {"split": "test", "rows": 300, "reference": {"path": "torch/float32", "macro_f1": 0.80},
            "paths": {"torch/bfloat16": {"macro_f1": 0.80, "flipped": 0}, "onnxruntime/int8": {"macro_f1": 0.798, "flipped": 3}}}
AMX = frozenset({"avx2", "avx512f", "avx512_vnni", "amx_int8", "amx_bf16"})
VNNI = frozenset({"avx2", "avx512f", "avx512_vnni"})


def test_auto_chooses_the_fastest_path_that_answers_alike_on_this_cpu():
    from vilbias.models.sentence_runtime import choose_runtime

    chosen = choose_runtime("auto", "auto", AMX, EVIDENCE)
    assert chosen.path == "torch/bfloat16" and "amx_bf16" in chosen.reason and "0 flagged otherwise" in chosen.reason
    assert choose_runtime("auto", "auto", VNNI, EVIDENCE).path == "onnxruntime/int8"
    assert choose_runtime("torch", "auto", AMX, EVIDENCE).path == "torch/float32"  # a runtime asked for: its exact path
    assert choose_runtime("onnxruntime", "auto", AMX, EVIDENCE).path == "onnxruntime/float32"
    assert choose_runtime("auto", "auto", frozenset({"avx2"}), EVIDENCE).path == "onnxruntime/float32"
    assert choose_runtime("auto", "auto", VNNI, EVIDENCE, onnxruntime_installed=False).path == "torch/float32"
    # int8 that flips more than 1 % of the sentences, or drops macro-F1 by more than 0.005, is not chosen
    worse = {**EVIDENCE, "paths": {"onnxruntime/int8": {"macro_f1": 0.80, "flipped": 4}}}
    refused = choose_runtime("auto", "auto", VNNI, worse)
    assert refused.path == "onnxruntime/float32" and "int8 does not answer as float32 does" in refused.reason
    assert choose_runtime("auto", "auto", VNNI, {**EVIDENCE, "paths": {"onnxruntime/int8": {"macro_f1": 0.794, "flipped": 0}}}).precision == "float32"
    assert "no runtime_evidence.json" in choose_runtime("auto", "auto", AMX, None).reason
    # asked for, a path runs whatever the CPU or the evidence
    assert choose_runtime("torch", "float32", AMX, EVIDENCE).reason.startswith("float32 on PyTorch: asked for")
    assert choose_runtime("auto", "int8", frozenset(), None).path == "onnxruntime/int8"
    assert choose_runtime("auto", "bfloat16", VNNI, None).path == "torch/bfloat16"


def test_the_cpu_flags_are_those_onednn_may_use():
    """``ONEDNN_MAX_CPU_ISA`` keeps PyTorch's bfloat16 products off AMX (or AVX-512): auto then
    does not choose a bfloat16 path that would run emulated."""
    from vilbias.models.sentence_runtime import choose_runtime, isa_limited

    assert isa_limited(AMX, None) == isa_limited(AMX, "ALL") == isa_limited(AMX, "AVX512_CORE_AMX") == AMX
    assert not any(f.startswith("amx") for f in isa_limited(AMX, "avx512_core_bf16"))
    assert not any(f.startswith(("amx", "avx512")) for f in isa_limited(AMX, "AVX2"))
    assert choose_runtime("auto", "auto", AMX, EVIDENCE).path == "torch/bfloat16"
    assert choose_runtime("auto", "auto", isa_limited(AMX, "AVX512_CORE_BF16"), EVIDENCE).path != "torch/bfloat16"
    assert choose_runtime("auto", "auto", isa_limited(AMX, "AVX2"), EVIDENCE).path == "onnxruntime/float32"


def test_the_shipped_model_says_what_runs_it_and_why(folder):
    from vilbias.models.sentence_bias import SentenceBiasModel
    from vilbias.models.sentence_runtime import choose_runtime, cpu_flags, read_evidence

    model = SentenceBiasModel.from_pretrained(folder)
    expected = choose_runtime("auto", "auto", cpu_flags(), read_evidence(folder))
    assert model.runtime.choice == expected and model.runtime_reason == expected.reason
    evidence = read_evidence(folder)  # computed by runtime_evidence on the test split the card reports
    assert evidence["rows"] == 308 and evidence["reference"]["macro_f1"] > 0.79
    assert {"torch/bfloat16", "onnxruntime/int8"} <= set(evidence["paths"])


def test_weight_scales_are_onnx_runtime_s_own_so_its_quantiser_writes_the_same_graph(tmp_path):
    """``weight_scales`` hands ONNX Runtime's quantiser the per-channel scales it would work out one
    channel at a time: static (from calibration) and dynamic quantisation write the same bytes with
    them as without, on weights with an all-zero channel, an all-negative one and a tiny one."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_dynamic,
        quantize_static,
    )

    from vilbias.models.sentence_runtime import weight_scales

    rng = np.random.default_rng(0)
    first = rng.normal(0, 0.05, (16, 24)).astype(np.float32)
    first[:, 0], first[:, 1], first[:, 2] = 0.0, -np.abs(first[:, 1]), 1e-39  # zero, negative, below float32's normal range
    second = rng.normal(0, 1.0, (24, 8)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["h"], name="first"), helper.make_node("Relu", ["h"], ["r"], name="relu"),
         helper.make_node("MatMul", ["r", "w2"], ["y"], name="second")],
        "two", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])],
        [numpy_helper.from_array(first, "w1"), numpy_helper.from_array(second, "w2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    source = tmp_path / "float32.onnx"
    onnx.save(model, source)
    scales = weight_scales(model.SerializeToString(), ["first", "second"])
    assert sorted(scales) == ["w1", "w2"] and len(scales["w1"]) == 24 and scales["w1"][0]["axis"] == 1
    assert scales["w1"][0]["scale"] == 1.0  # an all-zero channel: ONNX Runtime's scale of 1

    class Batches(CalibrationDataReader):
        def __init__(self):
            self.batches = iter([{"x": rng_batches.normal(size=(4, 16)).astype(np.float32)} for _ in range(3)])

        def get_next(self):
            return next(self.batches, None)

    doubled = {**scales, "w2": [{**c, "scale": c["scale"] * 2} for c in scales["w2"]]}  # shows the quantiser reads them
    written = {}
    for name, extra in (("own", {}), ("given", {"TensorQuantOverrides": scales}), ("doubled", {"TensorQuantOverrides": doubled})):
        rng_batches = np.random.default_rng(1)
        quantize_static(source, tmp_path / f"static-{name}.onnx", Batches(), quant_format=QuantFormat.QOperator, per_channel=True,
                        weight_type=QuantType.QInt8, activation_type=QuantType.QUInt8, op_types_to_quantize=["MatMul"],
                        extra_options={"DefaultTensorType": TensorProto.FLOAT, **extra})
        quantize_dynamic(source, tmp_path / f"dynamic-{name}.onnx", weight_type=QuantType.QInt8, per_channel=True,
                         extra_options={"DefaultTensorType": TensorProto.FLOAT, **extra})
        written[name] = [(tmp_path / f"{kind}-{name}.onnx").read_bytes() for kind in ("static", "dynamic")]
    assert written["given"] == written["own"]
    assert all(a != b for a, b in zip(written["doubled"], written["own"], strict=True))
    assert b"QLinearMatMul" in written["own"][0] and b"MatMulInteger" in written["own"][1]
