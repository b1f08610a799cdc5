"""Sentence-level media-bias scorer: the packaged all-MiniLM-L6-v2 with a LoRA adapter on its top
layers, a word head (BABE's biased words) and a sentence head (biased / not biased).

One forward pass over an article's sentences gives each sentence's probability of being biased
and each word's probability of being a loaded word; the article's label, its confidence and the
highlights all come from that pass, through the rule saved with the model (:class:`ArticleRule`)::

    from vilbias.models.sentence_bias import SentenceBiasModel
    model = SentenceBiasModel.from_pretrained("training/default_model")
    article = model.score_article(["Officials unveil the plan.", "Critics slammed the reckless scheme."])
    article.label, article.probability, [(s.text, s.probability) for s in article.sentences]

The sentence head reads the mean of the token states and their mean weighted by the word head's
scores, so the words the model marks are the words its sentence decision leans on. Sentence
probabilities are temperature-scaled (``config.temperature``, fitted on held-out labels).

A ``PreTrainedModel``: saved by ``save_pretrained`` as ``config.json`` (:class:`SentenceBiasConfig`)
and ``model.safetensors`` holding only the LoRA factors and the two heads, in float16 (about a
megabyte per ensemble member, keys prefixed ``member{i}.`` when there are several); the encoder
comes from its package. Registered with ``AutoConfig``/``AutoModel`` (see :mod:`vilbias`), so
``AutoModel.from_pretrained(folder or repo id)`` loads it and ``push_to_hub`` publishes it.
"""

from __future__ import annotations

import copy
import logging
import re
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import torch
from torch import nn
from transformers import PreTrainedModel

from vilbias.models.configs import SENTENCE_FLAG, STATISTICS, ArticleRule, SentenceBiasConfig
from vilbias.models.fusion import building_on_meta, mean_pool, resolve_model_path
from vilbias.models.sentence_runtime import (
    CALIBRATION_FILE,
    SentenceCache,
    calibration_sentences,
    onnx_session,
)
from vilbias.task import BIASED_NAME, NOT_BIASED_NAME, biased_probability

# transformers and peft are imported inside the methods that need them; peft only for training
# (serving folds the adapter into the encoder).

logger = logging.getLogger(__name__)

__all__ = ["SENTENCE_FLAG", "STATISTICS", "ArticleRule", "SentenceBiasConfig", "SentenceBiasModel"]

OPINIONS = ("Entirely factual", "Somewhat factual but also opinionated", "Expresses writer's opinion")
"""BABE's ``label_opinion`` values (its ``No agreement`` is no label), apostrophes straightened."""


# -- scores -------------------------------------------------------------------------------------


@dataclass
class WordScore:
    text: str
    start: int
    """Character offsets in the sentence."""
    end: int
    probability: float


@dataclass
class SentenceScore:
    text: str
    probability: float
    """Calibrated probability that the sentence is biased."""
    words: list[WordScore] = field(default_factory=list)
    """Words at or above the model's word threshold, in order."""

    @property
    def flagged(self) -> bool:
        return self.probability >= SENTENCE_FLAG


@dataclass
class ArticleScore:
    label: str
    probability: float
    """Probability that the article is biased (the rule's calibrated statistic)."""
    statistic: float
    rule: ArticleRule
    sentences: list[SentenceScore]

    @property
    def confidence(self) -> float:
        return self.probability if self.label == BIASED_NAME else 1.0 - self.probability

    @property
    def flagged(self) -> list[SentenceScore]:
        return [s for s in self.sentences if s.flagged]


# -- the model ----------------------------------------------------------------------------------


def lora_target_pattern(layers: Sequence[int]) -> str:
    """A regex naming every linear layer of the given BERT encoder layers."""
    which = "|".join(str(i) for i in layers)
    return (rf".*encoder\.layer\.({which})\."
            r"(attention\.self\.(query|key|value)|attention\.output\.dense|intermediate\.dense|output\.dense)")


_SAVED_KEY = re.compile(r"(lora|word_head|sentence_head|member\d+)\.")
"""Keys of the saved form that model.safetensors holds (``members.`` is the inference copy)."""


