"""How a loaded sentence model runs: its ONNX Runtime graph (exported once and kept in the Hugging
Face cache, float32 or static int8) and the cache of the sentences it has read.

:class:`vilbias.models.sentence_bias.SentenceBiasModel` uses these when ``from_pretrained``
prepares it (``inference_runtime``, ``inference_precision`` in its config); nothing here imports
that module (the model is passed in: ``model`` below is always a loaded ``SentenceBiasModel``)::

    from vilbias.models.sentence_runtime import onnx_graph
    onnx_graph(model)   # Path to $HF_HOME/vilbias/onnx/<digest>.onnx (exported on first use)
"""

from __future__ import annotations

import logging
import re
import threading
import warnings
from collections import OrderedDict
from pathlib import Path

import torch
from torch import nn

logger = logging.getLogger(__name__)


class SentenceCache:
    """The scores of the last ``maxsize`` distinct sentences a loaded model read (least recently
    used out first), so a sentence read again (an article sent twice, a site's recurring lines)
    costs no pass. Thread-safe. A model loaded by ``from_pretrained`` has one; it holds what
    :meth:`SentenceBiasModel.sentence_logits` returns for the sentence (its logits, token offsets
    and word probabilities), so a hit gives the output of the pass that first scored it."""

    def __init__(self, maxsize: int = 4096):
        self.maxsize = maxsize
        self._items: OrderedDict[str, tuple] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, text: str) -> tuple | None:
        with self._lock:
            hit = self._items.get(text)
            if hit is None:
                self.misses += 1
                return None
            self._items.move_to_end(text)
            self.hits += 1
            return hit

    def put(self, text: str, logits: torch.Tensor, words: tuple) -> None:
        with self._lock:
            self._items[text] = (logits, words)
            self._items.move_to_end(text)
            while len(self._items) > self.maxsize:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)


class _Logits(nn.Module):
    """The model's inference pass as the ONNX exporter wants it: tensors in, a tuple out."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        out = self.model(attention_mask=attention_mask, input_ids=input_ids)
        return out["logits"], out["word_logits"]


CALIBRATION_FILE = "int8_calibration.json"
"""Training sentences saved with a checkpoint (``{"sentences": [...], ...}``) that fix the activation
scales of its int8 graph on ONNX Runtime (``inference_precision: int8``)."""


def calibration_sentences(source, revision: str | None = None) -> list[str] | None:
    """The sentences of ``source``'s :data:`CALIBRATION_FILE` (a folder or a Hub repo), or None."""
    import json

    from transformers.utils import cached_file

    if source is None:
        return None
    path = cached_file(str(source), CALIBRATION_FILE, revision=revision, _raise_exceptions_for_missing_entries=False,
                       _raise_exceptions_for_connection_errors=False)
    return json.loads(Path(path).read_text(encoding="utf-8"))["sentences"] if path else None


INT8_LAYERS_PATTERN = r".*/(attention/self/(query|key|value)|attention/output/dense|intermediate/dense)/MatMul"


def onnx_session(model: nn.Module, calibration: list[str] | None = None):
    """An ONNX Runtime session of ``model``'s float32 inference pass (LoRA folded in, every member
    and both heads) with dynamic batch and length; None, with a warning, when onnxruntime or onnx
    is not installed (the torch path then runs: the same outputs).

    ONNX Runtime runs this small encoder's passes with less per-operator overhead than eager
    PyTorch, one core per pass; the model runs as many passes at once as torch had threads at load
    time (the Space sets them before loading). The exported graph is kept in the Hugging Face
    cache folder (:func:`onnx_graph`), so a model loads without exporting it again."""
    import importlib.util

    if importlib.util.find_spec("onnxruntime") is None or importlib.util.find_spec("onnx") is None:
        logger.warning("inference_runtime onnxruntime: onnxruntime or onnx is not installed, so the model runs on "
                       "PyTorch (the same outputs, slower); pip install 'vilbias[train]' to get them")
        return None
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1  # one core per pass: passes run side by side (SentenceBiasModel._workers)
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # its graph notes are not the user's business
    graph = onnx_graph(model, calibration)
    return onnxruntime.InferenceSession(str(graph) if isinstance(graph, Path) else graph, options, providers=["CPUExecutionProvider"])


GRAPH_RECIPE = ("export: torch.onnx TorchScript, opset 17; int8: static QOperator, MinMax, per channel, "
                "length-sorted calibration batches of 16, layers " + INT8_LAYERS_PATTERN)
"""How a graph is made, part of its cache key: change it with the code, and graphs kept from before are not read."""


