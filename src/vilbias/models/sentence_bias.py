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

Saved as ``config.json`` (:class:`SentenceBiasConfig`) and ``model.safetensors`` holding only
the LoRA weights and the two heads (about a megabyte per ensemble member, keys prefixed
``member{i}.`` when there are several); the encoder comes from its package.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from vilbias.models.fusion import MINILM, mean_pool, resolve_model_path
from vilbias.task import BIASED_NAME, LABEL_NAMES, NOT_BIASED_NAME, biased_probability

# transformers, peft and safetensors are imported inside the methods that need them; peft only
# for training (serving folds the adapter into the encoder).

MODEL_TYPE = "vilbias-sentence-bias"
SENTENCE_FLAG = 0.5
"""A sentence whose calibrated probability of being biased is at least this is *flagged*."""
WEIGHTS = "model.safetensors"
OPINIONS = ("Entirely factual", "Somewhat factual but also opinionated", "Expresses writer's opinion")
"""BABE's ``label_opinion`` values (its ``No agreement`` is no label), apostrophes straightened."""
CONFIG = "config.json"


# -- configuration and the article rule ---------------------------------------------------------


@dataclass
class ArticleRule:
    """How an article's label follows from its sentences' probabilities.

    ``statistic`` is one of :data:`STATISTICS`; the article is biased when it reaches
    ``threshold``, and its probability of being biased is ``sigmoid(slope * (statistic -
    threshold))`` (so the label and the confidence can never disagree). All three are fitted on
    validation data by the training script.
    """

    statistic: str = "share"
    threshold: float = 0.5
    slope: float = 10.0

    def __post_init__(self):
        if self.statistic not in STATISTICS:
            raise ValueError(f"article rule statistic must be one of {sorted(STATISTICS)}, got {self.statistic!r}")

    def value(self, probabilities: Sequence[float]) -> float:
        return STATISTICS[self.statistic](list(probabilities)) if probabilities else 0.0

    def probability(self, probabilities: Sequence[float]) -> float:
        z = self.slope * (self.value(probabilities) - self.threshold)
        return 1.0 / (1.0 + math.exp(-max(min(z, 50.0), -50.0)))

    def describe(self) -> str:
        """The rule in words, for the UI and the model card."""
        t = f"{self.threshold:.0%}"
        return {
            "share": f"biased when at least {t} of its sentences are flagged (probability ≥ {SENTENCE_FLAG:.0%})",
            "mean": f"biased when its sentences' mean probability of being biased is at least {t}",
            "max": f"biased when its most biased sentence scores at least {t}",
            "top3_mean": f"biased when its three most biased sentences average at least {t}",
        }[self.statistic]


def _top3_mean(p: list[float]) -> float:
    top = sorted(p, reverse=True)[:3]
    return sum(top) / len(top)


STATISTICS = {
    "share": lambda p: sum(v >= SENTENCE_FLAG for v in p) / len(p),
    "mean": lambda p: sum(p) / len(p),
    "max": max,
    "top3_mean": _top3_mean,
}
"""Candidate article statistics over sentence probabilities; training picks one on validation data."""


@dataclass
class SentenceBiasConfig:
    """What ``config.json`` holds: the architecture, and what training fitted on held-out data."""

    encoder: str = MINILM
    """Text encoder (the packaged all-MiniLM-L6-v2 by default), loaded from its source, never saved."""
    trained_layers: list[int] = field(default_factory=lambda: [2, 3, 4, 5])
    """Encoder layers that carry the LoRA adapter; the layers below stay frozen, so training can
    cache their output once instead of recomputing it every epoch."""
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.1
    word_hidden: int = 256
    """Width of the word head's hidden layer."""
    dropout: float = 0.1
    word_loss_weight: float = 0.5
    """Weight of the word loss (BABE's biased words) next to the sentence loss."""
    opinion_loss_weight: float = 0.0
    """Weight of an auxiliary training loss on BABE's ``label_opinion`` (factual / somewhat
    factual but opinionated / the writer's opinion), read from the same pooled vector as the
    sentence head; 0 = no opinion head. The head only shapes training: it is not saved."""
    max_length: int = 128
    """Tokens per sentence (BABE's longest sentence is about 130 tokens; longer ones are cut)."""
    temperature: float = 1.0
    """Sentence-logit temperature fitted by NLL on held-out labels (1.0 = not calibrated)."""
    word_threshold: float = 0.5
    """A word is marked when its probability is at least this (fitted on validation words)."""
    members: int = 1
    """Ensemble members: adapters and heads trained alike from different seeds, run over the
    shared frozen layers; their sentence and word logits are averaged."""
    article_rule: ArticleRule = field(default_factory=ArticleRule)
    labels: list[str] = field(default_factory=lambda: list(LABEL_NAMES))
    model_type: str = MODEL_TYPE

    def save(self, folder: str | Path) -> None:
        Path(folder, CONFIG).write_text(json.dumps(dataclasses.asdict(self), indent=2) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, folder: str | Path) -> SentenceBiasConfig:
        data = json.loads(Path(folder, CONFIG).read_text(encoding="utf-8"))
        if data.get("model_type") != MODEL_TYPE:
            raise ValueError(f"{folder} is not a sentence-bias model (model_type {data.get('model_type')!r})")
        data["article_rule"] = ArticleRule(**data.get("article_rule", {}))
        return cls(**data)


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


