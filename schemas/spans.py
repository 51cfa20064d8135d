"""Spans as tracescore holds them after decoding: OTLP semantics, plain Python values.

Ids are lowercase hex (32 chars for traces, 16 for spans), times are Unix nanoseconds, attribute
values are the decoded OTLP AnyValue (``AttributeValue``).
"""

from __future__ import annotations

from typing import Annotated, Any, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, GetPydanticSchema

JsonValue: TypeAlias = str | int | float | bool | list["JsonValue"] | dict[str, "JsonValue"] | None
"""A JSON value as ``json.loads`` gives it."""

AttributeValue: TypeAlias = JsonValue | bytes | list["AttributeValue"] | dict[str, "AttributeValue"]
"""An OTLP AnyValue as decoded: a string, bool, int, float or bytes value, an array value as a list, a
kvlist value as a dict, an empty AnyValue as None. Every JSON value is one."""

# pydantic validates and serializes these as ``Any``: the decoder builds spans from values it decoded
# (no validation), a span reloaded from the store's JSON holds JSON values (attribute values too), and a
# schema of the union would make writing a span's JSON about 1.5x and reading it back 2.5x slower.
_AS_ANY = GetPydanticSchema(lambda _source, handler: handler(Any))
_AS_ANY_VALUES = GetPydanticSchema(lambda _source, handler: handler(dict[str, Any]))
Attributes: TypeAlias = Annotated[dict[str, AttributeValue], _AS_ANY_VALUES]

# OTLP Span.SpanKind and Status.StatusCode numbers.
SPAN_KIND_NAMES = {0: "Unspecified", 1: "Internal", 2: "Server", 3: "Client", 4: "Producer", 5: "Consumer"}
STATUS_UNSET, STATUS_OK, STATUS_ERROR = 0, 1, 2
STATUS_NAMES = {STATUS_UNSET: "Unset", STATUS_OK: "Ok", STATUS_ERROR: "Error"}


class SpanEvent(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    time_unix_nano: int = 0
    attributes: Attributes = Field(default_factory=dict)


class SpanLink(BaseModel):
    model_config = ConfigDict(frozen=True)

    trace_id: str
    span_id: str
    trace_state: str = ""
    attributes: Attributes = Field(default_factory=dict)


class Span(BaseModel):
    """One finished span with its resource and scope folded in."""

    model_config = ConfigDict(frozen=True)

    trace_id: str
    span_id: str
    parent_span_id: str = ""
    trace_state: str = ""
    name: str = ""
    kind: int = 0
    start_time_unix_nano: int = 0
    end_time_unix_nano: int = 0
    attributes: Attributes = Field(default_factory=dict)
    events: list[SpanEvent] = Field(default_factory=list)
    links: list[SpanLink] = Field(default_factory=list)
    status_code: int = STATUS_UNSET
    status_message: str = ""
    resource_attributes: Attributes = Field(default_factory=dict)
    scope_name: str = ""
    scope_version: str = ""

    @property
    def service_name(self) -> str:
        value = self.resource_attributes.get("service.name")
        return value if isinstance(value, str) else ""

    @property
    def duration_ns(self) -> int:
        return max(0, self.end_time_unix_nano - self.start_time_unix_nano)


class LogRecord(BaseModel):
    """One OTLP log record with its resource and scope folded in.

    GenAI instrumentations of semantic conventions v1.28-v1.36 write message content as log records
    (``event.name`` such as ``gen_ai.user.message``, content in ``body``) correlated with their span
    only by trace and span id.
    """

    model_config = ConfigDict(frozen=True)

    trace_id: str = ""
    span_id: str = ""
    time_unix_nano: int = 0
    observed_time_unix_nano: int = 0
    severity_number: int = 0
    severity_text: str = ""
    event_name: str = ""  # LogRecord.event_name, else the event.name attribute
    body: Annotated[AttributeValue, _AS_ANY] = None
    attributes: Attributes = Field(default_factory=dict)
    resource_attributes: Attributes = Field(default_factory=dict)
    scope_name: str = ""
    scope_version: str = ""
    flags: int = 0
    # Kept for the otel_logs columns of the same names (the collector's clickhouseexporter stores them).
    resource_schema_url: str = ""
    scope_schema_url: str = ""
    scope_attributes: Attributes = Field(default_factory=dict)

    @property
    def service_name(self) -> str:
        value = self.resource_attributes.get("service.name")
        return value if isinstance(value, str) else ""


class SpanBatch(BaseModel):
    """What one export request carried (spans or log records), and what was rejected from it.

    ``rejected_items`` counts rejected items of either signal (OTLP partial success reports
    ``rejected_spans`` for traces and ``rejected_log_records`` for logs).
    """

    spans: list[Span] = Field(default_factory=list)
    logs: list[LogRecord] = Field(default_factory=list)
    rejected_items: int = 0
    errors: list[str] = Field(default_factory=list)
    # Set by the span sink when the batch is stored: when it was accepted (the span ledger's Arrived,
    # ns since the epoch; 0 = not stored), and the stored size of each span, then each log record.
    arrived_unix_nano: int = 0
    item_bytes: list[int] = Field(default_factory=list, repr=False)

    @property
    def error_message(self) -> str:
        return "; ".join(self.errors)
