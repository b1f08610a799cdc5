"""Every corpus a build writes loads: a few rows leave splits empty, and an empty split is left out
of its config (``configs:`` and ``dataset_info:``), so every config the card lists loads with
``load_dataset``; the summary and the card name the empty and the too-small splits."""

from __future__ import annotations

import pytest
import yaml
from datasets import load_dataset

from tests.fakes.corpus import make_workdir
from vilbias.corpus.config import BuildConfig
from vilbias.corpus.pipeline import build, format_report
from vilbias.corpus.release import read_cells
from vilbias.corpus.splits import MEANINGFUL_ROWS, split_size_note


def _card_configs(folder) -> dict[str, list[str]]:
    """config -> the splits the card's ``configs:`` lists."""
    text = (folder / "README.md").read_text(encoding="utf-8")
    meta = yaml.safe_load(text.split("---")[1])
    return {c["config_name"]: [f["split"] for f in c["data_files"]] for c in meta["configs"]}


@pytest.mark.parametrize(("n", "biased_share"), [(1, 1.0), (2, 0.5), (3, 0.0), (5, 0.5), (8, 0.56)])
def test_every_listed_config_of_a_tiny_corpus_loads(tmp_path, n, biased_share):
    work = make_workdir(tmp_path / "work", n, biased_share=biased_share, seed=n)
    out = tmp_path / "out"
    report = build(BuildConfig(workdir=work, output=out))
    listed = _card_configs(out)
    assert set(listed) == {"default", *(f"fold_{k}" for k in range(5)), "sft"}
    for config, splits in listed.items():
        ds = load_dataset(str(out), config)
        assert sorted(ds) == sorted(splits)
        # every listed split has rows, every split left out has none
        assert all(len(ds[s]) for s in ds)
        for split, rows in report["configs"][config].items():
            assert (split in splits) == (rows > 0), (config, split, rows)
    # the rows, over the default config's listed splits, are the corpus, each once
    ids = [r["unique_id"] for s in load_dataset(str(out)).values() for r in s]
    assert len(ids) == len(set(ids)) == report["rows"] == n
    empty = [f"{c}/{s}" for c, splits in report["configs"].items() if c != "sft" for s, rows in splits.items() if not rows]
    assert report["empty_splits"] == empty and empty  # 8 rows or fewer always leave a split empty
    summary = format_report(report)
    assert "empty, left out of their config" in summary and all(name in summary for name in empty)
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "**Splits too small to mean anything.**" in card and all(f"`{name}`" in card for name in empty)
    assert f"Under {MEANINGFUL_ROWS} rows" in card  # every split of 8 rows or fewer is under the bar


def test_a_rebuild_keeps_rows_where_they_were_and_lists_a_split_once_it_fills(tmp_path):
    work = make_workdir(tmp_path / "work", 3, seed=1)
    out = tmp_path / "out"
    build(BuildConfig(workdir=work, output=out))
    before = read_cells(out)
    assert "validation" not in _card_configs(out)["default"]
    make_workdir(work, 37, start=3, seed=1)
    report = build(BuildConfig(workdir=work, output=out))
    after = read_cells(out)
    assert {uid: after[uid] for uid in before} == before  # split stability: no row moved
    assert _card_configs(out)["default"] == ["train", "validation", "test"]
    assert report["empty_splits"] == []
    assert len(load_dataset(str(out), split="validation")) == report["configs"]["default"]["validation"] > 0


def test_the_summary_says_kept_and_excluded_as_parts_of_one_whole(tmp_path):
    work = make_workdir(tmp_path / "work", 12, seed=2)
    import sqlite3

    from vilbias.workdir import read_articles

    tie = next(iter(read_articles(work))).unique_id
    db = sqlite3.connect(work / "annotations.sqlite")
    with db:
        for annotator, label in (("ann_a", "biased"), ("ann_b", "not_biased"), ("ann_c", None)):
            db.execute("UPDATE calls SET label=? WHERE item_id=? AND annotator=? AND prompt='multimodal'", (label, tie, annotator))
    report = build(BuildConfig(workdir=work, output=tmp_path / "out"))
    first = next(line for line in format_report(report).splitlines() if line.startswith("built "))
    assert first.startswith("built 11 rows") and first.endswith("(11 kept, 1 excluded of 12)")
    assert sum(report["configs"]["default"].values()) == 11


@pytest.mark.parametrize(("rows", "biased", "note"), [(0, 0, "empty"), (1, 1, "1 row"), (9, 4, "9 rows"),
                                                     (10, 0, "one label"), (10, 10, "one label"), (10, 3, None)])
def test_a_split_too_small_to_mean_anything(rows, biased, note):
    assert split_size_note(rows, biased) == note


def test_a_tiny_sentence_corpus_loads_and_its_card_states_babe_s_terms(tmp_path):
    source = tmp_path / "babe.csv"
    source.write_text(
        "text;news_link;outlet;topic;type;label_bias;label_opinion;biased_words\n"
        "The senator's reckless scheme will ruin the country.;https://a.example/1;A;t;left;Biased;x;['reckless']\n"
        "The council met on Tuesday to discuss the budget.;https://a.example/2;A;t;left;Non-biased;x;[]\n",
        encoding="utf-8")
    out = tmp_path / "babe"
    report = build(BuildConfig(sentences=source, output=out))
    listed = _card_configs(out)
    assert set(listed) == {"default", *(f"fold_{k}" for k in range(5))}
    for config in listed:
        assert sum(len(s) for s in load_dataset(str(out), config).values()) == 2
    card = (out / "README.md").read_text(encoding="utf-8")
    meta = yaml.safe_load(card.split("---")[1])
    from vilbias.corpus.sentence_datasets import BABE_TERMS

    # BABE's publishers state no licence: the card says so, with where, and cites BABE
    assert meta["license"] == "unknown" and meta["source_datasets"] == ["mediabiasgroup/BABE"]
    assert BABE_TERMS in card and "spinde2021babe" in card
    assert "Splits too small to mean anything" in card and all(f"`{s}`" in card for s in report["empty_splits"])


def test_the_builder_used_from_python_leaves_an_empty_split_out_too(tmp_path):
    from vilbias.loading_script.biascorpus import BiasCorpus

    from vilbias.corpus.plan import make_plan

    work = make_workdir(tmp_path / "work", 3, seed=5)
    plan = make_plan(work, tmp_path / "plan")
    for config in ("default", "fold_0", "sft"):
        builder = BiasCorpus(config_name=config, plan_dir=str(tmp_path / "plan"), cache_dir=str(tmp_path / "cache"))
        builder.download_and_prepare()
        ds = builder.as_dataset()
        assert sum(len(s) for s in ds.values()) == len(plan.rows) == 3 and all(len(s) for s in ds.values())
