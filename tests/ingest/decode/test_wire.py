"""A protobuf request read from its bytes, envelope by envelope, decodes exactly as protobuf's own parse
of the whole request would (merged envelopes, unknown fields, unreadable input refused as a whole),
and is handed on in bounded slices."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

import tracescore.ingest.decode
from tests.ingest.receivers.test_logs import good_record, logs_request
from tests.support.otlp import kv, proto_request, proto_span
from tracescore.ingest.decode import SIGNAL_LOGS, SIGNAL_TRACES, SLICE_BOUNDS, DecodeError, read
from tracescore.ingest.decode import wire as wire_module
from tracescore.ingest.decode.batch import MAX_ERROR_MESSAGES
from tracescore.ingest.decode.protobuf import logs_request_to_batch, request_to_batch
from tracescore.schemas.spans import SpanBatch


@pytest.fixture(autouse=True)
def read_from_the_wire(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every request here is read envelope by envelope, however small (larger ones always are)."""
    monkeypatch.setattr(tracescore.ingest.decode, "WHOLE_PARSE_BYTES", 0)


def span_ids(index: int) -> dict[str, bytes]:
    return {"trace_id": (index + 1).to_bytes(16, "big"), "span_id": (index + 1).to_bytes(8, "big")}


def request_of(count: int, attributes: int = 1, text: str = "x") -> ExportTraceServiceRequest:
    return proto_request(
        *(
            proto_span(f"s{i}", **span_ids(i), attributes=[kv(f"k{j}", text) for j in range(attributes)])
            for i in range(count)
        )
    )


def whole(payload: bytes) -> SpanBatch:
    """What decoding the request parsed whole by protobuf gives (or raises)."""
    return request_to_batch(ExportTraceServiceRequest.FromString(payload))


def dumped(batch: SpanBatch) -> list[dict[str, Any]]:
    return [span.model_dump() for span in batch.spans]


def field(number: int, wire_type: int, value: bytes) -> bytes:
    """One encoded field (length-delimited values get their length)."""
    key = _varint(number << 3 | wire_type)
    if wire_type == 2:
        return key + _varint(len(value)) + value
    return key + value


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def test_envelopes_split_and_in_any_order_decode_as_protobuf_merges_them() -> None:
    request = request_of(3)
    resource, scope = request.resource_spans[0], request.resource_spans[0].scope_spans[0]
    spans = [span.SerializeToString() for span in scope.spans]
    scope_bytes = (
        field(2, 2, spans[0])
        + field(1, 2, b"\x0a\x03one")  # the scope's name ...
        + field(99, 0, b"\x07")  # an unknown varint field
        + field(2, 2, spans[1])
        + field(1, 2, b"\x12\x032.0")  # ... and its version, given apart: merged
        + field(3, 2, b"https://schema/1")
        + field(2, 2, spans[2])
        + field(98, 3, field(1, 0, b"\x01") + _varint(98 << 3 | 4))  # an unknown group
    )
    resource_bytes = (
        field(2, 2, scope_bytes)
        + field(1, 2, resource.resource.SerializeToString())  # service.name ...
        + field(1, 2, field(1, 2, kv("deployment.environment", "prod").SerializeToString()))  # ... and more
        + field(3, 2, b"https://schema/resource")
    )
    payload = field(1, 2, resource_bytes) + field(7, 5, b"\x00\x00\x00\x00")
    decoded = read(SIGNAL_TRACES, "otlp_proto", payload)
    assert decoded.items == 3
    assert dumped(decoded.batch()) == dumped(whole(payload))
    assert {(s.scope_name, s.scope_version) for s in decoded.batch().spans} == {("one", "2.0")}
    assert decoded.batch().spans[0].resource_attributes == {
        "service.name": "svc",
        "deployment.environment": "prod",
    }


def test_logs_envelopes_keep_their_schema_urls_and_scope_attributes() -> None:
    request = logs_request(good_record(), good_record())
    request.resource_logs[0].schema_url = "https://schema/resource"
    request.resource_logs[0].scope_logs[0].schema_url = "https://schema/scope"
    request.resource_logs[0].scope_logs[0].scope.attributes.append(kv("scope.key", "v"))
    payload = request.SerializeToString()
    decoded = read(SIGNAL_LOGS, "otlp_proto", payload).batch()
    expected = logs_request_to_batch(ExportLogsServiceRequest.FromString(payload))
    assert [r.model_dump() for r in decoded.logs] == [r.model_dump() for r in expected.logs]
    assert decoded.logs[0].resource_schema_url == "https://schema/resource"
    assert decoded.logs[0].scope_attributes == {"scope.key": "v"}


