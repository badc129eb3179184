# pushgrid: `make up` runs everything on embedded defaults; `make test` runs the whole suite.
# Both install what is missing first and are safe to run again.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: up test lint typecheck install clean bench

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

up: $(STAMP)
	$(BIN)/pushgrid up

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy

typecheck: $(STAMP)
	$(BIN)/mypy

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/pytest -q tests

bench: $(STAMP)
	$(BIN)/python benchmarks/fanout.py --target both

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
