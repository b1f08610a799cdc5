"""The embedded sample: the README's main job (`vilbias build` with no arguments)."""

from __future__ import annotations

from datasets import load_dataset

from vilbias.corpus import BuildConfig, build


def test_embedded_sample_builds_and_loads(tmp_path):
    report = build(BuildConfig(output=tmp_path / "vilbias"))
    assert report["source"]["kind"] == "sample" and report["source"]["name"] == "embedded sample" and report["rows"] >= 60
    # the sample's tied votes are excluded and reported, never silently dropped
    assert report["source"]["flagged_for_review"] >= 1
    assert all(e["reason"].startswith("flagged_for_review") for e in report["exclusions"])
    assert report["groups"]["multi_row_groups"] >= 3 and report["groups_not_kept_whole"] == []
    ds = load_dataset(str(tmp_path / "vilbias"), split="train+validation+test")
    assert set(ds["multimodal_label"]) == {0, 1} and len(set(ds["outlet"])) >= 5
    assert {"acceptable", "unreviewed"} <= set(ds["review"])
    assert all(r.strip() for r in ds["reasoning"])
    card = (tmp_path / "vilbias" / "README.md").read_text()
    assert "This build is the embedded sample" in card and "Cohen's κ" in card
