"""The reference pages hold: the ``tracescore score`` command lines of docs/cli.md give scores for
real runs, and docs/tables.md names every table and column the service creates, with their types.

The score lines are run by bash in a directory holding ``run.json`` (an AgentRun) and ``trace.json``
(a real framework's OTLP/JSON export request, not the page's own), with ``tracescore`` on the PATH
running this source tree. The tables are read from a real embedded store after the service's own DDL
(``DDL_FILES``) was applied.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.markdown import DOCS, examples
from tests.support.fixture_files import OTLP_DIR
from tests.support.serve import ENV
from tracescore.ingest.store.clickhouse import DDL_FILES, Store

CLI_PAGE = DOCS / "cli.md"
TABLES_PAGE = DOCS / "tables.md"
VIEWS = ("View", "MaterializedView")


# --- tracescore score ------------------------------------------------------------------------------


def score_lines() -> list[str]:
    """Every line of the command-line page's shell blocks that runs ``tracescore score``."""
    blocks = [example.text for example in examples(CLI_PAGE) if example.language == "sh"]
    return [line for block in blocks for line in block.splitlines() if "tracescore score " in line]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A directory with the files the page names, and a ``tracescore`` command of this source tree."""
    run = {
        "input": {"input_messages": [{"role": "user", "content": "What's the weather in Paris?"}]},
        "output": [{"role": "assistant", "content": "The weather in Paris is rainy, 57°F."}],
    }
    (tmp_path / "run.json").write_text(json.dumps(run))
    shutil.copy(OTLP_DIR / "otel_genai_semconv__main.traces.json", tmp_path / "trace.json")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    command = bin_dir / "tracescore"
    command.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m tracescore.ingest.cli "$@"\n')
    command.chmod(0o755)
    return tmp_path


def test_the_score_command_lines_score_real_runs(workdir: Path) -> None:
    lines = score_lines()
    assert any(line.startswith("tracescore score ") and "--options" in line for line in lines)
    assert any("tracescore inspect" in line and "--run -" in line for line in lines), "the piped form"
    env = {**ENV, "PATH": f"{workdir / 'bin'}:{ENV['PATH']}"}
    for line in lines:
        done = subprocess.run(
            ["bash", "-o", "pipefail", "-c", line],
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert done.returncode == 0, f"{line}\n{done.stderr}"
        assert done.stderr == "", line
        printed = json.loads(done.stdout)
        results = printed if isinstance(printed, list) else [printed]
        assert results and all(r["status"] == "scored" for r in results), line
        assert all(0.0 <= r["score"] <= 1.0 for r in results), line


# --- ClickHouse tables -----------------------------------------------------------------------------


def created_tables(tmp_path: Path) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """Each table's engine, and each table's columns with their types, as the store creates them."""

    async def read() -> tuple[list[dict[str, object]], list[dict[str, object]]]:
        store = Store(str(tmp_path / "store"))
        await store.start()
        try:
            database = "WHERE database = currentDatabase()"
            tables = await store.query(f"SELECT name, engine FROM system.tables {database}")
            columns = await store.query(
                f"SELECT table, name, type FROM system.columns {database} ORDER BY table, position"
            )
        finally:
            await store.shutdown()
        return tables, columns

    tables, columns = asyncio.run(read())
    engines = {str(row["name"]): str(row["engine"]) for row in tables}
    by_table: dict[str, dict[str, str]] = {}
    for row in columns:
        by_table.setdefault(str(row["table"]), {})[str(row["name"])] = str(row["type"])
    return engines, by_table


def documented_tables() -> dict[str, str]:
    """The tables page's sections by table name."""
    parts = re.split(r"^## `([a-z_]+)`\n", TABLES_PAGE.read_text(), flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def column_rows(text: str) -> dict[str, str]:
    """The rows ``| `Column` | `Type` | what |`` of a section: column -> type."""
    return dict(re.findall(r"^\| `([A-Za-z.]+)` \| `([^`]+)` \|", text, re.MULTILINE))


def test_the_tables_page_lists_every_table_and_column_the_store_creates(tmp_path: Path) -> None:
    engines, columns = created_tables(tmp_path)
    assert len(DDL_FILES) >= 13 and {"otel_traces", "scores", "score_decisions", "replicas"} <= set(engines)
    text = TABLES_PAGE.read_text()
    documented = documented_tables()
    overview = re.findall(r"^\| \[`([a-z_]+)`\]", text, re.MULTILINE)
    for table, engine in engines.items():
        assert f"`{table}`" in text, f"{table} is not in docs/tables.md"
        if engine == "MaterializedView":
            continue  # named where its target table is described
        assert table in documented, f"{table} has no subsection"
        assert overview.count(table) == 1, f"{table} is not in the overview table once"
        if engine in VIEWS:
            continue  # its columns are another table's
        part = documented[table]
        rows = column_rows(part)
        for column, kind in columns[table].items():
            assert f"`{column}`" in part, f"{table}.{column} is not documented"
            if column in rows:
                assert rows[column] == kind, f"{table}.{column} is {kind}, docs/tables.md says {rows[column]}"
    # And nothing documented that the store does not have.
    assert set(documented) <= set(engines), set(documented) - set(engines)
    for table, part in documented.items():
        stale = set(column_rows(part)) - set(columns.get(table, {}))
        assert not stale, f"docs/tables.md documents columns {table} does not have: {stale}"
    assert set(overview) <= set(engines)
