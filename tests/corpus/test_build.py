"""``vilbias build``: the Hub-layout folder, what loads from it, and what it refuses."""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from datasets import ClassLabel, load_dataset
from PIL import Image
from vilbias.loading_script.biascorpus import Resolutions

from tests.fakes.corpus import make_workdir, noise_jpeg
from vilbias.corpus import BuildConfig, build
from vilbias.corpus.card import review_columns
from vilbias.corpus.plan import make_plan
from vilbias.corpus.release import read_cells as read_release_cells
from vilbias.outputs import OutputRefused
from vilbias.workdir import ARTICLES, append_jsonl, read_articles, store_image

CONFIGS = ["default", *[f"fold_{k}" for k in range(5)], "sft"]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path, dict]:
    root = tmp_path_factory.mktemp("build")
    workdir = make_workdir(root / "work", 60, shared_image_pairs=3)
    report = build(BuildConfig(workdir=workdir, output=root / "out"))
    return workdir, root / "out", report


def card_yaml(folder: Path) -> dict:
    return yaml.safe_load((folder / "README.md").read_text().split("---")[1])


def test_layout_card_yaml_and_report(built):
    _, out, report = built
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "assets", "build_config.yaml", "build_report.json", "data"]
    assert sorted(p.name for p in (out / "data").iterdir()) == sorted(
        f"{s}-fold{k}-00000-of-00001.parquet" for s in ("train", "validation", "test") for k in range(5)
    )
    meta = card_yaml(out)
    configs = {c["config_name"]: c for c in meta["configs"]}
    assert set(configs) == set(CONFIGS) and configs["default"]["default"] is True
    assert configs["default"]["data_files"][0] == {"split": "train", "path": "data/train-*"}
    assert configs["fold_2"]["data_files"] == [
        {"split": "train", "path": ["data/*-fold0-*", "data/*-fold1-*", "data/*-fold3-*", "data/*-fold4-*"]},
        {"split": "test", "path": "data/*-fold2-*"},
    ]
    assert configs["sft"]["columns"] == ["messages", "image", "unique_id", "multimodal_label"]
    assert "messages" not in configs["default"]["columns"]
    # one copy of the corpus: every config reads the same files
    shards = sum(p.stat().st_size for p in (out / "data").iterdir())
    repo = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    assert report["corpus_bytes"] == shards and repo / shards <= 1.05 + 60_000 / shards
    infos = {i["config_name"]: i for i in meta["dataset_info"]}
    feats = {f["name"]: f for f in infos["default"]["features"]}
    assert feats["image"]["dtype"] == "image"
    assert feats["multimodal_label"]["dtype"]["class_label"]["names"] == {"0": "not_biased", "1": "biased"}
    assert meta["license"] == "cc-by-nc-4.0"
    assert report["rows"] == 60 and json.loads((out / "build_report.json").read_text())["rows"] == 60
    assert report["configs"]["fold_0"]["train"] + report["configs"]["fold_0"]["test"] == 60
    png = out / "assets" / "label_by_outlet.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and Image.open(png).size[0] > 400
    text = (out / "README.md").read_text()
    assert "60 article–image pairs" in text and "assets/label_by_outlet.png" in text
    assert "<!-- changelog:start -->" in text and "| `default` | train |" in text


def test_loads_with_images_and_class_labels(built):
    workdir, out, _ = built
    ds = load_dataset(str(out))
    assert set(ds) == {"train", "validation", "test"} and sum(ds.num_rows.values()) == 60
    assert ds["train"].features["multimodal_label"] == ClassLabel(names=["not_biased", "biased"])
    row = ds["train"][0]
    assert isinstance(row["image"], Image.Image) and row["image"].size == (96, 64)
    assert len(row["votes"]) == 3 and row["review"] == "unreviewed" and row["agreement"] == 1.0
    # original bytes, never re-encoded
    table = pq.read_table(next((out / "data").glob("train-fold0-*")), columns=["unique_id", "image"])
    articles = {a.unique_id: a for a in read_articles(workdir)}
    for uid, image in zip(table.column("unique_id").to_pylist(), table.column("image").to_pylist(), strict=True):
        assert image["bytes"] == (workdir / articles[uid].image_path).read_bytes()


