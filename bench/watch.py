"""Watching at scale: every Grafana panel and alert query, and a full drift pass, over 10 million score
rows and their decisions in chDB.

Rows are generated inside the store (INSERT ... SELECT FROM numbers()), written to ``scores`` and
``score_decisions`` so the materialized views fill the by-scorer companions as in production: 20
scorers x 5 services x 5 agents over eight days, one span per scorer row, a few spans per trace. The
baseline is the floor of any exactly-once read: a count of the scores of the last week through FINAL,
measured in the same run.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ingest.drift.monitor import DriftMonitor
from ingest.store.clickhouse import Store
from schemas.drift_config import DriftConfig

ROWS = int(os.environ.get("TRACESCORE_BENCH_WATCH_ROWS", "10000000"))
SLICE = 2_000_000
DAYS = 8
LIMIT_SECONDS = 2.0
REPEATS = 3

_SCORES = """
INSERT INTO {db}.scores (ScoreId, Timestamp, TraceId, SpanId, ScorerId, ScorerVersion, Score, Label, Reason,
    StepResults, JudgeModel, InputTokens, OutputTokens, CostUsd, LatencyMs, SampleRate, Source, AgentName,
    ServiceName, SpanStart, Version)
SELECT toString(n), start + toIntervalSecond(2), trace, span, scorer, '1',
       least(1.0, greatest(0.0, randNormal(0.8, 0.1))), '', 'generated', '{}',
       if(n % 2 = 0, 'openai/gpt-4o-mini', ''), rand() % 2000, rand(1) % 300, (rand() % 2000) * 1.5e-7,
       100 + rand(2) % 3000, 1.0, 'live', agent, service, start,
       toUnixTimestamp64Nano(start) + 2000000000
FROM (
    SELECT number AS n,
           concat(lower(hex(cityHash64(intDiv(number, 80)))), lower(hex(cityHash64(intDiv(number, 80), 1))))
               AS trace,
           lower(hex(cityHash64(number))) AS span,
           concat('scorer-', toString(number % 20)) AS scorer,
           concat('svc-', toString(intDiv(number, 20) % 5)) AS service,
           concat('agent-', toString(intDiv(number, 100) % 5)) AS agent,
           {start:DateTime64(9)} + toIntervalMillisecond(intDiv(number * {span_ms:UInt64}, {rows:UInt64}))
               AS start
    FROM numbers({first:UInt64}, {count:UInt64})
)
"""

_DECISIONS = """
INSERT INTO {db}.score_decisions (Timestamp, TraceId, SpanId, ScorerId, Decision, Detail, SampleRate, Source,
    AgentName, ServiceName, SpanStart, Version)
SELECT start + toIntervalSecond(2), trace, span, scorer,
       multiIf(r < 90, 'scored', r < 95, 'sampled_out', r < 98, 'filtered', 'failed'),
       if(r >= 98, 'judge timed out', ''), 1.0, 'live', agent, service, start,
       toUnixTimestamp64Nano(start) + 2000000000
FROM (
    SELECT concat(lower(hex(cityHash64(intDiv(number, 80)))), lower(hex(cityHash64(intDiv(number, 80), 1))))
               AS trace,
           lower(hex(cityHash64(number))) AS span,
           concat('scorer-', toString(number % 20)) AS scorer,
           concat('svc-', toString(intDiv(number, 20) % 5)) AS service,
           concat('agent-', toString(intDiv(number, 100) % 5)) AS agent,
           {start:DateTime64(9)} + toIntervalMillisecond(intDiv(number * {span_ms:UInt64}, {rows:UInt64}))
               AS start,
           rand(3) % 100 AS r
    FROM numbers({first:UInt64}, {count:UInt64})
)
"""


async def generate(store: Store, now: datetime, rows: int) -> None:
    start = now - timedelta(days=DAYS)
    params = {"start": start, "span_ms": DAYS * 86_400_000, "rows": rows}
    for first in range(0, rows, SLICE):
        count = min(SLICE, rows - first)
        for sql in (_SCORES, _DECISIONS):
            await store.query(
                sql.replace("{db}", store.quoted_database), params | {"first": first, "count": count}
            )


async def timed(fn: Callable[[], Awaitable[Any]]) -> float:
    """Best wall time of REPEATS calls."""
    best = float("inf")
    for _ in range(REPEATS):
        started = time.perf_counter()
        await fn()
        best = min(best, time.perf_counter() - started)
    return best


async def _run(
    directory: Path, queries: Callable[[Store, datetime], list[tuple[str, str]]] | None
) -> list[tuple[str, float, float]]:
    now = datetime.now(UTC).replace(microsecond=0)
    store = Store(str(directory / "chdb"))
    await store.start()
    results: list[tuple[str, float, float]] = []
    try:
        await generate(store, now, ROWS)
        db = store.quoted_database
        week = {"b0": now - timedelta(days=7, hours=1), "w1": now}
        floor_sql = (
            f"SELECT count() FROM {db}.scores_by_scorer FINAL "
            "WHERE SpanStart >= {b0:DateTime64(9)} AND SpanStart < {w1:DateTime64(9)}"
        )

        async def floor() -> None:
            await store.query(floor_sql, week)

        baseline = await timed(floor)
        monitor = DriftMonitor(store, DriftConfig())

        async def drift_pass() -> None:
            await monitor.run_pass(now, record=False)

        results.append(("full drift pass (window 1h, baseline 7d)", baseline, await timed(drift_pass)))
        for name, sql in queries(store, now) if queries else []:

            async def panel(sql: str = sql) -> None:
                await store.query(sql)

            results.append((name, baseline, await timed(panel)))
    finally:
        await store.shutdown()
    return results


def bench_watch(
    queries: Callable[[Store, datetime], list[tuple[str, str]]] | None = None,
) -> list[tuple[str, float, float]]:
    """(name, baseline seconds, ours seconds) for the drift pass and each query ``queries`` gives."""
    with tempfile.TemporaryDirectory(prefix="tracescore-bench-watch-") as directory:
        return asyncio.run(_run(Path(directory), queries))
