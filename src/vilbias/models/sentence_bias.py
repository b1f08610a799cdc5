"""Sentence-level media-bias scorer: the packaged all-MiniLM-L6-v2 with a LoRA adapter on its top
layers, a word head (BABE's biased words) and a sentence head (biased / not biased), as vilbias
trains and serves it.

The model itself — its saved form, inference, the article rule, the scores and the pipeline — is
:mod:`vilbias.models.custom_code.modeling_sentence_bias`, the code every checkpoint carries so
that ``transformers`` loads it without vilbias (``trust_remote_code=True``). This subclass adds
what only vilbias does: the training form (peft's LoRA layers), ensembles, and the runtimes
``from_pretrained`` prepares as ``config.json`` says (ONNX Runtime, int8, the sentence cache)::

    from vilbias.models.sentence_bias import SentenceBiasModel
    model = SentenceBiasModel.from_pretrained("training/default_model")
    article = model.score_article("Officials unveil the plan. Critics slammed the reckless scheme.")
    article.label, article.probability, [(s.text, s.probability) for s in article.sentences]

Registered with ``AutoConfig``/``AutoModel`` (see :mod:`vilbias`), so
``AutoModel.from_pretrained(folder or repo id)`` loads this class after ``import vilbias``
(even with ``trust_remote_code=True``: a registered class comes first), and with
``transformers.pipeline``'s registry as the ``media-bias`` task (:mod:`vilbias.models.pipelines`):
``pipeline("media-bias", model=folder or repo id)``. ``save_pretrained`` writes a self-contained
checkpoint (the weights, the encoder's tokenizer files and the code) and ``push_to_hub``
publishes it.
"""

from __future__ import annotations

import copy
import logging
import warnings
from collections.abc import Sequence

import torch
from torch import nn
from transformers import PreTrainedModel

from vilbias.models.configs import SENTENCE_FLAG, STATISTICS, ArticleRule, SentenceBiasConfig
from vilbias.models.custom_code import modeling_sentence_bias as base
from vilbias.models.custom_code.modeling_sentence_bias import (
    CODE_FILES,
    HUB_TASK,
    TOKENIZER_FILES,
    ArticleScore,
    SentenceScore,
    TokenScores,
    WordScore,
    article_score,
    encoder_source,
    lora_target_pattern,
    marked_words,
    new_heads,
    sentence_list,
    split_sentences,
    word_spans,
)
from vilbias.models.fusion import building_on_meta
from vilbias.models.sentence_runtime import SentenceCache, prepare_runtime

# peft is imported inside the training form's constructor: serving folds the adapter into the
# encoder and never needs it.

logger = logging.getLogger(__name__)

__all__ = ["CODE_FILES", "HUB_TASK", "OPINIONS", "SENTENCE_FLAG", "STATISTICS", "TOKENIZER_FILES",
           "ArticleRule", "ArticleScore", "SentenceBiasConfig", "SentenceBiasModel", "SentenceScore",
           "TokenScores", "WordScore", "article_score", "lora_target_pattern", "marked_words", "split_sentences", "word_spans"]

OPINIONS = ("Entirely factual", "Somewhat factual but also opinionated", "Expresses writer's opinion")
"""BABE's ``label_opinion`` values (its ``No agreement`` is no label), apostrophes straightened."""


