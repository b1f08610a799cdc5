"""Every command that writes into a path a user names touches only what it wrote (issue #38).

:data:`TABLE` lists each such command with the config fields it covers. Each is run against a
target holding planted files (a file, a subfolder with a file, a ``.git`` with a file) and every
planted byte must survive: the command either refuses in one line naming the first foreign path
(``refused``) or writes its own files beside them (``beside``).
:func:`test_every_output_field_is_in_the_table` makes a new command join the table: it fails
when a config dataclass that a command line parses has an output/workdir/cache-style field the
table does not list.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import io
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fakes.workdirs import make_workdir
from vilbias.cli import STAGES, main
from vilbias.corpus.pipeline import build_sentences
from vilbias.outputs import OutputRefused, claim_output

PLANTED = {"notes.txt": b"my notes\n", "sub/keep.md": b"# keep me\n", ".git/HEAD": b"ref: refs/heads/main\n"}
FIRST_FOREIGN = ".git"
"""The planted entry a refusal names first (sorted)."""


def plant(folder: Path) -> Path:
    for name, data in PLANTED.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return folder


def planted_intact(folder: Path) -> bool:
    return all((folder / name).read_bytes() == data for name, data in PLANTED.items())


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """An annotated workdir (two stub annotators), the source of review sheets."""
    from tests.annotate.conftest import StubBackend, answer, stub_spec
    from vilbias.annotate.pipeline import AnnotateConfig, annotate

    work = make_workdir(tmp_path_factory.mktemp("safe") / "work", n=4)
    backends = {k: StubBackend(lambda item, prompt, sample, request: answer("biased", rationale="why", prompt=prompt))
                for k in "ab"}
    annotate(AnnotateConfig(workdir=work, samples=1, annotator_specs=[stub_spec("a"), stub_spec("b")], backends=backends,
                            progress=False))
    return work


@dataclass
class Row:
    command: str
    fields: tuple[str, ...]
    """``Config.field`` names the row covers."""
    argv: Callable[[Path, dict], list[str]] | None
    """The command line run against the planted target (None: ``call`` runs it)."""
    outcome: str
    """``refused``: exit 2, one line naming the first foreign path; ``beside``: runs and writes beside."""
    call: Callable[[Path, dict], None] | None = None
    prepare: Callable[[Path], object] | None = None
    """Makes the target what the command writes into (a workdir) before the files are planted."""


def _annotate_beside(target: Path, env: dict) -> None:
    from tests.annotate.conftest import StubBackend, answer, stub_spec
    from vilbias.annotate.pipeline import AnnotateConfig, annotate

    backend = StubBackend(lambda item, prompt, sample, request: answer("biased", rationale="why", prompt=prompt))
    annotate(AnnotateConfig(workdir=target, samples=1, annotator_specs=[stub_spec("a")], backends={"a": backend}, progress=False))


def _feature_cache_beside(target: Path, env: dict) -> None:
    import numpy as np
    from vilbias.training.feature_cache import FeatureCache

    cache = FeatureCache("an-encoder", root=target)
    cache.put("ab" * 32, np.zeros(3))
    assert cache.get("ab" * 32) is not None


SFT_RECIPE = "training/recipes/SmolVLM-Instruct/lora.yaml"

TABLE = [
    Row("build", ("BuildConfig.output", "BuildConfig.workdir"), lambda t, e: ["build", "--output", str(t)], "refused"),
    Row("build --sentences", ("BuildConfig.sentences",),
        lambda t, e: ["build", "--sentences", str(e["babe"]), "--output", str(t)], "refused"),
    Row("build --from", ("BuildConfig.source",),
        lambda t, e: ["build", "--from", str(e["babe"]), "--output", str(t)], "refused"),
    Row("ingest", ("IngestConfig.workdir",),
        lambda t, e: ["ingest", "--workdir", str(t), "--feed", "http://127.0.0.1:9/feed.xml"], "refused"),
    Row("annotate (a folder that is not a workdir)", ("AnnotateConfig.workdir",),
        lambda t, e: ["annotate", "--workdir", str(t)], "refused"),
    Row("annotate (a workdir with files of the user's)", ("AnnotateConfig.workdir",), None, "beside", _annotate_beside,
        prepare=lambda t: make_workdir(t, n=2)),
    Row("review export", ("ExportConfig.output", "ExportConfig.workdir"),
        lambda t, e: ["review", "export", "--workdir", str(e["workdir"]), "--output", str(t), "--reviewers", "1"], "beside"),
    Row("review import", ("ImportConfig.workdir",),
        lambda t, e: ["review", "import", "--workdir", str(t), str(e["babe"])], "refused"),
    Row("review stats", ("StatsConfig.workdir",), lambda t, e: ["review", "stats", "--workdir", str(t)], "refused"),
    Row("evaluate", ("EvaluateConfig.output",),
        lambda t, e: ["evaluate", "--dataset", str(e["dataset"]), "--model", "smollm2", "--output", str(t)], "refused"),
    Row("evaluate compare", ("CompareConfig.output",),
        lambda t, e: ["evaluate", "compare", str(e["dataset"]), "--output", str(t)], "refused"),
    Row("audit run", ("AuditConfig.output",), lambda t, e: ["audit", "run", "--model", "smollm2", "--output", str(t)], "refused"),
    Row("audit metrics", ("MetricsConfig.output",),
        lambda t, e: ["audit", "metrics", "--responses", str(e["babe"]), "--output", str(t)], "refused"),
    Row("audit space (an existing file of the user's)", ("AuditSpaceConfig.output",),
        lambda t, e: ["audit", "space", "--vignette", str(t), "--output", str(t / "notes.txt")], "refused-file"),
    Row("audit probeset", ("ProbesetConfig.output",), lambda t, e: ["audit", "probeset", "--output", str(t), "--limit", "1"], "refused"),
    Row("audit annotators", ("AnnotatorAuditConfig.workdir",), lambda t, e: ["audit", "annotators", "--workdir", str(t)], "refused"),
    Row("train classifier", ("ClassifierConfig.output_dir",),
        lambda t, e: ["train", "classifier", "--dataset", str(e["dataset"]), "--output", str(t)], "refused"),
    Row("train classifier --feature-cache", ("ClassifierConfig.feature_cache",), None, "beside", _feature_cache_beside),
    Row("train sentence", ("SentenceConfig.output_dir",),
        lambda t, e: ["train", "sentence", "--sentences", str(e["babe"]), "--output", str(t)], "refused"),
    # what `train sentence` writes into --work-dir: the sentence corpus, in a folder of its own
    Row("train sentence --work-dir", ("SentenceConfig.work_dir",), None, "beside",
        lambda t, e: build_sentences(e["babe"], t / "babe")),
    Row("train sft", ("SFTConfig.output_dir",),
        lambda t, e: ["train", "sft", "--recipe", SFT_RECIPE, "--use_cpu", "true", "--output_dir", str(t)], "refused"),
    Row("train sft --merged_output_dir", ("VilbiasSFTArguments.merged_output_dir",),
        lambda t, e: ["train", "sft", "--recipe", SFT_RECIPE, "--use_cpu", "true", "--output_dir", str(e["new"]), "--merged_output_dir", str(t)],
        "refused"),
]

OUTPUT_FIELD = re.compile(r"output|workdir|work_dir|_dir$|cache$")
"""Field names of a path a command writes to (``use_cache``-like flags are told apart by type)."""
EXTRA_COMMANDS = [("evaluate", ["compare"])]
"""Commands a stage dispatches without a ``COMMANDS`` table."""


@pytest.mark.parametrize("row", TABLE, ids=lambda r: r.command)
def test_planted_files_survive(row, tmp_path, sample_dataset_dir, workdir, capsys, monkeypatch):
    from tests.training_classifier.conftest import write_babe_csv

    env = {"dataset": sample_dataset_dir, "workdir": workdir, "babe": write_babe_csv(tmp_path / "babe.csv"),
           "new": tmp_path / "new"}
    target = tmp_path / "target"
    if row.prepare is not None:
        row.prepare(target)
    plant(target)
    monkeypatch.chdir(Path(__file__).parents[1])  # the recipes are named from the repo root
    if row.call is not None:
        row.call(target, env)
        rc, err = 0, ""
    else:
        capsys.readouterr()
        rc = main(row.argv(target, env))
        err = capsys.readouterr().err
    assert planted_intact(target), f"{row.command} changed a planted file"
    if row.outcome == "beside":
        assert rc == 0, err
        assert len([p for p in target.rglob("*") if p.is_file()]) > len(PLANTED)  # it wrote its own files too
    else:
        assert rc == 2 and len(err.strip().splitlines()) == 1, err
        named = str(target / "notes.txt") if row.outcome == "refused-file" else str(target / FIRST_FOREIGN)
        if row.command.startswith(("annotate", "review import", "review stats")):
            named = str(target)  # a stage that reads a workdir refuses a folder that is none, naming it
        assert named in err, err
        assert not (tmp_path / "new").exists()


def _command_line_dataclasses() -> set[type]:
    """The config dataclasses of every command's parser, found by asking each for ``--help``."""
    seen: set[type] = set()
    original = argparse.ArgumentParser.print_help

    def recording(parser, file=None):
        seen.update(getattr(parser, "dataclass_types", ()))

    calls: list[tuple[Callable, list[str], str]] = []
    for stage, (module_name, _) in STAGES.items():
        module = importlib.import_module(module_name)
        commands = getattr(module, "COMMANDS", None)
        if commands:
            # A command's own handler: `vilbias train` would print a rendered --help snapshot instead.
            calls += [(handler, ["--help"], f"vilbias {stage} {name}") for name, (_, handler) in commands.items()]
        else:
            calls.append((module.main, ["--help"], f"vilbias {stage}"))
        calls += [(module.main, [*extra, "--help"], f"vilbias {stage}") for s, extra in EXTRA_COMMANDS if s == stage]
    argparse.ArgumentParser.print_help = recording
    try:
        for handler, argv, prog in calls:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
                handler(argv, prog)
    finally:
        argparse.ArgumentParser.print_help = original
    return seen


