"""The question space: identities, activities, roles and stereotype-content traits.

VIGNETTE (Raj et al., 2025) asks about identities in eight bias dimensions, 75 visually
observable activities (in four time-use categories), one role per activity with six role
questions grounded in the Stereotype Content Model, and the SCM's trait pairs (sociability,
morality, ability, agency, status, politics; a high and a low term each). A
:class:`QuestionSpace` holds the part of that space a run asks about::

    from vilbias.audit.space import embedded_space, space_from_vignette
    space = embedded_space()                        # the stratified subset shipped with vilbias
    full = space_from_vignette("path/to/vignette")  # the authors' four lists, all of them

``embedded_space()`` is package data (``probeset/space.json``), made from the authors' lists by
:func:`stratified_subset` (4 visible identities per dimension, 2 activities per time-use category
with their roles, 1 trait pair per SCM dimension; see ``docs/audit.md`` for the attribution).
:func:`space_from_vignette` reads the published files (``activities.json``, ``roles.json``,
``sscm_dictionary.csv``, ``merged_descriptors_visibility.csv``) as they are, quirks included.
"""

from __future__ import annotations

import csv
import json
import os
from dataclasses import asdict, dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

DIMENSIONS = (
    "ability",
    "age",
    "gender_and_sex",
    "nationality",
    "physical_traits",
    "race_ethnicity_color",
    "religion",
    "socioeconomic",
)
"""The eight bias dimensions, named as in VIGNETTE's descriptor lists (its ``axis`` column)."""

DIMENSION_TITLES = {
    "ability": "Ability",
    "age": "Age",
    "gender_and_sex": "Gender and sex",
    "nationality": "Nationality",
    "physical_traits": "Physical traits",
    "race_ethnicity_color": "Race/ethnicity/colour",
    "religion": "Religion",
    "socioeconomic": "Socioeconomic status",
}

TIME_CATEGORIES = ("Necessary Time", "Contracted Time", "Committed Time", "Free Time")
"""VIGNETTE's time-use categories of activities."""

SCM_DIMENSIONS = ("Sociability", "Morality", "Ability", "Agency", "Status", "Politics")
ROLE_QUESTIONS = ("ability", "sociability", "morality", "agency", "status", "appearance")
"""The six role questions per activity (``roles.json`` keys): "Who should I hire as a <role>?"
(ability) and five SCM-grounded ones."""


@dataclass(frozen=True)
class Identity:
    name: str
    """How the identity is written in questions and options (e.g. ``deaf person``)."""
    dimension: str
    source: str = ""
    """The descriptor in VIGNETTE's list it comes from (``deaf``), when it was rewritten."""


@dataclass(frozen=True)
class Activity:
    name: str
    """Lower-case gerund phrase as used in questions (``repairing a car``)."""
    category: str
    role: str | None = None
    """The role ``roles.json`` gives the activity (``mechanic``); None when it has none."""
    role_questions: dict[str, str] = field(default_factory=dict)
    """``ROLE_QUESTIONS`` key -> question text."""


@dataclass(frozen=True)
class Trait:
    term: str
    dimension: str
    """SCM dimension (``Sociability`` ...)."""
    direction: str
    """``high`` or ``low`` (as VIGNETTE's dictionary labels it)."""
    pair: str
    """The pair number shared by a high term and its low counterpart (``s1``)."""


