"""The sentence model's data: BABE rows as cached examples (the frozen layers' output computed once,
BABE's biased words aligned to tokens as word labels), distant rows and batches grouped by length
(the splits are the corpus's own: :func:`vilbias.corpus.sentences.corpus_splits`)."""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from pathlib import Path

from vilbias.training.distant import drop_held_out, read_distant, read_outlet_labels

from vilbias.models.sentence_bias import (
    OPINIONS,
)

PUNCTUATION = ".,;:!?\"'“”‘’()[]"


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
    marked = {w.strip(PUNCTUATION).lower() for entry in biased_words for w in entry.split()} - {""}
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
        out.append(int(text[start:end].strip(PUNCTUATION).lower() in marked))
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


def cache_distant(model, dataset: str, outlet_labels: str | Path | None = None) -> tuple[dict[str, Example], dict]:
    """The distant corpus ``dataset`` (labelled by ``outlet_labels``, a YAML/JSON map of outlets,
    when given) through the frozen layers, without word supervision (an outlet's label says
    nothing about which words are loaded), and the counts of what was read and left out."""
    outlets = read_outlet_labels(outlet_labels) if outlet_labels else None
    rows, counts = read_distant(dataset, outlets)
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


def length_grouped_batches(items: list, batch_size: int, rng: random.Random, key=None) -> list[list]:
    """Shuffled batches of similar-length items (sorted within chunks of 50 batches); ``key``
    gives an item's length (default: an :class:`Example`'s token count)."""
    key = key or (lambda e: e.layer_input.shape[0])
    order = items[:]
    rng.shuffle(order)
    chunk = 50 * batch_size
    batches = []
    for start in range(0, len(order), chunk):
        part = sorted(order[start:start + chunk], key=key)
        batches += [part[i:i + batch_size] for i in range(0, len(part), batch_size)]
    rng.shuffle(batches)
    return batches