def _new_heads(config: SentenceBiasConfig, hidden: int) -> tuple[nn.Module, nn.Module]:
    word_head = nn.Sequential(nn.Dropout(config.dropout), nn.Linear(hidden, config.word_hidden), nn.GELU(),
                              nn.Linear(config.word_hidden, 1))
    sentence_head = nn.Sequential(nn.Dropout(config.dropout), nn.Linear(2 * hidden, len(config.labels)))
    return word_head, sentence_head


def _target_linears(path: str, layers: Sequence[int]) -> tuple[dict[str, tuple[int, int]], int]:
    """The adapted linear layers of the encoder at ``path`` (name -> (in, out) features) and its
    hidden size, read from its config (the encoder is built on the meta device: no weights)."""
    from transformers import AutoConfig, AutoModel

    with torch.device("meta"):
        skeleton = AutoModel.from_config(AutoConfig.from_pretrained(path))
    pattern = re.compile(lora_target_pattern(layers))
    linears = {n: (m.in_features, m.out_features) for n, m in skeleton.named_modules()
               if isinstance(m, nn.Linear) and pattern.fullmatch(n)}
    return linears, skeleton.config.hidden_size


class _Factors(nn.Module):
    """One adapted linear layer's LoRA factors, as saved: ``A`` (r x in) and ``B`` (out x r)."""

    def __init__(self, r: int, in_features: int, out_features: int):
        super().__init__()
        self.A = nn.Parameter(torch.zeros(r, in_features), requires_grad=False)
        self.B = nn.Parameter(torch.zeros(out_features, r), requires_grad=False)


def _factor_tree(linears: dict[str, tuple[int, int]], r: int) -> nn.Module:
    """Modules nested like the encoder's names, so the factors' keys read ``<linear>.A`` / ``.B``."""
    root = nn.Module()
    for name, (n_in, n_out) in linears.items():
        parent = root
        *path, leaf = name.split(".")
        for part in path:
            if parent._modules.get(part) is None:
                parent.add_module(part, nn.Module())
            parent = parent._modules[part]
        parent.add_module(leaf, _Factors(r, n_in, n_out))
    return root


