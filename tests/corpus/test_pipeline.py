"""One build, three sources: the same report keys, the resolved config beside the data (re-runnable
with ``--config``), the old folder kept when a build fails, and one error for several sources."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.corpus.releases import items, write_2025
from tests.fakes.corpus import make_workdir
from tests.training_classifier.conftest import write_babe_csv
from vilbias.corpus import BuildConfig, build
from vilbias.corpus.presets import PRESETS


@pytest.fixture(scope="module")
def three_builds(tmp_path_factory):
    root = tmp_path_factory.mktemp("three")
    write_2025(root / "release/data.parquet", items(20))
    configs = {
        "workdir": BuildConfig(workdir=make_workdir(root / "work", 12), output=root / "from-workdir"),
        "sentences": BuildConfig(sentences=write_babe_csv(root / "babe.csv"), output=root / "from-sentences"),
        "release": BuildConfig(source=str(root / "release/data.parquet"), output=root / "from-release"),
    }
    return {kind: (config, build(config)) for kind, config in configs.items()}


def test_every_source_reports_the_same_keys(three_builds):
    keys = {kind: list(report) for kind, (_, report) in three_builds.items()}
    assert keys["workdir"] == keys["sentences"] == keys["release"]
    for kind, (config, report) in three_builds.items():
        assert report["source"]["kind"] == kind and report["source"]["name"]
        assert json.loads((config.output / "build_report.json").read_text()) == report
        assert report["rows"] == sum(report["label_counts"].values())
        assert report["corpus_bytes"] == sum(p.stat().st_size for p in (config.output / "data").iterdir())
        assert report["previous_release"] == {"source": None, "rows": 0, "kept": 0, "dropped": 0}


def test_the_resolved_config_is_saved_beside_the_data_and_rebuilds_it(three_builds, tmp_path, monkeypatch):
    from vilbias.cli import main

    config, report = three_builds["sentences"]
    saved = config.output / "build_config.yaml"
    assert saved.is_file()
    monkeypatch.chdir(tmp_path)
    assert main(["build", "--config", str(saved), "--output", "again"]) == 0
    again = json.loads((tmp_path / "again/build_report.json").read_text())
    assert again["configs"] == report["configs"] and again["label_share"] == report["label_share"]
    data = sorted(p.name for p in (config.output / "data").iterdir())
    assert data == sorted(p.name for p in (tmp_path / "again/data").iterdir())
    assert all((config.output / "data" / n).read_bytes() == (tmp_path / "again/data" / n).read_bytes() for n in data)


def test_a_failed_sentence_build_leaves_the_previous_folder_untouched(three_builds, tmp_path, monkeypatch):
    config, _ = three_builds["sentences"]
    out = tmp_path / "out"
    build(BuildConfig(sentences=config.sentences, output=out))
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}

    def boom(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("vilbias.corpus.pipeline.RepoWriter.close", boom)
    with pytest.raises(KeyboardInterrupt):
        build(BuildConfig(sentences=config.sentences, output=out))
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".vilbias")] == []


def test_one_source_at_a_time(tmp_path):
    with pytest.raises(ValueError, match="^--workdir and --from are alternatives: build from one of them$"):
        BuildConfig(workdir=make_workdir(tmp_path / "w", 2), source="x.parquet")
    assert BuildConfig().origin().kind == "sample"


def test_help_lists_the_presets_from_their_table_without_loading_datasets():
    code = ("import sys\nfrom vilbias.corpus.cli import main\ntry: main(['--help'])\nexcept SystemExit: pass\n"
            "print('loaded:', *(m for m in ('datasets', 'pyarrow') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == "loaded:"
    assert all(name in " ".join(out.split()) for name in PRESETS)


def test_release_options_parse_from_the_command_line():
    from vilbias.argparser import ConfigParser

    (config,) = ConfigParser([BuildConfig], prog="vilbias build").parse(
        ["--from", "x.csv", "--column", "unique_id=id", "--column", "image=img", "--preset", "vilbias-paper"])
    assert config.columns == ["unique_id=id", "image=img"] and config.preset == "vilbias-paper"
    assert config.origin().kind == "release" and config.origin().location == "x.csv"
