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
from typing import TYPE_CHECKING, Any

from tracescore.ingest.alerting.agreement_monitor import AgreementMonitor
from tracescore.ingest.alerting.drift_monitor import DriftMonitor
from tracescore.ingest.assembly.assembler import TraceAssembler
from tracescore.ingest.observability.service_metrics import Metrics
from tracescore.ingest.observability.startup_summary import startup_summary
from tracescore.ingest.receivers.annotation_routes import AnnotationRoutes
from tracescore.ingest.receivers.commands import StoreCommands
from tracescore.ingest.receivers.grpc import MESSAGE_COPIES, GrpcReceiver
from tracescore.ingest.receivers.http import HttpReceiver
from tracescore.ingest.receivers.memory_admission import MemoryGuard, Rest, mib, resident_parts
from tracescore.ingest.receivers.memory_sizing import (
    SET_ASIDE_BYTES,
    check_limit,
    grpc_streams,
    room_left,
    size_assembly,
)
from tracescore.ingest.replay.recovery import Recovery
from tracescore.ingest.replication.membership import Membership
from tracescore.ingest.score_export import EvaluationEventExporter, exporting
from tracescore.ingest.sessions.session_monitor import SessionMonitor, split_session_rules
from tracescore.ingest.sessions.session_recorder import PendingSessionRuns, SessionRecorder, SessionRunsSink
from tracescore.ingest.sessions.session_store import SessionStore
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.ledger import Ledger
from tracescore.ingest.store.replica_table import ReplicaTable
from tracescore.ingest.store.score_reads import ScoreResults
from tracescore.ingest.store.score_sink import ClickHouseScoreSink
from tracescore.ingest.store.span_sink import SpanSink
from tracescore.ingest.transform.run_builder import RunBuilder
from tracescore.schemas.config import ServiceConfig
from tracescore.schemas.consumers import RunConsumer
from tracescore.scoring.judge import close_clients
from tracescore.scoring.runtime.executor import ScoringExecutor
from tracescore.scoring.runtime.rule_routing import rule_versions

if TYPE_CHECKING:
    from tracescore.ingest.receivers.kafka import KafkaReceiver

log = logging.getLogger(__name__)

# The commit backlog's share of memory_limit: about 3 kB per decoded span, an eighth of the limit.
PENDING_ITEM_SHARE = 8 * 3_000
MIN_PENDING_ITEMS = 10_000
# The ring key whose owner among the live replicas runs the periodic drift pass.
DRIFT_KEY = "drift"
AGREEMENT_KEY = "agreement"  # and the periodic agreement pass


