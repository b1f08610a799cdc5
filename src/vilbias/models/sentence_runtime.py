"""How a loaded sentence model runs: the path chosen for the CPU it finds (:func:`choose_runtime`),
its ONNX Runtime graph (exported once and kept in the Hugging Face cache, float32 or static int8),
its bfloat16 form, and the cache of the sentences it has read.

:class:`vilbias.models.sentence_bias.SentenceBiasModel` uses these when ``from_pretrained``
prepares it (``inference_runtime`` and ``inference_precision`` in its config; ``auto``, the shipped
setting, lets :func:`choose_runtime` pick); nothing here imports that module (the model is passed
in: ``model`` below is always a loaded ``SentenceBiasModel``)::

    from vilbias.models.sentence_runtime import onnx_graph, runtime_evidence
    model.runtime_reason  # what runs and why: "bfloat16 on PyTorch: this CPU has AMX (amx_bf16) ..."
    onnx_graph(model)     # Path to $HF_HOME/vilbias/onnx/<digest>.onnx (exported on first use)
    runtime_evidence("out/model", texts, labels)  # what train sentence writes: runtime_evidence.json

A path faster than float32 runs only where the CPU has the instructions that make it fast and
the checkpoint carries evidence (:data:`EVIDENCE_FILE`) that it answers as float32 does on
held-out sentences: test-split macro-F1 within :data:`ALIKE_MACRO_F1` and at most
:data:`ALIKE_FLIPPED` of the sentences flagged differently.

Why this module is long: it is everything about how one loaded sentence model runs (its graphs,
their caches, the precision chosen for the CPU with its evidence, the passes side by side);
the model itself (:mod:`vilbias.models.sentence_bias`) stays what it computes.
"""

from __future__ import annotations

import ctypes
import json
import logging
import os
import re
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch import nn

if TYPE_CHECKING:
    import onnx

logger = logging.getLogger(__name__)


class SentenceCache:
    """The scores of the last ``maxsize`` distinct sentences a loaded model read (least recently
    used out first), so a sentence read again (an article sent twice, a site's recurring lines)
    costs no pass. Thread-safe. A model loaded by ``from_pretrained`` has one; it holds what
    :meth:`SentenceBiasModel.sentence_logits` returns for the sentence (its logits, token offsets
    and word probabilities), so a hit gives the output of the pass that first scored it. The model
    keys a sentence with what else decides its pass (``config.max_length``, the window it is read
    in), and empties it when it is put in training mode (its weights are about to change)."""

    def __init__(self, maxsize: int = 4096):
        self.maxsize = maxsize
        self._items: OrderedDict[Hashable, tuple] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key: Hashable) -> tuple | None:
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return hit

    def put(self, key: Hashable, logits: torch.Tensor, words: tuple) -> None:
        with self._lock:
            self._items[key] = (logits, words)
            self._items.move_to_end(key)
            while len(self._items) > self.maxsize:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)


# -- which path: the CPU, the checkpoint's evidence, the choice ---------------------------------

EVIDENCE_FILE = "runtime_evidence.json"
"""Saved with a checkpoint by :func:`runtime_evidence`: how each faster path answered its held-out
sentences next to the float32 torch call, and the int8 graph's activation ranges."""
ALIKE_MACRO_F1 = 0.005
"""A faster path answers alike when its macro-F1 on the held-out sentences is within this of float32's ..."""
ALIKE_FLIPPED = 0.01
"""... and at most this share of the sentences are flagged otherwise than float32 flags them."""

FASTER_PATHS = (
    ("torch", "bfloat16", ("amx_bf16",)),
    ("onnxruntime", "int8", ("amx_int8", "avx512_vnni", "avx_vnni")),
)
"""The paths faster than float32, fastest first, each with the CPU instructions that make it fast
(any one of them). With AMX, bfloat16 matrix products on PyTorch (oneDNN) beat ONNX Runtime's int8
on this model: its int8 graph keeps the feed-forward output in float32, which in int8 changes
answers; with VNNI alone bfloat16 would be emulated and int8 runs its products 4 to a
float32's one. Without either, float32 (``benchmarks/bench_sentence_int8.py``)."""


