# Two commands do everything: `make demo` and `make test`. Both install what is missing first.
VENV ?= .venv
PY   := $(VENV)/bin/python

.PHONY: setup demo test bench clean

setup:
	@bash scripts/setup.sh

demo: setup
	@$(VENV)/bin/climio survey

test: setup
	@$(VENV)/bin/lint-imports --no-cache
	@$(PY) -m pytest -v --durations=25 tests   # -v: a line per test, so that a crash names its test in the CI log; the 25 slowest at the end (the CI budget)

bench: setup
	@$(PY) bench/probe_vs_fio.py

clean:
	rm -rf build $(VENV)
