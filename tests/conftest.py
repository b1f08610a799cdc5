"""Suite-wide settings: offline, single-threaded, caches in a temp dir.

These environment variables must be set before huggingface_hub/datasets/transformers are
imported (they read them at import time), which is why they are set here at module level.
"""

from __future__ import annotations

import atexit
import collections
import gc
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

_CACHE = tempfile.mkdtemp(prefix="vilbias-tests-hf-")
atexit.register(shutil.rmtree, _CACHE, True)  # hundreds of MB a run (graphs, datasets caches)
for key, value in {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_XET": "1",
    # "True", the value gradio writes here as it builds a Blocks with analytics off: with "1" every
    # Space a test process built changed a variable libraries read on import, and every later
    # command of that process ran in a fresh interpreter instead of a fork (tests/forks.py)
    "HF_HUB_DISABLE_TELEMETRY": "True",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "MPLBACKEND": "Agg",
    "GRADIO_ANALYTICS_ENABLED": "False",
    "HF_HOME": os.path.join(_CACHE, "home"),
    "HF_DATASETS_CACHE": os.path.join(_CACHE, "datasets"),
    "HF_HUB_CACHE": os.path.join(_CACHE, "hub"),
}.items():
    os.environ[key] = value
# The hub's progress bars as a user has them (on): the progress-flag tests run `vilbias annotate`
# without HF_HUB_DISABLE_PROGRESS_BARS, and a fork of the fork server serves them only when the
# server imported the libraries under the same setting (tests/forks.py).
os.environ.pop("HF_HUB_DISABLE_PROGRESS_BARS", None)
# What the test processes of one run share (pytest-xdist's workers inherit the folder from the
# process that starts them), removed by the process that made it, last out:
# - onnx/: the sentence model's ONNX graphs, $HF_HOME/vilbias/onnx. Each is keyed by weights, config
#   and library versions and written whole (os.replace), and exporting or quantising one takes
#   seconds, so it is made once a run rather than once a process.
# - tmp/: TMPDIR, what the suite and the commands it starts leave in "the temporary folder"
#   (gradio_client leaves an empty folder there for every file it downloads, Chromium its socket
#   folders), instead of piling up in /tmp. pytest's own tmp_path folders stay where pytest keeps
#   (and prunes) them.
if "VILBIAS_TESTS_SHARED" not in os.environ:
    os.environ["VILBIAS_TESTS_SHARED"] = tempfile.mkdtemp(prefix="vilbias-tests-shared-")
    atexit.register(shutil.rmtree, os.environ["VILBIAS_TESTS_SHARED"], True)
for _shared in ("onnx", "tmp"):
    os.makedirs(os.path.join(os.environ["VILBIAS_TESTS_SHARED"], _shared), exist_ok=True)
os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", tempfile.gettempdir())
os.environ["TMPDIR"] = os.path.join(os.environ["VILBIAS_TESTS_SHARED"], "tmp")
tempfile.tempdir = None  # read TMPDIR again
os.makedirs(os.path.join(_CACHE, "home", "vilbias"))
os.symlink(os.path.join(os.environ["VILBIAS_TESTS_SHARED"], "onnx"), os.path.join(_CACHE, "home", "vilbias", "onnx"))
from tests.forks import _import_time_env  # noqa: E402  (stdlib only)

IMPORT_TIME_ENV_AT_START = _import_time_env(dict(os.environ))
"""The variables libraries read on import as this test process starts: a library that changes one of them later makes
every later fork of the process's fork server a fresh interpreter (tests/forks.py)."""
# A token from the developer's environment must never reach the loopback servers or logs.
os.environ.pop("HF_TOKEN", None)
os.environ.pop("OPENAI_API_KEY", None)
# Ctrl-C as a user's terminal delivers it: a suite started with ``&`` from a non-interactive shell
# (a CI script, nohup) ignores SIGINT, and so would every command a stop test starts (it then waits
# for a command that never stops) and ``_thread.interrupt_main`` (which does nothing for an ignored
# signal). Python's own handler in the test processes; their children start with the default.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


import pytest  # noqa: E402  (imported after the environment is set, on purpose)


