"""Rows for the ClickHouse tables, built the way the OpenTelemetry Collector's clickhouseexporter builds them.

Attribute values become strings as pdata's ``pcommon.Value.AsString()`` renders them, so a span stored by
tracescore reads the same in Grafana as one stored by the collector: strings as-is, bools ``true/false``,
ints in decimal, doubles as ES6 numbers (``1``, ``0.5``, ``1e-7``, ``1e+21``), bytes as base64, arrays and
maps as compact JSON with sorted keys.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from tracescore.schemas import Decision, LogRecord, ScoreRecord, Span
from tracescore.schemas.durations import unix_nanos
from tracescore.schemas.spans import SPAN_KIND_NAMES, STATUS_NAMES, SpanEvent, SpanLink

OTEL_TRACES_COLUMNS = (
    "Timestamp", "TraceId", "SpanId", "ParentSpanId", "TraceState", "SpanName", "SpanKind", "ServiceName",
    "ResourceAttributes", "ScopeName", "ScopeVersion", "SpanAttributes", "Duration", "StatusCode",
    "StatusMessage", "Events.Timestamp", "Events.Name", "Events.Attributes", "Links.TraceId",
    "Links.SpanId", "Links.TraceState", "Links.Attributes",
)  # fmt: skip

# The exporter's logs insert; TimestampTime is left to its DEFAULT toDateTime(Timestamp), as there.
OTEL_LOGS_COLUMNS = (
    "Timestamp", "TraceId", "SpanId", "TraceFlags", "SeverityText", "SeverityNumber", "ServiceName", "Body",
    "ResourceSchemaUrl", "ResourceAttributes", "ScopeSchemaUrl", "ScopeName", "ScopeVersion",
    "ScopeAttributes", "LogAttributes", "EventName",
)  # fmt: skip

SCORES_COLUMNS = (
    "ScoreId", "Timestamp", "TraceId", "SpanId", "ScorerId", "ScorerVersion", "Score", "Label", "Reason",
    "StepResults", "JudgeModel", "InputTokens", "OutputTokens", "CostUsd", "LatencyMs", "SampleRate",
    "Source", "AgentName", "ServiceName", "SpanStart", "Version", "SessionId",
)  # fmt: skip

DECISIONS_COLUMNS = (
    "Timestamp", "TraceId", "SpanId", "ScorerId", "Decision", "Detail", "SampleRate", "Source", "AgentName",
    "ServiceName", "SpanStart", "Version", "SessionId",
)  # fmt: skip

JUDGE_IO_COLUMNS = ("Timestamp", "TraceId", "SpanId", "ScorerId", "Decision", "Exchanges", "Version")

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_UNSPECIFIED_KIND = SPAN_KIND_NAMES[0]
_UNSET_STATUS = STATUS_NAMES[0]
_encode_string = json.encoder.encode_basestring
_NO_EVENTS: tuple[tuple[()], ...] = ((), (), ())  # Events.Timestamp, .Name, .Attributes
_NO_LINKS: tuple[tuple[()], ...] = ((), (), (), ())  # Links.TraceId, .SpanId, .TraceState, .Attributes


class _NotJson(ValueError):
    """A value Go's encoding/json refuses (NaN, ±Inf): pdata then renders the whole value as ""."""


