"""Log records joined to their spans: each becomes an event of the span it names.

GenAI instrumentations of semantic conventions v1.28-v1.36 (and OpenLLMetry with legacy attributes
off) write message content as OTLP log records linked to the span only by trace and span id. Once
attached, adapters read them exactly like span events: the event's name is the record's event
name and its attributes are the record's attributes plus the body under ``LOG_BODY_ATTRIBUTE``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from tracescore.schemas import LogRecord, Span, SpanEvent

LOG_BODY_ATTRIBUTE = "log.body"


def log_event(record: LogRecord) -> SpanEvent:
    attributes = dict(record.attributes)
    if record.body is not None:
        attributes[LOG_BODY_ATTRIBUTE] = record.body
    name = record.event_name or str(record.attributes.get("event.name") or "")
    return SpanEvent(
        name=name,
        time_unix_nano=record.time_unix_nano or record.observed_time_unix_nano,
        attributes=attributes,
    )


def attach_logs(spans: Sequence[Span], logs: Sequence[LogRecord]) -> list[Span]:
    """The spans with each correlated log record appended to its span's events, in time order.

    Records naming no span of these spans are left out (they stay in the store).
    """
    if not logs:
        return list(spans)
    by_span: dict[str, list[LogRecord]] = defaultdict(list)
    for record in logs:
        if record.span_id:
            by_span[record.span_id].append(record)
    attached = []
    for span in spans:
        records = by_span.get(span.span_id)
        if records:
            events = [*span.events, *(log_event(r) for r in records)]
            events.sort(key=lambda e: e.time_unix_nano)
            span = span.model_copy(update={"events": events})
        attached.append(span)
    return attached
