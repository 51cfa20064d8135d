"""The tracked traces: the oldest open arrival (what the watermark waits for) is found without a scan
over them, and stays exact whatever moves a trace's ``since`` (a late commit with an earlier arrival,
what the store holds, a failed round taken over, traces leaving); the bounds held to are the config's
as the service sizes them at start."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.ingest.test_assemble import (
    TRACE_A,
    TRACE_B,
    TRACE_C,
    RecordingConsumer,
    batch,
    build,
    sample,
    span,
)
from tests.support.clock import ManualClock
from tracescore.ingest.assembly.assembler import TraceAssembler
from tracescore.ingest.assembly.trace_state import TracedItems
from tracescore.ingest.assembly.tracked_traces import TrackedTraces
from tracescore.ingest.observability.service_metrics import Metrics
from tracescore.ingest.store.ledger import Undecided
from tracescore.schemas import SpanBatch
from tracescore.schemas.config import AssemblyConfig

TRACE_IDS = [f"{i:032x}" for i in range(6)]
ARRIVALS = st.integers(min_value=1, max_value=1_000)
OPERATIONS = st.lists(
    st.tuples(
        st.sampled_from(["track", "arrive", "merge", "take_over", "untrack"]),
        st.sampled_from(TRACE_IDS),
        ARRIVALS,
    ),
    max_size=60,
)


def scanned(tracked: TrackedTraces) -> int | None:
    """The oldest since, found the slow way: a look at every tracked trace."""
    return min((trace.since for trace in tracked if trace.since), default=None)


@settings(max_examples=300, deadline=None)
@given(OPERATIONS)
def test_the_oldest_since_is_the_one_a_scan_of_every_trace_finds(
    operations: list[tuple[str, str, int]],
) -> None:
    tracked = TrackedTraces(AssemblyConfig(max_traces=1_000), Metrics())
    for operation, trace_id, arrived in operations:
        trace = tracked.get(trace_id)
        if operation == "track" and trace is None:
            tracked.track(TracedItems(trace_id, 0.0, 0.0, arrived))
        elif trace is None:
            continue
        elif operation == "arrive":
            tracked.arrive(trace, arrived, 0.0, 10, ends_root=False)
        elif operation == "merge":
            found = Undecided(trace_id, arrived, arrived + 5, root_ended=False, done_through=0)
            tracked.merge_stored(trace, found)
        elif operation == "take_over":
            tracked.take_over(trace, TracedItems(trace_id, 0.0, 0.0, arrived))
        elif operation == "untrack":
            tracked.untrack(trace)
        assert tracked.oldest_since() == scanned(tracked)


def test_many_traces_coming_and_going_past_a_long_running_one_leave_few_stale_entries() -> None:
    tracked = TrackedTraces(AssemblyConfig(max_traces=100_000), Metrics())
    tracked.track(TracedItems("held", 0.0, 0.0, 1))  # a long-running agent: the oldest, never leaving
    for n in range(20_000):
        trace = TracedItems(f"{n:032x}", 0.0, 0.0, 10 + n)
        tracked.track(trace)
        tracked.untrack(trace)
        assert tracked.oldest_since() == 1
    assert len(tracked._by_since) <= 2 * len(tracked) + 1_000


async def test_a_commit_arriving_late_with_an_earlier_stamp_holds_the_watermark_below_it() -> None:
    assembler, _, _, _ = build()
    await assembler.consume_spans(batch(span(TRACE_A, "1" * 16, "f" * 16), arrived=5_000))
    await assembler.consume_spans(batch(span(TRACE_B, "2" * 16, "f" * 16), arrived=4_000))
    assert assembler.oldest_open() == 4_000
    await assembler.consume_spans(batch(span(TRACE_A, "3" * 16, "f" * 16), arrived=3_000))
    assert assembler.oldest_open() == 3_000
    await assembler.flush_all()
    assert assembler.oldest_open() is None


async def test_the_bounds_the_service_lowers_at_start_are_the_ones_held_to() -> None:
    # The service builds the assembler, then sizes max_held_bytes and max_traces from the memory it
    # measures at start (ingest.service): the assembler holds to the lowered bounds from then on.
    config = AssemblyConfig(max_traces=100, max_held_bytes=10_000)
    metrics = Metrics()
    assembler = TraceAssembler(config, next=RecordingConsumer(), metrics=metrics, clock=ManualClock(1000.0))
    config.max_held_bytes, config.max_traces = 150, 2
    for n, trace_id in enumerate((TRACE_A, TRACE_B, TRACE_C)):
        child = span(trace_id, f"{n + 1:016x}", "f" * 16)
        await assembler.consume_spans(SpanBatch(spans=[child], arrived_unix_nano=1_000 + n, item_bytes=[100]))
        assert assembler.held_bytes <= 150
    assert assembler.tracked == 2 and assembler.forgotten == 1
    assert sample(metrics, "tracescore_assembly_traces_spilled_total", reason="memory") == 2
