"""``vilbias build --from``: the three published layouts, a version sequence across them, bad
input, Hub sources (gated, private, unreachable) and the atomic swap.

The fixtures (:mod:`tests.corpus.releases`) follow the authors' schemas exactly, at a few dozen
rows with tiny JPEGs.
"""

from __future__ import annotations

import io
import json
import threading
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.corpus.releases import (
    HUB_2025_LABELS,
    PAPER_LABELS,
    V1_LABELS,
    items,
    photo,
    relabel,
    v1_records,
    write_2025,
    write_paper_zip,
    write_v1,
)
from vilbias.corpus import BuildConfig, build, format_report
from vilbias.corpus.release import read_cells
from vilbias.corpus.source import SourceError


def _rows(folder: Path, config: str = "default") -> dict[str, dict]:
    from datasets import load_dataset

    ds = load_dataset(str(folder), config)
    return {r["unique_id"]: {**r, "split": split} for split in ds for r in ds[split]}


def _card(folder: Path) -> str:
    return (folder / "README.md").read_text(encoding="utf-8")


def test_v1_layout_with_an_images_folder(tmp_path):
    rows = items(30)
    table = write_v1(tmp_path / "nmb/table.parquet", rows, images=tmp_path / "nmb/images")
    report = build(BuildConfig(source=str(table), output=tmp_path / "out"))
    assert report["rows"] == 30 and report["source"]["layout"] == "nmb-plus-v1"
    got = _rows(tmp_path / "out")
    assert set(got) == {it.unique_id for it in rows}
    for it in rows:
        r = got[it.unique_id]
        assert r["multimodal_label"] == it.label and r["source_label"] == V1_LABELS[it.label] and r["label_source"] == "import"
        assert r["text_label"] == it.text_label and r["source_text_label"] == V1_LABELS[it.text_label]
        assert r["url"] == it.url and r["published"] == it.published and r["outlet"] == it.outlet
        assert r["image_caption"] == f"A photo for story {it.unique_id}"
        # Never invented: no votes, no agreement, no rationale, unreviewed.
        assert r["votes"] == [] and r["agreement"] is None and r["reasoning"] is None and r["review"] == "unreviewed"
    # The image is the source's bytes, stored as they were.
    table = pq.read_table(next((tmp_path / "out/data").glob("train-*.parquet")), columns=["unique_id", "image"]).to_pylist()
    by_id = {it.unique_id: it for it in rows}
    assert all(r["image"]["bytes"] == by_id[r["unique_id"]].image for r in table)
    card = _card(tmp_path / "out")
    assert "license: cc-by-nc-4.0" in card and "`Likely` → `biased`, `Unlikely` → `not_biased`" in card
    assert "disinformation" in card and "zenodo.13961155" in card and "30 records read, 30 kept, none left out" in card
    assert "this release has no rationales at all" in card and "No row has a rationale" in card


def test_2025_hub_layout_embedded_images_and_sft_without_rationale(tmp_path):
    rows = items(25)
    write_2025(tmp_path / "hub/data/dataset_cleaned.parquet", rows)
    report = build(BuildConfig(source=str(tmp_path / "hub"), output=tmp_path / "out"))
    assert report["source"]["layout"] == "nmb-plus-2025" and report["source"]["no_rationale"] == 25
    got = _rows(tmp_path / "out")
    it = rows[3]
    r = got[it.unique_id]
    assert r["source_label"] == HUB_2025_LABELS[it.label] and r["multimodal_label"] == it.label
    assert r["source_text_label"] == HUB_2025_LABELS[it.text_label] and r["published"] is None
    sft = _rows(tmp_path / "out", "sft")
    answer = sft[it.unique_id]["messages"][-1]["content"][0]["text"]
    assert answer == f"Label: {'biased' if it.label else 'not biased'}"  # the label alone, no empty Reasoning line
    card = _card(tmp_path / "out")
    assert "license: cc-by-nc-2.0" in card and "`Likely to Bias` → `biased`" in card
    assert "this release has no rationales at all" in card


