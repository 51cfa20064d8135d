"""A real collector between the agents and tracescore: OTel SDK -> rotel -> Kafka -> ``tracescore serve``.

Agent runs written by the OpenTelemetry SDK go over OTLP (gRPC and HTTP exporters) to rotel, a real
OTLP collector (PyPI ``rotel``, ``tests/support/rotel.py``), standing in for the OpenTelemetry
Collector: its kafka exporter writes them to the Tansu broker as OTLP protobuf export requests,
tracescore's Kafka receiver reads the ``otlp_spans`` and ``otlp_logs`` topics, and each run is scored.
Every process is the real one; what the service wrote is read from its embedded store after it stopped.
"""

from __future__ import annotations

import asyncio
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kafka import KafkaConsumer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)

from tests.support.rotel import BATCH_TIMEOUT_S, Rotel, running_rotel
from tests.support.serve import api_rows, decision_outcome, start_serve, stop, wait_healthy
from tracescore.ingest.cli.demo_traces import SCENARIOS, Scenario, emit_scenario
from tracescore.ingest.store.clickhouse import Store

SCORERS = ("content-similarity", "textual-difference")  # the default rules
SPANS, LOGS = "otlp_spans", "otlp_logs"  # the OpenTelemetry Collector's kafka exporter's topics
ROUNDS_GRPC, ROUNDS_HTTP = 2, 1  # times every scenario is sent through each exporter


def _spans_of(scenario: Scenario) -> int:
    return 1 + len(scenario.steps) + sum(len(step.tool_calls) for step in scenario.steps)


@dataclass(frozen=True)
class Pipeline:
    rotel: Rotel
    base: str  # the running service's HTTP base URL
    store: Path


@contextmanager
def _pipeline(tmp_path: Path, kafka_bootstrap: str) -> Iterator[Pipeline]:
    """The topics (spans on two partitions: rotel's unkeyed records land on either), ``tracescore
    serve`` reading both, and rotel writing to them; the service is stopped (exit 0) before the test
    reads its store."""
    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    admin.create_topics([NewTopic(SPANS, 2, 1), NewTopic(LOGS, 1, 1)])
    admin.close()
    config = tmp_path / "tracescore.yaml"
    kafka = {"bootstrap": kafka_bootstrap, "topic": SPANS, "logs_topic": LOGS, "session_timeout_ms": 6000}
    config.write_text(yaml.safe_dump({"kafka": kafka}))
    store = tmp_path / "store"
    # The service starts (its store and its group join) while the collector is started and sent to;
    # its consumer reads the topics from their beginning.
    proc, http_port = start_serve(store, "--config", str(config), "--idle", "2")
    try:
        with running_rotel(tmp_path / "rotel", kafka_bootstrap, traces_topic=SPANS, logs_topic=LOGS) as rotel:
            yield Pipeline(rotel, wait_healthy(proc, http_port), store)
    finally:
        code = stop(proc)
    assert code == 0


def _metric(base: str, name: str) -> float:
    with urllib.request.urlopen(f"{base}/metrics", timeout=5) as resp:
        for line in resp.read().decode().splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.rsplit(" ", 1)[1])
    return 0.0


def _wait_decided(pipeline: Pipeline, trace_ids: list[str], limit_s: float = 40.0) -> None:
    """Until the running service shows a decision of every scorer for each trace (over its API)."""
    deadline = time.monotonic() + limit_s
    waiting = list(trace_ids)
    while waiting:
        waiting = [
            t for t in waiting if len(api_rows(f"{pipeline.base}/api/decisions?trace_id={t}")) < len(SCORERS)
        ]
        if waiting and time.monotonic() > deadline:
            raise AssertionError(
                f"{len(waiting)} of {len(trace_ids)} traces undecided after {limit_s}s, "
                f"{_metric(pipeline.base, 'tracescore_dead_letters_total'):.0f} records dead-lettered; "
                "rotel said:\n" + pipeline.rotel.output()[-3000:]
            )
        time.sleep(0.2)


class _Paced(SpanExporter):
    """Waits after each export longer than the collector batches: each span becomes its own Kafka
    record, on either partition, so the service gets every trace in pieces from both."""

    def __init__(self, inner: SpanExporter) -> None:
        self._inner = inner

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self._inner.export(spans)
        time.sleep(2.5 * BATCH_TIMEOUT_S)
        return result

    def shutdown(self) -> None:
        self._inner.shutdown()


