"""`vilbias audit run` end to end: a tiny random VLM (scored), a chat server (constrained), kill and resume."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from tests.audit.conftest import row
from tests.fakes.openai_server import FakeOpenAIServer
from tests.forks import sigkill
from vilbias.audit import cli
from vilbias.audit.runner import AuditConfig, run_audit

LIMIT = 16  # an identity contrast and a portrait in each of the eight dimensions: all four paradigms
QUESTIONS = 8 * (12 + 12)  # 2 factuality + 4 perception + 6 decision; 12 stereotyping


def vilbias_audit(*argv: str) -> int:
    return cli.main(list(argv))


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def full_run(tiny_vlm_dir, tmp_path_factory):
    """`vilbias audit run` on a tiny random LLaVA-NeXT over the first 16 probe-set pairs."""
    out = tmp_path_factory.mktemp("audit_full") / "out"
    assert vilbias_audit("run", "--model", str(tiny_vlm_dir), "--limit", str(LIMIT), "--output", str(out), "--no-progress") == 0
    return out


def test_full_run_on_a_tiny_vlm(full_run):
    responses = read_jsonl(full_run / "responses.jsonl")
    assert len(responses) == 2 * QUESTIONS
    assert {r["modality"] for r in responses} == {"image", "text"}
    assert {r["paradigm"] for r in responses} == {"factuality", "perception", "stereotyping", "decision"}
    # answers are constrained to the options; a scored model always gives one
    assert all(r["answer"] in r["options"] and r["options"][r["position"]] == r["answer"] for r in responses)
    assert all(abs(sum(r["probabilities"]) - 1) < 1e-4 and len(r["probabilities"]) == len(r["options"]) for r in responses)
    images = {r["image"] for r in responses if r["modality"] == "image"}
    assert len(images) == LIMIT and all((full_run / i).is_file() for i in images)

    summary = json.loads((full_run / "summary.json").read_text())
    assert summary["run"]["asked"] == 2 * QUESTIONS and summary["run"]["failed"] == 0
    assert summary["answered"] == 2 * QUESTIONS
    assert set(summary["paradigms"]["image"]) == {"factuality", "perception", "stereotyping", "decision"}
    with sqlite3.connect(full_run / "audit.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM calls WHERE answer IS NOT NULL").fetchone()[0] == 2 * QUESTIONS

    metrics = full_run / "metrics"
    for name in ("selection", "log_odds", "pair_comp", "polarity", "factuality", "modality_delta", "summary"):
        assert (metrics / f"{name}.csv").stat().st_size > 0
    # Log odds compare an identity's activities; at this limit each identity is asked about one
    # activity per paradigm, and only stereotyping (a trait per question) has several.
    for plot in ("selection_decision.png", "selection_stereotyping.png", "log_odds_stereotyping_image.png",
                 "pair_comp_decision_role_text.png", "polarity_stereotyping_image.png", "summary_image.png",
                 "summary_text.png", "modality_delta.png"):
        assert (metrics / plot).read_bytes()[:4] == b"\x89PNG", plot
    tables = json.loads((metrics / "metrics.json").read_text())
    assert tables["modality_delta"] and all(r["delta"] == r["frequency_image"] - r["frequency_text"]
                                            for r in tables["modality_delta"])  # image vs text, per identity
    assert {r["dimension"] for r in tables["summary"]} == {
        "ability", "age", "gender_and_sex", "nationality", "physical_traits", "race_ethnicity_color", "religion",
        "socioeconomic"}


def test_a_rerun_asks_nothing(full_run, tiny_vlm_dir):
    before = (full_run / "responses.jsonl").read_text()
    summary = run_audit(AuditConfig(output=full_run, model=str(tiny_vlm_dir), limit=LIMIT, progress=False, metrics=False))
    assert summary["run"]["asked"] == 0
    assert (full_run / "responses.jsonl").read_text() == before


def answered_rows(db_path: Path) -> dict[tuple[str, str], tuple[str, str]]:
    if not db_path.exists():
        return {}
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT question_id, modality, answer, created_at FROM calls WHERE answer IS NOT NULL").fetchall()
    except sqlite3.OperationalError:  # polled before the run created its tables
        return {}
    finally:
        db.close()
    return {(q, m): (a, c) for q, m, a, c in rows}


KILL_LIMIT = 2
"""The kill test's pairs: the first two identity contrasts of the full run (12 questions each)."""
KILLED_AT = 20
"""Answers stored when the kill test kills its run (of :data:`KILL_CALLS`; each is committed as it arrives)."""
KILL_CALLS = 2 * KILL_LIMIT * 12