def test_paper_zip_with_images_inside_and_rationales(tmp_path):
    rows = items(20)
    write_paper_zip(tmp_path / "Datasets/dataset.zip", rows)
    report = build(BuildConfig(source=str(tmp_path / "Datasets/dataset.zip"), output=tmp_path / "out"))
    assert report["source"]["layout"] == "vilbias-paper" and report["rows"] == 20
    got = _rows(tmp_path / "out")
    it = rows[0]
    assert got[it.unique_id]["reasoning"] == it.reasoning and got[it.unique_id]["source_label"] == PAPER_LABELS[it.label]
    assert got[it.unique_id]["text_label"] == -1 and got[it.unique_id]["outlet"] is None
    answer = _rows(tmp_path / "out", "sft")[it.unique_id]["messages"][-1]["content"][0]["text"]
    assert answer.endswith(f"Reasoning: {it.reasoning}")
    card = _card(tmp_path / "out")
    assert "license: cc-by-nd-4.0" in card and "2412.17052" in card and "forbids derivatives" in card


def test_paper_zip_with_images_apart_and_a_missing_one(tmp_path):
    rows = items(12)
    write_paper_zip(tmp_path / "dataset.zip", rows, images_inside=False, images_dir=tmp_path / "on-request")
    (tmp_path / "on-request" / f"{rows[4].unique_id}.jpg").unlink()
    report = build(BuildConfig(source=str(tmp_path / "dataset.zip"), images=tmp_path / "on-request", output=tmp_path / "out"))
    assert report["rows"] == 11 and report["exclusion_counts"] == {"missing_image": 1}
    assert report["exclusions"][0]["unique_id"] == rows[4].unique_id and "dataset.csv:" in report["exclusions"][0]["where"]


def test_version_sequence_2024_then_2025_layout_moves_no_row(tmp_path):
    """v1 in the 2024 layout, then a newer release in the 2025 layout (columns renamed, rows
    dropped, added, relabelled, reordered), imported into the same output: no row moves."""
    out = tmp_path / "BiasCorpus"
    v1_items = items(80)
    write_v1(tmp_path / "v1/nmb.csv", v1_items, images=tmp_path / "v1/images")
    build(BuildConfig(source=str(tmp_path / "v1/nmb.csv"), output=out))
    before = read_cells(out)
    kept = [relabel(it) if i % 7 == 0 else it for i, it in enumerate(v1_items) if i % 9 != 4]  # drop 9, relabel 12
    v2_items = list(reversed(kept)) + items(30, seed=5, start=500)
    write_2025(tmp_path / "v2/data/dataset_cleaned.parquet", v2_items, shards=2)
    report = build(BuildConfig(source=str(tmp_path / "v2"), output=out))
    after = read_cells(out)
    common = set(before) & set(after)
    assert len(common) == len(kept) and len(after) == len(kept) + 30
    assert [u for u in common if before[u] != after[u]] == []
    assert report["previous_release"] == {"source": out.resolve().name, "rows": 80, "kept": len(kept), "dropped": 80 - len(kept)}
    relabelled = {it.unique_id for i, it in enumerate(v1_items) if i % 7 == 0 and i % 9 != 4}
    got = _rows(out)
    assert all(got[u]["multimodal_label"] != next(it.label for it in v1_items if it.unique_id == u) for u in relabelled)
    assert "its 71 rows still here kept their split and fold" in _card(out)