def _emit(exporter: SpanExporter, service: str, scenarios: list[Scenario], batch: bool) -> list[str]:
    """Each scenario written by the SDK and exported to the collector; their trace ids."""
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    processor = BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("e2e-rotel")
    start = time.time_ns()
    trace_ids = [emit_scenario(tracer, s, start + i * 1_000_000) for i, s in enumerate(scenarios)]
    provider.shutdown()  # flushes the batch processor
    return trace_ids


def _read_store(store: Path, queries: dict[str, str]) -> dict[str, list[dict[str, Any]]]:
    async def read() -> dict[str, list[dict[str, Any]]]:
        db = Store(str(store))
        await db.start()
        try:
            return {name: await db.query(sql) for name, sql in queries.items()}
        finally:
            await db.shutdown()

    return asyncio.run(read())


def _records(bootstrap: str, topic: str) -> list[Any]:
    """Every record of ``topic``, read from the beginning without a group."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, consumer_timeout_ms=2000)
    consumer.assign([TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())])
    consumer.seek_to_beginning()
    records = list(consumer)
    consumer.close()
    return records


def test_sdk_spans_through_rotel_and_kafka_are_each_scored_once(tmp_path: Path, kafka_bootstrap: str) -> None:
    over_grpc = list(SCENARIOS) * ROUNDS_GRPC
    over_http = list(SCENARIOS) * ROUNDS_HTTP
    with _pipeline(tmp_path, kafka_bootstrap) as pipeline:
        # gRPC: the SDK's batch processor, one export of every span (one Kafka record of many traces);
        # HTTP: one export per span ended, paced, so each trace reaches Kafka in pieces.
        grpc_exporter = GrpcSpanExporter(endpoint=pipeline.rotel.grpc_endpoint, insecure=True)
        grpc_ids = _emit(grpc_exporter, "via-grpc", over_grpc, batch=True)
        http_exporter = HttpSpanExporter(endpoint=f"{pipeline.rotel.http_endpoint}/v1/traces")
        http_ids = _emit(_Paced(http_exporter), "via-http", over_http, batch=False)
        _wait_decided(pipeline, grpc_ids + http_ids)
        assert _metric(pipeline.base, "tracescore_dead_letters_total") == 0
        assert _metric(pipeline.base, 'tracescore_spans_received_total{transport="kafka"}') >= sum(
            map(_spans_of, over_grpc + over_http)
        )
        records = _records(kafka_bootstrap, SPANS)

    scenario_of = dict(zip(grpc_ids + http_ids, over_grpc + over_http, strict=True))
    service_of = {**{t: "via-grpc" for t in grpc_ids}, **{t: "via-http" for t in http_ids}}

    # What rotel wrote: unkeyed records, each one OTLP ExportTraceServiceRequest in protobuf; the paced
    # traces in pieces on both partitions.
    assert {r.key or b"" for r in records} == {b""}
    assert {r.partition for r in records} == {0, 1}
    records_of: dict[str, set[int]] = {}
    for number, record in enumerate(records):
        request = ExportTraceServiceRequest.FromString(record.value)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                for span in scope.spans:
                    records_of.setdefault(span.trace_id.hex(), set()).add(number)
    assert set(records_of) == set(scenario_of)
    assert all(len(records_of[t]) > 1 for t in http_ids)

    per_trace, doubled_decisions, doubled_scores = decision_outcome(pipeline.store)
    assert per_trace == {t: len(SCORERS) for t in scenario_of}
    assert doubled_decisions == [] and doubled_scores == []

    rows = _read_store(
        pipeline.store,
        {
            "scores": "SELECT TraceId, SpanId, ScorerId, Score, AgentName, ServiceName, Source "
            "FROM scores FINAL ORDER BY TraceId, ScorerId",
            "decisions": "SELECT Decision, count() AS n FROM score_decisions FINAL GROUP BY Decision",
            "spans": "SELECT TraceId, uniqExact(SpanId) AS n, anyIf(SpanId, ParentSpanId = '') AS root "
            "FROM otel_traces GROUP BY TraceId",
        },
    )
    # Every run scored once: one row per (run, scorer), on its root span, with what the SDK set.
    scores = rows["scores"]
    assert len(scores) == len(scenario_of) * len(SCORERS)
    assert rows["decisions"] == [{"Decision": "scored", "n": len(scores)}]
    spans = {r["TraceId"]: r for r in rows["spans"]}
    assert {t: int(r["n"]) for t, r in spans.items()} == {t: _spans_of(s) for t, s in scenario_of.items()}
    for row in scores:
        trace = row["TraceId"]
        assert row["SpanId"] == spans[trace]["root"]
        assert row["AgentName"] == scenario_of[trace].agent
        assert row["ServiceName"] == service_of[trace]
        assert row["Source"] == "live"
        assert 0.0 <= row["Score"] <= 1.0
    # The same run scores the same whichever exporter and whichever partitions it went through.
    by_scenario: dict[tuple[str, str], set[float]] = {}
    for row in scores:
        by_scenario.setdefault((scenario_of[row["TraceId"]].user, row["ScorerId"]), set()).add(row["Score"])
    assert len(by_scenario) == len(SCENARIOS) * len(SCORERS)
    assert all(len(values) == 1 for values in by_scenario.values()), by_scenario


def _emit_chat_with_log_events(pipeline: Pipeline) -> tuple[str, str]:
    """One chat span (GenAI semconv before v1.37: the messages are log records joined to their span by
    ids), exported over gRPC to the collector with its two log records; (trace id, span id)."""
    resource = Resource.create({"service.name": "via-rotel-logs"})
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(
        BatchSpanProcessor(GrpcSpanExporter(endpoint=pipeline.rotel.grpc_endpoint, insecure=True))
    )
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(
        BatchLogRecordProcessor(OTLPLogExporter(endpoint=pipeline.rotel.grpc_endpoint, insecure=True))
    )
    logger = logger_provider.get_logger("opentelemetry.instrumentation.openai_v2", "2.1b0")
    with tracer_provider.get_tracer("e2e-rotel").start_as_current_span("chat gpt-4o") as span:
        span.set_attribute("gen_ai.operation.name", "chat")
        span.set_attribute("gen_ai.request.model", "gpt-4o")
        logger.emit(event_name="gen_ai.user.message", body={"content": "What's the weather in Paris?"})
        logger.emit(
            event_name="gen_ai.choice",
            body={
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "It is rainy in Paris, 57°F."},
            },
        )
        context = span.get_span_context()
    # Logs first: the run is assembled from both, in whichever order they reach the service.
    logger_provider.shutdown()
    tracer_provider.shutdown()
    return format(context.trace_id, "032x"), format(context.span_id, "016x")


def test_sdk_log_records_through_rotel_and_kafka_join_their_span(
    tmp_path: Path, kafka_bootstrap: str
) -> None:
    with _pipeline(tmp_path, kafka_bootstrap) as pipeline:
        trace_id, span_id = _emit_chat_with_log_events(pipeline)
        _wait_decided(pipeline, [trace_id])
        assert _metric(pipeline.base, "tracescore_dead_letters_total") == 0
        assert _metric(pipeline.base, 'tracescore_logs_received_total{transport="kafka"}') == 2
        records = _records(kafka_bootstrap, LOGS)

    # What rotel wrote: OTLP ExportLogsServiceRequest records in protobuf.
    written = [ExportLogsServiceRequest.FromString(r.value) for r in records]
    assert (
        sum(len(scope.log_records) for w in written for r in w.resource_logs for scope in r.scope_logs) == 2
    )
    rows = _read_store(
        pipeline.store,
        {
            "logs": "SELECT TraceId, SpanId, EventName, Body, ServiceName FROM otel_logs ORDER BY Timestamp",
            "scores": "SELECT SpanId, ScorerId, Score FROM scores FINAL ORDER BY ScorerId",
        },
    )
    assert [(r["TraceId"], r["SpanId"], r["EventName"]) for r in rows["logs"]] == [
        (trace_id, span_id, "gen_ai.user.message"),
        (trace_id, span_id, "gen_ai.choice"),
    ]
    assert rows["logs"][0]["Body"] == '{"content":"What\'s the weather in Paris?"}'
    assert {r["ServiceName"] for r in rows["logs"]} == {"via-rotel-logs"}
    # The run's text came from the log records alone: both scorers scored it, once, on the chat span.
    assert [(r["SpanId"], r["ScorerId"]) for r in rows["scores"]] == [(span_id, s) for s in SCORERS]