def go_float_string(value: float) -> str:
    """A double as pdata renders it: ES6 number formatting, shortest digits that round-trip."""
    text = repr(value)
    if "e" not in text and "n" not in text:
        # Without an exponent (and not inf or nan), repr's digits are already ES6's fixed form
        # (repr only goes fixed within [1e-4, 1e16), inside ES6's [1e-6, 1e21)): drop the ".0".
        return text.rstrip("0").rstrip(".") if "." in text else text
    if math.isnan(value):
        return "json: unsupported value: NaN"
    if math.isinf(value):
        return "json: unsupported value: " + ("+Inf" if value > 0 else "-Inf")
    # repr() gives the shortest round-trip digits (as Go's -1 precision does); Decimal lays them out
    # in fixed or exponent form without float noise, and its exponent is unpadded like pdata's.
    digits = Decimal(text)
    magnitude = abs(value)
    if magnitude != 0 and (magnitude < 1e-6 or magnitude >= 1e21):
        return format(digits, "e")
    text = format(digits, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _json_string(text: str) -> str:
    # Go's encoder (HTML escaping off, as recent pdata sets it) keeps non-ASCII as UTF-8 but always escapes
    # the JavaScript line terminators U+2028 and U+2029. encode_basestring is what json.dumps(text,
    # ensure_ascii=False) calls, without building an encoder per string.
    return _encode_string(text).replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _go_json(value: Any) -> str:
    # The common exact types first (the same answers as the checks below, without an ABC check).
    kind = type(value)
    if kind is str:
        return _json_string(value)
    if kind is list:
        return "[" + ",".join([_go_json(v) for v in value]) + "]"
    if kind is dict:
        return _go_json_object(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _NotJson(value)
        return go_float_string(value)
    if isinstance(value, str):
        return _json_string(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return _json_string(base64.b64encode(bytes(value)).decode("ascii"))
    if isinstance(value, Mapping):
        return _go_json_object(value)
    if isinstance(value, list | tuple):
        return "[" + ",".join([_go_json(v) for v in value]) + "]"
    return _json_string(str(value))


def _go_json_object(value: Mapping[Any, Any]) -> str:
    items = sorted((str(k), v) for k, v in value.items())
    return "{" + ",".join([f"{_json_string(k)}:{_go_json(v)}" for k, v in items]) + "}"


def attribute_string(value: Any) -> str:
    """One attribute value as ``pcommon.Value.AsString()`` renders it."""
    if isinstance(value, str):
        return value
    if type(value) is int:  # before the bool check below, which an exact int cannot pass
        return str(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float_string(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    try:
        return _go_json(value)
    except _NotJson:
        return ""  # json.Marshal failed in the collector too, and AsString ignores the error


def attribute_map(attributes: Mapping[str, Any]) -> dict[str, str]:
    # Most values are strings already: keep them without a call.
    return {
        key: value if type(value) is str else attribute_string(value) for key, value in attributes.items()
    }


def span_rows(spans: Iterable[Span]) -> list[list[Any]]:
    """The ``otel_traces`` rows of spans. Spans decoded from one resource share its attribute dict:
    its strings are built once (by the dict's id, stable while the spans hold it) and shared by the
    rows, which the insert only reads."""
    resources: dict[int, dict[str, str]] = {}
    rows = []
    for span in spans:
        resource = resources.get(id(span.resource_attributes))
        if resource is None:
            resource = resources[id(span.resource_attributes)] = attribute_map(span.resource_attributes)
        rows.append(span_row(span, resource))
    return rows


def span_row(span: Span, resource_attributes: dict[str, str] | None = None) -> list[Any]:
    """One ``otel_traces`` row in OTEL_TRACES_COLUMNS order; times stay integer nanoseconds.
    ``resource_attributes``: the span's resource attributes as strings, when built already."""
    events, links = span.events, span.links
    if resource_attributes is None:
        resource_attributes = attribute_map(span.resource_attributes)
    return [
        span.start_time_unix_nano,
        span.trace_id,
        span.span_id,
        span.parent_span_id,
        span.trace_state,
        span.name,
        SPAN_KIND_NAMES.get(span.kind, _UNSPECIFIED_KIND),
        span.service_name,
        resource_attributes,
        span.scope_name,
        span.scope_version,
        attribute_map(span.attributes),
        span.duration_ns,
        STATUS_NAMES.get(span.status_code, _UNSET_STATUS),
        span.status_message,
        # Most spans have neither events nor links: skip the seven comprehensions, and the seven
        # empty lists (shared empty tuples: fewer allocations, fewer collector passes per commit).
        *(_event_columns(events) if events else _NO_EVENTS),
        *(_link_columns(links) if links else _NO_LINKS),
    ]


def _event_columns(events: list[SpanEvent]) -> tuple[list[int], list[str], list[dict[str, str]]]:
    return (
        [event.time_unix_nano for event in events],
        [event.name for event in events],
        [attribute_map(event.attributes) for event in events],
    )


def _link_columns(links: list[SpanLink]) -> tuple[list[str], list[str], list[str], list[dict[str, str]]]:
    return (
        [link.trace_id for link in links],
        [link.span_id for link in links],
        [link.trace_state for link in links],
        [attribute_map(link.attributes) for link in links],
    )


def log_row(record: LogRecord) -> list[Any]:
    """One ``otel_logs`` row in OTEL_LOGS_COLUMNS order, as the clickhouseexporter maps a log record."""
    return [
        # A record without a timestamp is placed at the time the collector (or SDK) observed it.
        record.time_unix_nano or record.observed_time_unix_nano,
        record.trace_id,
        record.span_id,
        record.flags & 0xFF,  # the low byte of LogRecord.flags holds the W3C trace flags
        record.severity_text,
        min(max(record.severity_number, 0), 255),
        record.service_name,
        attribute_string(record.body),
        record.resource_schema_url,
        attribute_map(record.resource_attributes),
        record.scope_schema_url,
        record.scope_name,
        record.scope_version,
        attribute_map(record.scope_attributes),
        attribute_map(record.attributes),
        record.event_name,
    ]


def iso_from_nanos(nanos: int) -> str:
    return (_EPOCH + timedelta(microseconds=nanos // 1_000)).isoformat()


def score_row(record: ScoreRecord) -> list[Any]:
    created = unix_nanos(record.created_at)
    return [
        record.score_id,
        created,
        record.trace_id,
        record.span_id,
        record.scorer_id,
        record.scorer_version,
        record.score,
        record.label,
        record.reason,
        # Most scorers keep no step results: their "{}" needs no encoder.
        json.dumps(record.step_results, ensure_ascii=False, default=str) if record.step_results else "{}",
        record.judge_model,
        max(0, record.input_tokens),
        max(0, record.output_tokens),
        record.cost_usd,
        record.latency_ms,
        record.sample_rate,
        record.source,
        record.agent_name,
        record.service_name,
        unix_nanos(record.span_start) if record.span_start is not None else created,
        created,
        record.session_id,
    ]


def decision_row(decision: Decision) -> list[Any]:
    created = unix_nanos(decision.created_at)
    return [
        created,
        decision.trace_id,
        decision.span_id,
        decision.scorer_id,
        decision.decision,
        decision.detail,
        decision.sample_rate,
        decision.source,
        decision.agent_name,
        decision.service_name,
        unix_nanos(decision.span_start) if decision.span_start is not None else created,
        created,
        decision.session_id,
    ]


def judge_io_row(decision: Decision) -> list[Any]:
    """The ``judge_io`` row of a decision that kept its judges' exchanges (same key and version)."""
    key = decision_row(decision)[:5]  # Timestamp, TraceId, SpanId, ScorerId, Decision
    exchanges = [exchange.model_dump(exclude_none=True) for exchange in decision.judge_io]
    return [*key, json.dumps(exchanges, ensure_ascii=False), key[0]]


def score_json(row: Mapping[str, Any]) -> dict[str, Any]:
    """A ``scores`` row (as selected by the store) in the JSON shape of ``GET /api/scores``."""
    try:
        steps = json.loads(row["StepResults"]) if row["StepResults"] else {}
    except ValueError:
        steps = {"raw": row["StepResults"]}  # written by something else; keep it visible, not fatal
    return {
        "trace_id": row["TraceId"],
        "span_id": row["SpanId"],
        "scorer_id": row["ScorerId"],
        "scorer_version": row["ScorerVersion"],
        "score": row["Score"],
        "label": row["Label"],
        "reason": row["Reason"],
        "step_results": steps,
        "judge_model": row["JudgeModel"],
        "input_tokens": row["InputTokens"],
        "output_tokens": row["OutputTokens"],
        "cost_usd": row["CostUsd"],
        "latency_ms": row["LatencyMs"],
        "sample_rate": row["SampleRate"],
        "source": row["Source"],
        "agent_name": row["AgentName"],
        "service_name": row["ServiceName"],
        "session_id": row.get("SessionId", ""),
        "created_at": iso_from_nanos(row["CreatedNs"]),
        "score_id": row["ScoreId"],
    }


def decision_json(row: Mapping[str, Any]) -> dict[str, Any]:
    """A ``score_decisions`` row (as selected by the store) in the JSON shape of ``GET /api/decisions``."""
    return {
        "trace_id": row["TraceId"],
        "span_id": row["SpanId"],
        "scorer_id": row["ScorerId"],
        "decision": row["Decision"],
        "detail": row["Detail"],
        "sample_rate": row["SampleRate"],
        "source": row["Source"],
        "created_at": iso_from_nanos(row["CreatedNs"]),
        "agent_name": row["AgentName"],
        "service_name": row["ServiceName"],
        "session_id": row.get("SessionId", ""),
    }