def test_version_sequence_published_and_a_moved_row_refused(tmp_path, monkeypatch):
    from tests.fakes.hub_server import hub_server
    from vilbias.publish.dataset import PublishDatasetConfig, publish_dataset

    out = tmp_path / "BiasCorpus"
    v1_items = items(40)
    write_v1(tmp_path / "v1/nmb.parquet", v1_items, images=tmp_path / "v1/images")
    build(BuildConfig(source=str(tmp_path / "v1/nmb.parquet"), output=out))
    with hub_server(tmp_path) as hub:
        monkeypatch.setenv("HF_TOKEN", hub.token)
        assert f'load_dataset("{out.name}")' in _card(out) and str(out.parent) not in _card(out) and "me/nmb" not in _card(out)
        first = publish_dataset(PublishDatasetConfig(repo_id="me/nmb", version="1.0.0", source=out))
        assert first.changelog.total == 40
        # Published, the card's loading examples name the repo and its tag, no longer the folder.
        assert 'load_dataset("me/nmb", "fold_0", revision="v1.0.0")' in _card(out) and f'load_dataset("{out.name}"' not in _card(out)
        v2_items = [relabel(it) if i % 5 == 0 else it for i, it in enumerate(v1_items[3:])][::-1] + items(10, seed=2, start=100)
        write_2025(tmp_path / "v2/data/dataset_cleaned.parquet", v2_items)
        build(BuildConfig(source=str(tmp_path / "v2"), output=out))
        second = publish_dataset(PublishDatasetConfig(repo_id="me/nmb", version="1.1.0", source=out))
        assert second.moved == [] and (second.changelog.added, second.changelog.removed, second.changelog.relabelled) == (10, 3, 8)
        # The same release imported into a fresh folder (no previous build) reshuffles: refused.
        build(BuildConfig(source=str(tmp_path / "v2"), output=tmp_path / "fresh"))
        moved = [u for u, c in read_cells(tmp_path / "fresh").items() if read_cells(out)[u] != c]
        assert moved
        with pytest.raises(ValueError, match=rf"would move {len(moved)} row\(s\) of v1.1.0"):
            publish_dataset(PublishDatasetConfig(repo_id="me/nmb", version="1.2.0", source=tmp_path / "fresh"))


def test_identical_and_near_identical_images_and_same_url_stay_together(tmp_path):
    from PIL import Image

    rows = items(40)
    rows[10].image = rows[3].image  # identical bytes
    im = Image.open(io.BytesIO(rows[5].image))
    buf = io.BytesIO()
    im.save(buf, format="JPEG", quality=60)  # the same photo re-encoded: near-identical
    rows[20].image = buf.getvalue()
    rows[30].url = rows[7].url  # the same article URL
    write_2025(tmp_path / "hub/data.parquet", rows)
    report = build(BuildConfig(source=str(tmp_path / "hub/data.parquet"), output=tmp_path / "out"))
    cells = read_cells(tmp_path / "out")
    for a, b in ((3, 10), (5, 20), (7, 30)):
        assert cells[rows[a].unique_id] == cells[rows[b].unique_id]
    assert report["groups"]["rows_linked_by"] == {"image": 1, "near_image": 1, "story": 1}


