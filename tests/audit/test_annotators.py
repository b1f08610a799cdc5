"""Audit before annotating: the text variant on each annotator, its summary in annotations.sqlite."""

from __future__ import annotations

import json

import pytest

from tests.fakes.openai_server import FakeOpenAIServer
from vilbias.annotate.specs import AnnotatorSpec, smollm2_annotator
from vilbias.annotate.store import AnnotationStore
from vilbias.audit.annotators import audit_annotators, probe_version


def read_annotator_audits(path, annotators=None):
    with AnnotationStore(path) as store:
        return store.annotator_audits(annotators)


def favour_first_identity(body):
    """Always the pair's left person: a maximally biased annotator on identity contrasts."""
    text = body["messages"][-1]["content"]
    left = text.split("On the left: ", 1)[1].split(",", 1)[0].split(".", 1)[0]
    enum = body["response_format"]["json_schema"]["schema"]["properties"]["answer"]["enum"]
    return json.dumps({"answer": left if left in enum else enum[0]})


def test_annotator_audit_writes_its_summary_into_annotations_sqlite(tmp_path):
    workdir = tmp_path / "work"
    with FakeOpenAIServer(favour_first_identity) as server:
        annotators = tmp_path / "annotators.yaml"
        annotators.write_text(
            f"annotators:\n  - {{name: judge-a, backend: openai, model: fake-model, base_url: '{server.base_url}', "
            "params: {temperature: 0.2, seed: 3}}\n"
        )
        result = audit_annotators(annotators, workdir, limit=16, paradigms=["decision", "stereotyping"], progress=False)
        asked = len(server.requests)
        again = audit_annotators(annotators, workdir, limit=16, paradigms=["decision", "stereotyping"], progress=False,
                                 metrics=False)
        assert len(server.requests) == asked  # a re-run asks nothing
    assert asked == 8 * 6 + 8 * 12  # text variant only: 8 identity pairs x 6 roles, 8 portraits x 12 traits
    assert all(isinstance(b["messages"][-1]["content"], str) for b in server.requests)  # no image sent
    assert {b["temperature"] for b in server.requests} == {0.2} and {b["seed"] for b in server.requests} == {3}

    entry = result["annotators"]["judge-a"]["modalities"]["text"]
    assert entry == again["annotators"]["judge-a"]["modalities"]["text"]
    assert (entry["questions"], entry["answered"]) == (asked, asked)
    decision = entry["paradigms"]["decision"]["max_disparity"]
    assert decision["disparity"] > 0 and "decision:" in entry["headline"]

    [stored] = read_annotator_audits(workdir / "annotations.sqlite")
    assert (stored["annotator"], stored["modality"], stored["questions"]) == ("judge-a", "text", asked)
    assert stored["probe_version"] == result["probe_version"] == probe_version(["decision", "stereotyping"], 16)
    assert stored["summary"]["headline"] == entry["headline"]
    assert (workdir / "audit" / "judge-a" / "metrics" / "summary_text.png").is_file()

    # the annotate stage opens the same file as usual; only the annotators configured now are shown
    with AnnotationStore.for_workdir(workdir) as store:
        assert store.active() == {}
    spec = AnnotatorSpec(name="judge-a", kind="openai", model="fake-model", base_url=server.base_url,
                         params={"temperature": 0.2, "seed": 3})
    assert len(read_annotator_audits(workdir / "annotations.sqlite", {"judge-a": spec.fingerprint()})) == 1
    assert read_annotator_audits(workdir / "annotations.sqlite", {"judge-a": "another-fingerprint"}) == []


@pytest.mark.slow
def test_default_annotator_smollm2(tmp_path, smollm2_once):
    """The embedded SmolLM2-135M-Instruct, scored by option log-likelihood (loaded once per session: ~25-60 s on 2 cores)."""
    default = smollm2_annotator()
    result = audit_annotators(None, tmp_path / "w", limit=1, paradigms=["decision"], metrics=False, progress=False)
    entry = result["annotators"][default.name]["modalities"]["text"]
    assert (entry["questions"], entry["answered"]) == (6, 6)  # one identity pair, six role questions
    responses = [json.loads(line) for line in
                 (tmp_path / "w" / "audit" / default.name / "responses.jsonl").read_text().splitlines()]
    assert all(r["answer"] in r["options"] and abs(sum(r["probabilities"]) - 1) < 1e-4 for r in responses)
    [stored] = read_annotator_audits(tmp_path / "w" / "annotations.sqlite")
    assert stored["annotator"] == default.name
