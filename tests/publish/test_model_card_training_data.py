"""The model card states what the checkpoint trained on (vilbias.provenance) and links the dataset revision."""

from __future__ import annotations

import json

from vilbias.provenance import TrainingData
from vilbias.publish.model import CARD_INFO_FILE, ModelCardInfo, render_model_card


def _info(training_data, dataset="org/BiasCorpus") -> ModelCardInfo:
    return ModelCardInfo(base_model="FacebookAI/roberta-base", dataset=dataset, method="classifier-text",
                         dataset_config="fold_2", training_data=training_data)


def test_card_shows_the_training_data_and_links_the_revision():
    record = TrainingData.from_ids("org/BiasCorpus", ["b", "a", "c"], revision="v1.2.0", config="fold_2", split="train",
                                   fraction=0.25)
    card = render_model_card(_info(record), "org/roberta")
    data = card.data.to_dict()
    assert data["datasets"] == ["org/BiasCorpus"]
    assert data["training_data"] == {"dataset": "org/BiasCorpus", "revision": "v1.2.0", "config": "fold_2", "split": "train",
                                     "rows": 3, "ids_sha256": record.ids_sha256, "extra": {"fraction": 0.25}}
    assert "ids" not in data["training_data"]  # the ids live in training_ids.txt, not in the card
    text = card.text
    assert "This checkpoint trained on **3 rows** of\n[`org/BiasCorpus`](https://huggingface.co/datasets/org/BiasCorpus/tree/v1.2.0)" in text
    assert "config `fold_2`, split `train`, revision `v1.2.0`" in text and "fraction: `0.25`" in text
    # the dataset revision comes from the record when the info names none
    assert "(config `fold_2`, revision `v1.2.0`)" in text


def test_local_dataset_is_named_not_linked_and_no_record_is_said(tmp_path):
    folder = tmp_path / "BiasCorpus"
    folder.mkdir()
    card = render_model_card(_info(TrainingData.from_ids(str(folder), ["a"], config="sft"), str(folder)), "org/m")
    assert "datasets" not in card.data.to_dict() and f"`{folder.resolve()}`" in card.text
    assert "revision `unpinned (a local folder)`" in card.text
    bare = render_model_card(_info(None), "org/m")
    assert "No training-data record was written" in bare.text and "training_data" not in bare.data.to_dict()


def test_card_info_round_trip_keeps_the_record_without_ids(tmp_path):
    record = TrainingData.from_ids("org/BiasCorpus", ["x", "y"], revision="v1.0.0")
    _info(record).save(tmp_path)
    saved = json.loads((tmp_path / CARD_INFO_FILE).read_text())
    assert "ids" not in saved["training_data"] and saved["training_data"]["rows"] == 2
    back = ModelCardInfo.load(tmp_path)
    assert (back.training_data.ids_sha256, back.training_data.revision, back.training_data.ids) == (record.ids_sha256, "v1.0.0", [])