class SentenceBiasModel(base.SentenceBiasModel):
    """MiniLM (+ LoRA on ``config.trained_layers``) → word head and sentence head.

    Built for training (``SentenceBiasModel(config)``: peft's LoRA layers, only they and the
    heads train) or, by :meth:`from_pretrained` and :meth:`ensemble`, in its saved form (see
    :class:`~vilbias.models.custom_code.modeling_sentence_bias.SentenceBiasModel`).
    """

    def __init__(self, config: SentenceBiasConfig, *, adapter: bool = True):
        if not adapter:
            super().__init__(config)
            return
        if building_on_meta():
            raise ValueError("from_pretrained loads the saved form of a sentence model (adapter=False)")
        # the training form: the base class's constructor builds the saved form, so this one
        # starts from PreTrainedModel's
        PreTrainedModel.__init__(self, config)
        from transformers import AutoModel, AutoTokenizer  # see the note in the base class's module

        path, revision = encoder_source(config)
        self.tokenizer = AutoTokenizer.from_pretrained(path, revision=revision)
        bert = AutoModel.from_pretrained(path, revision=revision)
        bert.requires_grad_(False)
        from peft import LoraConfig, get_peft_model

        lora = LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha, lora_dropout=config.lora_dropout,
                          target_modules=lora_target_pattern(config.trained_layers))
        bert = get_peft_model(bert, lora)
        hidden = bert.get_base_model().config.hidden_size
        self.word_head, self.sentence_head = new_heads(config, hidden)
        if config.opinion_loss_weight > 0:
            self.opinion_head = nn.Sequential(nn.Dropout(config.dropout), nn.Linear(2 * hidden, len(OPINIONS)))
        # post_init initialises weights: run it before the pretrained encoder is attached
        self.post_init()
        self.encoder = bert

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, layer_input=None, labels=None,
                word_labels=None, opinion_labels=None) -> dict:
        """Logits, and with ``labels`` the loss: sentence cross-entropy, plus the weighted word
        loss over positions whose ``word_labels`` is not -100, plus (with an opinion head) the
        weighted opinion loss over rows whose ``opinion_labels`` is not -100. ``layer_input``
        (:meth:`layer_input`'s output) stands for ``input_ids``. An ensemble (``members`` > 1,
        inference only) averages its members' sentence and word logits."""
        logits, word_logits, pooled = self.head_outputs(attention_mask, input_ids, layer_input)
        out = {"logits": logits, "word_logits": word_logits}
        if labels is not None:
            loss = nn.functional.cross_entropy(logits, labels)
            if word_labels is not None and (word_labels != -100).any():
                keep = word_labels != -100
                word_loss = nn.functional.binary_cross_entropy_with_logits(word_logits[keep], word_labels[keep].float())
                loss = loss + self.config.word_loss_weight * word_loss
            if hasattr(self, "opinion_head") and opinion_labels is not None and (opinion_labels != -100).any():
                opinion_loss = nn.functional.cross_entropy(self.opinion_head(pooled), opinion_labels, ignore_index=-100)
                loss = loss + self.config.opinion_loss_weight * opinion_loss
            out["loss"] = loss
        return out

    # -- saving and loading ---------------------------------------------------------------------

    def trained_state_dict(self) -> dict[str, torch.Tensor]:
        """Only what training changed, as saved: ``lora.<linear>.A`` / ``.B`` and the heads
        (``member{i}.``-prefixed in an ensemble); never the encoder or the opinion head."""
        if self.encoder is None or not hasattr(self.encoder, "get_base_model"):  # the saved form
            return super().trained_state_dict()
        state = {}
        for name, module in self.bert.named_modules():
            if hasattr(module, "lora_A") and "default" in getattr(module, "lora_A", {}):
                state[f"lora.{name}.A"] = module.lora_A["default"].weight
                state[f"lora.{name}.B"] = module.lora_B["default"].weight
        for name in ("word_head", "sentence_head"):
            state.update({f"{name}.{k}": v for k, v in getattr(self, name).state_dict().items()})
        return {k: v.detach().clone().contiguous() for k, v in state.items()}

    def save_pretrained(self, save_directory, *args, **kwargs):
        """The base class's self-contained checkpoint; a model built for training is one member
        (an ensemble is saved through :meth:`ensemble`)."""
        if self.config.members != 1 and self.encoder is not None and hasattr(self.encoder, "get_base_model"):
            raise ValueError("a model built for training is one member: save an ensemble through SentenceBiasModel.ensemble")
        return super().save_pretrained(save_directory, *args, **kwargs)

    @classmethod
    def ensemble(cls, models: Sequence[SentenceBiasModel], config: SentenceBiasConfig | None = None) -> SentenceBiasModel:
        """The saved form of one trained model, or of several trained alike (an ensemble), with
        ``config`` (default: the first model's) and ``members`` set: what ``save_pretrained``
        writes as one folder."""
        if not models:
            raise ValueError("ensemble needs at least one model")
        config = copy.deepcopy(config or models[0].config)
        config.members = len(models)
        saved = cls(config, adapter=False)
        states = [m.trained_state_dict() for m in models]
        state = states[0] if len(states) == 1 else {f"member{i}.{k}": v for i, st in enumerate(states) for k, v in st.items()}
        saved.load_state_dict(state, strict=True)
        return saved

    @classmethod
    def from_pretrained(cls, *args, **kwargs):
        """The base class's ``from_pretrained`` (the saved form, the encoder from its source with the
        LoRA deltas folded in), then the encoder prepared as ``config.json`` says
        (``inference_runtime``, ``inference_precision``). Config fields given as keyword
        arguments override the file's: ``inference_runtime="torch", inference_precision="float32"``
        is the exact path."""
        kwargs.setdefault("adapter", False)
        loaded = super().from_pretrained(*args, **kwargs)
        source = args[0] if args else kwargs.get("pretrained_model_name_or_path")
        (loaded[0] if isinstance(loaded, tuple) else loaded)._prepare_runtime(source, kwargs.get("revision"))
        return loaded

    def _prepare_runtime(self, source=None, revision: str | None = None) -> None:
        # what runs the passes, chosen for this CPU where the config says auto (sentence_runtime.choose_runtime)
        self.runtime = prepare_runtime(self, source, revision)
        self.passes_at_once = self.runtime.passes_at_once
        self.preferred_batch_size = self.runtime.batch_size
        self._workers = self.runtime.workers()
        self._cache = SentenceCache()

    @property
    def runtime_reason(self) -> str:
        """What runs this model's passes and why, in one sentence (logged once at load)."""
        runtime = getattr(self, "runtime", None)
        return runtime.reason if runtime is not None else "float32 on PyTorch: the model as built, not loaded by from_pretrained"

    def _quantize_int8(self) -> None:
        """Swap the encoder's linear layers (the members' copies too, LoRA already folded in) for
        PyTorch's dynamically quantised ones: int8 weights per output channel, activations
        quantised per batch, so the matrix products run in int8 (fbgemm) and the rest in
        float32. The heads stay float32: they are a sliver of the compute and carry the
        calibration."""
        from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

        with warnings.catch_warnings():
            # torch >= 2.10 points eager-mode quantisation at torchao, which vilbias does not
            # depend on; quantize_dynamic and its fbgemm kernels are what torch 2.13 runs.
            warnings.simplefilter("ignore")
            spec = {nn.Linear: per_channel_dynamic_qconfig}
            self.encoder = quantize_dynamic(self.encoder, spec)
            for member in getattr(self, "members", None) or []:
                member.layers = quantize_dynamic(member.layers, spec)

    # -- inference ------------------------------------------------------------------------------

    def sentence_logits(self, sentences: Sequence[str], batch_size: int = 16) -> tuple[torch.Tensor, list[TokenScores]]:
        """The base class's ``sentence_logits``; a loaded model answers a sentence it has scored
        before from its cache (:class:`SentenceCache`), and on ONNX Runtime runs its slices on
        every worker at once (one core each)."""
        sentences = sentence_list(sentences, "sentence_logits")
        cache: SentenceCache | None = getattr(self, "_cache", None)
        if cache is None:
            return super().sentence_logits(sentences, batch_size)
        window = self.config.max_length  # a sentence's pass depends on the window it is read in
        hits = [cache.get((window, text)) for text in sentences]
        todo = [text for text, hit in zip(sentences, hits, strict=True) if hit is None]
        scored = iter([])
        if todo:
            logits, words = super().sentence_logits(todo, batch_size)
            for text, row, w in zip(todo, logits, words, strict=True):
                cache.put((window, text), row.clone(), w)
            scored = zip(logits, words, strict=True)
        out_logits = torch.zeros(len(sentences), len(self.config.labels))
        out_words: list = [None] * len(sentences)
        for i, hit in enumerate(hits):
            out_logits[i], out_words[i] = hit if hit is not None else next(scored)
        return out_logits, out_words

    def train(self, mode: bool = True):
        """``nn.Module.train``; entering training mode empties the sentence cache (the weights are
        about to change, and a cached score would be the old weights' answer)."""
        cache: SentenceCache | None = getattr(self, "_cache", None)
        if mode and cache is not None:
            cache.clear()
        return super().train(mode)

    def _slice_size(self, sentences: int, batch_size: int) -> int:
        # every worker gets a slice: small batches keep padding small and all cores busy
        runtime = getattr(self, "runtime", None)
        batch_size = batch_size if runtime is None else runtime.slice_size(sentences, batch_size)
        workers = getattr(self, "_workers", None)
        return batch_size if workers is None else max(1, min(batch_size, -(-sentences // self.passes_at_once)))

    def _run_passes(self, encoded: list):
        workers = getattr(self, "_workers", None)
        if workers is not None and len(encoded) > 1:
            return workers.map(self._pass_encoded, encoded)
        return map(self._pass_encoded, encoded)

    def _pass_encoded(self, enc) -> tuple[torch.Tensor, torch.Tensor]:
        return self._pass(enc["input_ids"], enc["attention_mask"])

    def _pass(self, input_ids, attention_mask) -> tuple[torch.Tensor, torch.Tensor]:
        """Sentence and word logits of one batch, by the runtime the config names."""
        runtime = getattr(self, "runtime", None)
        if runtime is None:
            return super()._pass(input_ids, attention_mask)
        return runtime.run(super()._pass, input_ids, attention_mask)
