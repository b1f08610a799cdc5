"""Dataset releases against the loopback Hub: publish, load by tag, changelog, refusals, retry."""

from __future__ import annotations

import json
import os

import pytest

from tests.publish.conftest import CONFIGS, base_rows, make_release_folder
from vilbias.publish.changelog import changelog_section
from vilbias.publish.dataset import PublishDatasetConfig, publish_dataset

REPO = "vilbias-test/BiasCorpus"


def _publish(folder, version, **kw):
    return publish_dataset(PublishDatasetConfig(repo_id=REPO, version=version, source=folder, **kw))


def _v110_rows():
    """v1.0.0 rows with 3 added, 2 removed and 4 relabelled (split-stable)."""
    rows = dict(base_rows(20))
    for uid in ("id-004", "id-009"):
        del rows[uid]
    for uid in ("id-001", "id-002", "id-003", "id-008"):
        split, label = rows[uid]
        rows[uid] = (split, 1 - label)
    rows.update({"id-100": ("train", 1), "id-101": ("train", 0), "id-102": ("test", 1)})
    return rows


def test_publish_load_by_tag_snapshot_every_config(hub, tmp_path):
    from datasets import load_dataset
    from huggingface_hub import HfApi, snapshot_download

    rows = base_rows(20)
    folder = make_release_folder(tmp_path / "v1", rows)
    release = _publish(folder, "1.0.0")
    assert release.tag == "v1.0.0" and release.previous is None and release.changelog.added == 20

    api = HfApi()
    refs = api.list_repo_refs(REPO, repo_type="dataset")
    assert [t.name for t in refs.tags] == ["v1.0.0"] and refs.tags[0].target_commit == release.commit
    commits = api.list_repo_commits(REPO, repo_type="dataset")
    assert [c.title for c in commits] == ["Release v1.0.0", "initial commit"]  # one commit per release
    assert not any(f.endswith(".py") for f in api.list_repo_files(REPO, repo_type="dataset"))

    fold2 = load_dataset(REPO, "fold_2", revision="v1.0.0")
    expected_test = sorted(u for i, u in enumerate(sorted(rows)) if i % 5 == 2)
    assert sorted(fold2["test"]["unique_id"]) == expected_test
    assert fold2["train"].features["multimodal_label"].names == ["not_biased", "biased"]

    path = snapshot_download(REPO, repo_type="dataset", revision="v1.0.0")
    for config in CONFIGS:
        local = load_dataset(path, config)
        published = {s: sorted(d["unique_id"]) for s, d in local.items()}
        source = {s: sorted(d["unique_id"]) for s, d in load_dataset(str(folder), config).items()}
        assert published == source, config
    # The published card is the local card with the changelog filled in, and the local folder
    # now holds exactly what was published.
    with open(os.path.join(path, "README.md"), encoding="utf-8") as f:
        card = f.read()
    assert "### v1.0.0" in changelog_section(card) and "First release: 20 rows." in card
    assert card == (folder / "README.md").read_text(encoding="utf-8")


def test_second_release_changelog_and_first_still_loads(hub, tmp_path):
    from datasets import load_dataset
    from huggingface_hub import hf_hub_download

    _publish(make_release_folder(tmp_path / "v1", base_rows(20)), "1.0.0")
    v1_before = hub.tree_at("dataset", REPO, "v1.0.0")
    release = _publish(make_release_folder(tmp_path / "v2", _v110_rows()), "1.1.0")
    c = release.changelog
    assert (c.previous, c.added, c.removed, c.relabelled, c.total) == ("v1.0.0", 3, 2, 4, 21)

    card = open(hf_hub_download(REPO, "README.md", repo_type="dataset", revision="v1.1.0"), encoding="utf-8").read()
    section = changelog_section(card)
    assert "Changes since v1.0.0: **3 rows added, 2 removed, 4 relabelled** (21 rows in all)." in section
    # Per split: train gained id-100/101, lost id-004, relabelled 3; test gained id-102, lost id-009.
    assert "| train | 17 | 16 | 2 | 1 | 3 |" in section
    assert "| test | 2 | 2 | 1 | 1 | 0 |" in section
    assert section.index("### v1.1.0") < section.index("### v1.0.0")  # history kept

    assert hub.tree_at("dataset", REPO, "v1.0.0") == v1_before  # tags never move
    old = load_dataset(REPO, "default", revision="v1.0.0")
    assert sorted(old["train"]["unique_id"]) == sorted(u for u, (s, _) in base_rows(20).items() if s == "train")
    new = load_dataset(REPO, "default", revision="v1.1.0")
    assert "id-100" in new["train"]["unique_id"] and "id-004" not in new["train"]["unique_id"]


