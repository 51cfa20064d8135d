"""Trace assembly: group the stored spans and log records by trace until the trace is complete, then
hand it on as a round -- with the store as the truth and memory as a cache.

Each release is a round (``schemas.TraceRound``) covering the items that arrived up to its
``through``; the executor marks the round done in the store once its decisions are written. The
assembler groups and releases; the rest is in its own module: what it knows of each trace
(``trace_state``), the tracked traces and the memory their items take, spilled or forgotten beyond
the bounds (``tracked_traces``), when traces come due and which go out together (``release_order``),
what was released (``released_traces``), and how a released trace becomes its round, with what the
store holds of it (``trace_rounds``).

A trace seen before -- released here, found decided in the store (a restart, a Kafka replay, another
replica), or adopted by recovery -- is reassembled from the ledger, so its round holds every item
however they arrived; a round that brings nothing but re-sent copies is marked done without being
scored again. Log records are held with the spans of their trace; records without a trace id are only
stored. Every item dropped is counted; all work per item is O(1) amortised.

The tick loop sleeps until the next trace is due (at most ``tick_seconds``), releases starting at least
``MIN_RELEASE_GAP_SECONDS`` apart: each release asks the store about all its traces at once
(``trace_rounds.rounds_of``), so the traces due close together go together, and a release that took
longer is followed at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Callable, Sequence

from tracescore.ingest.assembly.release_order import ADOPTED_PER_RELEASE, ReleaseOrder
from tracescore.ingest.assembly.released_traces import ReleasedTraces
from tracescore.ingest.assembly.trace_rounds import TraceLoader, rounds_of
from tracescore.ingest.assembly.trace_state import TracedItems, item_key
from tracescore.ingest.assembly.tracked_traces import TrackedTraces
from tracescore.ingest.observability.service_metrics import Metrics
from tracescore.ingest.store.ledger import Undecided
from tracescore.schemas import LogRecord, RoundReason, Span, SpanBatch, TraceRound
from tracescore.schemas.config import AssemblyConfig
from tracescore.schemas.consumers import TraceConsumer
from tracescore.schemas.errors import ScoringStopped, is_retriable

log = logging.getLogger(__name__)

Clock = Callable[[], float]
"""Seconds from an arbitrary origin, never going back (``time.monotonic``)."""

MAX_TICK_SECONDS = 0.5
MIN_RELEASE_GAP_SECONDS = 0.1
MAX_COMMIT_SECONDS = 1.0  # a batch older than this (a stalled store) counts as arriving when handed on
YIELD_EVERY = 2_000  # items (or traces) handled between two yields to the event loop
# Ids of released traces remembered, to know a later item makes a late round: as many as traces are
# tracked (a late item of a trace forgotten here is found in the store when its round is released).
RELEASED_IDS = 100_000


class TraceAssembler:
    """Groups spans and log records by trace and forwards each ready round to ``next.consume_trace``."""

    def __init__(
        self,
        config: AssemblyConfig,
        next: TraceConsumer,
        metrics: Metrics,
        clock: Clock = time.monotonic,
        loader: TraceLoader | None = None,
        wall_clock_ns: Callable[[], int] = time.time_ns,
        adopted_per_release: int = ADOPTED_PER_RELEASE,
    ) -> None:
        self._config = config
        self._next = next
        self._metrics = metrics
        self._clock = clock
        self._wall_ns = wall_clock_ns
        self._loader = loader
        self._tracked = TrackedTraces(config, metrics)
        self._order = ReleaseOrder(config, self._tracked, adopted_per_release)
        self._released = ReleasedTraces(min(RELEASED_IDS, config.max_traces))
        self._resumed_released = 0  # traces adopted by recovery and released so far
        self._read_back_new = False  # recovery has undecided traces left to adopt (see read_back_new)
        self._tick_task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._closed = False

    @property
    def tick_seconds(self) -> float:
        """The longest the tick loop sleeps between two releases."""
        return min(self._config.idle_seconds / 4, MAX_TICK_SECONDS)

    def next_release_in(self) -> float:
        """Seconds until the next trace is due, at most ``tick_seconds``."""
        return max(0.0, min(self._order.next_due() - self._clock(), self.tick_seconds))

    @property
    def tracked(self) -> int:
        return len(self._tracked)

    @property
    def held_bytes(self) -> int:
        return self._tracked.held_bytes

    @property
    def resumed(self) -> int:
        """Traces adopted by recovery and not yet released (tracked, or in a release under way): what
        recovery has left to do."""
        return self._tracked.resumed + self._released.resumed_under_way()

    @property
    def resumed_released(self) -> int:
        """Traces adopted by recovery and released so far (handed on to scoring)."""
        return self._resumed_released

    def read_back_new(self, on: bool) -> None:
        """While recovery still has undecided traces to adopt from the store (more than fit here at
        once), a trace new here may have older items only the store holds: its round is then read
        from the store, whole."""
        self._read_back_new = on

    @property
    def max_traces(self) -> int:
        return self._config.max_traces

    @property
    def forgotten(self) -> int:
        """How many traces were forgotten so far (a recovery scan compares it before and after)."""
        return self._tracked.forgotten_count

    def oldest_open(self) -> int | None:
        """The oldest arrival (ns) the assembler has not handed on: the watermark stays below it."""
        candidates = (
            self._tracked.oldest_since(),
            self._released.oldest_under_way(),
            self._tracked.forgotten_floor,
        )
        return min((since for since in candidates if since is not None), default=None)

    def forgotten_floor(self) -> int | None:
        """Where the recovery scan must look for forgotten traces (None: nothing forgotten)."""
        return self._tracked.forgotten_floor

    async def start(self) -> None:
        if self._tick_task is not None or self._closed:
            return
        self._tick_task = asyncio.create_task(self._tick_loop(), name="trace-assembler-tick")

    async def shutdown(self) -> None:
        """Stop the tick loop and release every tracked trace. Idempotent; safe before start."""
        if self._closed:
            return
        self._closed = True
        self._stopping.set()
        if self._tick_task is not None:
            # The loop is stopped by the event, not cancelled, so a trace being emitted is not lost.
            await self._tick_task
            self._tick_task = None
        await self.flush_all("shutdown")

    async def consume_spans(self, batch: SpanBatch) -> None:
        now, wall = self._clock(), self._wall_ns()
        arrived = batch.arrived_unix_nano or wall
        # A trace is quiet from its last item's arrival (its commit began), not from the end of the
        # commit that stored it: the commit's time is not added to every trace's wait.
        committing = (wall - arrived) / 1e9
        seen = now - committing if 0.0 <= committing <= MAX_COMMIT_SECONDS else now
        sizes = batch.item_bytes
        items: list[Span | LogRecord] = [*batch.spans, *batch.logs]
        for index, item in enumerate(items):
            if item.trace_id:  # a log record outside any trace has nothing to be assembled with
                self._add(item, arrived, sizes[index] if index < len(sizes) else 0, seen)
            if index % YIELD_EVERY == YIELD_EVERY - 1:
                # A request of hundreds of thousands of spans must not hold the event loop.
                self._enforce_bounds()
                await asyncio.sleep(0)
        self._enforce_bounds()
        self._tracked.update_gauges()
        if self._closed:
            # After shutdown nothing ticks any more: pass items straight on rather than strand them.
            await self.flush_all("shutdown")

    def adopt(self, undecided: Sequence[Undecided], *, resumed: bool = True) -> int:
        """Track traces the store holds undecided (recovery, hand-offs); returns how many were new
        here. A trace whose undecided items all went out in a round released here is left alone:
        that round's decisions are on their way. ``resumed``: an earlier attempt may have written
        some of its decisions (recovery after a crash), so its round is released as ``recovered``."""
        now, wall = self._clock(), self._wall_ns()
        adopted = 0
        for found in undecided:
            trace = self._tracked.get(found.trace_id)
            released_through = self._released.released_through(found.trace_id)
            if trace is None and released_through is not None and found.last_arrived <= released_through:
                continue
            quiet = max(0.0, (wall - found.last_arrived) / 1e9)
            if trace is not None:
                trace.last_seen = max(trace.last_seen, now - quiet)
            else:
                age = max(0.0, (wall - found.first_arrived) / 1e9)
                trace = TracedItems(found.trace_id, now - age, now - quiet, found.first_arrived)
                self._tracked.track(trace)
                adopted += 1
            self._tracked.merge_stored(trace, found)
            if resumed:
                self._tracked.mark_resumed(trace)
            self._order.order_by_due(trace)  # its times come from the store: out of arrival order
        self._enforce_bounds()
        self._tracked.update_gauges()
        return adopted

    def recovered(self, scan_floor: int, forgotten_meanwhile: bool) -> None:
        """A recovery scan from ``scan_floor`` found and adopted every undecided trace: the floor of
        forgotten traces may rise, unless traces were forgotten while the scan ran."""
        self._tracked.recovered(scan_floor, forgotten_meanwhile)

    def take(self, keep: Callable[[str], bool]) -> list[TracedItems]:
        """Stop tracking the traces ``keep`` refuses (they are handed to another replica; the store
        holds their items) and return them; ``retrack`` puts them back if the hand-off fails."""
        taken = [trace for trace in self._tracked if not keep(trace.trace_id)]
        for trace in taken:
            self._tracked.drop_items(trace)
            self._stop_tracking(trace)
        self._tracked.update_gauges()
        return taken

    def retrack(self, traces: Sequence[TracedItems]) -> None:
        for trace in traces:
            trace.stored = True  # its items were dropped: the round is read from the store
            if trace.trace_id not in self._tracked:
                self._track_again(trace)
        self._tracked.update_gauges()

    def spill_all(self) -> None:
        """Let go of every held item (memory is short): each trace is read back from the store when
        due, never released early."""
        self._tracked.spill_all()
        self._tracked.update_gauges()

    async def flush_ready(self) -> None:
        """Release every trace that is ready now (the tick loop calls this; tests may too). Each
        release looks at the clock again, so traces new traffic made due meanwhile go first, before
        the next share of a recovery."""
        while ready := self._order.due(self._clock(), YIELD_EVERY):
            await self._release(ready)
            await asyncio.sleep(0)

    async def flush_all(self, reason: RoundReason = "flush") -> None:
        """Release every tracked trace now, ready or not (shutdown, and callers that need results now).
        Once scoring takes no more (it stopped at shutdown with rows it cannot write), the traces left
        stay in the store undecided: the next start scores them."""
        tracked = list(self._tracked)
        for start in range(0, len(tracked), YIELD_EVERY):
            chunk = tracked[start : start + YIELD_EVERY]
            try:
                await self._release([(trace, "late" if trace.late else reason) for trace in chunk])
            except ScoringStopped:
                log.warning(
                    "%d trace(s) not scored before the stop stay in the store; the next start scores them",
                    len(tracked) - start,
                )
                return

    def _add(self, item: Span | LogRecord, arrived: int, size: int, now: float) -> None:
        trace = self._tracked.get(item.trace_id)
        if trace is None:
            trace = TracedItems(item.trace_id, now, now, arrived)
            self._tracked.track(trace)
            if self._released.seen(item.trace_id):
                trace.late = trace.stored = True  # the round must start from the whole stored trace
            elif self._read_back_new or self._tracked.forgotten_floor is not None:
                # It may be a trace forgotten here (over max_traces) whose earlier items only the
                # store holds now: its round is read from the store, whole.
                trace.stored = True
        key = item_key(item)
        if key in trace.items:
            labels = (
                self._metrics.logs_dropped if isinstance(item, LogRecord) else self._metrics.spans_dropped
            )
            labels.labels("duplicate").inc()
            return
        ends_root = isinstance(item, Span) and not item.parent_span_id and item.end_time_unix_nano > 0
        self._tracked.arrive(trace, arrived, now, size, ends_root)
        self._order.arrived(trace)
        if trace.spilled:
            return  # the store has it; the trace is reassembled from there
        if len(trace.items) >= self._config.max_spans_per_trace:
            self._overflow(trace, "log records" if isinstance(item, LogRecord) else "spans")
            return
        self._tracked.hold(trace, key, item, size)

    def _overflow(self, trace: TracedItems, what: str) -> None:
        dropped = self._metrics.logs_dropped if what == "log records" else self._metrics.spans_dropped
        dropped.labels("trace_too_large").inc()
        if not trace.overflowed:
            trace.overflowed = True
            log.warning(
                "trace %s exceeds %d spans and log records; dropping its further %s from assembly "
                "(they are stored)",
                trace.trace_id,
                self._config.max_spans_per_trace,
                what,
            )

    def _enforce_bounds(self) -> None:
        """Spill and forget beyond the bounds; a forgotten trace leaves the release order too."""
        for trace in self._tracked.enforce_bounds():
            self._order.discard(trace.trace_id)

    def _track_again(self, trace: TracedItems) -> None:
        """Track a trace taken out again (a failed release or hand-off), ordered by when it is due."""
        self._tracked.track(trace)
        self._order.order_by_due(trace)

    def _stop_tracking(self, trace: TracedItems) -> None:
        """Stop tracking the trace (it is released or taken)."""
        self._tracked.untrack(trace)
        self._order.discard(trace.trace_id)

    async def _release(self, ready: list[tuple[TracedItems, RoundReason]]) -> None:
        """Hand the ready traces on, reading from the store those it holds more of than memory does."""
        if not ready:
            return
        for trace, _ in ready:
            # Out of the maps at once: an item arriving meanwhile starts a new (late) round.
            self._released.begin(trace)
            self._stop_tracking(trace)
            self._tracked.unhold(trace)
        try:
            rounds = await rounds_of(ready, self._loader, self._config.max_spans_per_trace)
            for (trace, _), (round, spans, logs) in zip(ready, rounds, strict=True):
                self._released.record(trace)
                self._tracked.update_gauges()
                await self._emit(trace, round, spans, logs)
                self._released.settle(trace.trace_id)
                self._resumed_released += trace.resumed
        except BaseException:
            for trace, _ in ready:  # not handed on: track them again so nothing is lost
                if self._released.settle(trace.trace_id) is None:
                    continue
                newer = self._tracked.get(trace.trace_id)
                if newer is None:
                    self._track_again(trace)
                    self._tracked.hold_again(trace)
                else:  # items came meanwhile: the next round reads the whole trace from the store
                    self._tracked.take_over(newer, trace)
                    if trace.resumed:  # recovery's work goes on in it
                        self._tracked.mark_resumed(newer)
            self._tracked.update_gauges()
            raise

    async def _emit(
        self, trace: TracedItems, round: TraceRound, spans: list[Span], logs: list[LogRecord]
    ) -> None:
        self._metrics.traces_assembled.labels(round.reason).inc()
        try:
            await self._next.consume_trace(spans, logs, round)
        except Exception as exc:
            if is_retriable(exc) or isinstance(exc, ScoringStopped):
                raise  # the store could not be read (tried at the next release), or scoring stopped
            self._metrics.transform_errors.inc()
            log.exception("processing assembled trace %s failed", trace.trace_id)

    async def _tick_loop(self) -> None:
        gap = min(MIN_RELEASE_GAP_SECONDS, self.tick_seconds)
        started = -math.inf
        while not self._stopping.is_set():
            wait = max(self.next_release_in(), started + gap - self._clock())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), wait)
            if self._stopping.is_set():
                return
            started = self._clock()
            try:
                await self.flush_ready()
            except Exception:  # the loop must outlive any one bad trace or a store hiccup
                log.exception("trace assembler tick failed")
