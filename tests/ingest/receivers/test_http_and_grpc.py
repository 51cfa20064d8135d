"""The OTLP receivers on real loopback servers, fed by the real OpenTelemetry SDK exporters and clients."""

from __future__ import annotations

import asyncio
import gzip
import json
import re
from typing import Any

import aiohttp
import grpc
import pytest
from google.rpc import code_pb2, error_details_pb2, status_pb2
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http import Compression as HttpCompression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from tests.support.fixture_files import OTLP_DIR
from tests.support.otlp import (
    EXPORT_METHOD,
    LOOPBACK,
    SPAN_2,
    Emitted,
    Failing,
    Recorder,
    Running,
    StaticHealth,
    StaticScores,
    counter,
    emit_agent_trace,
    http_request,
    json_bytes,
    json_request,
    json_span,
    proto_request,
    proto_span,
    receiver_config,
    requests_counted,
    running_grpc,
    running_http,
)
from tracescore.ingest.observability.service_metrics import PROMETHEUS_CONTENT_TYPE, Metrics
from tracescore.ingest.receivers.grpc import GrpcReceiver
from tracescore.ingest.receivers.http import HttpReceiver
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.free_space import DiskSpace, FreeSpaceGuard
from tracescore.ingest.store.span_sink import SpanSink

PROTOBUF = {"Content-Type": "application/x-protobuf"}
JSON = {"Content-Type": "application/json"}
UNAVAILABLE = "unavailable"
SEMCONV_MAIN = OTLP_DIR / "otel_genai_semconv__main.traces.json"


def assert_sdk_trace_arrived(recorder: Recorder, emitted: Emitted) -> None:
    spans = {span.name: span for span in recorder.spans}
    assert set(spans) == {"invoke_agent weather_agent", "chat gpt-4o", "execute_tool get_weather"}
    for name, span in spans.items():
        assert span.trace_id == emitted.trace_id
        assert span.span_id == emitted.span_ids[name]
        assert span.resource_attributes["service.name"] == "sdk-service"
        assert (span.scope_name, span.scope_version) == ("tests.sdk", "9.9.9")
        assert span.end_time_unix_nano >= span.start_time_unix_nano > 0
    agent_id = emitted.span_ids["invoke_agent weather_agent"]
    assert spans["invoke_agent weather_agent"].parent_span_id == ""
    assert spans["chat gpt-4o"].parent_span_id == agent_id
    assert spans["execute_tool get_weather"].parent_span_id == agent_id
    chat = spans["chat gpt-4o"]
    assert chat.kind == 3  # CLIENT
    assert chat.attributes == {
        "gen_ai.request.temperature": 0.25,
        "gen_ai.usage.input_tokens": 47,
        "gen_ai.response.finish_reasons": ["tool_calls"],
        "gen_ai.request.stream": False,
    }
    assert [(e.name, e.attributes) for e in chat.events] == [("gen_ai.choice", {"index": 0})]
    assert spans["invoke_agent weather_agent"].attributes == {"gen_ai.agent.name": "weather_agent"}
    tool = spans["execute_tool get_weather"]
    assert (tool.status_code, tool.status_message) == (2, "tool failed")


# --- the real SDK exporters -----------------------------------------------------------------------


@pytest.mark.parametrize("compression", [None, grpc.Compression.Gzip], ids=["plain", "gzip"])
async def test_sdk_grpc_exporter_to_grpc_receiver(compression: grpc.Compression | None) -> None:
    async with running_grpc() as running:
        exporter = GrpcSpanExporter(
            endpoint=f"{LOOPBACK}:{running.port}", insecure=True, compression=compression, timeout=10
        )
        emitted = await asyncio.to_thread(emit_agent_trace, exporter)

        assert_sdk_trace_arrived(running.next, emitted)
        assert counter(running.metrics, "tracescore_spans_received", transport="grpc") == 3
        assert requests_counted(running.metrics, "grpc", "ok") >= 1


