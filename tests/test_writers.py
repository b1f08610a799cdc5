"""What ordinary machines do to a command that writes (issue #48): a full disk, two commands on one
folder, a shared machine's umask.

- **A full disk** is one line naming the folder, the space free, roughly what the step needed and
  what was kept, for every command that writes; nothing half-written is left to be read as whole.
  Each command runs for real with the fault injected at its write (``ENOSPC`` from the kernel,
  ``SQLITE_FULL`` from SQLite, pyarrow's ``OSError``), and, where the test can make one
  (``unshare -rm``: a user and mount namespace, no root needed), on a size-limited tmpfs.
- **One writer per folder**: a second command on a folder another one writes waits, then refuses in
  one line naming the other (its command line and process id); the lock is released on every exit
  path, a killed holder's included, and is no file of the user's (not foreign to the claim, not
  uploaded, removed at the end).
- **Files as the umask says**: what is written through a temporary file gets the permissions an
  ordinary write would (not mkstemp's 0600), and an existing file keeps its own.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import hashlib
import json
import os
import sqlite3
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.web_server import WebServer
from tests.fakes.workdirs import make_workdir
from tests.ingest import site
from vilbias import outputs
from vilbias.cli import main

REPO = Path(__file__).resolve().parents[1]


def tree(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` and its sha256."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != outputs.LOCK_FILE}


def one_error_line(capsys, stage: str) -> str:
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip() and ": error: " in ln or ln.startswith("vilbias")]
    lines = [ln for ln in err if ln.startswith(f"vilbias {stage}")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture
def fsync_fails(monkeypatch):
    """``os.fsync`` of a file under a folder reports a full disk (after ``ok`` good calls): where a
    filesystem with delayed allocation does (ext4, XFS), on the first flush that needs a block."""
    state = {"ok": 0, "under": None, "failed": 0}
    real = os.fsync

    def fsync(fd):
        path = os.readlink(f"/proc/self/fd/{fd}") if os.path.exists(f"/proc/self/fd/{fd}") else ""
        if state["under"] is not None and path.startswith(str(state["under"])):
            if state["ok"] <= 0:
                state["failed"] += 1
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            state["ok"] -= 1
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)

    def arm(under: Path, ok: int = 0):
        state.update(under=Path(under).resolve(), ok=ok)
        return state

    return arm


@pytest.fixture
def ledger_full(monkeypatch):
    """Every ledger (annotate, evaluate, audit) finds its disk full after ``ok`` good transactions."""
    from vilbias.ledger import Ledger

    state = {"ok": 0}
    real = Ledger.transaction

    @contextlib.contextmanager
    def transaction(self):
        with real(self) as db:
            if state["ok"] <= 0:
                raise sqlite3.OperationalError("database or disk is full")
            state["ok"] -= 1
            yield db

    monkeypatch.setattr(Ledger, "transaction", transaction)

    def arm(ok: int = 0):
        state["ok"] = ok

    return arm


def no_temporaries(folder: Path) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.name.endswith((".tmp", ".partial")) or p.name.startswith(".vilbias-build-")]


# -- a full disk, command by command ----------------------------------------------------------------


def test_ingest_on_a_full_disk_keeps_every_whole_line_and_says_so(tmp_path, capsys, fsync_fails):
    from vilbias.workdir import read_jsonl

    with WebServer() as web:
        feed, _ = site.story_feed(web, 6, seed=1)
        work = tmp_path / "work"
        state = fsync_fails(work / "images", ok=2)  # room for two images
        rc = main(["-q", "ingest", "--feed", feed, "--workdir", str(work), "--allow-private-addresses", "--rate", "0",
                   "--per-host", "1", "--no-progress", "--timeout", "5"])
    line = one_error_line(capsys, "ingest")
    assert rc == 1 and state["failed"] >= 1
    # every line whole (items still on their way when the disk filled are not kept: a re-run takes them)
    kept = [json.loads(x) for x in (work / "articles.jsonl").read_text().splitlines()]
    assert len(kept) <= 2 and len(list(read_jsonl(work / "articles.jsonl"))) == len(kept)
    assert all((work / a["image_path"]).is_file() for a in kept)  # every line names an image that is whole
    assert not no_temporaries(work) and not (work / outputs.LOCK_FILE).exists()
    assert line.startswith(f"vilbias ingest: error: no space left on the disk holding {work} (")
    assert "; the file being written needed " in line  # an image's bytes
    assert line.endswith(f"{len(kept)} articles kept in {work / 'articles.jsonl'}; re-run the same command to resume "
                         "(kept and dropped items are skipped)")


def test_a_line_the_disk_cuts_short_is_taken_back(tmp_path, monkeypatch):
    from vilbias.workdir import append_jsonl, read_jsonl

    path = tmp_path / "articles.jsonl"
    append_jsonl(path, {"unique_id": "a"})
    before = path.read_bytes()
    real = os.write

    def write(fd, data):  # the disk takes 5 bytes, then is full
        if len(data) > 5:
            return real(fd, bytes(data[:5]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", write)
    with pytest.raises(OSError) as e:
        append_jsonl(path, {"unique_id": "b", "text": "x" * 100})
    monkeypatch.undo()
    assert outputs.is_disk_full(e.value) and e.value.needed > 100
    assert path.read_bytes() == before and [r["unique_id"] for r in read_jsonl(path)] == ["a"]


def test_annotate_on_a_full_disk_says_what_the_ledger_kept(tmp_path, capsys, ledger_full):
    from tests.annotate.conftest import answer

    work = make_workdir(tmp_path / "w", n=8)
    with FakeOpenAIServer(lambda body: answer("biased")) as server:
        annotators = tmp_path / "annotators.yaml"
        annotators.write_text(f"annotators:\n  - {{name: fake, backend: openai, model: fake-model, base_url: '{server.base_url}', "
                              "concurrency: 1}\n")
        ledger_full(ok=3)
        rc = main(["annotate", "--workdir", str(work), "--annotators", str(annotators), "--samples", "1", "--no-progress",
                   "--prompts", "text"])
    line = one_error_line(capsys, "annotate")
    answered = sqlite3.connect(work / "annotations.sqlite").execute("SELECT COUNT(*) FROM calls WHERE raw IS NOT NULL").fetchone()[0]
    assert rc == 1 and answered < 8
    assert line.startswith(f"vilbias annotate: error: no space left on the disk holding {work} (")
    assert "vilbias annotate needed more than the " in line and " free when it started" in line
    assert line.endswith(f"{answered} answers kept in {work / 'annotations.sqlite'}; re-run the same command to resume "
                         "(it asks only what is missing)" if answered else "no answers were stored yet; re-run the same command to start")


@pytest.fixture
def reviewed(tmp_path):
    """An annotated workdir (two stub annotators) and its exported sheet, every row judged Acceptable."""
    from tests.annotate.conftest import StubBackend, answer, stub_spec
    from vilbias.annotate.pipeline import AnnotateConfig, annotate
    from vilbias.review import ExportConfig, export_sheets

    work = make_workdir(tmp_path / "work", n=3)
    backends = {k: StubBackend(lambda item, prompt, sample, request: answer("biased", rationale="why", prompt=prompt)) for k in "ab"}
    annotate(AnnotateConfig(workdir=work, samples=1, annotator_specs=[stub_spec("a"), stub_spec("b")], backends=backends, progress=False))
    export_sheets(ExportConfig(workdir=work, output=tmp_path / "sheets"))
    with open(tmp_path / "sheets" / "sheet_reviewer_1.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    filled = tmp_path / "filled.csv"
    with open(filled, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows({**r, "verdict": "Acceptable"} for r in rows)
    return work, filled


@pytest.mark.parametrize("command", ["import", "export", "stats"])
def test_review_on_a_full_disk_leaves_every_file_as_it_was(reviewed, tmp_path, capsys, fsync_fails, command):
    work, filled = reviewed
    sheets = tmp_path / "sheets"
    argv = {"import": ["review", "import", "--workdir", str(work), str(filled)],
            "export": ["review", "export", "--workdir", str(work), "--output", str(tmp_path / "new-sheets")],
            "stats": ["review", "stats", "--workdir", str(work), "--no-plot"]}[command]
    folder = {"import": work, "export": tmp_path / "new-sheets", "stats": work}[command]
    before = tree(work), tree(sheets)
    fsync_fails(tmp_path)
    assert main(argv) == 1
    line = one_error_line(capsys, "review")
    assert (tree(work), tree(sheets)) == before and not no_temporaries(tmp_path)
    assert not (tmp_path / "new-sheets").exists() or not list((tmp_path / "new-sheets").glob("sheet_*"))
    assert line.startswith(f"vilbias review: error: no space left on the disk holding {folder} (")
    assert "the file being written needed " in line
    assert line.endswith({"import": "nothing was imported (verdicts.jsonl is as it was); re-run the same command to import",
                          "export": f"the sheets in {tmp_path / 'new-sheets'} are whole; re-run the same command to write the rest",
                          "stats": "reviews/stats.json is as it was; re-run the same command"}[command])


def test_build_on_a_full_disk_leaves_the_previous_build(tmp_path, capsys, monkeypatch):
    import pyarrow.parquet as pq

    out = tmp_path / "BiasCorpus"
    assert main(["-q", "build", "--output", str(out)]) == 0
    before = tree(out)
    real = pq.ParquetWriter.write_table
    written = {"n": 0}

    def write_table(self, *a, **k):
        written["n"] += 1
        if written["n"] > 3:  # pyarrow's own words for ENOSPC
            raise OSError(errno.ENOSPC, "Error writing bytes to file. Detail: [errno 28] No space left on device")
        return real(self, *a, **k)

    monkeypatch.setattr(pq.ParquetWriter, "write_table", write_table)
    capsys.readouterr()
    assert main(["-q", "build", "--output", str(out)]) == 1
    line = one_error_line(capsys, "build")
    assert tree(out) == before and not no_temporaries(tmp_path) and sorted(os.listdir(tmp_path)) == ["BiasCorpus"]
    assert line.startswith(f"vilbias build: error: no space left on the disk holding {out} (")
    assert "; vilbias build writes about " in line and " MB there in all); " in line  # its source's size
    assert line.endswith(f"the previous build in {out} is untouched; a build starts over: re-run the same command to build it")


def test_evaluate_and_audit_on_a_full_disk_say_what_their_ledgers_kept(tmp_path, capsys, sample_dataset_dir, ledger_full):
    with FakeOpenAIServer(lambda body: json.dumps({"answer": body["response_format"]["json_schema"]["schema"]["properties"]
                                                   ["answer"]["enum"][0]}) if "response_format" in body else "Label: biased\n"
                          "Reasoning: loaded words.") as server:
        ledger_full(ok=0)  # full before the first answer: the folder the command made (to lock it) is removed again
        assert main(["-q", "evaluate", "--dataset", str(sample_dataset_dir), "--model", f"openai:stub-vlm@{server.base_url}",
                     "--concurrency", "1", "--output", str(tmp_path / "run0")]) == 1
        assert one_error_line(capsys, "evaluate").endswith("no answers were stored yet; re-run the same command to start")
        assert not (tmp_path / "run0").exists()

        ledger_full(ok=2)
        run = tmp_path / "run"
        rc = main(["-q", "evaluate", "--dataset", str(sample_dataset_dir), "--model", f"openai:stub-vlm@{server.base_url}",
                   "--concurrency", "1", "--output", str(run)])
        line = one_error_line(capsys, "evaluate")
        assert rc == 1 and line.startswith(f"vilbias evaluate: error: no space left on the disk holding {run} (")
        assert " answers kept in " in line or line.endswith("no answers were stored yet; re-run the same command to start")

        ledger_full(ok=2)
        audit = tmp_path / "audit"
        rc = main(["-q", "audit", "run", "--model", f"openai:fake-model@{server.base_url}", "--limit", "2", "--modalities", "text",
                   "--paradigms", "decision", "--concurrency", "1", "--no-progress", "--no-metrics", "--output", str(audit)])
        line = one_error_line(capsys, "audit")
        assert rc == 1 and line.startswith(f"vilbias audit: error: no space left on the disk holding {audit} (")
        assert line.endswith("re-run the same command to resume (it asks only what is missing)")


def test_a_full_disk_in_any_stage_is_one_line(tmp_path, capsys, monkeypatch):
    """The command line's own handler: a stage that declares nothing (here one planted for the test,
    standing for any stage: train, a future one) still ends in one line naming the folder it claimed."""
    import types

    from vilbias import cli

    module = types.ModuleType("fake_stage")

    def stage_main(argv, prog):
        outputs.claim_output(argv[0], prog, signs=("x",))
        torch_like = RuntimeError("PytorchStreamWriter failed writing file data/0: file write failed")
        raise torch_like from OSError(errno.ENOSPC, "No space left on device")

    module.main = stage_main
    monkeypatch.setitem(sys.modules, "fake_stage", module)
    monkeypatch.setitem(cli.STAGES, "fake", ("fake_stage", "a stage that fills the disk"))
    out = tmp_path / "out"
    assert main(["fake", str(out)]) == 1
    line = one_error_line(capsys, "fake")
    assert line.startswith(f"vilbias fake: error: no space left on the disk holding {out} (")
    assert line.endswith("; what was written before is whole; free some space and run it again")
    assert not out.exists()  # the folder the claim made for its lock is gone with it


# -- a full disk, for real: a size-limited tmpfs (where a user namespace can mount one) ------------


def _unshare_works() -> bool:
    try:
        return subprocess.run(["unshare", "-rm", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


needs_tmpfs = pytest.mark.skipif(not _unshare_works(), reason="no user namespaces here (unshare -rm): no tmpfs of a chosen size")

_IN_TMPFS = """
import hashlib, json, os, subprocess, sys
from pathlib import Path
disk = Path(sys.argv[1]); steps = json.loads(sys.argv[2])
def tree(folder):
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name not in (".vilbias.lock", "filler")}
def free():
    return os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
