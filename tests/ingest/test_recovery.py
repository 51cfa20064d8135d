"""Recovery over the real store: undecided traces are adopted page by page, the watermark stays below
those not adopted yet, a trace new here that the store holds older items of is read back whole, and
the progress ``/healthz`` shows counts what was found, released and left.

The spans go through the real group-commit span sink into chDB; the assembler runs on a
``ManualClock``, released traces are recorded instead of scored.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

import pytest

from tests.support.clock import ManualClock
from tests.support.fixture_files import make_span
from tracescore.ingest.assembly.assembler import TraceAssembler
from tracescore.ingest.observability.service_metrics import Metrics
from tracescore.ingest.replay.recovery import Recovery
from tracescore.ingest.replication.membership import Membership
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.ledger import Ledger
from tracescore.ingest.store.replica_table import ReplicaTable
from tracescore.ingest.store.span_sink import SpanSink
from tracescore.schemas import LogRecord, Span, SpanBatch, TraceRound
from tracescore.schemas.config import AssemblyConfig, ReplicaConfig

ROOT, CHILD = "0" * 15 + "1", "0" * 15 + "2"
STORED = [f"{i:032x}" for i in range(1, 8)]  # stored by a process that died: 7 undecided traces


class Released:
    def __init__(self) -> None:
        self.rounds: list[TraceRound] = []
        self.spans: dict[str, list[str]] = {}

    async def consume_trace(
        self, spans: Sequence[Span], logs: Sequence[LogRecord] = (), round: TraceRound | None = None
    ) -> None:
        assert round is not None
        self.rounds.append(round)
        self.spans[round.trace_id] = sorted(span.span_id for span in spans)


@dataclass
class Rig:
    store: Store
    sink: SpanSink
    assembler: TraceAssembler
    recovery: Recovery
    released: Released
    clock: ManualClock

    async def send(self, *spans: Span) -> None:
        await self.sink.consume_spans(SpanBatch(spans=list(spans)))

    async def after(self, seconds: float) -> None:
        self.clock.advance(seconds)
        await self.assembler.flush_ready()


def trace_spans(trace_id: str) -> list[Span]:
    return [
        make_span(ROOT, "", trace_id=trace_id, start=100),
        make_span(CHILD, ROOT, trace_id=trace_id, start=100),
    ]


async def stored_before_a_crash(store: Store, spans: list[Span]) -> None:
    """Store spans as a process that died before it scored them: only the store knows them."""
    died = SpanSink(store, TraceAssembler(AssemblyConfig(), Released(), Metrics()), Metrics())
    await died.start()
    await died.consume_spans(SpanBatch(spans=spans))
    await died.shutdown()


@pytest.fixture
async def rig(store: Store) -> AsyncIterator[Rig]:
    # One commit: the traces share one arrival time, so pages are told apart by trace id.
    await stored_before_a_crash(store, [span for trace_id in STORED for span in trace_spans(trace_id)])

    metrics, clock, released = Metrics(), ManualClock(1000.0), Released()
    config = AssemblyConfig(idle_seconds=2.0, max_wait_seconds=300.0)
    assembler = TraceAssembler(config, released, metrics, clock=clock, loader=Ledger(store))
    membership = Membership(ReplicaTable(store), ReplicaConfig(id="solo"))
    # Recovery's wall clock an hour ahead: its hand-off cursor does not hold the watermark below the
    # stored items, so what holds it is what the test looks at.
    ahead = time.time_ns() + 3_600 * 1_000_000_000
    recovery = Recovery(
        Ledger(store),
        assembler,
        [assembler.oldest_open],
        metrics,
        membership,
        ReplicaTable(store),
        page_traces=3,
        clock_ns=lambda: ahead,
    )
    sink = SpanSink(store, assembler, metrics)
    await sink.start()
    try:
        yield Rig(store, sink, assembler, recovery, released, clock)
    finally:
        await sink.shutdown()


async def test_undecided_traces_are_adopted_page_by_page_each_once(rig: Rig) -> None:
    assert rig.recovery.progress() == {
        "state": "idle", "found": 0, "done": 0, "remaining": 0, "more_in_store": False,
        "traces_per_second": 0.0, "seconds": 0.0, "started_at": None,
    }  # fmt: skip
    assert await rig.recovery.scan(0) == 3
    assert rig.recovery.more_to_scan
    progress = rig.recovery.progress()
    assert (progress["state"], progress["found"], progress["done"], progress["remaining"]) == (
        "recovering", 3, 0, 3,
    )  # fmt: skip
    assert progress["more_in_store"] is True

    pages = [3]
    for _ in range(5):
        await rig.after(2)  # the adopted traces are released...
        pages.append(await rig.recovery.scan_more())  # ...and the next page is read
    assert pages == [3, 3, 1, 0, 0, 0]
    assert sorted(r.trace_id for r in rig.released.rounds) == STORED  # every one, once
    assert all(r.reason == "recovered" and r.resumed for r in rig.released.rounds)
    assert all(spans == [ROOT, CHILD] for spans in rig.released.spans.values())

    progress = rig.recovery.progress()
    assert (progress["state"], progress["found"], progress["done"], progress["remaining"]) == (
        "done", 7, 7, 0,
    )  # fmt: skip
    assert progress["more_in_store"] is False


async def test_the_watermark_stays_below_the_traces_not_adopted_yet(rig: Rig) -> None:
    await rig.recovery.scan(0)
    await rig.after(2)  # the first page is released: the assembler holds nothing open
    assert rig.assembler.oldest_open() is None
    held_back = rig.recovery.watermark()
    assert held_back == rig.released.rounds[0].since_unix_nano  # the stored traces' one arrival
    for _ in range(3):
        await rig.recovery.scan_more()
        await rig.after(2)
    assert not rig.recovery.more_to_scan and rig.recovery.watermark() > held_back


async def test_a_new_trace_with_older_items_in_pages_not_read_yet_is_read_back_whole(rig: Rig) -> None:
    late = "f" * 32  # its child was stored before the crash, after the 7 others
    await stored_before_a_crash(rig.store, [make_span(CHILD, ROOT, trace_id=late, start=100)])
    await rig.recovery.scan(0)
    assert rig.recovery.more_to_scan

    await rig.send(make_span(ROOT, "", trace_id=late, start=100))  # its root comes now
    await rig.after(2)
    assert rig.released.spans[late] == [ROOT, CHILD]  # not the root alone


async def test_with_more_traces_open_than_fit_a_small_page_is_read_once_a_checkpoint(store: Store) -> None:
    # Long-running agents keep the assembler near max_traces: releases free a place or two at a time.
    # A page that small still scans the store, so it is read at most every checkpoint_seconds.
    await stored_before_a_crash(store, [span for trace_id in STORED for span in trace_spans(trace_id)])
    metrics, clock, released = Metrics(), ManualClock(1000.0), Released()
    config = AssemblyConfig(idle_seconds=2.0, max_wait_seconds=300.0, max_traces=8)
    assembler = TraceAssembler(config, released, metrics, clock=clock, loader=Ledger(store))
    recovery = Recovery(
        Ledger(store),
        assembler,
        [assembler.oldest_open],
        metrics,
        Membership(ReplicaTable(store), ReplicaConfig(id="solo")),
        ReplicaTable(store),
        page_traces=4,
        checkpoint_seconds=5.0,
        clock=clock,
    )
    open_agents = [make_span(CHILD, ROOT, trace_id=f"{i:032x}", start=100) for i in range(100, 107)]
    await assembler.consume_spans(SpanBatch(spans=open_agents))  # 7 of 8 places taken, for long
    assert await recovery.scan(0) == 1  # one place: read all the same, the first time
    clock.advance(2)
    await assembler.flush_ready()  # the adopted trace is released: one place again
    assert len(released.rounds) == 1
    assert await recovery.scan_more() == 0  # not before checkpoint_seconds
    clock.advance(5)
    assert await recovery.scan_more() == 1