def test_bad_rows_are_excluded_by_reason_and_the_rest_kept(tmp_path, monkeypatch):
    monkeypatch.setattr("vilbias.images.MAX_IMAGE_BYTES", 40_000)
    rows = items(30)
    records = v1_records(rows)
    records.append({**records[0], "multimodal_label": "Unlikely" if records[0]["multimodal_label"] == "Likely" else "Likely"})  # conflict
    records.append(dict(records[1]))  # an exact repeat: merged
    records[2]["image"] = {"bytes": b"this is not an image", "path": "x.jpg"}
    records[3]["image"] = {"bytes": rows[3].image[: len(rows[3].image) // 2], "path": "t.jpg"}  # truncated
    records[4]["image"] = {"bytes": photo(4, size=(900, 700), quality=100), "path": "big.jpg"}  # oversized (> 40 kB here)
    records[5]["headline"] = records[5]["article_text"] = "  "
    records[6]["multimodal_label"] = records[7]["multimodal_label"] = "Maybe"
    records[8]["image"] = None
    pq.write_table(pa.Table.from_pylist(records), tmp_path / "nmb.parquet")
    report = build(BuildConfig(source=str(tmp_path / "nmb.parquet"), output=tmp_path / "out"))
    assert report["exclusion_counts"] == {
        "conflicting_labels": 2, "duplicate_unique_id": 1, "invalid_image:not_an_image": 1, "invalid_image:corrupt": 1,
        "invalid_image:too_large_file": 1, "empty_text": 1, "unknown_label": 2, "missing_image": 1,
    }
    assert report["rows"] == 30 - 8
    conflict = [e for e in report["exclusions"] if e["reason"] == "conflicting_labels"]
    assert {e["unique_id"] for e in conflict} == {rows[0].unique_id} and {e["where"] for e in conflict} == {"nmb.parquet:1", "nmb.parquet:31"}
    imported = report["source"]
    assert imported["unknown_labels"] == {"Maybe": 2}
    assert imported["label_map_hint"] == '--label-map "Likely=biased,Unlikely=not_biased,Maybe=biased|not_biased"'
    printed = format_report(report)
    assert "unknown label values: 'Maybe' (2)" in printed and "excluded 10:" in printed
    assert json.loads((tmp_path / "out/build_report.json").read_text())["exclusion_counts"] == report["exclusion_counts"]
    assert "unknown_label 2" in _card(tmp_path / "out")


def test_images_checked_in_worker_threads_give_the_serial_scans_outcome(tmp_path, monkeypatch):
    """The images and languages are checked in worker threads, in chunks: the same rows, cells,
    languages and exclusions, in the same order, as checked one by one here."""
    import vilbias.corpus.importer as importer

    rows = items(30)
    records = v1_records(rows)
    records[2]["image"] = {"bytes": b"this is not an image", "path": "x.jpg"}
    records[20]["image"] = {"bytes": b"nor this", "path": "y.jpg"}
    records.append(dict(records[1]))
    pq.write_table(pa.Table.from_pylist(records), tmp_path / "nmb.parquet")
    serial = build(BuildConfig(source=str(tmp_path / "nmb.parquet"), output=tmp_path / "serial", num_proc=1))
    monkeypatch.setattr(importer, "CHUNK", 3)
    pooled = build(BuildConfig(source=str(tmp_path / "nmb.parquet"), output=tmp_path / "pooled", num_proc=2))
    assert pooled["exclusions"] == serial["exclusions"] and pooled["rows"] == serial["rows"] == 28
    a, b = _rows(tmp_path / "serial"), _rows(tmp_path / "pooled")
    assert a == b and "en" in {r["language"] for r in a.values()}


def test_any_table_with_column_and_label_map_flags_xlsx_and_csv(tmp_path):
    import openpyxl

    rows = items(15)
    (tmp_path / "imgs").mkdir()
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["id", "title", "body", "picture", "verdict", "why"])
    for it in rows:
        (tmp_path / "imgs" / f"{it.unique_id}.jpg").write_bytes(it.image)
        sheet.append([it.unique_id, it.headline, it.article_text, f"{it.unique_id}.jpg", "yes" if it.label else "no", it.reasoning])
    book.save(tmp_path / "mine.xlsx")
    flags = ["--column", "unique_id=id", "--column", "headline=title", "--column", "article_text=body",
             "--column", "image=picture", "--column", "multimodal_label=verdict", "--column", "reasoning=why"]
    from vilbias.cli import main

    assert main(["build", "--from", str(tmp_path / "mine.xlsx"), "--images", str(tmp_path / "imgs"), *flags,
                 "--label-map", "Yes=biased,No=not_biased", "--output", str(tmp_path / "out")]) == 0
    got = _rows(tmp_path / "out")
    assert len(got) == 15 and all(got[it.unique_id]["multimodal_label"] == it.label for it in rows)
    assert got[rows[0].unique_id]["source_label"] in ("yes", "no") and got[rows[0].unique_id]["reasoning"] == rows[0].reasoning
    card = _card(tmp_path / "out")
    assert "`custom`" in card and "not stated: check the source's terms" in card

    # The v1 layout exported as CSV (lists as their string form) is recognised as v1.
    write_v1(tmp_path / "v1.csv", rows, images=tmp_path / "v1imgs")
    report = build(BuildConfig(source=str(tmp_path / "v1.csv"), images=tmp_path / "v1imgs", output=tmp_path / "out2"))
    assert report["source"]["layout"] == "nmb-plus-v1" and report["rows"] == 15


def test_unrecognised_layout_is_one_error_listing_columns_and_flags(tmp_path):
    pq.write_table(pa.Table.from_pylist([{"id": "a", "title": "t", "photo": "p.jpg", "verdict": "yes"}]), tmp_path / "x.parquet")
    with pytest.raises(ValueError) as info:
        build(BuildConfig(source=str(tmp_path / "x.parquet"), output=tmp_path / "out"))
    message = str(info.value)
    assert "\n" not in message and "unrecognised layout (columns found: id, title, photo, verdict)" in message
    assert "--column unique_id=COLUMN" in message and "--column image=COLUMN" in message and "--label-map" in message
    assert "nmb-plus-2025" in message and not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match="--column names nope, which the source does not have"):
        build(BuildConfig(source=str(tmp_path / "x.parquet"), columns=["unique_id=nope"], output=tmp_path / "out"))
    with pytest.raises(ValueError, match="the target must be biased or not_biased"):
        build(BuildConfig(source=str(tmp_path / "x.parquet"), columns=["unique_id=id", "headline=title", "image=photo", "multimodal_label=verdict"],
                          label_map="yes=maybe", output=tmp_path / "out"))
    with pytest.raises(ValueError, match="--sentences and --from are alternatives"):
        BuildConfig(sentences="babe.csv", source="x")
    with pytest.raises(ValueError, match="--images, --preset, --label-map and --source-license go with --from"):
        BuildConfig(preset="nmb-plus-v1")
    with pytest.raises(ValueError, match="--column goes with --from SOURCE or --sentences FILE"):
        BuildConfig(columns=["text=sentence"])


