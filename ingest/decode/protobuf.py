"""OTLP protobuf messages -> ``schemas`` spans and log records (the protobuf side of every encoding).

The JSON encoding is parsed into the same protobuf request first (``ingest.decode.otlp_json``), so
both encodings are read here. A span or record with unusable ids is rejected on its own; the rest
of the request still gets through (OTLP partial success).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1 import trace_pb2

from ingest.decode.batch import BatchBuilder
from ingest.decode.otlp_json import SPAN_ID_BYTES, TRACE_ID_BYTES
from ingest.decode.trusted import trusted_constructor
from schemas.spans import LogRecord, Span, SpanBatch, SpanEvent, SpanLink

_ZERO_TRACE_ID = bytes(TRACE_ID_BYTES)
_ZERO_SPAN_ID = bytes(SPAN_ID_BYTES)
_new_span = trusted_constructor(Span)
_new_event = trusted_constructor(SpanEvent)
_new_link = trusted_constructor(SpanLink)
_new_log_record = trusted_constructor(LogRecord)


def request_to_batch(request: ExportTraceServiceRequest, builder: BatchBuilder | None = None) -> SpanBatch:
    builder = builder or BatchBuilder()
    spans = builder.spans
    limit = builder.max_attributes
    for resource_spans in request.resource_spans:
        # One dict per resource, shared by its spans: spans are frozen and this is the hot path.
        resource_attributes = _attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope
            scope_name, scope_version = scope.name, scope.version
            for span in scope_spans.spans:
                attributes = span.attributes
                if limit is not None and len(attributes) > limit:
                    too_many = builder.too_many_attributes(len(attributes))
                    builder.reject(f"span {span.name!r} (span_id {span.span_id.hex()}): {too_many}")
                    continue
                trace_id, span_id, parent = span.trace_id, span.span_id, span.parent_span_id
                if (
                    len(trace_id) != TRACE_ID_BYTES
                    or trace_id == _ZERO_TRACE_ID
                    or len(span_id) != SPAN_ID_BYTES
                    or span_id == _ZERO_SPAN_ID
                    or (parent and len(parent) != SPAN_ID_BYTES)
                ):
                    builder.reject(_bad_ids(span))
                    continue
                status, events, links = span.status, span.events, span.links
                spans.append(
                    _new_span(
                        trace_id=trace_id.hex(),
                        span_id=span_id.hex(),
                        # Some converters write an all-zero parent for a root span.
                        parent_span_id=parent.hex() if parent and parent != _ZERO_SPAN_ID else "",
                        trace_state=span.trace_state,
                        name=span.name,
                        kind=int(span.kind),
                        start_time_unix_nano=span.start_time_unix_nano,
                        end_time_unix_nano=span.end_time_unix_nano,
                        attributes=_attributes(attributes),
                        events=[
                            _new_event(
                                name=event.name,
                                time_unix_nano=event.time_unix_nano,
                                attributes=_attributes(event.attributes),
                            )
                            for event in events
                        ]
                        if events
                        else [],
                        links=_links(links, span, builder) if links else [],
                        status_code=int(status.code),
                        status_message=status.message,
                        resource_attributes=resource_attributes,
                        scope_name=scope_name,
                        scope_version=scope_version,
                    )
                )
    return builder.build()


def _bad_ids(span: trace_pb2.Span) -> str:
    """Why a span whose ids failed the quick check is rejected (the first bad id, in field order)."""
    try:
        _id_hex(span.trace_id, "trace_id", TRACE_ID_BYTES)
        _id_hex(span.span_id, "span_id", SPAN_ID_BYTES)
        _parent_hex(span.parent_span_id)
    except ValueError as exc:
        return f"span {span.name!r}: {exc}"
    raise AssertionError("ids passed the check they failed")  # unreachable: the checks agree


def _links(
    links: Iterable[trace_pb2.Span.Link], span: trace_pb2.Span, builder: BatchBuilder
) -> list[SpanLink]:
    out = []
    for link in links:
        try:
            trace_id = _id_hex(link.trace_id, "trace_id", TRACE_ID_BYTES)
            span_id = _id_hex(link.span_id, "span_id", SPAN_ID_BYTES)
        except ValueError as exc:
            # A bad link does not make the span unusable: drop the link and say so.
            builder.error(f"span {span.name!r}: dropped a link: {exc}")
            continue
        out.append(
            _new_link(
                trace_id=trace_id,
                span_id=span_id,
                trace_state=link.trace_state,
                attributes=_attributes(link.attributes),
            )
        )
    return out


def logs_request_to_batch(
    request: ExportLogsServiceRequest, builder: BatchBuilder | None = None
) -> SpanBatch:
    builder = builder or BatchBuilder()
    for resource_logs in request.resource_logs:
        resource_attributes = _attributes(resource_logs.resource.attributes)
        for scope_logs in resource_logs.scope_logs:
            scope = scope_logs.scope
            scope_attributes = _attributes(scope.attributes)
            for record in scope_logs.log_records:
                too_many = builder.too_many_attributes(len(record.attributes))
                if too_many:
                    label = f"log record {record.event_name!r}" if record.event_name else "log record"
                    builder.reject(f"{label}: {too_many}")
                    continue
                try:
                    trace_id = _optional_id_hex(record.trace_id, "trace_id", TRACE_ID_BYTES)
                    span_id = _optional_id_hex(record.span_id, "span_id", SPAN_ID_BYTES)
                except ValueError as exc:
                    label = f"log record {record.event_name!r}" if record.event_name else "log record"
                    builder.reject(f"{label}: {exc}")
                    continue
                attributes = _attributes(record.attributes)
                event_name = record.event_name or attributes.get("event.name")
                builder.logs.append(
                    _new_log_record(
                        trace_id=trace_id,
                        span_id=span_id,
                        time_unix_nano=record.time_unix_nano,
                        observed_time_unix_nano=record.observed_time_unix_nano,
                        severity_number=int(record.severity_number),
                        severity_text=record.severity_text,
                        event_name=event_name if isinstance(event_name, str) else "",
                        body=_any_value(record.body) if record.HasField("body") else None,
                        attributes=attributes,
                        resource_attributes=resource_attributes,
                        scope_name=scope.name,
                        scope_version=scope.version,
                        flags=record.flags,
                        resource_schema_url=resource_logs.schema_url,
                        scope_schema_url=scope_logs.schema_url,
                        scope_attributes=scope_attributes,
                    )
                )
    return builder.build()


def _optional_id_hex(raw: bytes, name: str, size: int) -> str:
    """A log record's id: empty or all zeros means none (the record belongs to no span)."""
    if not raw:
        return ""
    if len(raw) != size:
        raise ValueError(f"{name} must be {size} bytes or empty, got {len(raw)}")
    return raw.hex() if any(raw) else ""


def _id_hex(raw: bytes, name: str, size: int) -> str:
    if len(raw) != size:
        raise ValueError(f"{name} must be {size} bytes, got {len(raw)}")
    if not any(raw):
        raise ValueError(f"{name} is all zeros")
    return raw.hex()


def _parent_hex(raw: bytes) -> str:
    if not raw:
        return ""
    if len(raw) != SPAN_ID_BYTES:
        raise ValueError(f"parent_span_id must be {SPAN_ID_BYTES} bytes or empty, got {len(raw)}")
    # Some converters write an all-zero parent for a root span.
    return raw.hex() if any(raw) else ""


def _attributes(attributes: Iterable[KeyValue]) -> dict[str, Any]:
    return {kv.key: _any_value(kv.value) for kv in attributes}


def _any_value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "string_value":  # most values: read without getattr
        return value.string_value
    if kind is None:
        return None
    if kind == "array_value":
        return [_any_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return _attributes(value.kvlist_value.values)
    return getattr(value, kind)
