# Two commands on a fresh machine: `make run` (install + demo) and `make test` (install + whole suite).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
TEST_INSTALLED := $(VENV)/.installed-test

.PHONY: run test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(INSTALLED): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(TEST_INSTALLED): pyproject.toml $(INSTALLED)
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

run: $(INSTALLED)
	$(BIN)/tracescore demo

test: $(TEST_INSTALLED)
	$(BIN)/python -m pytest

lint: $(TEST_INSTALLED)
	$(BIN)/ruff check schemas ingest scoring tests bench
	$(BIN)/ruff format --check schemas ingest scoring tests bench
	$(BIN)/mypy

bench: $(TEST_INSTALLED)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) tracescore-data .pytest_cache
