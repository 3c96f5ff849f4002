# Every target sets up its own virtual environment: a fresh clone needs nothing else.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint typecheck unit test-slow bench bench-quick clean venv

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# This project's own install pins the CPU build of torch; the package's extras take any torch >= 2.4,
	# so a GPU user's CUDA torch stays.
	$(BIN)/pip install --quiet "torch==2.13.0"
	$(BIN)/pip install --quiet -e ".[torch,dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/seqpoint demo

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest -q -n 2 --dist worksteal -m "not slow"

# The benchmarks' dry runs, the callgrind full run and the workflows' interleaved full runs (minutes
# each; make test keeps one smoke test of each kind); make bench runs them first.
test-slow: $(STAMP)
	$(BIN)/pytest -q -n 2 --dist worksteal -m slow

test: lint typecheck unit

# Every benchmark in turn (batching, selection, profiling, then the paper table of issue 7,
# which alone takes up to an hour on 2 cores); bench-quick passes --quick to each of them.
bench: test-slow
	$(BIN)/python benchmarks/run_all.py

bench-quick: test-slow
	$(BIN)/python benchmarks/run_all.py --quick

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
