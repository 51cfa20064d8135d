"""A full disk is an outage, never a loss: ``tracescore serve`` with its store on a 256 MiB tmpfs, under
load from four OTLP/HTTP clients, while another program takes every free byte of the disk at once and
gives it back later.

While the disk is full the clients get 503 with Retry-After (never 400: an exporter drops those), and
``/readyz`` says why; within seconds of space coming back the service takes spans again by itself.
Afterwards -- and after a restart, when the engine checks every part it holds -- every acknowledged
trace is in ``otel_traces`` and ``span_ledger`` and has its decisions, once.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.load import PROTOBUF, Load
from tests.support.otlp import many_trace_requests
from tests.support.serve import ENV, decision_outcome, start_serve, stop, wait_healthy
from tests.support.tmpfs import Tmpfs
from tracescore.ingest.store.clickhouse import Store

DISK = "256m"
FLOOR = "64MiB"
PER_REQUEST = 10
RULES = 2  # the default rules: every trace gets two decisions


def readyz(base: str) -> tuple[int, dict[str, object]]:
    try:
        with urllib.request.urlopen(f"{base}/readyz", timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, json.loads(exc.read())


async def until(condition: Callable[[], bool], limit_s: float, what: str) -> float:
    """Seconds until ``condition()`` holds (polled); fails after ``limit_s``."""
    started = time.monotonic()
    while not await asyncio.to_thread(condition):
        assert time.monotonic() - started < limit_s, f"timed out waiting for {what}"
        await asyncio.sleep(0.2)
    return time.monotonic() - started


def test_a_full_disk_refuses_with_503_resumes_by_itself_and_loses_no_acknowledged_trace(
    tmp_path: Path,
) -> None:
    requests = many_trace_requests(8_000, PER_REQUEST, "full-disk")
    env = {**ENV, "TRACESCORE_STORE_MIN_FREE_BYTES": FLOOR}
    log = tmp_path / "serve.log"
    with Tmpfs(tmp_path / "disk", DISK) as disk:
        store = disk.mountpoint / "store"
        proc, port = start_serve(store, env=env, stderr_file=log, prefix=disk.inside())
        try:
            base = wait_healthy(proc, port)
            load = Load(base, requests)

            async def scenario() -> tuple[float, float, tuple[float, float], tuple[int, dict[str, object]]]:
                sending = asyncio.create_task(load.run())
                # Enough acknowledged before the disk fills that a loss would show (counted, not timed:
                # a busy machine acknowledges fewer per second).
                await until(lambda: len(load.acknowledged) >= 1_000, 120, "1,000 acknowledged traces")
                await asyncio.to_thread(disk.fill)
                filled = time.monotonic()
                assert disk.free_bytes() < 1 << 20
                refused = await until(lambda: readyz(base)[0] == 503, 5, "/readyz to say the disk is full")
                await asyncio.sleep(5)
                while_full = readyz(base)
                disk.free()
                freed = time.monotonic()
                resumed = await until(lambda: readyz(base)[0] == 200, 10, "/readyz to be ready again")
                await asyncio.sleep(3)
                load.running = False
                await sending
                return filled, freed, (refused, resumed), while_full

            filled, freed, (_, resumed), while_full = asyncio.run(scenario())
        finally:
            assert stop(proc) == 0
        # Every request sent while the disk was full (past the moment the service saw it) was refused
        # with 503 and Retry-After; none got 400, before, during or after.
        # Ready again within a poll of the disk (0.25 s; the probe above looks every 0.2 s), not after
        # the score rows' backoff of seconds.
        assert resumed < 1.5, resumed
        assert all(status in (200, 503) for _, status, _ in load.answers), {s for _, s, _ in load.answers}
        during = [(status, retry) for at, status, retry in load.answers if filled + 1 <= at < freed]
        assert during and all(status == 503 and retry for status, retry in during), during[:5]
        after = [status for at, status, _ in load.answers if at >= freed]
        assert 200 in after  # taken again by itself
        status, body = while_full
        store_health = body["store"]
        assert status == 503 and isinstance(store_health, dict), body
        disk_health = store_health["disk"]
        assert isinstance(disk_health, dict) and disk_health["status"] == "refusing"
        assert "under its floor of 64 MiB" in str(disk_health["reason"])

        # A restart: the engine checks every part it holds, recovery scores what is undecided.
        state = restarted_state(disk, store, env, log)
    acknowledged = set(load.acknowledged)
    assert len(acknowledged) > 1_000
    assert acknowledged - set(state["otel_traces"]) == set()
    assert acknowledged - set(state["span_ledger"]) == set()
    assert {trace for trace in acknowledged if state["decisions"].get(trace) != RULES} == set()
    assert state["doubled"] == []
    text = log.read_text()
    assert "for good" not in text and "dropped" not in text  # no row was given up on


def test_a_stop_and_a_start_on_a_disk_at_its_floor_come_through_and_lose_nothing(tmp_path: Path) -> None:
    """With the disk full, a stop completes (score rows it cannot write are left for the next start),
    and a start comes up: it writes no metadata, serves /healthz, refuses spans with 503 and
    Retry-After, and stops again. Once space is back, every acknowledged trace is decided, once."""
    requests = many_trace_requests(4_000, PER_REQUEST, "floor-restart")
    env = {**ENV, "TRACESCORE_STORE_MIN_FREE_BYTES": FLOOR}
    log = tmp_path / "serve.log"
    with Tmpfs(tmp_path / "disk", DISK) as disk:
        store = disk.mountpoint / "store"
        proc, port = start_serve(store, env=env, stderr_file=log, prefix=disk.inside())
        load = Load(wait_healthy(proc, port), requests)

        async def fill_under_load() -> None:
            sending = asyncio.create_task(load.run())
            await until(lambda: len(load.acknowledged) >= 1_000, 120, "1,000 acknowledged traces")
            await asyncio.to_thread(disk.fill)
            await until(lambda: readyz(load.base)[0] == 503, 5, "/readyz to say the disk is full")
            load.running = False
            await sending

        try:
            asyncio.run(fill_under_load())
            started = time.monotonic()
            assert stop(proc) == 0  # a stop on a full disk completes
            stopping_s = time.monotonic() - started
        finally:
            stop(proc)
        assert stopping_s < 30, stopping_s
        proc, port = start_serve(store, env=env, stderr_file=log, prefix=disk.inside())
        try:
            base = wait_healthy(proc, port)  # a start on a full disk comes up
            status, body = readyz(base)
            assert status == 503 and body["store"]["status"] == "refusing", body  # type: ignore[index]
            _, more = many_trace_requests(10, PER_REQUEST, "floor-restart")
            refused = urllib.request.Request(f"{base}/v1/traces", data=more[0], headers=PROTOBUF)
            try:
                urllib.request.urlopen(refused, timeout=30).close()
                raise AssertionError("a span was taken on a full disk")
            except urllib.error.HTTPError as exc:
                with exc:
                    assert exc.code == 503 and exc.headers["Retry-After"], exc.code
            time.sleep(3)  # recovery adopts what is undecided; its rows cannot be written
        finally:
            assert stop(proc) == 0
        disk.free()
        state = restarted_state(disk, store, env, log)
    acknowledged = set(load.acknowledged)
    assert acknowledged - set(state["otel_traces"]) == set()
    assert {trace for trace in acknowledged if state["decisions"].get(trace) != RULES} == set()
    assert state["doubled"] == []


def restarted_state(disk: Tmpfs, store: Path, env: dict[str, str], log: Path) -> dict[str, Any]:
    """Start serve on ``store`` again and let it decide what it finds undecided (the idle window and
    recovery), stop it, and read what the store holds (``store_state``)."""
    proc, port = start_serve(store, env=env, stderr_file=log, prefix=disk.inside())
    try:
        wait_healthy(proc, port)
        time.sleep(4)
    finally:
        assert stop(proc) == 0
    code = f"from tests.e2e.test_full_disk import store_state; print(store_state({str(store)!r}))"
    state: dict[str, Any] = json.loads(disk.python(code, ENV))
    return state


def store_state(store: str) -> str:
    """What the store holds, as JSON: the trace ids in ``otel_traces`` and ``span_ledger``, each trace's
    decisions, and every (span, scorer) with more than one decision or score row (run inside the
    tmpfs's namespace)."""

    async def traces() -> dict[str, list[str]]:
        opened = Store(store, min_free_bytes=0)
        await opened.start()
        try:
            return {
                table: [row["TraceId"] for row in await opened.query(f"SELECT DISTINCT TraceId FROM {table}")]
                for table in ("otel_traces", "span_ledger")
            }
        finally:
            await opened.shutdown()

    stored = asyncio.run(traces())
    decisions, doubled_decisions, doubled_scores = decision_outcome(Path(store))
    return json.dumps({**stored, "decisions": decisions, "doubled": doubled_decisions + doubled_scores})


def test_the_tmpfs_is_the_services_own_and_really_fills(tmp_path: Path) -> None:
    """The scenario above fills a real disk: what the namespace shows is what the test fills."""
    with Tmpfs(tmp_path / "disk", "16m") as disk:
        assert 15 << 20 < disk.free_bytes() <= 16 << 20
        disk.fill()
        assert disk.free_bytes() < 1 << 20
        assert os.path.getsize(disk.outside("filler")) > 15 << 20
        disk.free()
        assert disk.free_bytes() > 15 << 20
    assert not (tmp_path / "disk" / "filler").exists()  # never on the host's disk