def test_kill_9_then_resume(full_run, tiny_vlm_dir, tmp_path, forks, command_python):
    """``vilbias audit run`` killed with SIGKILL (a fork of the suite's fork server, or fresh: tests/forks.py)."""
    out = tmp_path / "killed"
    proc = subprocess.Popen(
        [command_python, "-m", "vilbias.cli", "audit", "run", "--model", str(tiny_vlm_dir),
         "--limit", str(KILL_LIMIT), "--output", str(out), "--no-progress", "--no-metrics"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    db = out / "audit.sqlite"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if len(answered_rows(db)) >= KILLED_AT:
            break
        time.sleep(0.05)
    assert proc.poll() is None, proc.stderr.read().decode()
    sigkill(proc, forks)
    proc.stderr.close()

    before = answered_rows(db)
    assert KILLED_AT <= len(before) < KILL_CALLS
    summary = run_audit(AuditConfig(output=out, model=str(tiny_vlm_dir), limit=KILL_LIMIT, progress=False, metrics=False))
    after = answered_rows(db)
    assert summary["run"]["asked"] == KILL_CALLS - len(before)  # only the missing calls were asked
    assert len(after) == KILL_CALLS  # nothing lost
    assert all(after[key] == value for key, value in before.items())  # nothing recorded was asked again
    # and the interrupted run ends where an uninterrupted one does (seeded answers per question;
    # the full run's first pairs are these)
    resumed = {(r["question_id"], r["modality"]): r["answer"] for r in read_jsonl(out / "responses.jsonl")}
    uninterrupted = {(r["question_id"], r["modality"]): r["answer"] for r in read_jsonl(full_run / "responses.jsonl")}
    assert len(resumed) == KILL_CALLS and resumed == {key: uninterrupted[key] for key in resumed}


def chooser_responder(pick):
    """A chat server that obeys the JSON-schema constraint and answers ``pick(options, body)``."""

    def respond(body):
        if "response_format" not in body:
            return "no constraint was asked for"
        enum = body["response_format"]["json_schema"]["schema"]["properties"]["answer"]["enum"]
        return json.dumps({"answer": pick(enum, body)})

    return respond


def test_chat_server_answers_are_constrained_and_failures_asked_again(tmp_path):
    def pick(options, body):
        return options[-1]

    with FakeOpenAIServer(chooser_responder(pick)) as server:
        server.fail_next("malformed", n=3)  # not retried: three failed calls, asked again by the next run
        config = dict(output=tmp_path / "srv", model=f"openai:fake-model@{server.base_url}", limit=2,
                      paradigms=["decision", "perception"], progress=False, metrics=False, concurrency=2)
        first = run_audit(AuditConfig(**config))
        total = 2 * 2 * (6 + 4)  # 2 identity pairs x (6 role + 4 perception questions) x 2 modalities
        assert (first["run"]["asked"], first["run"]["failed"], first["run"]["answered"]) == (total, 3, total - 3)
        bodies = list(server.requests)
        second = run_audit(AuditConfig(**config, alpha=0.01))
        assert second["run"]["asked"] == 3 and second["run"]["failed"] == 0
    assert second["alpha"] == 0.01  # the run's metrics take the threshold it was given
    body = next(b for b in bodies if any(isinstance(m["content"], list) for m in b["messages"]))
    user = body["messages"][-1]["content"]
    assert user[0]["type"] == "image_url" and user[0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert body["temperature"] == 0.7 and body["seed"] == 0 and body["model"] == "fake-model"
    responses = read_jsonl(tmp_path / "srv" / "responses.jsonl")
    assert len(responses) == total
    assert all(r["answer"] == r["options"][-1] and r["raw"] == json.dumps({"answer": r["answer"]}) for r in responses)
    assert all("trait_pair" in r for r in responses)  # polarity pairs traits by it
    # the options sent are the question's options, in the order shown
    sent = {b["messages"][-1]["content"] if isinstance(b["messages"][-1]["content"], str)
            else b["messages"][-1]["content"][1]["text"]: b["response_format"]["json_schema"]["schema"]["properties"]["answer"]["enum"]
            for b in bodies}
    assert all(opts == [o.strip() for o in text.rsplit("Options: ", 1)[1].split(";")] for text, opts in sent.items())


def test_unconstrained_replies_are_matched_or_kept_as_abstentions(tmp_path):
    def respond(body):
        text = body["messages"][-1]["content"]
        options = text.rsplit("Options: ", 1)[1].split("; ")
        return f"I would say the {options[0]}." if "hire" in text else "I cannot tell from a picture."

    with FakeOpenAIServer(respond) as server:
        config = dict(output=tmp_path / "free", model=f"openai:fake-model@{server.base_url}", limit=2, modalities=["text"],
                      paradigms=["decision", "perception"], choice="none", progress=False, metrics=False)
        summary = run_audit(AuditConfig(**config))
        assert all("response_format" not in b for b in server.requests)
        again = run_audit(AuditConfig(**config))
    assert summary["run"]["unmatched"] == 2 * 4 + 2 * 5  # everything but the two "hire" questions
    assert summary["run"]["answered"] == 2 and again["run"]["asked"] == 0  # an abstention is an answer
    responses = read_jsonl(tmp_path / "free" / "responses.jsonl")
    assert sum(r["answer"] is None for r in responses) == summary["run"]["unmatched"]
    assert summary["unmatched"] == summary["run"]["unmatched"]


def test_metrics_command_on_a_responses_file(tmp_path):
    rows = [row("decision", "religion", "A", "B", a, modality=m) for a in "AAB" for m in ("image", "text")]
    rows += [row("decision", "religion", "A", "C", a, modality=m) for a in "AC" for m in ("image", "text")]
    path = tmp_path / "other-tool.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert vilbias_audit("metrics", "--responses", str(path), "--output", str(tmp_path / "m")) == 0
    selection = json.loads((tmp_path / "m" / "metrics.json").read_text())["selection"]
    a = next(r for r in selection if r["identity"] == "A" and r["family"] == "all" and r["modality"] == "text")
    assert (a["selected"], a["offered"]) == (3, 5)
    assert (tmp_path / "m" / "selection_decision.png").is_file() and (tmp_path / "m" / "summary.json").is_file()


def test_config_errors_before_any_work(tmp_path):
    with pytest.raises(ValueError, match="--model"):
        run_audit(AuditConfig(output=tmp_path))
    with pytest.raises(ValueError, match="paradigms"):
        run_audit(AuditConfig(output=tmp_path, model="smollm2", paradigms=["gossip"]))
    with pytest.raises(FileNotFoundError):
        run_audit(AuditConfig(output=tmp_path, model="smollm2", manifest=tmp_path / "nope.jsonl"))
