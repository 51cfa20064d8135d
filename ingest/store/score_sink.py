"""The score sink: score rows and decisions into ``scores`` / ``score_decisions``, and read back.

Both tables are ReplacingMergeTree keyed by the deterministic score id (scores) or the (run,
scorer) pair (decisions), so a replay overwrites rather than duplicates; reads use ``FINAL``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ingest.store.clickhouse import Store
from ingest.store.rows import (
    DECISIONS_COLUMNS,
    SCORES_COLUMNS,
    decision_json,
    decision_row,
    score_json,
    score_row,
)
from schemas import Decision, ScoreRecord

_SCORES_SELECT = """
SELECT ScoreId, toUnixTimestamp64Nano(Timestamp) AS CreatedNs, TraceId, SpanId, ScorerId, ScorerVersion,
       Score, Label, Reason, StepResults, JudgeModel, InputTokens, OutputTokens, CostUsd, LatencyMs,
       SampleRate, Source, AgentName, ServiceName
FROM {database}.scores FINAL
WHERE TraceId = {{trace_id:String}}
ORDER BY SpanId, ScorerId
"""

_DECISIONS_SELECT = """
SELECT toUnixTimestamp64Nano(Timestamp) AS CreatedNs, TraceId, SpanId, ScorerId, Decision, Detail,
       SampleRate, Source
FROM {database}.score_decisions FINAL
WHERE TraceId = {{trace_id:String}}
ORDER BY SpanId, ScorerId
"""


class ClickHouseScoreSink:
    """Implements ``schemas.consumers.ScoreSink`` over a ``Store``, and the API's score reads."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def write_scores(self, records: Sequence[ScoreRecord], decisions: Sequence[Decision]) -> None:
        if records:
            await self._store.insert("scores", [score_row(r) for r in records], SCORES_COLUMNS)
        if decisions:
            await self._store.insert(
                "score_decisions", [decision_row(d) for d in decisions], DECISIONS_COLUMNS
            )

    async def get_scores(self, trace_id: str) -> list[dict[str, Any]]:
        sql = _SCORES_SELECT.format(database=self._store.quoted_database)
        return [score_json(row) for row in await self._store.query(sql, {"trace_id": trace_id})]

    async def get_decisions(self, trace_id: str) -> list[dict[str, Any]]:
        sql = _DECISIONS_SELECT.format(database=self._store.quoted_database)
        return [decision_json(row) for row in await self._store.query(sql, {"trace_id": trace_id})]
