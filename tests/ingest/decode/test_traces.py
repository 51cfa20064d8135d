"""The encoding registry: protobuf and OTLP/JSON export requests decoded to SpanBatch, bad spans counted."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1 import trace_pb2

from tests.support.fixture_files import OTLP_DIR
from tests.support.otlp import (
    SPAN_1,
    SPAN_2,
    TRACE_A,
    json_bytes,
    json_request,
    json_span,
    kv,
    proto_request,
    proto_span,
)
from tracescore.ingest.decode import (
    ENCODINGS,
    DecodeError,
    decode_traces,
    encoding_for_content_type,
)
from tracescore.ingest.decode.batch import MAX_ERROR_MESSAGES
from tracescore.ingest.receivers.intake import export_response
from tracescore.schemas.spans import Span, SpanBatch

LINK_TRACE, LINK_SPAN = "0102030405060708090a0b0c0d0e0f10", "0102030405060708"
SEMCONV_MAIN = OTLP_DIR / "otel_genai_semconv__main.traces.json"
TRACE_FIXTURES = sorted(OTLP_DIR.glob("*.traces.json"))


def test_registry_names_both_encodings() -> None:
    assert set(ENCODINGS) == {"otlp_proto", "otlp_json"}


def test_unknown_encoding_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown encoding 'avro'"):
        decode_traces("avro", b"")


# --- protobuf ------------------------------------------------------------------------------------


def test_proto_span_converted_with_every_field() -> None:
    span = proto_span(
        "chat gpt-4o",
        parent=SPAN_2,
        kind=trace_pb2.Span.SPAN_KIND_CLIENT,
        trace_state="k=v",
        start_time_unix_nano=1_795_340_512_811_591_760,
        end_time_unix_nano=1_795_340_512_857_080_265,
        status=trace_pb2.Status(code=trace_pb2.Status.STATUS_CODE_ERROR, message="boom"),
    )
    span.attributes.extend(
        [
            kv("s", "text"),
            kv("b", True),
            kv("i", 9_007_199_254_740_993),
            kv("d", 0.5),
            kv("raw", b"\x00\x01"),
            kv("arr", ["a", 1, [2.5]]),
            kv("map", {"inner": {"x": False}}),
        ]
    )
    event = span.events.add(name="gen_ai.choice", time_unix_nano=42)
    event.attributes.append(kv("index", 0))
    link = span.links.add(trace_id=bytes(range(1, 17)), span_id=bytes(range(1, 9)), trace_state="a=b")
    link.attributes.append(kv("why", "follows"))

    batch = decode_traces("otlp_proto", proto_request(span, service="weather").SerializeToString())

    assert batch.rejected_items == 0 and batch.errors == []
    [got] = batch.spans
    assert isinstance(got, Span)
    assert got.trace_id == "5dbdf98695bd5785f3d3e61006ad2dba"
    assert got.span_id == "594f8d102c7c4a19"
    assert got.parent_span_id == "41577dfd278c2ded"
    assert (got.name, got.kind, got.trace_state) == ("chat gpt-4o", 3, "k=v")
    assert got.start_time_unix_nano == 1_795_340_512_811_591_760
    assert got.end_time_unix_nano == 1_795_340_512_857_080_265
    assert got.attributes == {
        "s": "text",
        "b": True,
        "i": 9_007_199_254_740_993,
        "d": 0.5,
        "raw": b"\x00\x01",
        "arr": ["a", 1, [2.5]],
        "map": {"inner": {"x": False}},
    }
    assert type(got.attributes["i"]) is int and type(got.attributes["b"]) is bool
    events = [(e.name, e.time_unix_nano, e.attributes) for e in got.events]
    assert events == [("gen_ai.choice", 42, {"index": 0})]
    assert [(lk.trace_id, lk.span_id, lk.trace_state, lk.attributes) for lk in got.links] == [
        ("0102030405060708090a0b0c0d0e0f10", "0102030405060708", "a=b", {"why": "follows"})
    ]
    assert (got.status_code, got.status_message) == (2, "boom")
    assert got.resource_attributes == {"service.name": "weather"}
    assert got.service_name == "weather"
    assert (got.scope_name, got.scope_version) == ("test.scope", "1.2.3")


def test_proto_empty_attribute_value_is_none() -> None:
    span = proto_span("s")
    span.attributes.add(key="empty")
    [got] = decode_traces("otlp_proto", proto_request(span).SerializeToString()).spans
    assert got.attributes == {"empty": None}


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ({"trace_id": TRACE_A[:5]}, "trace_id must be 16 bytes, got 5"),
        ({"trace_id": b""}, "trace_id must be 16 bytes, got 0"),
        ({"trace_id": bytes(16)}, "trace_id is all zeros"),
        ({"span_id": SPAN_1[:7]}, "span_id must be 8 bytes, got 7"),
        ({"span_id": bytes(8)}, "span_id is all zeros"),
        ({"parent": b"\x01\x02\x03"}, "parent_span_id must be 8 bytes or empty, got 3"),
    ],
)
def test_proto_bad_span_rejected_and_good_ones_kept(bad: dict[str, Any], reason: str) -> None:
    good_1, good_2 = proto_span("good-1"), proto_span("good-2", span_id=SPAN_2)
    request = proto_request(good_1, proto_span("bad", **bad), good_2)

    batch = decode_traces("otlp_proto", request.SerializeToString())

    assert [s.name for s in batch.spans] == ["good-1", "good-2"]
    assert batch.rejected_items == 1
    assert batch.errors == [f"span 'bad': {reason}"]


def test_proto_all_zero_parent_means_root_and_end_before_start_is_kept() -> None:
    span = proto_span("s", parent=bytes(8), start_time_unix_nano=500, end_time_unix_nano=100)
    [got] = decode_traces("otlp_proto", proto_request(span).SerializeToString()).spans
    assert got.parent_span_id == ""
    assert (got.start_time_unix_nano, got.end_time_unix_nano) == (500, 100)


def test_proto_bad_link_dropped_span_kept() -> None:
    span = proto_span("s")
    span.links.add(trace_id=b"\x01", span_id=SPAN_2)
    batch = decode_traces("otlp_proto", proto_request(span).SerializeToString())
    assert [s.links for s in batch.spans] == [[]]
    assert batch.rejected_items == 0
    assert batch.errors == ["span 's': dropped a link: trace_id must be 16 bytes, got 1"]


def test_error_messages_are_capped_but_every_rejection_counted() -> None:
    bad = [proto_span(f"bad-{i}", trace_id=b"\x01") for i in range(25)]
    batch = decode_traces("otlp_proto", proto_request(*bad, proto_span("good")).SerializeToString())
    assert [s.name for s in batch.spans] == ["good"]
    assert batch.rejected_items == 25
    assert len(batch.errors) == MAX_ERROR_MESSAGES + 1
    assert batch.errors[-1] == "... and 15 more"


@pytest.mark.parametrize("payload", [b"not a protobuf", b"\xff\xff\xff\xff", b'{"resourceSpans": []}'])
def test_proto_garbage_is_a_decode_error(payload: bytes) -> None:
    with pytest.raises(DecodeError, match="not a protobuf ExportTraceServiceRequest"):
        decode_traces("otlp_proto", payload)


def test_proto_empty_payload_is_an_empty_request() -> None:
    assert decode_traces("otlp_proto", b"") == SpanBatch()


# --- OTLP/JSON ---------------------------------------------------------------------------------------


def test_json_hex_ids_enum_names_int_strings_and_snake_case() -> None:
    document = {
        "resource_spans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]},
                "scope_spans": [
                    {
                        "scope": {"name": "sc", "version": "2"},
                        "spans": [
                            {
                                "trace_id": "5DBDF98695BD5785F3D3E61006AD2DBA",
                                "span_id": "594f8d102c7c4a19",
                                "parent_span_id": "41577dfd278c2ded",
                                "name": "snake",
                                "kind": "SPAN_KIND_SERVER",
                                "start_time_unix_nano": 1795340512811241928,
                                "end_time_unix_nano": "1795340512873666836",
                                "status": {"code": "STATUS_CODE_OK"},
                                "attributes": [
                                    {"key": "n", "value": {"intValue": "-12"}},
                                    {"key": "m", "value": {"int_value": 7}},
                                    {
                                        "key": "blob",
                                        "value": {"bytesValue": base64.b64encode(b"\x00hi").decode()},
                                    },
                                    {
                                        "key": "kv",
                                        "value": {
                                            "kvlistValue": {
                                                "values": [
                                                    {
                                                        "key": "a",
                                                        "value": {
                                                            "arrayValue": {"values": [{"boolValue": True}]}
                                                        },
                                                    },
                                                ]
                                            }
                                        },
                                    },
                                ],
                                "events": [{"name": "e", "timeUnixNano": "5", "attributes": []}],
                                "links": [{"traceId": LINK_TRACE, "spanId": LINK_SPAN}],
                            },
                            {
                                "traceId": TRACE_A.hex(),
                                "spanId": SPAN_2.hex(),
                                "parentSpanId": "",
                                "kind": 3,
                                "status": {"code": 2, "message": "bad"},
                                "name": "camel",
                                "unknownField": {"x": 1},
                            },
                        ],
                    }
                ],
            }
        ]
    }
    batch = decode_traces("otlp_json", json_bytes(document))

    assert batch.rejected_items == 0 and batch.errors == []
    snake, camel = batch.spans
    assert (snake.trace_id, snake.span_id, snake.parent_span_id) == (
        "5dbdf98695bd5785f3d3e61006ad2dba",
        "594f8d102c7c4a19",
        "41577dfd278c2ded",
    )
    assert (snake.kind, snake.status_code) == (2, 1)
    assert snake.start_time_unix_nano == 1795340512811241928
    assert snake.end_time_unix_nano == 1795340512873666836
    assert snake.attributes == {"n": -12, "m": 7, "blob": b"\x00hi", "kv": {"a": [True]}}
    assert [(e.name, e.time_unix_nano) for e in snake.events] == [("e", 5)]
    assert [(lk.trace_id, lk.span_id) for lk in snake.links] == [(LINK_TRACE, LINK_SPAN)]
    assert (snake.scope_name, snake.scope_version, snake.service_name) == ("sc", "2", "svc")
    assert (camel.parent_span_id, camel.kind, camel.status_code, camel.status_message) == ("", 3, 2, "bad")


@pytest.mark.parametrize(
    ("bad_span", "reason"),
    [
        (json_span("bad", trace_id="5dbdf986"), "traceId must be 32 hex characters, got 8"),
        (json_span("bad", trace_id="zz" * 16), "traceId is not hex"),
        (json_span("bad", trace_id="0" * 32), "traceId is all zeros"),
        (json_span("bad", trace_id=base64.b64encode(TRACE_A).decode()), "traceId must be 32 hex characters"),
        (json_span("bad", span_id="594f8d10"), "spanId must be 16 hex characters, got 8"),
        (json_span("bad", span_id=1234), "spanId must be a hex string, got int"),
        (json_span("bad", trace_id=None), "traceId is missing"),
        (json_span("bad", parentSpanId="xyz"), "parentSpanId must be 16 hex characters, got 3"),
        # A span the ids pass but protobuf's parser cannot read: the fallback keeps the others.
        (json_span("bad", kind=[1]), "span 'bad': kind [1] is not a SpanKind"),
        (json_span("bad", startTimeUnixNano="soon"), "span 'bad': Failed to parse startTimeUnixNano field"),
        (json_span("bad", attributes=[{"key": "a", "value": {"intValue": "x"}}]), "parse attributes"),
        ("not a span", "span is not a JSON object"),
    ],
)
def test_json_bad_span_rejected_and_good_ones_kept(bad_span: Any, reason: str) -> None:
    document = json_request(json_span("good-1"), bad_span, json_span("good-2", span_id=SPAN_2.hex()))

    batch = decode_traces("otlp_json", json_bytes(document))

    assert [s.name for s in batch.spans] == ["good-1", "good-2"]
    assert [s.span_id for s in batch.spans] == [SPAN_1.hex(), SPAN_2.hex()]
    assert batch.rejected_items == 1
    assert len(batch.errors) == 1
    assert reason in batch.errors[0]


def test_json_enum_names_it_does_not_know_reject_the_span() -> None:
    # OTLP/JSON writes enums as integers (an unknown number is kept: a newer sender's value); a name
    # is read as a courtesy, and one that is no name of the enum would otherwise be stored as the
    # default value without a word.
    document = json_request(
        json_span("kept", kind=7, status={"code": "STATUS_CODE_ERROR"}),
        json_span("kind", span_id=SPAN_2.hex(), kind="SPAN_KIND_FROM_THE_FUTURE"),
        json_span("code", span_id="00000000000000c3", status={"code": "BAD"}),
    )
    batch = decode_traces("otlp_json", json_bytes(document))
    assert [(s.name, s.kind, s.status_code) for s in batch.spans] == [("kept", 7, 2)]
    assert batch.rejected_items == 2
    assert batch.errors == [
        "span 'kind': kind 'SPAN_KIND_FROM_THE_FUTURE' is not a SpanKind (SPAN_KIND_UNSPECIFIED, "
        "SPAN_KIND_INTERNAL, SPAN_KIND_SERVER, SPAN_KIND_CLIENT, SPAN_KIND_PRODUCER, SPAN_KIND_CONSUMER) "
        "or an integer",
        "span 'code': status.code 'BAD' is not a StatusCode (STATUS_CODE_UNSET, STATUS_CODE_OK, "
        "STATUS_CODE_ERROR) or an integer",
    ]


def test_json_malformed_resource_rejects_only_its_spans() -> None:
    document = json_request(json_span("kept"))
    broken = json_request(json_span("lost-1"), json_span("lost-2", span_id=SPAN_2.hex()))["resourceSpans"][0]
    broken["resource"] = {"attributes": "not a list"}
    document["resourceSpans"].append(broken)

    batch = decode_traces("otlp_json", json_bytes(document))

    assert [s.name for s in batch.spans] == ["kept"]
    assert batch.rejected_items == 2
    assert batch.errors[0].startswith("2 span(s) rejected, resource:")


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b"{not json", "invalid JSON"),
        (b"\xff\xfe\x00garbage", "invalid JSON"),
        (b"[" * 100_000, "invalid JSON"),
        (b"[1, 2]", "must be a JSON object, got list"),
        (b'"resourceSpans"', "must be a JSON object, got str"),
        (b'{"spans": [{"name": "x"}]}', "not an OTLP ExportTraceServiceRequest: no resourceSpans"),
        (b'{"resourceSpans": {"a": 1}}', "resourceSpans must be an array, got dict"),
    ],
)
def test_json_not_an_export_request_is_a_decode_error(payload: bytes, message: str) -> None:
    with pytest.raises(DecodeError) as info:
        decode_traces("otlp_json", payload)
    assert message in str(info.value)


def test_json_empty_objects_are_empty_requests_the_nested_ones_with_a_warning() -> None:
    assert decode_traces("otlp_json", b"{}") == SpanBatch()  # the receivers answer it with a warning
    nested = decode_traces("otlp_json", b'{"resourceSpans": [{}, {"scopeSpans": [{}]}]}')
    assert (nested.spans, nested.rejected_items) == ([], 0)
    assert nested.errors == [
        "resourceSpans[0] holds no scopeSpans",
        "resourceSpans[1].scopeSpans[0] holds no spans",
    ]


# --- the convention fixtures -----------------------------------------------------------------------------


def test_semconv_fixture_ids_and_attribute_types() -> None:
    raw = json.loads(SEMCONV_MAIN.read_bytes())
    raw_spans = [s for rs in raw["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]

    batch = decode_traces("otlp_json", SEMCONV_MAIN.read_bytes())

    assert batch.rejected_items == 0
    assert [(s.trace_id, s.span_id, s.parent_span_id) for s in batch.spans] == [
        (r["traceId"], r["spanId"], r.get("parentSpanId", "")) for r in raw_spans
    ]
    chat = next(s for s in batch.spans if s.name == "chat gpt-4o")
    assert chat.attributes["gen_ai.request.temperature"] == 0.2  # doubleValue
    assert chat.attributes["gen_ai.usage.input_tokens"] == 47  # intValue written as the string "47"
    assert type(chat.attributes["gen_ai.usage.input_tokens"]) is int
    assert chat.attributes["gen_ai.response.finish_reasons"] == ["tool_calls"]  # arrayValue
    assert chat.attributes["gen_ai.provider.name"] == "openai"
    assert chat.kind == 3
    assert chat.start_time_unix_nano == 1795340512811591760
    assert chat.service_name == "weather-agent-demo"
    assert (chat.scope_name, chat.scope_version) == ("opentelemetry.util.genai.handler", "1.1b0")


@pytest.mark.parametrize("path", TRACE_FIXTURES, ids=lambda p: p.name.removesuffix(".traces.json"))
def test_every_trace_fixture_decodes(path: Any) -> None:
    raw = json.loads(path.read_bytes())
    expected = sum(len(ss.get("spans", [])) for rs in raw["resourceSpans"] for ss in rs.get("scopeSpans", []))

    batch = decode_traces("otlp_json", path.read_bytes())

    assert batch.rejected_items == 0, batch.errors
    assert len(batch.spans) == expected > 0


def test_fixture_folder_is_there() -> None:
    assert len(TRACE_FIXTURES) >= 10


def test_json_and_proto_decode_a_fixture_the_same() -> None:
    from_json = decode_traces("otlp_json", SEMCONV_MAIN.read_bytes())
    request = ExportTraceServiceRequest()
    for span in from_json.spans:
        proto = proto_span(
            span.name,
            trace_id=bytes.fromhex(span.trace_id),
            span_id=bytes.fromhex(span.span_id),
            parent=bytes.fromhex(span.parent_span_id),
            kind=span.kind,
            start_time_unix_nano=span.start_time_unix_nano,
            end_time_unix_nano=span.end_time_unix_nano,
        )
        proto.attributes.extend(kv(k, v) for k, v in span.attributes.items())
        resource = request.resource_spans.add()
        resource.resource.attributes.extend(kv(k, v) for k, v in span.resource_attributes.items())
        scope = resource.scope_spans.add()
        scope.scope.name, scope.scope.version = span.scope_name, span.scope_version
        scope.spans.append(proto)
    from_proto = decode_traces("otlp_proto", request.SerializeToString())
    assert from_proto.spans == from_json.spans


# --- content types and responses -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("content_type", "encoding"),
    [
        ("application/x-protobuf", "otlp_proto"),
        ("application/json", "otlp_json"),
        ("application/json; charset=utf-8", "otlp_json"),
        (" Application/X-Protobuf ;foo=bar", "otlp_proto"),
        ("text/plain", None),
        ("", None),
        ("application/jsonx", None),
    ],
)
def test_encoding_for_content_type(content_type: str, encoding: str | None) -> None:
    assert encoding_for_content_type(content_type) == encoding


def test_export_response_sets_partial_success_only_on_rejection_or_a_warning() -> None:
    assert not export_response(SpanBatch(spans=[Span(trace_id="1" * 32, span_id="1" * 16)])).HasField(
        "partial_success"
    )
    # What is left out of a request that was handed on whole: no partial success.
    assert not export_response(SpanBatch()).HasField("partial_success")
    warning = export_response(SpanBatch(errors=["the request holds no spans"])).partial_success
    assert (warning.rejected_spans, warning.error_message) == (0, "the request holds no spans")
    response = export_response(SpanBatch(rejected_items=2, errors=["a", "b"]))
    assert response.partial_success.rejected_spans == 2
    assert response.partial_success.error_message == "a; b"


# --- never anything but DecodeError or a batch ---------------------------------------------------

_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=40)
    | st.sampled_from(["5dbdf98695bd5785f3d3e61006ad2dba", "594f8d102c7c4a19", "SPAN_KIND_SERVER", ""]),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "resourceSpans",
                    "scopeSpans",
                    "spans",
                    "traceId",
                    "spanId",
                    "parentSpanId",
                    "name",
                    "kind",
                    "attributes",
                    "key",
                    "value",
                    "stringValue",
                    "arrayValue",
                    "values",
                    "links",
                    "events",
                    "status",
                    "code",
                    "resource",
                    "scope",
                    "startTimeUnixNano",
                    "x",
                ]
            ),
            children,
            max_size=5,
        )
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=_json_values)
def test_json_decode_never_raises_anything_else(document: Any) -> None:
    _decodes_or_decode_error("otlp_json", json.dumps(document).encode())
    as_span = {"resourceSpans": [{"scopeSpans": [{"spans": [document]}]}]}
    _decodes_or_decode_error("otlp_json", json.dumps(as_span).encode())


@settings(max_examples=300, deadline=None)
@given(payload=st.binary(max_size=200))
def test_proto_decode_never_raises_anything_else(payload: bytes) -> None:
    _decodes_or_decode_error("otlp_proto", payload)
    _decodes_or_decode_error("otlp_json", payload)


def _decodes_or_decode_error(encoding: str, payload: bytes) -> None:
    try:
        batch = decode_traces(encoding, payload)
    except DecodeError as exc:
        assert str(exc)
        return
    for span in batch.spans:
        assert len(span.trace_id) == 32 and len(span.span_id) == 16
