"""What the store holds of sessions: the runs of each (``session_runs``), which are complete and not
yet scored, and the marks of scored ones (``session_done``); and the removal of session rows that a
newer scoring of the same conversation supersedes.

Every step is safe to redo: a run's row is keyed by (session, trace, span), a mark by the session
(the newest ``Through`` wins), and a removal deletes what the newest scoring no longer holds, so a
completion killed half way and done again leaves what one clean completion leaves.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from clickhouse_connect.driver.binding import format_query_value, quote_identifier

from tracescore.ingest.store.clickhouse import Store
from tracescore.schemas import AgentRun
from tracescore.schemas.durations import unix_nanos

RUN_COLUMNS = ("SessionId", "TraceId", "SpanId", "RunStart", "Arrived")
DONE_COLUMNS = ("SessionId", "Through", "Decided", "TraceId", "SpanId")
# The tables whose rows name a (trace, span, scorer): companions first, the tables they copy last, so
# that a removal cut short is found again (from scores / score_decisions) and finished.
_SCORED_TABLES = ("scores_by_scorer", "decisions_by_scorer", "judge_io", "scores", "score_decisions")
# ``Distributed('cluster', 'database', 'table_local', sharding)``: its cluster's name.
_DISTRIBUTED = re.compile(r"^Distributed\('((?:[^'\\]|\\.)*)'")

# Sessions with a run arrived since ``since``: the newest arrival of each, the oldest arrival after its
# last mark, and that mark; due when idle for ``idle`` or waiting for ``max_wait``.
_RECENT = (
    "SELECT SessionId FROM {database}.session_runs WHERE Arrived >= fromUnixTimestamp64Nano({{since:Int64}})"
)
_DUE = """
SELECT r.SessionId AS SessionId, toUnixTimestamp64Nano(max(r.Arrived)) AS Last
FROM {database}.session_runs AS r FINAL
LEFT JOIN (
    SELECT SessionId, max(Through) AS Done FROM {database}.session_done
    WHERE SessionId IN ({recent})
    GROUP BY SessionId
) AS d ON d.SessionId = r.SessionId
WHERE r.SessionId IN ({recent})
GROUP BY r.SessionId
HAVING max(r.Arrived) > any(d.Done)
   AND (max(r.Arrived) <= fromUnixTimestamp64Nano({{idle_before:Int64}})
        OR minIf(r.Arrived, r.Arrived > d.Done) <= fromUnixTimestamp64Nano({{waited_before:Int64}}))
