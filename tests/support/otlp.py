"""Test helpers for the OTLP receivers: running receivers on free loopback ports, recording consumers,
hand-built export requests (protobuf and OTLP/JSON), and spans emitted through the real OpenTelemetry SDK.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1 import trace_pb2
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from tracescore.ingest.cli.demo_traces import SCENARIOS, Scenario, emit_scenario
from tracescore.ingest.observability.service_metrics import Metrics
from tracescore.ingest.receivers.grpc import GrpcReceiver
from tracescore.ingest.receivers.http import HttpReceiver
from tracescore.ingest.receivers.memory_admission import MemoryGuard
from tracescore.schemas.config import ReceiverConfig
from tracescore.schemas.score_queries import ResultQuery
from tracescore.schemas.spans import SpanBatch

LOOPBACK = "127.0.0.1"
EXPORT_METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"

TRACE_A = bytes.fromhex("5dbdf98695bd5785f3d3e61006ad2dba")
SPAN_1 = bytes.fromhex("594f8d102c7c4a19")
SPAN_2 = bytes.fromhex("41577dfd278c2ded")


class Recording(SpanExporter):
    """A real exporter whose results are kept."""

    def __init__(self, exporter: SpanExporter) -> None:
        self._exporter = exporter
        self.results: list[SpanExportResult] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self._exporter.export(spans)
        self.results.append(result)
        return result

    def shutdown(self) -> None:
        self._exporter.shutdown()


class Recorder:
    """A ``next`` consumer that keeps every batch it is given."""

    def __init__(self) -> None:
        self.batches: list[SpanBatch] = []

    async def consume_spans(self, batch: SpanBatch) -> None:
        self.batches.append(batch)

    @property
    def spans(self) -> list[Any]:
        return [span for batch in self.batches for span in batch.spans]


class Failing:
    """A ``next`` consumer whose store is down."""

    def __init__(self) -> None:
        self.calls = 0

    async def consume_spans(self, batch: SpanBatch) -> None:
        self.calls += 1
        raise ConnectionError("store is down")


class StaticScores:
    """A ScoreReader for receiver tests that read no scores: every listing is empty (the reads
    themselves are tested against a real store, in tests/ingest/receivers/test_results_api.py)."""

    async def scores(self, query: ResultQuery) -> list[dict[str, Any]]:
        return []

    async def decisions(self, query: ResultQuery) -> list[dict[str, Any]]:
        return []


@dataclass
class StaticHealth:
    """A service's health as a receiver sees it: fixed answers."""

    is_ready: bool = True
    body: dict[str, Any] = field(default_factory=lambda: {"status": "ok"})

    def health(self) -> dict[str, Any]:
        return self.body

    def ready(self) -> bool:
        return self.is_ready


@dataclass
class Running:
    receiver: Any
    next: Any
    metrics: Metrics

    @property
    def port(self) -> int:
        return int(self.receiver.port)

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"


def receiver_config(max_request_bytes: int = 4 * 1024 * 1024, **settings: Any) -> ReceiverConfig:
    return ReceiverConfig(
        host=LOOPBACK, grpc_port=0, http_port=0, max_request_bytes=max_request_bytes, **settings
    )


@asynccontextmanager
async def running_http(
    next: Any = None,
    scores: Any = None,
    health: StaticHealth | None = None,
    max_request_bytes: int = 4 * 1024 * 1024,
    memory: MemoryGuard | None = None,
    metrics: Metrics | None = None,
    **settings: Any,
) -> AsyncIterator[Running]:
    """An OTLP/HTTP receiver on a free loopback port; ``settings`` are more ``ReceiverConfig`` keys."""
    next = Recorder() if next is None else next
    metrics = metrics or Metrics()
    receiver = HttpReceiver(
        receiver_config(max_request_bytes, **settings),
        next=next,
        metrics=metrics,
        scores=scores if scores is not None else StaticScores(),
        health=health,
        memory=memory,
    )
    await receiver.start()
    try:
        yield Running(receiver, next, metrics)
    finally:
        await receiver.shutdown()


