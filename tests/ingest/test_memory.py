"""The memory guard: refuse over the high mark while work is in flight, let go of held items, take
requests again under the low mark (the resident size is fed in; the flood test reads the kernel's)."""

from __future__ import annotations

import pytest

from ingest.memory import HIGH, LOW, MemoryGuard, resident_bytes
from ingest.metrics import Metrics
from schemas.config import ServiceConfig
from schemas.errors import Overloaded

LIMIT = 1000 * 2**20


class Process:
    def __init__(self) -> None:
        self.resident = 100 * 2**20
        self.busy = True
        self.relieved = 0
        self.now = 0.0

    def guard(self, metrics: Metrics) -> MemoryGuard:
        def relieve() -> None:
            self.relieved += 1

        return MemoryGuard(
            LIMIT,
            metrics,
            busy=lambda: self.busy,
            relieve=relieve,
            read=lambda: self.resident,
            clock=lambda: self.now,
        )

    def at(self, share: float, seconds: float = 1.0) -> None:
        self.resident = int(LIMIT * share)
        self.now += seconds


def test_over_the_high_mark_requests_are_refused_until_under_the_low_mark() -> None:
    metrics, process = Metrics(), Process()
    guard = process.guard(metrics)
    guard.admit()
    process.at(HIGH + 0.01)
    with pytest.raises(Overloaded, match="memory_limit of 1000 MiB") as refused:
        guard.admit()
    assert refused.value.retry_after_s > 0 and process.relieved == 1
    process.at((HIGH + LOW) / 2)  # between the marks: still refusing
    with pytest.raises(Overloaded):
        guard.admit()
    process.at(LOW - 0.01)
    guard.admit()
    assert metrics.registry.get_sample_value("tracescore_requests_refused_total", {"reason": "memory"}) == 2
    assert metrics.registry.get_sample_value("tracescore_memory_resident_bytes") == process.resident


def test_with_nothing_in_flight_refusing_cannot_help_and_requests_are_taken() -> None:
    process = Process()
    guard = process.guard(Metrics())
    process.at(HIGH + 0.05)
    with pytest.raises(Overloaded):
        guard.admit()
    process.busy = False  # the work finished but the heap stayed large
    process.at(HIGH + 0.05)
    guard.admit()
    assert not guard.refusing


def test_held_items_are_let_go_at_most_once_a_second() -> None:
    process = Process()
    guard = process.guard(Metrics())
    process.at(0.95)
    for _ in range(10):
        process.now += 0.06  # past the sampling interval, within the same second
        with pytest.raises(Overloaded):
            guard.admit()
    assert process.relieved == 1


def test_the_kernel_reports_this_process() -> None:
    resident = resident_bytes()
    assert resident is not None and 10 * 2**20 < resident < 8 * 2**30


def test_held_items_take_their_bound_from_the_memory_limit_unless_set() -> None:
    assert ServiceConfig(memory_limit="1GiB").assembly.max_held_bytes == 2**30 // 8  # type: ignore[arg-type]
    explicit = ServiceConfig.model_validate({"memory_limit": "1GiB", "assembly": {"max_held_bytes": 5000}})
    assert explicit.assembly.max_held_bytes == 5000
    with pytest.raises(ValueError, match="greater than or equal"):
        ServiceConfig.model_validate({"memory_limit": "10MB"})
