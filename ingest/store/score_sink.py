"""The score sink: score rows and decisions into ``scores`` / ``score_decisions``, decided rounds into
``trace_done``, judge spend into ``judge_spend``; and what a round finds written before it.

Both tables are ReplacingMergeTree keyed by the deterministic score id (scores) or the (run,
scorer) pair (decisions), so a replay overwrites rather than duplicates; reads use ``FINAL``. The
rows users read are served by ``ingest.store.score_reads``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from tracescore.ingest.store.clickhouse import Store, TableRows
from tracescore.ingest.store.rows import (
    DECISIONS_COLUMNS,
    JUDGE_IO_COLUMNS,
    SCORES_COLUMNS,
    decision_row,
    judge_io_row,
    score_row,
)
from tracescore.schemas import Decision, ScoreRecord, TraceRound
from tracescore.schemas.assembly_rounds import UnitOutcome
from tracescore.schemas.consumers import PriorOutcomes, SpendRow
from tracescore.scoring.prebuilt.registry import former_ids, read_as

DONE_COLUMNS = ("TraceId", "Through", "Decided", "Reason")
SPEND_COLUMNS = ("Budget", "Replica", "Hour", "Calls", "CostUsd", "Version")

# Each trace's rows from its own ``since`` on (``transform`` maps a trace id to it: one query for
# a whole batch).
_PRIOR_WHERE = """
WHERE TraceId IN {{ids:Array(String)}}
  AND Timestamp >= fromUnixTimestamp64Nano(transform(TraceId, {{ids:Array(String)}},
                                                     {{since:Array(Int64)}}, toInt64(0)))
"""
_PRIOR_SELECT = f"""
SELECT TraceId, SpanId, ScorerId, 1 AS Decided, Decision, toFloat64(0) AS Score, '' AS Label
FROM {{database}}.score_decisions FINAL {_PRIOR_WHERE}
UNION ALL
SELECT TraceId, SpanId, ScorerId, 0 AS Decided, 'scored' AS Decision, Score, Label
FROM {{database}}.scores FINAL {_PRIOR_WHERE}
"""


async def read_prior_outcomes(store: Store, since: Mapping[str, int]) -> dict[str, PriorOutcomes]:
    """What was written for each trace at or after its ``since`` (ns): the decisions, the score rows
    without theirs, and what each came to (a cascade's gate is read, not judged again). One query for
    all of them, however many (a recovery releases hundreds at once); traces with nothing written are
    absent."""
    if not since:
        return {}
    rows = await store.query(
        _PRIOR_SELECT.format(database=store.quoted_database),
        {"ids": list(since), "since": list(since.values())},
    )
    decided: dict[str, set[tuple[str, str]]] = {}
    scored: dict[str, set[tuple[str, str]]] = {}
    outcomes: dict[str, dict[tuple[str, str], UnitOutcome]] = {}
    renamed = former_ids()
    for row in rows:
        into = decided if row["Decided"] else scored
        pairs = into.setdefault(row["TraceId"], set())
        found = outcomes.setdefault(row["TraceId"], {})
        for scorer_id in read_as(row["ScorerId"], renamed):
            pair = (row["SpanId"], scorer_id)
            pairs.add(pair)
            found[pair] = merged_outcome(found.get(pair), row)
    return {
        trace_id: PriorOutcomes(
            decided=frozenset(decided.get(trace_id, ())),
            scored_undecided=frozenset(scored.get(trace_id, set()) - decided.get(trace_id, set())),
            outcomes=outcomes[trace_id],
        )
        for trace_id in decided.keys() | scored.keys()
    }


def merged_outcome(known: UnitOutcome | None, row: Mapping[str, Any]) -> UnitOutcome:
    """What a (span, scorer) came to, merging one more of its rows into what its other row said: a
    decision row (``Decided`` 1: its ``Decision``) or a score row (``Decided`` 0: ``Score``, ``Label``)."""
    if row["Decided"]:
        decision = row["Decision"]
        score, label = (known.score, known.label) if known is not None else (None, "")
    else:
        decision = known.decision if known is not None else "scored"
        score, label = float(row["Score"]), str(row["Label"])
    if decision != "scored":
        return UnitOutcome(decision)
    return UnitOutcome(decision, score, label)


class ClickHouseScoreSink:
    """Implements ``schemas.consumers.ScoreSink`` over a ``Store`` (scores, decisions, decided
    rounds in ``trace_done``) and ``SpendStore`` (judge budgets' ``judge_spend``)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def write_scores(self, records: Sequence[ScoreRecord], decisions: Sequence[Decision]) -> None:
        """Scores, then decisions, in one call to the store (one wait for its worker, not two); the
        rows are built there, off the event loop."""
        if not records and not decisions:
            return

        def build() -> list[TableRows]:
            tables: list[TableRows] = [
                ("scores", SCORES_COLUMNS, [score_row(r) for r in records]),
                ("score_decisions", DECISIONS_COLUMNS, [decision_row(d) for d in decisions]),
            ]
            if kept := [judge_io_row(d) for d in decisions if d.judge_io]:
                tables.append(("judge_io", JUDGE_IO_COLUMNS, kept))
            return tables

        await self._store.insert_built(build, "insert into scores and score_decisions")

    async def mark_done(self, rounds: Sequence[TraceRound]) -> None:
        if rounds:
            now = time.time_ns()
            rows = [[r.trace_id, r.through_unix_nano, now, r.reason] for r in rounds]
            await self._store.insert("trace_done", rows, DONE_COLUMNS)

    async def prior_outcomes(self, trace_id: str, since_unix_nano: int) -> PriorOutcomes:
        found = await read_prior_outcomes(self._store, {trace_id: since_unix_nano})
        return found.get(trace_id, PriorOutcomes())

    async def save_spend(self, rows: Sequence[SpendRow]) -> None:
        if rows:
            version = time.time_ns()
            table = [[r.budget, r.replica, r.hour, r.calls, r.usd, version] for r in rows]
            await self._store.insert("judge_spend", table, SPEND_COLUMNS)

    async def load_spend(self, since_unix: int) -> list[SpendRow]:
        sql = (
            "SELECT Budget, Replica, toUnixTimestamp(Hour) AS HourStart, Calls, CostUsd "
            f"FROM {self._store.quoted_database}.judge_spend FINAL WHERE Hour >= toDateTime({{since:Int64}})"
        )
        rows = await self._store.query(sql, {"since": since_unix})
        return [
            SpendRow(r["Budget"], r["Replica"], int(r["HourStart"]), int(r["Calls"]), float(r["CostUsd"]))
            for r in rows
        ]
