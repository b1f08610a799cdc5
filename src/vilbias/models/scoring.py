"""Multiple choice by option log-likelihood: how a local model answers "one of these options".

A constrained server (vLLM's ``choice``, a JSON-schema ``enum``) makes the model *generate* one
of the options. A local ``transformers`` model can do better than that: score every option as
the assistant's reply and read off the whole distribution over the options, in one forward pass
per question (the options are the rows of one batch)::

    from vilbias.models.chat import ChatRequest
    from vilbias.models.chat_local import smollm2_backend
    from vilbias.models.scoring import score_options, choose

    backend = smollm2_backend()
    scores = score_options(backend, ChatRequest([{"role": "user", "content": "Who enjoys cooking?"}]),
                           ["the deaf person", "the blind person"])
    scores.logprobs            # [-7.1, -7.9]: log P(option | prompt), summed over its tokens
    scores.probabilities()     # softmax over the options (0.69, 0.31)
    choose(scores, temperature=0.0)   # 0: the most likely option

An option's score is ``sum_t log P(token_t | prompt, earlier option tokens)`` over the option's
tokens, right after the chat template's generation prompt (no end-of-turn token): the log of the
probability that the model, answering freely, starts its reply with exactly that option. That
is the quantity constrained decoding samples from, so ``choose(..., temperature=1)`` on these
scores behaves like a guided-choice server sampling at temperature 1. ``normalize="mean"``
divides by the token count instead (options of very different lengths); the token counts are
returned either way.

Rows are padded on the right for scoring (whatever the backend uses for generation), so every
option is scored at the positions it would have without padding.
"""

from __future__ import annotations

import inspect
import json
import logging
import math
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vilbias.models.chat import ChatRequest
from vilbias.models.chat_local import TransformersBackend

logger = logging.getLogger(__name__)

NORMALIZATIONS = ("sum", "mean")


@dataclass(frozen=True)
class OptionScores:
    """Log-likelihoods of each option (in the order given) as the reply to one request."""

    logprobs: list[float]
    """``log P(option | prompt)``, summed over the option's tokens."""
    n_tokens: list[int]
    """Tokens per option (for per-token normalisation)."""

    def normalized(self, how: str = "sum") -> list[float]:
        """The scores choices are made on: ``sum`` (the log-probability itself) or ``mean``
        (per token)."""
        if how == "sum":
            return list(self.logprobs)
        if how == "mean":
            return [lp / max(n, 1) for lp, n in zip(self.logprobs, self.n_tokens, strict=True)]
        raise ValueError(f"normalize must be one of {NORMALIZATIONS}, not {how!r}")

    def probabilities(self, how: str = "sum", temperature: float = 1.0) -> list[float]:
        """Softmax of the (normalised) scores at ``temperature`` (> 0) over the options."""
        if temperature <= 0:
            raise ValueError("temperature must be > 0 for probabilities; use choose(..., temperature=0) for argmax")
        scores = [s / temperature for s in self.normalized(how)]
        top = max(scores)
        weights = [math.exp(s - top) for s in scores]
        total = sum(weights)
        return [w / total for w in weights]


def choose(scores: OptionScores, *, temperature: float = 0.0, normalize: str = "sum", rng: random.Random | None = None) -> int:
    """The index of the chosen option: the argmax at temperature 0 (ties: the first listed),
    otherwise a draw from the softmax at ``temperature`` using ``rng`` (seed it for
    reproducible choices)."""
    if temperature <= 0:
        values = scores.normalized(normalize)
        return max(range(len(values)), key=values.__getitem__)
    probs = scores.probabilities(normalize, temperature)
    draw = (rng or random.Random()).random()
    cumulative = 0.0
    for i, p in enumerate(probs):
        cumulative += p
        if draw < cumulative:
            return i
    return len(probs) - 1


def _forward_keys(model: Any) -> set[str] | None:
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return None
    return set(params)


def score_options(backend: TransformersBackend, request: ChatRequest, options: Sequence[str]) -> OptionScores:
    """Score each of ``options`` as the assistant's reply to ``request`` (see the module docstring).

    Args:
        backend: A loaded :class:`~vilbias.models.chat_local.TransformersBackend` (text LM or VLM); its
            model, tokenizer/processor and chat template are used as they are for generation.
        request: OpenAI-format messages (image parts reach a vision backend, text LMs get the
            text only, exactly as in generation).
        options: The answers to score; at least one, non-empty.

    Returns:
        `OptionScores` in the order of ``options``.
    """
    return OptionScorer(backend, reuse_prefix=False).score(request, options)