def test_an_interrupted_import_leaves_the_previous_output_untouched(tmp_path, monkeypatch):
    rows = items(20)
    write_2025(tmp_path / "a/data.parquet", rows)
    out = tmp_path / "out"
    build(BuildConfig(source=str(tmp_path / "a/data.parquet"), output=out))
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    write_2025(tmp_path / "b/data.parquet", rows + items(10, start=50))

    def boom(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("vilbias.corpus.pipeline.RepoWriter.close", boom)
    with pytest.raises(KeyboardInterrupt):
        build(BuildConfig(source=str(tmp_path / "b/data.parquet"), output=out))
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".vilbias")] == []


def test_rows_written_ahead_are_the_rows_written_inline(tmp_path, monkeypatch):
    # A build writes its row groups in a thread while it reads the next (RepoWriter's write_ahead):
    # the same shards, byte for byte, as writing each group before reading on.
    from vilbias.corpus import writer

    write_2025(tmp_path / "a/data.parquet", items(30))
    monkeypatch.setattr(writer.RepoWriter, "row_group_size", 4)  # several groups a cell
    build(BuildConfig(source=str(tmp_path / "a/data.parquet"), output=tmp_path / "ahead"))
    init = writer.RepoWriter.__init__
    monkeypatch.setattr(writer.RepoWriter, "__init__", lambda self, *a, write_ahead, **k: init(self, *a, write_ahead=False, **k))
    build(BuildConfig(source=str(tmp_path / "a/data.parquet"), output=tmp_path / "inline"))
    assert not any(t.name.startswith("write-rows") for t in threading.enumerate())
    shards = {p.name: p.read_bytes() for p in (tmp_path / "ahead/data").iterdir()}
    assert len(shards) == 15 and shards == {p.name: p.read_bytes() for p in (tmp_path / "inline/data").iterdir()}