class SentenceBiasModel(nn.Module):
    """MiniLM (+ LoRA on ``config.trained_layers``) → word head and sentence head.

    Built for training (``adapter=True``: peft's LoRA layers, only they and the heads train) or,
    by :meth:`from_pretrained`, for inference: the saved LoRA deltas folded into a plain
    encoder, so serving needs neither peft nor any adapter overhead.
    """

    def __init__(self, config: SentenceBiasConfig, *, adapter: bool = True):
        super().__init__()
        from transformers import AutoModel, AutoTokenizer

        self.config = config
        path = resolve_model_path(config.encoder)
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        bert = AutoModel.from_pretrained(path)
        bert.requires_grad_(False)
        if adapter:
            from peft import LoraConfig, get_peft_model

            lora = LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha, lora_dropout=config.lora_dropout,
                              target_modules=lora_target_pattern(config.trained_layers))
            bert = get_peft_model(bert, lora)
        self.encoder = bert
        hidden = self.bert.config.hidden_size
        self.word_head = nn.Sequential(nn.Dropout(config.dropout), nn.Linear(hidden, config.word_hidden), nn.GELU(),
                                       nn.Linear(config.word_hidden, 1))
        self.sentence_head = nn.Sequential(nn.Dropout(config.dropout), nn.Linear(2 * hidden, len(config.labels)))
        if adapter and config.opinion_loss_weight > 0:
            self.opinion_head = nn.Sequential(nn.Dropout(config.dropout), nn.Linear(2 * hidden, len(OPINIONS)))

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

    # -- saving ---------------------------------------------------------------------------------

    def trained_state_dict(self) -> dict[str, torch.Tensor]:
        """Only what training changed, as saved: ``lora.<linear>.A`` / ``.B`` and the heads."""
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

    def _build_members(self, states: list[dict[str, torch.Tensor]]) -> None:
        """Inference ensemble: per member, a copy of the trained layers with its LoRA deltas
        folded in, and its heads; the frozen layers below stay shared."""
        first = self.config.trained_layers[0]
        bert = self.bert
        members = []
        for state in states:
            scratch = nn.Module()  # named like the encoder, so the saved keys address it
            scratch.encoder = nn.Module()
            scratch.encoder.layer = nn.ModuleList([nn.Identity()] * first + [copy.deepcopy(m) for m in bert.encoder.layer[first:]])
            member = _Member(scratch.encoder.layer[first:], copy.deepcopy(self.word_head), copy.deepcopy(self.sentence_head))
            _load_trained(scratch, member.word_head, member.sentence_head, state, self.config)
            members.append(member)
        self.members = nn.ModuleList(members)
        # the encoder's own trained layers and heads are unused from here on
        bert.encoder.layer = bert.encoder.layer[:first]

    def save_pretrained(self, folder: str | Path) -> None:
        save_members([self], folder, self.config)

    @classmethod
    def from_pretrained(cls, folder: str | Path) -> SentenceBiasModel:
        """Load a saved model for inference: the encoder from its package with the LoRA
        deltas folded in (each member's into its own copy of the trained layers), the heads
        from ``folder``."""
        from safetensors.torch import load_file

        weights = Path(folder, WEIGHTS)
        if not weights.is_file():
            raise FileNotFoundError(f"{weights} not found: is {folder} a saved sentence-bias model?")
        config = SentenceBiasConfig.load(folder)
        model = cls(config, adapter=False)
        state = load_file(str(weights))
        if config.members == 1:
            model.load_trained_state_dict(state)
        else:
            states = [{k.split(".", 1)[1]: v for k, v in state.items() if k.split(".", 1)[0] == f"member{i}"}
                      for i in range(config.members)]
            if any(not st for st in states) or sum(map(len, states)) != len(state):
                raise ValueError(f"{weights} does not hold the {config.members} members config.json names")
            model._build_members(states)
        return model.eval()

    # -- inference ------------------------------------------------------------------------------

    @torch.inference_mode()
    def sentence_logits(self, sentences: Sequence[str], batch_size: int = 16):
        """Raw sentence logits ``(N, 2)`` and, per sentence, ``(token offsets, word
        probabilities)``; sentences are batched by length so padding stays small (one pass over
        the article, in length-sorted slices of ``batch_size``)."""
        self.eval()
        order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
        logits = torch.zeros(len(sentences), len(self.config.labels))
        words: list = [None] * len(sentences)
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            enc = self.tokenizer([sentences[i] for i in idx], truncation=True, max_length=self.config.max_length,
                                 padding=True, return_tensors="pt", return_offsets_mapping=True)
            offsets = enc.pop("offset_mapping")
            out = self(attention_mask=enc["attention_mask"], input_ids=enc["input_ids"])
            logits[idx] = out["logits"].float()
            word_probs = out["word_logits"].float().sigmoid()
            for row, i in enumerate(idx):
                n = int(enc["attention_mask"][row].sum())
                words[i] = (offsets[row, :n].tolist(), word_probs[row, :n].tolist())
        return logits, words

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


def save_members(models: Sequence[SentenceBiasModel], folder: str | Path, config: SentenceBiasConfig) -> None:
    """Save one model, or several trained alike (an ensemble), as one folder: ``config`` with
    ``members`` set, and every member's adapter and heads in one float16 safetensors file."""
    from safetensors.torch import save_file

    if not models:
        raise ValueError("save_members needs at least one model")
    config = dataclasses.replace(config, members=len(models))
    Path(folder).mkdir(parents=True, exist_ok=True)
    config.save(folder)
    # float16 on disk halves the file; loading casts back to float32 (on SG1 no sentence's label
    # changes and probabilities move by less than 1e-4)
    states = [{k: v.half() for k, v in m.trained_state_dict().items()} for m in models]
    state = states[0] if len(states) == 1 else {f"member{i}.{k}": v for i, st in enumerate(states) for k, v in st.items()}
    save_file(state, str(Path(folder, WEIGHTS)), metadata={"format": "pt"})


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
