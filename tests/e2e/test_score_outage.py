"""The scores table refuses every insert for a while (ClickHouse's TOO_MANY_PARTS, made real by the
table's own settings): spans keep being acknowledged, nothing is dropped, /readyz says what is wrong,
and once the table takes inserts again every acknowledged trace has its decisions and scores once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.support.otlp import agent_trace_requests
from tests.support.service import running_service, service_config
from tracescore.ingest.service import Service

SCORERS = 2  # the default rules
PROTOBUF = {"Content-Type": "application/x-protobuf"}


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[Service]:
    async with running_service(service_config(tmp_path)) as svc:
        yield svc


async def _post_all(base: str, bodies: list[bytes]) -> list[int]:
    async with aiohttp.ClientSession() as session:

        async def post(body: bytes) -> int:
            async with session.post(f"{base}/v1/traces", data=body, headers=PROTOBUF) as resp:
                return resp.status

        return [await post(body) for body in bodies]


async def _get(base: str, path: str) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as session, session.get(f"{base}{path}") as resp:
        return resp.status, await resp.json()


async def _until(condition: Callable[[], Awaitable[bool]], limit_s: float, what: str) -> None:
    deadline = time.monotonic() + limit_s
    while not await condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.1)


def _decided(service: Service) -> float:
    total = 0.0
    for family in service.metrics.registry.collect():
        if family.name == "tracescore_scoring_decisions":
            total += sum(s.value for s in family.samples if s.name.endswith("_total"))
    return total


async def _scores_refuse_inserts(service: Service, refuse: bool) -> None:
    # One part is "too many" while refusing; merges cannot get below one part.
    limits = (
        "parts_to_throw_insert = 1, parts_to_delay_insert = 1"
        if refuse
        else ("parts_to_throw_insert = 3000, parts_to_delay_insert = 1000")
    )
    await service.store.query(f"ALTER TABLE {service.store.quoted_database}.scores MODIFY SETTING {limits}")


async def test_a_score_table_outage_leaves_nothing_acknowledged_unscored(service: Service) -> None:
    base = f"http://127.0.0.1:{service.http.port}"
    traces = agent_trace_requests(400, service="outage")
    before, during = traces[:100], traces[100:]

    assert await _post_all(base, [body for _, body in before]) == [200] * len(before)

    async def first_written() -> bool:
        return len(await _decisions_per_trace(service)) == len(before)

    await _until(first_written, 60, "the first traces' decisions in the store")

    await _scores_refuse_inserts(service, True)
    try:
        # Spans are still acknowledged: they go to otel_traces, which takes inserts.
        assert await _post_all(base, [body for _, body in during]) == [200] * len(during)

        async def failing() -> bool:
            return service.executor.write_error is not None and service.executor.rows_buffered > 0

        await _until(failing, 60, "the score writes to fail")
        await asyncio.sleep(5)  # an outage of several flushes and retries
        status, body = await _get(base, "/readyz")
        assert status == 503 and body["status"] == "degraded"
        assert body["scoring"]["status"] == "failing" and "TOO_MANY_PARTS" in body["scoring"]["error"]
        assert body["backlog"]["rows_buffered"] > 0
        decided = await _decided_traces(service, [trace_id for trace_id, _ in during])
        assert decided < len(during)  # the outage held the second wave's rows back
    finally:
        await _scores_refuse_inserts(service, False)

    async def all_written() -> bool:
        return await _decisions_per_trace(service) == {trace_id: SCORERS for trace_id, _ in traces}

    await _until(all_written, 120, "every trace's decisions in the store after the outage")
    await _until(lambda: _ready(base), 30, "/readyz to say ready again")
    assert _decided(service) == SCORERS * len(traces)  # each run decided once, however often written
    registry = service.metrics.registry
    for kind in ("score", "decision"):
        assert not registry.get_sample_value("tracescore_scoring_rows_dropped_total", {"kind": kind})

    scored = await service.store.query(
        "SELECT count() AS n FROM score_decisions FINAL WHERE Decision = 'scored'"
    )
    rows = await service.store.query(
        "SELECT count() AS n, uniqExact(TraceId, SpanId, ScorerId) AS pairs FROM scores FINAL"
    )
    assert int(rows[0]["n"]) == int(rows[0]["pairs"]) == int(scored[0]["n"]) > 0


async def _ready(base: str) -> bool:
    status, body = await _get(base, "/readyz")
    return status == 200 and body["scoring"] == {"status": "ok", "error": None}


async def _decisions_per_trace(service: Service) -> dict[str, int]:
    rows = await service.store.query(
        "SELECT TraceId, count() AS n FROM score_decisions FINAL GROUP BY TraceId"
    )
    return {row["TraceId"]: int(row["n"]) for row in rows}


async def _decided_traces(service: Service, trace_ids: list[str]) -> int:
    rows = await service.store.query(
        "SELECT uniqExact(TraceId) AS n FROM score_decisions FINAL WHERE has({ids:Array(String)}, TraceId)",
        {"ids": trace_ids},
    )
    return int(rows[0]["n"])
