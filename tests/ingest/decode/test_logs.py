"""OTLP logs decoding: protobuf and OTLP/JSON export requests to ``SpanBatch.logs``, bad records counted.

Expected values are read from the convention fixture's raw JSON or written by hand from the requests
built here.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from google.protobuf import json_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.logs.v1 import logs_pb2

from tests.support.attribute_values import list_value, map_value
from tests.support.fixture_files import OTLP_DIR
from tests.support.otlp import SPAN_1, SPAN_2, TRACE_A, any_value, json_bytes, kv
from tracescore.ingest.decode import (
    DECODERS,
    DecodeError,
    decode,
    decode_logs,
    decode_traces,
)
from tracescore.ingest.receivers.intake import export_logs_response
from tracescore.schemas.spans import JsonValue, LogRecord, SpanBatch

LEGACY = "otel_genai_semconv__legacy-event-based-semconv-v1-28-v1-36-content-in-logrecords"
LEGACY_LOGS = OTLP_DIR / f"{LEGACY}.logs.json"
LEGACY_TRACES = OTLP_DIR / f"{LEGACY}.traces.json"


def raw_records(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for rl in document["resourceLogs"] for sl in rl["scopeLogs"] for r in sl["logRecords"]]


def json_record(event: str = "gen_ai.user.message", **fields: Any) -> dict[str, Any]:
    record = {"traceId": TRACE_A.hex(), "spanId": SPAN_1.hex(), "eventName": event,
              "body": {"stringValue": f"body of {event}"}}  # fmt: skip
    record.update(fields)
    return record


def json_logs_request(*records: Any) -> dict[str, Any]:
    return {
        "resourceLogs": [{
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]},
            "scopeLogs": [{"scope": {"name": "test.scope", "version": "1.2.3"}, "logRecords": list(records)}],
        }]
    }  # fmt: skip


def proto_logs_request(*records: logs_pb2.LogRecord) -> ExportLogsServiceRequest:
    request = ExportLogsServiceRequest()
    resource_logs = request.resource_logs.add()
    resource_logs.schema_url = "https://opentelemetry.io/schemas/1.28.0"
    resource_logs.resource.attributes.append(kv("service.name", "weather"))
    scope_logs = resource_logs.scope_logs.add()
    scope_logs.schema_url = "https://opentelemetry.io/schemas/1.30.0"
    scope_logs.scope.name, scope_logs.scope.version = "openai-v2", "2.1b0"
    scope_logs.scope.attributes.append(kv("scope.kind", "genai"))
    scope_logs.log_records.extend(records)
    return request


# --- the registry --------------------------------------------------------------------------------


def test_one_registry_for_both_signals() -> None:
    assert {signal: set(encodings) for signal, encodings in DECODERS.items()} == {
        "traces": {"otlp_proto", "otlp_json"},
        "logs": {"otlp_proto", "otlp_json"},
    }
    with pytest.raises(ValueError, match="unknown signal 'metrics'"):
        decode("metrics", "otlp_json", b"{}")
    with pytest.raises(ValueError, match="unknown encoding 'avro'"):
        decode_logs("avro", b"")


# --- the convention fixture ------------------------------------------------------------------------------


def test_legacy_fixture_records_ids_event_names_and_bodies() -> None:
    raw = raw_records(json.loads(LEGACY_LOGS.read_bytes()))

    batch = decode_logs("otlp_json", LEGACY_LOGS.read_bytes())

    assert (batch.rejected_items, batch.errors, batch.spans) == (0, [], [])
    assert len(batch.logs) == 12
    assert [(r.trace_id, r.span_id) for r in batch.logs] == [(x["traceId"], x["spanId"]) for x in raw]
    assert {r.trace_id for r in batch.logs} == {
        "4d6fdb451bb0e300a3ebbf2b434e9fa0", "c2e67b0aab4586984e72753e4b2a2f83"
    }  # fmt: skip
    assert [r.event_name for r in batch.logs] == [
        "gen_ai.system.message", "gen_ai.user.message", "gen_ai.assistant.message", "gen_ai.user.message",
        "gen_ai.choice",
        "gen_ai.system.message", "gen_ai.user.message", "gen_ai.assistant.message", "gen_ai.user.message",
        "gen_ai.assistant.message", "gen_ai.tool.message", "gen_ai.choice",
    ]  # fmt: skip
    assert [r.time_unix_nano for r in batch.logs] == [int(x["timeUnixNano"]) for x in raw]
    first = batch.logs[0]
    assert first.body == {"content": "You are a helpful weather assistant. Use the get_weather tool."}
    assert first.attributes == {"gen_ai.system": "openai", "event.name": "gen_ai.system.message"}
    assert (first.service_name, first.scope_name, first.resource_attributes["telemetry.sdk.version"]) == (
        "weather-agent-demo",
        "fixture",
        "1.33.1",
    )
    assert batch.logs[3].body == {"content": "What's the weather in Paris?"}
    # kvlistValue -> dict, intValue string -> int, arrayValue -> list, nested all the way down.
    choice = map_value(batch.logs[4].body)
    assert choice["index"] == 0 and type(choice["index"]) is int
    assert choice["finish_reason"] == "tool_calls"
    [call] = list_value(map_value(choice["message"])["tool_calls"])
    assert call == {
        "id": "call_VSPygqKTWdrhaFErNvMV18Yl",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"location":"Paris"}'},
    }
    assert batch.logs[10].body == {"content": "rainy, 57°F", "id": "call_VSPygqKTWdrhaFErNvMV18Yl"}


def test_fixture_reads_the_same_as_protobuf_and_as_json() -> None:
    document = json.loads(LEGACY_LOGS.read_bytes())
    for record in raw_records(document):  # protobuf's JSON mapping wants the ids as base64
        for key in ("traceId", "spanId"):
            record[key] = base64.b64encode(bytes.fromhex(record[key])).decode()
    request = json_format.ParseDict(document, ExportLogsServiceRequest())

    from_proto = decode_logs("otlp_proto", request.SerializeToString())
    from_json = decode_logs("otlp_json", LEGACY_LOGS.read_bytes())

    assert len(from_proto.logs) == 12
    assert [r.model_dump() for r in from_proto.logs] == [r.model_dump() for r in from_json.logs]


def test_a_trace_request_is_not_a_logs_request() -> None:
    with pytest.raises(DecodeError, match="not an OTLP ExportLogsServiceRequest: no resourceLogs"):
        decode_logs("otlp_json", LEGACY_TRACES.read_bytes())
    with pytest.raises(DecodeError, match="no resourceSpans"):
        decode_traces("otlp_json", LEGACY_LOGS.read_bytes())


# --- protobuf ------------------------------------------------------------------------------------


def test_proto_record_with_every_field() -> None:
    record = logs_pb2.LogRecord(
        time_unix_nano=1_795_340_588_844_485_031, observed_time_unix_nano=1_795_340_588_844_490_000,
        severity_number=logs_pb2.SEVERITY_NUMBER_INFO, severity_text="INFO", flags=1,
        trace_id=TRACE_A, span_id=SPAN_1, event_name="gen_ai.choice", body=any_value({"index": 0}),
    )  # fmt: skip
    record.attributes.extend([kv("gen_ai.system", "openai"), kv("event.name", "ignored.when.field.set")])

    [got] = decode_logs("otlp_proto", proto_logs_request(record).SerializeToString()).logs

    body: JsonValue = {"index": 0}
    assert got == LogRecord(
        trace_id=TRACE_A.hex(),
        span_id=SPAN_1.hex(),
        time_unix_nano=1_795_340_588_844_485_031,
        observed_time_unix_nano=1_795_340_588_844_490_000,
        severity_number=9,
        severity_text="INFO",
        event_name="gen_ai.choice",
        body=body,
        attributes={"gen_ai.system": "openai", "event.name": "ignored.when.field.set"},
        resource_attributes={"service.name": "weather"},
        scope_name="openai-v2",
        scope_version="2.1b0",
        flags=1,
        resource_schema_url="https://opentelemetry.io/schemas/1.28.0",
        scope_schema_url="https://opentelemetry.io/schemas/1.30.0",
        scope_attributes={"scope.kind": "genai"},
    )


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (any_value("plain text"), "plain text"),
        (any_value(42), 42),
        (any_value(0.5), 0.5),
        (any_value(True), True),
        (any_value(b"\x00\x01"), b"\x00\x01"),
        (any_value(["a", 1]), ["a", 1]),
        (any_value({"content": "hi", "n": {"deep": [False]}}), {"content": "hi", "n": {"deep": [False]}}),
        (None, None),
    ],
    ids=["string", "int", "double", "bool", "bytes", "array", "kvlist", "absent"],
)
def test_proto_body_any_value_to_python(body: Any, expected: Any) -> None:
    record = logs_pb2.LogRecord(trace_id=TRACE_A, span_id=SPAN_1, time_unix_nano=1)
    if body is not None:
        record.body.CopyFrom(body)
    [got] = decode_logs("otlp_proto", proto_logs_request(record).SerializeToString()).logs
    assert got.body == expected
    assert type(got.body) is type(expected)


def test_proto_event_name_falls_back_to_the_event_name_attribute() -> None:
    record = logs_pb2.LogRecord(
        trace_id=TRACE_A, span_id=SPAN_1, attributes=[kv("event.name", "gen_ai.tool.message")]
    )
    no_name = logs_pb2.LogRecord(trace_id=TRACE_A, span_id=SPAN_1, attributes=[kv("event.name", 7)])
    got = decode_logs("otlp_proto", proto_logs_request(record, no_name).SerializeToString()).logs
    assert [r.event_name for r in got] == ["gen_ai.tool.message", ""]


def test_proto_uncorrelated_records_are_kept_and_bad_ids_rejected() -> None:
    records = [
        logs_pb2.LogRecord(event_name="no ids", body=any_value("a")),
        logs_pb2.LogRecord(event_name="zero ids", trace_id=bytes(16), span_id=bytes(8)),
        logs_pb2.LogRecord(event_name="trace only", trace_id=TRACE_A),
        logs_pb2.LogRecord(event_name="short trace", trace_id=TRACE_A[:8], span_id=SPAN_1),
        logs_pb2.LogRecord(event_name="long span", trace_id=TRACE_A, span_id=SPAN_1 + b"\x01"),
        logs_pb2.LogRecord(event_name="good", trace_id=TRACE_A, span_id=SPAN_2),
    ]
    batch = decode_logs("otlp_proto", proto_logs_request(*records).SerializeToString())

    assert [(r.event_name, r.trace_id, r.span_id) for r in batch.logs] == [
        ("no ids", "", ""),
        ("zero ids", "", ""),
        ("trace only", TRACE_A.hex(), ""),
        ("good", TRACE_A.hex(), SPAN_2.hex()),
    ]
    assert batch.rejected_items == 2
    assert batch.errors == [
        "log record 'short trace': trace_id must be 16 bytes or empty, got 8",
        "log record 'long span': span_id must be 8 bytes or empty, got 9",
    ]


def test_proto_garbage_is_a_decode_error() -> None:
    with pytest.raises(DecodeError, match="not a protobuf ExportLogsServiceRequest"):
        decode_logs("otlp_proto", b"\x0a\xff\xffnot an otlp request")
    assert decode_logs("otlp_proto", b"") == SpanBatch()


# --- OTLP/JSON -----------------------------------------------------------------------------------


def test_json_snake_case_attribute_event_name_and_missing_ids() -> None:
    document = {
        "resource_logs": [{
            "schema_url": "https://example.test/r",
            "scope_logs": [{
                "scope": {"name": "s", "attributes": [{"key": "a", "value": {"boolValue": True}}]},
                "log_records": [
                    {"trace_id": TRACE_A.hex().upper(), "span_id": SPAN_1.hex(), "time_unix_nano": 5,
                     "severity_number": "SEVERITY_NUMBER_WARN", "flags": 257,
                     "attributes": [{"key": "event.name", "value": {"stringValue": "gen_ai.user.message"}}],
                     "body": {"kvlist_value": {"values": [
                         {"key": "content", "value": {"string_value": "x"}}
                     ]}}},
                    {"observedTimeUnixNano": "9", "body": {"stringValue": "no trace"}, "traceId": ""},
                ],
            }],
        }]
    }  # fmt: skip
    batch = decode_logs("otlp_json", json_bytes(document))

    assert batch.rejected_items == 0 and batch.errors == []
    first, second = batch.logs
    assert (first.trace_id, first.span_id) == (TRACE_A.hex(), SPAN_1.hex())
    assert first.event_name == "gen_ai.user.message"
    assert (first.time_unix_nano, first.severity_number, first.flags) == (5, 13, 257)
    assert first.body == {"content": "x"}
    assert (first.resource_schema_url, first.scope_attributes) == ("https://example.test/r", {"a": True})
    assert (second.trace_id, second.span_id, second.event_name) == ("", "", "")
    assert (second.observed_time_unix_nano, second.body) == (9, "no trace")


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (json_record("bad", traceId="5dbdf986"), "'bad': traceId must be 32 hex characters, got 8"),
        (json_record("bad", traceId="zz" * 16), "traceId is not hex"),
        (json_record("bad", spanId=base64.b64encode(SPAN_1).decode()), "spanId must be 16 hex characters"),
        (json_record("bad", spanId=1234), "spanId must be a hex string, got int"),
        # Ids that pass but protobuf's parser cannot read: the fallback keeps the others.
        (
            json_record("bad", severityNumber=[9]),
            "log record 'bad': severityNumber [9] is not a SeverityNumber",
        ),
        (json_record("bad", severityNumber="LOUD"), "log record 'bad': severityNumber 'LOUD' is not a"),
        (json_record("bad", timeUnixNano="soon"), "Failed to parse timeUnixNano field"),
        (json_record("bad", body={"intValue": "x"}), "log record 'bad'"),
        ("not a record", "log record is not a JSON object"),
    ],
)
def test_json_bad_record_rejected_and_good_ones_kept(bad: Any, reason: str) -> None:
    document = json_logs_request(json_record("good-1"), bad, json_record("good-2", spanId=SPAN_2.hex()))

    batch = decode_logs("otlp_json", json_bytes(document))

    assert [(r.event_name, r.span_id) for r in batch.logs] == [
        ("good-1", SPAN_1.hex()),
        ("good-2", SPAN_2.hex()),
    ]
    assert [r.body for r in batch.logs] == ["body of good-1", "body of good-2"]
    assert batch.rejected_items == 1
    assert len(batch.errors) == 1 and reason in batch.errors[0]


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b"{not json", "invalid JSON"),
        (b"[1]", "OTLP/JSON logs request must be a JSON object, got list"),
        (b'{"logRecords": []}', "not an OTLP ExportLogsServiceRequest: no resourceLogs"),
        (b'{"resourceLogs": 3}', "resourceLogs must be an array, got int"),
    ],
)
def test_json_not_a_logs_request_is_a_decode_error(payload: bytes, message: str) -> None:
    with pytest.raises(DecodeError) as info:
        decode_logs("otlp_json", payload)
    assert message in str(info.value)


def test_export_logs_response_reports_rejected_log_records() -> None:
    assert not export_logs_response(SpanBatch(logs=[LogRecord(body="x")])).HasField("partial_success")
    assert not export_logs_response(SpanBatch()).HasField("partial_success")
    response = export_logs_response(SpanBatch(rejected_items=3, errors=["x", "y"]))
    assert response.partial_success.rejected_log_records == 3
    assert response.partial_success.error_message == "x; y"


# --- never anything but DecodeError or a batch ---------------------------------------------------

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=40)
    | st.sampled_from(["5dbdf98695bd5785f3d3e61006ad2dba", "594f8d102c7c4a19", "SEVERITY_NUMBER_INFO", ""]),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(
        st.sampled_from(["resourceLogs", "scopeLogs", "logRecords", "traceId", "spanId", "eventName",
                         "body", "attributes", "key", "value", "stringValue", "kvlistValue", "values",
                         "severityNumber", "timeUnixNano", "flags", "resource", "scope", "x"]),
        children, max_size=5,
    ),
    max_leaves=30,
)  # fmt: skip


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=_json_values)
def test_json_logs_decode_never_raises_anything_else(document: Any) -> None:
    for payload in (document, {"resourceLogs": [{"scopeLogs": [{"logRecords": [document]}]}]}):
        try:
            batch = decode_logs("otlp_json", json.dumps(payload).encode())
        except DecodeError as exc:
            assert str(exc)
            continue
        for record in batch.logs:
            assert len(record.trace_id) in (0, 32) and len(record.span_id) in (0, 16)
