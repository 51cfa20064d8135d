"""The tracescore service: components wired in one direction, each with one lifecycle.

    receivers (gRPC, HTTP, Kafka) -> SpanSink (group commit: span_ledger, otel_traces) -> TraceAssembler
        -> RunBuilder (transform) -> ScoringExecutor (route, sample, execute)
        -> ClickHouseScoreSink (scores, score_decisions, trace_done)

Recovery keeps the durable watermark and, on start, adopts what the store holds undecided.

This module only wires them; each stage lives in the package of its step.

Start order is store first, receivers last; shutdown is the reverse, so every span accepted before
shutdown is stored, assembled, scored and written.
"""

from __future__ import annotations

import ipaddress
import logging
import time
from typing import Any

from ingest.assemble import TraceAssembler
from ingest.drift.monitor import DriftMonitor
from ingest.export import EvaluationEventExporter, exporting
from ingest.memory import MemoryGuard
from ingest.metrics import Metrics
from ingest.receivers.grpc import GrpcReceiver
from ingest.receivers.http import HttpReceiver
from ingest.receivers.kafka import KafkaReceiver
from ingest.recovery import Recovery
from ingest.replicas import Membership
from ingest.store.clickhouse import Store
from ingest.store.ledger import Ledger
from ingest.store.replicas import ReplicaTable
from ingest.store.results import ScoreResults
from ingest.store.score_sink import ClickHouseScoreSink
from ingest.store.span_sink import SpanSink
from ingest.summary import startup_summary
from ingest.transform.run_builder import RunBuilder
from schemas.config import ServiceConfig
from scoring.executor import ScoringExecutor
from scoring.judge import close_clients

log = logging.getLogger(__name__)

# The commit backlog's share of memory_limit: about 3 kB per decoded span, an eighth of the limit.
PENDING_ITEM_SHARE = 8 * 3_000
MIN_PENDING_ITEMS = 10_000
# The ring key whose owner among the live replicas runs the periodic drift pass.
DRIFT_KEY = "drift"