def test_runs_of_items_give_the_same_spans_however_small(monkeypatch: pytest.MonkeyPatch) -> None:
    payload = request_of(50, attributes=3).SerializeToString()
    monkeypatch.setattr(wire_module, "RUN_BYTES", 100)  # about one span a run
    assert dumped(read(SIGNAL_TRACES, "otlp_proto", payload).batch()) == dumped(whole(payload))


@pytest.mark.parametrize(
    "payload",
    [
        b"not a protobuf",
        b"\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",  # a varint longer than 10 bytes
        b"\x0a\x05\x12\x10abc",  # a scope longer than its resource
        field(1, 2, field(2, 2, field(2, 2, b"\x0a\x05ab"))),  # a span's trace id runs past the span
        field(1, 2, field(2, 2, field(3, 2, b"\xff\xfe"))),  # a schema URL that is not UTF-8
        field(1, 2, field(2, 2, field(2, 2, field(5, 2, b"\xc3\x28")))),  # a span name that is not UTF-8
    ],
)
def test_unreadable_requests_are_refused_as_a_whole_as_protobuf_refuses_them(payload: bytes) -> None:
    with pytest.raises(Exception):  # noqa: B017 -- protobuf raises its own DecodeError
        ExportTraceServiceRequest.FromString(payload)
    with pytest.raises(DecodeError, match="not a protobuf ExportTraceServiceRequest"):
        read(SIGNAL_TRACES, "otlp_proto", payload)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_any_damage_to_a_request_is_read_as_protobuf_reads_it(data: st.DataObject) -> None:
    payload = bytearray(request_of(4, attributes=2, text="héllo").SerializeToString())
    for _ in range(data.draw(st.integers(1, 3))):
        position = data.draw(st.integers(0, len(payload) - 1))
        payload[position] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(len(payload) // 2, len(payload)))
    damaged = bytes(payload[:cut])
    try:
        expected = dumped(whole(damaged))
    except Exception:
        with pytest.raises(DecodeError):
            read(SIGNAL_TRACES, "otlp_proto", damaged).batch()
        return
    assert dumped(read(SIGNAL_TRACES, "otlp_proto", damaged).batch()) == expected


def test_a_large_request_is_handed_on_in_bounded_slices_holding_every_span() -> None:
    small = read(SIGNAL_TRACES, "otlp_proto", request_of(5_000).SerializeToString())
    sizes = [len(batch.spans) for batch in small.slices()]
    assert sum(sizes) == 5_000 and max(sizes) == SLICE_BOUNDS.items

    crowded = read(SIGNAL_TRACES, "otlp_proto", request_of(50, attributes=1_000).SerializeToString())
    values = [sum(len(span.attributes) for span in batch.spans) for batch in crowded.slices()]
    assert sum(values) == 50_000 and max(values) <= SLICE_BOUNDS.values + 1_000

    text = "t" * (3 * SLICE_BOUNDS.wire_bytes // 2)
    large = read(SIGNAL_TRACES, "otlp_proto", request_of(3, text=text).SerializeToString())
    assert [len(batch.spans) for batch in large.slices()] == [1, 1, 1, 0]  # each alone; the last: counts
    assert len(text) < large.largest_item < len(text) + 100


def test_rejections_are_counted_across_slices_with_a_few_reasons() -> None:
    spans = [proto_span(f"s{i}", **span_ids(i)) for i in range(4_000)]
    for span in spans[::100]:
        span.span_id = b"\x00" * 8  # rejected: all zeros
    payload = proto_request(*spans).SerializeToString()
    slices = list(read(SIGNAL_TRACES, "otlp_proto", payload).slices())
    assert sum(batch.rejected_items for batch in slices) == 40
    assert sum(len(batch.spans) for batch in slices) == 3_960
    errors = [error for batch in slices for error in batch.errors]
    assert len(errors) == MAX_ERROR_MESSAGES + 1 and errors[-1] == "... and 30 more"