@pytest.mark.parametrize("where", ["writing", "reading"])
def test_a_failure_while_rows_are_written_ahead_ends_the_import(tmp_path, monkeypatch, where):
    # An error in the writer thread, or a stop in the reading, ends the build with it: no folder
    # written, no scratch left, no writer thread left running.
    from vilbias.corpus.importer import ReleaseSource
    from vilbias.corpus.writer import RepoWriter

    write_2025(tmp_path / "a/data.parquet", items(30))
    monkeypatch.setattr(RepoWriter, "row_group_size", 4)
    if where == "writing":  # in the write-ahead thread
        write_table, calls = pq.ParquetWriter.write_table, []

        def write_then_fail(self, table, *args, **kwargs):
            calls.append(threading.current_thread().name)
            if len(calls) == 3:
                raise OSError("the disk went away")
            write_table(self, table, *args, **kwargs)

        monkeypatch.setattr(pq.ParquetWriter, "write_table", write_then_fail)
        expected = pytest.raises(OSError, match="the disk went away")
    else:
        examples = ReleaseSource.examples

        def examples_then_stop(self):
            for n, item in enumerate(examples(self)):
                if n == 13:
                    raise KeyboardInterrupt
                yield item

        monkeypatch.setattr(ReleaseSource, "examples", examples_then_stop)
        expected = pytest.raises(KeyboardInterrupt)
    with expected:
        build(BuildConfig(source=str(tmp_path / "a/data.parquet"), output=tmp_path / "out"))
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".vilbias")] == []
    assert not [t for t in threading.enumerate() if t.name.startswith("write-rows")]
    if where == "writing":
        assert all(name.startswith("write-rows") for name in calls)


def test_zip_and_local_source_errors(tmp_path):
    (tmp_path / "bad.zip").write_bytes(b"not a zip")
    with pytest.raises(SourceError, match="not a readable zip"):
        build(BuildConfig(source=str(tmp_path / "bad.zip"), output=tmp_path / "out"))
    with zipfile.ZipFile(tmp_path / "empty.zip", "w") as zf:
        zf.writestr("readme.txt", "hi")
    with pytest.raises(SourceError, match="the zip holds no table"):
        build(BuildConfig(source=str(tmp_path / "empty.zip"), output=tmp_path / "out"))
    with pytest.raises(SourceError, match="no such file or folder, and not a Hub dataset id"):
        build(BuildConfig(source=str(tmp_path / "missing.csv"), output=tmp_path / "out"))
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- Hub sources


def _push_2025(tmp_path: Path, hub, repo_id: str, rows, *, private: bool = False) -> None:
    from huggingface_hub import HfApi

    folder = tmp_path / "upload"
    write_2025(folder / "data/dataset_cleaned.parquet", rows)
    (folder / "README.md").write_text("---\nlicense: cc-by-nc-2.0\n---\n# NewsMediaBias-Plus\n", encoding="utf-8")
    api = HfApi(token=hub.token)
    api.create_repo(repo_id, repo_type="dataset", private=private)
    api.upload_folder(repo_id=repo_id, repo_type="dataset", folder_path=folder)


def test_hub_source_downloads_and_names_its_revision(tmp_path, monkeypatch):
    from huggingface_hub import HfApi

    from tests.fakes.hub_server import hub_server

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    rows = items(15)
    with hub_server(tmp_path) as hub:
        monkeypatch.setenv("HF_TOKEN", hub.token)
        _push_2025(tmp_path, hub, "vector-institute/newsmediabias-plus", rows)
        HfApi(token=hub.token).create_tag("vector-institute/newsmediabias-plus", tag="v1", repo_type="dataset")
        report = build(BuildConfig(source="vector-institute/newsmediabias-plus@v1", output=tmp_path / "out"))
    imported = report["source"]
    assert report["rows"] == 15 and imported["origin"] == "hub" and imported["revision"] == "v1" and len(imported["commit"]) == 40
    card = _card(tmp_path / "out")
    assert "`vector-institute/newsmediabias-plus`](https://huggingface.co/datasets/vector-institute/newsmediabias-plus) at revision `v1`" in card
    assert "source_datasets:\n- vector-institute/newsmediabias-plus" in card


