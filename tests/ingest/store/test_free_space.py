"""The store's free-space floor on a real embedded store: under it no write reaches the engine, merges
stop, ``/readyz`` says why, and everything resumes by itself once space is back. The disk's readings
are given by the test (the filesystem is the one boundary faked here; ``tests/e2e/test_full_disk.py``
fills a real one)."""

from __future__ import annotations

import asyncio
import functools
import logging
from pathlib import Path

import pytest
from clickhouse_connect.driver.exceptions import DatabaseError

from tests.support.otlp import Recorder
from tracescore.ingest.observability.service_metrics import Metrics
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.free_space import DiskSpace, FreeSpaceGuard, server_space
from tracescore.ingest.store.retriable import store_error
from tracescore.ingest.store.span_sink import SpanSink, insert_spans
from tracescore.schemas import Span, SpanBatch
from tracescore.schemas.errors import StoreFull, is_retriable

MIB = 2**20
GIB = 2**30


class Disk:
    """Readings of a disk that the test changes."""

    def __init__(self, free: int, total: int = 10 * GIB) -> None:
        self.free = free
        self.total = total
        self.during_write: int | None = None  # the reading right after the next write starts

    def __call__(self) -> DiskSpace:
        return DiskSpace(self.free, self.total)


def guarded(store: Store, disk: Disk, floor: int = 100 * MIB, ratio: float = 0.0) -> FreeSpaceGuard:
    store.free_space = FreeSpaceGuard(floor, ratio, read=disk)
    store.free_space.refresh()
    return store.free_space


def span(name: str) -> Span:
    """A root span of its own trace, named ``name``."""
    number = sum(ord(c) << (8 * i) for i, c in enumerate(name)) + 1
    return Span(
        trace_id=f"{number:032x}",
        span_id=f"{number:016x}",
        name=name,
        start_time_unix_nano=1_700_000_000_000_000_000,
        end_time_unix_nano=1_700_000_001_000_000_000,
    )


async def rows(store: Store, table: str) -> int:
    [row] = await store.query(f"SELECT count() AS n FROM {table}")
    return int(row["n"])


def test_the_floor_is_the_larger_of_bytes_and_ratio_and_resumes_above_a_margin() -> None:
    disk = Disk(free=5 * GIB, total=100 * GIB)
    guard = FreeSpaceGuard(256 * MIB, 0.05, read=disk)
    assert guard.floor(disk()) == 5 * GIB  # 5 % of 100 GiB over 256 MiB
    assert not guard.refresh()
    disk.free = 5 * GIB - 1
    assert guard.refresh()
    disk.free = 6 * GIB - 1  # above the floor, not yet above the margin: still refusing
    assert guard.refresh()
    disk.free = 6 * GIB
    assert not guard.refresh()
    assert FreeSpaceGuard(256 * MIB, 0.0, read=disk).floor(DiskSpace(0, 100 * GIB)) == 256 * MIB
    off = FreeSpaceGuard(0, 0.0, read=Disk(free=0))
    off.check_write("insert")  # no floor: nothing refused
    assert not off.enabled


