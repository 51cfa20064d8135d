"""``tracescore schema``: the single-node DDL (with TTLs) runs on chDB; the cluster DDL has a replicated
local table and a Distributed table for every table, and views that read the right ones."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tracescore.ingest.cli import main
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.schema import SHARDING, TTL_COLUMNS

TABLES = re.compile(r"^CREATE TABLE IF NOT EXISTS `analytics`\.(\w+) \(", re.MULTILINE)


def printed(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    assert main(["schema", *args]) == 0
    return [s.strip() for s in capsys.readouterr().out.split(";\n") if s.strip()]


async def test_the_single_node_ddl_runs_on_chdb_with_its_ttls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    statements = printed(capsys, "--database", "other", "--ttl-days", "7")
    store = Store(str(tmp_path / "chdb"))
    await store.start()
    try:
        for statement in statements:
            await store.query(statement)
        rows = await store.query(
            "SELECT name, engine_full FROM system.tables WHERE database = 'other' AND engine != 'View'"
        )
        found = {r["name"]: r["engine_full"] for r in rows}
        ours = await store.query(
            "SELECT name FROM system.tables WHERE database = currentDatabase() ORDER BY name"
        )
        assert set(found) == {r["name"] for r in ours} - {"otel_traces_scored"}
        for table, column in TTL_COLUMNS.items():
            assert f"TTL {column} + toIntervalDay(7)" in found[table], table
        assert "TTL toDateTime(CheckedAt) + toIntervalDay(90)" in found["score_drift"]  # kept its own
    finally:
        await store.shutdown()


def test_the_cluster_ddl_has_local_replicated_and_distributed_tables(
    capsys: pytest.CaptureFixture[str],
) -> None:
    single = "\n".join(printed(capsys, "--database", "analytics"))
    tables = TABLES.findall(single)
    assert len(tables) == 20 and set(tables) == set(SHARDING)
    cluster = printed(capsys, "--cluster", "c1", "--ttl-days", "30", "--store", "http://ch:8123/analytics")
    assert cluster[0] == "CREATE DATABASE IF NOT EXISTS `analytics` ON CLUSTER `c1`"
    text = "\n".join(cluster)
    for table in tables:
        (local,) = [
            s for s in cluster if s.startswith(f"CREATE TABLE IF NOT EXISTS `analytics`.{table}_local ")
        ]
        assert f"{table}_local ON CLUSTER `c1` (" in local
        assert re.search(r"\) ENGINE = Replicated\w*MergeTree\(", local), table
        (distributed,) = [
            s for s in cluster if s.startswith(f"CREATE TABLE IF NOT EXISTS `analytics`.{table} ON")
        ]
        assert distributed.endswith(
            f"ENGINE = Distributed('c1', 'analytics', '{table}_local', {SHARDING[table]})"
        )
        assert f"AS `analytics`.{table}_local" in distributed
    assert "ReplicatedReplacingMergeTree(Version)" in text  # the version column is kept
    assert "TTL toDateTime(Timestamp) + INTERVAL 30 DAY" in text
    # Materialized views run on each node, local table to local table.
    views = [s for s in cluster if s.startswith("CREATE MATERIALIZED VIEW")]
    assert len(views) == 3
    for view in views:
        assert "ON CLUSTER `c1`" in view
        assert re.search(r"\bTO `analytics`\.\w+_local\b", view)
        assert re.search(r"\bFROM `analytics`\.\w+_local\b", view)
    # The scored-spans view reads the Distributed tables; column upgrades reach both kinds of table.
    (scored,) = [s for s in cluster if s.startswith("CREATE VIEW")]
    assert "ON CLUSTER `c1`" in scored and "FROM `analytics`.otel_traces AS t" in scored
    alters = [s.split(" ADD")[0] for s in cluster if s.startswith("ALTER TABLE") and " MODIFY " not in s]
    assert alters == [
        "ALTER TABLE `analytics`.scores_local ON CLUSTER `c1`",
        "ALTER TABLE `analytics`.scores ON CLUSTER `c1`",
        "ALTER TABLE `analytics`.score_decisions_local ON CLUSTER `c1`\n   ",
        "ALTER TABLE `analytics`.score_decisions ON CLUSTER `c1`\n   ",
        "ALTER TABLE `analytics`.scores_by_scorer_local ON CLUSTER `c1`\n   ",
        "ALTER TABLE `analytics`.scores_by_scorer ON CLUSTER `c1`\n   ",
        "ALTER TABLE `analytics`.score_drift_local ON CLUSTER `c1`\n   ",
        "ALTER TABLE `analytics`.score_drift ON CLUSTER `c1`\n   ",
    ]
    # A view's query is changed where the view is, on each node, reading the local table.
    (modified,) = [s for s in cluster if " MODIFY QUERY" in s]
    assert modified.startswith("ALTER TABLE `analytics`.scores_by_scorer_mv ON CLUSTER `c1` MODIFY QUERY")
    assert "ScorerVersion\nFROM `analytics`.scores_local" in modified


def test_without_a_setting_the_ddl_is_for_the_services_default_database(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("TRACESCORE_CONFIG", "TRACESCORE_STORE", "TRACESCORE_STORE_DATABASE"):
        monkeypatch.delenv(variable, raising=False)
    statements = printed(capsys)
    assert statements[0] == "CREATE DATABASE IF NOT EXISTS `default`"
    assert all(" `default`." in statement for statement in statements[1:])
    assert printed(capsys, "--cluster", "c1")[0] == "CREATE DATABASE IF NOT EXISTS `default` ON CLUSTER `c1`"
    monkeypatch.setenv("TRACESCORE_STORE_DATABASE", "from_env")
    assert printed(capsys, "--cluster", "c1")[0] == "CREATE DATABASE IF NOT EXISTS `from_env` ON CLUSTER `c1`"


def test_bad_options_are_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "--ttl-days", "0"]) == 2
    assert "--ttl-days must be a positive number" in capsys.readouterr().err