def cpu_flags() -> frozenset[str]:
    """The instruction-set flags of this machine's CPU, as Linux lists them in ``/proc/cpuinfo``
    (``avx512_vnni``, ``amx_bf16``, …), less those that ``ONEDNN_MAX_CPU_ISA`` keeps PyTorch's
    matrix kernels from using (:func:`isa_limited`); empty where that file is not (then only
    float32 is chosen)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return isa_limited(frozenset(line.partition(":")[2].split()), os.environ.get("ONEDNN_MAX_CPU_ISA"))
    except OSError:
        pass
    return frozenset()


def isa_limited(flags: frozenset[str], max_isa: str | None) -> frozenset[str]:
    """``flags`` without what oneDNN may not use under ``ONEDNN_MAX_CPU_ISA=max_isa`` (the
    library behind PyTorch's bfloat16 matrix products): no ``amx_*`` unless the limit names AMX,
    no ``avx512*`` under an AVX2-or-older limit. A bfloat16 path chosen for AMX that oneDNN may not
    use would run emulated, slower than float32."""
    limit = (max_isa or "").strip().upper()
    if not limit or limit in ("ALL", "DEFAULT"):
        return flags
    if "AMX" not in limit:
        flags = frozenset(f for f in flags if not f.startswith("amx"))
    if not limit.startswith(("AVX512", "AVX10")):
        flags = frozenset(f for f in flags if not f.startswith("avx512"))
    return flags


@dataclass(frozen=True)
class RuntimeChoice:
    """What runs a loaded model's passes, and why (what ``model.runtime_reason`` says)."""

    runtime: str
    """``torch`` or ``onnxruntime``."""
    precision: str
    """``float32``, ``bfloat16`` or ``int8``."""
    reason: str

    @property
    def path(self) -> str:
        return f"{self.runtime}/{self.precision}"


RUNTIME_NAMES = {"torch": "PyTorch", "onnxruntime": "ONNX Runtime"}


def alike(evidence: dict, path: str) -> tuple[bool, str]:
    """Whether ``evidence`` (:data:`EVIDENCE_FILE`'s content) shows ``path`` (``onnxruntime/int8``)
    answering as float32 does, and the figures that say so, in words."""
    got, reference = evidence["paths"][path], evidence["reference"]
    figures = (f"on its {evidence['rows']} {evidence['split']} sentences macro-F1 {got['macro_f1']:.4f} vs float32's "
               f"{reference['macro_f1']:.4f}, {got['flipped']} flagged otherwise")
    ok = reference["macro_f1"] - got["macro_f1"] <= ALIKE_MACRO_F1 and got["flipped"] <= ALIKE_FLIPPED * evidence["rows"]
    return ok, figures


def choose_runtime(runtime: str, precision: str, flags: frozenset[str], evidence: dict | None,
                   onnxruntime_installed: bool = True) -> RuntimeChoice:
    """The path a model runs on this CPU: what the config asks (``runtime``, ``precision``), with
    ``auto`` resolved to the fastest path that answers as float32 does here (:data:`FASTER_PATHS`).
    A runtime asked for with the precision left ``auto`` runs float32, its exact path
    (``inference_runtime="torch"`` is the plain PyTorch call, as it was before ``auto``).

    Args:
        runtime: ``torch``, ``onnxruntime`` or ``auto``.
        precision: ``float32``, ``bfloat16``, ``int8`` or ``auto``.
        flags: the CPU's instruction-set flags (:func:`cpu_flags`).
        evidence: the checkpoint's :data:`EVIDENCE_FILE`, or None.
        onnxruntime_installed: whether ``onnxruntime`` and ``onnx`` can be imported.
    """
    if precision == "bfloat16" and runtime == "onnxruntime":
        raise ValueError("inference_precision bfloat16 runs on PyTorch (ONNX Runtime has no bfloat16 kernels for CPUs): "
                         "use inference_runtime='torch' or 'auto'")
    missing = "" if onnxruntime_installed else " (onnxruntime is not installed, so PyTorch runs it)"
    asked = [name for name, value in (("inference_precision", precision), ("inference_runtime", runtime)) if value != "auto"]
    if precision == "auto" and runtime != "auto":
        precision = "float32"
    if precision != "auto":
        chosen = runtime if runtime != "auto" else ("torch" if precision == "bfloat16" else "onnxruntime")
        if chosen == "onnxruntime" and not onnxruntime_installed:
            chosen = "torch"
        return RuntimeChoice(chosen, precision, f"{precision} on {RUNTIME_NAMES[chosen]}: asked for ({', '.join(asked)}){missing}")
    fallback = "onnxruntime" if onnxruntime_installed else "torch"
    reasons, unproven = [], []
    for path_runtime, path_precision, instructions in FASTER_PATHS:
        if path_runtime == "onnxruntime" and not onnxruntime_installed:
            continue
        has = sorted(flags & set(instructions))
        if not has:
            reasons.append(f"this CPU has no {'/'.join(instructions)} for {path_precision}")
        elif not evidence or f"{path_runtime}/{path_precision}" not in evidence.get("paths", {}):
            unproven.append(f"{path_precision} ({', '.join(has)})")
        else:
            ok, figures = alike(evidence, f"{path_runtime}/{path_precision}")
            if ok:
                return RuntimeChoice(path_runtime, path_precision,
                                     f"{path_precision} on {RUNTIME_NAMES[path_runtime]}: this CPU has {', '.join(has)}, and "
                                     f"{path_precision} answers as float32 does ({figures})")
            reasons.append(f"{path_precision} does not answer as float32 does ({figures})")
    if unproven:
        reasons.append(f"this CPU could run {' and '.join(unproven)}, but the checkpoint has no {EVIDENCE_FILE} "
                       "showing the answers stay alike (vilbias train sentence writes it)")
    return RuntimeChoice(fallback, "float32", f"float32 on {RUNTIME_NAMES[fallback]}: {'; '.join(reasons) or 'asked for'}{missing}")


def read_evidence(source, revision: str | None = None) -> dict | None:
    """``source``'s :data:`EVIDENCE_FILE` (a folder or a Hub repo), or None."""
    return _checkpoint_json(source, EVIDENCE_FILE, revision)


def _checkpoint_json(source, filename: str, revision: str | None) -> dict | None:
    from transformers.utils import cached_file

    if source is None:
        return None
    path = cached_file(str(source), filename, revision=revision, _raise_exceptions_for_missing_entries=False,
                       _raise_exceptions_for_connection_errors=False)
    return json.loads(Path(path).read_text(encoding="utf-8")) if path else None


# -- a loaded model's runtime -------------------------------------------------------------------


BFLOAT16_BATCH = 64
"""Sentences per bfloat16 pass: AMX tiles gain from taller matrices, and length-sorted batches of 64
keep the padding small. On the shipped model (Xeon with AMX, one core, CPU time, 30 real articles)
batches of 64 cost 73 ms an article against 90 ms in batches of 16 (32 and 128: no better than 64),
with the same answers on the 308 test sentences (0 flipped against float32, either size).
A call with fewer sentences takes shorter passes (:data:`BFLOAT16_SLICES`)."""
BFLOAT16_SLICES = 12
"""A bfloat16 call takes passes of about its sentences / this many, from 16 up to its batch size:
the sentences are sorted by length, and a pass is padded to its longest, so a pass that spans
fewer of them wastes less. 30 articles' ~780 sentences keep passes of 64; the Space's passes of
up to 8 articles (~200 sentences) take 17 instead of 64: one core, CPU time, 48 real articles in
batches of 8, 71.6 ms an article in passes of 64, 62-63 in passes of 16 and 32 (padding 1.51x
the real tokens in passes of 64, 1.24x in passes of 16)."""
BFLOAT16_MIN_SLICE = 16


class Runtime:
    """How a loaded model runs its passes: the :class:`RuntimeChoice` made at load, and its
    ONNX Runtime session (``onnxruntime``) or its autocast (``bfloat16``).

    Passes run side by side, one core each, as many as torch had threads at load time (the Space
    sets them before loading), on ONNX Runtime (it releases the GIL for a whole pass) and in
    bfloat16 (each worker runs PyTorch's kernels on one thread); on this encoder's small matrices
    that beats one pass on all cores, and a busy machine does not stall a pass's threads on each
    other. The float32 and int8 torch paths run one pass at a time on torch's own threads.
    """

    def __init__(self, choice: RuntimeChoice, session=None):
        self.choice, self.session = choice, session
        side_by_side = session is not None or (choice.precision == "bfloat16" and _one_thread_per_worker() is not None)
        self.passes_at_once = torch.get_num_threads() if side_by_side else 1
        self.batch_size = BFLOAT16_BATCH if choice.precision == "bfloat16" else 16
        """Sentences a pass takes at most when its caller leaves it to the model (a predictor's batches)."""

    def slice_size(self, sentences: int, batch_size: int) -> int:
        """Sentences a pass takes in a call of ``sentences`` with batches of at most ``batch_size``:
        ``batch_size``; in bfloat16, about ``sentences`` / :data:`BFLOAT16_SLICES`, from
        :data:`BFLOAT16_MIN_SLICE` up to it (shorter passes over a few articles' sentences pad less)."""
        if self.choice.precision != "bfloat16":
            return batch_size
        return min(batch_size, max(BFLOAT16_MIN_SLICE, -(-sentences // BFLOAT16_SLICES)))

    @property
    def reason(self) -> str:
        return self.choice.reason

    def workers(self) -> ThreadPoolExecutor | None:
        """The threads that run passes side by side, or None (one pass at a time)."""
        if self.passes_at_once < 2:
            return None
        initializer = _one_thread_per_worker() if self.session is None else None
        return ThreadPoolExecutor(self.passes_at_once, thread_name_prefix="vilbias-sentence-pass", initializer=initializer)

    def run(self, torch_pass: Callable, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Sentence and word logits of one batch: ``torch_pass`` (the model's own pass) on PyTorch."""
        if self.session is not None:
            logits, word_logits = self.session.run(None, {"input_ids": input_ids.numpy(), "attention_mask": attention_mask.numpy()})
            return torch.from_numpy(logits), torch.from_numpy(word_logits)
        if self.choice.precision == "bfloat16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                logits, word_logits = torch_pass(input_ids, attention_mask)
            return logits.float(), word_logits.float()
        return torch_pass(input_ids, attention_mask)


def prepare_runtime(model: nn.Module, source=None, revision: str | None = None) -> Runtime:
    """Choose how ``model`` (loaded from ``source``) runs on this CPU (:func:`choose_runtime`, from
    its config's ``inference_runtime`` and ``inference_precision``), prepare it, and say so once
    (logging); the returned :class:`Runtime` runs its passes."""
    import importlib.util

    config = model.config
    installed = importlib.util.find_spec("onnxruntime") is not None and importlib.util.find_spec("onnx") is not None
    needs_evidence = "auto" in (config.inference_precision, config.inference_runtime)
    evidence = read_evidence(source, revision) if needs_evidence or config.inference_precision == "int8" else None
    choice = choose_runtime(config.inference_runtime, config.inference_precision, cpu_flags(), evidence, installed)
    session = None
    if choice.runtime == "onnxruntime":
        int8 = (Int8Scales((evidence or {}).get("int8_ranges"), lambda: calibration_sentences(source, revision))
                if choice.precision == "int8" else None)
        session = onnx_session(model, int8)
    elif choice.precision == "bfloat16":
        _to_bfloat16(model)
    elif choice.precision == "int8":
        model._quantize_int8()
    runtime = Runtime(choice, session)
    logger.info("sentence model %s runs %s", getattr(source, "name", None) or source or "", choice.reason)
    return runtime


def _to_bfloat16(model: nn.Module) -> None:
    """The encoder's weights (the members' layers too) in bfloat16, so that under autocast its
    matrix products run in bfloat16 (AMX) without casting the weights at every pass; the heads
    stay float32 (autocast runs their products in bfloat16, from float32 weights)."""
    model.encoder.to(torch.bfloat16)
    for member in getattr(model, "members", None) or []:
        member.layers.to(torch.bfloat16)


_OMP = None


def _one_thread_per_worker() -> Callable[[], None] | None:
    """An initializer that makes a worker thread run PyTorch's kernels on one thread, or None
    where it cannot. ``torch.set_num_threads`` sets the whole process's count; OpenMP's own
    ``omp_set_num_threads`` sets the calling thread's, which PyTorch and oneDNN read in that
    thread (after PyTorch's first call there has set it from the process's count)."""
    global _OMP
    if _OMP is None:
        _OMP = False
        if "parallel backend: OpenMP" in torch.__config__.parallel_info():
            lib = Path(torch.__file__).parent / "lib" / "libgomp.so.1"
            try:
                _OMP = ctypes.CDLL(str(lib) if lib.is_file() else "libgomp.so.1").omp_set_num_threads
            except (OSError, AttributeError):  # another OpenMP (Intel's, LLVM's): one pass at a time
                pass
    if not _OMP:
        return None

    def one_thread() -> None:
        torch.get_num_threads()  # PyTorch's per-thread setup first, or it would undo ours
        _OMP(1)

    return one_thread


# -- the ONNX Runtime graph ---------------------------------------------------------------------


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
scales of its int8 graph on ONNX Runtime (``inference_precision: int8``) where its
:data:`EVIDENCE_FILE` does not carry them already."""


def calibration_sentences(source, revision: str | None = None) -> list[str] | None:
    """The sentences of ``source``'s :data:`CALIBRATION_FILE` (a folder or a Hub repo), or None."""
    saved = _checkpoint_json(source, CALIBRATION_FILE, revision)
    return saved["sentences"] if saved else None


INT8_LAYERS_PATTERN = r".*/(attention/self/(query|key|value)|attention/output/dense|intermediate/dense)/MatMul"


def onnx_session(model: nn.Module, int8: Int8Scales | None = None):
    """An ONNX Runtime session of ``model``'s inference pass (LoRA folded in, every member and both
    heads) with dynamic batch and length, float32 or, with ``int8``, static int8
    (:func:`onnx_graph`); None, with a warning, when onnxruntime or onnx is not installed (the
    torch path then runs: the same outputs). One core per pass: passes run side by side
    (:class:`Runtime`)."""
    import importlib.util

    if importlib.util.find_spec("onnxruntime") is None or importlib.util.find_spec("onnx") is None:
        logger.warning("inference_runtime onnxruntime: onnxruntime or onnx is not installed, so the model runs on "
                       "PyTorch (the same outputs, slower); pip install 'vilbias[train]' to get them")
        return None
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1  # one core per pass: passes run side by side
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # its graph notes are not the user's business
    graph = onnx_graph(model, int8)
    return onnxruntime.InferenceSession(str(graph) if isinstance(graph, Path) else graph, options, providers=["CPUExecutionProvider"])


GRAPH_RECIPE = ("export: torch.onnx TorchScript, opset 17; int8: static QOperator, MinMax ranges (saved or from "
                "length-sorted calibration batches of 16), per channel, layers " + INT8_LAYERS_PATTERN)
"""How a graph is made, part of its cache key: change it with the code, and graphs kept from before are not read."""


@dataclass
class Int8Scales:
    """What fixes a static int8 graph's activation scales: the MinMax ranges saved in the
    checkpoint's :data:`EVIDENCE_FILE` (``ranges``, ONNX Runtime's calibration-cache form), else
    ``sentences`` to calibrate on (:data:`CALIBRATION_FILE`'s, read only when needed)."""

    ranges: dict | None = None
    sentences: Callable[[], list[str] | None] | None = None

    def key(self) -> str:
        return json.dumps(self.ranges, sort_keys=True) if self.ranges else repr(self.sentences() if self.sentences else None)


RUNTIME_FIELDS = ("inference_runtime", "inference_precision")
"""Config fields that say how a model is run, not what it computes: left out of a graph's cache key,
so that a float32 graph serves every load of the same weights, and one made for the evidence the loads."""


def onnx_graph(model: nn.Module, int8: Int8Scales | None = None, *, weights: str | None = None) -> Path | bytes:
    """``model``'s inference pass as an ONNX graph — float32, or with ``int8`` its static int8 form
    (:func:`quantize_static`, made from the float32 graph): the file in
    ``$HF_HOME/vilbias/onnx/<digest>.onnx`` when one was made before for the same weights, config,
    int8 scales and library versions (the digest covers all of them), else made now and stored
    there (atomically); the bytes themselves when the cache folder cannot be written. ``weights``:
    :func:`weights_digest` of ``model``, when the caller has it (read once, not again here)."""
    weights = weights or weights_digest(model)
    path = _graph_path(model, int8, weights)
    if path.is_file():
        return path
    if int8:
        return _keep(path, quantize_static(_graph_bytes(onnx_graph(model, weights=weights)), model, int8)[0])
    return _keep(path, _export_onnx(model))


def _graph_bytes(graph: Path | bytes) -> bytes:
    return graph.read_bytes() if isinstance(graph, Path) else graph


def weights_digest(model: nn.Module) -> str:
    """A digest of ``model``'s weights (names and bytes), read in place (~0.1 s for the shipped model)."""
    import hashlib

    digest = hashlib.blake2b(digest_size=16)
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().contiguous().view(-1).view(torch.uint8).numpy())
    return digest.hexdigest()


def _graph_path(model: nn.Module, int8: Int8Scales | None, weights: str) -> Path:
    """Where :func:`onnx_graph` keeps ``model``'s graph: a digest of how it is made (the recipe,
    the config but for :data:`RUNTIME_FIELDS`, the weights (``weights``: their
    :func:`weights_digest`), the libraries, the int8 scales)."""
    import hashlib

    import huggingface_hub
    import onnx
    import onnxruntime

    config = {k: v for k, v in model.config.to_dict().items() if k not in RUNTIME_FIELDS}
    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"{GRAPH_RECIPE}|{json.dumps(config, sort_keys=True, default=str)}|torch {torch.__version__}|"
                  f"onnx {onnx.__version__}|onnxruntime {onnxruntime.__version__}|{f'int8 {int8.key()}' if int8 else 'float32'}|"
                  f"weights {weights}".encode())
    return Path(huggingface_hub.constants.HF_HOME) / "vilbias" / "onnx" / f"{digest.hexdigest()}.onnx"


def _keep(path: Path, graph: bytes) -> Path | bytes:
    """``graph`` written to ``path`` atomically (readable as the Hub cache's own files); the bytes
    themselves when the cache folder cannot be written."""
    import tempfile

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
scores and the heads stay float32: quantised too, they flip 12 of the shipped model's 308 test
sentences (benchmarks/bench_sentence_int8.py)."""


def quantize_static(graph: bytes, model: nn.Module, int8: Int8Scales, layers: re.Pattern = INT8_LAYERS) -> tuple[bytes, dict | None]:
    """``graph`` with ``layers`` (:data:`INT8_LAYERS`) in int8 (ONNX Runtime's static quantisation:
    weights per channel, activation scales fixed by MinMax ranges), so a sentence gets the same
    answer whatever shares its batch, unlike dynamic quantisation's per-batch scales; and the
    ranges it used.

    The ranges are ``int8.ranges`` when they name every tensor the graph needs (an export by
    another torch may name them otherwise), else calibrated now on ``int8.sentences`` (~10 s).
    """
    import tempfile

    import numpy as np
    import onnx
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType
    from onnxruntime.quantization import quantize_static as ort_quantize_static

    proto = onnx.load_from_string(graph)
    nodes = [n.name for n in proto.graph.node if n.op_type in ("MatMul", "Gemm")]
    keep = [n for n in nodes if not layers.fullmatch(n)]
    if len(keep) == len(nodes):
        raise ValueError("the exported graph has none of the layers int8 quantises (INT8_LAYERS): load with inference_precision='float32'")

    class Sentences(CalibrationDataReader):
        def __init__(self, sentences: list[str]):
            ordered = sorted(sentences, key=len)  # length-sorted batches, each padded to its longest
            batches = (model.tokenizer(ordered[i:i + 16], truncation=True, max_length=model.config.max_length, padding=True,
                                       return_tensors="np") for i in range(0, len(ordered), 16))
            self.batches = ({k: b[k].astype(np.int64) for k in ("input_ids", "attention_mask")} for b in batches)

        def get_next(self):
            return next(self.batches, None)

    scales = weight_scales(proto, [n for n in nodes if n not in keep])
    options = dict(quant_format=QuantFormat.QOperator, per_channel=True, weight_type=QuantType.QInt8, activation_type=QuantType.QUInt8,
                   op_types_to_quantize=["MatMul"], nodes_to_exclude=keep,
                   extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT, "TensorQuantOverrides": scales})
    with tempfile.TemporaryDirectory(prefix="vilbias-int8-") as tmp:
        source, target, cache = Path(tmp) / "float32.onnx", Path(tmp) / "int8.onnx", Path(tmp) / "ranges.json"
        source.write_bytes(graph)
        if int8.ranges:
            cache.write_text(json.dumps(int8.ranges), encoding="utf-8")
            try:
                ort_quantize_static(source, target, None, calibration_cache_path=cache, **options)
                quantized = target.read_bytes()
                if _int8_products(quantized) == len(nodes) - len(keep):
                    return quantized, int8.ranges
            except (TypeError, KeyError, ValueError) as e:  # an older onnxruntime, or ranges of another export
                logger.debug("the saved int8 ranges do not fit this graph (%s): calibrating", e)
            cache.unlink(missing_ok=True)
        sentences = int8.sentences() if int8.sentences else None
        if not sentences:
            raise ValueError(f"inference_precision int8 on onnxruntime needs the checkpoint's {EVIDENCE_FILE} or {CALIBRATION_FILE} "
                             "(written by vilbias train sentence); load it with inference_precision='float32' instead")
        try:
            ort_quantize_static(source, target, Sentences(sentences), calibration_cache_path=cache, **options)
        except TypeError:  # onnxruntime < 1.24 keeps no calibration cache
            ort_quantize_static(source, target, Sentences(sentences), **options)
        ranges = json.loads(cache.read_text(encoding="utf-8")) if cache.is_file() else None
        return target.read_bytes(), ranges


def weight_scales(graph: bytes | onnx.ModelProto, nodes: Sequence[str]) -> dict[str, list[dict]]:
    """ONNX Runtime's per-channel int8 scales and zero points of the weights of the MatMul
    ``nodes`` of ``graph`` (its bytes, or the graph parsed already), as ``TensorQuantOverrides``: what its quantiser computes for symmetric
    int8 weights (``compute_scale_zp``: the channel's largest magnitude, zero included, over 127,
    float64 then stored as the weight's float32; zero point 0; a scale under float32's smallest
    normal number becomes 1), for every channel at once. Given these, the quantiser only rounds
    each channel instead of also working out its range one channel at a time in Python (18,432
    channels in the shipped model: 3.3 s of the 4.3 s a static quantisation took, AVX2 machine);
    the graph it writes is the same bytes (``tests/models/test_sentence_precision.py``)."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    proto = onnx.load_from_string(graph) if isinstance(graph, bytes) else graph
    initializers = {i.name: i for i in proto.graph.initializer}
    wanted = set(nodes)
    overrides: dict[str, list[dict]] = {}
    for node in proto.graph.node:
        if node.name not in wanted or node.op_type != "MatMul" or node.input[1] not in initializers:
            continue
        weights = numpy_helper.to_array(initializers[node.input[1]])
        if weights.dtype != np.float32 or weights.ndim < 2:
            continue
        axis = weights.ndim - 1  # ONNX Runtime's channel axis for a MatMul weight: its last
        flat = weights.reshape(-1, weights.shape[axis])
        absmax = np.abs(flat).max(axis=0)  # the channel's range with zero in it, made symmetric
        scale = (absmax.astype(np.float64) * 2) / np.float64(254)  # (rmax - rmin) / (qmax - qmin), in float64 as ONNX Runtime does
        stored = scale.astype(np.float32)
        stored[scale < np.finfo(np.float32).tiny] = np.float32(1.0)
        zero = np.int8(0)
        overrides[node.input[1]] = [{"axis": axis, "scale": s, "zero_point": zero} if i == 0 else {"scale": s, "zero_point": zero}
                                    for i, s in enumerate(stored)]
    return overrides


def _int8_products(graph: bytes) -> int:
    import onnx

    return sum(n.op_type == "QLinearMatMul" for n in onnx.load_from_string(graph).graph.node)


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


# -- the evidence a checkpoint carries ----------------------------------------------------------


def describe_cpu() -> str:
    """This machine's CPU in one line: its model name, cores and the instructions the paths use."""
    name = "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            name = next((line.partition(":")[2].strip() for line in f if line.startswith("model name")), name)
    except OSError:
        pass
    wanted = ("avx2", "avx512f", "avx_vnni", "avx512_vnni", "avx512_bf16", "amx_int8", "amx_bf16")
    flags = cpu_flags()
    return f"{name}, {os.cpu_count()} cores, {' '.join(f for f in wanted if f in flags) or 'no AVX2'}"


def runtime_evidence(folder: str | os.PathLike, texts: Sequence[str], labels: Sequence[int], *,
                     ids: Sequence[str] | None = None, split: str = "test") -> dict:
    """How each path faster than float32 answers held-out sentences, next to the float32 torch call,
    for the checkpoint saved in ``folder``: written there as :data:`EVIDENCE_FILE` (what loading
    reads to choose a path, :func:`choose_runtime`) and returned. ``vilbias train sentence`` calls
    it after saving the model, with its test split.

    Args:
        folder: a saved sentence checkpoint (``save_pretrained``'s folder, with its
            :data:`CALIBRATION_FILE`).
        texts: the held-out sentences.
        labels: their gold labels (1 = biased).
        ids: their row ids, recorded as a sha256 (:func:`vilbias.provenance.ids_digest`).
        split: the split's name, recorded.

    Returns:
        ``{"split", "rows", "ids_sha256", "reference": {"path", "macro_f1"}, "paths": {"onnxruntime/int8":
        {"macro_f1", "flipped", "max_probability_change"}, ...}, "measured_on", "int8_ranges"}``.
    """
    import onnxruntime
    from transformers import AutoModel

    # why: scoring and the ids' digest are needed only when evidence is written (after training),
    # never when a model loads, which this module serves
    from vilbias.metrics.scores import closed_metrics
    from vilbias.provenance import ids_digest

    folder, labels = Path(folder), [int(y) for y in labels]
    if len(texts) != len(labels) or not texts:
        raise ValueError(f"runtime_evidence needs held-out sentences and as many labels (got {len(texts)} and {len(labels)})")
    reference = AutoModel.from_pretrained(folder, inference_runtime="torch", inference_precision="float32")
    # The float32 graph is exported once and the int8 one made once, both kept where the loads below
    # (and later ones) find them (onnx_graph's cache).
    weights = weights_digest(reference)
    int8_graph, ranges = quantize_static(_graph_bytes(onnx_graph(reference, weights=weights)), reference,
                                         Int8Scales(sentences=lambda: calibration_sentences(folder)))
    _keep(_graph_path(reference, Int8Scales(ranges), weights), int8_graph)
    evidence = {"purpose": "how each path faster than float32 answers the held-out sentences, and the int8 graph's activation "
                           "ranges; vilbias reads it at load to choose the path (sentence_runtime.choose_runtime)",
                "split": split, "rows": len(texts), "ids_sha256": ids_digest(list(ids)) if ids is not None else None,
                "measured_on": {"cpu": describe_cpu(), "torch": torch.__version__, "onnxruntime": onnxruntime.__version__},
                "int8_ranges": ranges}
    (folder / EVIDENCE_FILE).write_text(json.dumps(evidence, indent=1) + "\n", encoding="utf-8")  # the int8 load reads the ranges

    def answers(model) -> tuple[torch.Tensor, list[int]]:
        probs = model.biased_probability(model.sentence_logits(list(texts))[0])
        return probs, [int(p >= 0.5) for p in probs.tolist()]

    base_probs, base_flags = answers(reference)
    evidence["reference"] = {"path": "torch/float32", "macro_f1": round(closed_metrics(labels, base_flags)["f1_macro"], 6)}
    evidence["paths"] = {}
    for runtime, precision in (("onnxruntime", "float32"), ("onnxruntime", "int8"), ("torch", "bfloat16")):
        probs, flags = answers(AutoModel.from_pretrained(folder, inference_runtime=runtime, inference_precision=precision))
        evidence["paths"][f"{runtime}/{precision}"] = {
            "macro_f1": round(closed_metrics(labels, flags)["f1_macro"], 6),
            "flipped": sum(a != b for a, b in zip(flags, base_flags, strict=True)),
            "max_probability_change": round(float((probs - base_probs).abs().max()), 6)}
    ordered = {k: evidence[k] for k in ("purpose", "split", "rows", "ids_sha256", "reference", "paths", "measured_on", "int8_ranges")}
    (folder / EVIDENCE_FILE).write_text(json.dumps(ordered, indent=1) + "\n", encoding="utf-8")
    return ordered
