# pushgrid: `make up` runs everything on embedded defaults; `make test` runs the whole suite.
# Both install what is missing first and are safe to run again: `make up` only what running needs
# (the `all` extra), `make test` / `make install` the test, lint and browser tools on top (`dev`).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUNTIME_STAMP := $(VENV)/.installed-runtime
STAMP := $(VENV)/.installed

.PHONY: up cluster test lint typecheck install system-deps runtime-deps clean bench audit fuzz faults

install: $(STAMP)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# What running needs: the server, the admin API + console and the statistics pipeline.
$(RUNTIME_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[all]'
	@touch $(RUNTIME_STAMP)

# What developing needs on top: test, lint, type-check, browser and benchmark tools. One pip
# run for both extras: each run builds the editable project again in a fresh build environment
# (30-60 s here, most of it waiting on the package index; docs/adr/066).
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[all,dev]'
	@touch $(RUNTIME_STAMP) $(STAMP)

# Debian packages the tests use: a JDK (Spark, the JMX bridge), promtool + prometheus, headless
# Chromium + ChromeDriver, a PostgreSQL server, rrdtool, systemd-analyze (systemd), ss (iproute2:
# a listener's backlog). Installed when missing and we are root; otherwise the tests that need
# them say so and skip.
DEB_CHECKS := javac:openjdk-17-jdk-headless promtool:prometheus /usr/bin/chromium:chromium \
  /usr/bin/chromedriver:chromium-driver pg_ctlcluster:postgresql rrdtool:rrdtool \
  systemd-analyze:systemd ss:iproute2 nft:nftables

# The allocator the server runs on by default (`Allocator = jemalloc`, docs/adr/033): Debian's
# libjemalloc2. Without it the server runs on the C library's allocator and says so.
JEMALLOC := /usr/lib/$(shell uname -m)-linux-gnu/libjemalloc.so.2

runtime-deps:
	@[ -e $(JEMALLOC) ] || if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Debian package libjemalloc2 (Allocator = jemalloc)"; \
	  (apt-get update -qq || true) && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends libjemalloc2 >/dev/null; \
	else echo "missing Debian package libjemalloc2 (not root): the server runs on the C allocator"; fi

system-deps: runtime-deps
	@missing=""; for check in $(DEB_CHECKS); do \
	  bin=$${check%%:*}; pkg=$${check##*:}; \
	  command -v $$bin >/dev/null 2>&1 || [ -x "$$bin" ] || missing="$$missing $$pkg"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian packages:$$missing"; \
	    (apt-get update -qq || true) && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing >/dev/null; \
	  else echo "missing Debian packages:$$missing (not root): their tests will be skipped"; fi; \
	fi

# The client port on loopback only (docs/security.md): `make up LISTEN='*:8800'` serves the
# network (it is the `Listen` key, given as PUSHGRID_LISTEN).
LISTEN ?= 127.0.0.1:8800
# `make up` serves on every usable core (Workers = auto, docs/workers.md); `make up WORKERS=1`
# runs one process (it is the `Workers` key, given as PUSHGRID_WORKERS). `pushgrid status` says
# how many processes serve and on which cores.
WORKERS ?=

up: $(RUNTIME_STAMP) runtime-deps
	PUSHGRID_LISTEN='$(LISTEN)' $(if $(WORKERS),PUSHGRID_WORKERS='$(WORKERS)' )$(BIN)/pushgrid up

# A local 3-member Guaranteed cluster (docs/cluster.md) with the admin API and console.
cluster: $(RUNTIME_STAMP) runtime-deps
	PUSHGRID_LISTEN='$(LISTEN)' $(BIN)/pushgrid up --members 3

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy

typecheck: $(STAMP)
	$(BIN)/mypy

# pytest in TEST_WORKERS processes (pytest-xdist; docs/testing.md): most tests wait on servers and
# sockets, not on the CPU. A module runs whole on one worker; the heaviest start first.
# `make test TEST_WORKERS=0` runs in this process alone.
TEST_WORKERS ?= 3

#
# The static checks (`make audit`, ruff, strict mypy: 1-3 minutes, most of it a fresh clone's
# first mypy run) run niced beside pytest, not before it: the suite's workers leave about 40% of
# the two cores idle (docs/adr/066). Their output follows the suite's; either failing fails
# `make test`. (No `$(MAKE)` in this recipe: `make -n test` would then run it.)
CHECKS_LOG := $(VENV)/checks.log

test: $(STAMP) system-deps
	@(set -e; nice -n 5 $(BANDIT); nice -n 5 $(PIP_AUDIT); nice -n 5 $(BIN)/ruff check .; \
	  nice -n 5 $(BIN)/mypy) >$(CHECKS_LOG) 2>&1 & checks=$$!; \
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder tests; tests=$$?; \
	wait $$checks; checked=$$?; echo "--- the static checks (run beside pytest):"; \
	cat $(CHECKS_LOG); [ $$checked = 0 ] || echo "make test: the static checks failed (above)"; \
	[ $$tests = 0 ] && [ $$checked = 0 ]

# Security checks (docs/security.md): bandit on our code, pip-audit on the dependencies (it says
# how many packages it could audit: the vulnerability service is not reachable everywhere).
BANDIT := $(BIN)/bandit -q -c pyproject.toml -r pushgrid/protocol pushgrid/config pushgrid/kernel pushgrid/cli pushgrid/ops server client metrics admin_api spark_stats console .ci
PIP_AUDIT := $(BIN)/python .ci/pip_audit.py

audit: $(STAMP)
	$(BANDIT)
	$(PIP_AUDIT)

# Fuzz campaign against a live server (docs/security.md has the last results).
FUZZ_INPUTS ?= 1000000
fuzz: $(STAMP)
	nice -n 10 $(BIN)/python benchmarks/fuzz.py --inputs $(FUZZ_INPUTS) --connections 8 \
	  --output benchmarks/results/fuzz-$$(date +%Y-%m-%d).jsonl

# The fan-out sweep (results: docs/benchmarks.md; the runs: benchmarks/NOTES.md, "Issue 12"):
# pushgrid vs every peer, one table, JSON lines in benchmarks/results/. Niced: the machine is shared.
bench: $(STAMP)
	nice -n 10 $(BIN)/python benchmarks/run_all.py $(BENCH_ARGS)

# The fault campaign (docs/benchmarks.md, "Faults"): kill, pause and partition a 3-member cluster
# in network namespaces (root, iproute2, nftables), every acknowledged message checked.
faults: $(STAMP) system-deps
	nice -n 5 $(BIN)/python benchmarks/faults.py $(FAULTS_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