def test_folds_partition_and_sft_matches_default(built):
    _, out, _ = built
    default = load_dataset(str(out))
    ids = {s: set(default[s]["unique_id"]) for s in default}
    tests = [set(load_dataset(str(out), f"fold_{k}", split="test")["unique_id"]) for k in range(5)]
    assert set().union(*tests) == set().union(*ids.values()) and sum(map(len, tests)) == 60
    fold3 = load_dataset(str(out), "fold_3")
    assert set(fold3["train"]["unique_id"]) == set().union(*ids.values()) - tests[3]
    sft = load_dataset(str(out), "sft")
    for split in ids:
        assert set(sft[split]["unique_id"]) == ids[split]
    row = sft["train"][0]
    user, assistant = row["messages"]
    assert user["role"] == "user" and user["content"][0]["type"] == "image"
    assert user["content"][1]["text"].startswith("Headline: ") and "Does this content exhibit bias?" in user["content"][1]["text"]
    assert assistant["content"][0]["text"].startswith(("Label: biased\nReasoning: ", "Label: not biased\nReasoning: "))
    assert isinstance(row["image"], Image.Image)
    label = "biased" if row["multimodal_label"] == 1 else "not biased"
    assert assistant["content"][0]["text"].startswith(f"Label: {label}\n")


def test_shared_images_never_straddle(built):
    workdir, out, report = built
    cells = read_release_cells(out)
    by_image: dict[str, set] = {}
    for a in read_articles(workdir):
        by_image.setdefault(a.image_path, set()).add(cells[a.unique_id])
    shared = [c for c in by_image.values() if len(c) >= 1]
    assert len(by_image) == 57 and all(len(c) == 1 for c in shared)
    assert report["groups"]["multi_row_groups"] == 3


def test_growth_keeps_every_row_in_its_split_and_fold(tmp_path):
    work = make_workdir(tmp_path / "work", 40)
    build(BuildConfig(workdir=work, output=tmp_path / "v1"))
    make_workdir(work, 25, start=40)
    build(BuildConfig(workdir=work, output=tmp_path / "v2"))
    v1, v2 = read_release_cells(tmp_path / "v1"), read_release_cells(tmp_path / "v2")
    assert len(v1) == 40 and len(v2) == 65
    assert all(v2[u] == c for u, c in v1.items())


def test_rebuild_in_place_keeps_the_previous_build_s_cells(tmp_path):
    """No flag: the output folder's existing build is the previous release."""
    work = make_workdir(tmp_path / "work", 40)
    out = tmp_path / "out"
    build(BuildConfig(workdir=work, output=out))
    before = read_release_cells(out)
    make_workdir(work, 25, start=40)
    report = build(BuildConfig(workdir=work, output=out))
    after = read_release_cells(out)
    assert report["previous_release"] == {"source": out.resolve().name, "rows": 40, "kept": 40, "dropped": 0}
    assert all(after[u] == c for u, c in before.items()) and len(after) == 65


def test_bad_images_and_ties_are_excluded_and_reported(tmp_path):
    work = make_workdir(tmp_path / "work", 12)
    articles = list(read_articles(work))
    bad = {
        articles[0].unique_id: noise_jpeg(900)[:300],  # truncated
        articles[1].unique_id: _png(Image.new("RGB", (1, 1))),  # tracking pixel
        articles[2].unique_id: _png(Image.new("1", (10_000, 10_000))),  # decompression bomb
        articles[3].unique_id: noise_jpeg(901)[:0] + b"GIF89a-not-really",  # garbage
    }
    odd = {articles[4].unique_id: _jpeg(Image.new("CMYK", (120, 90), (10, 200, 30, 0))), articles[5].unique_id: _png(Image.new("P", (120, 90)))}
    lines = []
    for a in articles:
        data = bad.get(a.unique_id) or odd.get(a.unique_id)
        d = a.to_dict()
        if data is not None:
            d["image_path"] = store_image(work, data, "bin")
        lines.append(d)
    (work / ARTICLES).unlink()
    for d in lines:
        append_jsonl(work / ARTICLES, d)
    # item 6 gets a 1-1-1 split of annotators (one abstains): no majority
    import sqlite3

    db = sqlite3.connect(work / "annotations.sqlite")
    with db:
        db.execute("UPDATE calls SET label='biased' WHERE item_id=? AND annotator='ann_a' AND prompt='multimodal'", (articles[6].unique_id,))
        db.execute("UPDATE calls SET label='not_biased' WHERE item_id=? AND annotator='ann_b' AND prompt='multimodal'", (articles[6].unique_id,))
        db.execute("UPDATE calls SET label=NULL WHERE item_id=? AND annotator='ann_c' AND prompt='multimodal'", (articles[6].unique_id,))
    report = build(BuildConfig(workdir=work, output=tmp_path / "out"))
    reasons = {e["unique_id"]: e["reason"] for e in report["exclusions"]}
    assert reasons[articles[0].unique_id].startswith("invalid_image:corrupt")
    assert reasons[articles[1].unique_id].startswith("invalid_image:too_small")
    assert reasons[articles[2].unique_id].startswith("invalid_image:decompression_bomb")
    assert reasons[articles[3].unique_id].startswith("invalid_image:not_an_image")
    assert reasons[articles[6].unique_id] == "flagged_for_review:tie"
    assert report["rows"] == 7 and report["source"]["flagged_for_review"] == 1
    # 7 rows leave default's empty splits out of the config: read every split it lists
    modes = {r["unique_id"]: r["image"].mode for split in load_dataset(str(tmp_path / "out")).values() for r in split}
    assert modes[articles[4].unique_id] == "CMYK" and modes[articles[5].unique_id] == "P"