report = []
for step in steps:
    if isinstance(step, dict):  # {"leave": N}: a file fills the disk up to N bytes free
        (disk / "filler").write_bytes(bytes(max(0, free() - step["leave"])))
        continue
    done = subprocess.run([sys.executable, "-m", "vilbias.cli", "-q", *step], cwd=disk, capture_output=True, text=True)
    report.append({"rc": done.returncode, "err": done.stderr, "tree": tree(disk), "free": free()})
print(json.dumps(report))
"""


def in_tmpfs(tmp_path: Path, size: str, steps: list) -> list[dict]:
    """Run ``vilbias`` command lines one after another in a fresh tmpfs of ``size`` (mounted over
    ``tmp_path/disk`` in a namespace of their own; a step ``{"leave": N}`` fills it up to N bytes
    free); what each command said and left."""
    disk = tmp_path / "disk"
    disk.mkdir()
    script = tmp_path / "in_tmpfs.py"
    script.write_text(_IN_TMPFS)
    shell = 'mount -t tmpfs -o size="$1" tmpfs "$2" && exec "$3" "$4" "$2" "$5"'
    done = subprocess.run(["unshare", "-rm", "sh", "-c", shell, "sh", size, str(disk), sys.executable, str(script), json.dumps(steps)],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(REPO / "src")}, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@needs_tmpfs
def test_a_second_build_on_a_nearly_full_tmpfs(tmp_path):
    """The sample builds to ~1.6 MB: the first build fits, then the disk is filled up to 1 MB free,
    which the second build, written beside the first before it replaces it, does not fit in."""
    first, second = in_tmpfs(tmp_path, "8m", [["build", "--output", "BiasCorpus"], {"leave": 1_000_000},
                                              ["build", "--output", "BiasCorpus"]])
    assert first["rc"] == 0, first["err"]
    lines = second["err"].strip().splitlines()
    assert second["rc"] == 1 and len(lines) == 1, second["err"]
    assert lines[0].startswith("vilbias build: error: no space left on the disk holding BiasCorpus (")
    assert lines[0].endswith("the previous build in BiasCorpus is untouched; a build starts over: re-run the same command to build it")
    assert second["tree"] == first["tree"]  # the first build, byte for byte, and no scratch folder


@needs_tmpfs
def test_ingest_on_a_small_tmpfs(tmp_path):
    """40 stories, each an image (under 4 KB: one 4 KB page of the tmpfs) and a line of ~2.8 KB in
    articles.jsonl: 272 KB in all. The images are fetched and saved in worker threads while the
    lines are written in order, so on a busy machine every image can land before the first line:
    224 KB holds all 40 images and at least 20 lines whatever the order, and never all 40 lines."""
    with WebServer() as web:
        feed, _ = site.story_feed(web, 40, seed=3, host="127.0.0.1")
        (result,) = in_tmpfs(tmp_path, "224k", [["ingest", "--feed", feed, "--workdir", "work", "--allow-private-addresses",
                                                  "--rate", "0", "--no-progress", "--timeout", "5"]])
    lines = [ln for ln in result["err"].strip().splitlines() if ln.startswith("vilbias ingest")]
    assert result["rc"] == 1 and len(lines) == 1, result["err"]
    assert lines[0].startswith("vilbias ingest: error: no space left on the disk holding work (")
    kept = int(lines[0].split("; ")[-2].split(" articles kept")[0]) if " articles kept" in lines[0] else None
    assert kept is not None and 0 < kept < 40, lines[0]
    images = {k for k in result["tree"] if k.startswith("work/images/")}
    assert len(images) >= kept and not any(k.endswith(".tmp") for k in result["tree"])


# -- one writer per folder --------------------------------------------------------------------------


HOLDER = textwrap.dedent("""
    import sys, time
    from vilbias import outputs
    folder, seconds, sys.argv = sys.argv[1], float(sys.argv[2]), ["vilbias", *sys.argv[3:]]
    with outputs.writing():
        outputs.hold(folder, "vilbias " + sys.argv[1])
        print("held", flush=True)
        time.sleep(seconds)
