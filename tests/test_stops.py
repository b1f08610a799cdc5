"""A stop is clean and honest: Ctrl-C (SIGINT) and SIGTERM stop every long command within
:data:`STOP_S` with one line saying what was kept, and the same command run again ends exactly
where an uninterrupted run would (every row, call and checkpoint once).

Each command is started from Python (a process started with ``&`` from a non-interactive shell
ignores SIGINT), stopped with SIGINT once it has stored something, started again and stopped
with SIGTERM once it has stored more, then run to the end; the end is compared with a run that
was never stopped.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.web_server import WebServer
from tests.fakes.workdirs import make_workdir
from tests.ingest import site
from tests.training_classifier.conftest import multimodal_repo, tiny_bert  # noqa: F401  (fixtures)

STOP_S = 2.0
"""What a stop may take, signal to exit."""


@pytest.fixture
def vilbias(command_python):
    """``vilbias("build", ...)``: the command line of ``vilbias -q build ...``, started as a fork of
    the suite's fork server (its libraries already imported: ~5-8 s of CPU less a command), or
    fresh. A fork's exit leaves out the modules' teardown (tests/forks.py), ~0.1-0.17 s of a
    fresh command's exit; the stops measured fresh took 0.03-0.22 s in all, of :data:`STOP_S`."""
    return lambda *args: [command_python, "-m", "vilbias.cli", "-q", *args]


def stop(cmd: list[str], ready: Callable[[], bool], sig: int, log: Path, stage: str) -> str:
    """Run ``cmd``, send ``sig`` once ``ready()``, and check the stop: within STOP_S, exit status
    128 + sig, no traceback, and one line ``vilbias STAGE: stopped; ...``, the last. Returns what it says was kept."""
    with open(log, "wb") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env={**os.environ})
        deadline = time.monotonic() + 120
        while not ready() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proc.poll() is None, f"ended before it could be stopped:\n{log.read_text()[-3000:]}"
        sent = time.monotonic()
        proc.send_signal(sig)
        rc = proc.wait(30)
        took = time.monotonic() - sent
    text = log.read_text(encoding="utf-8", errors="replace")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    print(f"{stage}: {signal.Signals(sig).name} stopped it in {took:.2f} s")  # shown with -s: the measured stop times
    assert took <= STOP_S, f"{stage} took {took:.2f} s to stop:\n{text[-3000:]}"
    assert rc == 128 + sig, text[-3000:]
    assert "Traceback" not in text, text[-3000:]
    said = [ln for ln in lines if ": stopped" in ln]
    assert len(said) == 1 and said[0] == lines[-1] and said[0].startswith(f"vilbias {stage}: stopped; "), text[-3000:]
    return said[0].split("stopped; ", 1)[1]


def stop_twice(cmd: list[str], db: Path, stored: str, tmp_path: Path, stage: str, noun: str) -> list[tuple]:
    """Stop ``cmd`` with SIGINT once ``db`` holds 2 rows of ``stored``, then (run again) with SIGTERM
    once it holds 2 more: each stop says how many ``noun`` it kept, and the second run kept the
    first's and added to them. Returns the rows after the second stop."""
    kept = stop(cmd, lambda: len(rows(db, stored)) >= 2, signal.SIGINT, tmp_path / "1.log", stage)
    first = rows(db, stored)
    assert kept.startswith(f"{len(first)} {noun} kept in {db}; re-run the same command to resume")
    kept = stop(cmd, lambda: len(rows(db, stored)) >= len(first) + 2, signal.SIGTERM, tmp_path / "2.log", stage)
    second = rows(db, stored)
    assert set(first) < set(second) and kept.startswith(f"{len(second)} {noun} kept")
    return second


def rows(db: Path, sql: str) -> list[tuple]:
    if not db.is_file():
        return []
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchall()
    except sqlite3.OperationalError:  # polled before the run created its tables
        return []
    finally:
        con.close()


# -- annotate: the offline default model ----------------------------------------------------------


