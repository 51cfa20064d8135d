"""Trace assembly: group the stored spans and log records by trace until the trace is complete, then
hand it on -- with the store as the truth and memory as a cache.

A trace is ready when its root span (empty parent) has ended and nothing came for ``idle_seconds``,
or, root or not, when ``max_wait_seconds`` have passed since its first item. Each release is a
round (``schemas.TraceRound``) covering the items that arrived up to its ``through``; the executor
marks the round done in the store once its decisions are written.

Every item reaching the assembler is already in the span ledger, so memory only caches it:

- Beyond ``max_held_bytes`` of held items, the oldest traces are spilled: their items leave memory,
  the trace stays tracked and is reassembled from the ledger when it is due. Nothing is released
  early because memory ran short.
- Beyond ``max_traces`` tracked traces, the oldest spilled ones are forgotten; the watermark stays
  below them and the recovery scan (``ingest.replay.recovery``) brings them back from the store.
- A trace seen before -- emitted in this process, found decided in the store (a restart, a Kafka
  replay, another replica), or adopted by recovery -- is reassembled from the ledger, so its round
  holds every item however they arrived; a round that brings nothing but re-sent copies is marked
  done without being scored again.

Log records are held with the spans of their trace; records without a trace id are only stored.
Every item dropped and every trace spilled is counted. All work per item is O(1) amortised, and so is
finding the ready traces: tracked traces are kept in the order of their last item (the idle rule) and
of their first (``max_wait``), those whose times came from the store (adopted by recovery) in the
order they fall due, so a release looks only at the traces due. The tick loop sleeps until the next
trace is due (at most ``tick_seconds``), releases starting at least ``MIN_RELEASE_GAP_SECONDS``
apart: each release asks the store about all its traces at once (``assembly_state.rounds_of``), so
the traces due close together go together, and a release that took longer is followed at once. A
recovery of thousands of traces goes out ``ADOPTED_PER_RELEASE`` at a time, each share after the new
traces due by then, so new traffic is not held up behind it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence

from tracescore.ingest.assembly.trace_state import DueOrder, TracedItems, TraceLoader, item_key, rounds_of
from tracescore.ingest.observability.service_metrics import Metrics
from tracescore.ingest.store.ledger import Undecided
from tracescore.schemas import LogRecord, RoundReason, Span, SpanBatch, TraceRound
from tracescore.schemas.config import AssemblyConfig
from tracescore.schemas.consumers import TraceConsumer
from tracescore.schemas.errors import is_retriable

log = logging.getLogger(__name__)

Clock = Callable[[], float]
"""Seconds from an arbitrary origin, never going back (``time.monotonic``)."""

MAX_TICK_SECONDS = 0.5
MIN_RELEASE_GAP_SECONDS = 0.1
MAX_COMMIT_SECONDS = 1.0  # a batch older than this (a stalled store) counts as arriving when handed on
YIELD_EVERY = 2_000  # items (or traces) handled between two yields to the event loop
# Adopted traces (a recovery) one release takes at most, after the new traces due: a release of them
# takes about a millisecond each, so new traffic waits at most that long behind a recovery.
ADOPTED_PER_RELEASE = 500
# Ids of released traces remembered, to know a later item makes a late round: as many as traces are
# tracked (a late item of a trace forgotten here is found in the store when its round is released).
EMITTED_IDS = 100_000


class ManualClock:
    """A clock that moves only when told to; lets tests step through idle and max-wait times."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


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
        self._adopted_per_release = adopted_per_release
        self._next = next
        self._metrics = metrics
        self._clock = clock
        self._wall_ns = wall_clock_ns
        self._loader = loader
        # Tracked traces in the order of their first item (the oldest is spilled and forgotten first),
        # and those of them holding items in memory, in the same order.
        self._traces: OrderedDict[str, TracedItems] = OrderedDict()
        self._held: OrderedDict[str, TracedItems] = OrderedDict()
        # The tracked traces not yet quiet for idle_seconds, in the order of their last item (a quiet
        # one without an ended root leaves it and waits for max_wait or its next item); and those
        # whose times came from elsewhere (adopted, put back), in the order they fall due.
        self._quiet: OrderedDict[str, TracedItems] = OrderedDict()
        self._unordered = DueOrder(config.idle_seconds, config.max_wait_seconds)
        self._resumed = 0  # tracked traces adopted by recovery (its work still to do)
        self._resumed_released = 0  # and those released so far
        self._read_back_new = False  # recovery has undecided traces left to adopt (see read_back_new)
        self._held_bytes = 0
        self._held_spans = 0
        self._held_logs = 0
        # Released traces -> the latest arrival their last round covered (bounded LRU).
        self._emitted: OrderedDict[str, int] = OrderedDict()
        self._emitting: dict[str, TracedItems] = {}  # rounds being handed on
        self._forgotten_floor: int | None = None  # the oldest since among forgotten traces (ns)
        self._forgotten_count = 0
        self._tick_task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._closed = False

    @property
    def tick_seconds(self) -> float:
        """The longest the tick loop sleeps between two releases."""
        return min(self._config.idle_seconds / 4, MAX_TICK_SECONDS)

    def next_release_in(self) -> float:
        """Seconds until the next trace is due, at most ``tick_seconds``."""
        due = [trace.last_seen + self._config.idle_seconds for trace in self._first(self._quiet)]
        due.extend(trace.first_seen + self._config.max_wait_seconds for trace in self._first(self._traces))
        if (unordered := self._unordered.next_due()) is not None:
            due.append(unordered)
        return max(0.0, min(min(due, default=math.inf) - self._clock(), self.tick_seconds))

    @staticmethod
    def _first(traces: OrderedDict[str, TracedItems]) -> list[TracedItems]:
        return [next(iter(traces.values()))] if traces else []

    @property
    def tracked(self) -> int:
        return len(self._traces)

    @property
    def held_bytes(self) -> int:
        return self._held_bytes

    @property
    def resumed(self) -> int:
        """Traces adopted by recovery and not yet released (tracked, or in a release under way): what
        recovery has left to do."""
        return self._resumed + sum(trace.resumed for trace in self._emitting.values())

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
        return self._forgotten_count

    def oldest_open(self) -> int | None:
        """The oldest arrival (ns) the assembler has not handed on: the watermark stays below it."""
        candidates = [trace.since for trace in self._traces.values() if trace.since]
        candidates.extend(trace.since for trace in self._emitting.values() if trace.since)
        if self._forgotten_floor is not None:
            candidates.append(self._forgotten_floor)
        return min(candidates, default=None)

    def forgotten_floor(self) -> int | None:
        """Where the recovery scan must look for forgotten traces (None: nothing forgotten)."""
        return self._forgotten_floor

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
        self._update_gauges()
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
            trace = self._traces.get(found.trace_id)
            emitting = self._emitting.get(found.trace_id)
            released_through = emitting.through if emitting is not None else self._emitted.get(found.trace_id)
            if trace is None and released_through is not None and found.last_arrived <= released_through:
                continue
            quiet = max(0.0, (wall - found.last_arrived) / 1e9)
            if trace is not None:
                trace.last_seen = max(trace.last_seen, now - quiet)
            else:
                age = max(0.0, (wall - found.first_arrived) / 1e9)
                trace = TracedItems(found.trace_id, now - age, now - quiet, found.first_arrived)
                self._traces[found.trace_id] = trace
                adopted += 1
            trace.since = min(trace.since, found.first_arrived) if trace.since else found.first_arrived
            trace.through = max(trace.through, found.last_arrived)
            trace.root_ended = trace.root_ended or found.root_ended
            trace.late = trace.late or found.done_through > 0
            trace.stored = True
            if resumed and not trace.resumed:
                trace.resumed = True
                self._resumed += 1
            self._unorder(trace)  # its times come from the store: out of arrival order
        self._enforce_bounds()
        self._update_gauges()
        return adopted

    def recovered(self, scan_floor: int, forgotten_meanwhile: bool) -> None:
        """A recovery scan from ``scan_floor`` found and adopted every undecided trace: the floor of
        forgotten traces may rise, unless traces were forgotten while the scan ran."""
        if (
            not forgotten_meanwhile
            and self._forgotten_floor is not None
            and self._forgotten_floor >= scan_floor
        ):
            self._forgotten_floor = None

    def take(self, keep: Callable[[str], bool]) -> list[TracedItems]:
        """Stop tracking the traces ``keep`` refuses (they are handed to another replica; the store
        holds their items) and return them; ``retrack`` puts them back if the hand-off fails."""
        taken = [trace for trace_id, trace in self._traces.items() if not keep(trace_id)]
        for trace in taken:
            self._unhold(trace)
            trace.drop_items()
            self._stop_tracking(trace)
        self._update_gauges()
        return taken

    def retrack(self, traces: Sequence[TracedItems]) -> None:
        for trace in traces:
            trace.stored = True  # its items were dropped: the round is read from the store
            if trace.trace_id not in self._traces:
                self._track_again(trace)
        self._update_gauges()

    async def flush_ready(self) -> None:
        """Release every trace that is ready now (the tick loop calls this; tests may too). Each
        release looks at the clock again, so traces new traffic made due meanwhile go first, before
        the next share of a recovery."""
        while ready := self._due(self._clock(), YIELD_EVERY):
            await self._release(ready)
            await asyncio.sleep(0)

    def _due(self, now: float, limit: int) -> list[tuple[TracedItems, RoundReason]]:
        """Up to ``limit`` traces ready at ``now``, looking only at the ones due (O(ready)): first
        those in arrival order, then at most ``ADOPTED_PER_RELEASE`` of those out of it; and no more
        than ``max_held_bytes`` of items: a release reads its spilled traces back from the store at
        once, and that must fit in memory as held items do."""
        ready: list[tuple[TracedItems, RoundReason]] = []
        taken: set[str] = set()
        size = 0

        def full() -> bool:
            return len(ready) >= limit or size >= self._config.max_held_bytes

        def take(trace: TracedItems) -> bool:
            nonlocal size
            if trace.trace_id in taken:
                return True
            if (reason := self._ready_reason(trace, now)) is None:
                return False
            ready.append((trace, reason))
            taken.add(trace.trace_id)
            size += trace.arrived_bytes
            return True

        idle = self._config.idle_seconds
        while self._quiet and not full():
            trace = next(iter(self._quiet.values()))
            if trace.last_seen + idle > now:
                break
            del self._quiet[trace.trace_id]  # without an ended root it waits for max_wait (below)
            take(trace)
        adopted = 0  # traces out of arrival order taken
        for trace in self._traces.values():  # oldest first item first
            if full() or trace.first_seen + self._config.max_wait_seconds > now:
                break
            if trace.trace_id in self._unordered:
                if adopted >= self._adopted_per_release:
                    break
                adopted += 1
            take(trace)
        while not full() and adopted < self._adopted_per_release:
            if (due := self._unordered.pop_due(now)) is None:
                break
            if not take(due):  # its times moved without being placed again: place it now
                self._unordered.push(due)
                break
            adopted += 1
        return ready

    async def flush_all(self, reason: RoundReason = "flush") -> None:
        """Release every tracked trace now, ready or not (shutdown, and callers that need results now)."""
        tracked = list(self._traces.values())
        for start in range(0, len(tracked), YIELD_EVERY):
            chunk = tracked[start : start + YIELD_EVERY]
            await self._release([(trace, "late" if trace.late else reason) for trace in chunk])

    def _ready_reason(self, trace: TracedItems, now: float) -> RoundReason | None:
        quiet = trace.last_seen + self._config.idle_seconds <= now
        if trace.late and quiet:
            # The root went out with an earlier round: quiet is enough.
            return "late" if not trace.resumed else "recovered"
        if trace.root_ended and quiet:
            return "recovered" if trace.resumed else "idle"
        if trace.first_seen + self._config.max_wait_seconds <= now:
            return "max_wait"
        return None

    def _add(self, item: Span | LogRecord, arrived: int, size: int, now: float) -> None:
        trace = self._traces.get(item.trace_id)
        if trace is None:
            trace = TracedItems(item.trace_id, now, now, arrived)
            self._traces[item.trace_id] = trace
            if item.trace_id in self._emitted or item.trace_id in self._emitting:
                trace.late = trace.stored = True  # the round must start from the whole stored trace
            elif self._read_back_new:
                trace.stored = True
        key = item_key(item)
        if key in trace.items:
            labels = (
                self._metrics.logs_dropped if isinstance(item, LogRecord) else self._metrics.spans_dropped
            )
            labels.labels("duplicate").inc()
            return
        trace.last_seen = now
        trace.arrived_bytes += size
        trace.since = min(trace.since, arrived) if trace.since else arrived
        trace.through = max(trace.through, arrived)
        if isinstance(item, Span) and not item.parent_span_id and item.end_time_unix_nano > 0:
            trace.root_ended = True
        if trace.trace_id in self._unordered:
            self._unordered.push(trace)  # its due time moved
        else:
            self._quiet[trace.trace_id] = trace
            self._quiet.move_to_end(trace.trace_id)
        if trace.spilled:
            return  # the store has it; the trace is reassembled from there
        if len(trace.items) >= self._config.max_spans_per_trace:
            self._overflow(trace, "log records" if isinstance(item, LogRecord) else "spans")
            return
        trace.hold(key, item, size)
        self._held_bytes += size
        if isinstance(item, LogRecord):
            self._held_logs += 1
        else:
            self._held_spans += 1
        self._held[trace.trace_id] = trace

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
        """Spill the oldest held traces beyond the byte bound; forget the oldest tracked beyond the
        trace bound (each step O(1): the oldest are at the front of the ordered maps)."""
        while self._held_bytes > self._config.max_held_bytes and self._held:
            self._spill(next(iter(self._held.values())))
        while len(self._traces) > self._config.max_traces:
            trace = next(iter(self._traces.values()))
            self._stop_tracking(trace)
            self._drop_items(trace)
            if trace.since:
                floor = self._forgotten_floor
                self._forgotten_floor = trace.since if floor is None else min(floor, trace.since)
            self._forgotten_count += 1
            self._metrics.traces_spilled.labels("forgotten").inc()

    def spill_all(self) -> None:
        """Let go of every held item (memory is short): each trace is read back from the store when
        due, never released early."""
        while self._held:
            self._spill(next(iter(self._held.values())))
        self._update_gauges()

    def _spill(self, trace: TracedItems) -> None:
        """Let the trace's items go: it is read back from the ledger when released."""
        if trace.items:
            self._metrics.traces_spilled.labels("memory").inc()
        self._drop_items(trace)
        trace.stored = trace.spilled = True

    def _drop_items(self, trace: TracedItems) -> None:
        self._unhold(trace)
        trace.drop_items()

    def _unhold(self, trace: TracedItems) -> None:
        """Stop counting the trace's items as held (they go out with it, or are dropped)."""
        if self._held.pop(trace.trace_id, None) is not None:
            self._held_bytes -= trace.held_bytes
            self._held_spans -= trace.span_count
            self._held_logs -= len(trace.items) - trace.span_count

    def _hold_counts(self, trace: TracedItems) -> None:
        """Count the trace's items as held again (a release that failed)."""
        if trace.items and trace.trace_id not in self._held:
            self._held[trace.trace_id] = trace
            self._held_bytes += trace.held_bytes
            self._held_spans += trace.span_count
            self._held_logs += len(trace.items) - trace.span_count

    def _unorder(self, trace: TracedItems) -> None:
        """Order the trace by when it is due: its times are not those of its place in the orders."""
        self._quiet.pop(trace.trace_id, None)
        self._unordered.push(trace)

    def _track_again(self, trace: TracedItems) -> None:
        """Track a trace taken out again (a failed release or hand-off)."""
        self._traces[trace.trace_id] = trace
        self._resumed += trace.resumed
        self._unorder(trace)

    def _stop_tracking(self, trace: TracedItems) -> None:
        """Stop tracking the trace (it is released, taken or forgotten)."""
        if self._traces.pop(trace.trace_id, None) is not None:
            self._resumed -= trace.resumed
        self._quiet.pop(trace.trace_id, None)
        self._unordered.discard(trace.trace_id)

    def _untrack(self, trace: TracedItems) -> None:
        self._emitted[trace.trace_id] = trace.through
        self._emitted.move_to_end(trace.trace_id)
        while len(self._emitted) > min(EMITTED_IDS, self._config.max_traces):
            self._emitted.popitem(last=False)

    async def _release(self, ready: list[tuple[TracedItems, RoundReason]]) -> None:
        """Hand the ready traces on, reading from the store those it holds more of than memory does."""
        if not ready:
            return
        for trace, _ in ready:
            # Out of the maps at once: an item arriving meanwhile starts a new (late) round.
            self._emitting[trace.trace_id] = trace
            self._stop_tracking(trace)
            self._unhold(trace)
        try:
            rounds = await rounds_of(ready, self._loader, self._config.max_spans_per_trace)
            for (trace, _), (round, spans, logs) in zip(ready, rounds, strict=True):
                self._untrack(trace)
                self._update_gauges()
                await self._emit(trace, round, spans, logs)
                self._emitting.pop(trace.trace_id, None)
                self._resumed_released += trace.resumed
        except BaseException:
            for trace, _ in ready:  # not handed on: track them again so nothing is lost
                if self._emitting.pop(trace.trace_id, None) is None:
                    continue
                newer = self._traces.get(trace.trace_id)
                if newer is None:
                    self._track_again(trace)
                    self._hold_counts(trace)
                else:  # items came meanwhile: the next round reads the whole trace from the store
                    newer.stored = True
                    newer.since = min(newer.since, trace.since) if newer.since else trace.since
                    newer.root_ended = newer.root_ended or trace.root_ended
                    if trace.resumed and not newer.resumed:  # recovery's work goes on in it
                        newer.resumed = True
                        self._resumed += 1
            self._update_gauges()
            raise

    async def _emit(
        self, trace: TracedItems, round: TraceRound, spans: list[Span], logs: list[LogRecord]
    ) -> None:
        self._metrics.traces_assembled.labels(round.reason).inc()
        try:
            await self._next.consume_trace(spans, logs, round)
        except Exception as exc:
            if is_retriable(exc):
                raise  # the store could not be read: tracked again, tried at the next release
            self._metrics.transform_errors.inc()
            log.exception("processing assembled trace %s failed", trace.trace_id)

    def _update_gauges(self) -> None:
        self._metrics.traces_pending.set(len(self._traces))
        self._metrics.spans_pending.set(self._held_spans)
        self._metrics.logs_pending.set(self._held_logs)
        self._metrics.held_bytes.set(self._held_bytes)

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
