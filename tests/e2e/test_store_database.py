"""One database setting, end to end on chDB: ``tracescore schema``'s single-node DDL applied to a database
that is not ``default``, ``tracescore serve`` started on it, spans sent over OTLP; the scores are in that
database and nothing is in ``default``. The commands that read the store (``scores``, ``drift``,
``backfill``) find them there too, each given the database another way (flag, environment, config file).
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from pathlib import Path
from typing import Any

import clickhouse_connect
import yaml
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests.support.serve import ENV, api_rows, free_port, start_serve, stop, tracescore, wait_healthy
from tracescore.ingest.cli.demo_traces import SCENARIOS, emit_scenario

DATABASE = "agent_evals"
# The rules of a config without any: content-similarity and textual-difference.
SCORERS = ["content-similarity", "textual-difference"]


def _tables(store: Path) -> dict[str, set[str]]:
    """Database -> its tables, of every database but ClickHouse's own."""
    client = clickhouse_connect.get_client(dsn=f"chdb://{store}")
    try:
        rows = client.query(
            "SELECT database, name FROM system.tables "
            "WHERE database NOT IN ('system', 'information_schema', 'INFORMATION_SCHEMA')"
        ).result_rows
    finally:
        client.close()
    found: dict[str, set[str]] = {}
    for database, name in rows:
        found.setdefault(database, set()).add(name)
    return found


def _apply(store: Path, statements: list[str]) -> None:
    client = clickhouse_connect.get_client(dsn=f"chdb://{store}")
    try:
        for statement in statements:
            client.command(statement)
    finally:
        client.close()


def _count(store: Path, sql: str) -> int:
    client = clickhouse_connect.get_client(dsn=f"chdb://{store}")
    try:
        count = client.command(sql)
        assert isinstance(count, int)  # a count's one value (command also returns strings and summaries)
        return count
    finally:
        client.close()


def _send_run(grpc_port: int) -> str:
    provider = TracerProvider(resource=Resource.create({"service.name": "evals-api"}))
    provider.add_span_processor(
        SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"127.0.0.1:{grpc_port}", insecure=True))
    )
    trace_id = emit_scenario(provider.get_tracer("database-tests"), SCENARIOS[0], time.time_ns())
    provider.shutdown()
    return trace_id


def _json(done: Any) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_serve_scores_into_the_database_schema_wrote(tmp_path: Path) -> None:
    store = tmp_path / "data"
    printed = tracescore("schema", "--database", DATABASE)
    assert printed.returncode == 0, printed.stderr
    _apply(store, [s for s in printed.stdout.split(";\n") if s.strip()])
    created = _tables(store)
    assert set(created) == {DATABASE}, "schema created nothing outside its database"
    assert {"otel_traces", "scores", "score_decisions", "score_drift"} <= created[DATABASE]

    grpc_port = free_port()
    log = tmp_path / "serve.log"
    proc, http_port = start_serve(
        store, "--database", DATABASE, "--idle", "0.2", grpc_port=grpc_port, stderr_file=log
    )
    try:
        base = wait_healthy(proc, http_port)
        with urllib.request.urlopen(f"{base}/readyz", timeout=5) as resp:
            assert json.loads(resp.read())["store"]["database"] == DATABASE
        trace_id = _send_run(grpc_port)
        deadline = time.monotonic() + 60
        rows: list[dict[str, Any]] = []
        while len(rows) < len(SCORERS):
            assert time.monotonic() < deadline, f"no scores for {trace_id}: {log.read_text()[-2000:]}"
            time.sleep(0.2)
            rows = api_rows(f"{base}/api/scores?trace_id={trace_id}")
        assert sorted(r["scorer_id"] for r in rows) == SCORERS
    finally:
        assert stop(proc) == 0, log.read_text()[-2000:]
    assert f"database {DATABASE}" in log.read_text()

    # Where the service wrote: its database, exactly the tables schema made; nothing in default.
    assert _tables(store) == created
    where = f"TraceId = '{trace_id}'"
    assert _count(store, f"SELECT count() FROM {DATABASE}.scores FINAL WHERE {where}") == len(SCORERS)
    assert _count(store, f"SELECT count() FROM {DATABASE}.otel_traces WHERE {where}") > 0

    # The commands read the same database, whichever way it is given.
    found = _json(
        tracescore("scores", "--store", str(store), "--database", DATABASE, "--trace-id", trace_id, "--json")
    )
    assert sorted(r["scorer_id"] for r in found) == SCORERS
    env = {**ENV, "TRACESCORE_STORE_DATABASE": DATABASE}
    findings = _json(tracescore("drift", "--store", str(store), "--json", env=env))
    assert sorted(f["scorer_id"] for f in findings) == SCORERS
    assert _count(store, f"SELECT count() FROM {DATABASE}.score_drift") == len(SCORERS)
    config = tmp_path / "tracescore.yaml"
    config.write_text(yaml.safe_dump({"store": str(store), "store_database": DATABASE}))
    plan = _json(tracescore("backfill", "--config", str(config), "--since", "1h", "--dry-run", "--json"))
    assert plan["traces"] == 1

    assert _tables(store) == created, "no command created tables elsewhere"
    assert not os.path.exists(tmp_path / "tracescore-data")