@pytest.mark.slow
def test_annotate_offline_stops_and_resumes_every_article_once(tmp_path, vilbias):
    from vilbias.annotate.cli import main as annotate_main
    from vilbias.workdir import read_articles, sample_workdir

    texts = [a.article_text for a in read_articles(sample_workdir())]  # real article lengths
    n = 80
    work = make_workdir(tmp_path / "w", n, texts={i: texts[i % len(texts)] for i in range(n)})
    db = work / "annotations.sqlite"
    answered = "SELECT item_id, created_at FROM calls WHERE raw IS NOT NULL"
    cmd = vilbias("annotate", "--workdir", str(work), "--no-progress")

    kept = stop(cmd, lambda: len(rows(db, answered)) > 0, signal.SIGINT, tmp_path / "1.log", "annotate")
    first = dict(rows(db, answered))
    assert 0 < len(first) < n
    assert kept.startswith(f"{len(first)} answers kept in {db}; re-run the same command to resume")

    kept = stop(cmd, lambda: len(rows(db, answered)) > len(first), signal.SIGTERM, tmp_path / "2.log", "annotate")
    second = dict(rows(db, answered))
    assert len(first) < len(second) < n and kept.startswith(f"{len(second)} answers kept")
    assert {k: second[k] for k in first} == first  # what the first run stored was not asked again

    assert annotate_main(cmd[cmd.index("annotate") + 1:]) == 0  # the same command, to the end (in this process)
    per_item = dict(rows(db, "SELECT item_id, COUNT(*) FROM calls GROUP BY item_id"))
    assert per_item == {f"item-{i}": 1 for i in range(n)}  # every article annotated exactly once
    final = dict(rows(db, answered))
    assert {k: final[k] for k in second} == second


# -- ingest ---------------------------------------------------------------------------------------


def test_ingest_stops_and_resumes_without_a_torn_or_repeated_line(tmp_path, vilbias):
    from vilbias.ingest.cli import main as ingest_main
    from vilbias.workdir import read_articles

    n = 30
    with WebServer(latency=0.04) as web:
        feed, links = site.story_feed(web, n, seed=200)
        work = tmp_path / "work"
        cmd = vilbias("ingest", "--feed", feed, "--workdir", str(work), "--allow-private-addresses", "--per-host", "1",
                      "--rate", "0", "--no-progress", "--timeout", "5")

        def lines() -> list[str]:
            path = work / "articles.jsonl"
            return path.read_text(encoding="utf-8").splitlines() if path.exists() else []

        kept = stop(cmd, lambda: len(lines()) >= 3, signal.SIGINT, tmp_path / "1.log", "ingest")
        first = len(lines())
        assert kept == f"{first} articles kept in {work / 'articles.jsonl'}; re-run the same command to resume (kept and dropped items are skipped)"
        kept = stop(cmd, lambda: len(lines()) >= first + 3, signal.SIGTERM, tmp_path / "2.log", "ingest")
        second = len(lines())
        assert second < n and kept.startswith(f"{second} articles kept")
        kept_before = {a.source_url for a in read_articles(work)}
        asked_before = len(web.requests)
        web.latency = 0.0  # it kept the commands running until they were stopped; the rest needs no wait

        assert ingest_main(cmd[cmd.index("ingest") + 1:]) == 0  # the same command, to the end (in this process)
        assert all(json.loads(line) for line in lines()) and len(lines()) == n  # whole lines, none twice
        assert sorted(a.url for a in read_articles(work)) == sorted(links)
        rerun = [web.url("127.0.0.1", r.path) for r in web.requests[asked_before:] if r.path.startswith("/a/")]
        assert sorted(rerun) == sorted(set(links) - kept_before)  # nothing kept is fetched again


# -- build ----------------------------------------------------------------------------------------


def _tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_stop_as_the_scratch_folder_is_removed_waits_for_the_removal(tmp_path, monkeypatch):
    """A signal that lands as a build removes its scratch folder (a build that just ended, or one
    stopped a moment before) is delivered once the folder is gone: it once left it half removed
    (seen once in a full run of the suite: the test above sends its signal as soon as the folder
    exists, and a quick build can be removing it by then)."""
    import shutil

    from vilbias.corpus import BuildConfig, build

    remove = shutil.rmtree

    def signalled_rmtree(path, *args, **kwargs):
        if ".vilbias-build-" in str(path):
            os.kill(os.getpid(), signal.SIGINT)  # the stop lands as the removal starts
        remove(path, *args, **kwargs)

    monkeypatch.setattr(shutil, "rmtree", signalled_rmtree)
    with pytest.raises(KeyboardInterrupt):
        build(BuildConfig(output=tmp_path / "corpus"))
    assert not list(tmp_path.glob(".vilbias-build-*"))