def test_every_output_field_is_in_the_table():
    covered = {name for row in TABLE for name in row.fields}
    found = set()
    for dtype in _command_line_dataclasses():
        for f in dataclasses.fields(dtype):
            if OUTPUT_FIELD.search(f.name) and not re.search(r"\b(bool|int|float)\b", str(f.type)) \
                    and f.metadata.get("cli", True) is not False:
                found.add(f"{dtype.__name__}.{f.name}")
    assert {"BuildConfig.output", "SFTConfig.output_dir", "CompareConfig.output"} <= found  # the search sees them all
    missing = found - covered
    assert not missing, f"commands write to {sorted(missing)}: add them to TABLE in {__file__}"


# -- a build replaces only a build ----------------------------------------------------------------


def test_build_into_the_current_folder_with_user_files_is_refused(tmp_path, monkeypatch, capsys):
    folder = plant(tmp_path / "thesis")
    (folder / "results.csv").write_text("a,b\n1,2\n")
    monkeypatch.chdir(folder)
    assert main(["build", "--output", "."]) == 2
    err = capsys.readouterr().err
    assert "--output . " in err and "current folder" in err and len(err.splitlines()) == 1
    assert planted_intact(folder) and (folder / "results.csv").read_text() == "a,b\n1,2\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["thesis"]  # no scratch folder left beside it