@asynccontextmanager
async def running_grpc(
    next: Any = None,
    max_request_bytes: int = 4 * 1024 * 1024,
    memory: MemoryGuard | None = None,
    metrics: Metrics | None = None,
) -> AsyncIterator[Running]:
    next = Recorder() if next is None else next
    metrics = metrics or Metrics()
    receiver = GrpcReceiver(receiver_config(max_request_bytes), next=next, metrics=metrics, memory=memory)
    await receiver.start()
    try:
        yield Running(receiver, next, metrics)
    finally:
        await receiver.shutdown()


@dataclass(frozen=True)
class Reply:
    status: int
    content_type: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


async def http_request(method: str, url: str, **kwargs: Any) -> Reply:
    """One HTTP request through a real aiohttp client, the response read in full."""
    async with aiohttp.ClientSession() as session, session.request(method, url, **kwargs) as response:
        return Reply(response.status, response.content_type, dict(response.headers), await response.read())


def counter(metrics: Metrics, name: str, **labels: str) -> float:
    """Current value of one counter sample (0 when it was never incremented)."""
    value = metrics.registry.get_sample_value(f"{name}_total", labels)
    return 0.0 if value is None else value


def requests_counted(metrics: Metrics, transport: str, outcome: str) -> float:
    return counter(metrics, "tracescore_export_requests", transport=transport, outcome=outcome)


# --- hand-built protobuf requests ---------------------------------------------------------------


def kv(key: str, value: Any) -> KeyValue:
    return KeyValue(key=key, value=any_value(value))


def any_value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, str):
        return AnyValue(string_value=value)
    if isinstance(value, bytes):
        return AnyValue(bytes_value=value)
    if isinstance(value, list):
        out = AnyValue()
        out.array_value.values.extend(any_value(v) for v in value)
        return out
    out = AnyValue()
    out.kvlist_value.values.extend(kv(k, v) for k, v in value.items())
    return out


def proto_span(
    name: str, trace_id: bytes = TRACE_A, span_id: bytes = SPAN_1, parent: bytes = b"", **fields: Any
) -> trace_pb2.Span:
    return trace_pb2.Span(name=name, trace_id=trace_id, span_id=span_id, parent_span_id=parent, **fields)


def proto_request(*spans: trace_pb2.Span, service: str = "svc") -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.append(kv("service.name", service))
    scope_spans = resource_spans.scope_spans.add()
    scope_spans.scope.name, scope_spans.scope.version = "test.scope", "1.2.3"
    scope_spans.spans.extend(spans)
    return request


# --- hand-built OTLP/JSON requests ----------------------------------------------------------------


TRACE_A_HEX = TRACE_A.hex()
SPAN_1_HEX = SPAN_1.hex()


def json_span(
    name: str, trace_id: Any = TRACE_A_HEX, span_id: Any = SPAN_1_HEX, **fields: Any
) -> dict[str, Any]:
    return {"traceId": trace_id, "spanId": span_id, "name": name, **fields}


def json_request(*spans: Any, service: str = "svc") -> dict[str, Any]:
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]},
                "scopeSpans": [{"scope": {"name": "test.scope", "version": "1.2.3"}, "spans": list(spans)}],
            }
        ]
    }


def json_bytes(document: Any) -> bytes:
    return json.dumps(document).encode()


# --- the real OpenTelemetry SDK -----------------------------------------------------------------


@dataclass(frozen=True)
class Emitted:
    """Ids of the spans the SDK emitted, as lowercase hex, by span name."""

    trace_id: str
    span_ids: dict[str, str]