def _one_ssl_context_per_setting() -> None:
    """httpx builds a new TLS context, loading certifi's CA bundle, for every client it makes
    (47 ms of CPU on the 2-core AVX2 machine), and gradio_client makes a client for every request
    (``httpx.post``, ``stream_messages``): ~500 in a run, 22 s of the test processes' CPU, for
    servers on loopback that speak plain HTTP. Here each setting's context is built once and shared,
    as vilbias's own fetcher does (``vilbias.ingest.net._ssl_context``); httpcore sets a context's
    ALPN protocols before a TLS handshake, which these plain-HTTP servers never make. Settings that
    cannot be a cache key (a context object) are built as before."""
    import functools

    import httpx._config
    import httpx._transports.default

    build = httpx._config.create_ssl_context
    cached = functools.lru_cache(maxsize=None)(build)

    @functools.wraps(build)
    def create_ssl_context(verify=True, cert=None, trust_env=True):
        try:
            return cached(verify, cert, trust_env)
        except TypeError:  # unhashable
            return build(verify=verify, cert=cert, trust_env=trust_env)

    httpx._config.create_ssl_context = httpx._transports.default.create_ssl_context = create_ssl_context
    httpx.create_ssl_context = create_ssl_context


_one_ssl_context_per_setting()


def _yaml_parsed_by_libyaml() -> None:
    """``yaml.safe_load`` with PyYAML's LibYAML parser (``CSafeLoader``: the same constructor and
    resolver, the scanning and parsing in C) instead of its pure-Python one. huggingface_hub parses
    a card's YAML with ``yaml.safe_load`` every time ``datasets.load_dataset`` opens a corpus folder
    and every time a card is made (a built corpus's card is ~750 lines of YAML: 68 ms of CPU pure,
    14 ms in C, 2-core AVX2 machine), ~40 s of the test processes' CPU in a run. That both parsers
    read every kind of card a build writes to the same values is checked in
    tests/corpus/test_card_truth.py; the commands the suite starts parse as a user's do."""
    import yaml

    if not getattr(yaml, "__with_libyaml__", False):
        return

    def safe_load(stream):
        return yaml.load(stream, Loader=yaml.CSafeLoader)

    safe_load.__doc__ = yaml.safe_load.__doc__
    yaml.safe_load = safe_load


_yaml_parsed_by_libyaml()


@pytest.fixture(scope="session", autouse=True)
def _card_figure_drawn_once_per_count():
    """The card's figure (``vilbias.corpus.card.plot_label_by_outlet``: rows per outlet and label)
    drawn once a test process for each count of rows per outlet and label, and written again as
    those bytes when a later build has the same counts. It is a function of those counts alone
    (``card.label_share_by_outlet``),
    and drawing it costs 0.3-0.4 s of CPU a build (2-core AVX2 machine), ~25 s of a run that
    builds the same sample and fake corpora dozens of times; every distinct figure is still drawn
    by matplotlib, and the commands the suite starts draw their own."""
    import functools

    from vilbias.corpus import card, importer, plan

    draw = card.plot_label_by_outlet
    drawn: dict[tuple, bytes] = {}

    @functools.wraps(draw)
    def plot_label_by_outlet(rows, path, top=15):
        rows = list(rows)
        key = tuple(map(tuple, card.label_share_by_outlet(rows, top)))
        if key not in drawn:
            draw(rows, path, top)
            drawn[key] = path.read_bytes()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(drawn[key])

    with pytest.MonkeyPatch.context() as patch:
        for module in (card, importer, plan):
            patch.setattr(module, "plot_label_by_outlet", plot_label_by_outlet)
        yield


@pytest.fixture(scope="session")
def sample_dataset_dir(tmp_path_factory):
    """The embedded sample built once per session into a Hub-layout folder (66 rows; test split
    of 10). Read-only for the tests that share it."""
    from vilbias.corpus import BuildConfig, build

    output = tmp_path_factory.mktemp("built") / "vilbias"
    build(BuildConfig(output=output))
    return output



@pytest.fixture(scope="session")
def _smollm2_loaded():
    """The embedded SmolLM2-135M-Instruct, loaded once per session as the product loads it
    (:func:`vilbias.models.chat_local.smollm2_backend`: the GGUF dequantised to fp32)."""
    from vilbias.models.chat_local import smollm2_backend

    backend = smollm2_backend()
    return backend.model, backend.processor


