"""Suite-wide settings: offline, single-threaded, caches in a temp dir.

These environment variables must be set before huggingface_hub/datasets/transformers are
imported (they read them at import time), which is why they are set here at module level.
"""

from __future__ import annotations

import gc
import os
import sys
import tempfile

_CACHE = tempfile.mkdtemp(prefix="vilbias-tests-hf-")
for key, value in {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_XET": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
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
# A token from the developer's environment must never reach the loopback servers or logs.
os.environ.pop("HF_TOKEN", None)
os.environ.pop("OPENAI_API_KEY", None)


import pytest  # noqa: E402  (imported after the environment is set, on purpose)


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
    (:func:`vilbias.models.chat_local.smollm2_backend`: the GGUF dequantised, ~25 s on 2 cores)."""
    from vilbias.models.chat_local import smollm2_backend

    backend = smollm2_backend()
    return backend.model, backend.processor


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

SHARED_FILES = {"tests/annotate/test_smollm2.py": "smollm2", "tests/audit/test_annotators.py": "smollm2"}
"""Files whose tests share a session fixture too costly to build in every test process (the loaded
SmolLM2, ~25 s on 2 cores): they run in one process, as one unit."""
SPREAD_FILES = {"tests/test_benchmarks.py", "tests/test_stops.py"}
"""Files of long, independent tests (a subprocess each, no module fixture): each test is its own unit."""
HEAVY_FIRST = [
    "smollm2", "tests/audit/test_run.py", "tests/training_classifier/test_default_model.py",
    "tests/corpus/test_one_split.py", "tests/corpus/test_offline_real.py", "tests/models/test_checkpoints.py",
    "tests/corpus/test_import_downstream.py", "tests/models/test_sentence_doors.py", "tests/corpus/test_build.py",
    "tests/models/test_sentence_precision.py",
]
"""The costliest units (by ``--durations``), handed out first so that no long unit starts last; a
stale list only balances the two processes less well."""


def xdist_unit(nodeid: str) -> str:
    """The unit of work a test belongs to: its file (so a file's tests run in one process, in order,
    and its module fixtures are built once, as in a serial run), its shared group, or itself."""
    file = nodeid.split("::", 1)[0]
    return nodeid if file in SPREAD_FILES else SHARED_FILES.get(file, file)


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` with :func:`xdist_unit` as its unit and the units in collection order (the
    workers put :data:`HEAVY_FIRST` first). pytest-xdist's own ``loadgroup`` cannot be used: the
    group it appends to a test id is not seen by pytest 9's ``Node.nodeid``."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class UnitScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_unit(nodeid)

    config.option.loadscopereorder = False  # keep the order below, not "most tests first"
    return UnitScheduling(config, log)


def pytest_collection_modifyitems(config, items):
    """In an xdist worker, the costliest units first (:data:`HEAVY_FIRST`), each unit's tests in order."""
    if not hasattr(config, "workerinput"):
        return
    rank = {unit: i for i, unit in enumerate(HEAVY_FIRST)}
    items.sort(key=lambda item: rank.get(xdist_unit(item.nodeid), len(rank)))


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
    """In CI, a skipped real-data test fails the run: the tier must have run."""
    from tests.real_data import in_ci

    if not in_ci():
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = [r for r in (reporter.stats.get("skipped", []) if reporter else []) if "real_data" in getattr(r, "keywords", {})]
    if skipped:
        reporter.write_line(f"CI: {len(skipped)} real-data test(s) were skipped; the real-data tier must run", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
