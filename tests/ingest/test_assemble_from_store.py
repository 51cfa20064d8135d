"""The assembler with the store as its truth: late rounds, spills, re-sent copies, traces decided
before a restart and traces adopted by recovery are all reassembled from the span ledger (real chDB
store; the spans go through the real group-commit span sink, as in the service)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

import pytest

from tests.support.clock import ManualClock
from tests.support.fixture_files import make_span
from tests.support.store import count_queries
from tracescore.ingest.assembly.assembler import TraceAssembler
from tracescore.ingest.assembly.release_order import ADOPTED_PER_RELEASE
from tracescore.ingest.observability.service_metrics import Metrics
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.ledger import Ledger, PriorRounds, StoredTrace
from tracescore.ingest.store.score_sink import ClickHouseScoreSink
from tracescore.ingest.store.span_sink import SpanSink
from tracescore.schemas import Decision, LogRecord, Span, SpanBatch, TraceRound
from tracescore.schemas.assembly_rounds import UnitOutcome
from tracescore.schemas.config import AssemblyConfig
from tracescore.schemas.consumers import PriorOutcomes
from tracescore.schemas.errors import StoreError

TRACE_A, TRACE_B = "a" * 32, "b" * 32
ROOT, CHILD, CHILD2 = (f"{i:016x}" for i in range(1, 4))


def span(trace: str, span_id: str, parent: str = "") -> Span:
    return make_span(span_id, parent, trace_id=trace, start=100)


class Recorder:
    def __init__(self) -> None:
        self.released: list[tuple[list[str], list[str], TraceRound | None]] = []
        self.on_release: Callable[[str], Awaitable[None]] | None = None  # called with each trace id

    async def consume_trace(
        self, spans: Sequence[Span], logs: Sequence[LogRecord] = (), round: TraceRound | None = None
    ) -> None:
        self.released.append(([s.span_id for s in spans], [r.event_name for r in logs], round))
        if self.on_release is not None and round is not None:
            await self.on_release(round.trace_id)

    def span_ids(self) -> list[list[str]]:
        return [spans for spans, _, _ in self.released]

    @property
    def rounds(self) -> list[TraceRound]:
        return [round for _, _, round in self.released if round is not None]


@dataclass
class Rig:
    store: Store
    sink: SpanSink
    assembler: TraceAssembler
    recorder: Recorder
    clock: ManualClock
    metrics: Metrics

    async def send(self, *spans: Span, logs: Sequence[LogRecord] = ()) -> None:
        await self.sink.consume_spans(SpanBatch(spans=list(spans), logs=list(logs)))

    async def after(self, seconds: float) -> None:
        self.clock.advance(seconds)
        await self.assembler.flush_ready()


class FlakyLoader:
    """The real ledger, down on request (a store outage while traces are released)."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.down = False
        self.prior_asked: list[dict[str, int]] = []  # each bulk read of earlier outcomes

    async def load(self, trace_ids: Sequence[str]) -> dict[str, StoredTrace]:
        return await self.ledger.load(trace_ids)

    async def status(self, trace_ids: Sequence[str]) -> dict[str, PriorRounds]:
        if self.down:
            raise StoreError("cannot reach ClickHouse", retriable=True)
        return await self.ledger.status(trace_ids)

    async def prior_outcomes(self, since: Mapping[str, int]) -> dict[str, PriorOutcomes]:
        self.prior_asked.append(dict(since))
        return await self.ledger.prior_outcomes(since)


@pytest.fixture
async def rig(store: Store) -> AsyncIterator[Rig]:
    made = await make_rig(store)
    try:
        yield made
    finally:
        await made.sink.shutdown()


async def make_rig(
    store: Store, adopted_per_release: int = ADOPTED_PER_RELEASE, **config: int | float
) -> Rig:
    metrics, clock, recorder = Metrics(), ManualClock(1000.0), Recorder()
    settings: dict[str, int | float] = {"idle_seconds": 2.0, "max_wait_seconds": 300.0, **config}
    assembler = TraceAssembler(
        AssemblyConfig.model_validate(settings),
        recorder,
        metrics,
        clock=clock,
        loader=FlakyLoader(Ledger(store)),
        adopted_per_release=adopted_per_release,
    )
    sink = SpanSink(store, assembler, metrics)
    await sink.start()
    return Rig(store, sink, assembler, recorder, clock, metrics)


async def test_a_late_span_rebuilds_the_whole_trace_from_the_store(rig: Rig) -> None:
    await rig.send(span(TRACE_A, ROOT), span(TRACE_A, CHILD, ROOT))
    await rig.after(2)
    await ClickHouseScoreSink(rig.store).mark_done(rig.recorder.rounds)  # as the executor does
    first = rig.recorder.rounds[0]

    await rig.send(span(TRACE_A, CHILD2, ROOT), span(TRACE_A, CHILD, ROOT))  # a late span and a copy
    await rig.after(1.9)
    assert len(rig.recorder.released) == 1
    await rig.after(0.1)
    # The late round starts from everything stored, so the run is rebuilt whole (same root span).
    assert rig.recorder.span_ids() == [[ROOT, CHILD], [ROOT, CHILD, CHILD2]]
    late = rig.recorder.rounds[1]
    assert (late.reason, late.unchanged, late.resumed) == ("late", False, False)
    assert late.since_unix_nano > first.through_unix_nano and late.through_unix_nano == late.since_unix_nano