@pytest.mark.parametrize(
    "compression",
    [HttpCompression.NoCompression, HttpCompression.Gzip, HttpCompression.Deflate],
    ids=["plain", "gzip", "deflate"],
)
async def test_sdk_http_exporter_to_http_receiver(compression: HttpCompression) -> None:
    async with running_http() as running:
        exporter = HttpSpanExporter(endpoint=f"{running.url}/v1/traces", compression=compression, timeout=10)
        emitted = await asyncio.to_thread(emit_agent_trace, exporter)

        assert_sdk_trace_arrived(running.next, emitted)
        assert counter(running.metrics, "tracescore_spans_received", transport="http") == 3


# --- HTTP: fixtures, responses and the API -------------------------------------------------------------


async def test_json_with_bad_enums_and_empty_objects_is_answered_with_what_was_left_out() -> None:
    # OTLP partial success: the rejected spans counted and named; a request of nothing, a warning.
    good = json_span("good")
    bad_kind = json_span("bad kind", span_id="00000000000000b1", kind="banana")
    bad_code = json_span("bad code", span_id="00000000000000b2", status={"code": "BAD"})
    async with running_http() as running:
        url = f"{running.url}/v1/traces"
        mixed = await http_request(
            "POST", url, data=json_bytes(json_request(good, bad_kind, bad_code)), headers=JSON
        )
        empty = await http_request("POST", url, data=b"{}", headers=JSON)
        empty_logs = await http_request("POST", f"{running.url}/v1/logs", data=b"{}", headers=JSON)
        empty_scope = await http_request(
            "POST", url, data=b'{"resourceSpans": [{"scopeSpans": [{}]}]}', headers=JSON
        )
    assert mixed.status == 200
    partial = mixed.json()["partialSuccess"]
    assert partial["rejectedSpans"] == "2"
    assert "span 'bad kind': kind 'banana' is not a SpanKind" in partial["errorMessage"]
    assert "span 'bad code': status.code 'BAD' is not a StatusCode" in partial["errorMessage"]
    assert [span.name for span in running.next.spans] == ["good"]
    assert (empty.status, empty.json()) == (
        200,
        {"partialSuccess": {"errorMessage": "the request holds no spans: nothing was stored"}},
    )
    assert (empty_logs.status, empty_logs.json()) == (
        200,
        {"partialSuccess": {"errorMessage": "the request holds no log records: nothing was stored"}},
    )
    assert empty_scope.json() == {
        "partialSuccess": {"errorMessage": "resourceSpans[0].scopeSpans[0] holds no spans"}
    }


