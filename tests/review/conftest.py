import pytest

from tests.annotate.conftest import StubBackend, answer, stub_spec
from tests.fakes.workdirs import make_workdir
from vilbias.annotate.pipeline import AnnotateConfig, annotate

# item -> multimodal votes of annotators a, b (K=1); items 0-5 decided, 6 a tie
LABELS = {0: "BB", 1: "BB", 2: "NN", 3: "NN", 4: "BB", 5: "NN", 6: "BN"}


@pytest.fixture
def annotated(tmp_path):
    workdir = make_workdir(tmp_path / "work", n=len(LABELS))

    def script_for(pos):
        def script(item, prompt, sample, request):
            c = LABELS[item][pos]
            return answer("biased" if c == "B" else "not biased", rationale=f"why {item}", prompt=prompt)

        return script

    backends = {"a": StubBackend(script_for(0)), "b": StubBackend(script_for(1))}
    annotate(AnnotateConfig(workdir=workdir, samples=1, annotator_specs=[stub_spec("a", vision=True), stub_spec("b", vision=True)], backends=backends, progress=False))
    return workdir
