"""Scores as OpenTelemetry events: every score row the store took also goes out over OTLP as one
``gen_ai.evaluation.result`` event (a log record) parented to the span it evaluates, so a collector,
Tempo or Jaeger shows it beside the trace (OTel GenAI semantic conventions, ``gen-ai-events.md``).

Export is optional and never in scoring's way. ``submit`` only puts events on the OpenTelemetry SDK's
bounded queue; when the queue is full, new events are dropped and counted
(``tracescore_evaluation_events_dropped_total{reason="queue_full"}`` and a log line). The SDK's worker
thread batches them and its OTLP exporter retries transient failures (gRPC ``UNAVAILABLE``, HTTP
429/502/503/504) with exponential backoff and jitter under ``timeout_seconds``, honouring the
receiver's RetryInfo / Retry-After; a batch that still fails is dropped and counted.

Delivery is at most once per submission, and a row written again (a flush retried after its decisions
failed, a run rescored after a late span) is submitted again: its ``tracescore.score.id`` attribute is
the same each time, so a backend can keep the latest.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry._logs import LogRecord, SeverityNumber
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogExporter
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import (
    BatchLogRecordProcessor,
    LogRecordExporter,
    LogRecordExportResult,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.trace import (
    INVALID_SPAN,
    NonRecordingSpan,
    SpanContext,
    TraceFlags,
    set_span_in_context,
)
from opentelemetry.util.types import AttributeValue
from prometheus_client import CollectorRegistry, Counter, Gauge

from tracescore.schemas import Decision, ScoreRecord, TraceRound
from tracescore.schemas.consumers import PriorOutcomes, ScoreSink
from tracescore.schemas.durations import unix_nanos
from tracescore.schemas.export_config import OtlpExportConfig
from tracescore.schemas.secrets import register_secret
from tracescore.schemas.version import __version__

log = logging.getLogger(__name__)

EVENT_NAME = "gen_ai.evaluation.result"
SCOPE_NAME = "tracescore.scores"
SERVICE_NAME = "tracescore"


def evaluation_attributes(record: ScoreRecord) -> dict[str, AttributeValue]:
    """The event's attributes: the semantic conventions' where they name one, ``tracescore.*`` else.

    The evaluator's id, version and type are the provenance attributes proposed for the conventions
    (semantic-conventions-genai PR #359, ``gen_ai.evaluation.evaluator.*``): the id is the stored
    scorer id, the version its derived version, and the type ``llm_judge`` when a judge answered (a
    scorer's code may be anything else, so no type is claimed for it). The conventions name no
    attribute for the judge's model, and ``gen_ai.request.model`` would say the evaluated call used
    it, so that one is namespaced rather than borrowed.
    """
    attributes: dict[str, AttributeValue] = {
        "gen_ai.evaluation.name": record.scorer_id,
        "gen_ai.evaluation.score.value": float(record.score),
    }
    if record.label:
        attributes["gen_ai.evaluation.score.label"] = record.label
    if record.reason:
        attributes["gen_ai.evaluation.explanation"] = record.reason
    attributes["gen_ai.evaluation.evaluator.id"] = record.scorer_id
    if record.scorer_version:
        attributes["gen_ai.evaluation.evaluator.version"] = record.scorer_version
    if record.judge_model:
        attributes["gen_ai.evaluation.evaluator.type"] = "llm_judge"
    attributes["tracescore.score.id"] = record.score_id  # the same on every replay: deduplicates
    attributes["tracescore.score.source"] = record.source
    if record.judge_model:
        attributes["tracescore.judge.model"] = record.judge_model
    if record.sample_rate < 1.0:
        attributes["tracescore.sample_rate"] = record.sample_rate  # one event stands for 1/rate runs
    return attributes


def evaluation_event(record: ScoreRecord) -> LogRecord:
    """One score row as the ``gen_ai.evaluation.result`` event, in the context of the scored span."""
    return LogRecord(
        timestamp=unix_nanos(record.created_at),
        context=span_context(record.trace_id, record.span_id),
        severity_number=SeverityNumber.INFO,
        severity_text="INFO",
        event_name=EVENT_NAME,
        attributes=evaluation_attributes(record),
    )


def span_context(trace_id: str, span_id: str) -> Context:
    """A context whose current span is the evaluated one (hex ids), so the event is parented to it.

    Ids that are not valid hex of the right length give an unparented event rather than an error (and
    never the ambient context: that would parent it to whatever tracescore itself is doing).
    """
    try:
        trace, span = int(trace_id, 16), int(span_id, 16)
    except ValueError:
        return set_span_in_context(INVALID_SPAN, Context())
    if len(trace_id) != 32 or len(span_id) != 16 or not trace or not span:
        return set_span_in_context(INVALID_SPAN, Context())
    # It reached the store, so it was sampled.
    scored = SpanContext(trace, span, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    return set_span_in_context(NonRecordingSpan(scored), Context())


class EvaluationEventMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.sent = Counter(
            "tracescore_evaluation_events_sent",
            "Score events (gen_ai.evaluation.result) the OTLP receiver took",
            registry=r,
        )
        self.dropped = Counter(
            "tracescore_evaluation_events_dropped",
            "Score events not sent, by reason: queue_full (the receiver is slower than scoring), "
            "export_failed (refused, or still failing after retries), shutdown (unsent at shutdown)",
            ["reason"],
            registry=r,
        )
        self.queued = Gauge(
            "tracescore_evaluation_events_queued", "Score events waiting to be sent", registry=r
        )


def _otlp_exporter(config: OtlpExportConfig) -> LogRecordExporter:
    headers = {key: value.get_secret_value() for key, value in config.headers.items()}
    for value in headers.values():
        register_secret(value)  # an API key in a header is scrubbed from every log line
    if config.protocol == "http/protobuf":
        return HttpLogExporter(endpoint=config.logs_url, headers=headers, timeout=config.timeout_seconds)
    return GrpcLogExporter(
        endpoint=config.endpoint,
        insecure=config.plaintext,
        headers=headers,
        timeout=config.timeout_seconds,
    )


class _Counted(LogRecordExporter):
    """The OTLP exporter, counting what it sent and what it failed to; it tells the queue's owner how
    many events left the queue, so the owner knows the queue's length without reaching into the SDK."""

    def __init__(
        self,
        exporter: LogRecordExporter,
        left_queue: Callable[[int], None],
        metrics: EvaluationEventMetrics,
    ) -> None:
        self._exporter = exporter
        self._left_queue = left_queue
        self._metrics = metrics
        self._closed = False
        self._lock = threading.Lock()

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        self._left_queue(len(batch))
        if self._closed:  # shutdown gave up waiting: what is left is dropped, without trying
            self._dropped(len(batch), "shutdown")
            return LogRecordExportResult.FAILURE
        try:
            result = self._exporter.export(batch)
        except Exception:
            self._dropped(len(batch), "shutdown" if self._closed else "export_failed")
            raise
        if result is LogRecordExportResult.SUCCESS:
            self._metrics.sent.inc(len(batch))
        else:
            self._dropped(len(batch), "shutdown" if self._closed else "export_failed")
        return result

    def _dropped(self, count: int, reason: str) -> None:
        self._metrics.dropped.labels(reason).inc(count)
        log.warning("dropped %d evaluation event(s) (%s)", count, reason)

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        """Idempotent: the batch processor calls it after shutdown may already have (to stop retries)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._exporter.shutdown()  # type: ignore[no-untyped-call]  # the SDK leaves it unannotated

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self._exporter.force_flush(timeout_millis)


class EvaluationEventExporter:
    """Sends score rows as ``gen_ai.evaluation.result`` events over OTLP (see the module docstring).

    Built from ``export.otlp``; the SDK's worker thread starts with it. ``submit`` never blocks;
    ``shutdown`` is idempotent, safe at any time, and sends what is queued within
    ``shutdown_timeout_seconds`` (then drops the rest, counted).
    """

    def __init__(
        self,
        config: OtlpExportConfig,
        registry: CollectorRegistry | None = None,
        *,
        instance: str | None = None,
    ) -> None:
        if config.endpoint is None:
            raise ValueError("export.otlp.endpoint is not set: there is nowhere to send events")
        self._config = config
        self.metrics = EvaluationEventMetrics(registry)
        self._capacity = config.max_queue_size
        self._queued = 0  # submitted, not yet taken by the exporter (the SDK queue's length, or more)
        self._lock = threading.Lock()
        self._dropping = False
        self._closed = False
        self._exporter = _Counted(_otlp_exporter(config), self._left_queue, self.metrics)
        attributes: dict[str, str] = {"service.name": SERVICE_NAME, "service.version": __version__}
        if instance:
            attributes["service.instance.id"] = instance
        self._provider = LoggerProvider(resource=Resource.create(attributes), shutdown_on_exit=False)
        self._provider.add_log_record_processor(
            BatchLogRecordProcessor(
                self._exporter,
                schedule_delay_millis=config.schedule_delay_seconds * 1000,
                max_export_batch_size=config.max_export_batch_size,
                export_timeout_millis=config.timeout_seconds * 1000,
                max_queue_size=config.max_queue_size,
            )
        )
        self._logger = self._provider.get_logger(SCOPE_NAME, __version__)
        self.metrics.queued.set_function(lambda: self._queued)

    @classmethod
    def configured(
        cls, config: OtlpExportConfig, registry: CollectorRegistry | None = None, instance: str | None = None
    ) -> EvaluationEventExporter | None:
        """The exporter ``export.otlp`` asks for (None: no endpoint, nothing is sent)."""
        if not config.enabled:
            return None
        return cls(config, registry, instance=instance)

    def submit(self, records: Sequence[ScoreRecord]) -> None:
        """Queue one event per row; never waits. A full queue drops the newest (counted, logged)."""
        if self._closed:
            self._drop(len(records), "shutdown")
            return
        dropped = 0
        for record in records:
            event = evaluation_event(record)
            with self._lock:
                full = self._queued >= self._capacity
                if not full:
                    self._queued += 1
            if full:
                dropped += 1
                continue
            try:
                self._logger.emit(event)
            except Exception:
                self._left_queue(1)
                raise
        if dropped:
            self._drop(dropped, "queue_full")
        elif self._dropping:
            self._dropping = False
            log.info("the evaluation event queue has room again")

    def _drop(self, count: int, reason: str) -> None:
        self.metrics.dropped.labels(reason).inc(count)
        if reason == "queue_full" and not self._dropping:
            self._dropping = True  # one line per episode, not one per batch of rows
            log.warning(
                "evaluation event queue full (%d waiting for %s): dropping new events until it drains",
                self._queued,
                self._config.endpoint,
            )
        elif reason != "queue_full":
            log.warning("dropped %d evaluation event(s) (%s)", count, reason)

    def _left_queue(self, count: int) -> None:
        with self._lock:
            self._queued = max(0, self._queued - count)

    async def shutdown(self) -> None:
        """Send what is queued, waiting at most ``shutdown_timeout_seconds``; then stop retrying and
        drop the rest (counted). The SDK's own shutdown would wait 30 s, so the wait is bounded here."""
        if self._closed:
            return
        self._closed = True
        flushing = asyncio.ensure_future(asyncio.to_thread(self._provider.shutdown))
        done, _ = await asyncio.wait({flushing}, timeout=self._config.shutdown_timeout_seconds)
        if not done:
            log.warning(
                "evaluation events: %s did not take the queued events within %.1f s; dropping them",
                self._config.endpoint,
                self._config.shutdown_timeout_seconds,
            )
            self._exporter.shutdown()  # ends the exporter's retries; the worker drops what is left
            done, _ = await asyncio.wait({flushing}, timeout=self._config.timeout_seconds)
        if done:
            flushing.result()
        if self._queued:
            self._drop(self._queued, "shutdown")
            self._left_queue(self._queued)


class ExportingScoreSink:
    """A ``ScoreSink`` that sends every score row its ``next`` sink wrote as an evaluation event.

    Only rows the store took are sent (``write_scores`` returned). A failure to queue them is logged,
    never raised: the rows are written, and raising would make the executor write them again.
    """

    def __init__(self, next: ScoreSink, events: EvaluationEventExporter) -> None:
        self._next = next
        self._events = events

    async def write_scores(self, records: Sequence[ScoreRecord], decisions: Sequence[Decision]) -> None:
        await self._next.write_scores(records, decisions)
        if records:
            try:
                self._events.submit(records)
            except Exception:
                log.exception("queueing %d evaluation event(s) failed; they are not sent", len(records))

    async def mark_done(self, rounds: Sequence[TraceRound]) -> None:
        await self._next.mark_done(rounds)

    async def prior_outcomes(self, trace_id: str, since_unix_nano: int) -> PriorOutcomes:
        return await self._next.prior_outcomes(trace_id, since_unix_nano)


def exporting(sink: ScoreSink, events: EvaluationEventExporter | None) -> ScoreSink:
    """``sink``, sending what it writes to ``events`` too when there is an exporter."""
    return sink if events is None else ExportingScoreSink(sink, events)


__all__ = [
    "EVENT_NAME",
    "EvaluationEventExporter",
    "EvaluationEventMetrics",
    "ExportingScoreSink",
    "evaluation_attributes",
    "evaluation_event",
    "exporting",
    "span_context",
]
