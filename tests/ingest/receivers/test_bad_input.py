"""Bad input to the receivers: a clear error naming the problem, nothing half-delivered, service still up."""

from __future__ import annotations

import gzip
import tracemalloc
import zlib
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from tests.support.otlp import (
    EXPORT_METHOD,
    LOOPBACK,
    SPAN_1,
    SPAN_2,
    TRACE_A,
    Reply,
    Running,
    counter,
    http_request,
    json_bytes,
    json_request,
    json_span,
    proto_request,
    proto_span,
    requests_counted,
    running_grpc,
    running_http,
)

PROTOBUF = {"Content-Type": "application/x-protobuf"}
JSON = {"Content-Type": "application/json"}
LIMIT = 64 * 1024
SPAN_3 = bytes.fromhex("b5dc95d9aa98161c")


async def post(running: Running, body: Any, headers: dict[str, str]) -> Reply:
    return await http_request("POST", f"{running.url}/v1/traces", data=body, headers=headers)


async def assert_still_serving(running: Running) -> None:
    """A good request right after the bad one is accepted and delivered."""
    before = len(running.next.spans)
    reply = await post(running, proto_request(proto_span("after")).SerializeToString(), PROTOBUF)
    assert reply.status == 200
    assert [s.name for s in running.next.spans[before:]] == ["after"]


def status_of(reply: Reply) -> status_pb2.Status:
    """The google.rpc.Status error body, read in the encoding the response says it has."""
    if reply.content_type == "application/json":
        return json_format.Parse(reply.body, status_pb2.Status())
    assert reply.content_type == "application/x-protobuf"
    return status_pb2.Status.FromString(reply.body)


# --- HTTP: the request as a whole is rejected ------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "headers", "content_type", "message"),
    [
        (b"\xff\xfe garbage", PROTOBUF, "application/x-protobuf", "not a protobuf ExportTraceServiceRequest"),
        (b'{"resourceSpans": [', JSON, "application/json", "invalid JSON"),
        (b'{"traces": []}', JSON, "application/json", "not an OTLP ExportTraceServiceRequest"),
        (b"[]", JSON, "application/json", "must be a JSON object"),
        (gzip.compress(b"{}")[:-6], JSON, "application/json", "gzip body is truncated"),
        (b"{}", {**JSON, "Content-Encoding": "gzip"}, "application/json", "invalid gzip body"),
    ],
    ids=["garbage-protobuf", "invalid-json", "not-a-request", "json-array", "truncated-gzip", "not-gzip"],
)
async def test_undecodable_body_is_400(
    body: bytes, headers: dict[str, str], content_type: str, message: str
) -> None:
    async with running_http() as running:
        reply = await post(running, body, headers)

        assert reply.status == 400
        assert reply.content_type == content_type  # the error comes back in the request's encoding
        status = status_of(reply)
        assert status.code == code_pb2.INVALID_ARGUMENT
        assert message in status.message
        assert running.next.batches == []
        assert requests_counted(running.metrics, "http", "invalid") == 1
        await assert_still_serving(running)


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ({"Content-Type": "text/plain"}, "unsupported Content-Type 'text/plain'"),
        ({"Content-Type": "application/x-www-form-urlencoded"}, "unsupported Content-Type"),
        ({**PROTOBUF, "Content-Encoding": "br"}, "unsupported Content-Encoding 'br'"),
    ],
)
async def test_unsupported_media_type_is_415(headers: dict[str, str], message: str) -> None:
    async with running_http() as running:
        reply = await post(running, proto_request(proto_span("a")).SerializeToString(), headers)

        assert reply.status == 415
        status = status_of(reply)
        assert message in status.message
        assert "application/x-protobuf" in status.message or "gzip" in status.message
        assert running.next.batches == []
        assert requests_counted(running.metrics, "http", "unsupported") == 1
        await assert_still_serving(running)


async def test_oversized_by_content_length_is_413() -> None:
    body = proto_request(proto_span("x" * (LIMIT + 10))).SerializeToString()
    async with running_http(max_request_bytes=LIMIT) as running:
        reply = await post(running, body, PROTOBUF)

        assert reply.status == 413
        status = status_of(reply)
        assert status.code == code_pb2.RESOURCE_EXHAUSTED
        assert f"request body of {len(body)} bytes is over the limit of {LIMIT}" in status.message
        assert running.next.batches == []
        assert requests_counted(running.metrics, "http", "too_large") == 1
        await assert_still_serving(running)


