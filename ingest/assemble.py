"""Trace assembly: hold spans by trace until the trace is complete, then hand it to the transform.

A trace is ready when its root span (empty parent) has arrived and nothing came for
``idle_seconds``, or, root or not, when ``max_wait_seconds`` have passed since its first span.
Memory is bounded (pending traces and spans per trace); every span dropped and every trace emitted
early is counted. Spans arriving after their trace was emitted form a new assembly round. The spans
of recently emitted traces are kept (up to ``late_cache_spans``), so that round starts from the
whole trace and rebuilds the complete run; its scores then overwrite the earlier ones, because
score ids are deterministic. A late round that brings nothing new is not emitted again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from ingest.consumers import TraceConsumer
from ingest.metrics import Metrics
from schemas import Span, SpanBatch
from schemas.config import AssemblyConfig

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


@dataclass
class _PendingTrace:
    trace_id: str
    first_seen: float
    last_seen: float
    late: bool = False  # a new round for a trace already emitted
    new_spans: int = 0  # spans this round added (a late round of re-sent spans only is not emitted)
    root_ended: bool = False
    overflowed: bool = False
    spans: dict[str, Span] = field(default_factory=dict)  # by span id, in arrival order


class TraceAssembler:
    """Groups spans by trace and forwards each ready trace to ``next.consume_trace``."""

    def __init__(
        self, config: AssemblyConfig, next: TraceConsumer, metrics: Metrics, clock: Clock = time.monotonic
    ) -> None:
        self._config = config
        self._next = next
        self._metrics = metrics
        self._clock = clock
        # Ordered by first span: the first entry is the oldest, the one evicted when full.
        self._pending: OrderedDict[str, _PendingTrace] = OrderedDict()
        self._pending_spans = 0
        # Recently emitted traces (bounded LRU) to recognise late spans, with their spans while the
        # late cache has room for them.
        self._emitted: OrderedDict[str, list[Span]] = OrderedDict()
        self._cached_spans = 0
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
        self._update_gauges()
        for trace in evicted:
            await self._emit(trace, "evicted")
        if self._closed:
            # After shutdown nothing ticks any more: pass spans straight on rather than strand them.
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

    def _add(self, span: Span, now: float) -> list[_PendingTrace]:
        """Hold one span; returns the traces evicted to make room (to be emitted by the caller)."""
        evicted: list[_PendingTrace] = []
        trace = self._pending.get(span.trace_id)
        if trace is None:
            while len(self._pending) >= self._config.max_traces:
                evicted.append(self._take(next(iter(self._pending))))
            late = span.trace_id in self._emitted
            trace = _PendingTrace(span.trace_id, first_seen=now, last_seen=now, late=late)
            self._pending[span.trace_id] = trace
            if late:
                self._resume(trace)
        if span.span_id in trace.spans:
            self._metrics.spans_dropped.labels("duplicate").inc()
            return evicted
        trace.last_seen = now
        if len(trace.spans) >= self._config.max_spans_per_trace:
            self._metrics.spans_dropped.labels("trace_too_large").inc()
            if not trace.overflowed:
                trace.overflowed = True
                log.warning(
                    "trace %s exceeds %d spans; dropping its further spans from assembly (they are stored)",
                    span.trace_id, self._config.max_spans_per_trace,
                )
            return evicted
        trace.spans[span.span_id] = span
        trace.new_spans += 1
        self._pending_spans += 1
        if not span.parent_span_id and span.end_time_unix_nano > 0:
            trace.root_ended = True
        return evicted

    def _resume(self, trace: _PendingTrace) -> None:
        """Start a late round from the spans the trace was emitted with, if they are still cached."""
        cached = self._emitted.pop(trace.trace_id, [])
        self._cached_spans -= len(cached)
        for old in cached:
            trace.spans[old.span_id] = old
            if not old.parent_span_id and old.end_time_unix_nano > 0:
                trace.root_ended = True
        self._pending_spans += len(cached)

    def _take(self, trace_id: str) -> _PendingTrace:
        trace = self._pending.pop(trace_id)
        self._pending_spans -= len(trace.spans)
        self._remember(trace)
        return trace

    def _remember(self, trace: _PendingTrace) -> None:
        """Note the trace as emitted; keep its spans while the late cache has room."""
        limit = self._config.late_cache_spans
        spans = list(trace.spans.values()) if len(trace.spans) <= limit else []
        previous = self._emitted.pop(trace.trace_id, None)
        if previous:
            self._cached_spans -= len(previous)
        self._emitted[trace.trace_id] = spans
        self._cached_spans += len(spans)
        # Over the span budget: forget the oldest traces' spans first, but keep their ids.
        for trace_id, cached in self._emitted.items():
            if self._cached_spans <= limit:
                break
            if cached:
                self._cached_spans -= len(cached)
                self._emitted[trace_id] = []
        while len(self._emitted) > self._config.max_traces:
            _, dropped = self._emitted.popitem(last=False)
            self._cached_spans -= len(dropped)

    async def _emit(self, trace: _PendingTrace, reason: str) -> None:
        if trace.late and trace.new_spans == 0:
            return  # only re-sent copies of spans already scored: nothing new to score
        self._metrics.traces_assembled.labels(reason).inc()
        try:
            await self._next.consume_trace(list(trace.spans.values()))
        except Exception:
            self._metrics.transform_errors.inc()
            log.exception("processing assembled trace %s failed", trace.trace_id)

    def _update_gauges(self) -> None:
        self._metrics.traces_pending.set(len(self._pending))
        self._metrics.spans_pending.set(self._pending_spans)

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