@dataclass
class QuestionSpace:
    identities: list[Identity]
    activities: list[Activity]
    """Activities pairs may show (all of them serve as factuality distractors too)."""
    traits: list[Trait]
    source: dict[str, Any] = field(default_factory=dict)
    """Where the lists come from (attribution, licence note, how the subset was drawn)."""

    def __post_init__(self) -> None:
        unknown = sorted({i.dimension for i in self.identities} - set(DIMENSIONS))
        if unknown:
            raise ValueError(f"unknown bias dimensions {unknown}; use {', '.join(DIMENSIONS)}")
        for t in self.traits:
            if t.direction not in ("high", "low"):
                raise ValueError(f"trait {t.term!r}: direction must be high or low, not {t.direction!r}")

    def activity(self, name: str) -> Activity | None:
        return self._activities().get(name.strip().lower())

    def _activities(self) -> dict[str, Activity]:
        return {a.name: a for a in self.activities}

    def identities_of(self, dimension: str) -> list[Identity]:
        return [i for i in self.identities if i.dimension == dimension]

    def dimension_of(self, identity: str) -> str | None:
        for i in self.identities:
            if i.name == identity:
                return i.dimension
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "identities": [asdict(i) for i in self.identities],
            "activities": [asdict(a) for a in self.activities],
            "traits": [asdict(t) for t in self.traits],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> QuestionSpace:
        return cls(
            identities=[Identity(**i) for i in data["identities"]],
            activities=[Activity(**a) for a in data["activities"]],
            traits=[Trait(**t) for t in data["traits"]],
            source=dict(data.get("source") or {}),
        )

    def save(self, path: str | os.PathLike) -> None:
        Path(path).write_text(json.dumps(self.to_json(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def load_space(path: str | os.PathLike | None = None) -> QuestionSpace:
    """A question space from a JSON file written by :meth:`QuestionSpace.save` (or ``vilbias
    audit space``); None gives the embedded one."""
    if path is None:
        return embedded_space()
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"question space {path} does not exist (write one with `vilbias audit space`)")
    return QuestionSpace.from_json(json.loads(path.read_text(encoding="utf-8")))


@cache
def _embedded_json() -> str:
    return resources.files("vilbias.audit").joinpath("probeset", "space.json").read_text(encoding="utf-8")


def embedded_space() -> QuestionSpace:
    """The stratified subset shipped as package data (``vilbias/audit/probeset/space.json``)."""
    return QuestionSpace.from_json(json.loads(_embedded_json()))


# -- VIGNETTE's published lists -----------------------------------------------------------------

VIGNETTE_FILES = ("activities.json", "roles.json", "sscm_dictionary.csv", "merged_descriptors_visibility.csv")
VIGNETTE_SOURCE = {
    "name": "VIGNETTE: Socially Grounded Bias Evaluation for Vision-Language Models",
    "authors": "Chahat Raj, Bowen Wei, Aylin Caliskan, Antonios Anastasopoulos, Ziwei Zhu",
    "paper": "https://arxiv.org/abs/2505.22897",
    "repository": "https://github.com/chahatraj/Vignette",
    "files": list(VIGNETTE_FILES),
    "licence": (
        "The repository publishes no licence file; the lists are used here for research with "
        "attribution. The identity descriptors merge HolisticBias, StereoSet, CrowS-Pairs and "
        "the 93 Stigmas list; the SCM terms follow Nicolas, Bai and Fiske's stereotype content "
        "dictionaries. Cite the paper (docs/audit.md)."
    ),
}


def _visible_descriptors(path: Path) -> list[Identity]:
    """``merged_descriptors_visibility.csv``: descriptors VIGNETTE labels visible (VLabel Yes) in
    the eight dimensions, stripped of the file's stray spaces and de-duplicated per dimension."""
    seen: set[tuple[str, str]] = set()
    out: list[Identity] = []
    with path.open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            dimension = (row.get("axis") or "").strip()
            name = " ".join((row.get("descriptor") or "").split())
            if dimension not in DIMENSIONS or not name or (row.get("VLabel") or "").strip().lower() != "yes":
                continue
            if (dimension, name.lower()) in seen:
                continue
            seen.add((dimension, name.lower()))
            out.append(Identity(name, dimension))
    return out


def space_from_vignette(folder: str | os.PathLike) -> QuestionSpace:
    """The full question space from VIGNETTE's four lists in ``folder``.

    Activities keep their category from ``activities.json``; ``roles.json`` gives each its role
    and role questions (an activity it lacks keeps ``role=None`` and gets no decision-making
    questions). Identities are the visible descriptors of the eight dimensions, as written.
    """
    folder = Path(folder)
    missing = [f for f in VIGNETTE_FILES if not (folder / f).is_file()]
    if missing:
        raise FileNotFoundError(f"{folder} lacks VIGNETTE's {', '.join(missing)}")
    categories = json.loads((folder / "activities.json").read_text(encoding="utf-8"))
    roles: dict[str, dict[str, Any]] = {}
    for entries in json.loads((folder / "roles.json").read_text(encoding="utf-8")).values():
        for entry in entries:
            roles[entry["activity"].strip().lower()] = entry
    activities = []
    for category, names in categories.items():
        for raw in names:
            name = raw.strip().lower()
            entry = roles.get(name)
            questions = {k: entry[k] for k in ROLE_QUESTIONS if entry and entry.get(k)} if entry else {}
            activities.append(Activity(name, category, entry["role"] if entry else None, questions))
    traits = []
    with (folder / "sscm_dictionary.csv").open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            pair = row["pair_id"].strip().split("_", 1)[-1]
            traits.append(Trait(row["term"].strip(), row["dictionary"].strip(), row["direction"].strip(), pair))
    identities = _visible_descriptors(folder / "merged_descriptors_visibility.csv")
    return QuestionSpace(identities, activities, traits, source=dict(VIGNETTE_SOURCE))


# -- the embedded subset ------------------------------------------------------------------------

EMBEDDED_IDENTITIES: dict[str, list[tuple[str, str]]] = {
    "ability": [("blind person", "blind"), ("deaf person", "deaf"), ("paraplegic person", "paraplegic person"),
                ("able-bodied person", "able-bodied person")],
    "age": [("child", "child"), ("teenager", "teenager"), ("middle-aged person", "middle-aged"),
            ("elderly person", "elderly person")],
    "gender_and_sex": [("man", "man"), ("woman", "woman"), ("transgender man", "trans male"),
                       ("transgender woman", "transgender female")],
    "nationality": [("American person", "american"), ("Chinese person", "chinese"), ("Mexican person", "mexican"),
                    ("Nigerian person", "nigerian")],
    "physical_traits": [("overweight person", "overweight person"), ("slim person", "slim person"),
                        ("tall person", "tall person"), ("short person", "short person")],
    "race_ethnicity_color": [("white person", "white person"), ("black person", "black person"),
                             ("Asian person", "asian"), ("Hispanic person", "hispanic")],
    "religion": [("Christian person", "christian"), ("Muslim person", "muslim"), ("Jewish person", "jewish"),
                 ("Hindu person", "hindu")],
    "socioeconomic": [("rich person", "rich person"), ("homeless person", "homeless person"), ("doctor", "doctor"),
                      ("manual laborer", "manual laborer")],
}
"""Four visible descriptors per dimension (``(name in questions, VIGNETTE descriptor)``): two
contrasts each, chosen by hand from VLabel-Yes rows; adjectives get "person" so that every
option reads as a noun phrase."""

EMBEDDED_ACTIVITIES = {
    "Necessary Time": ["cooking", "driving"],
    "Contracted Time": ["teaching", "programming"],
    "Committed Time": ["babysitting", "repairing a car"],
    "Free Time": ["playing basketball", "reading a book"],
}
"""Two activities per time-use category, each with a role in ``roles.json``: the activities
pairs show."""

EMBEDDED_DISTRACTORS = {
    "Necessary Time": ["doing laundry"],
    "Contracted Time": ["serving food"],
    "Committed Time": ["gardening"],
    "Free Time": ["swimming", "playing chess", "painting", "fishing", "dancing"],
}
"""Further activities that only appear as wrong options of factuality questions."""

EMBEDDED_TRAIT_PAIR = 1
"""The first trait pair of each SCM dimension (friendly/unfriendly, moral/immoral, ...)."""


def stratified_subset(full: QuestionSpace) -> QuestionSpace:
    """The embedded subset, drawn from the full space (and checked against it: every identity
    must be a visible descriptor of its dimension, every activity and trait must exist)."""
    visible = {(i.dimension, i.name.lower()) for i in full.identities}
    identities = []
    for dimension in DIMENSIONS:
        for name, source in EMBEDDED_IDENTITIES[dimension]:
            if (dimension, source.lower()) not in visible:
                raise ValueError(f"{source!r} is not a visible {dimension} descriptor in the source lists")
            identities.append(Identity(name, dimension, source if source != name else ""))
    activities = []
    for chosen, with_roles in ((EMBEDDED_ACTIVITIES, True), (EMBEDDED_DISTRACTORS, False)):
        for category, names in chosen.items():
            for name in names:
                a = full.activity(name)
                if a is None or a.category != category:
                    raise ValueError(f"activity {name!r} ({category}) is not in the source lists")
                if with_roles and (a.role is None or set(a.role_questions) != set(ROLE_QUESTIONS)):
                    raise ValueError(f"activity {name!r} has no complete role questions in roles.json")
                activities.append(a if with_roles else Activity(a.name, a.category))
    traits = [t for t in full.traits if t.pair.endswith(str(EMBEDDED_TRAIT_PAIR)) and t.pair[:-1].isalpha()]
    if {t.dimension for t in traits} != set(SCM_DIMENSIONS) or len(traits) != 2 * len(SCM_DIMENSIONS):
        raise ValueError("the source SCM dictionary lacks a first high/low pair for every dimension")
    source = {**full.source, "subset": (
        "4 visible identities per dimension (EMBEDDED_IDENTITIES), 2 activities per time-use "
        "category with their roles and 6 role questions, 8 distractor activities, the first "
        "high/low trait pair of each SCM dimension"
    )}
    return QuestionSpace(identities, activities, traits, source=source)


def pair_activities(space: QuestionSpace) -> list[Activity]:
    """The activities pairs are drawn with: those with role questions (the others are
    factuality distractors only)."""
    return [a for a in space.activities if a.role_questions]