async def test_fixture_posted_as_json() -> None:
    raw = json.loads(SEMCONV_MAIN.read_bytes())
    raw_spans = [s for rs in raw["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    async with running_http() as running:
        reply = await http_request(
            "POST",
            f"{running.url}/v1/traces",
            data=SEMCONV_MAIN.read_bytes(),
            headers={"Content-Type": "application/json; charset=utf-8"},
        )
    assert reply.status == 200
    assert reply.content_type == "application/json"
    assert reply.json() == {}

    spans = running.next.spans
    assert [(s.trace_id, s.span_id, s.parent_span_id) for s in spans] == [
        (r["traceId"], r["spanId"], r.get("parentSpanId", "")) for r in raw_spans
    ]
    chat = next(s for s in spans if s.name == "chat gpt-4o")
    assert chat.attributes["gen_ai.request.temperature"] == 0.2
    assert chat.attributes["gen_ai.usage.output_tokens"] == 17
    assert type(chat.attributes["gen_ai.usage.output_tokens"]) is int
    assert chat.attributes["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert chat.attributes["gen_ai.response.model"] == "gpt-4o-2024-08-06"


async def test_protobuf_response_parses_as_export_response() -> None:
    body = proto_request(proto_span("a"), proto_span("b", span_id=SPAN_2)).SerializeToString()
    async with running_http() as running:
        reply = await http_request("POST", f"{running.url}/v1/traces", data=body, headers=PROTOBUF)
    assert reply.status == 200
    assert reply.content_type == "application/x-protobuf"
    assert not ExportTraceServiceResponse.FromString(reply.body).HasField("partial_success")
    assert [s.name for s in running.next.spans] == ["a", "b"]
    assert requests_counted(running.metrics, "http", "ok") == 1


async def test_gzip_without_content_encoding_is_detected() -> None:
    body = gzip.compress(json_bytes(json_request(json_span("zipped"))))
    async with running_http() as running:
        reply = await http_request("POST", f"{running.url}/v1/traces", data=body, headers=JSON)
    assert reply.status == 200
    assert [s.name for s in running.next.spans] == ["zipped"]


async def test_consumer_failure_is_503_with_retry_after() -> None:
    body = proto_request(proto_span("a")).SerializeToString()
    async with running_http(next=Failing()) as running:
        reply = await http_request("POST", f"{running.url}/v1/traces", data=body, headers=PROTOBUF)
    assert reply.status == 503
    assert int(reply.headers["Retry-After"]) > 0
    status = status_pb2.Status.FromString(reply.body)
    assert status.code == code_pb2.UNAVAILABLE
    assert status.message == "spans could not be stored: the store is unavailable; retry later"
    assert running.next.calls == 1
    assert requests_counted(running.metrics, "http", UNAVAILABLE) == 1
    assert counter(running.metrics, "tracescore_spans_received", transport="http") == 0


async def test_a_store_that_refuses_the_spans_is_400_never_retried(store: Store) -> None:
    # A real store whose span table is gone: the insert fails the same way every time, so the
    # client is told not to retry (OTLP/HTTP retries 429, 502, 503 and 504 only).
    await store.query("DROP TABLE otel_traces")
    body = proto_request(proto_span("a")).SerializeToString()
    async with running_http(next=SpanSink(store, Recorder(), Metrics())) as running:
        reply = await http_request("POST", f"{running.url}/v1/traces", data=body, headers=PROTOBUF)
    assert reply.status == 400
    assert "Retry-After" not in reply.headers
    status = status_pb2.Status.FromString(reply.body)
    assert status.code == code_pb2.INVALID_ARGUMENT
    # A fixed sentence: the database's own text (and chDB's data directory) stays in the log.
    assert status.message == (
        "spans could not be stored: the store refused them; do not retry (the service log has the detail)"
    )
    assert requests_counted(running.metrics, "http", "failed") == 1


async def _store_busy(store: Store, seconds: float) -> None:
    """Keep the store's one worker thread on a long query (a store that cannot keep up)."""
    await store.query("SELECT sleep({s:Float64}) AS slept", {"s": seconds})


async def test_intake_beyond_the_commit_backlog_is_429_with_retry_after(store: Store) -> None:
    sink_metrics = Metrics()
    sink = SpanSink(store, Recorder(), sink_metrics, max_pending_items=1)
    body = proto_request(proto_span("a")).SerializeToString()
    async with running_http(next=sink) as running:
        busy = asyncio.create_task(_store_busy(store, 1.0))
        await asyncio.sleep(0.1)
        url = f"{running.url}/v1/traces"
        first = asyncio.create_task(http_request("POST", url, data=body, headers=PROTOBUF))
        await asyncio.sleep(0.2)  # the first waits for its commit behind the slow query
        refused = await http_request("POST", url, data=body, headers=PROTOBUF)
        accepted = await first
        await busy
        await sink.shutdown()
    assert accepted.status == 200
    assert refused.status == 429
    assert int(refused.headers["Retry-After"]) >= 1
    status = status_pb2.Status.FromString(refused.body)
    assert status.code == code_pb2.RESOURCE_EXHAUSTED
    [detail] = status.details
    retry = error_details_pb2.RetryInfo()
    assert detail.Unpack(retry) and retry.retry_delay.seconds >= 1
    assert requests_counted(running.metrics, "http", "refused") == 1
    assert counter(sink_metrics, "tracescore_requests_refused", reason="store_backlog") == 1


async def test_healthz_is_liveness_and_readyz_is_readiness() -> None:
    degraded = {"status": "degraded", "store": {"status": "failing", "error": "cannot reach ClickHouse"}}
    async with running_http(health=StaticHealth(is_ready=False, body=degraded)) as running:
        alive = await http_request("GET", f"{running.url}/healthz")
        ready = await http_request("GET", f"{running.url}/readyz")
    assert (alive.status, alive.json()) == (200, degraded)  # the process answers: it is alive
    assert (ready.status, ready.json()) == (503, degraded)  # but it cannot take spans now
    async with running_http(health=StaticHealth()) as running:
        ready = await http_request("GET", f"{running.url}/readyz")
    assert ready.status == 200


async def test_metrics_endpoint_shows_counts() -> None:
    body = proto_request(proto_span("a"), proto_span("bad", trace_id=b"\x01")).SerializeToString()
    async with running_http() as running:
        posted = await http_request("POST", f"{running.url}/v1/traces", data=body, headers=PROTOBUF)
        reply = await http_request("GET", f"{running.url}/metrics")
    assert posted.status == 200
    assert reply.status == 200
    assert reply.headers["Content-Type"] == PROMETHEUS_CONTENT_TYPE
    text = reply.body.decode()
    assert 'tracescore_spans_received_total{transport="http"} 1.0' in text
    assert 'tracescore_spans_rejected_total{transport="http"} 1.0' in text
    assert 'tracescore_export_requests_total{outcome="partial",transport="http"} 1.0' in text


async def test_wrong_method_and_path() -> None:
    async with running_http() as running:
        wrong_method = await http_request("GET", f"{running.url}/v1/traces")
        wrong_path = await http_request("POST", f"{running.url}/v1/nothing", data=b"{}", headers=JSON)
    assert (wrong_method.status, wrong_path.status) == (405, 404)


# --- gRPC semantics ------------------------------------------------------------------------------------


async def export_grpc(running: Running, payload: bytes, **kwargs: Any) -> ExportTraceServiceResponse:
    async with grpc.aio.insecure_channel(f"{LOOPBACK}:{running.port}") as channel:
        call = channel.unary_unary(EXPORT_METHOD, response_deserializer=ExportTraceServiceResponse.FromString)
        response: ExportTraceServiceResponse = await call(payload, timeout=10, **kwargs)
        return response


async def test_grpc_consumer_failure_is_unavailable() -> None:
    async with running_grpc(next=Failing()) as running:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await export_grpc(running, proto_request(proto_span("a")).SerializeToString())
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE
    assert info.value.details() == "spans could not be stored: the store is unavailable; retry later"
    assert requests_counted(running.metrics, "grpc", UNAVAILABLE) == 1


async def test_grpc_store_that_refuses_the_spans_is_invalid_argument(store: Store) -> None:
    await store.query("DROP TABLE otel_traces")
    async with running_grpc(next=SpanSink(store, Recorder(), Metrics())) as running:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await export_grpc(running, proto_request(proto_span("a")).SerializeToString())
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # OTLP clients do not retry it
    details = info.value.details() or ""
    assert details.endswith("the store refused them; do not retry (the service log has the detail)")
    assert "UNKNOWN_TABLE" not in details and "chdb://" not in details
    assert requests_counted(running.metrics, "grpc", "failed") == 1


async def test_grpc_intake_beyond_the_commit_backlog_is_resource_exhausted_with_retry_info(
    store: Store,
) -> None:
    sink = SpanSink(store, Recorder(), Metrics(), max_pending_items=1)
    payload = proto_request(proto_span("a")).SerializeToString()
    async with running_grpc(next=sink) as running:
        busy = asyncio.create_task(_store_busy(store, 1.0))
        await asyncio.sleep(0.1)
        first = asyncio.create_task(export_grpc(running, payload))
        await asyncio.sleep(0.2)
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await export_grpc(running, payload)
        await first
        await busy
        await sink.shutdown()
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    details = dict(info.value.trailing_metadata() or ())["grpc-status-details-bin"]
    status = status_pb2.Status.FromString(details)
    retry = error_details_pb2.RetryInfo()
    assert status.details[0].Unpack(retry) and retry.retry_delay.seconds >= 1


async def test_a_store_disk_under_its_floor_is_503_and_unavailable_with_when_to_retry(store: Store) -> None:
    # An outage, not a request to slow down: both codes are retried by OTLP exporters, after the hint.
    store.free_space = FreeSpaceGuard(100 * 2**20, 0.0, read=lambda: DiskSpace(10 * 2**20, 2**30))
    store.free_space.refresh()
    sink = SpanSink(store, Recorder(), Metrics())
    payload = proto_request(proto_span("a")).SerializeToString()
    async with running_http(next=sink) as http, running_grpc(next=sink) as grpc_running:
        refused = await http_request("POST", f"{http.url}/v1/traces", data=payload, headers=PROTOBUF)
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await export_grpc(grpc_running, payload)
    await sink.shutdown()
    assert refused.status == 503 and int(refused.headers["Retry-After"]) >= 1
    message = "new spans refused: the store's disk has 10 MiB free, under its floor of 100 MiB"
    assert status_pb2.Status.FromString(refused.body).message.startswith(message)
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE
    assert (info.value.details() or "").startswith(message)
    details = dict(info.value.trailing_metadata() or ())["grpc-status-details-bin"]
    retry = error_details_pb2.RetryInfo()
    assert status_pb2.Status.FromString(details).details[0].Unpack(retry) and retry.retry_delay.seconds >= 1
    assert await store.query("SELECT count() AS n FROM span_ledger") == [{"n": 0}]


async def test_grpc_empty_request_succeeds_with_a_warning_without_calling_next() -> None:
    async with running_grpc() as running:
        response = await export_grpc(running, b"")
    assert response.partial_success.rejected_spans == 0  # a warning, as OTLP partial success allows
    assert response.partial_success.error_message == "the request holds no spans: nothing was stored"
    assert running.next.batches == []


# --- lifecycle -----------------------------------------------------------------------------------------


async def test_lifecycle_shutdown_is_idempotent_and_safe_before_start() -> None:
    recorder = Recorder()
    grpc_receiver = GrpcReceiver(receiver_config(), next=recorder, metrics=Metrics())
    http_receiver = HttpReceiver(receiver_config(), next=recorder, metrics=Metrics(), scores=StaticScores())
    await grpc_receiver.shutdown()
    await http_receiver.shutdown()
    assert (grpc_receiver.port, http_receiver.port) == (0, 0)

    await grpc_receiver.start()
    await http_receiver.start()
    try:
        assert grpc_receiver.port > 0 and http_receiver.port > 0
        reply = await http_request("GET", f"http://{LOOPBACK}:{http_receiver.port}/healthz")
        assert reply.status == 200
    finally:
        await grpc_receiver.shutdown()
        await http_receiver.shutdown()
    await grpc_receiver.shutdown()
    await http_receiver.shutdown()

    # Stopped means stopped: nothing listens on the ports any more.
    with pytest.raises(aiohttp.ClientConnectionError):
        await http_request("GET", f"http://{LOOPBACK}:{http_receiver.port}/healthz")


async def test_two_receivers_get_their_own_free_ports() -> None:
    async with running_http() as one, running_http() as two, running_grpc() as three, running_grpc() as four:
        assert len({one.port, two.port, three.port, four.port}) == 4


async def test_busy_port_is_an_error() -> None:
    async with running_http() as http_running, running_grpc() as grpc_running:
        config = receiver_config().model_copy(update={"http_port": http_running.port})
        http_clash = HttpReceiver(config, next=Recorder(), metrics=Metrics(), scores=StaticScores())
        in_use = (
            "receiver cannot listen on 127.0.0.1:{port}: Address already in use (another tracescore or an "
            "OpenTelemetry Collector?); choose another port with {flag}, {variable} or {key}"
        )
        message = in_use.format(
            port=http_running.port,
            flag="--http-port",
            variable="TRACESCORE_HTTP_PORT",
            key="receiver.http_port",
        )
        with pytest.raises(OSError) as http_error:
            await http_clash.start()
        assert str(http_error.value) == "OTLP/HTTP " + message
        await http_clash.shutdown()

        config = receiver_config().model_copy(update={"grpc_port": grpc_running.port})
        grpc_clash = GrpcReceiver(config, next=Recorder(), metrics=Metrics())
        message = in_use.format(
            port=grpc_running.port,
            flag="--grpc-port",
            variable="TRACESCORE_GRPC_PORT",
            key="receiver.grpc_port",
        )
        with pytest.raises(OSError, match=re.escape("OTLP/gRPC " + message)):
            await grpc_clash.start()
        await grpc_clash.shutdown()