""")


@contextlib.contextmanager
def holder(folder: Path, seconds: float, *argv: str):
    """Another process writing ``folder`` as ``vilbias ARGV`` for ``seconds``; yields it once it holds the lock."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder), str(seconds), *argv], stdout=subprocess.PIPE, text=True,
                            cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    try:
        assert proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        proc.kill()
        proc.wait()


def test_a_second_build_into_a_folder_being_written_refuses_naming_the_first(tmp_path, capsys, monkeypatch):
    out = tmp_path / "BiasCorpus"
    assert main(["-q", "build", "--output", str(out)]) == 0
    before = tree(out)
    monkeypatch.setattr(outputs, "LOCK_WAIT", 0.5)
    with holder(out, 30, "build", "--workdir", "w2", "--output", str(out)) as other:
        capsys.readouterr()
        started = time.monotonic()
        assert main(["-q", "build", "--output", str(out)]) == 2
        waited = time.monotonic() - started
    line = one_error_line(capsys, "build")
    assert line == (f"vilbias build: error: --output {out} is being written by another command, `vilbias build --workdir w2 --output "
                    f"{out}` (process {other.pid}, since {line.split('since ')[1].split(')')[0]}): wait for it to end, or name "
                    "another --output")
    assert 0.5 <= waited < 10 and tree(out) == before  # nothing replaced, nothing reported built


