"""TraceAssembler on its own: readiness, rounds, bounds, de-duplication, log records and lifecycle.

Time is a ``ManualClock`` stepped by the tests; ``flush_ready`` is called directly as the tick
loop would. Two tests run the real tick loop on real time with a short idle. What the assembler
reads back from the store (late rounds, spills, recovery) is tested with the real store in
``test_assemble_from_store.py``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

import pytest

from tests.support.clock import ManualClock
from tests.support.fixture_files import make_span
from tracescore.ingest.assembly.assembler import TraceAssembler
from tracescore.ingest.assembly.release_order import ReleaseOrder
from tracescore.ingest.assembly.trace_state import TracedItems
from tracescore.ingest.observability.service_metrics import Metrics
from tracescore.ingest.store.ledger import Undecided
from tracescore.schemas import LogRecord, RoundReason, Span, SpanBatch, TraceRound
from tracescore.schemas.config import AssemblyConfig
from tracescore.schemas.spans import JsonValue

TRACE_A = "a" * 32
TRACE_B = "b" * 32
TRACE_C = "c" * 32
ROOT, CHILD, CHILD2, CHILD3, CHILD4 = (f"{i:016x}" for i in range(1, 6))


class RecordingConsumer:
    """A TraceConsumer that keeps what it receives; can fail on purpose."""

    def __init__(self, fail_times: int = 0, error: Exception | None = None) -> None:
        self.traces: list[list[Span]] = []
        self.rounds: list[TraceRound | None] = []
        self.fail_times = fail_times
        self.error = error or RuntimeError("transform exploded")
        self.calls = 0
        self._called = asyncio.Event()

    async def wait_for_calls(self, count: int) -> None:
        while self.calls < count:
            self._called.clear()
            await self._called.wait()

    async def consume_trace(
        self, spans: Sequence[Span], logs: Sequence[LogRecord] = (), round: TraceRound | None = None
    ) -> None:
        self.calls += 1
        self._called.set()
        if self.fail_times:
            self.fail_times -= 1
            raise self.error
        self.traces.append(list(spans))
        self.rounds.append(round)

    def span_ids(self) -> list[list[str]]:
        return [[s.span_id for s in trace] for trace in self.traces]


def span(trace: str, span_id: str, parent: str = "", end: int | None = None) -> Span:
    return make_span(span_id, parent, trace_id=trace, start=100, end=end)


def batch(*spans: Span, arrived: int = 0) -> SpanBatch:
    return SpanBatch(spans=list(spans), arrived_unix_nano=arrived)


def sample(metrics: Metrics, name: str, **labels: str) -> float:
    value = metrics.registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


def assembled(metrics: Metrics, reason: str) -> float:
    return sample(metrics, "tracescore_traces_assembled_total", reason=reason)


def dropped(metrics: Metrics, reason: str) -> float:
    return sample(metrics, "tracescore_assembly_spans_dropped_total", reason=reason)


def build(
    idle: float = 2.0, max_wait: float = 300.0, max_traces: int = 100, max_spans: int = 100
) -> tuple[TraceAssembler, RecordingConsumer, Metrics, ManualClock]:
    config = AssemblyConfig(
        idle_seconds=idle, max_wait_seconds=max_wait, max_traces=max_traces, max_spans_per_trace=max_spans
    )
    consumer, metrics, clock = RecordingConsumer(), Metrics(), ManualClock(1000.0)
    return TraceAssembler(config, next=consumer, metrics=metrics, clock=clock), consumer, metrics, clock


async def test_ready_after_idle_once_root_has_ended() -> None:
    assembler, consumer, metrics, clock = build(idle=2.0)
    await assembler.consume_spans(batch(span(TRACE_A, CHILD, ROOT), arrived=1_000))
    await assembler.consume_spans(batch(span(TRACE_A, ROOT), arrived=2_000))
    assert assembler.oldest_open() == 1_000  # the watermark stays below what is held
    assert sample(metrics, "tracescore_assembly_traces_pending") == 1
    assert sample(metrics, "tracescore_assembly_spans_pending") == 2

    clock.advance(1.9)
    await assembler.flush_ready()
    assert consumer.traces == []

    clock.advance(0.1)
    await assembler.flush_ready()
    assert consumer.span_ids() == [[CHILD, ROOT]]
    assert consumer.rounds == [
        TraceRound(trace_id=TRACE_A, since_unix_nano=1_000, through_unix_nano=2_000, reason="idle")
    ]
    assert assembled(metrics, "idle") == 1
    assert sample(metrics, "tracescore_assembly_traces_pending") == 0
    assert sample(metrics, "tracescore_assembly_spans_pending") == 0
    assert assembler.oldest_open() is None


async def test_a_trace_whose_scoring_could_not_read_the_store_is_released_again() -> None:
    from tracescore.schemas.errors import StoreError

    assembler, consumer, metrics, clock = build(idle=2.0)
    consumer.fail_times, consumer.error = 1, StoreError("query failed: Code: 209. timeout", retriable=True)
    await assembler.consume_spans(batch(span(TRACE_A, ROOT), arrived=1_000))
    clock.advance(2.0)
    with pytest.raises(StoreError):
        await assembler.flush_ready()
    assert assembler.oldest_open() == 1_000  # tracked again: the watermark stays below it
    await assembler.flush_ready()
    assert consumer.span_ids() == [[ROOT]] and consumer.calls == 2
    assert sample(metrics, "tracescore_transform_errors_total") == 0
    assert assembler.oldest_open() is None


async def test_each_new_span_restarts_the_idle_wait() -> None:
    assembler, consumer, _, clock = build(idle=2.0)
    await assembler.consume_spans(batch(span(TRACE_A, ROOT)))
    clock.advance(1.5)
    await assembler.consume_spans(batch(span(TRACE_A, CHILD, ROOT)))
    clock.advance(1.5)  # 3 s after the root, 1.5 s after the last span
    await assembler.flush_ready()
    assert consumer.traces == []
    clock.advance(0.5)
    await assembler.flush_ready()
    assert consumer.span_ids() == [[ROOT, CHILD]]


async def test_not_ready_while_the_root_is_open_or_missing() -> None:
    assembler, consumer, metrics, clock = build(idle=2.0)
    await assembler.consume_spans(batch(span(TRACE_A, CHILD, ROOT), span(TRACE_B, ROOT, end=0)))
    clock.advance(60)
    await assembler.flush_ready()
    assert consumer.traces == []

    await assembler.consume_spans(batch(span(TRACE_A, ROOT)))
    clock.advance(2.0)
    await assembler.flush_ready()
    assert consumer.span_ids() == [[CHILD, ROOT]]
    assert assembled(metrics, "idle") == 1


async def test_max_wait_flushes_a_trace_without_root() -> None:
    assembler, consumer, metrics, clock = build(idle=1.0, max_wait=10.0)
    await assembler.consume_spans(batch(span(TRACE_A, CHILD, ROOT)))
    clock.advance(9.9)
    await assembler.consume_spans(batch(span(TRACE_A, CHILD2, ROOT)))  # still busy: idle never reached
    await assembler.flush_ready()
    assert consumer.traces == []

    clock.advance(0.1)
    await assembler.flush_ready()
    assert consumer.span_ids() == [[CHILD, CHILD2]]
    assert assembled(metrics, "max_wait") == 1
    assert assembled(metrics, "idle") == 0


async def test_the_tick_loop_sleeps_until_the_next_trace_is_due() -> None:
    assembler, consumer, _, clock = build(idle=2.0, max_wait=3.0)
    assert assembler.next_release_in() == 0.5  # nothing tracked: the longest tick
    await assembler.consume_spans(batch(span(TRACE_A, ROOT)))
    clock.advance(1.75)
    assert assembler.next_release_in() == 0.25  # A is due at 2 s
    clock.advance(0.1875)
    assert assembler.next_release_in() == 0.0625
    await assembler.consume_spans(batch(span(TRACE_B, CHILD, ROOT)))  # no root: due at max_wait only
    clock.advance(0.0625)
    await assembler.flush_ready()
    assert consumer.span_ids() == [[ROOT]]

    clock.advance(2.5)  # B is quiet, without its root: it waits for max_wait, 0.4375 s from now
    await assembler.flush_ready()
    assert consumer.span_ids() == [[ROOT]]
    assert assembler.next_release_in() == 0.4375
    clock.advance(0.4375)
    await assembler.flush_ready()
    assert consumer.span_ids() == [[ROOT], [CHILD]]


async def test_a_trace_is_quiet_from_its_last_items_arrival_not_from_the_end_of_its_commit() -> None:
    consumer, clock, wall = RecordingConsumer(), ManualClock(1000.0), 1_800_000_000_000_000_000
    config = AssemblyConfig(idle_seconds=2.0, max_wait_seconds=300.0)
    assembler = TraceAssembler(config, consumer, Metrics(), clock=clock, wall_clock_ns=lambda: wall)
    await assembler.consume_spans(batch(span(TRACE_A, ROOT), arrived=wall - 500_000_000))  # 0.5 s commit
    await assembler.consume_spans(batch(span(TRACE_B, ROOT), arrived=wall - 5_000_000_000))  # stalled
    clock.advance(1.5)
    await assembler.flush_ready()
    assert consumer.span_ids() == [[ROOT]]  # A: 2 s after it arrived
    clock.advance(0.5)
    await assembler.flush_ready()
    assert len(consumer.traces) == 2  # B: a commit that stalled counts from when it was handed on


async def test_beyond_max_traces_the_oldest_is_forgotten_never_released_early() -> None:
    assembler, consumer, metrics, clock = build(max_traces=2)
    await assembler.consume_spans(batch(span(TRACE_A, CHILD, ROOT), arrived=10))
    clock.advance(1)
    await assembler.consume_spans(batch(span(TRACE_B, CHILD, ROOT), arrived=20))
    clock.advance(1)
    await assembler.consume_spans(batch(span(TRACE_A, CHILD2, ROOT), arrived=30))  # known: still two
    await assembler.consume_spans(batch(span(TRACE_C, CHILD, ROOT), arrived=40))

    # A (the oldest) is forgotten, not scored incomplete: the store has its spans, and the watermark
    # stays below them until a recovery scan brings it back.
    assert consumer.traces == []
    assert assembler.tracked == 2
    assert assembler.forgotten_floor() == 10
    assert assembler.oldest_open() == 10
    assert sample(metrics, "tracescore_assembly_traces_spilled_total", reason="forgotten") == 1
    assert sample(metrics, "tracescore_assembly_spans_pending") == 2
    assembler.recovered(scan_floor=10, forgotten_meanwhile=True)  # the scan raced with a forget
    assert assembler.forgotten_floor() == 10
    assembler.recovered(scan_floor=10, forgotten_meanwhile=False)
    assert assembler.forgotten_floor() is None
    assert assembler.oldest_open() == 20


async def test_spans_beyond_the_per_trace_cap_are_dropped_counted_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assembler, consumer, metrics, clock = build(max_spans=3)
    with caplog.at_level(logging.WARNING, logger="tracescore.ingest.assembly.assembler"):
        await assembler.consume_spans(
            batch(*(span(TRACE_A, s, ROOT) for s in (CHILD, CHILD2, CHILD3, CHILD4)), span(TRACE_A, ROOT))
        )
    assert dropped(metrics, "trace_too_large") == 2
    assert sample(metrics, "tracescore_assembly_spans_pending") == 3
    assert any(TRACE_A in r.getMessage() and "3 spans" in r.getMessage() for r in caplog.records)

    await assembler.flush_all()
    assert consumer.span_ids() == [[CHILD, CHILD2, CHILD3]]


async def test_duplicate_spans_are_held_once() -> None:
    assembler, consumer, metrics, clock = build()
    await assembler.consume_spans(batch(span(TRACE_A, ROOT), span(TRACE_A, CHILD, ROOT)))
    await assembler.consume_spans(batch(span(TRACE_A, CHILD, ROOT)))
    assert dropped(metrics, "duplicate") == 1
    assert sample(metrics, "tracescore_assembly_spans_pending") == 2
    clock.advance(2)
    await assembler.flush_ready()
    assert consumer.span_ids() == [[ROOT, CHILD]]


async def test_shutdown_flushes_pending_is_idempotent_and_safe_before_start() -> None:
    assembler, consumer, metrics, _ = build()
    await assembler.consume_spans(batch(span(TRACE_A, CHILD, ROOT), span(TRACE_B, ROOT)))
    await assembler.shutdown()  # never started
    assert sorted(t[0].trace_id for t in consumer.traces) == [TRACE_A, TRACE_B]
    assert assembled(metrics, "shutdown") == 2
    await assembler.shutdown()
    assert len(consumer.traces) == 2

    # Nothing ticks after shutdown, so spans go straight on instead of waiting forever.
    await assembler.consume_spans(batch(span(TRACE_C, ROOT)))
    assert [t[0].trace_id for t in consumer.traces][-1] == TRACE_C
    await assembler.start()  # a closed assembler stays closed
    await assembler.shutdown()


async def test_tick_loop_emits_ready_traces_and_survives_a_failing_consumer() -> None:
    config = AssemblyConfig(idle_seconds=0.05, max_wait_seconds=5.0)
    consumer, metrics = RecordingConsumer(fail_times=1), Metrics()
    assembler = TraceAssembler(config, next=consumer, metrics=metrics)
    assert assembler.tick_seconds == pytest.approx(0.0125)
    await assembler.start()
    await assembler.start()  # starting twice keeps one loop
    try:
        await assembler.consume_spans(batch(span(TRACE_A, ROOT)))
        async with asyncio.timeout(3):
            await consumer.wait_for_calls(1)
        assert consumer.traces == []
        assert sample(metrics, "tracescore_transform_errors_total") == 1
        await assembler.consume_spans(batch(span(TRACE_B, ROOT)))
        async with asyncio.timeout(3):
            await consumer.wait_for_calls(2)
        assert consumer.traces[0][0].trace_id == TRACE_B
        assert assembled(metrics, "idle") == 2
    finally:
        await assembler.shutdown()


async def test_shutdown_of_a_running_assembler_flushes_and_stops_the_loop() -> None:
    config = AssemblyConfig(idle_seconds=30.0, max_wait_seconds=60.0)
    consumer, metrics = RecordingConsumer(), Metrics()
    assembler = TraceAssembler(config, next=consumer, metrics=metrics)
    assert assembler.tick_seconds == 0.5
    await assembler.start()
    await assembler.consume_spans(batch(span(TRACE_A, ROOT)))
    async with asyncio.timeout(2):
        await assembler.shutdown()
    assert consumer.span_ids() == [[ROOT]]
    assert assembled(metrics, "shutdown") == 1


# --- log records (GenAI content as OTLP logs, correlated by trace and span id) ----------------------


class LogsRecordingConsumer:
    """A TraceConsumer that keeps each trace's spans and log records as they were handed on."""

    def __init__(self) -> None:
        self.traces: list[tuple[list[str], list[str]]] = []

    async def consume_trace(
        self, spans: Sequence[Span], logs: Sequence[LogRecord] = (), round: TraceRound | None = None
    ) -> None:
        self.traces.append(([s.span_id for s in spans], [r.event_name for r in logs]))


