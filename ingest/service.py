"""The tracescore service: components wired in one direction, each with one lifecycle.

    receivers (gRPC, HTTP, Kafka) -> SpanSink (otel_traces) -> TraceAssembler -> RunBuilder (transform)
        -> ScoringExecutor (route, sample, execute) -> Store (scores, score_decisions)

Start order is store first, receivers last; shutdown is the reverse, so every span accepted before
shutdown is stored, assembled, scored and written.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import Any

from ingest.assemble import TraceAssembler
from ingest.consumers import RunConsumer, SpanConsumer
from ingest.metrics import Metrics
from ingest.receivers.grpc import GrpcReceiver
from ingest.receivers.http import HttpReceiver
from ingest.receivers.kafka import KafkaReceiver
from ingest.store import Store
from ingest.transform import build_runs
from schemas.config import ServiceConfig
from schemas.spans import LogRecord, Span, SpanBatch
from scoring.executor import ScoringExecutor
from scoring.judge import close_clients

log = logging.getLogger(__name__)


class SpanSink:
    """Stores each batch in ``otel_traces`` before handing it on: a span is durable once accepted."""

    def __init__(self, store: Store, next: SpanConsumer, metrics: Metrics) -> None:
        self._store = store
        self._next = next
        self._metrics = metrics

    async def consume_spans(self, batch: SpanBatch) -> None:
        if not batch.spans and not batch.logs:
            return
        if batch.spans:
            await self._store.insert_spans(batch.spans)
            self._metrics.spans_stored.inc(len(batch.spans))
        if batch.logs:
            await self._store.insert_logs(batch.logs)
            self._metrics.logs_stored.inc(len(batch.logs))
        await self._next.consume_spans(batch)


class RunBuilder:
    """Turns an assembled trace into AgentRuns and forwards them."""

    def __init__(self, next: RunConsumer, metrics: Metrics) -> None:
        self._next = next
        self._metrics = metrics

    async def consume_trace(self, spans: Sequence[Span], logs: Sequence[LogRecord] = ()) -> None:
        runs = await asyncio.to_thread(build_runs, list(spans), list(logs))
        self._metrics.runs_built.inc(len(runs))
        if runs:
            await self._next.consume_runs(runs)


class Service:
    def __init__(self, config: ServiceConfig) -> None:
        self.config = config
        self.metrics = Metrics()
        self.store = Store(config.store)
        self.executor = ScoringExecutor(config.scoring, sink=self.store, metrics=self.metrics)
        self.assembler = TraceAssembler(
            config.assembly, next=RunBuilder(self.executor, self.metrics), metrics=self.metrics
        )
        sink = SpanSink(self.store, self.assembler, self.metrics)
        self.grpc = GrpcReceiver(config.receiver, next=sink, metrics=self.metrics)
        self.http = HttpReceiver(
            config.receiver, next=sink, metrics=self.metrics, scores=self.store, health=self._health
        )
        self.kafka = (
            KafkaReceiver(config.kafka, next=sink, metrics=self.metrics) if config.kafka.enabled else None
        )
        self._started_at: float | None = None
        self._stopped = False

    async def start(self) -> None:
        await self.store.start()
        try:
            await self.executor.start()
            await self.assembler.start()
            await self.grpc.start()
            await self.http.start()
            if self.kafka is not None:
                await self.kafka.start()
        except BaseException:
            await self.shutdown()
            raise
        self._started_at = time.monotonic()
        log.info(
            "tracescore serving OTLP/gRPC on %s:%d, OTLP/HTTP on %s:%d, store %s",
            self.config.receiver.host,
            self.grpc.port,
            self.config.receiver.host,
            self.http.port,
            self.store.description,
        )

    async def shutdown(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        if self.kafka is not None:
            await self.kafka.shutdown()
        await self.grpc.shutdown()
        await self.http.shutdown()
        await self.assembler.shutdown()
        await self.executor.shutdown()
        await close_clients()
        await self.store.shutdown()

    async def flush(self) -> None:
        """Score every trace held by the assembler now and wait until its scores are written."""
        await self.assembler.flush_all()
        await self.executor.drain()

    def _health(self) -> dict[str, Any]:
        uptime = time.monotonic() - self._started_at if self._started_at is not None else 0.0
        return {"store": self.store.description, "uptime_seconds": round(uptime, 3)}
