"""The one read path of stored scores and decisions: what a user asks for (``GET /api/scores``,
``GET /api/decisions``, ``tracescore scores``), every row of one trace (the demo, the tests), and, for
a trace that has none, what the store knows of it.

Both tables are ReplacingMergeTree: reads go through ``FINAL``, so a replayed score is counted once,
and the filters apply to the row that won. Every value a user gives is a bound parameter. A scorer
filter matches the rows stored under the scorer's name and under its former id (``stored_ids``):
``content-similarity`` and ``content-similarity-scorer`` find the same rows, old and new.
"""

from __future__ import annotations

from typing import Any

from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.rows import decision_json, score_json
from tracescore.schemas.durations import unix_nanos
from tracescore.schemas.score_queries import ResultQuery, Table, TraceStatus
from tracescore.scoring.prebuilt.registry import stored_ids

_SCORES_SELECT = """
SELECT ScoreId, toUnixTimestamp64Nano(Timestamp) AS CreatedNs, TraceId, SpanId, ScorerId, ScorerVersion,
       Score, Label, Reason, StepResults, JudgeModel, InputTokens, OutputTokens, CostUsd, LatencyMs,
       SampleRate, Source, AgentName, ServiceName, SessionId
FROM {database}.scores FINAL
"""

_DECISIONS_SELECT = """
SELECT toUnixTimestamp64Nano(Timestamp) AS CreatedNs, TraceId, SpanId, ScorerId, Decision, Detail,
       SampleRate, Source, AgentName, ServiceName, SessionId
FROM {database}.score_decisions FINAL
"""

# Filter -> its condition; only the conditions of the filters given are joined into the query.
_CONDITIONS = {
    "trace_id": "TraceId = {trace_id:String}",
    "scorer": "ScorerId IN {scorer:Array(String)}",
    "service": "ServiceName = {service:String}",
    "agent": "AgentName = {agent:String}",
    "session": "SessionId = {session:String}",
    "since": "Timestamp >= fromUnixTimestamp64Nano({since:Int64})",
    "until": "Timestamp < fromUnixTimestamp64Nano({until:Int64})",
    "decision": "Decision = {decision:String}",
}

_NEWEST_FIRST = "ORDER BY Timestamp DESC, TraceId, SpanId, ScorerId"
_BY_SPAN = "ORDER BY SpanId, ScorerId"

# What the store holds of one trace: its spans (otel_traces), the ones tracescore received itself
# (span_ledger), the last item received and the last round decided (trace_done), its score rows.
_TRACE_SELECT = """
SELECT
    (SELECT uniqExact(SpanId) FROM {database}.otel_traces WHERE TraceId = {{trace_id:String}}) AS Spans,
    (SELECT count() FROM {database}.span_ledger WHERE TraceId = {{trace_id:String}} AND Kind = 'span')
        AS Received,
    (SELECT max(Arrived) FROM {database}.span_ledger WHERE TraceId = {{trace_id:String}}) AS LastArrived,
    (SELECT count() FROM {database}.trace_done WHERE TraceId = {{trace_id:String}}) AS Rounds,
    (SELECT max(Through) FROM {database}.trace_done WHERE TraceId = {{trace_id:String}}) AS DecidedThrough,
    (SELECT count() FROM {database}.scores FINAL WHERE TraceId = {{trace_id:String}}) AS Scores
"""

_DECISION_COUNTS = """
SELECT Decision, count() AS n FROM {database}.score_decisions FINAL
WHERE TraceId = {{trace_id:String}} GROUP BY Decision ORDER BY Decision
"""


