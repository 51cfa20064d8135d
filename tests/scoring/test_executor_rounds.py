"""The executor and trace rounds: a round is marked done after all its decisions are written, and
only then stops holding the watermark back; a resumed round reuses what an earlier attempt wrote."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping, Sequence

import pytest

from tests.support.runs import agent_run
from tests.support.sinks import RecordingSink
from tracescore.schemas import Decision, ScoreRecord, TraceRound
from tracescore.schemas.assembly_rounds import RoundReason
from tracescore.schemas.config import ScorerRule, ScoringConfig
from tracescore.schemas.consumers import PriorOutcomes
from tracescore.scoring import Scorer, create_scorer
from tracescore.scoring.prebuilt.registry import ScorerFactory
from tracescore.scoring.runtime.executor import ScoringExecutor
from tracescore.scoring.runtime.scoring_metrics import ScoringMetrics

TRACE = "a" * 32
RUN = agent_run("ab", "ba", trace_id=TRACE, span_id="b" * 16)
RULES = [ScorerRule(scorer="textual-difference"), ScorerRule(scorer="content-similarity")]


def round_of(reason: RoundReason = "idle", *, resumed: bool = False, unchanged: bool = False) -> TraceRound:
    return TraceRound(
        trace_id=TRACE,
        since_unix_nano=100,
        through_unix_nano=200,
        reason=reason,
        resumed=resumed,
        unchanged=unchanged,
    )


async def running(
    sink: RecordingSink, registry: Mapping[str, ScorerFactory] | None = None
) -> ScoringExecutor:
    executor = ScoringExecutor(
        ScoringConfig(rules=RULES), sink, ScoringMetrics(), flush_interval=3600, registry=registry
    )
    await executor.start()
    return executor


async def test_a_round_is_marked_done_after_its_decisions_and_then_releases_the_watermark() -> None:
    sink = RecordingSink()
    executor = await running(sink)
    try:
        round = round_of()
        await executor.consume_runs([RUN], round)
        assert executor.oldest_open() == 100
        await executor.drain()
        assert sink.done == [round]
        assert [d.scorer_id for d in sink.decisions] == [
            "textual-difference",
            "content-similarity",
        ]
        assert executor.oldest_open() is None
    finally:
        await executor.shutdown()


async def test_a_round_whose_write_fails_stays_open_and_is_marked_on_the_retry() -> None:
    sink = RecordingSink(fail_first=1)
    executor = await running(sink)
    try:
        round = round_of()
        await executor.consume_runs([RUN], round)
        with contextlib.suppress(ConnectionError):
            await executor.drain()
        assert sink.done == [] and executor.oldest_open() == 100  # nothing written yet: still open
        await executor.drain()
        assert sink.done == [round] and executor.oldest_open() is None
        assert len(sink.records) == 2
    finally:
        await executor.shutdown()


async def test_a_round_without_runs_or_of_re_sent_copies_is_marked_done_without_scoring() -> None:
    sink = RecordingSink()
    executor = await running(sink)
    try:
        empty, copies = round_of(), round_of(unchanged=True)
        await executor.consume_runs([], empty)
        await executor.consume_runs([RUN], copies)
        await executor.drain()
        assert sink.done == [empty, copies]
        assert sink.decisions == [] and sink.records == []
    finally:
        await executor.shutdown()


async def test_a_resumed_round_reuses_what_was_written_before_a_crash() -> None:
    sink = RecordingSink()
    # Before the crash: textual difference was decided; content similarity's score row was written
    # but its decision row was not.
    sink.prior[TRACE] = PriorOutcomes(
        decided=frozenset({(RUN.span_id, "textual-difference")}),
        scored_undecided=frozenset({(RUN.span_id, "content-similarity")}),
    )
    judged: list[str] = []

    def counting(scorer_id: str) -> ScorerFactory:
        def factory() -> Scorer:
            def score(ctx: object) -> float:
                judged.append(scorer_id)
                return 0.5

            return create_scorer(id=scorer_id, description="d").generate_score(score)

        return factory

    registry = {"textual-difference": counting("textual-difference")}
    registry["content-similarity"] = counting("content-similarity")
    executor = await running(sink, registry=registry)
    try:
        round = round_of("recovered", resumed=True)
        await executor.consume_runs([RUN], round)
        await executor.drain()
    finally:
        await executor.shutdown()
    assert judged == []  # nothing judged (or paid for) twice
    [repaired] = sink.decisions
    assert (repaired.scorer_id, repaired.decision) == ("content-similarity", "scored")
    assert "written before a restart" in repaired.detail
    assert sink.done == [round]


async def test_a_resumed_round_read_with_its_release_does_not_ask_the_sink_again() -> None:
    sink = RecordingSink()
    # The sink would answer that nothing was written; the round says what its release read.
    read = PriorOutcomes(decided=frozenset({(RUN.span_id, "textual-difference")}))
    executor = await running(sink)
    try:
        round = round_of("recovered", resumed=True).model_copy(update={"prior": read})
        await executor.consume_runs([RUN], round)
        await executor.drain()
    finally:
        await executor.shutdown()
    assert sink.prior_asked == []
    assert [d.scorer_id for d in sink.decisions] == ["content-similarity"]  # the other one only


async def test_runs_released_at_max_wait_say_so_in_their_decisions() -> None:
    sink = RecordingSink()
    executor = await running(sink)
    try:
        await executor.consume_runs([RUN], round_of("max_wait"))
        await executor.drain()
    finally:
        await executor.shutdown()
    assert {d.decision for d in sink.decisions} == {"scored"}
    assert all("released at max_wait" in d.detail for d in sink.decisions)


async def test_new_work_waits_while_the_store_is_down_instead_of_dropping_rows() -> None:
    from tracescore.scoring.runtime import job_queue

    sink = RecordingSink(fail_first=10_000)
    bound = job_queue.MAX_BUFFERED_ROWS
    job_queue.MAX_BUFFERED_ROWS = 4
    executor = await running(sink)
    try:
        runs = [agent_run("ab", "ba", trace_id=f"{i:032x}", span_id=f"{i:016x}") for i in range(4)]
        await executor.consume_runs(runs[:3])  # decided into the buffer: 6 rows, over the bound
        await asyncio.wait_for(executor._jobs.join(), 5)
        blocked = asyncio.create_task(executor.consume_runs(runs[3:]))
        await asyncio.sleep(0.2)
        assert not blocked.done()  # new work waits for room; nothing is dropped
        sink.fail_first = 0
        await executor._buffer.flush()
        await asyncio.wait_for(blocked, 5)
        await executor.drain()
        assert len(sink.decisions) == 8
        assert (
            executor._metrics.registry.get_sample_value(
                "tracescore_scoring_rows_dropped_total", {"kind": "score"}
            )
            is None
        )
    finally:
        job_queue.MAX_BUFFERED_ROWS = bound
        await executor.shutdown()


async def test_a_shutdown_while_work_waits_for_a_store_that_refuses_ends_and_leaves_that_work_undecided(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Waiting for room that only a write can make, with a store that refuses every write (its disk
    under its floor), never ends: shutdown takes no more work instead, and the run that waited is
    neither scored nor marked done -- it stays undecided in the store for the next start."""
    from tracescore.schemas.errors import ScoringStopped, StoreFull
    from tracescore.scoring.runtime import job_queue

    monkeypatch.setattr(job_queue, "MAX_BUFFERED_ROWS", 4)
    sink = RecordingSink(fail_first=10_000, error=StoreFull("the store's disk is under its floor"))
    executor = ScoringExecutor(ScoringConfig(rules=RULES), sink, ScoringMetrics(), flush_interval=0.05)
    await executor.start()
    runs = [agent_run("ab", "ba", trace_id=f"{i:032x}", span_id=f"{i:016x}") for i in range(4)]
    rounds = [round_of().model_copy(update={"trace_id": run.trace_id}) for run in runs]
    for run, trace_round in zip(runs[:3], rounds, strict=False):
        await executor.consume_runs([run], trace_round)  # 6 rows buffered: over the bound
    await asyncio.wait_for(executor._jobs.join(), 5)
    blocked = asyncio.create_task(executor.consume_runs(runs[3:], rounds[3]))
    await asyncio.sleep(0.3)
    assert not blocked.done() and executor.write_error is not None  # waits for the store
    await asyncio.wait_for(executor.shutdown(), 10)
    with pytest.raises(ScoringStopped):
        await blocked
    assert sink.writes == [] and sink.done == []  # nothing written, no round marked done
    assert executor.oldest_open() == 100  # its round holds the watermark back


