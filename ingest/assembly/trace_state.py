"""What the assembler knows of one tracked trace: when its items came, those it holds in memory, and the
facts that decide its round (root ended, released before, read from the store, adopted by recovery).

A tracked trace may hold its items in memory, or only know of them (spilled, adopted by recovery, seen
before): then its round is built from the span ledger, merged with what memory holds
(``ingest.assembly.trace_rounds``).
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable
from dataclasses import dataclass, field

from tracescore.ingest.store.ledger import Undecided
from tracescore.schemas import LogRecord, Span

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


def _earliest(since: int, arrived: int) -> int:
    """The earlier of two arrivals (ns); a ``since`` of 0 is none yet."""
    return min(since, arrived) if since else arrived


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
    overflowed: bool = False  # it reached max_spans_per_trace (warned once)
    items: dict[Hashable, Span | LogRecord] = field(default_factory=dict)  # in arrival order
    held_bytes: int = 0
    span_count: int = 0
    arrived_bytes: int = 0  # stored size of the items that came for this round, held or not

    def arrive(self, arrived: int, seen: float, size: int, ends_root: bool) -> None:
        """An item new to the trace came: stored at ``arrived`` (ns), seen at ``seen`` (monotonic)."""
        self.last_seen = seen
        self.arrived_bytes += size
        self.since = _earliest(self.since, arrived)
        self.through = max(self.through, arrived)
        self.root_ended = self.root_ended or ends_root

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

    def spill(self) -> None:
        """Let go of the held items and hold no more: the round is read from the ledger."""
        self.drop_items()
        self.stored = self.spilled = True

    def merge_stored(self, found: Undecided) -> None:
        """Take in what the store holds undecided of the trace (recovery, hand-offs): its round is
        read from the ledger."""
        self.since = _earliest(self.since, found.first_arrived)
        self.through = max(self.through, found.last_arrived)
        self.root_ended = self.root_ended or found.root_ended
        self.late = self.late or found.done_through > 0
        self.stored = True

    def take_over(self, failed: TracedItems) -> None:
        """Take in a round of the trace that failed to go out while this one gathered new items: the
        next round reads the whole trace from the store."""
        self.stored = True
        self.since = _earliest(self.since, failed.since)
        self.root_ended = self.root_ended or failed.root_ended