ORDER BY Last, SessionId
LIMIT {{limit:UInt32}}
"""

_RUNS = """
SELECT SessionId, TraceId, SpanId FROM {database}.session_runs FINAL
WHERE SessionId IN {{ids:Array(String)}} ORDER BY SessionId, RunStart, TraceId, SpanId
"""

_SUPERSEDED = """
SELECT DISTINCT TraceId, SpanId, ScorerId FROM (
    SELECT TraceId, SpanId, ScorerId FROM {database}.scores FINAL
    WHERE SessionId = {{session:String}} AND NOT (TraceId = {{trace:String}} AND SpanId = {{span:String}})
    UNION ALL
    SELECT TraceId, SpanId, ScorerId FROM {database}.score_decisions FINAL
    WHERE SessionId = {{session:String}} AND NOT (TraceId = {{trace:String}} AND SpanId = {{span:String}})
)
"""


@dataclass(frozen=True, slots=True)
class DueSession:
    """A complete session to score: its id and the newest arrival of its runs (ns)."""

    session_id: str
    through_unix_nano: int


@dataclass(frozen=True, slots=True)
class ScoredSession:
    """A session whose scoring is written: where its scores landed (the last run's root span)."""

    session_id: str
    through_unix_nano: int
    trace_id: str
    span_id: str


class SessionStore:
    """``session_runs`` and ``session_done`` over a ``Store``."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._engines: dict[str, str] | None = None  # read once, at the first removal

    async def record_runs(self, runs: Sequence[tuple[AgentRun, int]]) -> None:
        """The rows of the runs that carry a session id, each with when it arrived (its newest item)."""
        rows = [
            [run.session_id, run.trace_id, run.span_id, unix_nanos(run.start_time) if run.start_time else 0,
             arrived]
            for run, arrived in runs
            if run.session_id
        ]  # fmt: skip
        if rows:
            await self._store.insert("session_runs", rows, RUN_COLUMNS)

    async def due(
        self, now_unix_nano: int, *, idle: float, max_duration: float, lookback: float, limit: int
    ) -> list[DueSession]:
        """The complete sessions not scored since their newest run, the longest idle first."""
        seconds = 1_000_000_000
        database = self._store.quoted_database
        rows = await self._store.query(
            _DUE.format(database=database, recent=_RECENT.format(database=database)),
            {
                "since": _at(now_unix_nano - int((lookback + max_duration) * seconds)),
                "idle_before": _at(now_unix_nano - int(idle * seconds)),
                "waited_before": _at(now_unix_nano - int(max_duration * seconds)),
                "limit": limit,
            },
        )
        return [DueSession(row["SessionId"], int(row["Last"])) for row in rows]

    async def runs_of(self, session_ids: Sequence[str]) -> dict[str, list[tuple[str, str]]]:
        """Each session's runs as (trace id, root span id), in the order they started."""
        rows = await self._store.query(
            _RUNS.format(database=self._store.quoted_database), {"ids": list(session_ids)}
        )
        runs: dict[str, list[tuple[str, str]]] = {}
        for row in rows:
            runs.setdefault(row["SessionId"], []).append((row["TraceId"], row["SpanId"]))
        return runs

    async def remove_superseded(self, scored: ScoredSession) -> int:
        """Delete the session's score and decision rows that do not sit on the span its newest scoring
        landed on (an earlier scoring, when the conversation had fewer turns); how many keys went."""
        database = self._store.quoted_database
        keys = await self._store.query(
            _SUPERSEDED.format(database=database),
            {"session": scored.session_id, "trace": scored.trace_id, "span": scored.span_id},
        )
        if not keys:
            return 0
        triples = [(row["TraceId"], row["SpanId"], row["ScorerId"]) for row in keys]
        if self._engines is None:
            self._engines = await self._table_engines()
        for statement in delete_statements(database, self._engines, triples):
            await self._store.command(statement)
        return len(triples)

    async def _table_engines(self) -> dict[str, str]:
        """Each scored table's ``engine_full``: a ``Distributed`` one is deleted from on its cluster."""
        rows = await self._store.query(
            "SELECT name, engine_full FROM system.tables "
            "WHERE database = {database:String} AND name IN {names:Array(String)}",
            {"database": self._store.database, "names": list(_SCORED_TABLES)},
        )
        return {row["name"]: row["engine_full"] for row in rows}

    async def mark_done(self, scored: Sequence[ScoredSession]) -> None:
        if scored:
            now = time.time_ns()
            rows = [[s.session_id, s.through_unix_nano, now, s.trace_id, s.span_id] for s in scored]
            await self._store.insert("session_done", rows, DONE_COLUMNS)


def delete_statements(
    database: str, engines: Mapping[str, str], keys: Sequence[tuple[str, str, str]]
) -> list[str]:
    """The lightweight ``DELETE`` of the rows keyed (trace, span, scorer) from every scored table, in
    ``_SCORED_TABLES`` order. A ``Distributed`` table (``tracescore schema --cluster``) cannot be
    deleted from: the rows go from its ``*_local`` tables on its cluster. The keys are inlined as
    literals (a query sent ``ON CLUSTER`` is run by each node as text)."""
    condition = f"has({format_query_value(list(keys))}, (TraceId, SpanId, ScorerId))"
    statements = []
    for table in _SCORED_TABLES:
        cluster = _DISTRIBUTED.match(engines.get(table, ""))
        if cluster is None:
            statements.append(f"DELETE FROM {database}.{table} WHERE {condition}")
        else:
            on = quote_identifier(cluster[1].replace("\\'", "'"))
            statements.append(f"DELETE FROM {database}.{table}_local ON CLUSTER {on} WHERE {condition}")
    return statements


def _at(unix_nano: int) -> int:
    """A DateTime64(9) parameter: nanoseconds since the epoch, never before it."""
    return max(0, unix_nano)
