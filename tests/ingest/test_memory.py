"""The memory guard: a request is admitted when what it will cost fits beside what the process holds
and what the requests in flight reserved; otherwise it is refused for now (it could fit later) or for
good (it could never fit); over the high mark everything is refused (the resident size is fed in; the
e2e test reads the kernel's)."""

from __future__ import annotations

import asyncio

import pytest

from tracescore.ingest.observability.service_metrics import Metrics
from tracescore.ingest.receivers.memory_admission import (
    ADMIT_SHARE,
    HIGH,
    LOW,
    MemoryGuard,
    RequestTooLarge,
    resident_bytes,
    resident_parts,
)
from tracescore.schemas.config import ServiceConfig
from tracescore.schemas.errors import Overloaded

MIB = 2**20
LIMIT = 1000 * MIB
REST = 200 * MIB
WORKING = 100 * MIB


class Process:
    def __init__(self) -> None:
        self.resident = REST
        self.busy = False
        self.relieved = 0
        self.now = 0.0

    def guard(self, metrics: Metrics | None = None) -> MemoryGuard:
        def relieve() -> None:
            self.relieved += 1

        return MemoryGuard(
            LIMIT,
            metrics or Metrics(),
            busy=lambda: self.busy,
            relieve=relieve,
            read=lambda: self.resident,
            clock=lambda: self.now,
        )

    async def settled(self, metrics: Metrics | None = None) -> MemoryGuard:
        guard = self.guard(metrics)
        guard.measure_rest(WORKING)
        await guard.settle()
        return guard

    def at(self, size: int, seconds: float = 1.0) -> None:
        self.resident = size
        self.now += seconds


def room() -> int:
    """What a request may reserve beside the rest size and the store's working memory."""
    return int(LIMIT * ADMIT_SHARE) - REST - WORKING


async def test_requests_are_admitted_while_their_costs_fit_and_refused_for_now_beyond() -> None:
    metrics, process = Metrics(), Process()
    guard = await process.settled(metrics)
    first = guard.reserve(room() // 2, "a request of 1 bytes")
    second = guard.reserve(room() // 2, "a request of 2 bytes")
    assert guard.reserved == 2 * (room() // 2)
    with pytest.raises(Overloaded, match="needs 1 MiB: send it again later") as refused:
        guard.reserve(MIB, "a request of 3 bytes")
    assert refused.value.retry_after_s > 0
    first.release()
    first.release()  # idempotent
    with guard.reserve(MIB, "a request of 3 bytes"):
        assert guard.reserved == room() // 2 + MIB
    second.release()
    assert guard.reserved == 0
    assert metrics.registry.get_sample_value("tracescore_requests_refused_total", {"reason": "memory"}) == 1
    assert metrics.registry.get_sample_value("tracescore_memory_reserved_bytes") == 0
    assert metrics.registry.get_sample_value("tracescore_memory_rest_bytes") == REST


async def test_the_store_working_memory_is_set_aside_until_the_process_holds_more() -> None:
    process = Process()
    guard = await process.settled()
    with guard.reserve(room(), "a request"), pytest.raises(Overloaded):  # the store's share stays free
        guard.reserve(MIB, "a request")
    process.at(REST + WORKING + 50 * MIB)  # the store (or anything) holds more than set aside
    process.busy = True
    with pytest.raises(Overloaded):
        guard.reserve(room() - 40 * MIB, "a request")
    guard.reserve(room() - 60 * MIB, "a request").release()


async def test_a_request_that_could_never_fit_is_refused_for_good_naming_the_sizes_and_the_fix() -> None:
    metrics, process = Metrics(), Process()
    guard = await process.settled(metrics)
    assert guard.admittable == room()
    with pytest.raises(RequestTooLarge) as too_large:
        guard.reserve(room() + MIB, "a request of 20971520 bytes")
    message = str(too_large.value)
    assert f"needs {(room() + MIB) // MIB} MiB" in message and f"the {room() // MIB} MiB" in message
    assert "raise memory_limit" in message and "send_batch_max_size" in message
    assert not too_large.value.retriable
    assert guard.reserved == 0
    labels = {"reason": "memory_too_large"}
    assert metrics.registry.get_sample_value("tracescore_requests_refused_total", labels) == 1


async def test_a_reservation_grows_as_its_body_turns_out_larger_and_keeps_what_it_held_when_refused() -> None:
    process = Process()
    guard = await process.settled()
    reservation = guard.reserve(MIB, "a request of unknown size")
    reservation.resize(10 * MIB)
    other = guard.reserve(room() - 20 * MIB, "another request")
    with pytest.raises(Overloaded):
        reservation.resize(30 * MIB)
    assert reservation.size == 10 * MIB and guard.reserved == room() - 10 * MIB
    with pytest.raises(RequestTooLarge):
        reservation.resize(room() + 1)
    other.release()
    reservation.resize(30 * MIB)
    reservation.resize(5 * MIB)  # shrinking always fits
    assert guard.reserved == 5 * MIB
    reservation.release()
    assert guard.reserved == 0


async def test_over_the_high_mark_everything_is_refused_until_under_the_low_mark() -> None:
    process = Process()
    guard = await process.settled()
    process.busy = True  # work in flight that will free memory
    process.at(int(LIMIT * HIGH) + MIB)
    with pytest.raises(Overloaded):
        guard.reserve(0, "a batch")
    assert guard.refusing
    await asyncio.sleep(0)  # relieving runs on the event loop
    assert process.relieved >= 1
    process.at(int(LIMIT * (HIGH + LOW) / 2))  # between the marks: still refusing
    with pytest.raises(Overloaded):
        guard.admit()
    process.at(int(LIMIT * LOW) - MIB)
    guard.admit()
    assert not guard.refusing


async def test_with_nothing_in_flight_refusing_cannot_help_and_the_request_is_taken_alone() -> None:
    process = Process()
    guard = await process.settled()
    process.at(int(LIMIT * HIGH) + MIB)  # freed heap the allocator keeps, nothing that will finish
    with guard.reserve(room() // 2, "a request"):
        assert not guard.refusing
        process.busy = True
        with pytest.raises(Overloaded):
            guard.reserve(MIB, "a second request")


def test_the_kernel_reports_this_process_and_the_limit_counts_what_it_allocated() -> None:
    resident = resident_bytes()
    parts = resident_parts()
    assert resident is not None and 10 * MIB < resident < 8 * 2**30
    assert abs(resident - parts["anonymous_bytes"] - parts.get("shared_bytes", 0)) < 16 * MIB
    assert parts["file_backed_bytes"] > 0  # the interpreter's own code: resident, not counted


def test_held_items_take_their_bound_from_the_memory_limit_unless_set() -> None:
    derived = ServiceConfig.model_validate({"memory_limit": "1GiB"})
    assert derived.assembly.max_held_bytes == 2**30 // 8  # the most; the service lowers it at start
    assert "max_held_bytes" not in derived.assembly.model_fields_set
    explicit = ServiceConfig.model_validate({"memory_limit": "1GiB", "assembly": {"max_held_bytes": 5000}})
    assert explicit.assembly.max_held_bytes == 5000
    assert "max_held_bytes" in explicit.assembly.model_fields_set
    with pytest.raises(ValueError, match="greater than or equal"):
        ServiceConfig.model_validate({"memory_limit": "10MB"})