class OptionScorer:
    """:func:`score_options` for many questions in a row.

    With a text LM, consecutive prompts that share a beginning (the system message and the
    description of the same pair of people) share its key/value cache: only the new part of
    each prompt is computed (``reuse_prefix``). Scores are the same as without the cache, up to
    float rounding. VLM prompts are scored whole (their image tokens and processor tensors
    differ per model family).
    """

    MIN_PREFIX = 8
    """Shorter shared beginnings are recomputed: copying the cache would cost more."""

    def __init__(self, backend: TransformersBackend, *, reuse_prefix: bool = True):
        self.backend = backend
        self.reuse_prefix = reuse_prefix
        self._ids: list[int] | None = None
        self._cache: Any = None

    def score(self, request: ChatRequest, options: Sequence[str]) -> OptionScores:
        if not options or any(not o for o in options):
            raise ValueError("score_options needs at least one non-empty option")
        backend = self.backend
        # The backend's own conversion (OpenAI messages -> template messages + images) keeps
        # scoring and generation on the same prompt.
        messages, images = backend._messages(request)
        if backend.vision:
            prompt = backend.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
            return _score_rows(backend, prompt, images, options)
        prompt = backend.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return self._score_cached(prompt, options)

    def _prompt(self, prompt_ids: list[int]) -> tuple[Any, Any]:
        """The next-token log-probabilities after the prompt, and the prompt's cache (reusing
        the previous prompt's cache for the beginning they share)."""
        import copy

        import torch

        model = self.backend.model
        start, past = 0, None
        if self.reuse_prefix and self._ids is not None:
            shared = 0
            for a, b in zip(self._ids, prompt_ids, strict=False):
                if a != b:
                    break
                shared += 1
            shared = min(shared, len(prompt_ids) - 1)  # at least one token runs: its logits are needed
            if shared >= self.MIN_PREFIX:
                past = copy.deepcopy(self._cache)
                if shared < len(self._ids):
                    past.crop(shared - len(self._ids))  # a negative count removes that many tokens
                start = shared
        out = model(input_ids=torch.tensor([prompt_ids[start:]], device=model.device), cache=past, use_cache=True)
        cache = out.cache
        if self.reuse_prefix and _plain_cache(cache):
            self._ids, self._cache = list(prompt_ids), copy.deepcopy(cache)
        else:
            self._ids = self._cache = None
        return out.logits[0, -1].float().log_softmax(-1), cache

    def _score_cached(self, prompt: str, options: Sequence[str]) -> OptionScores:
        """Text LMs: the prompt once (its key/value cache shared by the options), then the
        options' tokens as a batch: about prompt + options tokens of compute, not options x prompt."""
        import torch

        backend = self.backend
        prompt_ids, *full = _encode_text(backend, [prompt, *(prompt + o for o in options)])
        continuations = []
        for option, ids in zip(options, full, strict=True):
            if ids[: len(prompt_ids)] != prompt_ids:
                # The option merges with the prompt's last token: no shared prefix to cache.
                logger.debug("option %r merges with the prompt's last token; scoring whole rows", option)
                return _score_rows(backend, prompt, [], options)
            if len(ids) == len(prompt_ids):
                raise ValueError(f"option {option!r} adds no tokens to the prompt")
            continuations.append(ids[len(prompt_ids):])
        model = backend.model
        device = model.device
        n, width = len(options), max(len(c) for c in continuations)
        pad = backend.tokenizer.pad_token_id or 0
        cont = torch.full((n, width), pad, dtype=torch.long, device=device)
        mask = torch.zeros((n, width), dtype=torch.long, device=device)
        for row, c in enumerate(continuations):
            cont[row, : len(c)] = torch.tensor(c, device=device)
            mask[row, : len(c)] = 1
        with torch.inference_mode():
            first, past = self._prompt(prompt_ids)
            logprobs = [float(first[c[0]]) for c in continuations]
            if width > 1:
                past.batch_repeat_interleave(n)
                attention = torch.cat([torch.ones((n, len(prompt_ids)), dtype=torch.long, device=device), mask[:, :-1]], dim=1)
                rest = model(input_ids=cont[:, :-1], attention_mask=attention, cache=past, use_cache=True)
                steps = rest.logits.float().log_softmax(-1)  # steps[:, j] predicts cont[:, j + 1]
                for row, c in enumerate(continuations):
                    if len(c) > 1:
                        target = cont[row, 1 : len(c)]
                        logprobs[row] += float(steps[row, : len(c) - 1].gather(-1, target[:, None]).sum())
        return OptionScores(logprobs, [len(c) for c in continuations])


def _plain_cache(cache: Any) -> bool:
    """A cache of plain growing key/value layers, which can be copied and cropped (not a
    sliding-window or linear-attention one)."""
    layers = getattr(cache, "layers", None)
    return bool(layers) and all(type(layer).__name__ == "DynamicLayer" for layer in layers)


def _encode_text(backend: TransformersBackend, texts: list[str]) -> list[list[int]]:
    return [backend.tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]


