"""Rounds in flight: which assembled trace rounds the executor is deciding, and which are decided.

A round is finished when every run of it has its decisions in the executor's buffer; it is closed
once its ``trace_done`` mark is written, after those decisions. Until then its ``since`` holds the
service's watermark back, so a crash before the mark makes recovery score it again (reusing what
was already written).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from tracescore.schemas import TraceRound

_ids = itertools.count()


@dataclass(eq=False)
class RoundState:
    round: TraceRound
    pending: int = 0  # runs x scorers queued and not yet decided
    submitted: bool = False  # every run of the round has been routed
    finished: bool = False
    # Some of its rows were refused by the store for good: it is never marked done by this process,
    # so it holds the watermark and the next start scores the trace again.
    set_aside: bool = False
    key: int = field(default_factory=lambda: next(_ids))


class RoundTracker:
    def __init__(self) -> None:
        self._open: dict[int, RoundState] = {}
        self._finished: list[RoundState] = []

    def open(self, round: TraceRound) -> RoundState:
        state = RoundState(round)
        self._open[state.key] = state
        return state

    def queued(self, state: RoundState) -> None:
        state.pending += 1

    def decided(self, state: RoundState) -> None:
        """One queued job of the round is decided (its decision is buffered)."""
        state.pending -= 1
        self._finish_if_complete(state)

    def routed(self, state: RoundState) -> None:
        """Every run of the round is routed (its jobs queued or its decisions buffered)."""
        state.submitted = True
        self._finish_if_complete(state)

    def has_finished(self) -> bool:
        return bool(self._finished)

    def take_finished(self) -> list[RoundState]:
        """The rounds whose decisions are all buffered (or written), to mark done after them."""
        finished, self._finished = self._finished, []
        return finished

    def put_back(self, states: list[RoundState]) -> None:
        """Their mark could not be written: keep them for the next flush, before newer ones."""
        self._finished[:0] = states

    def set_aside(self, states: list[RoundState], trace_ids: set[str]) -> int:
        """Keep ``states``, and every open round of ``trace_ids``, open until the process ends: rows
        of theirs were refused for good. Returns how many rounds that holds back."""
        held = 0
        for state in states:
            state.set_aside = True
            self._open[state.key] = state
        for state in self._open.values():
            if state.round.trace_id in trace_ids:
                state.set_aside = True
            held += state.set_aside
        return held

    def abandon(self, state: RoundState) -> None:
        """Forget a round that will be handed in again (its routing failed on a retriable error): it
        is never marked done, and no longer holds the watermark (whoever retries it does)."""
        state.set_aside = True
        self._open.pop(state.key, None)

    def close(self, states: list[RoundState]) -> None:
        """Their marks are written (or given up): they no longer hold the watermark back."""
        for state in states:
            self._open.pop(state.key, None)

    def oldest_open(self) -> int | None:
        """The ``since`` of the oldest round not yet marked done (ns)."""
        return min((state.round.since_unix_nano for state in self._open.values()), default=None)

    def _finish_if_complete(self, state: RoundState) -> None:
        if state.submitted and state.pending == 0 and not state.finished:
            state.finished = True
            if not state.set_aside:
                self._finished.append(state)
