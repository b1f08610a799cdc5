"""Provenance records: round trip, digest, overlap, corruption."""

from __future__ import annotations

import pytest

from vilbias.provenance import TRAINING_IDS, TrainingData, ids_digest, read_training_data


def test_round_trip_and_overlap(tmp_path):
    data_dir = tmp_path / "BiasCorpus"
    data_dir.mkdir()
    record = TrainingData.from_ids(str(data_dir), ["b", "a", "c", "a"], config="fold_2", split="train", fraction=0.5)
    assert record.rows == 3 and record.ids == ["a", "b", "c"] and record.ids_sha256 == ids_digest(["c", "b", "a"])
    record.write(tmp_path / "model")
    back = read_training_data(tmp_path / "model")
    assert back.dataset == data_dir.name and back.config == "fold_2" and back.extra == {"fraction": 0.5}
    assert back.overlap(["x", "c", "a"]) == ["a", "c"] and back.overlap(["x"]) == []
    assert back.card_datasets() == [] and "3 rows of" in back.describe()
    assert TrainingData.from_ids("ORG/BiasCorpus", ["a"], revision="v1.0.0").card_datasets() == ["ORG/BiasCorpus"]


def test_missing_record_is_none_and_a_corrupted_one_is_an_error(tmp_path):
    assert read_training_data(tmp_path) is None
    TrainingData.from_ids("ORG/X", ["a", "b"]).write(tmp_path)
    (tmp_path / TRAINING_IDS).write_text("a\n", encoding="utf-8")
    with pytest.raises(ValueError, match="do not match the digest"):
        read_training_data(tmp_path)