def emit_agent_trace(exporter: SpanExporter, service: str = "sdk-service") -> Emitted:
    """Emit agent -> (llm, tool) through the SDK with ``exporter``; blocking, so run it in a thread."""
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    tracer = provider.get_tracer("tests.sdk", "9.9.9")
    span_ids: dict[str, str] = {}
    with tracer.start_as_current_span("invoke_agent weather_agent", kind=SpanKind.INTERNAL) as agent:
        agent.set_attribute("gen_ai.agent.name", "weather_agent")
        with tracer.start_as_current_span("chat gpt-4o", kind=SpanKind.CLIENT) as llm:
            llm.set_attribute("gen_ai.request.temperature", 0.25)
            llm.set_attribute("gen_ai.usage.input_tokens", 47)
            llm.set_attribute("gen_ai.response.finish_reasons", ["tool_calls"])
            llm.set_attribute("gen_ai.request.stream", False)
            llm.add_event("gen_ai.choice", {"index": 0})
            span_ids["chat gpt-4o"] = format(llm.get_span_context().span_id, "016x")
        with tracer.start_as_current_span("execute_tool get_weather") as tool:
            tool.set_status(Status(StatusCode.ERROR, "tool failed"))
            span_ids["execute_tool get_weather"] = format(tool.get_span_context().span_id, "016x")
        span_ids["invoke_agent weather_agent"] = format(agent.get_span_context().span_id, "016x")
        trace_id = format(agent.get_span_context().trace_id, "032x")
    provider.force_flush()
    provider.shutdown()
    return Emitted(trace_id, span_ids)


def agent_trace_requests(count: int, service: str = "crash-test") -> list[tuple[str, bytes]]:
    """``count`` multi-step agent runs written by the real OTel SDK (the demo's scenarios in turn),
    each encoded as one OTLP protobuf export request: (trace id, request bytes)."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("tracescore-tests")
    start = time.time_ns()
    trace_ids = [
        emit_scenario(tracer, SCENARIOS[i % len(SCENARIOS)], start + i * 1_000_000) for i in range(count)
    ]
    provider.shutdown()
    by_trace: dict[str, list[Any]] = {}
    for span in memory.get_finished_spans():
        by_trace.setdefault(format(span.context.trace_id, "032x"), []).append(span)
    return [(trace_id, encode_spans(by_trace[trace_id]).SerializeToString()) for trace_id in trace_ids]


def many_trace_requests(
    traces: int, per_request: int, service: str = "load", shapes: int = 50
) -> tuple[list[list[str]], list[bytes]]:
    """``traces`` distinct agent runs for load tests -- ``shapes`` runs written by the real OTel SDK,
    repeated under fresh trace and span ids -- as protobuf export requests of ``per_request`` runs
    each: each request's trace ids, and its bytes."""
    written = [ExportTraceServiceRequest.FromString(b) for _, b in agent_trace_requests(shapes, service)]
    ids: list[list[str]] = []
    bodies: list[bytes] = []
    for first in range(0, traces, per_request):
        request = ExportTraceServiceRequest()
        ids.append([])
        for index in range(first, min(first + per_request, traces)):
            trace_id = os.urandom(16)
            ids[-1].append(trace_id.hex())
            span_ids: dict[bytes, bytes] = {}  # fresh span ids, parents following
            for resource_spans in written[index % len(written)].resource_spans:
                copy = request.resource_spans.add()
                copy.CopyFrom(resource_spans)
                for scope_spans in copy.scope_spans:
                    for span in scope_spans.spans:
                        span.trace_id = trace_id
                        span.span_id = span_ids.setdefault(span.span_id, os.urandom(8))
                        if span.parent_span_id:
                            span.parent_span_id = span_ids.setdefault(span.parent_span_id, os.urandom(8))
        bodies.append(request.SerializeToString())
    return ids, bodies


def send_scenario(grpc_port: int, service: str, scenario: Scenario, token: str | None = None) -> str:
    """One agent run of ``scenario`` through the real SDK and OTLP/gRPC exporter (with a bearer
    token, when given), sent now; its trace id."""
    headers = {"authorization": f"Bearer {token}"} if token else None
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{grpc_port}", insecure=True, headers=headers)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace_id = emit_scenario(provider.get_tracer("tests"), scenario, time.time_ns())
    provider.shutdown()
    return trace_id
