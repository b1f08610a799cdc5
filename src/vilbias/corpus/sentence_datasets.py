"""The published sentence datasets vilbias recognises — BABE and MBIB — and what their publishers
state about them: the Hub id a corpus built from them names, the licence id for its card, their
terms (with where they are stated) and their citation. A corpus or model card credits a dataset
only when the data is that dataset (:func:`recognise_layout`): a file of one's own is credited to
nobody (:data:`OWN_DATA_TERMS`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


def recognise_layout(source: str | Path, columns: list[str]) -> str | None:
    """``"babe"`` or ``"mbib"`` when the data is BABE or an MBIB task (from the Hub id, or from BABE's
    own columns: ``biased_words`` with ``news_link`` and ``label_opinion``), else None: a file of
    one's own is credited to nobody."""
    name = str(source).split("@")[0].lower()
    if name in KNOWN_SOURCES:
        return KNOWN_SOURCES[name]
    lower = {c.strip().lower() for c in columns}
    if {"biased_words", "news_link", "label_opinion"} <= lower and ({"label_bias", "label"} & lower):
        return "babe"
    return None


@dataclass(frozen=True)
class SentenceDataset:
    """A published sentence dataset vilbias recognises, and what its publishers state about it."""

    name: str
    hub_id: str
    license: str
    """The Hub's ``license:`` id for a corpus built from it (``unknown`` where the publishers state none)."""
    terms: str
    """What the publishers state for the data, and where (one text for every card and doc)."""
    citation: str


BABE_TERMS = (
    "BABE's publishers (the Media Bias Group) state no licence for its data: the Hub card of "
    "`mediabiasgroup/BABE` (huggingface.co/datasets/mediabiasgroup/BABE) declares none, and the README of the repository "
    "that publishes the CSV files (github.com/Media-Bias-Group/Neural-Media-Bias-Detection-Using-Distant-Supervision-With-BABE) "
    "gives no terms for them. The group's MBIB, which redistributes BABE, states CC BY-NC-ND 4.0 on its Hub card "
    "(huggingface.co/datasets/mediabiasgroup/mbib-base). The sentences remain their outlets' text. Until the publishers "
    "state terms, use BABE for non-commercial research and cite the BABE paper."
)
"""BABE's terms as its publishers state them (checked 2026-11): the model card, the sentence corpus's
card and ``docs/classifiers.md`` all say this (a test keeps them equal)."""


BABE_CITATION = """@inproceedings{spinde2021babe,
  title     = {Neural Media Bias Detection Using Distant Supervision With {BABE} -- Bias Annotations By Experts},
  author    = {Spinde, Timo and Plank, Manuel and Krieger, Jan-David and Ruas, Terry and Gipp, Bela and Aizawa, Akiko},
  booktitle = {Findings of the Association for Computational Linguistics: EMNLP 2021},
  year      = {2021},
  pages     = {1166--1177},
  doi       = {10.18653/v1/2021.findings-emnlp.101}
}"""


MBIB_TERMS = (
    "MBIB's publishers (the Media Bias Group) state CC BY-NC-ND 4.0 on its Hub card "
    "(huggingface.co/datasets/mediabiasgroup/mbib-base): attribution, non-commercial, no derivatives. Each task "
    "aggregates earlier datasets whose own terms also apply."
)


MBIB_CITATION = """@inproceedings{wessel2023mbib,
  title     = {Introducing {MBIB} -- the First Media Bias Identification Benchmark Task and Dataset Collection},
  author    = {Wessel, Martin and Horych, Tom{\'a}{\v{s}} and Ruas, Terry and Aizawa, Akiko and Gipp, Bela and Spinde, Timo},
  booktitle = {Proceedings of the 46th International ACM SIGIR Conference on Research and Development in Information Retrieval},
  year      = {2023},
  doi       = {10.1145/3539618.3591882}
}"""


DATASETS = {
    "babe": SentenceDataset("BABE (Spinde et al., 2021)", "mediabiasgroup/BABE", "unknown", BABE_TERMS, BABE_CITATION),
    "mbib": SentenceDataset("MBIB (Wessel et al., 2023)", "mediabiasgroup/mbib-base", "cc-by-nc-nd-4.0", MBIB_TERMS, MBIB_CITATION),
}


KNOWN_SOURCES = {d.hub_id.lower(): key for key, d in DATASETS.items()}
"""Hub ids whose data is known by name: ``mediabiasgroup/babe`` -> ``babe``."""


OWN_DATA_TERMS = ("These sentences are not a dataset vilbias recognises: their terms are their owner's, and this card "
                  "credits nobody for them.")