def test_gated_private_and_unreachable_hub_sources_are_one_sentence_and_write_nothing(tmp_path, monkeypatch, capsys):
    from tests.fakes.hub_server import hub_server, use_hub
    from vilbias.cli import main

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    out = tmp_path / "out"
    with hub_server(tmp_path) as hub:
        monkeypatch.setenv("HF_TOKEN", hub.token)
        _push_2025(tmp_path, hub, "vector-institute/newsmediabias-plus", items(5))
        hub.repos[("dataset", "vector-institute/newsmediabias-plus")].gated = True
        capsys.readouterr()
        assert main(["build", "--from", "vector-institute/newsmediabias-plus", "--output", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "is gated: accept its conditions on" in err and "/datasets/vector-institute/newsmediabias-plus" in err

        _push_2025(tmp_path / "p", hub, "someone/private-release", items(5), private=True)
        monkeypatch.delenv("HF_TOKEN")
        monkeypatch.setenv("HF_TOKEN_PATH", str(tmp_path / "no-token"))
        capsys.readouterr()
        assert main(["build", "--from", "someone/private-release", "--output", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "someone/private-release was not found or is private: log in" in err
    with use_hub("http://127.0.0.1:9"):  # nothing listens on the discard port
        assert main(["build", "--from", "vector-institute/newsmediabias-plus", "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not reachable" in err and "Traceback" not in err
    assert not out.exists() and hub.token not in err
    # The suite runs with HF_HUB_OFFLINE=1: a Hub source then says so, in one sentence.
    with pytest.raises(SourceError, match=r"is not reachable \(offline mode is on \(HF_HUB_OFFLINE=1\)\)"):
        build(BuildConfig(source="vector-institute/newsmediabias-plus", output=out))
    assert not out.exists()


def test_the_import_detects_languages_as_the_detector_library_does_to_the_bit():
    """An import tells every row's language (:func:`vilbias.languages.item_language`); the
    detector's byte-by-byte walk is done as vectorised steps, which holds only because the state
    after a byte depends on the last :data:`~vilbias.languages.DFA_DEPTH` bytes alone: the
    automaton's deepest state is that many bytes from its start. Checked here against the
    model, and the answers (language and probability) against the library's own ``classify`` on
    real articles, many languages, upper case, and random text."""
    import random

    import numpy as np

    from vilbias.languages import DFA_DEPTH, _classify, _identifier, _walk_tables
    from vilbias.workdir import read_articles, sample_workdir

    nextmove, rowbase, _, _ = _walk_tables()
    depth = np.full(len(rowbase), -1)
    depth[0], frontier, level = 0, np.array([0]), 0
    while frontier.size:  # breadth first from the start state: a state's depth is its shortest way in
        level += 1
        reached = np.unique(nextmove[(rowbase[frontier][:, None] + np.arange(256)).ravel()])
        frontier = reached[depth[reached] < 0]
        depth[frontier] = level
    assert depth.min() == 0 and depth.max() == DFA_DEPTH

    texts = [f"{a.headline}\n\n{a.article_text}"[:2000] for a in read_articles(sample_workdir())]
    texts += [
        "Der Stadtrat hat am Dienstag den Haushalt für den Hafen mit sieben zu zwei Stimmen gebilligt.",
        "Le conseil municipal a approuvé mardi le budget du port par sept voix contre deux.",
        "Городской совет во вторник утвердил бюджет порта семью голосами против двух.",
        "市议会周二以七票对两票批准了港口预算。", "THE COUNCIL APPROVED THE BUDGET", "a", "", "ab cd", "12 34",
    ]
    rng = random.Random(0)
    letters = "abcdefghijklmnopqrstuvwxyzäöüßéèçñ АБВГабвг中文日本語 ,.!?0123\n"
    texts += ["".join(rng.choice(letters) for _ in range(rng.randint(0, 400))) for _ in range(300)]
    library = _identifier()
    assert [_classify(t) for t in texts] == [library.classify(t) for t in texts]


def test_a_detector_library_whose_internals_differ_answers_through_its_own_classify(monkeypatch):
    """The vectorised walk reads py3langid's internals; where they are missing (another release),
    detection falls back to the library's own ``classify``: slower, the same answers."""
    from vilbias import languages

    text = "The city council approved the harbour budget on Tuesday by seven votes to two."
    expected = languages._classify(text)
    monkeypatch.setattr(languages, "_walk_tables", lambda: None)
    assert languages._classify(text) == languages._identifier().classify(text) == expected
    assert languages.detect_language(text) == "en"
