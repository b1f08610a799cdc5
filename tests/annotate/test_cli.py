"""`vilbias annotate` writes the options it ran with into the workdir, and `--config` runs them again."""

import json
import logging

import yaml

from tests.annotate.conftest import answer
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.workdirs import make_workdir
from vilbias.cli import main


def test_the_saved_config_runs_again_and_asks_nothing_more(tmp_path, capsys):
    workdir = make_workdir(tmp_path / "w", n=3)
    with FakeOpenAIServer(lambda body: answer("biased")) as server:
        annotators = tmp_path / "annotators.yaml"
        annotators.write_text(f"annotators:\n  - {{name: fake, backend: openai, model: fake-model, base_url: '{server.base_url}'}}\n")
        assert main(["annotate", "--workdir", str(workdir), "--annotators", str(annotators), "--samples", "1",
                     "--no-progress", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["prompts"]["text"]["decided"] == 3
        saved = yaml.safe_load((workdir / "annotate_config.yaml").read_text())
        assert (saved["samples"], saved["annotators"], saved["progress"]) == (1, str(annotators), False)
        assert "json" not in saved and "backends" not in saved  # how it printed, and Python-only hooks, are not options
        asked = len(server.requests)
        assert main(["annotate", "--config", str(workdir / "annotate_config.yaml")]) == 0
        assert len(server.requests) == asked


def test_the_summary_is_shown_once(tmp_path, capsys, caplog):
    workdir = make_workdir(tmp_path / "w", n=2)
    with FakeOpenAIServer(lambda body: answer("biased")) as server, caplog.at_level(logging.INFO):
        annotators = tmp_path / "annotators.yaml"
        annotators.write_text(f"annotators:\n  - {{name: fake, backend: openai, model: fake-model, base_url: '{server.base_url}'}}\n")
        assert main(["annotate", "--workdir", str(workdir), "--annotators", str(annotators), "--samples", "1", "--no-progress"]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first and first not in caplog.text  # printed on stdout, not logged as well