def log_record(trace: str, span_id: str, event: str, time: int) -> LogRecord:
    body: JsonValue = {"n": time}
    return LogRecord(trace_id=trace, span_id=span_id, event_name=event, time_unix_nano=time, body=body)


def build_with_logs(
    idle: float = 2.0, max_wait: float = 300.0, max_spans: int = 100
) -> tuple[TraceAssembler, LogsRecordingConsumer, Metrics, ManualClock]:
    config = AssemblyConfig(idle_seconds=idle, max_wait_seconds=max_wait, max_spans_per_trace=max_spans)
    consumer, metrics, clock = LogsRecordingConsumer(), Metrics(), ManualClock(1000.0)
    return TraceAssembler(config, next=consumer, metrics=metrics, clock=clock), consumer, metrics, clock


def logs_dropped(metrics: Metrics, reason: str) -> float:
    return sample(metrics, "tracescore_assembly_logs_dropped_total", reason=reason)


async def test_log_records_go_out_with_the_spans_of_their_trace_in_either_order() -> None:
    assembler, consumer, metrics, clock = build_with_logs(idle=2.0)
    # Trace A: logs first, spans later; trace B: spans and logs in one batch.
    await assembler.consume_spans(SpanBatch(logs=[log_record(TRACE_A, CHILD, "gen_ai.user.message", 1)]))
    await assembler.consume_spans(
        SpanBatch(
            spans=[span(TRACE_B, ROOT)],
            logs=[
                log_record(TRACE_B, ROOT, "gen_ai.choice", 5),
                log_record(TRACE_A, CHILD, "gen_ai.choice", 2),
            ],
        )
    )
    await assembler.consume_spans(batch(span(TRACE_A, ROOT), span(TRACE_A, CHILD, ROOT)))
    assert sample(metrics, "tracescore_assembly_logs_pending") == 3
    clock.advance(2)
    await assembler.flush_ready()

    assert sorted(consumer.traces) == [
        ([ROOT], ["gen_ai.choice"]),
        ([ROOT, CHILD], ["gen_ai.user.message", "gen_ai.choice"]),
    ]
    assert sample(metrics, "tracescore_assembly_logs_pending") == 0