class Service:
    def __init__(self, config: ServiceConfig) -> None:
        self.config = config
        self.metrics = Metrics()
        self.store = Store.from_config(config)
        self.scores = ClickHouseScoreSink(self.store)
        self.ledger = Ledger(self.store)
        self.replicas = ReplicaTable(self.store)
        self.membership = Membership(self.replicas, config.replica, metrics=self.metrics)
        self.events = EvaluationEventExporter.configured(
            config.export.otlp, self.metrics.registry, self.membership.replica_id
        )
        self.executor = ScoringExecutor(
            config.scoring,
            sink=exporting(self.scores, self.events),  # score rows written also go out as OTLP events
            metrics=self.metrics.scoring,
            spend=self.scores,
            replica_id=self.membership.replica_id,
        )
        self.assembler = TraceAssembler(
            config.assembly,
            next=RunBuilder(self.executor, self.metrics, llm_calls=self.executor.wants_llm_calls),
            metrics=self.metrics,
            loader=self.ledger,
        )
        self.memory = MemoryGuard(
            int(config.memory_limit), self.metrics, busy=self._busy, relieve=self.assembler.spill_all
        )
        self.span_sink = sink = SpanSink(
            self.store,
            self.assembler,
            self.metrics,
            router=self.membership,
            admit=self.memory.admit,
            max_pending_items=max(MIN_PENDING_ITEMS, int(config.memory_limit) // PENDING_ITEM_SHARE),
        )
        self.recovery = Recovery(
            self.ledger,
            self.assembler,
            [sink.oldest_unhanded, self.assembler.oldest_open, self.executor.oldest_open],
            self.metrics,
            self.membership,
            self.replicas,
        )
        self.grpc = GrpcReceiver(config.receiver, next=sink, metrics=self.metrics, admit=self.memory.admit)
        self.http = HttpReceiver(
            config.receiver,
            next=sink,
            metrics=self.metrics,
            scores=ScoreResults(self.store),
            health=self,
            admit=self.memory.admit,
        )
        self.kafka = (
            KafkaReceiver(config.kafka, next=sink, metrics=self.metrics, limits=config.receiver)
            if config.kafka.enabled
            else None
        )
        backlog = self.metrics.backlog
        backlog.labels("commit").set_function(lambda: self.span_sink.uncommitted_items)
        backlog.labels("scoring_queue").set_function(lambda: self.executor.queued)
        backlog.labels("rows_buffered").set_function(lambda: self.executor.rows_buffered)
        self.metrics.recovery_remaining.set_function(lambda: self.assembler.resumed)
        self.drift = DriftMonitor(
            self.store,
            config.drift,
            self.executor.thresholds,
            registry=self.metrics.registry,
            leads=lambda: self.membership.owns(DRIFT_KEY),
        )
        self._started_at: float | None = None
        self._stopped = False

    async def start(self) -> None:
        await self.store.start()
        try:
            await self.executor.start()
            await self.assembler.start()
            await self.span_sink.start()
            await self.membership.start()  # the live replicas decide which traces are this one's
            await self.recovery.start()  # what the store holds undecided is adopted before new spans
            await self.grpc.start()
            await self.http.start()
            if self.kafka is not None:
                await self.kafka.start()
            self.drift.start()
        except BaseException:
            await self.shutdown()
            raise
        self._started_at = time.monotonic()
        receiver = self.config.receiver
        if not (receiver.auth_token or receiver.auth_token_file) and not _loopback(receiver.host):
            log.warning(
                "listening on %s without authentication: anyone who reaches the ports can send spans and "
                "read scores (set TRACESCORE_AUTH_TOKEN or receiver.auth_token_file)",
                receiver.host,
            )
        log.info(
            "%s",
            startup_summary(
                self.config,
                grpc_port=self.grpc.port,
                http_port=self.http.port,
                health_port=self.http.health_port,
                store=self.store.description,
                replica=self.membership.replica_id,
            ),
        )

    async def shutdown(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        await self.drift.shutdown()
        if self.kafka is not None:
            await self.kafka.shutdown()
        await self.grpc.shutdown()
        await self.http.shutdown()
        await self.span_sink.shutdown()
        await self._hand_off_held()
        await self.assembler.shutdown()
        await self.executor.shutdown()
        if self.events is not None:  # after the executor's last rows, so they are sent too
            await self.events.shutdown()
        await self.recovery.shutdown()
        await self.membership.leave()
        await close_clients()
        await self.store.shutdown()

    async def _hand_off_held(self) -> None:
        """With other replicas live, what this one holds goes to them rather than being scored
        before it is complete (what is left after a failed hand-off is scored on shutdown)."""
        if self.membership.solo:
            return
        try:
            await self.recovery.read_handoffs()
            handed = await self.recovery.hand_off_all()
            log.info("shutdown: %d trace(s) handed to the other replicas", handed)
        except Exception:
            log.warning("handing traces to the other replicas failed; scoring them now", exc_info=True)

    async def flush(self) -> None:
        """Score every trace held by the assembler now and wait until its scores are written."""
        await self.assembler.flush_all()
        await self.executor.drain()

    def _busy(self) -> bool:
        """Work in flight that will finish and free memory (refusing intake helps only then)."""
        return bool(
            self.span_sink.uncommitted_items
            or self.assembler.tracked
            or self.executor.queued
            or self.executor.rows_buffered
        )

    def ready(self) -> bool:
        """Spans can be taken and scored now: started, the store taking spans and score rows, Kafka
        holding partitions."""
        kafka_ok = self.kafka is None or self.kafka.state == "assigned"
        return (
            self._started_at is not None
            and not self._stopped
            and self.store.last_error is None
            and not self.store.free_space.refusing
            and self.executor.write_error is None
            and kafka_ok
        )

    def health(self) -> dict[str, Any]:
        """Each component's state, the backlog and the watermark lag (``/healthz``, ``/readyz``)."""
        uptime = time.monotonic() - self._started_at if self._started_at is not None else 0.0
        scoring = {
            "status": "failing" if self.executor.write_error else "ok",
            "error": self.executor.write_error,  # score and decision rows cannot be written (kept, retried)
        }
        components: dict[str, Any] = {
            "store": self.store.health(),
            "scoring": scoring,
            "replica": self.membership.health(),
        }
        if self.kafka is not None:
            components["kafka"] = self.kafka.health()
        return {
            "status": "ok" if self.ready() else "degraded",
            **components,
            "backlog": {
                "uncommitted_items": self.span_sink.uncommitted_items,
                "traces_tracked": self.assembler.tracked,
                "held_bytes": self.assembler.held_bytes,
                "scoring_queue": self.executor.queued,
                "runs_waiting_for_judge": self.executor.waiting_for_judge,
                "rows_buffered": self.executor.rows_buffered,
            },
            "memory": {
                "resident_bytes": self.memory.resident,
                "limit_bytes": self.memory.limit,
                "refusing": self.memory.refusing,
            },
            "recovery": self.recovery.progress(),
            "watermark_lag_seconds": round(max(0.0, (time.time_ns() - self.recovery.watermark()) / 1e9), 3),
            "uptime_seconds": round(uptime, 3),
        }


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