def onnx_graph(model: nn.Module, calibration: list[str] | None = None) -> Path | bytes:
    """``model``'s inference pass as an ONNX graph — float32, or with ``calibration`` sentences its
    static int8 form (:func:`_quantize_static`): the file in ``$HF_HOME/vilbias/onnx/<digest>.onnx``
    when one was made before for the same weights, config, calibration and library versions (the
    digest covers all of them), else made now and stored there (atomically); the bytes themselves
    when the cache folder cannot be written."""
    import hashlib
    import os
    import tempfile

    import huggingface_hub
    import onnx

    digest = hashlib.blake2b(digest_size=16)
    import onnxruntime

    digest.update(f"{GRAPH_RECIPE}|{model.config.to_json_string()}|torch {torch.__version__}|onnx {onnx.__version__}|"
                  f"onnxruntime {onnxruntime.__version__}|{calibration!r}".encode())
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().contiguous().view(-1).view(torch.uint8).numpy().tobytes())
    path = Path(huggingface_hub.constants.HF_HOME) / "vilbias" / "onnx" / f"{digest.hexdigest()}.onnx"
    if path.is_file():
        return path
    graph = _export_onnx(model)
    if calibration:
        graph = _quantize_static(graph, model, calibration)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".part", delete=False) as f:
            f.write(graph)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(f.name, 0o666 & ~umask)  # as the Hub cache's own files
        os.replace(f.name, path)
    except OSError as e:  # a read-only cache: the graph is used from memory
        logger.debug("could not keep the ONNX graph in %s: %s", path.parent, e)
        return graph
    return path


INT8_LAYERS = re.compile(INT8_LAYERS_PATTERN)
"""The matrix products the int8 graph runs in int8: each layer's attention projections and the
feed-forward input. The feed-forward output (its input carries the GELU's outliers), the attention
scores and the heads stay float32: quantised too, they cost macro-F1 (benchmarks/bench_sentence_int8.py)."""


def _quantize_static(graph: bytes, model: nn.Module, sentences: list[str]) -> bytes:
    """``graph`` with :data:`INT8_LAYERS` in int8 (ONNX Runtime's static quantisation: weights per
    channel, activation scales fixed by MinMax calibration on ``sentences``), so a sentence gets the
    same answer whatever shares its batch, unlike dynamic quantisation's per-batch scales."""
    import tempfile

    import numpy as np
    import onnx
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    nodes = [n.name for n in onnx.load_from_string(graph).graph.node if n.op_type in ("MatMul", "Gemm")]
    keep = [n for n in nodes if not INT8_LAYERS.fullmatch(n)]
    if len(keep) == len(nodes):
        raise ValueError("the exported graph has none of the layers int8 quantises (INT8_LAYERS): load with inference_precision='float32'")
    ordered = sorted(sentences, key=len)  # length-sorted batches, each padded to its longest

    class Sentences(CalibrationDataReader):
        def __init__(self):
            batches = (model.tokenizer(ordered[i:i + 16], truncation=True, max_length=model.config.max_length, padding=True,
                                       return_tensors="np") for i in range(0, len(ordered), 16))
            self.batches = ({k: b[k].astype(np.int64) for k in ("input_ids", "attention_mask")} for b in batches)

        def get_next(self):
            return next(self.batches, None)

    with tempfile.TemporaryDirectory(prefix="vilbias-int8-") as tmp:
        source, target = Path(tmp) / "float32.onnx", Path(tmp) / "int8.onnx"
        source.write_bytes(graph)
        quantize_static(source, target, Sentences(), quant_format=QuantFormat.QOperator, per_channel=True,
                        weight_type=QuantType.QInt8, activation_type=QuantType.QUInt8, op_types_to_quantize=["MatMul"],
                        nodes_to_exclude=keep, extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
        return target.read_bytes()


def _export_onnx(model: nn.Module) -> bytes:
    import io

    sample = model.tokenizer(["A short sentence.", "A somewhat longer sentence than the first one."],
                             padding=True, return_tensors="pt")
    buffer = io.BytesIO()
    with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
        # torch 2.13 marks the TorchScript-based exporter deprecated in favour of the dynamo one,
        # which needs onnxscript (not a dependency of vilbias); this one exports the model whole
        # with onnx alone, and nothing of it is kept but the graph.
        warnings.simplefilter("ignore")
        torch.onnx.export(_Logits(model).eval(), (sample["input_ids"], sample["attention_mask"]), buffer,
                          input_names=["input_ids", "attention_mask"], output_names=["logits", "word_logits"],
                          dynamic_axes={"input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"},
                                        "logits": {0: "batch"}, "word_logits": {0: "batch", 1: "tokens"}},
                          dynamo=False, opset_version=17)
    return buffer.getvalue()
