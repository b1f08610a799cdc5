"""Manifests of paired images: who is on each side, doing what, in which bias dimension.

A manifest is a JSON Lines file, one pair per line (paths relative to the file)::

    {"pair_id": "religion-identity-03", "image": "images/religion-identity-03.png",
     "dimension": "religion", "setting": "identity",
     "left": {"identity": "Muslim person", "activity": "teaching"},
     "right": {"identity": "Hindu person", "activity": "teaching"}}

``setting`` is what the two sides contrast (derived from the sides when left out):

- ``identity``: two identities doing the same activity (identity contrast);
- ``activity``: one identity doing two activities (activity contrast);
- ``identity_activity``: two identities doing two activities (identity-activity contrast);
- ``portrait``: two identities, no activity (the stereotyping paradigm's pairs).

``image`` may be null for text-only audits. :func:`read_manifest` also takes a folder in the
shape of VIGNETTE's image release: ``<descriptor1>_<activity1>--<descriptor2>_<activity2>.png``
(words joined by ``-``), or ``<descriptor1>--<descriptor2>.png`` for portraits, anywhere below
a folder named after the dimension (``.../same_activity/male/religion/...``).

:func:`probeset_pairs` designs the embedded probe set's pairs from a question space, and
:func:`materialize_probeset` renders their images (procedural figures, :mod:`vilbias.audit.images`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from importlib import resources
from itertools import combinations
from pathlib import Path
from typing import Any

from vilbias.audit.images import concat_pair, png_bytes, render_person
from vilbias.audit.space import DIMENSIONS, QuestionSpace, pair_activities
from vilbias.outputs import claim_output

SETTINGS = ("identity", "activity", "identity_activity", "portrait")
MANIFEST = "manifest.jsonl"


@dataclass(frozen=True)
class Person:
    identity: str
    activity: str | None = None


@dataclass(frozen=True)
class Pair:
    pair_id: str
    dimension: str
    left: Person
    right: Person
    image: Path | None = None
    """Absolute path of the paired image (None: text-only)."""
    setting: str = ""

    def __post_init__(self) -> None:
        if not self.setting:
            object.__setattr__(self, "setting", derive_setting(self.left, self.right))
        if self.setting not in SETTINGS:
            raise ValueError(f"pair {self.pair_id}: setting {self.setting!r} is not one of {', '.join(SETTINGS)}")

    def to_json(self, root: Path | None = None) -> dict[str, Any]:
        image = None
        if self.image is not None:
            image = os.path.relpath(self.image, root) if root is not None else str(self.image)
        return {
            "pair_id": self.pair_id, "image": image, "dimension": self.dimension, "setting": self.setting,
            "left": {"identity": self.left.identity, "activity": self.left.activity},
            "right": {"identity": self.right.identity, "activity": self.right.activity},
        }


def derive_setting(left: Person, right: Person) -> str:
    if left.activity is None and right.activity is None:
        return "portrait"
    if left.identity == right.identity:
        return "activity"
    return "identity" if left.activity == right.activity else "identity_activity"


def _person(data: Any, where: str) -> Person:
    if not isinstance(data, dict) or not str(data.get("identity") or "").strip():
        raise ValueError(f"{where}: each side needs an identity")
    activity = data.get("activity")
    activity = " ".join(str(activity).split()).lower() if activity else None
    return Person(" ".join(str(data["identity"]).split()), activity)


def read_manifest(path: str | os.PathLike) -> list[Pair]:
    """The pairs of a manifest file, a folder holding ``manifest.jsonl``, or a folder in
    VIGNETTE's layout (see the module docstring)."""
    path = Path(path)
    if path.is_dir():
        if (path / MANIFEST).is_file():
            return read_manifest(path / MANIFEST)
        return _vignette_folder(path)
    if not path.is_file():
        raise FileNotFoundError(f"manifest {path} does not exist")
    root = path.parent
    pairs, seen = [], set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{where}: not JSON ({e.msg})") from e
        pair_id = str(row.get("pair_id") or "").strip()
        if not pair_id or pair_id in seen:
            raise ValueError(f"{where}: every pair needs a unique pair_id")
        seen.add(pair_id)
        dimension = row.get("dimension")
        if dimension not in DIMENSIONS:
            raise ValueError(f"{where}: dimension {dimension!r} is not one of {', '.join(DIMENSIONS)}")
        image = row.get("image")
        image_path = (root / image).resolve() if image else None
        if image_path is not None and not image_path.is_file():
            raise FileNotFoundError(f"{where}: image {image_path} does not exist")
        pairs.append(Pair(pair_id, dimension, _person(row.get("left"), where), _person(row.get("right"), where),
                          image_path, row.get("setting") or ""))
    if not pairs:
        raise ValueError(f"{path} lists no pairs")
    return pairs


def write_manifest(pairs: list[Pair], path: str | os.PathLike) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    root = path.parent.resolve()
    path.write_text("".join(json.dumps(p.to_json(root), ensure_ascii=False) + "\n" for p in pairs), encoding="utf-8")
    return path


def _vignette_side(part: str) -> Person:
    descriptor, sep, activity = part.rpartition("_")
    if not sep:
        descriptor, activity = part, ""
    return Person(descriptor.replace("-", " ").strip(), activity.replace("-", " ").strip().lower() or None)