def test_build_stop_leaves_the_previous_build_untouched(tmp_path, vilbias, sample_dataset_dir):
    import shutil

    from vilbias.corpus.cli import main as build_main

    out = tmp_path / "corpus"
    shutil.copytree(sample_dataset_dir, out)  # the previous build: the session's build of the same command
    previous = _tree(out)
    cmd = vilbias("build", "--output", str(out))
    scratch = lambda: list(tmp_path.glob(".vilbias-build-*"))  # noqa: E731
    for i, sig in enumerate((signal.SIGINT, signal.SIGTERM)):
        kept = stop(cmd, lambda: bool(scratch()), sig, tmp_path / f"{i}.log", "build")
        assert kept == f"the previous build in {out} is untouched; a build starts over: re-run the same command to build it"
        assert _tree(out) == previous and not scratch()  # the scratch folder is gone
    assert build_main(cmd[cmd.index("build") + 1:]) == 0  # the same command, to the end (in this process)
    rebuilt = _tree(out)
    data = lambda tree: {k: v for k, v in tree.items() if k.startswith("data/")}  # noqa: E731
    assert data(rebuilt) == data(previous) and data(previous)  # the same rows, byte for byte


# -- train classifier -----------------------------------------------------------------------------


def _no_timings(history: list[dict]) -> list[dict]:
    return [{k: v for k, v in entry.items() if not k.endswith(("runtime", "per_second"))} for entry in history]


def _assert_the_same_end(out: Path, resumed: dict, whole_out: Path, whole: dict) -> None:
    """A run resumed in ``out`` ended as the run never stopped (``whole_out``): weights, test
    scores, the whole log (each epoch's loss, grad_norm and validation scores) and predictions."""
    from safetensors.numpy import load_file

    assert not (out / "checkpoints").exists()  # a finished run keeps no checkpoint
    weights, expected = load_file(str(out / "model.safetensors")), load_file(str(whole_out / "model.safetensors"))
    assert weights.keys() == expected.keys() and all((weights[k] == expected[k]).all() for k in weights)
    assert resumed["test"] == whole["test"]
    assert _no_timings(resumed["log_history"]) == _no_timings(whole["log_history"])  # every epoch's loss and scores
    assert (out / "predictions.jsonl").read_bytes() == (whole_out / "predictions.jsonl").read_bytes()