async def test_rows_refused_for_good_keep_their_round_open_so_the_next_start_scores_it_again() -> None:
    from tracescore.schemas.errors import StoreError

    refused = StoreError("insert into scores failed: Code: 53. Type mismatch", retriable=False)
    sink = RecordingSink(fail_first=1, error=refused)
    executor = await running(sink)
    other = TraceRound(trace_id="c" * 32, since_unix_nano=300, through_unix_nano=400, reason="idle")
    try:
        round = round_of()
        await executor.consume_runs([RUN], round)
        await executor.drain()  # refused for good: set aside, not retried
        assert sink.done == [] and sink.decisions == []
        await executor.consume_runs([agent_run("x", "y", trace_id="c" * 32, span_id="d" * 16)], other)
        await executor.drain()
        assert sink.done == [other]  # later rows are not blocked
        assert executor.oldest_open() == 100  # the watermark stays below the refused round
    finally:
        await executor.shutdown()
    assert executor.oldest_open() == 100  # still after shutdown: the final checkpoint keeps it


class _PriorUnreadable(RecordingSink):
    """A sink whose earlier outcomes cannot be read (the store fails the query)."""

    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.read_error = error

    async def prior_outcomes(self, trace_id: str, since_unix_nano: int) -> PriorOutcomes:
        raise self.read_error


