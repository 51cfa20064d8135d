"""The traces the assembler released: those whose rounds are being handed on, and how far the last
round of each recently released one reached. A later item of such a trace makes a late round, read
whole from the store; an adopted trace whose undecided items all went out in a round released here is
left alone (that round's decisions are on their way).
"""

from __future__ import annotations

from collections import OrderedDict

from tracescore.ingest.assembly.trace_state import TracedItems


class ReleasedTraces:
    """Rounds being handed on, by trace id, and a bounded LRU of released trace ids -> the latest
    arrival (ns) their last round covered (a late item of a trace forgotten here is found in the store
    when its round is released)."""

    def __init__(self, remembered: int) -> None:
        self._remembered = remembered
        self._releasing: dict[str, TracedItems] = {}
        self._released: OrderedDict[str, int] = OrderedDict()

    def begin(self, trace: TracedItems) -> None:
        """A round of the trace is on its way out."""
        self._releasing[trace.trace_id] = trace

    def record(self, trace: TracedItems) -> None:
        """Remember that the trace was released through its ``through``, forgetting the oldest id
        beyond ``remembered``."""
        self._released[trace.trace_id] = trace.through
        self._released.move_to_end(trace.trace_id)
        while len(self._released) > self._remembered:
            self._released.popitem(last=False)

    def settle(self, trace_id: str) -> TracedItems | None:
        """The trace's release is over (handed on, or failed); returns it if it was under way."""
        return self._releasing.pop(trace_id, None)

    def seen(self, trace_id: str) -> bool:
        """Whether a round of the trace is going out or was released (as far as remembered)."""
        return trace_id in self._released or trace_id in self._releasing

    def released_through(self, trace_id: str) -> int | None:
        """The latest arrival (ns) the trace's last round covers, going out or released; None if none
        is remembered."""
        releasing = self._releasing.get(trace_id)
        return releasing.through if releasing is not None else self._released.get(trace_id)

    def resumed_under_way(self) -> int:
        """Traces adopted by recovery whose rounds are being handed on."""
        return sum(trace.resumed for trace in self._releasing.values())

    def oldest_under_way(self) -> int | None:
        """The oldest arrival (ns) of the rounds being handed on."""
        return min((trace.since for trace in self._releasing.values() if trace.since), default=None)