async def test_a_round_of_re_sent_copies_only_is_marked_done_without_scoring(rig: Rig) -> None:
    await rig.send(span(TRACE_A, ROOT), span(TRACE_A, CHILD, ROOT))
    await rig.after(2)
    await ClickHouseScoreSink(rig.store).mark_done(rig.recorder.rounds)
    await rig.send(span(TRACE_A, CHILD, ROOT), span(TRACE_A, ROOT))  # a replay (Kafka, a retrying client)
    await rig.after(2)
    copies = rig.recorder.rounds[1]
    assert copies.unchanged  # the executor marks it done and judges nothing again


async def test_a_trace_decided_before_a_restart_is_recognised_from_the_store(store: Store) -> None:
    before = await make_rig(store)
    await before.send(span(TRACE_A, ROOT), span(TRACE_A, CHILD, ROOT))
    await before.after(2)
    await ClickHouseScoreSink(store).mark_done(before.recorder.rounds)
    await before.sink.shutdown()

    after = await make_rig(store)  # a new process knows nothing of TRACE_A in memory
    await after.send(span(TRACE_A, ROOT), span(TRACE_A, CHILD, ROOT))  # redelivered after the restart
    await after.after(2)
    await after.sink.shutdown()
    [replayed] = after.recorder.rounds
    assert replayed.unchanged and after.recorder.span_ids() == [[ROOT, CHILD]]


async def test_a_round_cut_short_by_a_restart_is_released_resumed(store: Store) -> None:
    # The process wrote some decisions of the round, then died before its done mark.
    before = await make_rig(store)
    await before.send(span(TRACE_A, ROOT))
    await before.after(2)
    decision = Decision(trace_id=TRACE_A, span_id=ROOT, scorer_id="content-similarity", decision="scored")
    await ClickHouseScoreSink(store).write_scores([], [decision])
    await before.sink.shutdown()

    after = await make_rig(store)
    await after.send(span(TRACE_A, ROOT))  # redelivered after the restart
    await after.after(2)
    await after.sink.shutdown()
    [resumed] = after.recorder.rounds
    assert resumed.resumed and not resumed.unchanged  # the executor asks what was written, then goes on


async def test_spilled_traces_are_never_released_early_and_come_back_whole(store: Store) -> None:
    rig = await make_rig(store, max_held_bytes=1)  # any held span is over the bound
    await rig.send(span(TRACE_A, CHILD, ROOT))
    await rig.send(span(TRACE_B, ROOT))
    assert rig.assembler.tracked == 2
    assert rig.metrics.registry.get_sample_value("tracescore_assembly_held_bytes") == 0
    spilled = rig.metrics.registry.get_sample_value(
        "tracescore_assembly_traces_spilled_total", {"reason": "memory"}
    )
    assert spilled == 2
    await rig.after(2)
    assert rig.recorder.span_ids() == [[ROOT]]  # B is complete; A's root has not come
    await rig.send(span(TRACE_A, ROOT))
    await rig.after(2)
    assert rig.recorder.span_ids() == [[ROOT], [CHILD, ROOT]]  # read back from the store, whole
    await rig.sink.shutdown()


async def test_adopted_traces_are_released_from_the_store_as_recovered(rig: Rig) -> None:
    # Stored by an earlier process that died before scoring them: only the ledger knows them.
    orphan = await make_rig(rig.store)
    await orphan.send(span(TRACE_B, ROOT), span(TRACE_B, CHILD, ROOT))
    await orphan.sink.shutdown()
    undecided = await Ledger(rig.store).undecided(0, 100)
    assert [u.trace_id for u in undecided] == [TRACE_B]

    assert rig.assembler.adopt(undecided) == 1
    assert rig.assembler.adopt(undecided) == 0  # adopting twice tracks it once
    await rig.after(2)
    assert rig.recorder.span_ids() == [[ROOT, CHILD]]
    [round] = rig.recorder.rounds
    assert (round.reason, round.resumed) == ("recovered", True)  # the executor asks what was written
    assert round.since_unix_nano == undecided[0].first_arrived


async def test_a_store_outage_at_release_keeps_the_traces_for_the_next_tick(rig: Rig) -> None:
    await rig.send(span(TRACE_A, ROOT))
    loader = rig.assembler._loader
    assert isinstance(loader, FlakyLoader)
    loader.down = True
    with pytest.raises(StoreError):
        await rig.after(2)
    assert rig.recorder.released == [] and rig.assembler.tracked == 1
    assert rig.assembler.oldest_open() is not None
    loader.down = False
    await rig.after(0.1)
    assert rig.recorder.span_ids() == [[ROOT]]


