"""The traces the assembler tracks, and the memory their held items take.

Every item reaching the assembler is already in the span ledger, so memory only caches it:

- Beyond ``max_held_bytes`` of held items, the oldest traces are spilled: their items leave memory,
  the trace stays tracked and is reassembled from the ledger when it is due. Nothing is released
  early because memory ran short.
- Beyond ``max_traces`` tracked traces, the oldest are forgotten; the watermark stays below them and
  the recovery scan (``ingest.replay.recovery``) brings them back from the store.

Each step is O(1): the oldest traces are at the front of the ordered maps. Every trace spilled or
forgotten is counted. The oldest arrival still open (what the watermark waits for) is kept in a heap,
so finding it never scans the tracked traces: with long-running agents they are hundreds of thousands.
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from collections.abc import Hashable, Iterator

from tracescore.ingest.assembly.trace_state import TracedItems
from tracescore.ingest.observability.service_metrics import Metrics
from tracescore.ingest.store.ledger import Undecided
from tracescore.schemas import LogRecord, Span
from tracescore.schemas.config import AssemblyConfig


class TrackedTraces:
    """The tracked traces in the order of their first item (the oldest is spilled and forgotten first),
    those of them holding items in memory (in the same order) and what these hold, how many recovery
    adopted, and where the forgotten ones begin. Iterating yields the tracked traces, oldest first."""

    def __init__(self, config: AssemblyConfig, metrics: Metrics) -> None:
        # The bounds are read from the config each time: the service lowers them from what it
        # measures at start, after the assembler is built.
        self._config = config
        self._metrics = metrics
        # The counters of each reason, looked up once: a fill of long-running traces spills each.
        self._spilled = {reason: metrics.traces_spilled.labels(reason) for reason in ("memory", "forgotten")}
        self._spilled_bytes = {
            reason: metrics.bytes_spilled.labels(reason) for reason in ("memory", "forgotten")
        }
        self._traces: OrderedDict[str, TracedItems] = OrderedDict()
        self._held: OrderedDict[str, TracedItems] = OrderedDict()
        self._held_bytes = 0
        self._held_spans = 0
        self._held_logs = 0
        self._resumed = 0  # tracked traces adopted by recovery (its work still to do)
        self._forgotten_floor: int | None = None  # the oldest since among forgotten traces (ns)
        self._forgotten_count = 0
        # (since, trace id) of the tracked traces, earliest first; an entry whose trace left or moved
        # earlier (it was pushed again) is dropped when it comes up (lazy deletion).
        self._by_since: list[tuple[int, str]] = []

    def __len__(self) -> int:
        return len(self._traces)

    def __contains__(self, trace_id: str) -> bool:
        return trace_id in self._traces

    def __iter__(self) -> Iterator[TracedItems]:
        return iter(self._traces.values())

    def get(self, trace_id: str) -> TracedItems | None:
        return self._traces.get(trace_id)

    @property
    def held_bytes(self) -> int:
        return self._held_bytes

    @property
    def resumed(self) -> int:
        """Tracked traces adopted by recovery."""
        return self._resumed

    @property
    def forgotten_count(self) -> int:
        """How many traces were forgotten so far."""
        return self._forgotten_count

    @property
    def forgotten_floor(self) -> int | None:
        """The oldest arrival (ns) among forgotten traces not found again yet (None: none)."""
        return self._forgotten_floor

    def oldest_since(self) -> int | None:
        """The oldest arrival (ns) of the tracked traces' coming rounds; O(log n) amortised."""
        self._drop_stale()
        return self._by_since[0][0] if self._by_since else None

    def track(self, trace: TracedItems) -> None:
        """Track a trace not tracked here (new, adopted, or taken out and put back): it goes last."""
        self._traces[trace.trace_id] = trace
        self._resumed += trace.resumed
        self._order_by_since(trace)

    def arrive(self, trace: TracedItems, arrived: int, seen: float, size: int, ends_root: bool) -> None:
        """An item new to the tracked trace came (``TracedItems.arrive``)."""
        since = trace.since
        trace.arrive(arrived, seen, size, ends_root)
        if trace.since != since:
            self._order_by_since(trace)

    def merge_stored(self, trace: TracedItems, found: Undecided) -> None:
        """Take in what the store holds undecided of the tracked trace (``TracedItems.merge_stored``)."""
        since = trace.since
        trace.merge_stored(found)
        if trace.since != since:
            self._order_by_since(trace)

    def take_over(self, trace: TracedItems, failed: TracedItems) -> None:
        """The tracked trace takes in a round of it that failed to go out (``TracedItems.take_over``)."""
        since = trace.since
        trace.take_over(failed)
        if trace.since != since:
            self._order_by_since(trace)

    def untrack(self, trace: TracedItems) -> None:
        """Stop tracking the trace (it is released, taken or forgotten); its held items stay counted."""
        if self._traces.pop(trace.trace_id, None) is not None:
            self._resumed -= trace.resumed
            # The oldest traces leave first (forgotten, released): their entries go now, a few at a
            # time, rather than all at once when the watermark next asks.
            self._drop_stale()

    def mark_resumed(self, trace: TracedItems) -> None:
        """The tracked trace is adopted by recovery: an earlier attempt may have written decisions."""
        if not trace.resumed:
            trace.resumed = True
            self._resumed += 1

    def hold(self, trace: TracedItems, key: Hashable, item: Span | LogRecord, size: int) -> None:
        """Hold the item in memory with its trace, and count it."""
        trace.hold(key, item, size)
        self._held_bytes += size
        if isinstance(item, LogRecord):
            self._held_logs += 1
        else:
            self._held_spans += 1
        self._held[trace.trace_id] = trace

    def unhold(self, trace: TracedItems) -> None:
        """Stop counting the trace's items as held (they go out with it, or are dropped)."""
        if self._held.pop(trace.trace_id, None) is not None:
            self._held_bytes -= trace.held_bytes
            self._held_spans -= trace.span_count
            self._held_logs -= len(trace.items) - trace.span_count

    def hold_again(self, trace: TracedItems) -> None:
        """Count the trace's items as held again (a release that failed)."""
        if trace.items and trace.trace_id not in self._held:
            self._held[trace.trace_id] = trace
            self._held_bytes += trace.held_bytes
            self._held_spans += trace.span_count
            self._held_logs += len(trace.items) - trace.span_count

    def drop_items(self, trace: TracedItems) -> None:
        """Let go of the trace's held items (the ledger has them all)."""
        self.unhold(trace)
        trace.drop_items()

    def spill_all(self) -> None:
        """Let go of every held item (memory is short): each trace is read back from the store when
        due, never released early."""
        while self._held:
            self._spill(next(iter(self._held.values())))

    def enforce_bounds(self) -> list[TracedItems]:
        """Spill the oldest held traces beyond ``max_held_bytes``; forget the oldest tracked beyond
        ``max_traces`` and return those (their place in the release order is the caller's to drop)."""
        while self._held_bytes > self._config.max_held_bytes and self._held:
            self._spill(next(iter(self._held.values())))
        forgotten: list[TracedItems] = []
        while len(self._traces) > self._config.max_traces:
            trace = next(iter(self._traces.values()))
            self.untrack(trace)
            self._spilled_bytes["forgotten"].inc(trace.held_bytes)
            self.drop_items(trace)
            if trace.since:
                floor = self._forgotten_floor
                self._forgotten_floor = trace.since if floor is None else min(floor, trace.since)
            self._forgotten_count += 1
            self._spilled["forgotten"].inc()
            forgotten.append(trace)
        return forgotten

    def recovered(self, scan_floor: int, forgotten_meanwhile: bool) -> None:
        """A recovery scan from ``scan_floor`` found and adopted every undecided trace: the floor of
        forgotten traces may rise, unless traces were forgotten while the scan ran."""
        if (
            not forgotten_meanwhile
            and self._forgotten_floor is not None
            and self._forgotten_floor >= scan_floor
        ):
            self._forgotten_floor = None

    def update_gauges(self) -> None:
        self._metrics.traces_pending.set(len(self._traces))
        self._metrics.spans_pending.set(self._held_spans)
        self._metrics.logs_pending.set(self._held_logs)
        self._metrics.held_bytes.set(self._held_bytes)

    def _order_by_since(self, trace: TracedItems) -> None:
        """Place the trace by its ``since``; rebuild the heap once stale entries make most of it."""
        if trace.since:
            heapq.heappush(self._by_since, (trace.since, trace.trace_id))
        if len(self._by_since) > 2 * len(self._traces) + 1_000:
            self._by_since = [(t.since, t.trace_id) for t in self._traces.values() if t.since]
            heapq.heapify(self._by_since)

    def _drop_stale(self) -> None:
        """Pop the entries before the first whose trace is tracked with that since: they left, or
        their since moved earlier (an entry of its own)."""
        heap = self._by_since
        while heap:
            since, trace_id = heap[0]
            trace = self._traces.get(trace_id)
            if trace is not None and trace.since == since:
                return
            heapq.heappop(heap)

    def _spill(self, trace: TracedItems) -> None:
        """Let the trace's items go: it is read back from the ledger when released."""
        if trace.items:
            self._spilled["memory"].inc()
            self._spilled_bytes["memory"].inc(trace.held_bytes)
        self.unhold(trace)
        trace.spill()
