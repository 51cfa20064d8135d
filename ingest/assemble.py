"""Trace assembly: hold spans and log records by trace until the trace is complete, then hand it on.

A trace is ready when its root span (empty parent) has arrived and nothing came for
``idle_seconds``, or, root or not, when ``max_wait_seconds`` have passed since its first item.
Log records (GenAI message content written as OTLP logs) are held with the spans of their trace and
handed on with them; a trace that so far has only log records waits for its spans like any trace
without a root. Records without a trace id are not assembled (they are only stored).

Memory is bounded (pending traces, and spans plus log records per trace); every item dropped and
every trace emitted early is counted. Items arriving after their trace was emitted form a new
assembly round. The spans and log records of recently emitted traces are kept (up to
``late_cache_spans`` items), so that round starts from the whole trace and rebuilds the complete
run; its scores then overwrite the earlier ones, because score ids are deterministic. A late round
that brings nothing new is not emitted again.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from ingest.metrics import Metrics
from schemas import LogRecord, Span, SpanBatch
from schemas.config import AssemblyConfig
from schemas.consumers import TraceConsumer

log = logging.getLogger(__name__)

Clock = Callable[[], float]
"""Seconds from an arbitrary origin, never going back (``time.monotonic``)."""

MAX_TICK_SECONDS = 0.5


class ManualClock:
    """A clock that moves only when told to; lets tests step through idle and max-wait times."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


# Records with neither timestamp cannot be told from one another cheaply; each gets its own key.
_untimed = itertools.count()


def _log_key(record: LogRecord) -> Hashable:
    """Identifies a log record well enough to hold an identical re-send once."""
    if not record.time_unix_nano and not record.observed_time_unix_nano:
        return ("untimed", next(_untimed))
    return (
        record.span_id,
        record.time_unix_nano,
        record.observed_time_unix_nano,
        record.event_name,
        record.severity_number,
    )


@dataclass
class _PendingTrace:
    trace_id: str
    first_seen: float
    last_seen: float
    late: bool = False  # a new round for a trace already emitted
    new_items: int = 0  # spans and log records this round added (re-sent copies only: not emitted)
    root_ended: bool = False
    overflowed: bool = False
    spans: dict[str, Span] = field(default_factory=dict)  # by span id, in arrival order
    logs: dict[Hashable, LogRecord] = field(default_factory=dict)  # in arrival order

    @property
    def size(self) -> int:
        return len(self.spans) + len(self.logs)


@dataclass
class _Cached:
    """What an emitted trace was emitted with, kept for a late round while the late cache has room."""

    spans: list[Span] = field(default_factory=list)
    logs: list[LogRecord] = field(default_factory=list)

    @property
    def size(self) -> int:
        return len(self.spans) + len(self.logs)


