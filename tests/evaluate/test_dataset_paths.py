"""A --dataset that is not there is one line, fast, saying what it was taken for; a name that looks
local never reaches the Hub, and a Hub id costs one lookup with no retry log."""

from __future__ import annotations

import logging
import socket
import time

import pytest

from tests.fakes.hub_server import hub_server, use_hub
from vilbias.paths import looks_local, resolve_dataset


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A working folder holding ./BiasCorpus and an empty ./outputs."""
    (tmp_path / "BiasCorpus").mkdir()
    (tmp_path / "outputs").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_what_looks_local(workdir):
    assert all(looks_local(n) for n in ("./x", "../x", "/x", "~/x", "a/b/c", "outputs/nothing", "BiasCorpus"))
    assert not any(looks_local(n) for n in ("org/BiasCorpus", "BiasCorpsu"))


@pytest.mark.parametrize("name, message", [
    ("./BiasCorpsu", "--dataset ./BiasCorpsu was taken for a local folder and does not exist (did you mean ./BiasCorpus?)"),
    ("outputs/nothing", "--dataset outputs/nothing was taken for a local folder and does not exist: give the folder"),
])
def test_a_local_looking_name_is_never_sent_to_the_hub(name, message, workdir):
    with hub_server(workdir / "hub") as hub:
        with pytest.raises(FileNotFoundError) as e:
            resolve_dataset(name)
        assert hub.requests == []
    assert str(e.value).startswith(message) and "\n" not in str(e.value)
    assert resolve_dataset("./BiasCorpus") == "BiasCorpus"


def test_an_unreachable_hub_is_one_line_without_retries(workdir, caplog):
    url = f"http://127.0.0.1:{closed_port()}"
    with use_hub(url), caplog.at_level(logging.DEBUG):
        start = time.monotonic()
        with pytest.raises(FileNotFoundError) as e:
            resolve_dataset("BiasCorpsu")
        assert time.monotonic() - start < 2
    assert str(e.value).startswith(f"--dataset BiasCorpsu was taken for a Hub repo id and the Hub at {url} cannot be "
                                   "reached (")
    assert str(e.value).endswith("there is no local folder ./BiasCorpsu either (did you mean ./BiasCorpus?)")
    assert not [r for r in caplog.records if r.name.startswith("huggingface_hub") and "Retry" in r.getMessage()]


def test_a_hub_id_the_hub_lacks_is_one_line(workdir):
    from huggingface_hub import HfApi

    with hub_server(workdir / "hub") as hub:
        with pytest.raises(FileNotFoundError, match=rf"org/BiasCorpus was taken for a Hub repo id and there is no such "
                                                    rf"dataset at {hub.url} \(or it is private"):
            resolve_dataset("org/BiasCorpus")
        HfApi(token=hub.token).create_repo("org/BiasCorpus", repo_type="dataset")
        assert resolve_dataset("org/BiasCorpus") == "org/BiasCorpus"
        with pytest.raises(FileNotFoundError, match="org/BiasCorpus was taken for a Hub repo id; it has no revision v9"):
            resolve_dataset("org/BiasCorpus", "v9")


def test_evaluate_says_it_in_one_line_before_loading_anything(workdir, capsys):
    from vilbias.cli import main

    assert main(["evaluate", "--dataset", "./BiasCorpsu", "--model", "smollm2"]) == 2
    err = capsys.readouterr().err
    assert err == ("vilbias evaluate: error: --dataset ./BiasCorpsu was taken for a local folder and does not exist "
                   "(did you mean ./BiasCorpus?): give the folder `vilbias build` wrote, or a Hub repo id ORG/NAME\n")
    assert sorted(p.name for p in workdir.iterdir()) == ["BiasCorpus", "outputs"]  # no results folder


def test_offline_a_hub_id_is_not_looked_up_and_fails_in_one_line(workdir, capsys):
    from vilbias.cli import main

    assert main(["evaluate", "--dataset", "org/missing", "--model", "smollm2"]) == 2  # the suite runs HF_HUB_OFFLINE=1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "vilbias evaluate: error: cannot load split 'test' of org/missing (taken for a Hub repo id, with HF_HUB_OFFLINE set)")
