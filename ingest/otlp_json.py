"""OTLP/JSON trace requests -> ExportTraceServiceRequest protobuf, as the OTLP specification has them.

protobuf's generic JSON mapping reads bytes fields as base64, but OTLP/JSON writes trace and span ids as hex.
The ids are rewritten to base64 here and ``json_format.ParseDict`` does the rest (lowerCamelCase or
snake_case keys, enums as integers or names, 64-bit integers as strings or numbers, unknown fields
ignored as the specification requires). A span that cannot be read is left out and reported, so one bad
span does not lose the rest of the request.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1 import trace_pb2

TRACE_ID_BYTES = 16
SPAN_ID_BYTES = 8
_SHOWN_CHARS = 40  # how much of a bad value an error message quotes


class JsonRequestError(ValueError):
    """The payload as a whole is not an OTLP/JSON ExportTraceServiceRequest."""


class _BadSpan(Exception):
    """One span (or one envelope's spans) cannot be read; the message says why."""


@dataclass
class ParsedRequest:
    request: ExportTraceServiceRequest
    rejected_spans: int = 0
    errors: list[str] = field(default_factory=list)


def parse_trace_request(payload: bytes) -> ParsedRequest:
    """Read an OTLP/JSON trace export request; JsonRequestError if the payload as a whole is unusable."""
    resource_spans = _resource_spans(_load_json(payload))
    parsed = ParsedRequest(ExportTraceServiceRequest())
    prepared = [_prepare_resource(index, rs, parsed) for index, rs in enumerate(resource_spans)]
    try:
        json_format.ParseDict(
            {"resourceSpans": prepared}, parsed.request, ignore_unknown_fields=True
        )
    except json_format.ParseError:
        # Something below the ids is malformed: parse piece by piece to keep every readable span.
        parsed.request = ExportTraceServiceRequest()
        _parse_piecewise(prepared, parsed)
    return parsed


def _load_json(payload: bytes) -> Any:
    try:
        return json.loads(payload)
    except RecursionError:
        raise JsonRequestError("invalid JSON: nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        raise JsonRequestError(f"invalid JSON: {exc}") from None


def _resource_spans(document: Any) -> list[Any]:
    if not isinstance(document, dict):
        raise JsonRequestError(
            f"OTLP/JSON trace request must be a JSON object, got {type(document).__name__}"
        )
    resource_spans = _get(document, "resourceSpans", "resource_spans")
    if resource_spans is None:
        if document:
            # Unknown fields are to be ignored, but an object with nothing we know is not a request at all.
            keys = ", ".join(sorted(str(k) for k in document)[:5])
            raise JsonRequestError(
                f"JSON object is not an OTLP ExportTraceServiceRequest: no resourceSpans (keys: {keys})"
            )
        return []
    if not isinstance(resource_spans, list):
        raise JsonRequestError(f"resourceSpans must be an array, got {type(resource_spans).__name__}")
    return resource_spans


def _get(mapping: dict[str, Any], camel: str, snake: str) -> Any:
    return mapping[camel] if camel in mapping else mapping.get(snake)


def _prepare_resource(index: int, resource: Any, parsed: ParsedRequest) -> dict[str, Any]:
    """The resource envelope with each readable span's ids rewritten to base64; bad spans counted."""
    if not isinstance(resource, dict):
        parsed.errors.append(f"resourceSpans[{index}] is not a JSON object")
        return {}
    envelope = {k: v for k, v in resource.items() if k not in ("scopeSpans", "scope_spans")}
    scopes = _get(resource, "scopeSpans", "scope_spans") or []
    if not isinstance(scopes, list):
        parsed.errors.append(f"resourceSpans[{index}].scopeSpans is not an array")
        return envelope
    envelope["scopeSpans"] = [_prepare_scope(index, scope, parsed) for scope in scopes]
    return envelope


def _prepare_scope(index: int, scope: Any, parsed: ParsedRequest) -> dict[str, Any]:
    if not isinstance(scope, dict):
        parsed.errors.append(f"resourceSpans[{index}].scopeSpans has an entry that is not a JSON object")
        return {}
    envelope = {k: v for k, v in scope.items() if k != "spans"}
    spans = scope.get("spans") or []
    if not isinstance(spans, list):
        parsed.errors.append(f"resourceSpans[{index}].scopeSpans[].spans is not an array")
        return envelope
    kept = []
    for span in spans:
        try:
            kept.append(_prepare_span(span, parsed))
        except _BadSpan as exc:
            parsed.rejected_spans += 1
            parsed.errors.append(str(exc))
    envelope["spans"] = kept
    return envelope


def _prepare_span(span: Any, parsed: ParsedRequest) -> dict[str, Any]:
    if not isinstance(span, dict):
        raise _BadSpan(f"span is not a JSON object: {_show(span)}")
    label = _span_label(span)
    out = dict(span)
    try:
        _convert_ids(out)
        parent_key = "parentSpanId" if "parentSpanId" in out else "parent_span_id"
        if out.get(parent_key):
            out[parent_key] = _hex_to_base64(out[parent_key], "parentSpanId", SPAN_ID_BYTES, allow_zero=True)
    except ValueError as exc:
        raise _BadSpan(f"{label}: {exc}") from None
    links = out.get("links")
    if isinstance(links, list):
        out["links"] = [link for link in (_prepare_link(label, item, parsed) for item in links) if link]
    return out


def _prepare_link(label: str, link: Any, parsed: ParsedRequest) -> dict[str, Any] | None:
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


_ID_FIELDS = (("traceId", "trace_id", TRACE_ID_BYTES), ("spanId", "span_id", SPAN_ID_BYTES))


def _convert_ids(item: dict[str, Any]) -> None:
    """Rewrite the hex traceId and spanId of a span or link (in place) as protobuf JSON's base64."""
    for camel, snake, size in _ID_FIELDS:
        key = camel if camel in item else snake
        item[key] = _hex_to_base64(item.get(key), camel, size)


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


def _parse_piecewise(prepared: list[dict[str, Any]], parsed: ParsedRequest) -> None:
    """Parse envelope by envelope and span by span, dropping and counting what cannot be read."""
    for resource in prepared:
        scopes = resource.get("scopeSpans", [])
        resource_msg = trace_pb2.ResourceSpans()
        try:
            _parse_into({k: v for k, v in resource.items() if k != "scopeSpans"}, resource_msg)
        except _BadSpan as exc:
            _reject_all(scopes, f"resource: {exc}", parsed)
            continue
        for scope in scopes:
            spans = scope.get("spans", [])
            scope_msg = trace_pb2.ScopeSpans()
            try:
                _parse_into({k: v for k, v in scope.items() if k != "spans"}, scope_msg)
            except _BadSpan as exc:
                _reject_all([scope], f"scope: {exc}", parsed)
                continue
            for span in spans:
                span_msg = trace_pb2.Span()
                try:
                    _parse_into(span, span_msg)
                except _BadSpan as exc:
                    parsed.rejected_spans += 1
                    parsed.errors.append(f"{_span_label(span)}: {exc}")
                    continue
                scope_msg.spans.append(span_msg)
            resource_msg.scope_spans.append(scope_msg)
        parsed.request.resource_spans.append(resource_msg)


def _parse_into(data: dict[str, Any], message: Any) -> None:
    try:
        json_format.ParseDict(data, message, ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        raise _BadSpan(str(exc)) from None


def _reject_all(scopes: list[dict[str, Any]], reason: str, parsed: ParsedRequest) -> None:
    count = sum(len(scope.get("spans", [])) for scope in scopes)
    parsed.rejected_spans += count
    parsed.errors.append(f"{count} span(s) rejected, {reason}")


def _span_label(span: dict[str, Any]) -> str:
    name = span.get("name")
    return f"span {_show(name)}" if isinstance(name, str) else "span"


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."
