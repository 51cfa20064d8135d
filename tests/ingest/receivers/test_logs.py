"""OTLP log records through the gRPC and HTTP receivers, sent by the real OpenTelemetry SDK log exporters
and by real clients, with OTLP response semantics (partial success counts rejected log records).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

import grpc
import pytest
from google.rpc import code_pb2, status_pb2
from opentelemetry._logs import SeverityNumber
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter
from opentelemetry.exporter.otlp.proto.http import Compression as HttpCompression
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.logs.v1 import logs_pb2
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.util.types import AnyValue

from tests.support.fixture_files import OTLP_DIR
from tests.support.otlp import (
    LOOPBACK,
    SPAN_1,
    TRACE_A,
    Failing,
    Recorder,
    Running,
    any_value,
    counter,
    http_request,
    json_bytes,
    kv,
    proto_request,
    proto_span,
    requests_counted,
    running_grpc,
    running_http,
)
from tracescore.schemas.spans import LogRecord

PROTOBUF = {"Content-Type": "application/x-protobuf"}
JSON = {"Content-Type": "application/json"}
LOGS_EXPORT_METHOD = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"
LEGACY_LOGS = (
    OTLP_DIR / "otel_genai_semconv__legacy-event-based-semconv-v1-28-v1-36-content-in-logrecords.logs.json"
)
USER_TEXT = "What's the weather in Paris?"
ANSWER: dict[str, AnyValue] = {
    "index": 0,
    "finish_reason": "stop",
    "message": {"role": "assistant", "content": "Rainy, 57°F."},
}


@dataclass(frozen=True)
class EmittedLogs:
    trace_id: str
    span_id: str


def emit_genai_logs(exporter: LogRecordExporter, service: str = "sdk-logs") -> EmittedLogs:
    """Emit, inside one span, the v1.28-v1.36 GenAI events as log records (as openai-v2 2.1b0 does), plus
    one record outside any span; blocking, so run it in a thread."""
    logger_provider = LoggerProvider(resource=Resource.create({"service.name": service}))
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(exporter))
    logger = logger_provider.get_logger("opentelemetry.instrumentation.openai_v2", "2.1b0")
    tracer_provider = TracerProvider()
    with tracer_provider.get_tracer("tests.sdk").start_as_current_span("chat gpt-4o") as span:
        logger.emit(
            event_name="gen_ai.user.message",
            body={"content": USER_TEXT},
            attributes={"gen_ai.system": "openai"},
        )
        logger.emit(
            event_name="gen_ai.choice",
            body=ANSWER,
            attributes={"gen_ai.system": "openai"},
            severity_number=SeverityNumber.INFO,
            severity_text="INFO",
        )
        context = span.get_span_context()
    logger.emit(body="service started")  # no span around it: uncorrelated
    logger_provider.force_flush()
    logger_provider.shutdown()
    tracer_provider.shutdown()
    return EmittedLogs(format(context.trace_id, "032x"), format(context.span_id, "016x"))


def received_logs(recorder: Recorder) -> list[LogRecord]:
    return [record for batch in recorder.batches for record in batch.logs]


def assert_sdk_logs_arrived(recorder: Recorder, emitted: EmittedLogs) -> None:
    user, choice, outside = received_logs(recorder)
    assert recorder.spans == []
    for record in (user, choice):
        assert (record.trace_id, record.span_id) == (emitted.trace_id, emitted.span_id)
        assert record.attributes == {"gen_ai.system": "openai"}
        assert record.observed_time_unix_nano > 0
    assert (user.event_name, user.body) == ("gen_ai.user.message", {"content": USER_TEXT})
    assert (choice.event_name, choice.body) == ("gen_ai.choice", ANSWER)
    assert (choice.severity_number, choice.severity_text) == (9, "INFO")
    assert (outside.trace_id, outside.span_id, outside.event_name) == ("", "", "")
    assert outside.body == "service started"
    assert user.service_name == "sdk-logs"
    assert (user.scope_name, user.scope_version) == ("opentelemetry.instrumentation.openai_v2", "2.1b0")


def logs_request(*records: logs_pb2.LogRecord) -> ExportLogsServiceRequest:
    request = ExportLogsServiceRequest()
    resource_logs = request.resource_logs.add()
    resource_logs.resource.attributes.append(kv("service.name", "svc"))
    resource_logs.scope_logs.add().log_records.extend(records)
    return request


def good_record(event: str = "gen_ai.user.message") -> logs_pb2.LogRecord:
    return logs_pb2.LogRecord(trace_id=TRACE_A, span_id=SPAN_1, event_name=event, body=any_value("x"))


# --- the real SDK log exporters ------------------------------------------------------------------


@pytest.mark.parametrize("compression", [None, grpc.Compression.Gzip], ids=["plain", "gzip"])
async def test_sdk_grpc_log_exporter_to_grpc_receiver(compression: grpc.Compression | None) -> None:
    async with running_grpc() as running:
        exporter = GrpcLogExporter(
            endpoint=f"{LOOPBACK}:{running.port}", insecure=True, compression=compression, timeout=10
        )
        emitted = await asyncio.to_thread(emit_genai_logs, exporter)

        assert_sdk_logs_arrived(running.next, emitted)
        assert counter(running.metrics, "tracescore_logs_received", transport="grpc") == 3
        assert counter(running.metrics, "tracescore_spans_received", transport="grpc") == 0
        assert requests_counted(running.metrics, "grpc", "ok") >= 1


@pytest.mark.parametrize(
    "compression", [HttpCompression.NoCompression, HttpCompression.Gzip], ids=["plain", "gzip"]
)
async def test_sdk_http_log_exporter_to_http_receiver(compression: HttpCompression) -> None:
    async with running_http() as running:
        exporter = HttpLogExporter(endpoint=f"{running.url}/v1/logs", compression=compression, timeout=10)
        emitted = await asyncio.to_thread(emit_genai_logs, exporter)

        assert_sdk_logs_arrived(running.next, emitted)
        assert counter(running.metrics, "tracescore_logs_received", transport="http") == 3


# --- HTTP ------------------------------------------------------------------------------------------------


async def test_fixture_logs_posted_as_json() -> None:
    raw = json.loads(LEGACY_LOGS.read_bytes())
    raw_records = [r for rl in raw["resourceLogs"] for sl in rl["scopeLogs"] for r in sl["logRecords"]]
    async with running_http() as running:
        reply = await http_request(
            "POST", f"{running.url}/v1/logs", data=LEGACY_LOGS.read_bytes(), headers=JSON
        )
    assert (reply.status, reply.content_type, reply.json()) == (200, "application/json", {})
    records = received_logs(running.next)
    assert [(r.trace_id, r.span_id, r.event_name) for r in records] == [
        (r["traceId"], r["spanId"], r["eventName"]) for r in raw_records
    ]
    assert counter(running.metrics, "tracescore_logs_received", transport="http") == 12


async def test_http_bad_ids_mixed_with_good_is_partial_success_in_both_encodings() -> None:
    bad = logs_pb2.LogRecord(trace_id=b"\x01\x02", span_id=SPAN_1, event_name="short")
    body = logs_request(good_record("a"), bad, good_record("b")).SerializeToString()
    document = {"resourceLogs": [{"scopeLogs": [{"logRecords": [
        {"traceId": TRACE_A.hex(), "spanId": SPAN_1.hex(), "eventName": "c"},
        {"traceId": "not hex at all", "eventName": "bad"},
    ]}]}]}  # fmt: skip
    async with running_http() as running:
        as_proto = await http_request("POST", f"{running.url}/v1/logs", data=body, headers=PROTOBUF)
        as_json = await http_request(
            "POST", f"{running.url}/v1/logs", data=json_bytes(document), headers=JSON
        )

    assert as_proto.status == 200 and as_proto.content_type == "application/x-protobuf"
    partial = ExportLogsServiceResponse.FromString(as_proto.body).partial_success
    assert partial.rejected_log_records == 1
    assert "trace_id must be 16 bytes or empty, got 2" in partial.error_message
    assert as_json.status == 200
    assert as_json.json()["partialSuccess"]["rejectedLogRecords"] == "1"  # int64 in JSON is a string
    assert "traceId must be 32 hex characters" in as_json.json()["partialSuccess"]["errorMessage"]
    assert [r.event_name for r in received_logs(running.next)] == ["a", "b", "c"]
    assert counter(running.metrics, "tracescore_logs_rejected", transport="http") == 2
    assert counter(running.metrics, "tracescore_logs_received", transport="http") == 3
    assert requests_counted(running.metrics, "http", "partial") == 2


@pytest.mark.parametrize(
    ("body", "headers", "message"),
    [
        (b"{not json", JSON, "invalid JSON"),
        (b'{"resourceSpans": []}', JSON, "no resourceLogs"),
        (b"\x0a\xff\xffgarbage", PROTOBUF, "not a protobuf ExportLogsServiceRequest"),
    ],
    ids=["json", "traces-json", "protobuf"],
)
async def test_http_garbage_is_400_with_a_status(body: bytes, headers: dict[str, str], message: str) -> None:
    async with running_http() as running:
        reply = await http_request("POST", f"{running.url}/v1/logs", data=body, headers=headers)
    assert reply.status == 400
    if headers is JSON:
        status = json.loads(reply.body)
        assert status["code"] == code_pb2.INVALID_ARGUMENT and message in status["message"]
    else:
        status_msg = status_pb2.Status.FromString(reply.body)
        assert status_msg.code == code_pb2.INVALID_ARGUMENT and message in status_msg.message
    assert running.next.batches == []
    assert requests_counted(running.metrics, "http", "invalid") == 1


async def test_http_logs_consumer_failure_is_503() -> None:
    async with running_http(next=Failing()) as running:
        reply = await http_request(
            "POST",
            f"{running.url}/v1/logs",
            data=logs_request(good_record()).SerializeToString(),
            headers=PROTOBUF,
        )
    assert reply.status == 503 and int(reply.headers["Retry-After"]) > 0
    assert "log records could not be stored" in status_pb2.Status.FromString(reply.body).message
    assert counter(running.metrics, "tracescore_logs_received", transport="http") == 0


async def test_http_logs_and_traces_paths_are_not_mixed_up() -> None:
    spans_body = proto_request(proto_span("a")).SerializeToString()
    async with running_http() as running:
        # Read as a logs request, this span's trace_id (bytes, field 1) lands where a log record has
        # time_unix_nano (fixed64, field 1): the wire types clash and the request is unreadable.
        traces_as_logs = await http_request(
            "POST", f"{running.url}/v1/logs", data=spans_body, headers=PROTOBUF
        )
        traces = await http_request("POST", f"{running.url}/v1/traces", data=spans_body, headers=PROTOBUF)
    assert (traces_as_logs.status, traces.status) == (400, 200)
    assert received_logs(running.next) == []
    assert [s.name for s in running.next.spans] == ["a"]


# --- gRPC ------------------------------------------------------------------------------------------------


async def export_logs_grpc(running: Running, payload: bytes) -> ExportLogsServiceResponse:
    async with grpc.aio.insecure_channel(f"{LOOPBACK}:{running.port}") as channel:
        call = channel.unary_unary(
            LOGS_EXPORT_METHOD, response_deserializer=ExportLogsServiceResponse.FromString
        )
        response: ExportLogsServiceResponse = await call(payload, timeout=10)
        return response


async def test_grpc_bad_ids_mixed_with_good_is_partial_success() -> None:
    bad = logs_pb2.LogRecord(trace_id=TRACE_A, span_id=b"\x01" * 3, event_name="short span")
    async with running_grpc() as running:
        response = await export_logs_grpc(running, logs_request(bad, good_record()).SerializeToString())
    assert response.partial_success.rejected_log_records == 1
    assert "log record 'short span': span_id must be 8 bytes or empty, got 3" in (
        response.partial_success.error_message
    )
    assert [r.event_name for r in received_logs(running.next)] == ["gen_ai.user.message"]
    assert counter(running.metrics, "tracescore_logs_rejected", transport="grpc") == 1


async def test_grpc_garbage_is_invalid_argument_and_consumer_failure_unavailable() -> None:
    async with running_grpc() as running:
        with pytest.raises(grpc.aio.AioRpcError) as garbage:
            await export_logs_grpc(running, b"\x0a\xff\xffgarbage")
    assert garbage.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "ExportLogsServiceRequest" in (garbage.value.details() or "")

    async with running_grpc(next=Failing()) as running:
        with pytest.raises(grpc.aio.AioRpcError) as down:
            await export_logs_grpc(running, logs_request(good_record()).SerializeToString())
    assert down.value.code() == grpc.StatusCode.UNAVAILABLE
    assert down.value.details() == "log records could not be stored: the store is unavailable; retry later"