def test_existing_or_lower_version_is_refused(hub, tmp_path):
    folder = make_release_folder(tmp_path / "v1", base_rows(10))
    _publish(folder, "1.0.0")
    _publish(folder, "1.2.0")
    with pytest.raises(ValueError, match="already has tag v1.0.0"):
        _publish(folder, "1.0.0")
    with pytest.raises(ValueError, match="not greater than the latest release v1.2.0"):
        _publish(folder, "1.1.5")
    with pytest.raises(ValueError, match="not a semantic version"):
        _publish(folder, "1.0")


def test_dry_run_uploads_nothing(hub, tmp_path, capsys):
    from vilbias.cli import main

    _publish(make_release_folder(tmp_path / "v1", base_rows(20)), "1.0.0")
    before = hub.tree_at("dataset", REPO, "main")
    folder = make_release_folder(tmp_path / "v2", _v110_rows())
    readme = (folder / "README.md").read_text(encoding="utf-8")
    n_requests = len(hub.requests)
    rc = main(["publish", "dataset", "--repo-id", REPO, "--version", "1.1.0", "--source", str(folder), "--dry-run"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "would publish vilbias-test/BiasCorpus@v1.1.0" in out and "3 added, 2 removed, 4 relabelled" in out
    assert hub.token not in out
    assert hub.tree_at("dataset", REPO, "main") == before
    assert not any(m in ("PUT",) or "/commit/" in p or "/tag/" in p for m, p in hub.requests[n_requests:])
    assert (folder / "README.md").read_text(encoding="utf-8") == readme


def test_dropped_connection_mid_commit_then_retry(hub, tmp_path):
    from datasets import load_dataset

    _publish(make_release_folder(tmp_path / "v1", base_rows(20)), "1.0.0")
    v1 = hub.tree_at("dataset", REPO, "v1.0.0")
    main_before = hub.tree_at("dataset", REPO, "main")
    folder = make_release_folder(tmp_path / "v2", _v110_rows())
    hub.drop_next_commits = 1
    with pytest.raises(RuntimeError, match="interrupted.*still serves v1.0.0.*re-run"):
        _publish(folder, "1.1.0")
    assert hub.drop_next_commits == 0  # the commit POST did reach the server and was dropped
    assert hub.tree_at("dataset", REPO, "main") == main_before
    assert hub.tree_at("dataset", REPO, "v1.0.0") == v1
    from huggingface_hub import HfApi

    assert [t.name for t in HfApi().list_repo_refs(REPO, repo_type="dataset").tags] == ["v1.0.0"]

    release = _publish(folder, "1.1.0")  # the re-run completes it
    assert (release.changelog.added, release.changelog.removed, release.changelog.relabelled) == (3, 2, 4)
    assert len(load_dataset(REPO, "default", revision="v1.1.0")["train"]) == 17


def test_missing_and_rejected_token(hub, tmp_path, monkeypatch, capsys):
    from vilbias.cli import main

    folder = make_release_folder(tmp_path / "v1", base_rows(10))
    monkeypatch.delenv("HF_TOKEN")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty-home"))  # no saved login either
    monkeypatch.setattr("huggingface_hub.constants.HF_TOKEN_PATH", str(tmp_path / "empty-home" / "token"))
    with pytest.raises(PermissionError, match="no Hugging Face token found: set HF_TOKEN"):
        _publish(folder, "1.0.0")
    bad = "hf_not_the_right_token_123"
    monkeypatch.setenv("HF_TOKEN", bad)
    rc = main(["publish", "dataset", "--repo-id", REPO, "--version", "1.0.0", "--source", str(folder)])
    err = capsys.readouterr().err
    assert rc == 2 and "rejected the token" in err and bad not in err
    assert ("dataset", REPO) not in hub.repos


def test_stale_shards_are_deleted_in_the_release_commit(hub, tmp_path):
    folder = make_release_folder(tmp_path / "v1", base_rows(10))
    (folder / "data/train-fold0-00000-of-00001.parquet").rename(folder / "data/train-fold0-00000-of-00002.parquet")
    _publish(folder, "1.0.0")
    make_release_folder(tmp_path / "v2", base_rows(10))
    release = _publish(tmp_path / "v2", "1.0.1")
    assert release.deleted == ["data/train-fold0-00000-of-00002.parquet"]
    files = hub.tree_at("dataset", REPO, "v1.0.1")
    assert "data/train-fold0-00000-of-00001.parquet" in files and "data/train-fold0-00000-of-00002.parquet" not in files
    assert "data/train-fold0-00000-of-00002.parquet" in hub.tree_at("dataset", REPO, "v1.0.0")


def test_a_release_that_moves_rows_is_refused_naming_them(hub, tmp_path):
    _publish(make_release_folder(tmp_path / "v1", base_rows(20)), "1.0.0")
    moved = make_release_folder(tmp_path / "v2", base_rows(20), folds={"id-003": 4, "id-007": 0})
    with pytest.raises(ValueError, match=r"would move 2 row\(s\) of v1.0.0 .*id-003, id-007.*--allow-moved-rows"):
        _publish(moved, "1.1.0")
    assert "v1.1.0" not in hub.tags("dataset", REPO)
    release = _publish(moved, "1.1.0", allow_moved_rows=True)
    assert release.moved == ["id-003", "id-007"] and release.changelog.moved_allowed
    card = (moved / "README.md").read_text()
    assert "changed split or fold" in changelog_section(card) and "--allow-moved-rows" in changelog_section(card)


def test_an_old_seven_copy_release_is_read_as_the_previous_assignment(hub, tmp_path):
    """Migration: the new layout built against an old release keeps every row where it was."""
    from tests.publish.conftest import make_old_layout_folder
    from vilbias.corpus.release import read_cells

    old = make_old_layout_folder(tmp_path / "v1", base_rows(20))
    _publish(old, "1.0.0")
    cells = read_cells(old)
    assert len(cells) == 20 and {c.fold for c in cells.values()} == set(range(5))
    same = make_release_folder(tmp_path / "v2", base_rows(20), folds={u: c.fold for u, c in cells.items()})
    release = _publish(same, "1.1.0")
    assert release.moved == [] and "data/train-00000-of-00001.parquet" in release.deleted
    assert "fold_2/test-00000-of-00001.parquet" in release.deleted and "sft/train-00000-of-00001.parquet" in release.deleted


def test_an_unreadable_previous_release_is_an_error_not_a_reshuffle(tmp_path):
    from vilbias.corpus.release import PreviousReleaseError, read_cells

    folder = make_release_folder(tmp_path / "v1", base_rows(10))
    next((folder / "data").glob("train-fold0-*")).write_bytes(b"not parquet")
    with pytest.raises(PreviousReleaseError, match="cannot read its unique_id column"):
        read_cells(folder)
    for p in (folder / "data").iterdir():
        p.unlink()
    with pytest.raises(PreviousReleaseError, match="expected Parquet shards named data/<split>-fold<k>"):
        read_cells(folder)


def test_without_network_publish_is_one_sentence_and_a_dry_run_still_works(tmp_path, monkeypatch, capsys):
    from vilbias.cli import main

    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens on the discard port
    monkeypatch.setattr("huggingface_hub.constants.ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("HF_TOKEN", "hf_test")
    v1 = make_release_folder(tmp_path / "v1", base_rows(20))
    v2 = make_release_folder(tmp_path / "v2", base_rows(24))
    assert main(["publish", "dataset", "--repo-id", REPO, "--version", "1.1.0", "--source", str(v2)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "could not reach the Hub at http://127.0.0.1:9" in err and "Traceback" not in err
    assert main(["publish", "dataset", "--repo-id", REPO, "--version", "1.1.0", "--source", str(v2),
                 "--dry-run", "--previous", str(v1)]) == 0
    out = capsys.readouterr().out
    assert "rows: 24 (4 added, 0 removed, 0 relabelled, 0 moved)" in out
    assert "could not reach the Hub at http://127.0.0.1:9" in out and f"compared against {v1}" in out


def _imported(folder, license):
    """Mark a release folder as imported from a source under ``license`` (what build --from records)."""
    (folder / "build_report.json").write_text(json.dumps({"rows": 20, "imported": {"license": license}}) + "\n", encoding="utf-8")
    return folder


def test_a_release_of_nd_or_nc_source_data_is_created_private_and_says_why(hub, tmp_path, capsys):
    from vilbias.cli import main

    folder = _imported(make_release_folder(tmp_path / "v1", base_rows(20)), "cc-by-nd-4.0")
    assert main(["publish", "dataset", "--repo-id", REPO, "--version", "1.0.0", "--source", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "Published **private** because the source licence cc-by-nd-4.0 forbids derivatives" in out
    assert hub.repos[("dataset", REPO)].private is True
    assert "Published **private** because the source licence cc-by-nd-4.0 forbids derivatives" in changelog_section(
        hub.tree_at("dataset", REPO, "v1.0.0")["README.md"].decode()
    )


def test_public_takes_an_explicit_flag_which_the_changelog_records(hub, tmp_path):
    folder = _imported(make_release_folder(tmp_path / "v1", base_rows(20)), "cc-by-nc-2.0")
    release = _publish(folder, "1.0.0", private=False)
    assert hub.repos[("dataset", REPO)].private is False
    assert "Published **public** with `--private false`, although the source licence cc-by-nc-2.0 forbids commercial use" in release.visibility
    card = hub.tree_at("dataset", REPO, "v1.0.0")["README.md"].decode()
    assert "with `--private false`, although the source licence cc-by-nc-2.0" in changelog_section(card)
    # The next release into that public repo, without --private false, is refused before any upload.
    v2 = _imported(make_release_folder(tmp_path / "v2", base_rows(24)), "cc-by-nc-2.0")
    commits = len(hub.repos[("dataset", REPO)].commits)
    with pytest.raises(ValueError, match=rf"{REPO} is public and the source licence cc-by-nc-2.0 forbids commercial use: .*--private false"):
        _publish(v2, "1.1.0")
    assert len(hub.repos[("dataset", REPO)].commits) == commits


def test_the_old_public_flag_still_means_private_false(hub, tmp_path, capsys):
    from vilbias.cli import main

    folder = _imported(make_release_folder(tmp_path / "v1", base_rows(20)), "cc-by-nc-2.0")
    assert main(["publish", "dataset", "--repo-id", REPO, "--version", "1.0.0", "--source", str(folder), "--public"]) == 0
    assert hub.repos[("dataset", REPO)].private is False
    assert "--public is deprecated and will be removed in the next release; use --private false" in capsys.readouterr().err


def test_a_pipeline_build_or_a_permissive_source_stays_public(hub, tmp_path):
    _publish(make_release_folder(tmp_path / "v1", base_rows(20)), "1.0.0")
    assert hub.repos[("dataset", REPO)].private is False
    release = _publish(_imported(make_release_folder(tmp_path / "v2", base_rows(22)), "cc-by-4.0"), "1.1.0")
    assert release.visibility is None and hub.repos[("dataset", REPO)].private is False