class ScoreResults:
    """The reads over a ``Store``: rows matching a ``ResultQuery``, newest first, or, when a trace has
    none, a ``TraceStatus`` saying why; and every row of one trace."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def scores(self, query: ResultQuery) -> list[dict[str, Any]] | TraceStatus:
        rows = await self._select(_SCORES_SELECT, query, _NEWEST_FIRST, query.limit)
        return [score_json(row) for row in rows] or await self._explain(query, "scores")

    async def decisions(self, query: ResultQuery) -> list[dict[str, Any]] | TraceStatus:
        rows = await self._select(_DECISIONS_SELECT, query, _NEWEST_FIRST, query.limit)
        return [decision_json(row) for row in rows] or await self._explain(query, "decisions")

    async def trace_scores(self, trace_id: str) -> list[dict[str, Any]]:
        """Every score row of one trace, by span then scorer."""
        rows = await self._select(_SCORES_SELECT, ResultQuery(trace_id=trace_id), _BY_SPAN)
        return [score_json(row) for row in rows]

    async def trace_decisions(self, trace_id: str) -> list[dict[str, Any]]:
        """Every decision row of one trace, by span then scorer."""
        rows = await self._select(_DECISIONS_SELECT, ResultQuery(trace_id=trace_id), _BY_SPAN)
        return [decision_json(row) for row in rows]

    async def _select(
        self, select: str, query: ResultQuery, order: str, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """The rows of ``select`` that ``query``'s filters match, in ``order``, at most ``limit``."""
        given = query.model_dump(exclude_none=True, exclude={"limit"})
        parameters: dict[str, Any] = dict(given)
        for name in ("since", "until"):
            if name in given:
                parameters[name] = unix_nanos(given[name])
        if "scorer" in given:
            parameters["scorer"] = stored_ids(given["scorer"])
        where = " AND ".join(_CONDITIONS[name] for name in given)
        sql = select.format(database=self._store.quoted_database)
        sql += (f"WHERE {where}\n" if where else "") + order
        if limit is not None:
            sql += " LIMIT {limit:UInt32}"
            parameters["limit"] = limit
        return await self._store.query(sql, parameters)

    async def _explain(self, query: ResultQuery, table: Table) -> list[dict[str, Any]] | TraceStatus:
        """``[]`` for a listing, or for a trace with rows that the other filters left out; the
        trace's status when it has no row in ``table`` at all."""
        if query.trace_id is None:
            return []
        status = await self.trace_status(query.trace_id, table)
        return [] if status is None else status

    async def trace_status(self, trace_id: str, table: Table) -> TraceStatus | None:
        """Why ``trace_id`` has no rows in ``table``; None when it has some."""
        database = self._store.quoted_database
        parameters = {"trace_id": trace_id}
        [held] = await self._store.query(_TRACE_SELECT.format(database=database), parameters)
        counts = await self._store.query(_DECISION_COUNTS.format(database=database), parameters)
        decisions = {row["Decision"]: int(row["n"]) for row in counts}
        spans, received = int(held["Spans"]), int(held["Received"])
        if (table == "scores" and held["Scores"]) or (table == "decisions" and decisions):
            return None
        if decisions:
            kinds = ", ".join(f"{kind} {n}" for kind, n in decisions.items())
            return TraceStatus(
                trace_id=trace_id,
                status="not_scored",
                message=f"received, not scored: no scorer gave this trace a score; its decisions: {kinds} "
                "(the decisions say why)",
                spans=spans,
                decisions=decisions,
                see=f"/api/decisions?trace_id={trace_id}",
            )
        if not received:
            if spans:
                message = (
                    f"not received: {spans} span(s) of this trace are in otel_traces, written by another "
                    "exporter; tracescore scores only the spans sent to it"
                )
            else:
                message = "not received: no span of this trace is in the store"
            return TraceStatus(trace_id=trace_id, status="not_received", message=message, spans=spans)
        decided = held["Rounds"] and held["DecidedThrough"] >= held["LastArrived"]
        if decided:
            return TraceStatus(
                trace_id=trace_id,
                status="nothing_to_score",
                message=f"received, nothing to score: {spans} span(s) were assembled, but no scoring rule "
                "applies to any run in it (no agent run or model call a rule targets)",
                spans=spans,
            )
        return TraceStatus(
            trace_id=trace_id,
            status="pending",
            message=f"received, not yet scored: {spans} span(s) are stored; a trace is scored once its root "
            "span has ended and it has been quiet for assembly.idle_seconds, or after "
            "assembly.max_wait_seconds",
            spans=spans,
        )
