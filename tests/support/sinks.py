"""A recording ScoreSink for executor tests: our own protocol, so no store is needed to watch it."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Protocol

from tracescore.schemas import Decision, ScoreRecord, TraceRound
from tracescore.schemas.consumers import PriorOutcomes


class RecordingSink:
    """A ScoreSink that keeps every write; fails its first ``fail_first`` writes with ``error``."""

    def __init__(self, fail_first: int = 0, error: Exception | None = None) -> None:
        self.writes: list[tuple[list[ScoreRecord], list[Decision]]] = []
        self.fail_first = fail_first
        self.error = error or ConnectionError("store down")
        self.attempts = 0
        self.done: list[TraceRound] = []  # rounds marked done, in order
        self.prior: dict[str, PriorOutcomes] = {}  # what an earlier attempt wrote, by trace id
        self.prior_asked: list[str] = []  # the trace ids asked about, in order

    async def write_scores(self, records: Sequence[ScoreRecord], decisions: Sequence[Decision]) -> None:
        self.attempts += 1
        if self.fail_first:
            self.fail_first -= 1
            raise self.error
        self.writes.append((list(records), list(decisions)))

    @property
    def records(self) -> list[ScoreRecord]:
        return [record for records, _ in self.writes for record in records]

    @property
    def decisions(self) -> list[Decision]:
        return [decision for _, decisions in self.writes for decision in decisions]

    def kinds(self) -> dict[tuple[str, str], str]:
        """(trace id, scorer id) -> decision kind."""
        return {(d.trace_id, d.scorer_id): d.decision for d in self.decisions}

    async def mark_done(self, rounds: Sequence[TraceRound]) -> None:
        self.done.extend(rounds)

    async def prior_outcomes(self, trace_id: str, since_unix_nano: int) -> PriorOutcomes:
        self.prior_asked.append(trace_id)
        return self.prior.get(trace_id, PriorOutcomes())


class Draining(Protocol):
    async def drain(self) -> None: ...


async def until_done(executor: Draining, sink: RecordingSink, limit_s: float = 10.0) -> None:
    """Drain ``executor`` until ``sink`` has a round marked done (runs waiting for their judge are
    tried again after a backoff), for up to ``limit_s``."""
    for _ in range(int(limit_s / 0.05)):
        if sink.done:
            return
        await executor.drain()
        await asyncio.sleep(0.05)