async def test_records_without_a_trace_id_are_not_assembled() -> None:
    assembler, consumer, metrics, clock = build_with_logs()
    await assembler.consume_spans(SpanBatch(logs=[LogRecord(body="service started", time_unix_nano=1)]))
    assert sample(metrics, "tracescore_assembly_traces_pending") == 0
    await assembler.flush_all()
    assert consumer.traces == []


async def test_a_trace_of_log_records_only_waits_for_its_spans_until_max_wait() -> None:
    assembler, consumer, metrics, clock = build_with_logs(idle=1.0, max_wait=10.0)
    await assembler.consume_spans(SpanBatch(logs=[log_record(TRACE_A, CHILD, "gen_ai.user.message", 1)]))
    clock.advance(5)
    await assembler.flush_ready()
    assert consumer.traces == []  # quiet, but no root: the spans may still come

    clock.advance(5)
    await assembler.flush_ready()
    assert consumer.traces == [([], ["gen_ai.user.message"])]
    assert assembled(metrics, "max_wait") == 1


async def test_log_records_count_toward_the_per_trace_cap_and_resends_are_held_once() -> None:
    assembler, consumer, metrics, clock = build_with_logs(max_spans=3)
    first = log_record(TRACE_A, ROOT, "gen_ai.user.message", 1)
    await assembler.consume_spans(SpanBatch(spans=[span(TRACE_A, ROOT)], logs=[first]))
    await assembler.consume_spans(SpanBatch(logs=[first]))  # the same record sent again
    assert logs_dropped(metrics, "duplicate") == 1
    await assembler.consume_spans(
        SpanBatch(logs=[log_record(TRACE_A, ROOT, "gen_ai.choice", t) for t in (2, 3, 4)])
    )
    await assembler.consume_spans(batch(span(TRACE_A, CHILD, ROOT)))
    assert logs_dropped(metrics, "trace_too_large") == 2
    assert dropped(metrics, "trace_too_large") == 1
    assert sample(metrics, "tracescore_assembly_logs_pending") == 2

    await assembler.flush_all()
    assert consumer.traces == [([ROOT], ["gen_ai.user.message", "gen_ai.choice"])]