@pytest.fixture(scope="session")
def real_pages_annotated(tmp_path_factory) -> Path:
    """The real news pages of ``../shared/data/news`` (the ones ``tests/ingest/test_real_pages.py``
    names) ingested and annotated with the default offline model, once a test process: a workdir
    to copy (``shutil.copytree``), never to change. The real-data tier (skips without ``../shared``)."""
    from tests.ingest.real_pages import ingest_pages
    from tests.ingest.test_real_pages import NEWS, NOT_NEWS, _pages
    from tests.real_data import shared_data
    from vilbias.annotate import AnnotateConfig, annotate

    workdir = tmp_path_factory.mktemp("real_pages") / "work"
    ingest_pages(_pages(shared_data("news"), [*NEWS, *NOT_NEWS]), workdir, min_sentences=1)
    annotate(AnnotateConfig(workdir=workdir, progress=False))
    return workdir


@pytest.fixture(scope="session")
def forks():
    """The fork server (:mod:`tests.forks`), one per test process, kept for the session: scripts
    and ``python -m vilbias.cli`` commands start in forks of a process that has imported the
    libraries they share, instead of importing them again (4-8 s of CPU a process); so do the
    benchmarks' own children (``python benchmarks/SCRIPT``: the contenders a benchmark measures
    in interpreters of their own; in the suite's smoke runs their figures mean nothing, so a fork
    serves). ``None`` with ``VILBIAS_TESTS_FRESH=1`` or where it cannot start: fresh interpreters."""
    import warnings

    from tests.forks import ForkServer

    server = None
    if not os.environ.get("VILBIAS_TESTS_FRESH"):
        try:
            server = ForkServer(scripts_under=(Path(__file__).resolve().parents[1] / "benchmarks",))
        except RuntimeError as e:  # e.g. a library that starts a thread on import: forks would be unsafe
            warnings.warn(f"each program runs in a new interpreter, the fork server did not start: {e}", stacklevel=1)
    yield server
    if server is not None:
        server.close()


@pytest.fixture
def command_python(forks) -> str:
    """The interpreter a test starts ``[command_python, "-m", "vilbias.cli", ...]`` with: the fork
    server's launcher (the command forks from it), or the real one without a server."""
    return forks.python if forks is not None else sys.executable


@pytest.fixture
def cpu_with(monkeypatch):
    """``cpu_with("avx512_vnni", ...)``: the sentence model's runtime sees a CPU with these
    instruction-set flags (``vilbias.models.sentence_runtime.cpu_flags``), whatever this one has,
    so a test checks the path another CPU takes."""

    def use(*flags: str) -> None:
        monkeypatch.setattr("vilbias.models.sentence_runtime.cpu_flags", lambda: frozenset(flags))

    return use


@pytest.fixture
def smollm2_once(_smollm2_loaded, monkeypatch):
    """Every SmolLM2 backend the test asks for (the default annotator, the audit's default model)
    gets the session's loaded weights and tokenizer, with its own parameters, batch size and
    grammar; anything else loads as usual."""
    from vilbias.models import chat_local

    model, tokenizer = _smollm2_loaded
    load, shared = chat_local.TransformersBackend.from_pretrained, []

    def from_pretrained(name_or_path, *, gguf_file=None, params=None, batch_size=4, **kwargs):
        if gguf_file == chat_local.SMOLLM2_GGUF and str(name_or_path) == str(chat_local.smollm2_dir()):
            assert kwargs.get("dtype") == "float32" and not kwargs.get("vision")  # as the session's copy was loaded
            shared.append(chat_local.TransformersBackend(model, tokenizer, params=params, batch_size=batch_size))
            return shared[-1]
        return load(name_or_path, gguf_file=gguf_file, params=params, batch_size=batch_size, **kwargs)

    monkeypatch.setattr(chat_local.TransformersBackend, "from_pretrained", from_pretrained)
    yield model, tokenizer
    assert shared, "the test never asked for SmolLM2"


# -- running in parallel (pytest-xdist; `make test` is `-n auto --dist loadfile`) ---------------------

FORK_USERS = ("tests/test_benchmarks.py", "tests/test_stops.py", "tests/annotate/test_kill_resume.py", "tests/audit/test_run.py",
              "tests/ingest/test_resume.py", "tests/test_progress_flag.py")