def test_review_settles_a_tie_and_overrules_a_label(tmp_path):
    work = make_workdir(tmp_path / "work", 10)
    articles = list(read_articles(work))
    import sqlite3

    db = sqlite3.connect(work / "annotations.sqlite")
    with db:
        db.execute("UPDATE calls SET label='biased' WHERE item_id=? AND annotator='ann_a' AND prompt='multimodal'", (articles[0].unique_id,))
        db.execute("UPDATE calls SET label='not_biased' WHERE item_id=? AND annotator='ann_b' AND prompt='multimodal'", (articles[0].unique_id,))
        db.execute("UPDATE calls SET label=NULL WHERE item_id=? AND annotator='ann_c' AND prompt='multimodal'", (articles[0].unique_id,))
        before = db.execute("SELECT label FROM calls WHERE item_id=? AND prompt='multimodal' LIMIT 1", (articles[1].unique_id,)).fetchone()[0]
    flipped = "not_biased" if before == "biased" else "biased"
    (work / "reviews").mkdir()
    for v in [
        {"unique_id": articles[0].unique_id, "reviewer": "r1", "verdict": "acceptable", "corrected_label": "biased", "comment": ""},
        {"unique_id": articles[1].unique_id, "reviewer": "r1", "verdict": "incorrect", "corrected_label": flipped, "comment": "The quotes are balanced."},
        {"unique_id": articles[2].unique_id, "reviewer": "r1", "verdict": "acceptable", "corrected_label": None, "comment": ""},
    ]:
        append_jsonl(work / "reviews" / "verdicts.jsonl", v)
    report = build(BuildConfig(workdir=work, output=tmp_path / "out"))
    assert report["rows"] == 10 and report["source"]["flagged_for_review"] == 0
    rows = {r["unique_id"]: r for r in load_dataset(str(tmp_path / "out"), split="train+validation+test")}
    names = ["not_biased", "biased"]
    assert names[rows[articles[0].unique_id]["multimodal_label"]] == "biased"
    assert names[rows[articles[1].unique_id]["multimodal_label"]] == flipped
    assert rows[articles[1].unique_id]["review"] == "incorrect" and rows[articles[2].unique_id]["review"] == "acceptable"
    assert "Cohen's κ" in (tmp_path / "out" / "README.md").read_text()


def test_previous_release_pins_rows(tmp_path):
    work = make_workdir(tmp_path / "work", 30)
    build(BuildConfig(workdir=work, output=tmp_path / "v1"))
    make_workdir(work, 10, start=30)
    report = build(BuildConfig(workdir=work, output=tmp_path / "v2", previous=str(tmp_path / "v1")))
    assert report["groups"]["pinned"] == 30
    with pytest.raises(FileNotFoundError, match="no such folder"):
        build(BuildConfig(workdir=work, output=tmp_path / "v3", previous=str(tmp_path / "nope")))


def test_rebuild_replaces_output_and_refuses_empty_workdir(tmp_path):
    work = make_workdir(tmp_path / "work", 8)
    out = tmp_path / "out"
    build(BuildConfig(workdir=work, output=out))
    stale = out / "data" / "train-fold0-00001-of-00002.parquet"  # as a shard of a bigger earlier build
    stale.write_bytes((out / "data" / "train-fold0-00000-of-00001.parquet").read_bytes())
    build(BuildConfig(workdir=work, output=out))
    assert not stale.exists() and (out / "README.md").exists()
    (out / "notes.txt").write_text("mine")  # not something a build writes: the folder is no longer the build's alone
    with pytest.raises(OutputRefused, match="notes.txt, which vilbias build did not write"):
        build(BuildConfig(workdir=work, output=out))
    assert (out / "notes.txt").read_text() == "mine" and (out / "README.md").exists()
    with pytest.raises(FileNotFoundError, match="not a workdir"):
        BuildConfig(workdir=tmp_path / "nowhere")


def test_cli_builds_into_cwd_and_load_dataset_by_name(tmp_path, monkeypatch, capsys):
    from vilbias.cli import main

    work = make_workdir(tmp_path / "work", 10)
    monkeypatch.chdir(tmp_path)
    assert main(["build", "--workdir", str(work)]) == 0
    out = capsys.readouterr().out
    assert 'load_dataset("BiasCorpus")' in out and "built 10 rows" in out
    assert load_dataset("BiasCorpus", "fold_3")["test"].num_rows >= 1
    assert main(["build", "--workdir", str(tmp_path / "missing")]) == 2


