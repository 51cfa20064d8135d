"""What the assembler keeps per trace, and how released traces become rounds.

A tracked trace may hold its items in memory, or only know of them (spilled, adopted by recovery,
seen before): then the round is built from the span ledger, merged with what memory holds. The
store is asked about a whole release at once, never about one trace at a time.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from tracescore.ingest.store.ledger import PriorRounds, StoredTrace
from tracescore.schemas import LogRecord, RoundReason, Span, TraceRound
from tracescore.schemas.consumers import PriorOutcomes

# Log records with neither timestamp cannot be told from one another cheaply; each gets its own key.
_untimed = itertools.count()


def item_key(item: Span | LogRecord) -> Hashable:
    """Identifies an item well enough to hold an identical re-send once."""
    if isinstance(item, Span):
        return item.span_id
    if not item.time_unix_nano and not item.observed_time_unix_nano:
        return ("untimed", next(_untimed))
    return (
        item.span_id,
        item.time_unix_nano,
        item.observed_time_unix_nano,
        item.event_name,
        item.severity_number,
    )


class TraceLoader(Protocol):
    """Where the assembler reads traces back (``ingest.store.ledger.Ledger``)."""

    async def load(self, trace_ids: Sequence[str]) -> dict[str, StoredTrace]: ...

    async def status(self, trace_ids: Sequence[str]) -> dict[str, PriorRounds]: ...

    async def prior_outcomes(self, since: Mapping[str, int]) -> dict[str, PriorOutcomes]: ...


@dataclass(eq=False, slots=True)  # slots: up to assembly.max_traces of them are tracked at once
class TracedItems:
    """One tracked trace: when its items came (monotonic and ledger time), and those held in memory."""

    trace_id: str
    first_seen: float  # monotonic seconds
    last_seen: float
    since: int  # ns: the earliest arrival of the items of the coming round
    through: int = 0  # ns: the latest arrival
    root_ended: bool = False
    late: bool = False  # a round of it was released before
    stored: bool = False  # the ledger holds items memory does not: read it when released
    resumed: bool = False  # adopted by recovery: an earlier attempt may have written decisions
    spilled: bool = False  # its items left memory; new ones are not held either
    overflowed: bool = False
    items: dict[Hashable, Span | LogRecord] = field(default_factory=dict)  # in arrival order
    held_bytes: int = 0
    span_count: int = 0
    arrived_bytes: int = 0  # stored size of the items that came for this round, held or not

    def hold(self, key: Hashable, item: Span | LogRecord, size: int) -> None:
        self.items[key] = item
        self.held_bytes += size
        if isinstance(item, Span):
            self.span_count += 1

    def drop_items(self) -> None:
        """Let go of the held items (the ledger has them all)."""
        self.items.clear()
        self.held_bytes = 0
        self.span_count = 0


def due_at(trace: TracedItems, idle_seconds: float, max_wait_seconds: float) -> float:
    """When the trace is ready (monotonic seconds): quiet for ``idle_seconds`` once its root has ended
    or an earlier round took it; ``max_wait_seconds`` after its first item in any case."""
    due = trace.first_seen + max_wait_seconds
    if trace.root_ended or trace.late:
        due = min(due, trace.last_seen + idle_seconds)
    return due


class DueOrder:
    """Tracked traces whose times came from elsewhere (adopted from the store, put back after a failed
    release), in the order they fall due. They fit neither arrival order, so without it every release
    would look at each of them (100,000 after a long outage); here it looks only at those due, O(log n)
    each. Entries whose trace left or changed are skipped when they come up (lazy deletion)."""

    def __init__(self, idle_seconds: float, max_wait_seconds: float) -> None:
        self._idle = idle_seconds
        self._max_wait = max_wait_seconds
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
        due = due_at(trace, self._idle, self._max_wait)
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


def round_of(
    trace: TracedItems,
    reason: RoundReason,
    status: PriorRounds | None,
    stored: StoredTrace | None,
    max_items: int,
) -> tuple[TraceRound, list[Span], list[LogRecord]]:
    """The round of a released trace and its items (from memory, merged with the ledger's if read)."""
    done_through = status.done_through if status is not None else 0
    resumed = trace.resumed or (status is not None and status.has_decisions)
    if stored is None:
        spans = [item for item in trace.items.values() if isinstance(item, Span)]
        logs = [item for item in trace.items.values() if isinstance(item, LogRecord)]
        round = TraceRound(
            trace_id=trace.trace_id,
            since_unix_nano=trace.since,
            through_unix_nano=trace.through,
            reason=reason,
            resumed=resumed,
        )
        return round, spans, logs
    # The first arrival of each item counts: a copy sent again after the trace was decided is not new.
    first: dict[Hashable, tuple[int, Span | LogRecord]] = {}
    arrivals: list[tuple[int, Span | LogRecord]] = [*stored.spans, *stored.logs]
    for arrived, item in sorted(arrivals, key=lambda pair: pair[0]):
        first.setdefault(item_key(item), (arrived, item))
    for key, item in trace.items.items():
        first.setdefault(key, (trace.through, item))
    new = [arrived for arrived, _ in first.values() if arrived > done_through]
    kept = list(first.values())[:max_items]
    round = TraceRound(
        trace_id=trace.trace_id,
        since_unix_nano=min(new, default=trace.since),
        through_unix_nano=max([trace.through, *(arrived for arrived, _ in first.values())]),
        reason=reason,
        resumed=resumed,
        unchanged=done_through > 0 and not new,
    )
    spans = [item for _, item in kept if isinstance(item, Span)]
    logs = [item for _, item in kept if isinstance(item, LogRecord)]
    return round, spans, logs


async def rounds_of(
    ready: Sequence[tuple[TracedItems, RoundReason]], loader: TraceLoader | None, max_items: int
) -> list[tuple[TraceRound, list[Span], list[LogRecord]]]:
    """The rounds of released traces and their items, with what the store knows of them: at most
    three queries for the whole release, each waiting for the store's worker once (the traces'
    status; the items of those it holds more of than memory; what earlier attempts wrote, for the
    traces it says have rows)."""
    status: dict[str, PriorRounds] = {}
    stored: dict[str, StoredTrace] = {}
    if loader is not None:
        status = await loader.status([trace.trace_id for trace, _ in ready])
        to_load = [t.trace_id for t, _ in ready if t.stored or t.trace_id in status]
        stored = await loader.load(to_load)
    rounds = [
        round_of(trace, reason, status.get(trace.trace_id), stored.get(trace.trace_id), max_items)
        for trace, reason in ready
    ]
    if loader is None:
        return rounds  # no store: the executor asks its sink about a resumed round
    written = {
        round.trace_id: round.through_unix_nano
        for round, _, _ in rounds
        if round.resumed and (known := status.get(round.trace_id)) is not None and known.has_rows
    }
    prior = await loader.prior_outcomes(written) if written else {}
    # A resumed round the store knows no rows of carries that (nothing to reuse): not asked again.
    return [
        (round.model_copy(update={"prior": prior.get(round.trace_id, PriorOutcomes())}), spans, logs)
        if round.resumed
        else (round, spans, logs)
        for round, spans, logs in rounds
    ]