async def test_a_late_log_record_rebuilds_the_trace_with_its_earlier_spans_and_logs(rig: Rig) -> None:
    user = LogRecord(trace_id=TRACE_A, span_id=CHILD, event_name="gen_ai.user.message", time_unix_nano=1)
    await rig.send(span(TRACE_A, ROOT), span(TRACE_A, CHILD, ROOT), logs=[user])
    await rig.after(2)
    await ClickHouseScoreSink(rig.store).mark_done(rig.recorder.rounds)
    choice = LogRecord(trace_id=TRACE_A, span_id=CHILD, event_name="gen_ai.choice", time_unix_nano=9)
    await rig.send(logs=[choice])
    await rig.after(2)
    assert [(spans, logs) for spans, logs, _ in rig.recorder.released] == [
        ([ROOT, CHILD], ["gen_ai.user.message"]),
        ([ROOT, CHILD], ["gen_ai.user.message", "gen_ai.choice"]),
    ]


async def test_a_recovered_release_asks_the_store_in_bulk_and_prior_outcomes_only_where_rows_are(
    rig: Rig,
) -> None:
    traces = [f"{i:032x}" for i in range(1, 6)]
    orphan = await make_rig(rig.store)
    await orphan.send(*(span(trace, ROOT) for trace in traces))
    await orphan.sink.shutdown()
    # The process wrote one decision of the third trace, then died before marking it done.
    written = Decision(trace_id=traces[2], span_id=ROOT, scorer_id="content-similarity", decision="scored")
    await ClickHouseScoreSink(rig.store).write_scores([], [written])
    assert rig.assembler.adopt(await Ledger(rig.store).undecided(0, 100)) == len(traces)

    queries = count_queries(rig.store)
    await rig.after(2)
    assert queries == [3]  # status, items, earlier outcomes: for the whole release, not per trace
    loader = rig.assembler._loader
    assert isinstance(loader, FlakyLoader)
    [asked] = loader.prior_asked
    assert list(asked) == [traces[2]]  # only the trace the store has rows of
    prior = {round.trace_id: round.prior for round in rig.recorder.rounds}
    pair = (ROOT, "content-similarity")
    # What it came to, for a cascade's gated rules (a decision without its score row: no score).
    assert prior[traces[2]] == PriorOutcomes(
        decided=frozenset({pair}), outcomes={pair: UnitOutcome("scored")}
    )
    assert all(prior[trace] == PriorOutcomes() for trace in traces if trace != traces[2])


async def test_new_traces_go_first_and_a_recovery_is_released_a_share_at_a_time(store: Store) -> None:
    rig = await make_rig(store, adopted_per_release=2)
    adopted = [f"{i:032x}" for i in range(1, 6)]
    orphan = await make_rig(rig.store)
    await orphan.send(*(span(trace, ROOT) for trace in adopted))
    await orphan.sink.shutdown()
    rig.assembler.adopt(await Ledger(rig.store).undecided(0, 100))
    await rig.send(span(TRACE_A, ROOT))  # new traffic, due with them

    async def new_trace_while_recovering(trace: str) -> None:
        if trace == adopted[0]:  # in the middle of the recovery, a new trace goes quiet
            await rig.send(span(TRACE_B, ROOT))
            rig.clock.advance(2)

    rig.recorder.on_release = new_trace_while_recovering
    try:
        await rig.after(2)
    finally:
        await rig.sink.shutdown()
    order = [round.trace_id for round in rig.recorder.rounds]
    # Each release: the new traces due, then two adopted ones (in the order they fall due).
    assert (order[0], order[3]) == (TRACE_A, TRACE_B)
    assert sorted(order[1:3] + order[4:]) == adopted


async def test_an_adopted_trace_that_gets_new_items_waits_for_its_new_idle(rig: Rig) -> None:
    orphan = await make_rig(rig.store)
    await orphan.send(span(TRACE_A, ROOT))
    await orphan.sink.shutdown()
    rig.assembler.adopt(await Ledger(rig.store).undecided(0, 100))
    await rig.after(1.5)
    await rig.send(span(TRACE_A, CHILD, ROOT))  # it goes on: quiet again only 2 s from now
    await rig.after(0.5)
    assert rig.recorder.released == []
    await rig.after(1.5)
    assert rig.recorder.span_ids() == [[ROOT, CHILD]]


async def test_a_forgotten_trace_whose_spans_keep_coming_is_released_whole(store: Store) -> None:
    # More traces open than max_traces (long-running agents): the oldest is forgotten, then its next
    # span comes. Its round must start from the spans only the store still holds, not from memory.
    rig = await make_rig(store, max_traces=1)
    await rig.send(span(TRACE_A, CHILD, ROOT))
    await rig.send(span(TRACE_B, CHILD, ROOT))  # A is forgotten
    assert rig.assembler.forgotten == 1
    await rig.send(span(TRACE_A, ROOT))  # A's root ends; B is forgotten in turn
    await rig.after(2)
    await rig.sink.shutdown()
    assert rig.recorder.span_ids() == [[CHILD, ROOT]]