"""Files whose tests start programs as forks of the fork server (the ``forks`` fixture): one unit, so
that one test process starts a server (importing what it preloads is ~20 s of CPU on 2 cores)."""
SHARED_FILES = {"tests/annotate/test_smollm2.py": "smollm2", "tests/audit/test_annotators.py": "smollm2",
                **{f"tests/spaces/test_{name}.py": "space" for name in ("api", "app", "browser", "languages", "reading", "wording")},
                "tests/corpus/test_offline_real.py": "real_pages", "tests/review/test_review_real_pages.py": "real_pages",
                **{file: "forks" for file in FORK_USERS}}
"""Files whose tests share a fixture too costly to build in every test process: they run in one
process, as one unit. The loaded SmolLM2 (~8 s of CPU, AVX-512); the running Space (its models
warmed up; a server whose gradio queue polls every millisecond while idle, ~10% of a core, so it
is closed as soon as the unit is done: ``tests/spaces/conftest.py``); the real pages ingested and
annotated (``real_pages_annotated``, ~9 s); the fork server (:data:`FORK_USERS`)."""
DURATIONS = Path(__file__).with_name("durations.json")
"""Each test's seconds (setup, call and teardown) in a whole run on 2 cores, written by ``pytest
--store-durations FILE`` (CONTRIBUTING.md): the units are handed out costliest first, so that no
long unit starts last while the other process has nothing left. A stale file only balances the
two processes less well; a test it does not name counts :data:`UNKNOWN_DURATION`."""
UNKNOWN_DURATION = 0.5


def xdist_unit(nodeid: str) -> str:
    """The unit of work a test belongs to: its file (so a file's tests run in one process, in order,
    and its module fixtures are built once, as in a serial run) or its shared group."""
    file = nodeid.split("::", 1)[0]
    return SHARED_FILES.get(file, file)


def unit_costs(nodeids: list[str], durations: dict[str, float]) -> dict[str, float]:
    """Each unit's recorded seconds: the sum of its tests' (:data:`UNKNOWN_DURATION` for a test the
    record does not name)."""
    costs: dict[str, float] = collections.defaultdict(float)
    for nodeid in nodeids:
        costs[xdist_unit(nodeid)] += durations.get(nodeid, UNKNOWN_DURATION)
    return dict(costs)


