"""The published layouts of NewsMediaBias-Plus / ViLBias, one declarative table each.

A layout says which source column fills which corpus field, how the source's label strings map
to ``biased`` / ``not_biased``, and the release's licence and citation. :func:`resolve_layout`
recognises a preset from the columns a source has (``--preset`` forces one), applies
``--column TARGET=SOURCE`` and ``--label-map`` on top, and fails in one line — listing the
columns found and the flags that would map them — when the table matches nothing.

The label mapping is a *documented default*. The NewsMediaBias-Plus cards describe their labels
as how likely an item is to be disinformation; the ViLBias paper reads the positive class as
biased (directional framing). The import maps the positive string to ``biased`` and keeps the
string itself, verbatim, in ``source_label`` (and ``source_text_label``), and the card states
the mapping, so neither reading is lost.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vilbias.loading_script.schema import import_targets
from vilbias.task import ANSWER_LABELS, BIASED_NAME, LABEL_NAMES, NOT_BIASED_NAME

REQUIRED = ("unique_id", "image", "multimodal_label")
"""The corpus fields every import maps (the targets, ``--column TARGET=SOURCE``, are the columns
:mod:`vilbias.loading_script.schema` declares with a ``target``: :func:`~vilbias.loading_script.schema.import_targets`)."""

_NMB_CITATION = """@dataset{newsmediabias_plus_2024,
  title     = {NewsMediaBias-Plus: A Multimodal Dataset for Analyzing Media Bias and Disinformation},
  author    = {Raza, Shaina and others},
  publisher = {Zenodo},
  year      = {2024},
  doi       = {10.5281/zenodo.13961155}
}"""
_VILBIAS_CITATION = """@misc{raza2024vilbias,
  title  = {ViLBias: A Framework for Bias Detection using Linguistic and Visual Cues},
  author = {Raza, Shaina and Saleh, Caesar and Hasan, Emrul and Ogidi, Franklin and Powers, Maximus and Chatrath, Veronica and Lotif, Marcelo and Javed, Roya and Zahid, Muskan and Fatemi, Mohammad Ali and Radwan, Ali and Zaki, Arshia and Dolatabadi, Elham},
  year   = {2024},
  eprint = {2412.17052},
  archivePrefix = {arXiv}
}"""
_DISINFORMATION_READING = (
    "The release's card describes its labels as how likely the item is to be disinformation; the "
    "ViLBias paper reads the positive class as *biased* (directional framing). vilbias maps the "
    "positive label to `biased` as a documented default and keeps the source's string verbatim in "
    "`source_label` / `source_text_label`."
)


@dataclass(frozen=True)
class Preset:
    """One published layout."""

    name: str
    title: str
    columns: dict[str, str]
    """corpus field -> source column."""
    signature: frozenset[str]
    """Columns that identify the layout (all must be present)."""
    label_map: dict[str, str]
    """source label string -> ``biased`` / ``not_biased``."""
    license: str | None
    """SPDX-style licence id as the Hub spells it (``cc-by-nc-2.0``)."""
    license_note: str
    citation: str
    label_meaning: str
    where: str


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            name="nmb-plus-v1",
            title="NewsMediaBias-Plus v1 (2024; Zenodo record 13961155 and the Hub card of late 2024)",
            columns={
                "unique_id": "unique_id", "outlet": "outlet", "headline": "headline", "article_text": "article_text",
                "image_caption": "image_description", "image": "image", "published": "date_published",
                "url": "canonical_link", "multimodal_label": "multimodal_label", "text_label": "text_label",
            },
            signature=frozenset({"unique_id", "image_description", "canonical_link", "date_published", "multimodal_label", "text_label"}),
            label_map={"Likely": BIASED_NAME, "Unlikely": NOT_BIASED_NAME},
            license="cc-by-nc-4.0",
            license_note="CC BY-NC 4.0 as the Zenodo record states; article text and images remain their publishers'.",
            citation=_NMB_CITATION,
            label_meaning=_DISINFORMATION_READING,
            where="https://zenodo.org/records/13961155",
        ),
        Preset(
            name="nmb-plus-2025",
            title="NewsMediaBias-Plus, Hub release of 2025 (vector-institute/newsmediabias-plus, data/dataset_cleaned.parquet)",
            columns={
                "unique_id": "unique_id", "outlet": "outlet", "headline": "headline", "article_text": "article_text",
                "image_caption": "img_description", "image": "image", "url": "url",
                "multimodal_label": "nlp_img_label", "text_label": "nlp_label",
            },
            signature=frozenset({"unique_id", "img_description", "nlp_label", "nlp_img_label"}),
            label_map={"Likely to Bias": BIASED_NAME, "Likely to UnBias": NOT_BIASED_NAME},
            license="cc-by-nc-2.0",
            license_note="CC BY-NC 2.0 as the Hub card states (gated: accept its conditions on the dataset page).",
            citation=_NMB_CITATION,
            label_meaning=_DISINFORMATION_READING,
            where="https://huggingface.co/datasets/vector-institute/newsmediabias-plus",
        ),
        Preset(
            name="vilbias-paper",
            title="The ViLBias paper's release (Datasets/dataset.zip in shainarazavi/VILBias; images on request)",
            columns={
                "unique_id": "unique_id", "headline": "headline", "url": "url", "article_text": "article_text",
                "image": "image", "multimodal_label": "multimodal_label", "reasoning": "reasoning",
            },
            signature=frozenset({"unique_id", "url", "multimodal_label", "reasoning"}),
            label_map={"Biased": BIASED_NAME, "Not Biased": NOT_BIASED_NAME},
            license="cc-by-nd-4.0",
            license_note="CC BY-ND 4.0 as the paper's repository states: no derivatives may be shared without the authors' permission.",
            citation=_VILBIAS_CITATION,
            label_meaning="The paper's own labels: `Biased` -> `biased`, `Not Biased` -> `not_biased` (the string is kept in `source_label`).",
            where="https://github.com/shainarazavi/VILBias",
        ),
    )
}


@dataclass
class Layout:
    """How one source's records become corpus rows."""

    name: str
    """A preset's name, or ``custom``."""
    columns: dict[str, str]
    label_map: dict[str, int]
    """source label string, stripped and lower-cased -> class id."""
    label_map_spelled: dict[str, str]
    """The mapping as the user or the preset spelled it (for the card)."""
    license: str | None = None
    license_note: str = ""
    citation: str = ""
    label_meaning: str = ""
    title: str = ""
    overrides: dict[str, str] = field(default_factory=dict)
    """The ``--column`` mappings given."""