async def test_under_the_floor_no_write_reaches_the_engine_and_it_resumes_when_space_is_back(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    disk = Disk(free=50 * MIB)
    guard = guarded(store, disk)
    with pytest.raises(StoreFull, match=r"50 MiB free, under its floor of 100 MiB") as refused:
        await insert_spans(store, [span("a")])
    assert is_retriable(refused.value) and refused.value.retry_after_s > 0
    assert await rows(store, "otel_traces") == 0 and await rows(store, "span_ledger") == 0
    health = store.health()
    assert health["status"] == "refusing"
    disk_health = health["disk"]
    assert isinstance(disk_health, dict) and disk_health.pop("refusing_seconds") >= 0
    assert disk_health == {
        "status": "refusing",
        "free_bytes": 50 * MIB,
        "total_bytes": 10 * GIB,
        "floor_bytes": 100 * MIB,
        "refused_writes": 1,
        "reason": "new spans refused: the store's disk has 50 MiB free, under its floor of 100 MiB "
        "(store_min_free_bytes); send again later",
    }
    disk.free = 200 * MIB
    await store._watch_once()  # what the background watch does every POLL_SECONDS
    assert not guard.refusing and store.health()["status"] == "ok"
    await insert_spans(store, [span("a")])
    assert await rows(store, "otel_traces") == 1
    assert any("200 MiB free again" in message for message in caplog.messages)


async def test_merges_stop_under_the_floor_and_start_again_above_it(store: Store) -> None:
    disk = Disk(free=50 * MIB)
    guarded(store, disk)
    await store._watch_once()  # merges stopped
    client = store._require_client()
    for name in "abcdef":  # parts that would be merged at once (written past the guard, on purpose)
        await store._on_worker(
            functools.partial(client.command, f"INSERT INTO trace_done VALUES ('{name}', 1, 2, 'x')")
        )
    await asyncio.sleep(1.5)
    [stopped] = await store.query(
        "SELECT count() AS n FROM system.parts WHERE table = 'trace_done' AND active"
    )
    assert int(stopped["n"]) == 6  # nothing merged meanwhile
    disk.free = 200 * MIB
    await store._watch_once()
    await store.query("OPTIMIZE TABLE trace_done FINAL")
    [merged] = await store.query(
        "SELECT count() AS n FROM system.parts WHERE table = 'trace_done' AND active"
    )
    assert int(merged["n"]) == 1


async def test_a_write_during_which_the_disk_ran_out_is_reported_failed(store: Store) -> None:
    disk = Disk(free=200 * MIB)
    guard = guarded(store, disk)
    readings = iter([DiskSpace(200 * MIB, 10 * GIB)])  # before the write; right after it, and on, 1 MiB
    guard._read = lambda: next(readings, DiskSpace(1 * MIB, 10 * GIB))
    with pytest.raises(StoreFull):
        await insert_spans(store, [span("a")])
    assert guard.damaged_writes == 1 and guard.refusing


async def test_the_span_sink_refuses_new_batches_at_once_while_the_disk_is_under_its_floor(
    store: Store,
) -> None:
    disk = Disk(free=50 * MIB)
    guarded(store, disk)
    sink = SpanSink(store, Recorder(), Metrics())
    with pytest.raises(StoreFull):
        await sink.consume_spans(SpanBatch(spans=[span("a")]))
    await sink.shutdown()


async def test_a_store_opened_again_after_running_out_sets_damaged_parts_aside(
    store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A part left with empty files (what a write meeting the end of the disk leaves) is set aside when
    the engine opens the store again -- at once, while the disk is still full (the parts a damaged merge
    came from are kept only a while); the others stay, and writes resume once space is back."""
    await insert_spans(store, [span("kept")])
    await store.query("SYSTEM STOP MERGES")
    await insert_spans(store, [span("damaged")])
    [part] = await store.query(
        "SELECT path FROM system.parts WHERE table = 'otel_traces' AND active ORDER BY name DESC LIMIT 1"
    )
    for file in await asyncio.to_thread(lambda: list(Path(part["path"]).iterdir())):
        file.write_bytes(b"")  # noqa: ASYNC240
    disk = Disk(free=1 * MIB)
    guard = guarded(store, disk)
    assert guard.refusing
    with caplog.at_level(logging.WARNING):
        await store._watch_once()
        await store._watch_once()  # still full: not opened again
    assert guard.refusing  # opened again while the disk is full
    assert sum("opened again" in message for message in caplog.messages) == 1
    assert [row["SpanName"] for row in await store.query("SELECT SpanName FROM otel_traces")] == ["kept"]
    assert any("set aside 1 damaged part(s) (otel_traces/broken" in m for m in caplog.messages)
    disk.free = 500 * MIB
    await store._watch_once()
    await insert_spans(store, [span("after")])  # the store works on
    assert await rows(store, "otel_traces") == 2


async def test_a_watch_that_fails_goes_on_and_shutdown_releases_the_engine_it_opened_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A disk reading that fails unforeseen does not end the watch (a refusing store would refuse for
    good), and the engine the watch opened again after the disk ran out is the one shutdown closes:
    another store opens in this process afterwards (chDB holds one data directory per process)."""
    store = Store(str(tmp_path / "first"))
    await store.start()
    readings = [0]

    def read() -> DiskSpace:
        readings[0] += 1
        if readings[0] <= 2:
            raise RuntimeError("a reading no one foresaw failed")
        return DiskSpace(1 * MIB, 10 * GIB)  # under the floor: the watch opens the engine again

    store.free_space = FreeSpaceGuard(100 * MIB, 0.0, read=read)
    store.free_space._note_ran_out()
    store._watcher = asyncio.create_task(store._watch_free_space())
    with caplog.at_level(logging.WARNING):
        async with asyncio.timeout(60):
            while not any("opened again" in message for message in caplog.messages):  # noqa: ASYNC110
                await asyncio.sleep(0.05)  # the log is what tells
    assert readings[0] >= 3
    assert sum("watching the store's free space failed" in m for m in caplog.messages) == 2
    await store.shutdown()
    second = Store(str(tmp_path / "second"))
    await second.start()  # raises StoreInUse if the first engine were still open
    await second.shutdown()


def test_resource_errors_of_the_engine_and_the_system_are_retriable() -> None:
    def classified(message: str) -> bool:
        return store_error("insert into otel_traces", DatabaseError(message)).retriable

    assert classified(
        "Code: 243. DB::Exception: Cannot reserve 1.00 MiB, not enough space. (NOT_ENOUGH_SPACE)"
    )
    assert classified("Code: 75. DB::Exception: Cannot write to file descriptor: No space left on device")
    assert classified(
        "Code: 1001. DB::Exception: std::exception. Code: 1001, e.what() = No space left on device"
    )
    assert classified("Code: 173. DB::Exception: Cannot allocate memory. (CANNOT_ALLOCATE_MEMORY)")
    assert classified("Code: 76. DB::Exception: Cannot open file x: Too many open files")
    assert not classified("Code: 62. DB::Exception: Syntax error: failed at position 1. (SYNTAX_ERROR)")


async def test_a_server_stores_disks_are_read_from_system_disks(store: Store) -> None:
    client = store._require_client()
    space = await store._on_worker(lambda: server_space(client))
    assert space is not None and 0 < space.free <= space.total
