"""What the assembler keeps per trace, and how a released trace becomes a round.

A tracked trace may hold its items in memory, or only know of them (spilled, adopted by recovery,
seen before): then the round is built from the span ledger, merged with what memory holds.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable
from dataclasses import dataclass, field

from ingest.store.ledger import StoredTrace, TraceStatus
from schemas import LogRecord, RoundReason, Span, TraceRound

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


def round_of(
    trace: TracedItems,
    reason: RoundReason,
    status: TraceStatus | None,
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
