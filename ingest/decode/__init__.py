"""The one registry of OTLP decoders, by signal and encoding, shared by the gRPC, HTTP and Kafka receivers.

``decode(signal, encoding, payload)`` turns an export request of ``traces`` or ``logs`` (``otlp_proto``
bytes or ``otlp_json``) into a ``SpanBatch`` holding spans or log records; ``decode_traces`` and
``decode_logs`` name the signal. A payload that cannot be read as a whole raises ``DecodeError``; an
item that is bad on its own (ids of the wrong size, all-zero span ids, unreadable in JSON) is dropped
and counted in ``SpanBatch.rejected_items`` so the rest of the request still gets through (OTLP
partial success). A log record's ids may be empty: it is then stored but correlated with no span.

The limits every transport shares are applied here: ``max_items`` per request (``TooManyItems``) and
``max_attributes`` per span or log record (that item rejected, the rest kept).

The receivers read a request in two steps so that its memory stays bounded: ``read`` reads its
envelopes and counts its items (checking ``max_items``) -- a large protobuf request from its bytes
(``ingest.decode.wire``), a small one or an OTLP/JSON one parsed whole -- then ``DecodedRequest.slices``
turns it into spans or log records one slice at a time (``SLICE_BOUNDS``); each slice is stored
before the next is built. ``decode`` does both at once, for callers that want one batch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from google.protobuf import message as protobuf_message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.logs.v1 import logs_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from tracescore.ingest.decode.batch import BatchBuilder
from tracescore.ingest.decode.otlp_json import (
    JsonRequestError,
    ParsedRequest,
    parse_logs_request,
    parse_trace_request,
)
from tracescore.ingest.decode.protobuf import (
    WHOLE,
    ResourceEnvelope,
    SliceBounds,
    log_slices,
    parsed_resources,
    trace_slices,
)
from tracescore.ingest.decode.wire import WireError, WireRequest, WireShape
from tracescore.schemas.errors import TracescoreError
from tracescore.schemas.spans import SpanBatch

SIGNAL_TRACES = "traces"
SIGNAL_LOGS = "logs"

CONTENT_TYPES = {"otlp_proto": "application/x-protobuf", "otlp_json": "application/json"}
_ENCODING_BY_CONTENT_TYPE = {content_type: name for name, content_type in CONTENT_TYPES.items()}


class DecodeError(TracescoreError, ValueError):
    """The payload as a whole is not an export request in the given encoding; the message says why.

    Always permanent: the same bytes never decode later."""

    retriable = False


class TooManyItems(DecodeError):
    """The request holds more spans or log records than one request may (``max_items``)."""


# A slice of spans or log records in Python takes about 4-8 times the bytes it came in as (measured,
# see ingest.decode.cost): these bounds keep one slice to a few tens of MiB.
SLICE_BOUNDS = SliceBounds(items=2_000, values=20_000, wire_bytes=2**20)
# A protobuf request up to this size is parsed whole by protobuf (its tree takes up to 8 times its
# bytes: little, and parsing it whole is faster); a larger one envelope by envelope
# (ingest.decode.wire), its items a run at a time.
WHOLE_PARSE_BYTES = 2**20
Payload = bytes | bytearray
# ExportTraceServiceRequest or ExportLogsServiceRequest.
_Request = TypeVar("_Request", bound=protobuf_message.Message)
# Walks a request's envelopes slice by slice (ingest.decode.protobuf).
Walk = Callable[[Iterable[ResourceEnvelope], BatchBuilder, SliceBounds], Iterator[SpanBatch]]


class DecodedRequest:
    """An export request whose envelopes are read and items counted, not yet turned into spans."""

    def __init__(
        self,
        resources: Callable[[SliceBounds], Iterable[ResourceEnvelope]],
        items: int,
        largest_item: int,
        walk: Walk,
        builder: BatchBuilder,
    ) -> None:
        self._resources = resources  # the envelopes, for a walk within these bounds
        self.items = items  # spans or log records the request holds
        self.largest_item = largest_item  # bytes of the largest as it came in (at most)
        self._walk = walk
        self._builder = builder

    def slices(self, bounds: SliceBounds | None = None) -> Iterator[SpanBatch]:
        """The request's spans or log records, slice by slice (walked once; ``SLICE_BOUNDS`` unless
        given); the last slice carries the count of the items left out and why."""
        bounds = bounds or SLICE_BOUNDS
        return self._walk(self._resources(bounds), self._builder, bounds)

    def batch(self) -> SpanBatch:
        """The whole request in one batch."""
        return next(self.slices(WHOLE))


# A reader parses a payload's envelopes and counts its items; with ``max_items`` it refuses a larger
# request before the costly walk over every span and attribute; with ``max_attributes`` the walk
# rejects each span or log record that has more attributes.
Reader = Callable[[Payload, int | None, int | None], DecodedRequest]


def _items(request: protobuf_message.Message) -> int:
    if isinstance(request, ExportTraceServiceRequest):
        return sum(len(scope.spans) for resource in request.resource_spans for scope in resource.scope_spans)
    if isinstance(request, ExportLogsServiceRequest):
        return sum(
            len(scope.log_records) for resource in request.resource_logs for scope in resource.scope_logs
        )
    return 0


def _item_messages(request: protobuf_message.Message) -> Iterator[protobuf_message.Message]:
    if isinstance(request, ExportTraceServiceRequest):
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                yield from scope.spans
    elif isinstance(request, ExportLogsServiceRequest):
        for resource_logs in request.resource_logs:
            for scope_logs in resource_logs.scope_logs:
                yield from scope_logs.log_records


def _check_size(items: int, max_items: int | None) -> None:
    if max_items is not None and items > max_items:
        raise TooManyItems(f"the request holds {items} items, more than {max_items}; send smaller batches")


def _protobuf_reader(request_type: type[protobuf_message.Message], shape: WireShape, walk: Walk) -> Reader:
    def read_protobuf(
        payload: Payload, max_items: int | None = None, max_attributes: int | None = None
    ) -> DecodedRequest:
        builder = BatchBuilder(max_attributes=max_attributes)
        if len(payload) <= WHOLE_PARSE_BYTES:
            try:
                # protobuf reads any buffer (the stubs say bytes): a bytearray body is not copied first.
                parsed = request_type.FromString(payload)  # type: ignore[arg-type]
            except protobuf_message.DecodeError as exc:
                raise DecodeError(f"payload is not a protobuf {request_type.__name__}: {exc}") from None
            items = _items(parsed)
            _check_size(items, max_items)
            # No item is larger than the request: at most a slice's bytes (see ingest.decode.cost).
            # Items parsed from a request smaller than a slice's bytes cannot end a slice by their
            # sizes: they are not measured.
            return DecodedRequest(
                lambda bounds: parsed_resources(parsed, measured=len(payload) >= bounds.wire_bytes),
                items,
                len(payload),
                walk,
                builder,
            )
        request = WireRequest(payload, shape)
        try:
            items, largest = request.measure()
        except WireError as exc:
            raise DecodeError(f"payload is not a protobuf {request_type.__name__}: {exc}") from None
        _check_size(items, max_items)
        return DecodedRequest(lambda _bounds: request.resources(), items, largest, walk, builder)

    return read_protobuf


def _json_reader(parse: Callable[[Payload], ParsedRequest[_Request]], walk: Walk) -> Reader:
    def read_json(
        payload: Payload, max_items: int | None = None, max_attributes: int | None = None
    ) -> DecodedRequest:
        try:
            parsed = parse(payload)
        except JsonRequestError as exc:
            raise DecodeError(str(exc)) from None
        items = _items(parsed.request)
        _check_size(items, max_items)
        largest = max((item.ByteSize() for item in _item_messages(parsed.request)), default=0)
        # Spans or records the JSON reader already refused are counted with the rest.
        builder = BatchBuilder(parsed.rejected_items, parsed.errors, max_attributes)
        return DecodedRequest(lambda _bounds: parsed_resources(parsed.request), items, largest, walk, builder)

    return read_json


def read(
    signal: str,
    encoding: str,
    payload: Payload,
    max_items: int | None = None,
    max_attributes: int | None = None,
) -> DecodedRequest:
    """Parse one export request of ``signal`` (traces or logs), to be turned into items by its slices.

    Raises DecodeError when the payload as a whole is unreadable (TooManyItems when it holds more than
    ``max_items`` spans or log records), ValueError for an unknown signal or encoding. A span or log
    record of more than ``max_attributes`` attributes is rejected (counted, named in the errors).
    """
    try:
        encodings = DECODERS[signal]
    except KeyError:
        raise ValueError(f"unknown signal {signal!r}; known: {', '.join(DECODERS)}") from None
    try:
        reader = encodings[encoding]
    except KeyError:
        raise ValueError(f"unknown encoding {encoding!r}; known: {', '.join(encodings)}") from None
    return reader(payload, max_items, max_attributes)


def decode(
    signal: str,
    encoding: str,
    payload: Payload,
    max_items: int | None = None,
    max_attributes: int | None = None,
) -> SpanBatch:
    """Decode one export request of ``signal`` into one batch (``read`` and all of its slices)."""
    return read(signal, encoding, payload, max_items, max_attributes).batch()


def decode_traces(encoding: str, payload: bytes) -> SpanBatch:
    """Decode one trace export request. Raises DecodeError when the payload as a whole is unreadable."""
    return decode(SIGNAL_TRACES, encoding, payload)


def decode_logs(encoding: str, payload: bytes) -> SpanBatch:
    """Decode one logs export request into ``SpanBatch.logs``. Raises DecodeError as ``decode_traces``."""
    return decode(SIGNAL_LOGS, encoding, payload)


def encoding_for_content_type(content_type: str) -> str | None:
    """The encoding an HTTP Content-Type names ("application/json; charset=utf-8" -> "otlp_json")."""
    return _ENCODING_BY_CONTENT_TYPE.get(content_type.split(";", 1)[0].strip().lower())


# Built last: the readers wrap the request parsers above.
_TRACE_WIRE = WireShape(trace_pb2.ScopeSpans, trace_pb2.Span, lambda scope: scope.spans)
_LOGS_WIRE = WireShape(logs_pb2.ScopeLogs, logs_pb2.LogRecord, lambda scope: scope.log_records)
ENCODINGS: dict[str, Reader] = {
    "otlp_proto": _protobuf_reader(ExportTraceServiceRequest, _TRACE_WIRE, trace_slices),
    "otlp_json": _json_reader(parse_trace_request, trace_slices),
}
LOG_ENCODINGS: dict[str, Reader] = {
    "otlp_proto": _protobuf_reader(ExportLogsServiceRequest, _LOGS_WIRE, log_slices),
    "otlp_json": _json_reader(parse_logs_request, log_slices),
}
# The one registry: signal -> encoding -> reader.
DECODERS: dict[str, dict[str, Reader]] = {SIGNAL_TRACES: ENCODINGS, SIGNAL_LOGS: LOG_ENCODINGS}
