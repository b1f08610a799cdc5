"""One schema for the corpus's columns (``vilbias.loading_script.schema``, docs/architecture.md "Adding
a dataset column"): a column declared from this folder, and nothing else, is built, loaded and imported.

The column is ``source_url``: the URL an article was fetched from, which the workdir's Article
already holds and NewsMediaBias-Plus v1 ships, so filling it needs no code — the declaration is all.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from vilbias.loading_script.biascorpus import BiasCorpus, features
from vilbias.loading_script.schema import (
    COLUMNS,
    DEFAULT,
    RELEASE,
    SFT,
    STRING,
    WORKDIR,
    Column,
    columns,
    import_targets,
    register_column,
)

from tests.corpus.releases import items, write_v1
from vilbias.corpus import BuildConfig, build
from vilbias.corpus.presets import parse_columns
from vilbias.task import LABEL_NAMES
from vilbias.workdir import read_articles, sample_workdir

SOURCE_URL = Column(
    "source_url", STRING, "the URL the article was fetched from (after redirects), before canonicalisation",
    workdir="article", target="the URL the article was fetched from",
    card_imported="the URL the source says the article was fetched from (null when it gives none)",
)


@pytest.fixture
def source_url():
    """``source_url`` declared for the length of a test (before ``messages``, as a new column goes)."""
    column = register_column(SOURCE_URL)
    try:
        yield column
    finally:
        COLUMNS.remove(column)


def _rows(folder: Path, config: str = DEFAULT) -> dict[str, dict]:
    from datasets import load_dataset

    ds = load_dataset(str(folder), config)
    return {r["unique_id"]: r for split in ds for r in ds[split]}


def _field_table(card: str) -> str:
    return card.split("### Fields (`default`)", 1)[1].split("\n## ", 1)[0]


def test_a_column_declared_here_is_built_and_loaded(source_url, tmp_path):
    out = tmp_path / "corpus"
    build(BuildConfig(output=out))  # the embedded sample, a workdir build
    rows = _rows(out)
    fetched = {a.unique_id: a.source_url for a in read_articles(sample_workdir())}
    assert rows and all(r["source_url"] == fetched[uid] and r["source_url"] for uid, r in rows.items())
    names = list(next(iter(rows.values())))
    assert names.index("source_url") == names.index("language") + 1  # stored before messages, after the rest
    assert "source_url" not in _rows(out, SFT)[next(iter(rows))]  # not an sft column: it did not say so
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "| `source_url` | string | the URL the article was fetched from (after redirects)" in _field_table(card)
    assert "name: source_url" in card.split("---")[1]  # dataset_info: features
    # the builder, used from Python, has it too
    assert "source_url" in BiasCorpus(config_name="default", plan_dir=str(tmp_path)).info.features


def test_a_column_declared_here_is_imported_from_a_parquet(source_url, tmp_path):
    rows = items(12)
    table = write_v1(tmp_path / "v1.parquet", rows)  # NewsMediaBias-Plus v1 ships source_url; images embedded
    out = tmp_path / "imported"
    build(BuildConfig(output=out, source=str(table), columns=["source_url=source_url"]))
    got = _rows(out)
    assert {uid: r["source_url"] for uid, r in got.items()} == {
        it.unique_id: f"https://news.google.com/rss/articles/{it.unique_id}" for it in rows}
    assert "| `source_url` | string | the URL the source says" in _field_table((out / "README.md").read_text(encoding="utf-8"))
    # a source that lacks it stores null, as for every field a source lacks
    plain = tmp_path / "plain"
    build(BuildConfig(output=plain, source=str(table)))
    assert {r["source_url"] for r in _rows(plain).values()} == {None}


def test_the_declaration_is_what_makes_a_target():
    assert "source_url" not in import_targets()
    with pytest.raises(ValueError, match="'source_url' is not a corpus field"):
        parse_columns(["source_url=x"])
    column = register_column(SOURCE_URL)
    try:
        assert parse_columns(["source_url=x"]) == {"source_url": "x"}
        assert "source_url" in features(RELEASE) and "source_url" in features(WORKDIR, DEFAULT)
        with pytest.raises(ValueError, match="already has a column 'source_url'"):
            register_column(SOURCE_URL)
    finally:
        COLUMNS.remove(column)
    assert "source_url" not in features(WORKDIR)


def test_the_published_shape_follows_from_the_declarations():
    """The contract's shape (DESIGN's dataset repository), as the declarations give it: ``sft`` reads
    the conversation first, then the image, the id and the task label; every stored row ends with the
    conversation; the labels are ClassLabels over the task's names; an import adds the source's label
    strings; every ``default`` column has a meaning for the card."""
    assert list(features(WORKDIR, SFT)) == ["messages", "image", "unique_id", "multimodal_label"]
    for source in (WORKDIR, RELEASE):
        stored = list(features(source))
        assert stored == [c.name for c in columns(source, DEFAULT)] + ["messages"]
        assert features(source)["multimodal_label"].names == LABEL_NAMES == features(source)["text_label"].names
        assert columns(source, DEFAULT)[0].card is not None  # a table row starts with a meaning
    assert list(features(RELEASE)) == [n for n in features(WORKDIR) if n != "messages"] + [
        "source_label", "source_text_label", "messages"]
    with pytest.raises(ValueError, match="workdir='votes' is not article, plan, resolved or builder"):
        Column("x", STRING, "x", workdir="votes")


def test_a_column_filled_from_nothing_is_one_line_before_any_row(tmp_path):
    column = register_column(Column("word_count", STRING, "words in the article", workdir="article"))
    try:
        with pytest.raises(ValueError, match=r"column 'word_count' is filled from article.word_count .* Article has no field"):
            build(BuildConfig(output=tmp_path / "out"))
    finally:
        COLUMNS.remove(column)
    assert not (tmp_path / "out").exists()