class Service:
    def __init__(self, config: ServiceConfig) -> None:
        self.config = config
        self.metrics = Metrics()
        self.store = Store.from_config(config)
        self.score_sink = ClickHouseScoreSink(self.store)
        self.scores = ScoreResults(self.store)  # the rows written, as users read them
        self.ledger = Ledger(self.store)
        self.replicas = ReplicaTable(self.store)
        self.membership = Membership(self.replicas, config.replica, metrics=self.metrics)
        self.events = EvaluationEventExporter.configured(
            config.export.otlp, self.metrics.registry, self.membership.replica_id
        )
        scores_out = exporting(self.score_sink, self.events)  # score rows written also go out as OTLP events
        runs_scoring, session_scoring = split_session_rules(config.scoring)
        self.sessions = SessionStore(self.store)
        pending_sessions = PendingSessionRuns()
        self.executor = ScoringExecutor(
            runs_scoring,
            sink=SessionRunsSink(scores_out, pending_sessions, self.sessions)
            if session_scoring
            else scores_out,
            metrics=self.metrics.scoring,
            spend=self.score_sink,
            replica_id=self.membership.replica_id,
        )
        # Whole conversations (target: session rules), scored by the completion pass.
        self.session_monitor: SessionMonitor | None = None
        scored_runs: RunConsumer = self.executor
        if session_scoring is not None:
            scored_runs = SessionRecorder(self.executor, pending_sessions)
            self.session_monitor = SessionMonitor(
                self.sessions,
                self.ledger,
                config.session,
                session_scoring,
                scores_out,
                self.metrics.scoring,
                spend=self.score_sink,
                replica_id=self.membership.replica_id,
                owns=self.membership.owns,
                max_spans=config.assembly.max_spans_per_trace,
                registry=self.metrics.registry,
            )
        self.assembler = TraceAssembler(
            config.assembly,
            next=RunBuilder(scored_runs, self.metrics, llm_calls=self.executor.wants_llm_calls),
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
        self.grpc = GrpcReceiver(config.receiver, next=sink, metrics=self.metrics, memory=self.memory)
        self.http = HttpReceiver(
            config.receiver,
            next=sink,
            metrics=self.metrics,
            scores=self.scores,
            health=self,
            memory=self.memory,
            commands=StoreCommands(self.store, config, self.executor.rule_groups, self.executor.thresholds),
            api_routes=[AnnotationRoutes(self.store, config, self.metrics)],
        )
        self.kafka: KafkaReceiver | None = None
        if config.kafka.enabled:
            from tracescore.ingest.receivers.kafka import KafkaReceiver  # its client is only loaded when used

            self.kafka = KafkaReceiver(
                config.kafka, next=sink, metrics=self.metrics, limits=config.receiver, memory=self.memory
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
        self.agreement = AgreementMonitor(
            self.store,
            config.agreement,
            config.drift,
            metrics=self.metrics.agreement,
            leads=lambda: self.membership.owns(AGREEMENT_KEY),
        )
        self._started_at: float | None = None
        self._stopped = False

    async def start(self) -> None:
        # The rest size before the store opens, the same at every start: a limit too low is refused
        # before the store is touched, and one accepted once is accepted after any crash.
        rest = self.memory.measure_rest(SET_ASIDE_BYTES)
        check_limit(int(self.config.memory_limit), self.config.receiver.max_request_bytes, rest)
        await self.store.start()
        try:
            await self.executor.start()
            await self.assembler.start()
            await self.span_sink.start()
            await self.membership.start()  # the live replicas decide which traces are this one's
            await self.recovery.start()  # what the store holds undecided is adopted before new spans
            # Before the first request; what recovery adopted is admitted work, not rest.
            self._fit_memory(await self.memory.settle())
            await self.grpc.start()
            await self.http.start()
            if self.kafka is not None:
                await self.kafka.start()
            await self.drift.start()
            if self.session_monitor is not None:
                await self.session_monitor.start()
            await self.agreement.start()
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
                versions=rule_versions(self.executor.rule_groups),
            ),
        )

    def _fit_memory(self, rest: Rest) -> None:
        """Size the bounds that come out of what the limit leaves beside the rest size, what is set
        aside and one request (``ingest.receivers.memory_sizing``)."""
        limit, largest = int(self.config.memory_limit), self.config.receiver.max_request_bytes
        room, request = room_left(limit, largest, rest)
        assembly = self.config.assembly
        size_assembly(assembly, limit, room)
        self.grpc.max_streams = grpc_streams(room, request, largest, MESSAGE_COPIES)
        if self.kafka is not None:
            self.kafka.fit_fetches(room + request)
        log.info(
            "memory: %s before the store opened, %s once started (and %s mapped from library files, not "
            "counted) of memory_limit %s; held spans up to %s as stored, %d traces tracked; requests are "
            "admitted as their cost fits",
            mib(rest.resident),
            mib(rest.started),
            mib(resident_parts().get("file_backed_bytes", 0)),
            mib(limit),
            mib(assembly.max_held_bytes),
            assembly.max_traces,
        )

    async def shutdown(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        await self.drift.shutdown()
        if self.session_monitor is not None:
            await self.session_monitor.shutdown()
        await self.agreement.shutdown()
        if self.kafka is not None:
            await self.kafka.shutdown()
        await self.grpc.shutdown()
        await self.http.shutdown()
        await self.span_sink.shutdown()
        await self._hand_off_held()
        await self.assembler.shutdown()
        await self.executor.shutdown()
        if self.session_monitor is not None:
            await self.session_monitor.shutdown_executor()
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
        holding partitions. Score rows that waited only for the disk are written at their next try,
        a moment after it takes writes again: ready from the poll that sees space back."""
        kafka_ok = self.kafka is None or self.kafka.state == "assigned"
        refusing = self.store.free_space.refusing
        rows_ok = self.executor.write_error is None or (self.executor.write_waits_for_store and not refusing)
        return (
            self._started_at is not None
            and not self._stopped
            and self.store.last_error is None
            and not refusing
            and rows_ok
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
                "resident_bytes": self.memory.resident,  # what memory_limit bounds (anonymous)
                "limit_bytes": self.memory.limit,
                "rest_bytes": self.memory.rest.resident if self.memory.rest else None,  # before the store
                "started_bytes": self.memory.rest.started if self.memory.rest else None,
                "reserved_bytes": self.memory.reserved,  # by the requests in flight
                "admittable_bytes": self.memory.admittable,  # the largest request cost it can take
                "file_backed_bytes": resident_parts().get("file_backed_bytes"),  # library code, not counted
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