def _recorded_durations() -> dict[str, float]:
    import json

    try:
        return json.loads(DURATIONS.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def pytest_addoption(parser):
    parser.addoption("--store-durations", metavar="FILE", help="write each test's seconds (setup, call and teardown) to FILE as "
                     "JSON, the record the parallel run orders its units by (tests/durations.json)")


_took: dict[str, float] = collections.defaultdict(float)


def pytest_runtest_logreport(report):
    _took[report.nodeid] += report.duration


EXTRA_WORKERS = 1
"""``-n auto`` starts a worker per core and this many more: some tests wait (a stopped command's
exit, a retry's back-off, a loopback server's timeout, a Space coming up) and leave their core
idle; one more worker runs while they wait. On 2 cores (AMX Xeon, 2026-12-07, the same commit
alternated): 2 workers 219 s with 43 core-seconds idle, 3 workers 199-211 s with 9 idle,
4 workers 235 s (they crowd each other). ``PYTEST_XDIST_AUTO_NUM_WORKERS`` or ``-n N`` still
sets the count."""


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_auto_num_workers(config):
    """``-n auto``: the cores this process may run on (``taskset`` counts) plus :data:`EXTRA_WORKERS`."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS") or config.option.numprocesses != "auto":
        return None  # pytest-xdist's own: the variable, or -n logical
    return len(os.sched_getaffinity(0)) + EXTRA_WORKERS


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` with :func:`xdist_unit` as its unit and the units in collection order (the
    workers put the costliest first: :data:`DURATIONS`). pytest-xdist's own ``loadgroup`` cannot be
    used: the group it appends to a test id is not seen by pytest 9's ``Node.nodeid``."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class UnitScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_unit(nodeid)

    config.option.loadscopereorder = False  # keep the order below, not "most tests first"
    return UnitScheduling(config, log)


# -- the fast tier (`make test-fast`: -m "not slow") ------------------------------------------------

SLOW_FIXTURES = {"_smollm2_loaded", "tiny_vlm_dir", "tiny_vlm_dirs", "full_run", "space"}
"""Fixtures that take seconds to build (a loaded SmolLM2, tiny VLMs, an audit run, a running Space):
a test that uses one is slow."""
SLOW = (
    "tests/annotate/test_kill_resume.py",
    "tests/annotate/test_smollm2.py",
    "tests/audit/test_annotators.py",
    "tests/audit/test_run.py::test_full_run_on_a_tiny_vlm",
    "tests/audit/test_run.py::test_kill_9_then_resume",
    "tests/corpus/test_build.py::test_bad_images_and_ties_are_excluded_and_reported",
    "tests/corpus/test_build.py::test_folds_partition_and_sft_matches_default",
    "tests/corpus/test_build.py::test_growth_keeps_every_row_in_its_split_and_fold",
    "tests/corpus/test_build.py::test_layout_card_yaml_and_report",
    "tests/corpus/test_build.py::test_rebuild_in_place_keeps_the_previous_build_s_cells",
    "tests/corpus/test_card_truth.py",
    "tests/corpus/test_import.py::test_2025_hub_layout_embedded_images_and_sft_without_rationale",
    "tests/corpus/test_import.py::test_any_table_with_column_and_label_map_flags_xlsx_and_csv",
    "tests/corpus/test_import.py::test_version_sequence_2024_then_2025_layout_moves_no_row",
    "tests/corpus/test_import.py::test_version_sequence_published_and_a_moved_row_refused",
    "tests/corpus/test_import_downstream.py",
    "tests/corpus/test_offline_real.py",
    "tests/corpus/test_one_split.py::test_a_file_too_small_for_a_validation_split_trains_without_one_and_says_so",
    "tests/corpus/test_one_split.py::test_a_sentence_model_trained_on_a_corpus_is_evaluated_on_it_with_its_card_s_figures",
    "tests/corpus/test_one_split.py::test_the_shipped_card_s_figures_are_one_evaluate_away",
    "tests/corpus/test_sample_build.py",
    "tests/corpus/test_schema.py::test_a_column_declared_here_is_built_and_loaded",
    "tests/corpus/test_schema.py::test_a_column_declared_here_is_imported_from_a_parquet",
    "tests/corpus/test_sentences.py::test_layout_folds_and_determinism",
    "tests/corpus/test_small_corpora.py::test_a_rebuild_keeps_rows_where_they_were_and_lists_a_split_once_it_fills",
    "tests/corpus/test_small_corpora.py::test_every_listed_config_of_a_tiny_corpus_loads",
    "tests/corpus/test_text_only.py",
    "tests/corpus/test_versions.py",
    "tests/evaluate/test_any_corpus.py",
    "tests/evaluate/test_degenerate.py::test_a_constant_model_is_said_to_be_one_last_and_on_top",
    "tests/evaluate/test_degenerate.py::test_a_model_that_reads_the_image_gets_its_deltas_read_and_plotted",
    "tests/evaluate/test_degenerate.py::test_cv_reads_deltas_only_over_folds_that_are_not_constant",
    "tests/evaluate/test_e2e_adapter.py",
    "tests/evaluate/test_leakage.py::test_cv_refuses_a_fold_model_that_saw_its_fold",
    "tests/evaluate/test_leakage.py::test_overlap_is_refused_before_the_model_is_asked",
    "tests/evaluate/test_questions.py::test_pearson_r_over_a_runs_settings",
    "tests/evaluate/test_runner.py::test_compare_runs_and_model_index",
    "tests/evaluate/test_runner.py::test_cv_scores_each_fold_model_on_its_own_fold",
    "tests/evaluate/test_runner.py::test_generative_run_metrics_judge_reports",
    "tests/ingest/test_fetch.py::test_slow_drip_hits_the_overall_deadline",
    "tests/ingest/test_ingest.py::test_ingest_end_to_end",
    "tests/ingest/test_ingest.py::test_without_progress_bars_a_wait_on_the_network_is_said_every_few_seconds",
    "tests/ingest/test_install.py",
    "tests/ingest/test_real_pages.py::test_a_site_wide_og_type_changes_no_decision",
    "tests/ingest/test_real_pages.py::test_every_pages_language_is_detected_from_its_text",
    "tests/ingest/test_real_pages.py::test_news_is_kept_with_its_headline_text_and_first_image",
    "tests/ingest/test_real_pages.py::test_short_news_is_dropped_below_twenty_sentences_and_otherwise_kept",
    "tests/ingest/test_resume.py",
    "tests/models/test_checkpoints.py::test_import_vilbias_registers_with_the_auto_classes_without_importing_torch",
    "tests/models/test_checkpoints.py::test_push_to_hub_and_from_pretrained_repo_id",
    "tests/models/test_sentence_doors.py::test_every_door_with_vilbias_gives_score_articles_answer",
    "tests/models/test_sentence_doors.py::test_without_vilbias_from_a_folder_and_from_the_hub",
    "tests/models/test_sentence_precision.py::test_int8_on_onnxruntime_is_static_and_answers_alike_in_every_batch",
    "tests/models/test_sentence_precision.py::test_onnxruntime_gives_the_exact_paths_outputs",
    "tests/models/test_sentence_precision.py::test_passes_side_by_side_give_the_one_pass_outputs",
    "tests/models/test_sentence_precision.py::test_the_exported_graph_is_kept_and_reused",
    "tests/publish/test_publish_dataset.py::test_a_pipeline_build_or_a_permissive_source_stays_public",
    "tests/publish/test_publish_dataset.py::test_a_release_that_moves_rows_is_refused_naming_them",
    "tests/publish/test_publish_dataset.py::test_an_old_seven_copy_release_is_read_as_the_previous_assignment",
    "tests/publish/test_publish_dataset.py::test_dropped_connection_mid_commit_then_retry",
    "tests/publish/test_publish_dataset.py::test_existing_or_lower_version_is_refused",
    "tests/publish/test_publish_dataset.py::test_publish_load_by_tag_snapshot_every_config",
    "tests/publish/test_publish_dataset.py::test_second_release_changelog_and_first_still_loads",
    "tests/publish/test_publish_model_space.py::test_publish_space_and_read_card_back",
    "tests/review/test_review_real_pages.py",
    "tests/sample/test_regenerate.py",
    "tests/spaces/test_api.py::test_endpoints_inputs_and_outputs_are_named",
    "tests/spaces/test_app.py::test_each_failure_gets_its_own_sentence_and_the_log_its_traceback",
    "tests/spaces/test_app.py::test_label_confidence_and_highlights_come_from_one_pass",
    "tests/spaces/test_app.py::test_rationale_agrees_with_the_label_every_time",
    "tests/spaces/test_browser.py",
    "tests/spaces/test_calibrate.py",
    "tests/test_cli.py::test_a_stage_loads_alone_and_its_help_imports_no_heavy_library",
    "tests/test_cli.py::test_building_the_sample_imports_no_heavy_library",
    "tests/test_doctests.py::test_docstring_examples_run[src/vilbias/languages.py]",
    "tests/test_lazy.py::test_function_local_imports_are_few_and_each_says_why",
    "tests/test_packaging.py",
    "tests/test_progress_flag.py::test_annotate_no_progress_prints_no_bar_at_all",
    "tests/test_readme.py",
    "tests/test_safe_writes.py::test_a_build_twice_into_one_folder_replaces_it_and_a_foreign_file_stops_the_third",
    "tests/test_stops.py",
    "tests/test_writers.py::test_a_second_build_into_a_folder_being_written_refuses_naming_the_first",
    "tests/test_writers.py::test_a_second_build_on_a_nearly_full_tmpfs",
    "tests/test_writers.py::test_a_second_command_waits_for_the_first_to_end",
    "tests/test_writers.py::test_build_on_a_full_disk_leaves_the_previous_build",
    "tests/test_writers.py::test_files_get_the_permissions_the_umask_gives",
    "tests/test_writers.py::test_ingest_on_a_small_tmpfs",
    "tests/test_writers.py::test_the_lock_file_is_no_users_file",
    "tests/training_classifier/test_classifier.py",
    "tests/training_classifier/test_default_model.py",
    "tests/training_classifier/test_protocol.py::test_checkpoint_records_its_training_rows_and_the_card_says_so",
    "tests/training_classifier/test_protocol.py::test_distant_pretraining_one_command_and_two",
    "tests/training_classifier/test_protocol.py::test_train_fractions_are_nested_and_scored_on_one_test_split",
    "tests/training_classifier/test_wiring.py::test_each_prediction_belongs_to_its_test_row",
    "tests/training_classifier/test_wiring.py::test_early_stopping_ends_training_when_validation_loss_stops_improving",
    "tests/training_classifier/test_wiring.py::test_metrics_record_the_loss_settings",
    "tests/training_classifier/test_wiring.py::test_the_best_validation_checkpoint_is_the_one_kept",
    "tests/training_sft/test_cli.py::test_train_help_loads_no_heavy_library_and_sft_help_no_bitsandbytes_noise",
    "tests/training_sft/test_inference.py::test_adapter_round_trip_reload_merge_generate",
    "tests/training_sft/test_inference.py::test_merged_model_keeps_the_adapters_training_data",
    "tests/training_sft/test_push.py",
    "tests/training_sft/test_recipes.py::test_recipe_trains_two_steps_on_cpu",
    "tests/training_sft/test_sft_on_built_dataset.py::test_sft_rows_have_the_trl_vision_format",
)
"""Tests (a file, or a test function with all its parameters) of more than ~1.5 s on 2 cores, by
``--durations``: marked ``slow`` here so the test files need not carry it, and a file whose tests
are mostly slow is slow whole. ``make test-fast`` lists any test it runs that takes longer."""
FAST_TIER_LIMIT = 3.0


def _is_slow(item) -> bool:
    nodeid = item.nodeid
    return any(nodeid == entry or nodeid.startswith((entry + "::", entry + "[")) for entry in SLOW) or \
        not SLOW_FIXTURES.isdisjoint(getattr(item, "fixturenames", ()))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Marks the tests in :data:`SLOW` (before ``-m`` selects); in an xdist worker, puts the
    costliest units first (by :data:`DURATIONS`), each unit's tests in their order."""
    for item in items:
        if _is_slow(item):
            item.add_marker(pytest.mark.slow)
    if hasattr(config, "workerinput"):
        cost = unit_costs([item.nodeid for item in items], _recorded_durations())
        items.sort(key=lambda item: -cost[xdist_unit(item.nodeid)])  # stable: a unit's tests stay in their order


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """In the fast tier, the tests that took longer than :data:`FAST_TIER_LIMIT`: mark them slow."""
    if "not slow" not in (config.getoption("markexpr") or ""):
        return
    took = collections.Counter()
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) in ("setup", "call", "teardown"):
                took[report.nodeid] += report.duration
    over = [(seconds, nodeid) for nodeid, seconds in took.items() if seconds > FAST_TIER_LIMIT]
    if over:
        terminalreporter.write_line(f"{len(over)} test(s) over {FAST_TIER_LIMIT:.0f} s in the fast tier; add them to SLOW in "
                                    "tests/conftest.py:", yellow=True)
        for seconds, nodeid in sorted(over, reverse=True):
            terminalreporter.write_line(f"  {seconds:5.1f} s  {nodeid}")