class TraceAssembler:
    """Groups spans and log records by trace and forwards each ready trace to ``next.consume_trace``."""

    def __init__(
        self, config: AssemblyConfig, next: TraceConsumer, metrics: Metrics, clock: Clock = time.monotonic
    ) -> None:
        self._config = config
        self._next = next
        self._metrics = metrics
        self._clock = clock
        # Ordered by first item: the first entry is the oldest, the one evicted when full.
        self._pending: OrderedDict[str, _PendingTrace] = OrderedDict()
        self._pending_spans = 0
        self._pending_logs = 0
        # Recently emitted traces (bounded LRU) to recognise late items, with their spans and log
        # records while the late cache has room for them.
        self._emitted: OrderedDict[str, _Cached] = OrderedDict()
        self._cached_items = 0
        self._tick_task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._closed = False

    @property
    def tick_seconds(self) -> float:
        return min(self._config.idle_seconds / 4, MAX_TICK_SECONDS)

    async def start(self) -> None:
        if self._tick_task is not None or self._closed:
            return
        self._tick_task = asyncio.create_task(self._tick_loop(), name="trace-assembler-tick")

    async def shutdown(self) -> None:
        """Stop the tick loop and emit every pending trace. Idempotent; safe before start."""
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
        now = self._clock()
        evicted: list[_PendingTrace] = []
        for span in batch.spans:
            evicted.extend(self._add(span, now))
        for record in batch.logs:
            if record.trace_id:  # a record outside any trace has nothing to be assembled with
                evicted.extend(self._add_log(record, now))
        self._update_gauges()
        for trace in evicted:
            await self._emit(trace, "evicted")
        if self._closed:
            # After shutdown nothing ticks any more: pass items straight on rather than strand them.
            await self.flush_all("shutdown")

    async def flush_ready(self) -> None:
        """Emit every trace that is ready now (the tick loop calls this; tests may too)."""
        now = self._clock()
        ready = [
            (trace, reason) for trace in self._pending.values() if (reason := self._ready_reason(trace, now))
        ]
        for trace, _ in ready:
            self._take(trace.trace_id)
        self._update_gauges()
        for trace, reason in ready:
            await self._emit(trace, reason)

    async def flush_all(self, reason: str = "flush") -> None:
        """Emit every pending trace now, ready or not (shutdown, and callers that need results now)."""
        traces = [self._take(trace_id) for trace_id in list(self._pending)]
        self._update_gauges()
        for trace in traces:
            await self._emit(trace, "late" if trace.late else reason)

    def _ready_reason(self, trace: _PendingTrace, now: float) -> str | None:
        quiet = now - trace.last_seen >= self._config.idle_seconds
        if trace.late and quiet:
            # The root went out with an earlier round (and is back only if the late cache held it).
            return "late"
        if trace.root_ended and quiet:
            return "idle"
        if now - trace.first_seen >= self._config.max_wait_seconds:
            return "late" if trace.late else "max_wait"
        return None

    def _pending_trace(self, trace_id: str, now: float) -> tuple[_PendingTrace, list[_PendingTrace]]:
        """The pending trace of ``trace_id``, opened if need be; and the traces evicted to make room."""
        evicted: list[_PendingTrace] = []
        trace = self._pending.get(trace_id)
        if trace is None:
            while len(self._pending) >= self._config.max_traces:
                evicted.append(self._take(next(iter(self._pending))))
            late = trace_id in self._emitted
            trace = _PendingTrace(trace_id, first_seen=now, last_seen=now, late=late)
            self._pending[trace_id] = trace
            if late:
                self._resume(trace)
        return trace, evicted

    def _has_room(self, trace: _PendingTrace, what: str) -> bool:
        """Whether the trace may hold one more item; counts and logs (once per trace) when it may not."""
        if trace.size < self._config.max_spans_per_trace:
            return True
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
        return False

    def _add(self, span: Span, now: float) -> list[_PendingTrace]:
        """Hold one span; returns the traces evicted to make room (to be emitted by the caller)."""
        trace, evicted = self._pending_trace(span.trace_id, now)
        if span.span_id in trace.spans:
            self._metrics.spans_dropped.labels("duplicate").inc()
            return evicted
        trace.last_seen = now
        if not self._has_room(trace, "spans"):
            return evicted
        trace.spans[span.span_id] = span
        trace.new_items += 1
        self._pending_spans += 1
        if not span.parent_span_id and span.end_time_unix_nano > 0:
            trace.root_ended = True
        return evicted

    def _add_log(self, record: LogRecord, now: float) -> list[_PendingTrace]:
        """Hold one log record of a trace; returns the traces evicted to make room."""
        trace, evicted = self._pending_trace(record.trace_id, now)
        key = _log_key(record)
        if key in trace.logs:
            self._metrics.logs_dropped.labels("duplicate").inc()
            return evicted
        trace.last_seen = now
        if not self._has_room(trace, "log records"):
            return evicted
        trace.logs[key] = record
        trace.new_items += 1
        self._pending_logs += 1
        return evicted

    def _resume(self, trace: _PendingTrace) -> None:
        """Start a late round from the items the trace was emitted with, if they are still cached."""
        cached = self._emitted.pop(trace.trace_id, _Cached())
        self._cached_items -= cached.size
        for old in cached.spans:
            trace.spans[old.span_id] = old
            if not old.parent_span_id and old.end_time_unix_nano > 0:
                trace.root_ended = True
        for record in cached.logs:
            trace.logs[_log_key(record)] = record
        self._pending_spans += len(cached.spans)
        self._pending_logs += len(cached.logs)

    def _take(self, trace_id: str) -> _PendingTrace:
        trace = self._pending.pop(trace_id)
        self._pending_spans -= len(trace.spans)
        self._pending_logs -= len(trace.logs)
        self._remember(trace)
        return trace

    def _remember(self, trace: _PendingTrace) -> None:
        """Note the trace as emitted; keep its spans and log records while the late cache has room."""
        limit = self._config.late_cache_spans
        cached = _Cached()
        if trace.size <= limit:
            cached = _Cached(list(trace.spans.values()), list(trace.logs.values()))
        previous = self._emitted.pop(trace.trace_id, None)
        if previous:
            self._cached_items -= previous.size
        self._emitted[trace.trace_id] = cached
        self._cached_items += cached.size
        # Over the budget: forget the oldest traces' items first, but keep their ids.
        for trace_id, held in self._emitted.items():
            if self._cached_items <= limit:
                break
            if held.size:
                self._cached_items -= held.size
                self._emitted[trace_id] = _Cached()
        while len(self._emitted) > self._config.max_traces:
            _, dropped = self._emitted.popitem(last=False)
            self._cached_items -= dropped.size

    async def _emit(self, trace: _PendingTrace, reason: str) -> None:
        if trace.late and trace.new_items == 0:
            return  # only re-sent copies of items already scored: nothing new to score
        self._metrics.traces_assembled.labels(reason).inc()
        spans = list(trace.spans.values())
        try:
            if trace.logs:
                await self._next.consume_trace(spans, list(trace.logs.values()))
            else:
                # Consumers written against the spans-only protocol keep working for traces without logs.
                await self._next.consume_trace(spans)
        except Exception:
            self._metrics.transform_errors.inc()
            log.exception("processing assembled trace %s failed", trace.trace_id)

    def _update_gauges(self) -> None:
        self._metrics.traces_pending.set(len(self._pending))
        self._metrics.spans_pending.set(self._pending_spans)
        self._metrics.logs_pending.set(self._pending_logs)

    async def _tick_loop(self) -> None:
        while not self._stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self.tick_seconds)
            if self._stopping.is_set():
                return
            try:
                await self.flush_ready()
            except Exception:  # the loop must outlive any one bad trace
                log.exception("trace assembler tick failed")
