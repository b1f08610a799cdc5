"""VIGNETTE's published lists (../shared/data/vignette): the full question space, and the embedded
subset drawn from them."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from tests.real_data import shared_data
from vilbias.audit import cli
from vilbias.audit.space import (
    DIMENSIONS,
    ROLE_QUESTIONS,
    SCM_DIMENSIONS,
    embedded_space,
    load_space,
    space_from_vignette,
    stratified_subset,
)

pytestmark = pytest.mark.real_data


@pytest.fixture(scope="module")
def full():
    return space_from_vignette(shared_data("vignette"))


def test_full_question_space_as_published(full):
    assert len(full.activities) == 75
    assert Counter(a.category for a in full.activities) == {
        "Necessary Time": 9, "Contracted Time": 9, "Committed Time": 8, "Free Time": 49}
    # roles.json covers 74 of the 75 activities, as published
    assert [a.name for a in full.activities if a.role is None] == ["smoking a cigar"]
    assert all(set(a.role_questions) == set(ROLE_QUESTIONS) for a in full.activities if a.role)
    assert full.activity("repairing a car").role == "mechanic"
    assert len(full.traits) == 60 and Counter(t.direction for t in full.traits) == {"high": 30, "low": 30}
    assert {t.dimension for t in full.traits} == set(SCM_DIMENSIONS)
    assert len({(t.dimension, t.pair) for t in full.traits}) == 30  # each pair has a high and a low term
    assert {i.dimension for i in full.identities} == set(DIMENSIONS)
    # the file's stray spaces are stripped and repeats within a dimension dropped
    names = [(i.dimension, i.name) for i in full.identities]
    assert len(names) == len(set(names)) and all(n == n.strip() and "  " not in n for _, n in names)
    assert ("religion", "muslim") in names and ("ability", "deaf") in names


def test_embedded_subset_is_drawn_from_the_published_lists(full):
    assert stratified_subset(full).to_json() == embedded_space().to_json()


def test_space_command_writes_a_loadable_space(tmp_path):
    out = tmp_path / "space.json"
    assert cli.main(["space", "--vignette", str(shared_data("vignette")), "--output", str(out)]) == 0
    space = load_space(out)
    assert len(space.activities) == 75 and len(space.traits) == 60
    assert json.loads(out.read_text())["source"]["repository"] == "https://github.com/chahatraj/Vignette"