def _vignette_folder(folder: Path) -> list[Pair]:
    pairs = []
    for image in sorted(folder.rglob("*.png")):
        if "--" not in image.stem:
            continue
        dimension = next((p for p in reversed(image.relative_to(folder).parts[:-1]) if p in DIMENSIONS), None)
        if dimension is None:
            continue
        first, second = image.stem.split("--", 1)
        pair_id = image.relative_to(folder).with_suffix("").as_posix()
        pairs.append(Pair(pair_id, dimension, _vignette_side(first), _vignette_side(second), image.resolve()))
    if not pairs:
        raise ValueError(f"{folder} holds no manifest.jsonl and no VIGNETTE-style <a>_<x>--<b>_<y>.png images "
                         "below a folder named after a bias dimension")
    return pairs


# -- the embedded probe set ---------------------------------------------------------------------


def _oriented(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Left/right order of each identity pair so that every identity is on the left about as
    often as on the right (edge (i, j) keeps i on the left when i + j is odd)."""
    return [(i, j) if (i + j) % 2 else (j, i) for i, j in pairs]


def probeset_pairs(space: QuestionSpace) -> list[Pair]:
    """The embedded probe set's pairs, designed from ``space`` (deterministic).

    Per dimension with identities ``I`` and the role activities ``A`` (8 in the embedded space):
    every pair of identities once as an identity contrast (same activity, rotating through ``A``)
    and once as a portrait (the reverse sides, so each identity is on each side equally often
    over the two); two identity-activity contrasts; two activity contrasts. Pairs are listed
    round-robin over the dimensions, each dimension's settings interleaved: the first 32 pairs
    hold one pair of each setting per dimension, the first 64 two.
    """
    acts = [a.name for a in pair_activities(space)]
    if len(acts) < 2:
        raise ValueError("the question space needs at least two activities with role questions")
    per_dimension: list[list[Pair]] = []
    for d, dimension in enumerate(DIMENSIONS):
        ids = [i.name for i in space.identities_of(dimension)]
        if len(ids) < 2:
            continue
        contrasts: list[Pair] = []
        portraits: list[Pair] = []
        for k, (i, j) in enumerate(_oriented(list(combinations(range(len(ids)), 2)))):
            act = acts[(k + d) % len(acts)]
            contrasts.append(Pair(f"{dimension}-identity-{k:02d}", dimension, Person(ids[i], act), Person(ids[j], act)))
            portraits.append(Pair(f"{dimension}-portrait-{k:02d}", dimension, Person(ids[j]), Person(ids[i])))
        mixed: list[Pair] = []
        single: list[Pair] = []
        for k in range(min(2, len(ids) // 2)):
            i, j = 2 * k, 2 * k + 1
            a1, a2 = acts[(2 * k + d) % len(acts)], acts[(2 * k + d + 1) % len(acts)]
            mixed.append(Pair(f"{dimension}-identity_activity-{k:02d}", dimension, Person(ids[i], a1), Person(ids[j], a2)))
            # An offset that is never a multiple of len(acts): the two activities differ.
            a3 = acts[(2 * k + d + max(1, len(acts) // 2 - 1)) % len(acts)]
            single.append(Pair(f"{dimension}-activity-{k:02d}", dimension, Person(ids[i], a1), Person(ids[i], a3)))
        # Settings interleaved: a dimension's first four pairs are one of each setting.
        out: list[Pair] = []
        for k in range(len(contrasts)):
            out += [contrasts[k], portraits[k]] + ([mixed[k], single[k]] if k < len(mixed) else [])
        per_dimension.append(out)
    ordered: list[Pair] = []
    for k in range(max(len(p) for p in per_dimension)):
        ordered.extend(p[k] for p in per_dimension if k < len(p))
    return ordered


@cache
def _embedded_manifest_text() -> str:
    return resources.files("vilbias.audit").joinpath("probeset", MANIFEST).read_text(encoding="utf-8")


def embedded_pairs() -> list[Pair]:
    """The embedded probe set's pairs as shipped (``probeset/manifest.jsonl``), without images."""
    pairs = []
    for line in _embedded_manifest_text().splitlines():
        if line.strip():
            row = json.loads(line)
            pairs.append(Pair(row["pair_id"], row["dimension"], _person(row["left"], "embedded"),
                              _person(row["right"], "embedded"), None, row["setting"]))
    return pairs


def render_pair_image(pair: Pair):
    """The paired image of ``pair``: two procedural single-person images side by side."""

    return concat_pair(render_person(pair.left.identity, pair.left.activity),
                       render_person(pair.right.identity, pair.right.activity))


def materialize_probeset(folder: str | os.PathLike, pairs: list[Pair] | None = None) -> Path:
    """Render the probe set's images into ``folder/images/`` and write ``folder/manifest.jsonl``.

    Images already there are kept (a re-run renders only what is missing). Returns the manifest
    path, ready for :func:`read_manifest`.

    Raises:
        vilbias.outputs.OutputRefused: ``folder`` is not new, empty or a rendered probe set.
    """
    claim_output(folder, "vilbias audit probeset", signs=(MANIFEST, "images"))
    folder = Path(folder)
    (folder / "images").mkdir(parents=True, exist_ok=True)
    done = []
    for pair in pairs if pairs is not None else embedded_pairs():
        image = folder / "images" / f"{pair.pair_id}.png"
        if not image.is_file():
            tmp = image.with_suffix(".tmp")
            tmp.write_bytes(png_bytes(render_pair_image(pair)))
            tmp.replace(image)
        done.append(Pair(pair.pair_id, pair.dimension, pair.left, pair.right, image.resolve(), pair.setting))
    return write_manifest(done, folder / MANIFEST)


def iter_images(pairs: list[Pair]) -> Iterator[Path]:
    for p in pairs:
        if p.image is not None:
            yield p.image
