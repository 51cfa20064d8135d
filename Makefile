# Two commands on a fresh machine: `make run` (install + demo) and `make test` (install + whole suite).
# `make` alone, or `make help`, lists every target: the text after `## ` on its line.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
TEST_INSTALLED := $(VENV)/.installed-test
# The peers the benchmarks compare with, each in a virtualenv of its own (make bench-peers).
PEERS_VENV := bench/.peers-venv
PHOENIX_VERSION := 20.26.1
PEERS_INSTALLED := $(PEERS_VENV)/.installed-phoenix-$(PHOENIX_VERSION)
# make soak: how long its load runs and the seed of its fault schedule.
MINUTES ?= 20
SEED ?= 1

.DEFAULT_GOAL := help
.PHONY: help run test lint bench bench-peers soak clean

help: ## list these targets (the default goal)
	@echo "make TARGET, where TARGET is one of:"
	@awk 'BEGIN {FS = ":[^#]*## "} /^[a-z][a-z-]*:.*## / {printf "  %-11s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(INSTALLED): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

# One install of tracescore with its test needs (it is also what `make run` installs).
$(TEST_INSTALLED): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(INSTALLED) $@

run: $(INSTALLED) ## create .venv, install tracescore and run `tracescore demo` (no API key needed)
	$(BIN)/tracescore demo

test: chromium $(TEST_INSTALLED) ## install the test needs and run the whole suite (real OTel SDK, chDB, Kafka, Chromium)
	$(BIN)/python -m pytest -n 3 --dist loadgroup

# A step of `make test`, not a goal of its own (so `make help` does not list it): the report's browser
# test (tests/e2e/test_report.py) opens the page in the system's Chromium, installed here when missing
# (about 20 s; with sudo when not root).
.PHONY: chromium
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "make test: installing Chromium for the report's browser test (apt-get, about 20 s)"; \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  { $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive \
	      apt-get install -y -qq --no-install-recommends chromium; } || { \
	    echo "make test: could not install Chromium; install it (apt-get install chromium, as root) and run make test again: the report's browser test needs /usr/bin/chromium" >&2; \
	    exit 1; }; }

lint: $(TEST_INSTALLED) ## ruff check, ruff format --check and mypy --strict
	$(BIN)/ruff check tracescore schemas ingest scoring tests bench
	$(BIN)/ruff format --check tracescore schemas ingest scoring tests bench
	$(BIN)/mypy

bench: $(TEST_INSTALLED) ## benchmarks against same-run baselines: bench/report.json and a table (docs/performance.md)
	$(BIN)/python -m bench

$(PEERS_INSTALLED):
	$(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PEERS_VENV)/bin/python -m pip install --quiet arize-phoenix==$(PHOENIX_VERSION)
	touch $@

bench-peers: $(TEST_INSTALLED) $(PEERS_INSTALLED) ## the benchmarks and the peer rows (Arize Phoenix in bench/.peers-venv, same senders)
	$(BIN)/python -m bench --peers

soak: $(TEST_INSTALLED) ## the chaos soak (not part of make test): MINUTES=20 SEED=1 by default; see docs/operations/soak.md
	$(BIN)/python -m tests.soak --minutes $(MINUTES) --seed $(SEED)

clean: ## delete .venv and pytest's cache (never a store: see docs/commands.md for where they are)
	rm -rf $(VENV) .pytest_cache
