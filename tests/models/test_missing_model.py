"""A model that is not on the Hub is one line within a few seconds — offline, with the Hub
unreachable, or with the Hub answering that it has no such model — from ``vilbias annotate`` (an
annotators file naming a ``transformers`` model) and from ``vilbias evaluate --model``."""

from __future__ import annotations

import socket
import time

import pytest

from tests.fakes.hub_server import hub_server, use_hub
from vilbias.cli import main

MISSPELT = "HuggingFaceTB/SmolLM2-135M-Instruc"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(params=["offline", "unreachable", "not_on_the_hub"])
def hub(request, tmp_path):
    """The three ways a Hub model can be missing; yields the words the error line must hold."""
    if request.param == "offline":
        yield "HF_HUB_OFFLINE is set"
    elif request.param == "unreachable":
        with use_hub(f"http://127.0.0.1:{_closed_port()}"):
            yield "cannot be reached"
    else:
        with hub_server(tmp_path / "hub"):
            yield "there is no such model"


def _one_line(capsys, argv: list[str], words: str, model: str) -> str:
    start = time.perf_counter()
    assert main(argv) == 2
    seconds = time.perf_counter() - start
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) <= 3 and "Traceback" not in err, err
    assert model in lines[-1] and words in lines[-1], err
    assert seconds < 15, seconds
    return lines[-1]


def test_an_annotators_file_naming_a_missing_transformers_model(tmp_path, capsys, hub):
    from tests.fakes.corpus import make_workdir

    work = make_workdir(tmp_path / "work", 2)
    spec = tmp_path / "annotators.yaml"
    spec.write_text(f"annotators:\n  - name: misspelt\n    backend: transformers\n    model: {MISSPELT}\n", encoding="utf-8")
    line = _one_line(capsys, ["annotate", "--workdir", str(work), "--annotators", str(spec)], hub, MISSPELT)
    assert "annotator 'misspelt'" in line


def test_evaluate_with_a_misspelt_model(sample_dataset_dir, tmp_path, capsys, hub):
    _one_line(capsys, ["evaluate", "--dataset", str(sample_dataset_dir), "--model", "misspelt/model",
                       "--output", str(tmp_path / "run")], hub, "misspelt/model")
    assert not (tmp_path / "run").exists()