async def test_a_release_looks_only_at_the_adopted_traces_due_not_at_all_of_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assembler, consumer, _, clock = build(max_traces=20_000)
    wall = time.time_ns()
    # 10,000 traces found undecided whose root never ended: due only at max_wait, 300 s on.
    waiting = [Undecided(f"{i:032x}", wall, wall, root_ended=False, done_through=0) for i in range(10_000)]
    done = [
        Undecided(f"{i:032x}", wall, wall, root_ended=True, done_through=0) for i in range(10_000, 10_003)
    ]
    assert assembler.adopt([*waiting, *done]) == 10_003
    looked: list[str] = []
    ready_reason = ReleaseOrder.ready_reason

    def counting(order: ReleaseOrder, trace: TracedItems, now: float) -> RoundReason | None:
        looked.append(trace.trace_id)
        return ready_reason(order, trace, now)

    monkeypatch.setattr(ReleaseOrder, "ready_reason", counting)
    for _ in range(5):  # releases while they wait
        clock.advance(0.5)
        await assembler.flush_ready()
    assert len(consumer.rounds) == 3 and len(looked) == 3  # the three due, each looked at once
    clock.advance(300)
    await assembler.flush_ready()
    assert len(consumer.rounds) == 10_003
    assert {round.reason for round in consumer.rounds[3:] if round is not None} == {"max_wait"}