def test_a_second_command_waits_for_the_first_to_end(tmp_path, capsys, caplog):
    out = tmp_path / "BiasCorpus"
    with holder(out, 1.5, "build", "--output", str(out)):
        assert main(["build", "--output", str(out)]) == 0  # waits (up to LOCK_WAIT), then builds
    assert "is being written by another command, `vilbias build --output" in caplog.text and "waiting up to 10 s" in caplog.text
    assert (out / "build_report.json").is_file() and not (out / outputs.LOCK_FILE).exists()


def test_ingest_and_annotate_on_one_workdir(tmp_path, capsys, monkeypatch):
    work = make_workdir(tmp_path / "w", n=2)
    monkeypatch.setattr(outputs, "LOCK_WAIT", 0.2)
    with holder(work, 30, "ingest", "--feed", "https://example.com/rss", "--workdir", str(work)) as other:
        assert main(["annotate", "--workdir", str(work), "--annotators", "smollm2"]) == 2
        line = one_error_line(capsys, "annotate")
    assert f"--workdir {work} is being written by another command, `vilbias ingest --feed https://example.com/rss --workdir {work}` " \
           f"(process {other.pid}" in line
    assert not (work / "annotations.sqlite").exists()


def test_the_lock_is_released_on_every_way_out(tmp_path, monkeypatch):
    from filelock import FileLock

    def free(folder: Path) -> bool:
        lock = FileLock(str(folder / outputs.LOCK_FILE))
        try:
            lock.acquire(timeout=0)
        except Exception:
            return False
        lock.release()
        (folder / outputs.LOCK_FILE).unlink()
        return True

    folder = tmp_path / "out"
    folder.mkdir()
    for way_out in (None, ValueError("bad input"), KeyboardInterrupt(), OSError(errno.ENOSPC, "full")):
        with contextlib.suppress(ValueError, KeyboardInterrupt, OSError), outputs.writing():
            outputs.hold(folder, "vilbias evaluate")
            assert not free(folder)  # held: no one else gets it
            if way_out is not None:
                raise way_out
        assert free(folder), way_out
        assert os.listdir(folder) == []

    # a holder killed with SIGKILL: the kernel lets go of its lock; its file stays, and the next command takes it at once
    with holder(folder, 60, "evaluate", "--output", str(folder)) as other:
        other.kill()
        other.wait()
    assert (folder / outputs.LOCK_FILE).exists()
    started = time.monotonic()
    with outputs.writing():
        assert outputs.hold(folder, "vilbias evaluate") is False and time.monotonic() - started < 1