async def test_a_resumed_round_whose_earlier_outcomes_cannot_be_read_is_never_marked_done() -> None:
    from tracescore.schemas.errors import StoreError

    for retriable, held_open in ((True, None), (False, 100)):
        sink = _PriorUnreadable(StoreError("query failed: Code: 209. timeout", retriable=retriable))
        executor = await running(sink)
        try:
            with pytest.raises(StoreError):
                await executor.consume_runs([RUN], round_of("recovered", resumed=True))
            await executor.drain()
            assert sink.done == [] and sink.decisions == []  # not decided without its decisions
            # Retriable: the assembler gets the error and hands the trace in again; else the round
            # holds the watermark, so that the next start scores the trace again.
            assert executor.oldest_open() == held_open
        finally:
            await executor.shutdown()


class _SlowSink(RecordingSink):
    """A sink whose score writes take a while on a worker thread, as the store's do: a write that has
    begun ends on its thread whatever happens to the coroutine waiting for it."""

    def __init__(self) -> None:
        super().__init__()
        self.writing = asyncio.Event()

    async def write_scores(self, records: Sequence[ScoreRecord], decisions: Sequence[Decision]) -> None:
        self.writing.set()

        def write() -> None:
            time.sleep(0.3)
            self.attempts += 1
            self.writes.append((list(records), list(decisions)))

        await asyncio.to_thread(write)


async def test_a_shutdown_during_a_write_writes_each_row_once_and_marks_the_round() -> None:
    sink = _SlowSink()
    executor = ScoringExecutor(ScoringConfig(rules=RULES), sink, ScoringMetrics(), flush_interval=0.01)
    await executor.start()
    round = round_of()
    await executor.consume_runs([RUN], round)
    await asyncio.wait_for(sink.writing.wait(), 5)  # the periodic flush is writing
    await executor.shutdown()  # cancels it mid-write
    assert sink.attempts == 1 and len(sink.decisions) == 2  # not written a second time
    assert sink.done == [round]
