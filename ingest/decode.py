"""The one registry of OTLP decoders, by signal and encoding, shared by the gRPC, HTTP and Kafka receivers.

``decode(signal, encoding, payload)`` turns an export request of ``traces`` or ``logs`` (``otlp_proto``
bytes or ``otlp_json``) into a ``SpanBatch`` holding spans or log records; ``decode_traces`` and
``decode_logs`` name the signal. A payload that cannot be read as a whole raises ``DecodeError``; an
item that is bad on its own (ids of the wrong size, all-zero span ids, unreadable in JSON) is dropped
and counted in ``SpanBatch.rejected_spans`` so the rest of the request still gets through (OTLP
partial success). A log record's ids may be empty: it is then stored but correlated with no span.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from google.protobuf import message as protobuf_message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1 import trace_pb2

from ingest.otlp_json import (
    SPAN_ID_BYTES,
    TRACE_ID_BYTES,
    JsonRequestError,
    parse_logs_request,
    parse_trace_request,
)
from schemas.spans import LogRecord, Span, SpanBatch, SpanEvent, SpanLink

SIGNAL_TRACES = "traces"
SIGNAL_LOGS = "logs"

# A request full of bad spans would otherwise carry one message per span back to the client.
MAX_ERROR_MESSAGES = 10

CONTENT_TYPES = {"otlp_proto": "application/x-protobuf", "otlp_json": "application/json"}
_ENCODING_BY_CONTENT_TYPE = {content_type: name for name, content_type in CONTENT_TYPES.items()}


class DecodeError(ValueError):
    """The payload as a whole is not an export request in the given encoding; the message says why."""


class _BadSpan(Exception):
    pass


class _BatchBuilder:
    """Collects converted items, and counts rejections while keeping only a few of their messages."""

    def __init__(self, rejected_spans: int = 0, errors: Iterable[str] = ()) -> None:
        self.spans: list[Span] = []
        self.logs: list[LogRecord] = []
        self.rejected_spans = rejected_spans
        self._errors: list[str] = []
        self._more_errors = 0
        for error in errors:
            self.error(error)

    def error(self, text: str) -> None:
        if len(self._errors) < MAX_ERROR_MESSAGES:
            self._errors.append(text)
        else:
            self._more_errors += 1

    def reject(self, reason: str) -> None:
        self.rejected_spans += 1
        self.error(reason)

    def build(self) -> SpanBatch:
        errors = list(self._errors)
        if self._more_errors:
            errors.append(f"... and {self._more_errors} more")
        return SpanBatch.model_construct(
            spans=self.spans, logs=self.logs, rejected_spans=self.rejected_spans, errors=errors
        )


Decoder = Callable[[bytes], SpanBatch]


def _protobuf_decoder(
    request_type: type[ExportTraceServiceRequest] | type[ExportLogsServiceRequest],
    to_batch: Callable[[Any], SpanBatch],
) -> Decoder:
    def decode_protobuf(payload: bytes) -> SpanBatch:
        try:
            request = request_type.FromString(payload)
        except protobuf_message.DecodeError as exc:
            raise DecodeError(f"payload is not a protobuf {request_type.__name__}: {exc}") from None
        return to_batch(request)

    return decode_protobuf


def _json_decoder(
    parse: Callable[[bytes], Any], to_batch: Callable[[Any, _BatchBuilder], SpanBatch]
) -> Decoder:
    def decode_json(payload: bytes) -> SpanBatch:
        try:
            parsed = parse(payload)
        except JsonRequestError as exc:
            raise DecodeError(str(exc)) from None
        # Spans or records the JSON reader already refused are counted with the rest.
        return to_batch(parsed.request, _BatchBuilder(parsed.rejected_spans, parsed.errors))

    return decode_json


def decode(signal: str, encoding: str, payload: bytes) -> SpanBatch:
    """Decode one export request of ``signal`` (traces or logs).

    Raises DecodeError when the payload as a whole is unreadable, ValueError for an unknown signal or
    encoding.
    """
    try:
        encodings = DECODERS[signal]
    except KeyError:
        raise ValueError(f"unknown signal {signal!r}; known: {', '.join(DECODERS)}") from None
    try:
        decoder = encodings[encoding]
    except KeyError:
        raise ValueError(f"unknown encoding {encoding!r}; known: {', '.join(encodings)}") from None
    return decoder(payload)


def decode_traces(encoding: str, payload: bytes) -> SpanBatch:
    """Decode one trace export request. Raises DecodeError when the payload as a whole is unreadable."""
    return decode(SIGNAL_TRACES, encoding, payload)


def decode_logs(encoding: str, payload: bytes) -> SpanBatch:
    """Decode one logs export request into ``SpanBatch.logs``. Raises DecodeError as ``decode_traces``."""
    return decode(SIGNAL_LOGS, encoding, payload)


def encoding_for_content_type(content_type: str) -> str | None:
    """The encoding an HTTP Content-Type names ("application/json; charset=utf-8" -> "otlp_json")."""
    return _ENCODING_BY_CONTENT_TYPE.get(content_type.split(";", 1)[0].strip().lower())


def export_response(batch: SpanBatch) -> ExportTraceServiceResponse:
    """The OTLP response for a decoded batch; partial_success only when something was left out."""
    response = ExportTraceServiceResponse()
    if batch.rejected_spans or batch.errors:
        response.partial_success.rejected_spans = batch.rejected_spans
        response.partial_success.error_message = batch.error_message
    return response


def export_logs_response(batch: SpanBatch) -> ExportLogsServiceResponse:
    """The OTLP logs response; partial_success (rejected_log_records) only when something was left out."""
    response = ExportLogsServiceResponse()
    if batch.rejected_spans or batch.errors:
        response.partial_success.rejected_log_records = batch.rejected_spans
        response.partial_success.error_message = batch.error_message
    return response


def export_response_for(
    signal: str, batch: SpanBatch
) -> ExportTraceServiceResponse | ExportLogsServiceResponse:
    """The OTLP export response of ``signal`` for a decoded batch."""
    return export_logs_response(batch) if signal == SIGNAL_LOGS else export_response(batch)


def request_to_batch(request: ExportTraceServiceRequest, builder: _BatchBuilder | None = None) -> SpanBatch:
    builder = builder or _BatchBuilder()
    for resource_spans in request.resource_spans:
        # One dict per resource, shared by its spans: spans are frozen and this is the hot path.
        resource_attributes = _attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            scope_name = scope_spans.scope.name
            scope_version = scope_spans.scope.version
            for span in scope_spans.spans:
                try:
                    builder.spans.append(_span(span, resource_attributes, scope_name, scope_version, builder))
                except _BadSpan as exc:
                    builder.reject(str(exc))
    return builder.build()


def _span(
    span: trace_pb2.Span,
    resource_attributes: dict[str, Any],
    scope_name: str,
    scope_version: str,
    builder: _BatchBuilder,
) -> Span:
    label = f"span {span.name!r}"
    try:
        trace_id = _id_hex(span.trace_id, "trace_id", TRACE_ID_BYTES)
        span_id = _id_hex(span.span_id, "span_id", SPAN_ID_BYTES)
        parent_span_id = _parent_hex(span.parent_span_id)
    except ValueError as exc:
        raise _BadSpan(f"{label}: {exc}") from None
    return Span.model_construct(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent_span_id,
        trace_state=span.trace_state,
        name=span.name,
        kind=int(span.kind),
        start_time_unix_nano=span.start_time_unix_nano,
        end_time_unix_nano=span.end_time_unix_nano,
        attributes=_attributes(span.attributes),
        events=[
            SpanEvent.model_construct(
                name=event.name, time_unix_nano=event.time_unix_nano, attributes=_attributes(event.attributes)
            )
            for event in span.events
        ],
        links=_links(span.links, label, builder),
        status_code=int(span.status.code),
        status_message=span.status.message,
        resource_attributes=resource_attributes,
        scope_name=scope_name,
        scope_version=scope_version,
    )


def _links(links: Iterable[trace_pb2.Span.Link], label: str, builder: _BatchBuilder) -> list[SpanLink]:
    out = []
    for link in links:
        try:
            trace_id = _id_hex(link.trace_id, "trace_id", TRACE_ID_BYTES)
            span_id = _id_hex(link.span_id, "span_id", SPAN_ID_BYTES)
        except ValueError as exc:
            # A bad link does not make the span unusable: drop the link and say so.
            builder.error(f"{label}: dropped a link: {exc}")
            continue
        out.append(
            SpanLink.model_construct(
                trace_id=trace_id,
                span_id=span_id,
                trace_state=link.trace_state,
                attributes=_attributes(link.attributes),
            )
        )
    return out


def logs_request_to_batch(
    request: ExportLogsServiceRequest, builder: _BatchBuilder | None = None
) -> SpanBatch:
    builder = builder or _BatchBuilder()
    for resource_logs in request.resource_logs:
        resource_attributes = _attributes(resource_logs.resource.attributes)
        for scope_logs in resource_logs.scope_logs:
            scope = scope_logs.scope
            scope_attributes = _attributes(scope.attributes)
            for record in scope_logs.log_records:
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
                    LogRecord.model_construct(
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
    if kind is None:
        return None
    if kind == "array_value":
        return [_any_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return _attributes(value.kvlist_value.values)
    return getattr(value, kind)


# Built last: the decoders wrap the request readers above.
ENCODINGS: dict[str, Decoder] = {
    "otlp_proto": _protobuf_decoder(ExportTraceServiceRequest, request_to_batch),
    "otlp_json": _json_decoder(parse_trace_request, request_to_batch),
}
LOG_ENCODINGS: dict[str, Decoder] = {
    "otlp_proto": _protobuf_decoder(ExportLogsServiceRequest, logs_request_to_batch),
    "otlp_json": _json_decoder(parse_logs_request, logs_request_to_batch),
}
# The one registry: signal -> encoding -> decoder.
DECODERS: dict[str, dict[str, Decoder]] = {SIGNAL_TRACES: ENCODINGS, SIGNAL_LOGS: LOG_ENCODINGS}