def parse_label_map(text: str) -> dict[str, str]:
    """``"Likely=biased,Unlikely=not_biased"`` -> ``{"Likely": "biased", "Unlikely": "not_biased"}``.

    Raises:
        ValueError: an entry without ``=`` or a target other than ``biased`` / ``not_biased``.
    """
    out = {}
    for entry in text.split(","):
        if not entry.strip():
            continue
        value, sep, target = entry.rpartition("=")
        target = target.strip().lower().replace(" ", "_")
        if not sep or not value.strip():
            raise ValueError(f"--label-map entry {entry.strip()!r} is not VALUE=biased or VALUE=not_biased")
        if target not in LABEL_NAMES:
            raise ValueError(f"--label-map entry {entry.strip()!r}: the target must be biased or not_biased")
        out[value.strip()] = target
    if not out:
        raise ValueError("--label-map is empty: give it as \"A=biased,B=not_biased\"")
    return out


def parse_columns(pairs: list[str]) -> dict[str, str]:
    """``["headline=title", ...]`` -> ``{"headline": "title"}``; the target must be a corpus field."""
    out = {}
    for pair in pairs:
        target, sep, source = pair.partition("=")
        target = target.strip()
        if not sep or not source.strip():
            raise ValueError(f"--column {pair!r} is not TARGET=SOURCE")
        if target not in (targets := import_targets()):
            raise ValueError(f"--column {pair!r}: {target!r} is not a corpus field; targets: {', '.join(targets)}")
        out[target] = source.strip()
    return out