class SentenceBiasModel(PreTrainedModel):
    """MiniLM (+ LoRA on ``config.trained_layers``) → word head and sentence head.

    Built for training (``SentenceBiasModel(config)``: peft's LoRA layers, only they and the
    heads train) or, by :meth:`from_pretrained` and :meth:`ensemble`, in its saved form: the LoRA
    factors as they are saved (``lora.<linear>.A`` / ``.B``) and the heads, per member when there
    are several. Loading then folds the factors into a plain encoder from the encoder's source, so
    serving needs neither peft nor any adapter overhead.
    """

    config_class = SentenceBiasConfig
    base_model_prefix = "sentence_bias"
    main_input_name = "input_ids"

    def __init__(self, config: SentenceBiasConfig, *, adapter: bool = True):
        super().__init__(config)
        from transformers import AutoModel, AutoTokenizer

        path = resolve_model_path(config.encoder)
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        if adapter:
            if building_on_meta():
                raise ValueError("from_pretrained loads the saved form of a sentence model (adapter=False)")
            bert = AutoModel.from_pretrained(path)
            bert.requires_grad_(False)
            from peft import LoraConfig, get_peft_model

            lora = LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha, lora_dropout=config.lora_dropout,
                              target_modules=lora_target_pattern(config.trained_layers))
            bert = get_peft_model(bert, lora)
            hidden = bert.get_base_model().config.hidden_size
            self.word_head, self.sentence_head = _new_heads(config, hidden)
            if config.opinion_loss_weight > 0:
                self.opinion_head = nn.Sequential(nn.Dropout(config.dropout), nn.Linear(2 * hidden, len(OPINIONS)))
        else:
            # The saved form: what model.safetensors holds, and no encoder until the factors are
            # loaded (_attach_encoder folds them into it).
            bert = None
            linears, hidden = _target_linears(path, config.trained_layers)
            if config.members == 1:
                self.lora = _factor_tree(linears, config.lora_r)
                self.word_head, self.sentence_head = _new_heads(config, hidden)
            else:
                for i in range(config.members):
                    member = nn.Module()
                    member.lora = _factor_tree(linears, config.lora_r)
                    member.word_head, member.sentence_head = _new_heads(config, hidden)
                    self.add_module(f"member{i}", member)
        # post_init initialises weights: run it before the pretrained encoder is attached
        self.post_init()
        self.encoder = bert

    def _init_weights(self, module):
        # Heads keep torch's default initialisation (drawn in __init__, after the adapter's, so a
        # seed gives the weights it always gave); the saved form is overwritten by the checkpoint.
        pass

    @property
    def bert(self):
        """The underlying BertModel (with peft's LoRA layers when built for training)."""
        return self.encoder.get_base_model() if hasattr(self.encoder, "get_base_model") else self.encoder

    def _mask(self, hidden, attention_mask):
        from transformers.masking_utils import create_bidirectional_mask

        return create_bidirectional_mask(config=self.bert.config, inputs_embeds=hidden, attention_mask=attention_mask)

    def _frozen_layers(self, input_ids, attention_mask) -> tuple[torch.Tensor, torch.Tensor]:
        """Embeddings and the frozen layers below the trained ones, and the attention mask made
        on the way."""
        bert = self.bert
        hidden = bert.embeddings(input_ids=input_ids)
        mask = self._mask(hidden, attention_mask)
        return _run_layers(bert.encoder.layer[:self.config.trained_layers[0]], hidden, mask), mask

    # training caches the frozen layers' output and runs only the trained ones; ensemble members share it
    def layer_input(self, input_ids, attention_mask) -> torch.Tensor:
        """The hidden states entering the first trained layer (frozen: cacheable)."""
        return self._frozen_layers(input_ids, attention_mask)[0]

    def run_trained_layers(self, hidden, attention_mask) -> torch.Tensor:
        return _run_layers(self.bert.encoder.layer[self.config.trained_layers[0]:], hidden, self._mask(hidden, attention_mask))

    def forward(self, attention_mask, input_ids=None, layer_input=None, labels=None, word_labels=None, opinion_labels=None) -> dict:
        """Logits, and with ``labels`` the loss: sentence cross-entropy, plus the weighted word
        loss over positions whose ``word_labels`` is not -100, plus (with an opinion head) the
        weighted opinion loss over rows whose ``opinion_labels`` is not -100. An ensemble
        (``members`` > 1, inference only) averages its members' sentence and word logits."""
        opinion_logits = None
        if getattr(self, "members", None) is not None:
            if layer_input is None:
                shared, mask = self._frozen_layers(input_ids, attention_mask)
            else:
                shared, mask = layer_input, self._mask(layer_input, attention_mask)
            outs = [member(shared, mask, attention_mask) for member in self.members]
            logits = torch.stack([o[0] for o in outs]).mean(0)
            word_logits = torch.stack([o[1] for o in outs]).mean(0)
        else:
            if layer_input is not None:
                hidden = self.run_trained_layers(layer_input, attention_mask)
            else:
                hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            pooled, word_logits = _pool(self.word_head, hidden, attention_mask)
            logits = self.sentence_head(pooled)
            if hasattr(self, "opinion_head"):
                opinion_logits = self.opinion_head(pooled)
        out = {"logits": logits, "word_logits": word_logits}
        if labels is not None:
            loss = nn.functional.cross_entropy(logits, labels)
            if word_labels is not None and (word_labels != -100).any():
                keep = word_labels != -100
                word_loss = nn.functional.binary_cross_entropy_with_logits(word_logits[keep], word_labels[keep].float())
                loss = loss + self.config.word_loss_weight * word_loss
            if opinion_logits is not None and opinion_labels is not None and (opinion_labels != -100).any():
                opinion_loss = nn.functional.cross_entropy(opinion_logits, opinion_labels, ignore_index=-100)
                loss = loss + self.config.opinion_loss_weight * opinion_loss
            out["loss"] = loss
        return out

    # -- saving and loading ---------------------------------------------------------------------

    def trained_state_dict(self) -> dict[str, torch.Tensor]:
        """Only what training changed, as saved: ``lora.<linear>.A`` / ``.B`` and the heads
        (``member{i}.``-prefixed in an ensemble); never the encoder or the opinion head."""
        if self.encoder is None or not hasattr(self.encoder, "get_base_model"):  # the saved form
            state = {k: v for k, v in self.state_dict().items() if _SAVED_KEY.match(k)}
        else:
            state = {}
            for name, module in self.bert.named_modules():
                if hasattr(module, "lora_A") and "default" in getattr(module, "lora_A", {}):
                    state[f"lora.{name}.A"] = module.lora_A["default"].weight
                    state[f"lora.{name}.B"] = module.lora_B["default"].weight
            for name in ("word_head", "sentence_head"):
                state.update({f"{name}.{k}": v for k, v in getattr(self, name).state_dict().items()})
        return {k: v.detach().clone().contiguous() for k, v in state.items()}

    def load_trained_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Load :meth:`trained_state_dict` output: into the LoRA layers when training, else
        folded into the encoder's weights (``W += B @ A * alpha / r``)."""
        _load_trained(self.bert, self.word_head, self.sentence_head, state, self.config)

    def save_pretrained(self, save_directory, *args, **kwargs):
        """``PreTrainedModel.save_pretrained`` of :meth:`trained_state_dict` in float16 (loading
        casts back to float32; on SG1 no sentence's label changes and probabilities move by less
        than 1e-4): the encoder is never written, it comes from its source."""
        if self.config.members != 1 and self.encoder is not None and hasattr(self.encoder, "get_base_model"):
            raise ValueError("a model built for training is one member: save an ensemble through SentenceBiasModel.ensemble")
        kwargs.setdefault("state_dict", {k: v.half() for k, v in self.trained_state_dict().items()})
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
        """``PreTrainedModel.from_pretrained`` (a folder or a Hub repo, ``revision=``, …) of the
        saved form; then the encoder comes from its source with the LoRA deltas folded in (each
        member's into its own copy of the trained layers), prepared as ``config.json`` says
        (``inference_precision``). Config fields given as keyword arguments
        override the file's: ``inference_precision="float32"`` is the exact float32 path."""
        kwargs.setdefault("adapter", False)
        loaded = super().from_pretrained(*args, **kwargs)
        model = loaded[0] if isinstance(loaded, tuple) else loaded
        source = args[0] if args else kwargs.get("pretrained_model_name_or_path")
        model._attach_encoder(calibration=lambda: calibration_sentences(source, kwargs.get("revision")))
        return loaded

    def _attach_encoder(self, calibration: Callable[[], list[str] | None] | None = None) -> None:
        from transformers import AutoModel

        state = {k: v.detach().clone() for k, v in self.state_dict().items()}
        bert = AutoModel.from_pretrained(resolve_model_path(self.config.encoder))
        bert.requires_grad_(False)
        self.encoder = bert.to(self.device)
        if self.config.members == 1:
            self.load_trained_state_dict(state)
        else:
            self._build_members([getattr(self, f"member{i}") for i in range(self.config.members)])
        self.eval()
        onnx = self.config.inference_runtime == "onnxruntime"
        if self.config.inference_precision == "int8" and not onnx:
            self._quantize_int8()
        sentences = None
        if onnx and self.config.inference_precision == "int8":
            sentences = calibration() if calibration is not None else None
            if not sentences:
                raise ValueError(f"inference_precision int8 on onnxruntime needs the checkpoint's {CALIBRATION_FILE} (written by "
                                 "vilbias train sentence); load it with inference_precision='float32' instead")
        self._session = onnx_session(self, sentences) if onnx else None
        # ONNX Runtime releases the GIL for a whole pass, so its slices run side by side, one core
        # each (on this encoder's small matrices that beats one pass on all cores); torch keeps
        # its own intra-op threads.
        self.passes_at_once = torch.get_num_threads() if self._session is not None else 1
        self._workers = (ThreadPoolExecutor(self.passes_at_once, thread_name_prefix="vilbias-sentence-pass")
                         if self.passes_at_once > 1 else None)
        self._cache = SentenceCache()

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

    def _build_members(self, saved: list[nn.Module]) -> None:
        """Inference ensemble: per member, a copy of the trained layers with its LoRA deltas
        folded in, and its heads; the frozen layers below stay shared."""
        first = self.config.trained_layers[0]
        bert = self.bert
        members = []
        for one in saved:
            state = {k: v.detach().clone() for k, v in one.state_dict().items()}
            scratch = nn.Module()  # named like the encoder, so the saved keys address it
            scratch.encoder = nn.Module()
            scratch.encoder.layer = nn.ModuleList([nn.Identity()] * first + [copy.deepcopy(m) for m in bert.encoder.layer[first:]])
            member = _Member(scratch.encoder.layer[first:], one.word_head, one.sentence_head)
            _load_trained(scratch, member.word_head, member.sentence_head, state, self.config)
            members.append(member)
        self.members = nn.ModuleList(members)
        # the encoder's own trained layers are unused from here on
        bert.encoder.layer = bert.encoder.layer[:first]

    # -- inference ------------------------------------------------------------------------------

    @torch.inference_mode()
    def sentence_logits(self, sentences: Sequence[str], batch_size: int = 16):
        """Raw sentence logits ``(N, 2)`` and, per sentence, ``(token offsets, word
        probabilities)``; sentences are batched by length so padding stays small (one pass over
        the distinct sentences, in length-sorted slices of at most ``batch_size``). A loaded
        model answers a sentence it has scored before from its cache (:class:`SentenceCache`),
        and on ONNX Runtime runs its slices on every worker at once (one core each)."""
        self.eval()
        logits = torch.zeros(len(sentences), len(self.config.labels))
        words: list = [None] * len(sentences)
        cache: SentenceCache | None = getattr(self, "_cache", None)
        first: dict[str, int] = {}  # each distinct sentence still to score -> its first position
        for i, text in enumerate(sentences):
            hit = cache.get(text) if cache is not None else None
            if hit is not None:
                logits[i], words[i] = hit
            elif text not in first:
                first[text] = i
        order = sorted(first.values(), key=lambda i: len(sentences[i]))
        workers = getattr(self, "_workers", None)
        size = batch_size if workers is None else max(1, min(batch_size, -(-len(order) // self.passes_at_once)))
        slices = [order[start:start + size] for start in range(0, len(order), size)]
        encoded = [self.tokenizer([sentences[i] for i in idx], truncation=True, max_length=self.config.max_length,
                                  padding=True, return_tensors="pt", return_offsets_mapping=True) for idx in slices]
        runs = (workers.map(self._pass_encoded, encoded) if workers is not None and len(slices) > 1
                else map(self._pass_encoded, encoded))
        for idx, enc, (out_logits, word_logits) in zip(slices, encoded, runs, strict=True):
            logits[idx] = out_logits.float()
            word_probs = word_logits.float().sigmoid()
            for row, i in enumerate(idx):
                n = int(enc["attention_mask"][row].sum())
                words[i] = (enc["offset_mapping"][row, :n].tolist(), word_probs[row, :n].tolist())
                if cache is not None:
                    cache.put(sentences[i], logits[i].clone(), words[i])
        for i, text in enumerate(sentences):  # repeats of a sentence scored in this call
            if words[i] is None:
                logits[i], words[i] = logits[first[text]], words[first[text]]
        return logits, words

    def _pass_encoded(self, enc) -> tuple[torch.Tensor, torch.Tensor]:
        return self._pass(enc["input_ids"], enc["attention_mask"])

    def _pass(self, input_ids, attention_mask) -> tuple[torch.Tensor, torch.Tensor]:
        """Sentence and word logits of one batch, by the runtime the config names."""
        session = getattr(self, "_session", None)
        if session is None:
            out = self(attention_mask=attention_mask, input_ids=input_ids)
            return out["logits"], out["word_logits"]
        logits, word_logits = session.run(None, {"input_ids": input_ids.numpy(), "attention_mask": attention_mask.numpy()})
        return torch.from_numpy(logits), torch.from_numpy(word_logits)

    def score_sentences(self, sentences: Sequence[str], batch_size: int = 16) -> list[SentenceScore]:
        """Calibrated probability and marked words of every sentence (one pass)."""
        logits, words = self.sentence_logits(sentences, batch_size)
        probs = biased_probability(logits, self.config.temperature).tolist()
        return [SentenceScore(text, p, marked_words(text, *w, threshold=self.config.word_threshold))
                for text, p, w in zip(sentences, probs, words, strict=True)]

    def score_article(self, sentences: Sequence[str], batch_size: int = 16) -> ArticleScore:
        """The article's label and probability from its sentences by ``config.article_rule``."""
        if not sentences:
            raise ValueError("score_article needs at least one sentence")
        scored = self.score_sentences(sentences, batch_size)
        return article_score(scored, self.config.article_rule)


class _Member(nn.Module):
    """One ensemble member at inference: its trained layers (LoRA folded in) and heads."""

    def __init__(self, layers: nn.ModuleList, word_head: nn.Module, sentence_head: nn.Module):
        super().__init__()
        self.layers, self.word_head, self.sentence_head = layers, word_head, sentence_head

    def forward(self, hidden, mask, attention_mask) -> tuple[torch.Tensor, torch.Tensor]:
        return _heads(self.word_head, self.sentence_head, _run_layers(self.layers, hidden, mask), attention_mask)


def _run_layers(layers, hidden, mask) -> torch.Tensor:
    for layer in layers:
        out = layer(hidden, attention_mask=mask)
        hidden = out[0] if isinstance(out, tuple) else out
    return hidden


def _pool(word_head, hidden, attention_mask) -> tuple[torch.Tensor, torch.Tensor]:
    """The pooled vector (mean of the token states, and their mean weighted by the word head's
    scores) and the word logits (padding at -inf)."""
    mask = attention_mask.bool()
    word_logits = word_head(hidden).squeeze(-1).masked_fill(~mask, float("-inf"))
    weights = word_logits.softmax(-1).unsqueeze(-1)
    return torch.cat([mean_pool(hidden, attention_mask), (weights * hidden).sum(1)], dim=-1), word_logits


def _heads(word_head, sentence_head, hidden, attention_mask) -> tuple[torch.Tensor, torch.Tensor]:
    pooled, word_logits = _pool(word_head, hidden, attention_mask)
    return sentence_head(pooled), word_logits


def _load_trained(bert, word_head, sentence_head, state: dict[str, torch.Tensor], config: SentenceBiasConfig) -> None:
    """Put one member's saved weights into ``bert``'s LoRA layers (training) or fold them into
    its linear weights (inference), and into the heads."""
    scale = config.lora_alpha / config.lora_r
    pattern = re.compile(lora_target_pattern(config.trained_layers))
    targets = {n for n, m in bert.named_modules() if (isinstance(m, nn.Linear) or hasattr(m, "lora_A")) and pattern.fullmatch(n)}
    found = {k[len("lora."):-len(".A")] for k in state if k.startswith("lora.") and k.endswith(".A")}
    if found != targets:
        raise ValueError(f"adapter weights do not match the config: missing {sorted(targets - found)[:3]}, "
                         f"unexpected {sorted(found - targets)[:3]}")
    with torch.no_grad():
        for name in found:
            a, b = state[f"lora.{name}.A"], state[f"lora.{name}.B"]
            module = bert.get_submodule(name)
            if hasattr(module, "lora_A"):
                module.lora_A["default"].weight.copy_(a)
                module.lora_B["default"].weight.copy_(b)
            else:
                module.weight += (b.float() @ a.float()) * scale
    for name, head in (("word_head", word_head), ("sentence_head", sentence_head)):
        head.load_state_dict({k.removeprefix(f"{name}."): v for k, v in state.items() if k.startswith(f"{name}.")})


def article_score(sentences: list[SentenceScore], rule: ArticleRule) -> ArticleScore:
    probs = [s.probability for s in sentences]
    value = rule.value(probs)
    label = BIASED_NAME if value >= rule.threshold else NOT_BIASED_NAME
    return ArticleScore(label, rule.probability(probs), value, rule, sentences)


_WORD_CHAR = re.compile(r"\w")


def word_spans(text: str, offsets: list[tuple[int, int]], token_probs: list[float]) -> list[WordScore]:
    """Tokens merged into whitespace-delimited words (a word's probability is its highest
    token's); special tokens (empty offsets) and words without a letter or digit are skipped."""
    spans: list[list] = []
    for (start, end), p in zip(offsets, token_probs, strict=True):
        if end <= start:
            continue
        if spans and start == spans[-1][1]:
            spans[-1][1], spans[-1][2] = end, max(spans[-1][2], p)
        else:
            spans.append([start, end, p])
    out = []
    for start, end, p in spans:
        word = text[start:end].strip(".,;:!?\"'“”‘’()[]")
        if word and _WORD_CHAR.search(word):
            lead = text[start:end].find(word)
            out.append(WordScore(word, start + lead, start + lead + len(word), p))
    return out


def marked_words(text: str, offsets, token_probs, *, threshold: float) -> list[WordScore]:
    return [w for w in word_spans(text, offsets, token_probs) if w.probability >= threshold]
