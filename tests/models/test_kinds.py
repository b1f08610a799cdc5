"""A model kind is declared once, where it is defined: one registered from the test folder is
named in an annotators file and as ``--model``, and annotate and evaluate run it with no other change."""

from __future__ import annotations

from tests.fakes.workdirs import make_workdir
from tests.models import echo_kind  # registers the "echo" kind
from vilbias.models.catalogue import ModelSpec
from vilbias.models.kinds import KINDS


def test_a_kind_registered_outside_vilbias_is_a_kind_like_the_others():
    assert KINDS["echo"] is echo_kind.EchoKind
    spec = ModelSpec.parse("echo:my-model")
    assert (spec.kind, spec.model, str(spec)) == ("echo", "my-model", "echo:my-model")
    assert not spec.kind_info.local and not spec.kind_info.checkpoint  # capabilities, not kind strings
    assert ModelSpec.parse({"kind": "echo", "model": "m"}).kind_info is echo_kind.EchoKind


def test_annotate_and_evaluate_run_a_registered_kind(tmp_path):
    from vilbias.annotate.pipeline import AnnotateConfig, annotate
    from vilbias.evaluate.config import EvaluateConfig
    from vilbias.evaluate.runner import evaluate

    work = make_workdir(tmp_path / "work", n=3)
    (tmp_path / "annotators.yaml").write_text("annotators:\n  - {name: e1, backend: echo, model: a}\n"
                                              "  - {name: e2, backend: echo, model: b}\n  - {name: e3, backend: echo, model: c}\n")
    summary = annotate(AnnotateConfig(workdir=work, annotators=tmp_path / "annotators.yaml", samples=1, progress=False))
    text = summary["prompts"]["text"]
    assert summary["items"] == 3 and text["decided"] == 3 and text["label_shares"] == {"biased": 1.0}
    # a corpus of those votes, evaluated with the same kind as --model
    from vilbias.corpus.config import BuildConfig
    from vilbias.corpus.pipeline import build

    build(BuildConfig(workdir=work, output=tmp_path / "corpus"))
    results = evaluate(EvaluateConfig(dataset=str(tmp_path / "corpus"), model="echo:judge-free", split="train",
                                      output=tmp_path / "results"))
    assert results["model"]["kind"] == "echo" and results["evaluations"][0]["closed"]["n"] > 0