def recognise(columns: list[str]) -> Preset | None:
    """The preset whose signature the columns carry (the most specific first), or None."""
    found = set(columns)
    for preset in PRESETS.values():
        if preset.signature <= found:
            return preset
    return None


def _unrecognised(source: str, columns: list[str], missing: list[str]) -> ValueError:
    presets = "; ".join(f"{p.name}: {', '.join(sorted(p.signature))}" for p in PRESETS.values())
    flags = " ".join(f"--column {t}=COLUMN" for t in missing)
    return ValueError(
        f"{source}: unrecognised layout (columns found: {', '.join(columns) or 'none'}); it matches no preset "
        f"({presets}) and leaves {', '.join(missing)} unmapped: map them with {flags} "
        "(and --column TARGET=COLUMN for any other field) --label-map \"A=biased,B=not_biased\", or force a layout with --preset NAME"
    )


def resolve_layout(
    source: str,
    columns: list[str],
    *,
    preset: str | None = None,
    column_args: list[str] | None = None,
    label_map: str | None = None,
    license: str | None = None,
) -> Layout:
    """The layout to import ``source`` with.

    A preset (forced or recognised) gives the mapping, labels, licence and citation;
    ``--column`` overrides single fields; without a preset, columns named like a corpus field map
    to it. ``--label-map`` replaces the preset's label map.

    Raises:
        ValueError: an unknown preset, a bad flag, a mapped column the source does not have, or a
            layout that leaves a required field unmapped (one line listing the columns found).
    """
    if preset is not None and preset not in PRESETS:
        raise ValueError(f"--preset {preset!r} is not one of {', '.join(PRESETS)}")
    chosen = PRESETS[preset] if preset else recognise(columns)
    overrides = parse_columns(column_args or [])
    if chosen is not None:
        mapping = {t: c for t, c in chosen.columns.items() if c in columns}
    else:
        lower = {c.lower(): c for c in columns}
        mapping = {t: lower[t] for t in import_targets() if t in lower}
    mapping.update(overrides)
    absent = sorted({c for c in overrides.values() if c not in columns})
    if absent:
        raise ValueError(f"{source}: --column names {', '.join(absent)}, which the source does not have (columns: {', '.join(columns)})")
    missing = [t for t in REQUIRED if t not in mapping]
    if "headline" not in mapping and "article_text" not in mapping:
        missing.append("headline")
    if missing:
        if chosen is not None and preset:
            raise ValueError(f"{source}: --preset {preset} needs columns {', '.join(chosen.columns[t] for t in missing if t in chosen.columns)} "
                             f"that the source lacks (columns: {', '.join(columns)}); map them with --column TARGET=SOURCE")
        raise _unrecognised(source, columns, missing)
    spelled = parse_label_map(label_map) if label_map else dict(chosen.label_map) if chosen else {n: n for n in LABEL_NAMES}
    if chosen is None and not label_map:
        spelled.update({ANSWER_LABELS[i]: name for i, name in enumerate(LABEL_NAMES)})
    return Layout(
        name=chosen.name if chosen else "custom",
        columns=mapping,
        label_map={k.strip().lower(): LABEL_NAMES.index(v) for k, v in spelled.items()},
        label_map_spelled=spelled,
        license=license or (chosen.license if chosen else None),
        license_note=(chosen.license_note if chosen and not license else ""),
        citation=chosen.citation if chosen else "",
        label_meaning=chosen.label_meaning if chosen else "",
        title=chosen.title if chosen else "a table of news items mapped with --column / --label-map",
        overrides=overrides,
    )


def restricted_license(license: str | None) -> list[str]:
    """What a licence id forbids: ``["derivatives"]``, ``["commercial use"]``, both, or []."""
    parts = (license or "").lower().replace("_", "-").split("-")
    return [what for code, what in (("nd", "derivatives"), ("nc", "commercial use")) if code in parts]
