"""Integration: the embedded default annotator (SmolLM2-135M-Instruct GGUF) end to end."""

import json

import pytest

from tests.fakes.workdirs import make_workdir
from vilbias.annotate import prompts as P
from vilbias.annotate.pipeline import AnnotateConfig, annotate
from vilbias.annotate.specs import AnnotatorSpec, smollm2_annotator
from vilbias.annotate.store import AnnotationStore


@pytest.mark.slow
def test_default_annotator_gives_a_valid_answer(tmp_path, smollm2_once):
    workdir = make_workdir(tmp_path / "w", n=1)
    # The default annotator as shipped (loaded once per session; one constrained answer ~30-60 s).
    default = smollm2_annotator()
    spec = AnnotatorSpec(name=default.name, kind="smollm2", model=default.model, params={**default.params, "seed": 0})
    summary = annotate(AnnotateConfig(workdir=workdir, annotator_specs=[spec], samples=1, progress=False))
    with AnnotationStore.for_workdir(workdir) as store:
        [call] = store.iter_calls()
        votes = store.votes()
    # text-only: the text prompt only (the multimodal prompt needs the image)
    assert call["prompt"] == "text" and call["prompt_version"] == P.prompt_version("text")
    # decoded under the answer schema: a 135M model's answer is valid by construction
    assert (call["status"], call["structured"], call["error"]) == ("valid", 1, None), call["problem"]
    answer = json.loads(call["raw"])
    assert list(answer) == ["techniques", "tone", "label", "rationale"] and len(answer["techniques"]) == 13
    assert votes["item-0"]["text"][0].label in ("biased", "not_biased")
    assert summary["run"] == {"valid": 1}
    assert summary["annotators"][spec.name]["structured_output"]["mode"] == "local_grammar"
