# pushgrid: `make up` runs everything on embedded defaults; `make test` runs the whole suite.
# Both install what is missing first and are safe to run again.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: up test lint typecheck install system-deps clean bench

install: $(STAMP)

# Debian packages the tests use (promtool). Installed when missing and we are root;
# otherwise the tests that need them say so and skip.
system-deps:
	@if ! command -v promtool >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian packages: prometheus (promtool)"; \
	    (apt-get update -qq || true) && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends prometheus >/dev/null; \
	  else echo "promtool missing and not root: its test will be skipped"; fi; \
	fi

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

test: $(STAMP) system-deps
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/pytest -q tests

bench: $(STAMP)
	$(BIN)/python benchmarks/fanout.py --target both

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