def _png(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


def _jpeg(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, "JPEG")
    return buf.getvalue()


def test_builder_used_directly_agrees_with_the_build(built, tmp_path):
    from vilbias.loading_script.biascorpus import BiasCorpus

    from vilbias.corpus.plan import make_plan

    workdir, out, _ = built
    make_plan(workdir, tmp_path / "plan", pinned=read_release_cells(out))
    builder = BiasCorpus(config_name="fold_3", plan_dir=str(tmp_path / "plan"), cache_dir=str(tmp_path / "cache"))
    builder.download_and_prepare()
    direct = builder.as_dataset()
    written = load_dataset(str(out), "fold_3")
    for split in ("train", "test"):
        assert sorted(zip(direct[split]["unique_id"], direct[split]["multimodal_label"], strict=True)) == sorted(
            zip(written[split]["unique_id"], written[split]["multimodal_label"], strict=True)
        )
    assert direct["train"].features == written["train"].features


def test_parallel_image_validation_gives_the_same_plan(built, tmp_path):
    from vilbias.corpus.plan import make_plan

    workdir, _, _ = built
    serial = make_plan(workdir, tmp_path / "one", num_proc=1)
    parallel = make_plan(workdir, tmp_path / "two", num_proc=2)
    assert serial.rows == parallel.rows and serial.exclusions == parallel.exclusions


def test_the_card_shows_each_annotator_s_stereotype_audit(tmp_path):
    from vilbias.annotate.store import AnnotationStore

    work = make_workdir(tmp_path / "work", 8)
    summary = {"factuality_accuracy": 0.177, "first_option_rate": 0.79, "headline": "decision: physical traits 1.00",
               "questions": 640, "answered": 640}
    with AnnotationStore.for_workdir(work) as store:  # what `vilbias audit annotators` writes
        store.put_annotator_audit("a1", "fp", "p1", "text", summary)
    build(BuildConfig(workdir=work, output=tmp_path / "out"))
    card = (tmp_path / "out" / "README.md").read_text()
    assert ("a1 (text, probe `p1`): 640/640 answered, factuality accuracy 17.7%, first-option rate 79.0%; "
            "largest disparities: decision: physical traits 1.00") in card


def test_nothing_to_build_names_why_the_items_were_excluded(tmp_path):
    import sqlite3

    workdir = make_workdir(tmp_path / "wd", 6)
    with sqlite3.connect(next(workdir.glob("*.sqlite"))) as db:
        db.execute("DELETE FROM calls")  # no annotator has answered yet
    with pytest.raises(ValueError, match=r"nothing to build: every item was excluded \(6 exclusions: 6 not_annotated\)"):
        build(BuildConfig(workdir=workdir, output=tmp_path / "out"))


def test_card_review_counts_read_only_reviewed_rows_and_match_every_row(tmp_path):
    """The card's review counts read the resolutions of reviewed rows only (an unreviewed row puts
    nothing of review into its row): they equal the counts over every row's resolution."""
    work = make_workdir(tmp_path / "work", 12)
    articles = list(read_articles(work))
    (work / "reviews").mkdir()
    for i, (verdict, corrected, rationale, comment) in enumerate([
        ("needs_improvement", None, "", "vague"),
        ("needs_improvement", None, "A better reason.", ""),
        ("incorrect", "biased", "", ""),
        ("incorrect", "not_biased", "The quotes are balanced.", "see the photo"),
        ("acceptable", None, "", "fine"),
    ]):
        append_jsonl(work / "reviews" / "verdicts.jsonl", {
            "unique_id": articles[i].unique_id, "reviewer": "r1", "verdict": verdict, "corrected_label": corrected,
            "corrected_rationale": rationale, "comment": comment})
    plan = make_plan(work, tmp_path / "plan")
    with Resolutions(plan.resolved) as resolutions:
        every = resolutions.get_many(list(plan.rows))
    flags = Counter(r["review_flag"] or "" for r in every)
    counts = review_columns(plan)
    assert counts == {
        "n_corrected_techniques": sum(r.get("corrected_techniques") is not None for r in every),
        "n_techniques_cleared": sum(bool(r.get("techniques_cleared")) for r in every),
        "n_corrected_rationale": sum(r["corrected_rationale"] is not None for r in every),
        "n_commented": sum(bool(r["review_comments"]) for r in every),
        "n_rationale_not_corrected": flags["rationale_not_corrected"],
        "n_rationale_missing": flags["rationale_missing"],
    }
    assert counts["n_corrected_rationale"] == 2 and counts["n_commented"] == 3 and counts["n_rationale_not_corrected"] == 1
