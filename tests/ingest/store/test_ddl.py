"""The column types read from our DDL are the server's, so inserts can give them and skip a lookup."""

from __future__ import annotations

import pytest

from tests.ingest.store.samples import agent_span, tool_span
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.ddl import COLUMN_TYPES, column_types
from tracescore.ingest.store.span_sink import insert_spans


async def test_every_tables_columns_read_from_the_ddl_are_the_servers(store: Store) -> None:
    rows = await store.query(
        "SELECT table, name, type FROM system.columns WHERE database = {db:String} "
        "AND default_kind NOT IN ('ALIAS', 'MATERIALIZED') AND table IN "
        "(SELECT name FROM system.tables WHERE database = {db:String} AND engine NOT LIKE '%View')",
        {"db": store.database},
    )
    server: dict[str, dict[str, str]] = {}
    for row in rows:
        server.setdefault(row["table"], {})[row["name"]] = row["type"]

    assert server == COLUMN_TYPES
    assert COLUMN_TYPES["otel_traces"]["Events.Attributes"] == "Array(Map(LowCardinality(String), String))"
    assert "SpanAttributeItems" not in COLUMN_TYPES["otel_traces"]  # an ALIAS: never inserted
    assert COLUMN_TYPES["span_ledger"]["Kind"] == "Enum8('span' = 1, 'log' = 2)"


async def test_an_insert_into_our_tables_asks_the_server_nothing_first(store: Store) -> None:
    count = "SELECT value FROM system.events WHERE event = 'Query'"
    before = (await store.query(count))[0]["value"]

    await insert_spans(store, [agent_span(), tool_span()])

    # The two inserts (span_ledger, otel_traces) and this count: no DESCRIBE, no system.columns.
    assert (await store.query(count))[0]["value"] - before == 3


def test_alter_add_column_and_quoted_names_are_read() -> None:
    statements = [
        "CREATE TABLE IF NOT EXISTS db.t (\n  `a b` String DEFAULT 'x,(y' CODEC(ZSTD(1)),\n"
        "  N Nested (K String, V Map(String, Float64)),\n"
        "  INDEX i a TYPE minmax GRANULARITY 1\n) ENGINE = Log",
        "ALTER TABLE db.t ADD COLUMN IF NOT EXISTS c DateTime64(9, 'UTC') DEFAULT now() AFTER N, "
        "ADD COLUMN IF NOT EXISTS `a b` UInt8",
    ]

    assert column_types(statements) == {
        "t": {
            "a b": "String",
            "N.K": "Array(String)",
            "N.V": "Array(Map(String, Float64))",
            "c": "DateTime64(9, 'UTC')",
        }
    }


def test_unbalanced_ddl_is_an_error() -> None:
    with pytest.raises(ValueError, match="unbalanced"):
        column_types(["CREATE TABLE IF NOT EXISTS db.t (a Map(String, String) ENGINE = Log"])
