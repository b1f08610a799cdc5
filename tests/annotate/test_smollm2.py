"""Integration: the embedded default annotator (SmolLM2-135M-Instruct GGUF) end to end."""

import pytest

from tests.fakes.workdirs import make_workdir
from vilbias.annotate import prompts as P
from vilbias.annotate.pipeline import DEFAULT_ANNOTATORS, AnnotateConfig, AnnotatorSpec, annotate
from vilbias.annotate.store import AnnotationStore


@pytest.mark.slow
def test_default_annotator_runs_on_one_item(tmp_path):
    workdir = make_workdir(tmp_path / "w", n=1)
    # The default annotator, with short answers so the test stays small (load ~25 s on 2 cores).
    default = DEFAULT_ANNOTATORS[0]
    spec = AnnotatorSpec(name=default.name, backend="smollm2", model=default.model, params={**default.params, "max_tokens": 16, "seed": 0})
    summary = annotate(AnnotateConfig(workdir=workdir, annotator_specs=[spec], samples=1, progress=False))
    with AnnotationStore.for_workdir(workdir) as store:
        calls = list(store.iter_calls())
        votes = store.votes()
    assert len(calls) == 2  # 1 item × 2 prompts × K=1
    assert all(c["raw"] and c["error"] is None for c in calls)
    assert {c["prompt_version"] for c in calls} == {P.prompt_version("text"), P.prompt_version("multimodal")}
    assert set(votes) == {"item-0"} and len(votes["item-0"]["text"]) == 1
    assert summary["run"].get("failed", 0) == 0 and sum(summary["run"].values()) == 2
    # whatever the tiny model says is kept: parsed into a vote or kept raw as an abstention
    assert summary["annotators"][spec.name]["text"]["answered"] == 1