def test_the_home_folder_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(OutputRefused, match="is your home folder"):
        claim_output(tmp_path, "vilbias evaluate", signs=("evaluation.sqlite",))
    with pytest.raises(OutputRefused, match="is your home folder"):
        claim_output("~", "vilbias build", signs=("build_report.json",), replaces=())


def test_a_file_where_a_folder_belongs_is_refused(tmp_path):
    (tmp_path / "out").write_text("mine")
    with pytest.raises(OutputRefused, match="is a file, not a folder"):
        claim_output(tmp_path / "out", "vilbias audit run", signs=("audit.sqlite",))
    assert (tmp_path / "out").read_text() == "mine"


def test_a_build_twice_into_one_folder_replaces_it_and_a_foreign_file_stops_the_third(tmp_path, capsys):
    out = tmp_path / "corpus"
    assert main(["build", "--output", str(out)]) == 0
    first = (out / "build_report.json").read_text()
    stale = out / "data" / "train-fold0-00001-of-00002.parquet"  # as a shard of a bigger earlier build
    stale.write_bytes((out / "data" / "train-fold0-00000-of-00001.parquet").read_bytes())
    assert main(["build", "--output", str(out)]) == 0
    assert not stale.exists() and (out / "build_report.json").read_text() != first  # its own seconds
    (out / "data" / "notes.txt").write_text("mine")
    capsys.readouterr()
    assert main(["build", "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"also {out / 'data' / 'notes.txt'}, which vilbias build did not write" in err
    assert (out / "data" / "notes.txt").read_text() == "mine" and (out / "build_report.json").is_file()


def test_a_file_dropped_into_the_output_during_a_build_stops_the_swap(tmp_path, sample_dataset_dir):
    import shutil

    from vilbias.corpus.writer import swap_in

    out = tmp_path / "corpus"
    shutil.copytree(sample_dataset_dir, out)
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with pytest.raises(OutputRefused, match="did not write"), swap_in(out) as repo:
        (repo / "README.md").write_text("new")
        (out / "draft.md").write_text("written while the build ran")
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == {**before, Path("draft.md"): b"written while the build ran"}
    assert [p.name for p in tmp_path.iterdir()] == ["corpus"]  # the scratch folder is gone
