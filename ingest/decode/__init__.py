"""The one registry of OTLP decoders, by signal and encoding, shared by the gRPC, HTTP and Kafka receivers.

``decode(signal, encoding, payload)`` turns an export request of ``traces`` or ``logs`` (``otlp_proto``
bytes or ``otlp_json``) into a ``SpanBatch`` holding spans or log records; ``decode_traces`` and
``decode_logs`` name the signal. A payload that cannot be read as a whole raises ``DecodeError``; an
item that is bad on its own (ids of the wrong size, all-zero span ids, unreadable in JSON) is dropped
and counted in ``SpanBatch.rejected_spans`` so the rest of the request still gets through (OTLP
partial success). A log record's ids may be empty: it is then stored but correlated with no span.

The limits every transport shares are applied here: ``max_items`` per request (``TooManyItems``) and
``max_attributes`` per span or log record (that item rejected, the rest kept).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from google.protobuf import message as protobuf_message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ingest.decode.batch import BatchBuilder
from ingest.decode.otlp_json import JsonRequestError, ParsedRequest, parse_logs_request, parse_trace_request
from ingest.decode.protobuf import logs_request_to_batch, request_to_batch
from schemas.errors import TracescoreError
from schemas.spans import SpanBatch

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


# A decoder reads a payload into a batch; with ``max_items`` it refuses a larger request after the
# cheap protobuf parse, before the costly walk over every span and attribute; with ``max_attributes``
# it rejects each span or log record that has more attributes.
Decoder = Callable[[bytes, int | None, int | None], SpanBatch]
# ExportTraceServiceRequest or ExportLogsServiceRequest.
_Request = TypeVar("_Request", bound=protobuf_message.Message)


def _check_size(request: protobuf_message.Message, max_items: int | None) -> None:
    if max_items is None:
        return
    if isinstance(request, ExportTraceServiceRequest):
        items = sum(len(scope.spans) for resource in request.resource_spans for scope in resource.scope_spans)
    elif isinstance(request, ExportLogsServiceRequest):
        items = sum(
            len(scope.log_records) for resource in request.resource_logs for scope in resource.scope_logs
        )
    else:
        return
    if items > max_items:
        raise TooManyItems(f"the request holds {items} items, more than {max_items}; send smaller batches")


def _protobuf_decoder(
    request_type: type[_Request], to_batch: Callable[[_Request, BatchBuilder], SpanBatch]
) -> Decoder:
    def decode_protobuf(
        payload: bytes, max_items: int | None = None, max_attributes: int | None = None
    ) -> SpanBatch:
        try:
            request = request_type.FromString(payload)
        except protobuf_message.DecodeError as exc:
            raise DecodeError(f"payload is not a protobuf {request_type.__name__}: {exc}") from None
        _check_size(request, max_items)
        return to_batch(request, BatchBuilder(max_attributes=max_attributes))

    return decode_protobuf


def _json_decoder(
    parse: Callable[[bytes], ParsedRequest[_Request]], to_batch: Callable[[_Request, BatchBuilder], SpanBatch]
) -> Decoder:
    def decode_json(
        payload: bytes, max_items: int | None = None, max_attributes: int | None = None
    ) -> SpanBatch:
        try:
            parsed = parse(payload)
        except JsonRequestError as exc:
            raise DecodeError(str(exc)) from None
        _check_size(parsed.request, max_items)
        # Spans or records the JSON reader already refused are counted with the rest.
        return to_batch(parsed.request, BatchBuilder(parsed.rejected_spans, parsed.errors, max_attributes))

    return decode_json


def decode(
    signal: str,
    encoding: str,
    payload: bytes,
    max_items: int | None = None,
    max_attributes: int | None = None,
) -> SpanBatch:
    """Decode one export request of ``signal`` (traces or logs).

    Raises DecodeError when the payload as a whole is unreadable (TooManyItems when it holds more than
    ``max_items`` spans or log records), ValueError for an unknown signal or encoding. A span or log
    record of more than ``max_attributes`` attributes is rejected (counted, named in the errors).
    """
    try:
        encodings = DECODERS[signal]
    except KeyError:
        raise ValueError(f"unknown signal {signal!r}; known: {', '.join(DECODERS)}") from None
    try:
        decoder = encodings[encoding]
    except KeyError:
        raise ValueError(f"unknown encoding {encoding!r}; known: {', '.join(encodings)}") from None
    return decoder(payload, max_items, max_attributes)


def decode_traces(encoding: str, payload: bytes) -> SpanBatch:
    """Decode one trace export request. Raises DecodeError when the payload as a whole is unreadable."""
    return decode(SIGNAL_TRACES, encoding, payload)


def decode_logs(encoding: str, payload: bytes) -> SpanBatch:
    """Decode one logs export request into ``SpanBatch.logs``. Raises DecodeError as ``decode_traces``."""
    return decode(SIGNAL_LOGS, encoding, payload)


def encoding_for_content_type(content_type: str) -> str | None:
    """The encoding an HTTP Content-Type names ("application/json; charset=utf-8" -> "otlp_json")."""
    return _ENCODING_BY_CONTENT_TYPE.get(content_type.split(";", 1)[0].strip().lower())


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
