"""The audit's figures: a PairComp figure drawn again for another group of the same geometry
(:func:`vilbias.audit.plots.plot_pair_comp` reuses one figure per geometry) is the figure that group
gets drawn alone, pixel for pixel."""

from __future__ import annotations

import random

import numpy as np
from PIL import Image

from vilbias.audit.plots import plot_pair_comp

IDENTITIES = {"age": ["child", "old person", "teenager"], "gender": ["man", "woman"]}


def _records(family: str, seed: int, blank: float) -> list[dict]:
    """Every identity against every other partner in each dimension; ``blank`` of the cells never paired."""
    rng, records = random.Random(seed), []
    for dimension, identities in IDENTITIES.items():
        for a in identities:
            for b in identities:
                if a == b:
                    continue
                value = None if rng.random() < blank else rng.uniform(-100, 100)
                records.append({"model": "m", "paradigm": "perception", "family": family, "modality": "image",
                                "dimension": dimension, "identity": a, "partner": b, "pair_comp": value,
                                "pair_comp_low": None if value is None else max(-100.0, value - rng.uniform(0, 50)),
                                "pair_comp_high": None if value is None else min(100.0, value + rng.uniform(0, 50)),
                                "p": rng.random() * 0.1})
    return records


def _pixels(path) -> np.ndarray:
    return np.asarray(Image.open(path).convert("RGBA"))


def test_a_pair_comp_figure_drawn_again_is_the_figure_drawn_alone(tmp_path):
    first, second = _records("better", 0, blank=0.0), _records("worse", 1, blank=0.4)  # second: fewer cells, other values
    for folder in ("together", "alone", "alone_first"):
        (tmp_path / folder).mkdir()
    together = plot_pair_comp(first + second, tmp_path / "together")
    alone = plot_pair_comp(second, tmp_path / "alone") + plot_pair_comp(first, tmp_path / "alone_first")
    assert [p.name for p in together] == ["pair_comp_perception_better_image.png", "pair_comp_perception_worse_image.png"]
    assert (_pixels(together[1]) == _pixels(alone[0])).all()  # no cell, value or title of the first group left in it
    assert (_pixels(together[0]) == _pixels(alone[1])).all()
    assert not (_pixels(together[0]) == _pixels(together[1])).all()
