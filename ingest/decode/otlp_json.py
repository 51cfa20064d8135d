"""OTLP/JSON export requests (traces and logs) -> their protobuf messages, as the OTLP specification has them.

protobuf's generic JSON mapping reads bytes fields as base64, but OTLP/JSON writes trace and span ids as hex.
The ids are rewritten to base64 here and ``json_format.ParseDict`` does the rest (lowerCamelCase or
snake_case keys, enums as integers or names, 64-bit integers as strings or numbers, unknown fields
ignored as the specification requires). An item (span or log record) that cannot be read is left out
and reported, so one bad item does not lose the rest of the request.

Both signals share one walk over resource -> scope -> items; a ``_Shape`` names where each signal keeps
its items and how one item's ids are checked. A span must have both ids; a log record may have neither
(it is then not correlated with any span), but an id it has must be well formed.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from google.protobuf import json_format
from google.protobuf.message import Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.logs.v1 import logs_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

TRACE_ID_BYTES = 16
SPAN_ID_BYTES = 8
_SHOWN_CHARS = 40  # how much of a bad value an error message quotes


class JsonRequestError(ValueError):
    """The payload as a whole is not an OTLP/JSON export request of the expected signal."""


class _BadItem(Exception):
    """One item (or one envelope's items) cannot be read; the message says why."""


# ExportTraceServiceRequest or ExportLogsServiceRequest.
_Request = TypeVar("_Request", bound=Message)
_Request_co = TypeVar("_Request_co", bound=Message, covariant=True)


@dataclass
class ParsedRequest(Generic[_Request]):
    request: _Request
    rejected_items: int = 0  # rejected items of either signal, as SpanBatch counts them
    errors: list[str] = field(default_factory=list)


class _Refusals(Protocol):
    """Where the readers below count and explain the items they leave out (a ``ParsedRequest``)."""

    rejected_items: int
    errors: list[str]


@dataclass(frozen=True)
class _Shape(Generic[_Request_co]):
    """Where one signal keeps its items in an export request, and how one item is prepared."""

    signal: str  # as error messages name the request: "trace", "logs"
    noun: str  # one item: "span", "log record"
    request_type: type[_Request_co]
    resource_type: type[Message]
    scope_type: type[Message]
    item_type: type[Message]
    resources: str  # protobuf field names (snake_case); the JSON keys are their lowerCamelCase
    scopes: str
    items: str
    label_keys: tuple[str, str]  # the item field that names it in error messages
    prepare: Callable[[Any, _Shape[Message], _Refusals], dict[str, Any]]


def parse_trace_request(payload: bytes | bytearray) -> ParsedRequest[ExportTraceServiceRequest]:
    """Read an OTLP/JSON trace export request; JsonRequestError if the payload as a whole is unusable."""
    return _parse(payload, TRACES)


def parse_logs_request(payload: bytes | bytearray) -> ParsedRequest[ExportLogsServiceRequest]:
    """Read an OTLP/JSON logs export request; JsonRequestError if the payload as a whole is unusable."""
    return _parse(payload, LOGS)


def _parse(payload: bytes | bytearray, shape: _Shape[_Request]) -> ParsedRequest[_Request]:
    resources = _resources(_load_json(payload), shape)
    parsed = ParsedRequest(shape.request_type())
    prepared = [_prepare_resource(index, r, shape, parsed) for index, r in enumerate(resources)]
    try:
        json_format.ParseDict({_camel(shape.resources): prepared}, parsed.request, ignore_unknown_fields=True)
    except json_format.ParseError:
        # Something below the ids is malformed: parse piece by piece to keep every readable item.
        parsed.request = shape.request_type()
        _parse_piecewise(prepared, shape, parsed)
    return parsed


def _load_json(payload: bytes | bytearray) -> Any:
    try:
        return json.loads(payload)
    except RecursionError:
        raise JsonRequestError("invalid JSON: nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        raise JsonRequestError(f"invalid JSON: {exc}") from None


def _resources(document: Any, shape: _Shape[Message]) -> list[Any]:
    key = _camel(shape.resources)
    if not isinstance(document, dict):
        raise JsonRequestError(
            f"OTLP/JSON {shape.signal} request must be a JSON object, got {type(document).__name__}"
        )
    resources = _get(document, key, shape.resources)
    if resources is None:
        if document:
            # Unknown fields are to be ignored, but an object with nothing we know is not a request at all.
            keys = ", ".join(sorted(str(k) for k in document)[:5])
            raise JsonRequestError(
                f"JSON object is not an OTLP {shape.request_type.DESCRIPTOR.name}: no {key} (keys: {keys})"
            )
        return []
    if not isinstance(resources, list):
        raise JsonRequestError(f"{key} must be an array, got {type(resources).__name__}")
    return resources


def _get(mapping: dict[str, Any], camel: str, snake: str) -> Any:
    return mapping[camel] if camel in mapping else mapping.get(snake)


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(word.capitalize() for word in rest)


def _prepare_resource(index: int, resource: Any, shape: _Shape[Message], parsed: _Refusals) -> dict[str, Any]:
    """The resource envelope with each readable item's ids rewritten to base64; bad items counted."""
    where = f"{_camel(shape.resources)}[{index}]"
    if not isinstance(resource, dict):
        parsed.errors.append(f"{where} is not a JSON object")
        return {}
    scopes_key = _camel(shape.scopes)
    envelope = {k: v for k, v in resource.items() if k not in (scopes_key, shape.scopes)}
    scopes = _get(resource, scopes_key, shape.scopes) or []
    if not isinstance(scopes, list):
        parsed.errors.append(f"{where}.{scopes_key} is not an array")
        return envelope
    if not scopes:
        parsed.errors.append(f"{where} holds no {scopes_key}")  # a warning: nothing was left out
    envelope[scopes_key] = [
        _prepare_scope(f"{where}.{scopes_key}[{i}]", s, shape, parsed) for i, s in enumerate(scopes)
    ]
    return envelope


def _prepare_scope(where: str, scope: Any, shape: _Shape[Message], parsed: _Refusals) -> dict[str, Any]:
    if not isinstance(scope, dict):
        parsed.errors.append(f"{where} is not a JSON object")
        return {}
    items_key = _camel(shape.items)
    envelope = {k: v for k, v in scope.items() if k not in (items_key, shape.items)}
    items = _get(scope, items_key, shape.items) or []
    if not isinstance(items, list):
        parsed.errors.append(f"{where}.{items_key} is not an array")
        return envelope
    if not items:
        parsed.errors.append(f"{where} holds no {items_key}")
    kept = []
    for item in items:
        try:
            kept.append(shape.prepare(item, shape, parsed))
        except _BadItem as exc:
            parsed.rejected_items += 1
            parsed.errors.append(str(exc))
    envelope[items_key] = kept
    return envelope


def _prepare_span(span: Any, shape: _Shape[Message], parsed: _Refusals) -> dict[str, Any]:
    if not isinstance(span, dict):
        raise _BadItem(f"span is not a JSON object: {_show(span)}")
    label = _label(span, shape)
    out = dict(span)
    try:
        _convert_ids(out)
        parent_key = "parentSpanId" if "parentSpanId" in out else "parent_span_id"
        if out.get(parent_key):
            out[parent_key] = _hex_to_base64(out[parent_key], "parentSpanId", SPAN_ID_BYTES, allow_zero=True)
        _check_enum(out, "kind", "kind", trace_pb2.Span.SpanKind)
        status = out.get("status")
        if isinstance(status, dict):
            _check_enum(status, "code", "status.code", trace_pb2.Status.StatusCode)
    except ValueError as exc:
        raise _BadItem(f"{label}: {exc}") from None
    links = out.get("links")
    if isinstance(links, list):
        out["links"] = [link for link in (_prepare_link(label, item, parsed) for item in links) if link]
    return out


def _prepare_link(label: str, link: Any, parsed: _Refusals) -> dict[str, Any] | None:
    if not isinstance(link, dict):
        parsed.errors.append(f"{label}: dropped a link that is not a JSON object")
        return None
    out = dict(link)
    try:
        _convert_ids(out)
    except ValueError as exc:
        parsed.errors.append(f"{label}: dropped a link: {exc}")
        return None
    return out


def _prepare_log_record(record: Any, shape: _Shape[Message], parsed: _Refusals) -> dict[str, Any]:
    if not isinstance(record, dict):
        raise _BadItem(f"log record is not a JSON object: {_show(record)}")
    out = dict(record)
    try:
        _check_enum(out, "severityNumber", "severityNumber", logs_pb2.SeverityNumber, "severity_number")
        for camel, snake, size in _ID_FIELDS:
            key = camel if camel in out else snake
            if out.get(key) in (None, ""):
                out.pop(key, None)  # a record outside any trace: stored, never correlated
                continue
            # All zeros is the "no trace" id of the data model, read as absent by the decoder.
            out[key] = _hex_to_base64(out[key], camel, size, allow_zero=True)
    except ValueError as exc:
        raise _BadItem(f"{_label(record, shape)}: {exc}") from None
    return out


_ID_FIELDS = (("traceId", "trace_id", TRACE_ID_BYTES), ("spanId", "span_id", SPAN_ID_BYTES))


def _convert_ids(item: dict[str, Any]) -> None:
    """Rewrite the hex traceId and spanId of a span or link (in place) as protobuf JSON's base64."""
    for camel, snake, size in _ID_FIELDS:
        key = camel if camel in item else snake
        item[key] = _hex_to_base64(item.get(key), camel, size)


def _check_enum(item: dict[str, Any], key: str, name: str, enum: Any, snake: str | None = None) -> None:
    """An enum field must be an integer or one of the enum's names: protobuf's JSON reader would take
    an unknown name as the default value without a word (it ignores unknown fields), so a span sent
    with ``"kind": "banana"`` would be stored as a span of unspecified kind."""
    value = item.get(key, item.get(snake)) if snake else item.get(key)
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return
    if isinstance(value, str) and (value in enum.DESCRIPTOR.values_by_name or value.lstrip("-").isdigit()):
        return
    names = list(enum.keys())
    shown = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
    raise ValueError(f"{name} {_show(value)} is not a {enum.DESCRIPTOR.name} ({shown}) or an integer")


def _hex_to_base64(value: Any, name: str, size: int, allow_zero: bool = False) -> str:
    if value is None or value == "":
        raise ValueError(f"{name} is missing")
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a hex string, got {type(value).__name__}")
    if len(value) != size * 2:
        raise ValueError(f"{name} must be {size * 2} hex characters, got {len(value)}: {_show(value)}")
    try:
        raw = bytes.fromhex(value)
    except ValueError:
        raise ValueError(f"{name} is not hex: {_show(value)}") from None
    if len(raw) != size:  # bytes.fromhex skips whitespace
        raise ValueError(f"{name} is not hex: {_show(value)}")
    if not allow_zero and not any(raw):
        raise ValueError(f"{name} is all zeros")
    return base64.b64encode(raw).decode("ascii")


def _parse_piecewise(
    prepared: list[dict[str, Any]], shape: _Shape[_Request], parsed: ParsedRequest[_Request]
) -> None:
    """Parse envelope by envelope and item by item, dropping and counting what cannot be read."""
    scopes_key, items_key = _camel(shape.scopes), _camel(shape.items)
    for resource in prepared:
        scopes = resource.get(scopes_key, [])
        resource_msg = shape.resource_type()
        try:
            _parse_into({k: v for k, v in resource.items() if k != scopes_key}, resource_msg)
        except _BadItem as exc:
            _reject_all(scopes, f"resource: {exc}", shape, parsed)
            continue
        for scope in scopes:
            items = scope.get(items_key, [])
            scope_msg = shape.scope_type()
            try:
                _parse_into({k: v for k, v in scope.items() if k != items_key}, scope_msg)
            except _BadItem as exc:
                _reject_all([scope], f"scope: {exc}", shape, parsed)
                continue
            for item in items:
                item_msg = shape.item_type()
                try:
                    _parse_into(item, item_msg)
                except _BadItem as exc:
                    parsed.rejected_items += 1
                    parsed.errors.append(f"{_label(item, shape)}: {exc}")
                    continue
                getattr(scope_msg, shape.items).append(item_msg)
            getattr(resource_msg, shape.scopes).append(scope_msg)
        getattr(parsed.request, shape.resources).append(resource_msg)


def _parse_into(data: dict[str, Any], message: Message) -> None:
    try:
        json_format.ParseDict(data, message, ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        raise _BadItem(str(exc)) from None


def _reject_all(scopes: list[dict[str, Any]], reason: str, shape: _Shape[Message], parsed: _Refusals) -> None:
    items_key = _camel(shape.items)
    count = sum(len(scope.get(items_key, [])) for scope in scopes)
    parsed.rejected_items += count
    parsed.errors.append(f"{count} {shape.noun}(s) rejected, {reason}")


def _label(item: dict[str, Any], shape: _Shape[Message]) -> str:
    name = _get(item, *shape.label_keys)
    return f"{shape.noun} {_show(name)}" if isinstance(name, str) and name else shape.noun


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."


TRACES: _Shape[ExportTraceServiceRequest] = _Shape(
    signal="trace",
    noun="span",
    request_type=ExportTraceServiceRequest,
    resource_type=trace_pb2.ResourceSpans,
    scope_type=trace_pb2.ScopeSpans,
    item_type=trace_pb2.Span,
    resources="resource_spans",
    scopes="scope_spans",
    items="spans",
    label_keys=("name", "name"),
    prepare=_prepare_span,
)

LOGS: _Shape[ExportLogsServiceRequest] = _Shape(
    signal="logs",
    noun="log record",
    request_type=ExportLogsServiceRequest,
    resource_type=logs_pb2.ResourceLogs,
    scope_type=logs_pb2.ScopeLogs,
    item_type=logs_pb2.LogRecord,
    resources="resource_logs",
    scopes="scope_logs",
    items="log_records",
    label_keys=("eventName", "event_name"),
    prepare=_prepare_log_record,
)
