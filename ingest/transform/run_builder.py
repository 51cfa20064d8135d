"""The transform stage of the pipeline: an assembled trace -> AgentRuns, forwarded to the next consumer."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from tracescore.ingest.observability.service_metrics import Metrics
from tracescore.ingest.transform.scoring_units import build_units
from tracescore.schemas import AgentRun, LogRecord, Span, TraceRound
from tracescore.schemas.consumers import RunConsumer
from tracescore.schemas.trace_view import TraceView

# A trace of at most this many spans and log records is built on the event loop: about 0.2 ms a span
# (a 3-span GenAI trace: 0.7 ms, measured), less than the hop to a thread and back, which under load
# also waits for the interpreter lock. Larger traces are built in a worker thread.
INLINE_MAX_ITEMS = 16


class RunBuilder:
    """Turns an assembled trace into AgentRuns (a large one in a worker thread) and forwards them."""

    def __init__(self, next: RunConsumer, metrics: Metrics, *, llm_calls: bool = False) -> None:
        self._next = next
        self._metrics = metrics
        self._llm_calls = llm_calls  # a rule scores single model calls: build a unit per call

    async def consume_trace(
        self, spans: Sequence[Span], logs: Sequence[LogRecord] = (), round: TraceRound | None = None
    ) -> None:
        if round is not None and round.unchanged:
            # Only copies of what was decided: the executor marks the round done.
            runs: list[AgentRun] = []
            trace = TraceView(spans={})
        elif len(spans) + len(logs) <= INLINE_MAX_ITEMS:
            runs, trace = build_units(list(spans), list(logs), llm_calls=self._llm_calls)
        else:
            runs, trace = await asyncio.to_thread(
                build_units, list(spans), list(logs), llm_calls=self._llm_calls
            )
        self._metrics.runs_built.inc(len(runs))
        if runs or trace.llm_calls or round is not None:  # a round without runs is still marked done
            await self._next.consume_runs(runs, round, trace)
