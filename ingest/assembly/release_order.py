"""When tracked traces come due, and which of them go out in one release.

A trace is ready when its root span (empty parent) has ended, or an earlier round of it went out, and
nothing came for ``idle_seconds``; or, root or not, ``max_wait_seconds`` after its first item.

Finding the ready traces is O(ready): tracked traces are kept in the order of their last item (the idle
rule) and of their first (``max_wait``: the order ``TrackedTraces`` keeps), and those whose times came
from elsewhere (adopted from the store by recovery or a hand-off, put back after a failed release) in
the order they fall due, so a release looks only at the traces due. A release takes the new traces due
first, then at most ``adopted_per_release`` adopted ones: a recovery of thousands of traces goes out a
share at a time, each share after the new traces due by then, so new traffic is not held up behind it.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import OrderedDict
from collections.abc import Callable, Iterable

from tracescore.ingest.assembly.trace_state import TracedItems
from tracescore.ingest.assembly.tracked_traces import TrackedTraces
from tracescore.schemas import RoundReason
from tracescore.schemas.config import AssemblyConfig

# Adopted traces (a recovery) one release takes at most, after the new traces due: a release of them
# takes about a millisecond each, so new traffic waits at most that long behind a recovery.
ADOPTED_PER_RELEASE = 500


class DueOrder:
    """Tracked traces whose times came from elsewhere (adopted from the store, put back after a failed
    release), in the order they fall due. They fit neither arrival order, so without it every release
    would look at each of them (100,000 after a long outage); here it looks only at those due, O(log n)
    each. Entries whose trace left or changed are skipped when they come up (lazy deletion)."""

    def __init__(self, due_at: Callable[[TracedItems], float]) -> None:
        self._due_at = due_at
        self._due: dict[str, float] = {}  # trace id -> when it is due (its live heap entry)
        self._traces: dict[str, TracedItems] = {}
        self._heap: list[tuple[float, int, str]] = []
        self._order = itertools.count()

    def __contains__(self, trace_id: str) -> bool:
        return trace_id in self._due

    def __len__(self) -> int:
        return len(self._due)

    def push(self, trace: TracedItems) -> None:
        """Add the trace, or place it again after its times changed."""
        due = self._due_at(trace)
        self._traces[trace.trace_id] = trace
        if self._due.get(trace.trace_id) == due:
            return
        self._due[trace.trace_id] = due
        heapq.heappush(self._heap, (due, next(self._order), trace.trace_id))
        if len(self._heap) > 2 * len(self._due) + 1_000:  # mostly stale entries: rebuild
            self._heap = [entry for entry in self._heap if self._due.get(entry[2]) == entry[0]]
            heapq.heapify(self._heap)

    def discard(self, trace_id: str) -> None:
        if self._due.pop(trace_id, None) is not None:
            del self._traces[trace_id]

    def next_due(self) -> float | None:
        """When the first trace is due (maybe earlier: a stale entry)."""
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now: float) -> TracedItems | None:
        """The next trace due at ``now``, out of the order; None when none is."""
        while self._heap:
            due, _, trace_id = self._heap[0]
            if self._due.get(trace_id) != due:
                heapq.heappop(self._heap)  # it left, or was placed again later
                continue
            if due > now:
                return None
            heapq.heappop(self._heap)
            del self._due[trace_id]
            return self._traces.pop(trace_id)
        return None


class ReleaseOrder:
    """The order in which tracked traces come due: the traces not yet quiet, by their last item; the
    tracked ones, by their first (read from ``tracked``); the adopted ones, by when they are due. Picks
    the traces ready at a time, new traffic before a share of the adopted."""

    def __init__(
        self, config: AssemblyConfig, tracked: TrackedTraces, adopted_per_release: int = ADOPTED_PER_RELEASE
    ) -> None:
        self._idle = config.idle_seconds
        self._max_wait = config.max_wait_seconds
        self._config = config  # max_held_bytes is read each time: the service lowers it at start
        self._tracked = tracked
        self._adopted_per_release = adopted_per_release
        # The tracked traces not yet quiet for idle_seconds, in the order of their last item (a quiet
        # one without an ended root leaves it and waits for max_wait or its next item).
        self._quiet: OrderedDict[str, TracedItems] = OrderedDict()
        self._by_due = DueOrder(self.due_at)  # those whose times came from elsewhere

    def due_at(self, trace: TracedItems) -> float:
        """When the trace is ready (monotonic seconds): quiet for ``idle_seconds`` once its root has
        ended or an earlier round took it; ``max_wait_seconds`` after its first item in any case."""
        due = trace.first_seen + self._max_wait
        if trace.root_ended or trace.late:
            due = min(due, trace.last_seen + self._idle)
        return due

    def ready_reason(self, trace: TracedItems, now: float) -> RoundReason | None:
        """Why the trace is ready at ``now`` (the reason its round carries); None while it is not."""
        quiet = trace.last_seen + self._idle <= now
        if trace.late and quiet:
            # The root went out with an earlier round: quiet is enough.
            return "late" if not trace.resumed else "recovered"
        if trace.root_ended and quiet:
            return "recovered" if trace.resumed else "idle"
        if trace.first_seen + self._max_wait <= now:
            return "max_wait"
        return None

    def arrived(self, trace: TracedItems) -> None:
        """The trace got a new item: it is quiet again only ``idle_seconds`` from its ``last_seen``."""
        if trace.trace_id in self._by_due:
            self._by_due.push(trace)  # its due time moved
        else:
            self._quiet[trace.trace_id] = trace
            self._quiet.move_to_end(trace.trace_id)

    def order_by_due(self, trace: TracedItems) -> None:
        """Order the trace by when it is due: its times are not those of its place in arrival order."""
        self._quiet.pop(trace.trace_id, None)
        self._by_due.push(trace)

    def discard(self, trace_id: str) -> None:
        """Forget the trace's place (it is released, taken or forgotten)."""
        self._quiet.pop(trace_id, None)
        self._by_due.discard(trace_id)

    def next_due(self) -> float:
        """When the next trace is due (monotonic seconds; maybe earlier, never later); inf if none."""
        due = [trace.last_seen + self._idle for trace in _first(self._quiet.values())]
        due.extend(trace.first_seen + self._max_wait for trace in _first(self._tracked))
        if (adopted := self._by_due.next_due()) is not None:
            due.append(adopted)
        return min(due, default=math.inf)

    def due(self, now: float, limit: int) -> list[tuple[TracedItems, RoundReason]]:
        """Up to ``limit`` traces ready at ``now``, looking only at the ones due (O(ready)): first
        those in arrival order, then at most ``adopted_per_release`` of those out of it; and no more
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
            if (reason := self.ready_reason(trace, now)) is None:
                return False
            ready.append((trace, reason))
            taken.add(trace.trace_id)
            size += trace.arrived_bytes
            return True

        while self._quiet and not full():
            trace = next(iter(self._quiet.values()))
            if trace.last_seen + self._idle > now:
                break
            del self._quiet[trace.trace_id]  # without an ended root it waits for max_wait (below)
            take(trace)
        adopted = 0  # traces out of arrival order taken
        for trace in self._tracked:  # oldest first item first
            if full() or trace.first_seen + self._max_wait > now:
                break
            if trace.trace_id in self._by_due:
                if adopted >= self._adopted_per_release:
                    break
                adopted += 1
            take(trace)
        while not full() and adopted < self._adopted_per_release:
            if (due := self._by_due.pop_due(now)) is None:
                break
            if not take(due):  # its times moved without being placed again: place it now
                self._by_due.push(due)
                break
            adopted += 1
        return ready


def _first(traces: Iterable[TracedItems]) -> list[TracedItems]:
    """The first of ``traces`` (none if empty)."""
    return list(itertools.islice(traces, 1))