_modules_when_frozen = 0


def pytest_runtest_teardown(item, nextitem):
    """After a test that imported another 50 modules (torch, transformers, datasets, ...), the
    objects still alive are collected once and frozen (``gc.freeze``): every later full collection
    skips them. transformers' Trainer runs ``gc.collect()`` at every ``train()`` (accelerate's
    ``free_memory``) and Python starts full collections of its own; with millions of imported
    objects each took ~0.3 s, 20% of a training test's time. Only objects alive here are frozen
    (garbage is collected first), so no test's garbage is kept; a frozen object that becomes a
    reference cycle later is not freed (module-level objects and long-lived fixtures)."""
    global _modules_when_frozen
    if len(sys.modules) > _modules_when_frozen + 50:
        gc.collect()
        gc.freeze()
        _modules_when_frozen = len(sys.modules)

def pytest_sessionfinish(session, exitstatus):
    """With ``--store-durations FILE``, the run's durations to FILE (from the process that reports:
    under xdist, the controller). In CI, a skipped real-data test fails the run: the tier must have run."""
    from tests.real_data import in_ci

    store = session.config.getoption("store_durations")
    if store and not hasattr(session.config, "workerinput") and _took:
        import json

        Path(store).write_text(json.dumps({k: round(v, 2) for k, v in sorted(_took.items())}, indent=0) + "\n", encoding="utf-8")

    if not in_ci():
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = [r for r in (reporter.stats.get("skipped", []) if reporter else []) if "real_data" in getattr(r, "keywords", {})]
    if skipped:
        reporter.write_line(f"CI: {len(skipped)} real-data test(s) were skipped; the real-data tier must run", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
