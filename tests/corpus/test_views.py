"""The table of dataset views, declared once: the builder, the writer, the card and the leakage check read it."""

from __future__ import annotations

from vilbias.loading_script.biascorpus import (
    CELLS,
    DEFAULT_FEATURES,
    SFT_FEATURES,
    VIEWS,
    BiasCorpus,
    Resolutions,
)

from vilbias.corpus.card import config_rows
from vilbias.corpus.writer import cell_patterns, corpus_views
from vilbias.task import FOLDS, N_FOLDS, SPLITS


def test_every_view_covers_each_cell_once_per_split_set():
    assert list(VIEWS) == ["default", *FOLDS, "sft"]
    for view in VIEWS.values():
        cells = [c for split_cells in view.splits.values() for c in split_cells]
        assert sorted(cells) == sorted(CELLS)  # every row in exactly one split of every view
    assert VIEWS["sft"].splits == VIEWS["default"].splits and VIEWS["sft"].same_rows_as == "default"
    assert set(VIEWS["fold_2"].splits["test"]) == {(s, 2) for s in SPLITS}


def test_data_file_patterns_select_exactly_the_cells():
    assert cell_patterns(VIEWS["default"].splits["validation"]) == ["data/validation-*"]
    assert cell_patterns(VIEWS["fold_3"].splits["test"]) == ["data/*-fold3-*"]
    assert cell_patterns(VIEWS["fold_3"].splits["train"]) == [f"data/*-fold{k}-*" for k in range(N_FOLDS) if k != 3]
    assert cell_patterns((("train", 0), ("test", 1))) == ["data/test-fold1-*", "data/train-fold0-*"]
    written = corpus_views(DEFAULT_FEATURES, SFT_FEATURES)
    assert list(written) == list(VIEWS) and written["sft"].features is SFT_FEATURES
    assert "sft" not in corpus_views(DEFAULT_FEATURES)  # a text-only corpus has no sft view


def test_the_builder_and_the_card_list_the_same_views():
    assert [c.name for c in BiasCorpus.BUILDER_CONFIGS] == list(VIEWS)
    assert [r["names"] for r in config_rows()] == ["`default`", "`fold_0` … `fold_4`", "`sft`"]


def test_resolutions_round_trip(tmp_path):
    with Resolutions(tmp_path / "resolved.sqlite") as store:
        store.put_all([("a", {"label": "biased"}), ("b", {"label": None})])
        store.put_all([("a", {"label": "not_biased"})])
        assert store.get("a") == {"label": "not_biased"} and store.get("missing") is None
        assert dict(store.items()) == {"a": {"label": "not_biased"}, "b": {"label": None}}