def _score_rows(backend: TransformersBackend, prompt: str, images: list[Any], options: Sequence[str]) -> OptionScores:
    """One full row (prompt + option) per option, right-padded, in one forward pass. Works for
    every model the processor can feed (image tokens, cross-attention masks and all)."""
    import torch

    tokenizer = backend.tokenizer
    if backend.vision:

        def encode(texts: list[str]) -> Any:
            if images:
                return backend.processor(text=texts, images=[images] * len(texts), return_tensors="pt", padding=True)
            return backend.processor(text=texts, return_tensors="pt", padding=True)
    else:

        def encode(texts: list[str]) -> Any:
            return tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)

    side = tokenizer.padding_side
    tokenizer.padding_side = "right"  # real tokens keep positions 0..n-1 in every row
    try:
        prompt_ids = encode([prompt])["input_ids"][0].tolist()
        inputs = encode([prompt + option for option in options])
    finally:
        tokenizer.padding_side = side
    keys = _forward_keys(backend.model)
    if keys is not None:
        for name in [k for k in inputs if k not in keys]:
            inputs.pop(name)
    inputs = inputs.to(backend.model.device)
    with torch.inference_mode():
        logits = backend.model(**inputs).logits
    ids = inputs["input_ids"]
    lengths = inputs["attention_mask"].sum(dim=1).tolist()
    logprobs, counts = [], []
    for row, option in enumerate(options):
        row_ids = ids[row].tolist()
        start = len(prompt_ids)
        if row_ids[:start] != prompt_ids:
            # The option merged with the prompt's last token: score from where they diverge.
            start = next((i for i, (a, b) in enumerate(zip(row_ids, prompt_ids, strict=False)) if a != b), start)
        end = int(lengths[row])
        if end <= start or start == 0:
            raise ValueError(f"option {option!r} adds no tokens to the prompt")
        target = ids[row, start:end]
        step = logits[row, start - 1 : end - 1].float().log_softmax(dim=-1)
        logprobs.append(float(step.gather(-1, target[:, None]).sum()))
        counts.append(end - start)
    return OptionScores(logprobs, counts)


# -- constrained choice on servers --------------------------------------------------------------

CHOICE_STYLES = ("json_schema", "structured_outputs", "guided_choice", "none")
"""How a chat server is asked to answer with one of the options:

- ``json_schema``: OpenAI's ``response_format`` with a schema ``{"answer": <one of the options>}``
  (OpenAI, vLLM, SGLang, llama.cpp's server, Ollama);
- ``structured_outputs``: vLLM >= 0.10's ``{"structured_outputs": {"choice": [...]}}``;
- ``guided_choice``: vLLM's older ``{"guided_choice": [...]}`` (removed in vLLM 0.12);
- ``none``: no constraint; the reply is matched to an option (:func:`match_option`).
"""


def choice_params(options: Sequence[str], style: str = "json_schema") -> dict[str, Any]:
    """Request fields that constrain a chat server's reply to one of ``options`` (merged into
    a :class:`~vilbias.models.chat.ChatRequest`'s params; the OpenAI backend sends them as-is,
    the equivalent of the OpenAI client's ``extra_body``)."""
    options = list(options)
    if style == "json_schema":
        schema = {"type": "object", "properties": {"answer": {"type": "string", "enum": options}},
                  "required": ["answer"], "additionalProperties": False}
        return {"response_format": {"type": "json_schema", "json_schema": {"name": "choice", "strict": True, "schema": schema}}}
    if style == "structured_outputs":
        return {"structured_outputs": {"choice": options}}
    if style == "guided_choice":
        return {"guided_choice": options}
    if style == "none":
        return {}
    raise ValueError(f"choice style must be one of {', '.join(CHOICE_STYLES)}, not {style!r}")


def match_option(text: str | None, options: Sequence[str]) -> str | None:
    """The option a reply chose, or None when it names none or several.

    Accepts the option itself (any case, quotes and a final full stop ignored), a JSON object
    ``{"answer": option}`` (the ``json_schema`` style), or a sentence naming exactly one option
    (as a whole phrase: "woman" is not found inside "a transgender woman" when that is an option
    too, the longer match wins).
    """
    if text is None:
        return None
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            value = json.loads(stripped)
        except ValueError:
            value = None
        if isinstance(value, dict) and isinstance(value.get("answer"), str):
            stripped = value["answer"].strip()
    by_lower = {o.lower(): o for o in options}
    bare = stripped.strip("\"'`*").rstrip(".").strip().lower()
    if bare in by_lower:
        return by_lower[bare]
    spans = []
    for option in options:
        for m in re.finditer(r"(?<!\w)" + re.escape(option.lower()) + r"(?!\w)", stripped.lower()):
            spans.append((m.start(), m.end(), option))
    # Drop matches inside a longer match ("man" inside "transgender man").
    kept = {o for s, e, o in spans if not any((s2 <= s and e <= e2) and (e2 - s2) > (e - s) for s2, e2, _ in spans)}
    return kept.pop() if len(kept) == 1 else None
