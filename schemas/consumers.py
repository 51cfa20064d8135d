"""The one-method protocols pipeline components forward to (receiver -> sink -> assembler -> ...).

Behaviour is added by wrapping a ``next`` consumer, never by subclassing a component. A consumer
that fails raises; whoever called it decides what to do from ``schemas.errors.is_retriable`` (wait
and retry, or record the failure and move on), so a consumer raises a ``TracescoreError`` whose
``retriable`` says which, when it knows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from tracescore.schemas import AgentRun, Decision, LogRecord, ScoreRecord, Span, SpanBatch, TraceRound
from tracescore.schemas.assembly_rounds import (
    PriorOutcomes as PriorOutcomes,  # re-exported: the sinks' protocol uses it
)
from tracescore.schemas.trace_view import TraceView


class SpanConsumer(Protocol):
    async def consume_spans(self, batch: SpanBatch) -> None:
        """Take a decoded batch. Returning means the spans are durably stored (or safely handed on)."""


class TraceConsumer(Protocol):
    async def consume_trace(
        self, spans: Sequence[Span], logs: Sequence[LogRecord] = (), round: TraceRound | None = None
    ) -> None:
        """Take the spans of one assembled trace (a run is ready: root ended and trace quiet), with
        the log records correlated with them, and the round they make (None outside the service)."""


class RunConsumer(Protocol):
    async def consume_runs(
        self, runs: Sequence[AgentRun], round: TraceRound | None = None, trace: TraceView | None = None
    ) -> None:
        """Take the agent runs built from one trace (``round``: which items they were built from;
        ``trace``: its spans and model-call units, for span filters and targets)."""


class ScoreSink(Protocol):
    async def write_scores(self, records: Sequence[ScoreRecord], decisions: Sequence[Decision]) -> None:
        """Persist score rows and decision rows. After a retriable error the caller writes the same rows
        again; they replace the ones already written (deterministic ids), never add to them."""

    async def mark_done(self, rounds: Sequence[TraceRound]) -> None:
        """Record that every run of these rounds has its decisions written (called after them)."""

    async def prior_outcomes(self, trace_id: str, since_unix_nano: int) -> PriorOutcomes:
        """The decisions and scores written for the trace at or after ``since_unix_nano``."""


@dataclass(frozen=True)
class SpendRow:
    """One replica's judge spend against one budget in one UTC clock hour (``judge_spend``)."""

    budget: str  # a rule's scorer id, or "*" for all rules
    replica: str
    hour: int  # the hour's start, Unix seconds
    calls: int
    usd: float


class SpendStore(Protocol):
    async def save_spend(self, rows: Sequence[SpendRow]) -> None:
        """Replace each (budget, replica, hour)'s totals with these."""

    async def load_spend(self, since_unix: int) -> list[SpendRow]:
        """Every replica's spend of the hours starting at or after ``since_unix``."""
