"""OTLP protobuf messages -> ``schemas`` spans and log records (the protobuf side of every encoding).

The request comes as its resource and scope envelopes: read from the bytes with the items parsed a
run at a time (``ingest.decode.wire``), or from a request protobuf has parsed whole (the JSON encoding
is parsed into the protobuf request first, ``ingest.decode.otlp_json``), so both encodings are read
here. A span or record with unusable ids is rejected on its own; the rest of the request still gets
through (OTLP partial success).

A request is walked in slices (``SliceBounds``): a slice ends once it holds enough items, attribute
values or characters of text, so however large the request, only one slice of it exists as Python
objects at a time (they take several times the bytes they came in; see ``ingest.decode.cost``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from google.protobuf.message import Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.logs.v1 import logs_pb2
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1 import trace_pb2

from tracescore.ingest.decode.batch import BatchBuilder
from tracescore.ingest.decode.otlp_json import SPAN_ID_BYTES, TRACE_ID_BYTES
from tracescore.ingest.decode.trusted import trusted_constructor
from tracescore.schemas.spans import LogRecord, Span, SpanBatch, SpanEvent, SpanLink


class ScopeEnvelope(Protocol):
    """A scope of a request: its instrumentation scope, schema URL and items (spans or log records)."""

    @property
    def scope(self) -> InstrumentationScope: ...

    @property
    def schema_url(self) -> str: ...

    def items(self) -> Iterator[tuple[Any, int]]:
        """The scope's item messages, each with its size in bytes."""


class ResourceEnvelope(Protocol):
    """A resource of a request: its resource, schema URL and scopes."""

    @property
    def resource(self) -> Resource: ...

    @property
    def schema_url(self) -> str: ...

    def scopes(self) -> Iterator[ScopeEnvelope]: ...


@dataclass(frozen=True)
class _ParsedScope:
    message: trace_pb2.ScopeSpans | logs_pb2.ScopeLogs
    # False: every item's size is given as 0, for a walk whose slices no request of this size can
    # fill with bytes (measuring each item costs protobuf a walk over it: a tenth of the decode).
    measured: bool

    @property
    def scope(self) -> InstrumentationScope:
        return self.message.scope

    @property
    def schema_url(self) -> str:
        return self.message.schema_url

    def items(self) -> Iterator[tuple[Any, int]]:
        message = self.message
        items = message.spans if isinstance(message, trace_pb2.ScopeSpans) else message.log_records
        if not self.measured:
            return ((item, 0) for item in items)
        return ((item, item.ByteSize()) for item in items)


@dataclass(frozen=True)
class _ParsedResource:
    message: trace_pb2.ResourceSpans | logs_pb2.ResourceLogs
    measured: bool

    @property
    def resource(self) -> Resource:
        return self.message.resource

    @property
    def schema_url(self) -> str:
        return self.message.schema_url

    def scopes(self) -> Iterator[ScopeEnvelope]:
        message = self.message
        if isinstance(message, trace_pb2.ResourceSpans):
            return (_ParsedScope(scope, self.measured) for scope in message.scope_spans)
        return (_ParsedScope(scope, self.measured) for scope in message.scope_logs)


def parsed_resources(request: Message, measured: bool = True) -> Iterator[ResourceEnvelope]:
    """The envelopes of a request protobuf has parsed whole; unless ``measured``, their items' sizes
    are given as 0 (for a walk whose slice bounds in bytes the whole request cannot reach)."""
    if isinstance(request, ExportTraceServiceRequest):
        return (_ParsedResource(resource, measured) for resource in request.resource_spans)
    if isinstance(request, ExportLogsServiceRequest):
        return (_ParsedResource(resource, measured) for resource in request.resource_logs)
    raise TypeError(f"not an export request: {type(request).__name__}")


_ZERO_TRACE_ID = bytes(TRACE_ID_BYTES)
_ZERO_SPAN_ID = bytes(SPAN_ID_BYTES)
_new_span = trusted_constructor(Span)
_new_event = trusted_constructor(SpanEvent)
_new_link = trusted_constructor(SpanLink)
_new_log_record = trusted_constructor(LogRecord)


@dataclass(frozen=True)
class SliceBounds:
    """Where a slice of a request ends: at this many items, attribute values (an item's own, its
    events' and links'), or bytes of items as they came in, whichever comes first. One item larger
    than a bound is a slice of its own."""

    items: int
    values: int
    wire_bytes: int


WHOLE = SliceBounds(sys.maxsize, sys.maxsize, sys.maxsize)  # the request in one batch


def request_to_batch(request: ExportTraceServiceRequest, builder: BatchBuilder | None = None) -> SpanBatch:
    """The request's spans in one batch."""
    return next(trace_slices(parsed_resources(request, measured=False), builder or BatchBuilder(), WHOLE))


def trace_slices(
    resources: Iterable[ResourceEnvelope], builder: BatchBuilder, bounds: SliceBounds
) -> Iterator[SpanBatch]:
    """The request's spans, slice by slice; the last slice carries the count of what was left out."""
    spans = builder.spans
    limit = builder.max_attributes
    values = wire = 0
    for resource_spans in resources:
        # One dict per resource, shared by its spans: spans are frozen and this is the hot path.
        resource_attributes = _attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scopes():
            scope = scope_spans.scope
            scope_name, scope_version = scope.name, scope.version
            for span, size in scope_spans.items():
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
                converted = _attributes(attributes)
                new_events = (
                    [
                        _new_event(
                            name=event.name,
                            time_unix_nano=event.time_unix_nano,
                            attributes=_attributes(event.attributes),
                        )
                        for event in events
                    ]
                    if events
                    else []
                )
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
                        attributes=converted,
                        events=new_events,
                        links=_links(links, span, builder) if links else [],
                        status_code=int(status.code),
                        status_message=status.message,
                        resource_attributes=resource_attributes,
                        scope_name=scope_name,
                        scope_version=scope_version,
                    )
                )
                values += len(converted) + len(links) + len(new_events)
                for event in new_events:
                    values += len(event.attributes)
                wire += size
                if len(spans) >= bounds.items or values >= bounds.values or wire >= bounds.wire_bytes:
                    yield builder.take()
                    spans, values, wire = builder.spans, 0, 0
    yield builder.build()


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
    """The request's log records in one batch."""
    return next(log_slices(parsed_resources(request, measured=False), builder or BatchBuilder(), WHOLE))


def log_slices(
    resources: Iterable[ResourceEnvelope], builder: BatchBuilder, bounds: SliceBounds
) -> Iterator[SpanBatch]:
    """The request's log records, slice by slice; the last slice carries the count of what was left out."""
    values = wire = 0
    for resource_logs in resources:
        resource_attributes = _attributes(resource_logs.resource.attributes)
        for scope_logs in resource_logs.scopes():
            scope = scope_logs.scope
            scope_attributes = _attributes(scope.attributes)
            for record, size in scope_logs.items():
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
                values += len(attributes) + 1
                wire += size
                if len(builder.logs) >= bounds.items or values >= bounds.values or wire >= bounds.wire_bytes:
                    yield builder.take()
                    values = wire = 0
    yield builder.build()


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
    # Most values are strings: read inline, they cost no call of _any_value each.
    return {
        kv.key: value.string_value
        if (value := kv.value).WhichOneof("value") == "string_value"
        else _any_value(value)
        for kv in attributes
    }


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
