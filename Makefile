# LakeLogic developer entry points. `make demo` and `make test` are all a newcomer needs (see README).
# Every target uses the virtualenv at .venv (created on demand); nothing is installed globally.

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

VENV        ?= .venv
PY          := $(VENV)/bin/python
# First Python 3.11 found (pyproject pins >=3.11,<3.12); override with `make PYTHON=/path/to/python3.11`.
PYTHON      ?= $(shell command -v python3.11 || command -v python3)
# The install stamp is keyed on the content of pyproject.toml: editing dependencies re-installs,
# an unchanged tree makes `setup` a no-op.
PYPROJECT_HASH := $(shell sha256sum pyproject.toml | cut -c1-16)
STAMP       := $(VENV)/.lakelogic-installed-$(PYPROJECT_HASH)

# Fast default: everything except tests marked slow, in one process with one Spark session.
# PYTEST_WORKERS=N runs N pytest-xdist workers (work stealing), each with its own session: on the 2-core VM
# two workers were not faster (20m06s against 19m03s in one process, session 13), so it is opt-in.
PYTEST_ARGS ?=
PYTEST_WORKERS ?= 0
XDIST       := $(if $(filter-out 0,$(PYTEST_WORKERS)),-n $(PYTEST_WORKERS) --dist worksteal,)
ROWS        ?= 1000000
BENCH_ROWS  ?= $(ROWS)
# extra script options, e.g. make bench BENCH_ARGS="--expert --repeat 3" (see benchmarks/README.md)
BENCH_ARGS  ?=

export PIP_DISABLE_PIP_VERSION_CHECK := 1
export PIP_NO_INPUT := 1
export PYTHONUNBUFFERED := 1

.PHONY: help setup java demo test test-all check lint format-check typecheck bench bench-materialize \
        bench-data clean

help:
	@echo "make demo               set up .venv and run the retail example end to end (Spark local, Iceberg)"
	@echo "make test               fast test suite (what CI runs): pytest -m 'not slow'"
	@echo "make test-all           every test, slow ones included"
	@echo "make check              ruff check + ruff format --check + mypy + fast tests"
	@echo "make bench ROWS=N       runtime overhead: bare Spark read/write vs a full LakeLogic run"
	@echo "make bench-materialize ROWS=N   append vs merge vs scd2 of a 1% batch into an N-row Iceberg table"
	@echo "make setup              create .venv and install lakelogic[spark,dev] (idempotent)"
	@echo "make clean              remove local state (.lakelogic/, example and benchmark outputs, caches)"

setup: $(STAMP)

$(STAMP): pyproject.toml
	@if [[ -z "$(PYTHON)" ]]; then echo "ERROR: no python3.11 / python3 on PATH" >&2; exit 1; fi
	@if [[ ! -x "$(PY)" ]]; then \
	  ver="$$($(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')"; \
	  if [[ "$$ver" != "3.11" ]]; then \
	    echo "ERROR: LakeLogic needs Python 3.11; $(PYTHON) is $$ver. Run: make PYTHON=/path/to/python3.11 ..." >&2; \
	    exit 1; \
	  fi; \
	  echo "creating $(VENV) with $(PYTHON) ($$ver)"; \
	  $(PYTHON) -m venv $(VENV); \
	fi
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[spark,dev]'
	@rm -f $(VENV)/.lakelogic-installed-*
	@touch $@
	@echo "$(VENV) is ready"

java:
	@scripts/check_java.sh

demo: java setup
	@scripts/demo.sh

test: java setup
	$(PY) -m pytest -m "not slow" -q $(XDIST) $(PYTEST_ARGS)

test-all: java setup
	$(PY) -m pytest -q $(XDIST) $(PYTEST_ARGS)

lint: setup
	$(VENV)/bin/ruff check src tests benchmarks examples scripts

format-check: setup
	$(VENV)/bin/ruff format --check src tests benchmarks examples scripts

typecheck: setup
	$(VENV)/bin/mypy

check: lint format-check typecheck test

bench-data: java setup
	$(PY) benchmarks/generate_orders.py --rows $(BENCH_ROWS)

bench: java setup
	$(PY) benchmarks/bench_runtime.py --rows $(BENCH_ROWS) $(BENCH_ARGS)

bench-materialize: java setup
	$(PY) benchmarks/bench_materialize.py --rows $(BENCH_ROWS) $(BENCH_ARGS)

clean:
	rm -rf .lakelogic spark-warehouse metastore_db derby.log benchmarks/data benchmarks/out
	rm -rf examples/retail/_out .pytest_cache .mypy_cache .ruff_cache
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +
