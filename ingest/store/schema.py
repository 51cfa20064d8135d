"""The DDL ``tracescore schema`` prints: the single-node schema the service applies itself, with
optional TTLs, or the same tables for a ClickHouse cluster.

On a cluster each table ``T`` becomes a ``Replicated*MergeTree`` table ``T_local`` on every node
(``ON CLUSTER``) and a ``Distributed`` table ``T`` over them, so the service, the dashboards and the
drift pass use the same names as on one node. Rows are sharded by a key that keeps every row a
ReplacingMergeTree may have to replace on the shard of the row it replaces (by trace id for trace data,
by their key for the small state tables), so reads through FINAL still count each row once.
Materialized views run on each node, from local table to local table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from clickhouse_connect.driver.binding import quote_identifier

from tracescore.ingest.store.ddl import load_ddl
from tracescore.schemas.store_database import DEFAULT_DATABASE

# The time each table's rows expire by, with --ttl-days (tables that already expire rows keep theirs).
TTL_COLUMNS = {
    "otel_traces": "toDateTime(Timestamp)",
    "otel_traces_trace_id_ts": "toDateTime(Start)",
    "otel_logs": "TimestampTime",
    "span_ledger": "toDateTime(Arrived)",
    "trace_done": "toDateTime(Decided)",
    "session_runs": "toDateTime(Arrived)",
    "session_done": "toDateTime(Decided)",
    "scores": "toDateTime(Timestamp)",
    "score_decisions": "toDateTime(Timestamp)",
    "judge_io": "toDateTime(Timestamp)",
    "scores_by_scorer": "toDateTime(SpanStart)",
    "decisions_by_scorer": "toDateTime(SpanStart)",
}

# The Distributed tables' sharding keys: rows that replace one another share a shard.
SHARDING = {
    "otel_traces": "cityHash64(TraceId)",
    "otel_traces_trace_id_ts": "cityHash64(TraceId)",
    "otel_logs": "cityHash64(TraceId)",
    "span_ledger": "cityHash64(TraceId)",
    "trace_done": "cityHash64(TraceId)",
    "session_runs": "cityHash64(SessionId)",
    "session_done": "cityHash64(SessionId)",
    "trace_handoffs": "cityHash64(TraceId)",
    "scores": "cityHash64(TraceId)",
    "score_decisions": "cityHash64(TraceId)",
    "judge_io": "cityHash64(TraceId)",
    "scores_by_scorer": "cityHash64(TraceId)",
    "decisions_by_scorer": "cityHash64(TraceId)",
    "ingest_watermarks": "cityHash64(Owner)",
    "replicas": "cityHash64(ReplicaId)",
    "judge_spend": "cityHash64(Budget)",
    "score_drift": "cityHash64(ScorerId, ServiceName, AgentName)",
    "drift_notifications": "cityHash64(Webhook)",
    "annotations": "cityHash64(TraceId)",
    "judge_agreement": "cityHash64(ScorerId)",
}

_CREATE_TABLE = re.compile(r"^CREATE TABLE IF NOT EXISTS (?P<db>\S+)\.(?P<name>\w+) \(")
_ENGINE = re.compile(r"^\) ENGINE = (?P<engine>\w+)(?:\((?P<args>[^)]*)\))?", re.MULTILINE)
_MATERIALIZED = re.compile(r"^CREATE MATERIALIZED VIEW IF NOT EXISTS (?P<db>\S+)\.(?P<name>\w+)\s")
_VIEW = re.compile(r"^CREATE VIEW IF NOT EXISTS (?P<db>\S+)\.(?P<name>\w+) ")
_ALTER = re.compile(r"^ALTER TABLE (?P<db>\S+)\.(?P<name>\w+)\b")
_SETTINGS = re.compile(r"^SETTINGS ", re.MULTILINE)
_MODIFY_QUERY = re.compile(r"\s+MODIFY QUERY\b")


@dataclass(frozen=True)
class SchemaOptions:
    database: str = DEFAULT_DATABASE
    cluster: str | None = None
    ttl_days: int | None = None


def schema_ddl(options: SchemaOptions) -> list[str]:
    """The statements, in the order to apply them."""
    statements = [_with_ttl(s, options.ttl_days) for s in load_ddl(options.database)]
    if options.cluster is None:
        return statements
    cluster = quote_identifier(options.cluster)
    out: list[str] = []
    for statement in statements:
        out.extend(_for_cluster(statement, cluster, options.cluster))
    return out


def _with_ttl(statement: str, days: int | None) -> str:
    match = _CREATE_TABLE.match(statement)
    if days is None or match is None or match["name"] not in TTL_COLUMNS:
        return statement
    if re.search(r"^TTL ", statement, re.MULTILINE):
        return statement
    ttl = f"TTL {TTL_COLUMNS[match['name']]} + INTERVAL {int(days)} DAY"
    if settings := _SETTINGS.search(statement):
        return f"{statement[: settings.start()]}{ttl}\n{statement[settings.start() :]}"
    return f"{statement}\n{ttl}"


def _for_cluster(statement: str, cluster: str, cluster_name: str) -> list[str]:
    if match := _CREATE_TABLE.match(statement):
        db, name = match["db"], match["name"]
        engine = _ENGINE.search(statement)
        if engine is None:
            raise ValueError(f"no engine in the DDL of {name}")
        replicated = f"Replicated{engine['engine']}({engine['args'] or ''})"
        local = (
            f"CREATE TABLE IF NOT EXISTS {db}.{name}_local ON CLUSTER {cluster} ("
            + statement[match.end() : engine.start()]
            + f") ENGINE = {replicated}"
            + statement[engine.end() :]
        )
        shard_by = SHARDING.get(name, "rand()")
        distributed = (
            f"CREATE TABLE IF NOT EXISTS {db}.{name} ON CLUSTER {cluster} AS {db}.{name}_local\n"
            f"ENGINE = Distributed({_literal(cluster_name)}, {_literal(_unquoted(db))}, "
            f"{_literal(name + '_local')}, {shard_by})"
        )
        return [local, distributed]
    if match := _MATERIALIZED.match(statement):
        db, name = match["db"], f"{match['db']}.{match['name']}"
        rest = statement[match.end() :]
        rest = re.sub(rf"\bTO {re.escape(db)}\.(\w+)", lambda m: f"TO {db}.{m[1]}_local", rest, count=1)
        rest = _reading_local(rest, db)
        return [f"CREATE MATERIALIZED VIEW IF NOT EXISTS {name} ON CLUSTER {cluster}\n{rest}"]
    if match := _VIEW.match(statement):
        return [
            f"CREATE VIEW IF NOT EXISTS {match['db']}.{match['name']} ON CLUSTER {cluster} "
            + statement[match.end() :]
        ]
    if (match := _ALTER.match(statement)) and _MODIFY_QUERY.match(statement[match.end() :]):
        # A materialized view's query: the view keeps its name on each node and reads local tables.
        rest = _reading_local(statement[match.end() :], match["db"])
        return [f"ALTER TABLE {match['db']}.{match['name']} ON CLUSTER {cluster}{rest}"]
    if match := _ALTER.match(statement):
        rest = statement[match.end() :]
        return [
            f"ALTER TABLE {match['db']}.{match['name']}_local ON CLUSTER {cluster}{rest}",
            f"ALTER TABLE {match['db']}.{match['name']} ON CLUSTER {cluster}{rest}",
        ]
    raise ValueError(f"tracescore schema: a statement of a kind it does not know: {statement[:60]!r}")


def _reading_local(query: str, db: str) -> str:
    """``query`` reading each node's local tables (``FROM db.t`` -> ``FROM db.t_local``)."""
    return re.sub(rf"\bFROM {re.escape(db)}\.(\w+)", lambda m: f"FROM {db}.{m[1]}_local", query)


def _unquoted(identifier: str) -> str:
    return identifier[1:-1].replace("``", "`") if identifier.startswith("`") else identifier


def _literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
