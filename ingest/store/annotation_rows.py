"""Annotations (human labels) in the store: the rows of the ``annotations`` table, the labels an OTLP
batch carries, the root span an API label without a span id judges, and the writes.

A batch's labels are written in the same group commit as its spans and log records (the span sink's
``stored_rows``): acknowledged means stored, for labels too. An OTLP item is a person's label when it
carries ``gen_ai.evaluation.name`` and the annotator attribute (``schemas.annotations``):

- a log record whose event is ``gen_ai.evaluation.result``: it judges the span it is parented to;
- a span event ``gen_ai.evaluation.result`` (the older way to emit an event): it judges its span;
- a span whose own attributes carry the result: it judges that span.

Items without the annotator are machine evaluations and stay what they were (spans, log records);
tracescore's own exported events (scope ``tracescore.scores``) are never labels, whatever they carry.
A person's result that says nothing usable (no name, neither a value nor a label, no span) is no
label: it is counted (``tracescore_annotations_refused_total``) and logged, and its item is stored as
usual.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from pydantic import ValidationError

from tracescore.ingest.store.clickhouse import Store
from tracescore.schemas import SpanBatch
from tracescore.schemas.annotations import (
    ANNOTATOR_ATTRIBUTE,
    EVALUATION_EVENT,
    EVALUATION_EXPLANATION,
    EVALUATION_NAME,
    EVALUATION_SCORE_LABEL,
    EVALUATION_SCORE_VALUE,
    Annotation,
)
from tracescore.schemas.durations import unix_nanos
from tracescore.schemas.spans import AttributeValue
from tracescore.scoring.runtime.rule_filters import attribute_number

log = logging.getLogger(__name__)

ANNOTATION_COLUMNS = (
    "AnnotationId", "Timestamp", "TraceId", "SpanId", "Name", "Value", "Label", "Annotator", "Comment",
    "Source", "Stored", "Version",
)  # fmt: skip
# The scope of tracescore's own evaluation events (ingest.score_export): scores, never labels.
OWN_EVENTS_SCOPE = "tracescore.scores"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

_ROOT_SPANS = """
SELECT TraceId, argMin(SpanId, Arrived) AS SpanId
FROM {database}.span_ledger
WHERE TraceId IN {{trace_ids:Array(String)}} AND Kind = 'span' AND EndedRoot = 1
GROUP BY TraceId
"""

_STORED = """
SELECT TraceId, SpanId, Name, Value, Label, Annotator, Comment, Source, Timestamp
FROM {database}.annotations FINAL
WHERE TraceId = {{trace_id:String}} AND ({{name:String}} = '' OR Name = {{name:String}})
ORDER BY Timestamp, SpanId, Name, Annotator
"""


def annotation_row(annotation: Annotation, stored_ns: int) -> list[object]:
    """One ``annotations`` row in ANNOTATION_COLUMNS order. Version is the label's time: a later label
    of the same person replaces an earlier one, whichever arrives first."""
    labelled = unix_nanos(annotation.time)
    return [
        annotation.annotation_id,
        labelled,
        annotation.trace_id,
        annotation.span_id,
        annotation.name,
        annotation.value,
        annotation.label,
        annotation.annotator,
        annotation.comment,
        annotation.source,
        stored_ns,
        labelled,
    ]


@dataclass
class BatchLabels:
    """The labels a batch carries, and why each person's result that is no label was refused."""

    labels: list[Annotation] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)

    def add(self, found: Annotation | str | None) -> None:
        if isinstance(found, Annotation):
            self.labels.append(found)
        elif found is not None:
            self.refused.append(found)


def batch_annotations(batch: SpanBatch, arrived_ns: int) -> BatchLabels:
    """Every person's label an OTLP batch carries (see the module docstring)."""
    found = BatchLabels()
    for span in batch.spans:
        if span.scope_name == OWN_EVENTS_SCOPE:
            continue
        if EVALUATION_NAME in span.attributes:
            found.add(_labelled(span.trace_id, span.span_id, span.attributes, span.end_time_unix_nano))
        for event in span.events:
            if event.name == EVALUATION_EVENT:
                moment = event.time_unix_nano or span.end_time_unix_nano
                found.add(_labelled(span.trace_id, span.span_id, event.attributes, moment))
    for record in batch.logs:
        if record.event_name == EVALUATION_EVENT and record.scope_name != OWN_EVENTS_SCOPE:
            moment = record.time_unix_nano or record.observed_time_unix_nano or arrived_ns
            found.add(_labelled(record.trace_id, record.span_id, record.attributes, moment))
    return found


def _labelled(
    trace_id: str, span_id: str, attributes: Mapping[str, AttributeValue], moment_ns: int
) -> Annotation | str | None:
    """The label these attributes carry if a person gave it; why not, if a person's result is no
    label; None for a machine evaluation."""
    annotator = attributes.get(ANNOTATOR_ATTRIBUTE)
    if not isinstance(annotator, str) or not annotator.strip():
        return None
    if not trace_id or not span_id:
        return f"a result of {annotator} in trace {trace_id or '-'} judges no span"
    try:
        return Annotation(
            trace_id=trace_id,
            span_id=span_id,
            name=_text(attributes.get(EVALUATION_NAME)),
            value=attribute_number(attributes.get(EVALUATION_SCORE_VALUE)),
            label=_text(attributes.get(EVALUATION_SCORE_LABEL)),
            annotator=annotator,
            comment=_text(attributes.get(EVALUATION_EXPLANATION)),
            source="otlp",
            time=_EPOCH + timedelta(microseconds=(moment_ns or time.time_ns()) // 1_000),
        )
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "value"
        return f"a result of {annotator} in trace {trace_id}: {where}: {error['msg']}"


def _text(value: AttributeValue) -> str:
    return value if isinstance(value, str) else ""


async def root_spans(store: Store, trace_ids: Iterable[str]) -> dict[str, str]:
    """Each stored trace's root span: the span without a parent that has ended (the first to arrive
    when a trace has several). Traces the store holds no root of are left out."""
    wanted = sorted(set(trace_ids))
    if not wanted:
        return {}
    sql = _ROOT_SPANS.format(database=store.quoted_database)
    rows = await store.query(sql, {"trace_ids": wanted})
    return {row["TraceId"]: row["SpanId"] for row in rows}


async def stored_annotations(store: Store, trace_id: str, name: str | None = None) -> list[Annotation]:
    """A trace's labels as stored now (FINAL: each person's latest per span and name), oldest first."""
    sql = _STORED.format(database=store.quoted_database)
    rows = await store.query(sql, {"trace_id": trace_id, "name": name or ""})
    return [
        Annotation(
            trace_id=row["TraceId"],
            span_id=row["SpanId"],
            name=row["Name"],
            value=row["Value"],
            label=row["Label"],
            annotator=row["Annotator"],
            comment=row["Comment"],
            source=row["Source"],
            time=row["Timestamp"].replace(tzinfo=UTC)
            if row["Timestamp"].tzinfo is None
            else row["Timestamp"],
        )
        for row in rows
    ]


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


async def insert_annotations(store: Store, annotations: Sequence[Annotation]) -> None:
    """Write labels outside the span sink (the API): one insert, done once this returns."""
    stored = time.time_ns()
    rows = [annotation_row(annotation, stored) for annotation in annotations]
    if rows:
        await store.insert("annotations", rows, ANNOTATION_COLUMNS)