async def test_oversized_chunked_body_is_413() -> None:
    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: the server must count as it reads
        for _ in range(8):
            yield b"\x00" * (LIMIT // 4)

    async with running_http(max_request_bytes=LIMIT) as running:
        reply = await post(running, chunks(), PROTOBUF)

        assert reply.status == 413
        assert f"over the limit of {LIMIT} bytes" in status_of(reply).message
        await assert_still_serving(running)


async def test_gzip_bomb_is_413_without_inflating_it() -> None:
    inflated = 256 * 1024 * 1024
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zero_block = bytes(1024 * 1024)
    bomb = b"".join(compressor.compress(zero_block) for _ in range(inflated // len(zero_block)))
    bomb += compressor.flush()
    assert len(bomb) < LIMIT * 8

    async with running_http(max_request_bytes=LIMIT * 8) as running:
        tracemalloc.start()
        try:
            reply = await post(running, bomb, {**PROTOBUF, "Content-Encoding": "gzip"})
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()

        assert reply.status == 413
        assert "decompressed request body is over the limit" in status_of(reply).message
        assert peak < 32 * 1024 * 1024  # a fraction of the 256 MiB the body would inflate to
        assert running.next.batches == []
        await assert_still_serving(running)


# --- HTTP: some spans bad, the rest delivered ------------------------------------------------------------


async def test_bad_ids_in_protobuf_give_partial_success() -> None:
    request = proto_request(
        proto_span("good-1"),
        proto_span("short-trace", trace_id=TRACE_A[:8]),
        proto_span("zero-trace", trace_id=bytes(16)),
        proto_span("zero-span", span_id=bytes(8), trace_id=TRACE_A),
        proto_span("good-2", span_id=SPAN_2),
    )
    async with running_http() as running:
        reply = await post(running, request.SerializeToString(), PROTOBUF)

        assert reply.status == 200
        response = ExportTraceServiceResponse.FromString(reply.body)
        assert response.partial_success.rejected_spans == 3
        for name in ("short-trace", "zero-trace", "zero-span"):
            assert name in response.partial_success.error_message
        delivered = [(s.name, s.span_id) for s in running.next.spans]
        assert delivered == [("good-1", SPAN_1.hex()), ("good-2", SPAN_2.hex())]
        assert counter(running.metrics, "tracescore_spans_rejected", transport="http") == 3
        assert counter(running.metrics, "tracescore_spans_received", transport="http") == 2


async def test_bad_ids_in_json_give_partial_success() -> None:
    document = json_request(
        json_span("good-1"),
        json_span("too-short", trace_id="5dbdf986"),
        json_span("non-hex", span_id="594f8d102c7c4a1g"),
        json_span("all-zero", trace_id="0" * 32),
        json_span("good-2", span_id=SPAN_3.hex()),
    )
    async with running_http() as running:
        reply = await post(running, json_bytes(document), JSON)

        assert reply.status == 200
        assert reply.content_type == "application/json"
        partial = reply.json()["partialSuccess"]
        assert int(partial["rejectedSpans"]) == 3
        assert "too-short" in partial["errorMessage"] and "spanId is not hex" in partial["errorMessage"]
        delivered = [(s.name, s.span_id) for s in running.next.spans]
        assert delivered == [("good-1", SPAN_1.hex()), ("good-2", SPAN_3.hex())]
        await assert_still_serving(running)


async def test_only_bad_spans_is_200_and_nothing_delivered() -> None:
    document = json_request(json_span("bad", trace_id="00"))
    async with running_http() as running:
        reply = await post(running, json_bytes(document), JSON)
    assert reply.status == 200
    assert int(reply.json()["partialSuccess"]["rejectedSpans"]) == 1
    assert running.next.batches == []


# --- gRPC --------------------------------------------------------------------------------------------------


async def export_grpc(running: Running, payload: bytes, **kwargs: Any) -> ExportTraceServiceResponse:
    async with grpc.aio.insecure_channel(f"{LOOPBACK}:{running.port}") as channel:
        call = channel.unary_unary(EXPORT_METHOD, response_deserializer=ExportTraceServiceResponse.FromString)
        response: ExportTraceServiceResponse = await call(payload, timeout=10, **kwargs)
        return response


async def assert_grpc_still_serving(running: Running) -> None:
    before = len(running.next.spans)
    response = await export_grpc(running, proto_request(proto_span("after")).SerializeToString())
    assert not response.HasField("partial_success")
    assert [s.name for s in running.next.spans[before:]] == ["after"]


async def test_grpc_garbage_is_invalid_argument() -> None:
    async with running_grpc() as running:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await export_grpc(running, b"\xff\xfe garbage")

        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "not a protobuf ExportTraceServiceRequest" in (info.value.details() or "")
        assert running.next.batches == []
        assert requests_counted(running.metrics, "grpc", "invalid") == 1
        await assert_grpc_still_serving(running)


@pytest.mark.parametrize("compression", [None, grpc.Compression.Gzip], ids=["plain", "gzip"])
async def test_grpc_bad_span_among_good_is_partial_success(compression: grpc.Compression | None) -> None:
    request = proto_request(
        proto_span("good-1"), proto_span("bad", span_id=b"\x01\x02"), proto_span("good-2", span_id=SPAN_2)
    )
    async with running_grpc() as running:
        response = await export_grpc(running, request.SerializeToString(), compression=compression)

        assert response.partial_success.rejected_spans == 1
        assert response.partial_success.error_message == "span 'bad': span_id must be 8 bytes, got 2"
        assert [s.name for s in running.next.spans] == ["good-1", "good-2"]
        assert counter(running.metrics, "tracescore_spans_rejected", transport="grpc") == 1
        assert requests_counted(running.metrics, "grpc", "partial") == 1
        await assert_grpc_still_serving(running)


async def test_grpc_oversized_message_is_resource_exhausted() -> None:
    body = proto_request(proto_span("x" * (LIMIT + 10))).SerializeToString()
    async with running_grpc(max_request_bytes=LIMIT) as running:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await export_grpc(running, body)

        assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert running.next.batches == []
        await assert_grpc_still_serving(running)
