"""The transform stage of the pipeline: an assembled trace -> AgentRuns, forwarded to the next consumer."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ingest.metrics import Metrics
from ingest.transform.runs import build_runs
from schemas import LogRecord, Span, TraceRound
from schemas.consumers import RunConsumer


class RunBuilder:
    """Turns an assembled trace into AgentRuns (in a worker thread) and forwards them."""

    def __init__(self, next: RunConsumer, metrics: Metrics) -> None:
        self._next = next
        self._metrics = metrics

    async def consume_trace(
        self, spans: Sequence[Span], logs: Sequence[LogRecord] = (), round: TraceRound | None = None
    ) -> None:
        if round is not None and round.unchanged:
            runs = []  # only copies of what was decided: the executor marks the round done
        else:
            runs = await asyncio.to_thread(build_runs, list(spans), list(logs))
        self._metrics.runs_built.inc(len(runs))
        if runs or round is not None:  # a round without runs is still marked done
            await self._next.consume_runs(runs, round)