@pytest.mark.slow
def test_train_classifier_stopped_mid_epoch_resumes_exactly(tmp_path, multimodal_repo, tiny_bert, monkeypatch):  # noqa: F811
    """Stops asked for at chosen steps (in this process, not by a signal's timing), re-run after
    each, end as a run never stopped: in the middle of the first epoch (step 3 of 2 epochs of 7
    steps), between the second epoch's start and its first step (asked at the start of step 7, it
    waits for that step's end: a checkpoint at 8), as that run resumes (at its first step: 8 again),
    and once more in that resumed epoch (11). Mid-epoch, the resumed epoch must draw the batch
    order it drew before the stop (it once drew another: its loss and grad_norm differed and later
    weights drifted)."""
    from transformers import TrainerCallback
    from vilbias.training import engine
    from vilbias.training.classifier import parse_config, train_classifier

    from vilbias import stops

    args = ["--dataset", str(multimodal_repo), "--model", tiny_bert, "--num-train-epochs", "2",
            "--per-device-train-batch-size", "4", "--patience", "0"]
    asked = {"end": None, "begin": None, "start": False, "now": False}  # ask at the end / start of a step, or as training starts

    class AskAt(TrainerCallback):  # added before SaveOnStop, so it asks before SaveOnStop looks
        def on_train_begin(self, args, state, control, **kwargs):
            asked["now"] = asked["start"]

        def on_step_begin(self, args, state, control, **kwargs):
            asked["now"] = asked["now"] or state.global_step == asked["begin"]

        def on_step_end(self, args, state, control, **kwargs):
            asked["now"] = asked["now"] or state.global_step == asked["end"]

    make_trainer = engine.make_trainer
    monkeypatch.setattr(engine, "make_trainer", lambda *a, **k: (t := make_trainer(*a, **k)).add_callback(AskAt()) or t)
    monkeypatch.setattr(stops, "requested", lambda: asked["now"])

    whole = train_classifier(parse_config([*args, "--output", str(tmp_path / "whole")]))
    out = tmp_path / "stopped"
    for when, step, kept in (("end", 3, 3), ("begin", 7, 8), ("start", True, 8), ("end", 11, 11)):
        asked.update({"end": None, "begin": None, "start": False}, **{when: step})
        with pytest.raises(stops.Stopped, match=rf"training stopped at step {kept} of 14; checkpoint .*checkpoint-{kept} kept"):
            train_classifier(parse_config([*args, "--output", str(out)]))
        record = json.loads((out / "checkpoints" / f"checkpoint-{kept}" / "vilbias_resume.json").read_text())
        assert record["step"] == kept and record["epoch_first_step"] == 7 * (kept // 7)
    asked.update({"end": None, "begin": None, "start": False})
    resumed = train_classifier(parse_config([*args, "--output", str(out)]))
    _assert_the_same_end(out, resumed, tmp_path / "whole", whole)


@pytest.mark.slow
def test_train_classifier_stop_saves_a_checkpoint_the_rerun_resumes_exactly(tmp_path, vilbias, multimodal_repo, tiny_bert):  # noqa: F811
    from vilbias.training.classifier import parse_config, train_classifier
    from vilbias.training.engine import torch_threads

    args = ["--dataset", str(multimodal_repo), "--model", tiny_bert, "--num-train-epochs", "4",
            "--per-device-train-batch-size", "4", "--patience", "0"]
    out = tmp_path / "stopped"
    cmd = vilbias("train", "classifier", *args, "--output", str(out))

    def steps() -> list[int]:
        return sorted(int(p.name.rpartition("-")[2]) for p in (out / "checkpoints").glob("checkpoint-*/vilbias_resume.json")
                      for p in [p.parent])

    kept = stop(cmd, lambda: any((out / "checkpoints").glob("checkpoint-*")), signal.SIGINT, tmp_path / "1.log", "train")
    first = steps()
    assert len(first) == 1, kept
    assert re.fullmatch(rf"training stopped at step {first[0]} of 28; checkpoint {out}/checkpoints/checkpoint-{first[0]} "
                        r"kept: re-run the same command to resume from it", kept)
    later = lambda: any(int(p.name.rpartition("-")[2]) > first[0] for p in (out / "checkpoints").glob("checkpoint-*"))  # noqa: E731
    kept = stop(cmd, later, signal.SIGTERM, tmp_path / "2.log", "train")
    second = steps()[-1]
    assert second > first[0] and f"checkpoint-{second} kept" in kept
    # Wherever the signals land (an epoch's start or its middle: 7 steps an epoch), the re-run ends
    # as the run never stopped (a stop mid-epoch once resumed on other batches: about 3 runs in 8 failed).
    print(f"train: stopped at steps {first[0]} and {second}")  # shown with -s
    record = json.loads((out / "checkpoints" / f"checkpoint-{second}" / "vilbias_resume.json").read_text())
    assert record["step"] == second and record["epoch_first_step"] == 7 * (second // 7)
    stopped_threads = record["torch_threads"]
    assert stopped_threads == int(os.environ["OMP_NUM_THREADS"])  # what the stopped command ran on
    # This process runs on the stopped command's count, whatever an earlier test left (a Space's
    # warm-up takes every core): the same sums split over another count round differently.
    with torch_threads(stopped_threads):
        resumed = train_classifier(parse_config([*args, "--output", str(out)]))
        whole = train_classifier(parse_config([*args, "--output", str(tmp_path / "whole")]))
    _assert_the_same_end(out, resumed, tmp_path / "whole", whole)


def test_a_resumed_training_runs_on_the_stopped_runs_thread_count():
    """fit() resumes inside ``torch_threads(<the checkpoint's torch_threads>)``: torch runs on that
    count (a re-run with another OMP_NUM_THREADS would round its sums differently) and the caller's
    count comes back after, also when the training stops again."""
    import torch
    from vilbias.training.engine import torch_threads

    from vilbias import stops

    threads = torch.get_num_threads()
    with pytest.raises(stops.Stopped), torch_threads(threads + 1):
        assert torch.get_num_threads() == threads + 1
        raise stops.Stopped("stopped again")
    assert torch.get_num_threads() == threads
    with torch_threads(None):  # a checkpoint saved before the count was recorded: left as it is
        assert torch.get_num_threads() == threads


# -- evaluate and audit run: answers through the ledger --------------------------------------------


def test_evaluate_stops_and_resumes_every_answer_once(tmp_path, vilbias, sample_dataset_dir):
    from vilbias.evaluate.config import EvaluateConfig
    from vilbias.evaluate.runner import evaluate

    with FakeOpenAIServer(latency_s=0.15) as server:
        model = f"openai:stub-vlm@{server.base_url}"
        out = tmp_path / "run"
        options = ["--dataset", str(sample_dataset_dir), "--model", model, "--concurrency", "1"]
        cmd = vilbias("evaluate", *options, "--output", str(out))
        db, stored = out / "evaluation.sqlite", "SELECT item, label FROM predictions"

        second = stop_twice(cmd, db, stored, tmp_path, "evaluate", "answers")
        asked = len(server.requests)
        server.latency_s = 0.0  # it kept the command running until it was stopped; the rest needs no wait

        resumed = evaluate(EvaluateConfig(dataset=str(sample_dataset_dir), model=model, output=out, concurrency=1))
        rerun_asked, asked = len(server.requests) - asked, len(server.requests)
        whole = evaluate(EvaluateConfig(dataset=str(sample_dataset_dir), model=model, output=tmp_path / "whole", concurrency=1))
        items = len(server.requests) - asked
    assert rerun_asked == items - len(second)  # the re-run asked only what was not stored
    assert sorted(rows(db, stored)) == sorted(rows(tmp_path / "whole" / "evaluation.sqlite", stored))
    assert resumed["evaluations"] == whole["evaluations"]


def test_audit_run_stops_and_resumes_every_call_once(tmp_path, vilbias):
    from vilbias.audit.runner import AuditConfig, run_audit

    with FakeOpenAIServer(lambda body: json.dumps({"answer": body["response_format"]["json_schema"]["schema"]["properties"]["answer"]["enum"][0]}),
                          latency_s=0.1) as server:
        model = f"openai:fake-model@{server.base_url}"
        out = tmp_path / "audit"
        options = dict(model=model, limit=2, modalities=["text"], paradigms=["decision"], concurrency=1, progress=False, metrics=False)
        cmd = vilbias("audit", "run", "--model", model, "--limit", "2", "--modalities", "text", "--paradigms", "decision",
                      "--concurrency", "1", "--no-progress", "--no-metrics", "--output", str(out))
        db, stored = out / "audit.sqlite", "SELECT question_id, answer, created_at FROM calls"

        second = stop_twice(cmd, db, stored, tmp_path, "audit", "calls")
        server.latency_s = 0.0  # it kept the command running until it was stopped; the rest needs no wait

        resumed = run_audit(AuditConfig(output=out, **options))
        whole = run_audit(AuditConfig(output=tmp_path / "whole", **options))
    assert resumed["run"]["asked"] == whole["run"]["asked"] - len(second)  # only what was not stored
    assert set(second) <= set(rows(db, stored))  # stored calls were not asked again
    answers = lambda folder: sorted((r["question_id"], r["answer"]) for r in map(json.loads, (folder / "responses.jsonl").read_text().splitlines()))  # noqa: E731
    assert answers(out) == answers(tmp_path / "whole") and len(answers(out)) == whole["run"]["asked"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_one_stop_path(sig):
    """SIGTERM takes Ctrl-C's path (vilbias.stops.install), inside and outside a deferred block; a
    stop asked for after a deferred block's last safe point stops at its end."""
    code = (
        "import os, signal, time\nfrom vilbias import stops\nstops.install()\n"
        "try:\n    with stops.deferred():\n        os.kill(os.getpid(), SIG)\n        time.sleep(0.1)\n"
        "        assert stops.requested()\nexcept KeyboardInterrupt:\n    pass\nelse:\n    raise SystemExit(1)\n"
        "assert not stops.requested()\n"
        "try:\n    os.kill(os.getpid(), SIG)\n    time.sleep(1)\nexcept KeyboardInterrupt:\n    raise SystemExit(stops.exit_status())\n"
    ).replace("SIG", str(int(sig)))
    assert subprocess.run([sys.executable, "-c", code], timeout=30).returncode == 128 + sig