def test_the_lock_file_is_no_users_file(tmp_path):
    from vilbias.publish.dataset import IGNORE_PATTERNS

    out = tmp_path / "BiasCorpus"
    out.mkdir()
    (out / outputs.LOCK_FILE).write_text('{"pid": 1}')  # left by a command that was killed
    assert main(["-q", "build", "--output", str(out)]) == 0  # not a foreign file: the build takes the folder
    (out / outputs.LOCK_FILE).write_text('{"pid": 1}')
    assert main(["-q", "build", "--output", str(out)]) == 0  # nor in an earlier build, which it replaces
    from huggingface_hub.utils import filter_repo_objects

    assert list(filter_repo_objects([outputs.LOCK_FILE], ignore_patterns=IGNORE_PATTERNS)) == []  # never uploaded


# -- files as the umask says ------------------------------------------------------------------------


@pytest.fixture
def umask():
    def set_to(mask: int):
        old = os.umask(mask)
        restore.append(old)

    restore: list[int] = []
    yield set_to
    for old in restore:
        os.umask(old)


def modes(folder: Path) -> dict[str, int]:
    """Permission bits of every file under ``folder`` but SQLite's (which SQLite creates itself)."""
    return {str(p.relative_to(folder)): stat.S_IMODE(p.stat().st_mode) for p in folder.rglob("*")
            if p.is_file() and ".sqlite" not in p.name}


@pytest.mark.parametrize("mask", [0o002, 0o022, 0o077], ids=oct)
def test_files_get_the_permissions_the_umask_gives(tmp_path, umask, mask, reviewed):
    from vilbias.corpus import BuildConfig, build
    from vilbias.review import ImportConfig, StatsConfig, import_verdicts, review_stats
    from vilbias.review.sheets import ExportConfig, export_sheets

    work, filled = reviewed
    umask(mask)
    export_sheets(ExportConfig(workdir=work, output=tmp_path / "sheets2"))
    import_verdicts(ImportConfig(workdir=work, files=[filled]))
    review_stats(StatsConfig(workdir=work, plot=False))
    fresh = make_workdir(tmp_path / "fresh", n=2)  # workdir.json, images, articles.jsonl
    build(BuildConfig(output=tmp_path / "built"))
    expected = 0o666 & ~mask
    for folder in (tmp_path / "sheets2", work / "reviews", fresh, tmp_path / "built"):
        found = modes(folder)
        assert found and set(found.values()) == {expected}, (folder, {k: oct(v) for k, v in found.items()})


def test_a_rewritten_file_keeps_its_own_permissions(tmp_path, umask):
    path = tmp_path / "verdicts.jsonl"
    outputs.atomic_write(path, "{}\n")
    os.chmod(path, 0o640)  # the user's choice
    umask(0o000)
    outputs.atomic_write(path, "{}\n{}\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o640 and path.read_text() == "{}\n{}\n"


def test_a_failed_rewrite_leaves_the_old_file_and_no_temporary(tmp_path, fsync_fails):
    path = tmp_path / "stats.json"
    outputs.atomic_write(path, "old")
    fsync_fails(tmp_path)
    with pytest.raises(OSError) as e:
        outputs.atomic_write(path, "new" * 1000)
    assert outputs.is_disk_full(e.value) and e.value.needed == 3000
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["stats.json"]


@pytest.mark.parametrize("when", ["as the temporary is made", "as it is opened for writing"])
def test_a_stop_as_a_rewrite_starts_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch, when):
    """Ctrl-C that lands just after the temporary file is made (before the block that removes it on
    any error) left it in the user's folder."""
    path = tmp_path / "stats.json"
    outputs.atomic_write(path, "old")
    real = os.open if when == "as the temporary is made" else os.fdopen

    def stopped(*args, **kwargs):
        real(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(outputs.os, "open" if when == "as the temporary is made" else "fdopen", stopped)
    with pytest.raises(KeyboardInterrupt):
        outputs.atomic_write(path, "new")
    monkeypatch.undo()
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["stats.json"]


def test_nothing_writes_through_mkstemp():
    """The one atomic-write helper is vilbias.outputs.atomic_file: no other code makes 0600 temporaries."""
    found = []
    for root in ("src", "training", "spaces", "loading_script"):
        for path in (REPO / root).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            if "mkstemp(" in text or "NamedTemporaryFile(" in text:
                found.append(str(path.relative_to(REPO)))
    assert found in ([], ["src/vilbias/models/sentence_runtime.py"]), found  # that one chmods to the umask itself


def test_a_write_that_fails_for_want_of_space_in_other_words_is_a_full_disk(tmp_path, monkeypatch):
    """torch's zip writer says only "file write failed", SQLite sometimes "disk I/O error": a full
    disk when the folder the command writes is out of space, and left as they are otherwise."""
    import shutil as sh
    from collections import namedtuple

    torch_like = RuntimeError("[enforce fail at inline_container.cc:603] . PytorchStreamWriter failed writing file data/3: file write failed")
    with outputs.writing():
        outputs.hold(tmp_path / "model", "vilbias train classifier")
        assert not outputs.is_disk_full(torch_like) and not outputs.is_disk_full(sqlite3.OperationalError("disk I/O error"))
        usage = namedtuple("usage", "total used free")
        monkeypatch.setattr(sh, "disk_usage", lambda path: usage(10**9, 10**9 - 4096, 4096))
        assert outputs.is_disk_full(torch_like) and outputs.is_disk_full(sqlite3.OperationalError("disk I/O error"))
        assert str(outputs.disk_full(torch_like, "kept nothing")).startswith(f"no space left on the disk holding {tmp_path / 'model'} (4.1 KB free;")
    assert not outputs.is_disk_full(torch_like)  # no folder held: no evidence of a full disk
