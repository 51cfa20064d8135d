"""A person's evaluation results in OTLP items become labels, written in the items' own commit; machine
evaluations, tracescore's own events and results that say nothing usable do not."""

from __future__ import annotations

from tracescore.ingest.store.annotation_rows import batch_annotations, root_spans, stored_annotations
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.span_sink import insert_logs, insert_spans
from tracescore.schemas import LogRecord, Span, SpanBatch
from tracescore.schemas.spans import AttributeValue, SpanEvent

TRACE, ROOT, CHILD = "a" * 32, "b" * 16, "c" * 16
RESULT: dict[str, AttributeValue] = {
    "gen_ai.evaluation.name": "helpfulness",
    "gen_ai.evaluation.score.value": 0.25,
}
BY_ANN: dict[str, AttributeValue] = {**RESULT, "tracescore.annotator": "ann"}


def event(attributes: dict[str, AttributeValue], **fields: object) -> LogRecord:
    values: dict[str, object] = {
        "trace_id": TRACE,
        "span_id": CHILD,
        "time_unix_nano": 1_790_000_000_000_000_000,
        "event_name": "gen_ai.evaluation.result",
        "attributes": attributes,
    }
    return LogRecord.model_validate(values | fields)


def test_only_a_persons_usable_results_are_labels() -> None:
    records = [
        event({**BY_ANN, "gen_ai.evaluation.explanation": "too long"}),
        event(RESULT),  # a machine evaluation
        event(BY_ANN, scope_name="tracescore.scores"),  # tracescore's own event
        event(BY_ANN, span_id=""),  # judges no span
        event({"gen_ai.evaluation.name": "helpfulness", "tracescore.annotator": "ann"}),  # says nothing
        event({**BY_ANN, "gen_ai.evaluation.score.value": "0.7", "tracescore.annotator": "bob"}),
        event(BY_ANN, event_name="gen_ai.choice"),
    ]

    found = batch_annotations(SpanBatch(logs=records), arrived_ns=1)

    assert found.refused == [
        f"a result of ann in trace {TRACE} judges no span",
        f"a result of ann in trace {TRACE}: value: Value error, give a value, a label, or both",
    ]
    assert [(a.span_id, a.annotator, a.value, a.comment, a.source) for a in found.labels] == [
        (CHILD, "ann", 0.25, "too long", "otlp"),
        (CHILD, "bob", 0.7, "", "otlp"),
    ]
    assert found.labels[0].time.timestamp() == 1_790_000_000


def test_span_attributes_and_span_events_label_their_span() -> None:
    carrying = Span(
        trace_id=TRACE,
        span_id=ROOT,
        end_time_unix_nano=2_000,
        attributes={**BY_ANN, "gen_ai.evaluation.score.label": "meh"},
        events=[
            SpanEvent(
                name="gen_ai.evaluation.result",
                time_unix_nano=3_000,
                attributes={**RESULT, "tracescore.annotator": "cy"},
            ),
            SpanEvent(name="gen_ai.evaluation.result", attributes=RESULT),
        ],
    )

    found = batch_annotations(SpanBatch(spans=[carrying]), arrived_ns=1)

    assert found.refused == []
    assert [(a.span_id, a.annotator, a.label) for a in found.labels] == [
        (ROOT, "ann", "meh"),
        (ROOT, "cy", ""),
    ]


async def test_labels_are_stored_with_their_items_and_the_root_span_is_found(store: Store) -> None:
    root = Span(trace_id=TRACE, span_id=ROOT, start_time_unix_nano=1, end_time_unix_nano=5)
    child = Span(trace_id=TRACE, span_id=CHILD, parent_span_id=ROOT, end_time_unix_nano=4, attributes=BY_ANN)

    await insert_spans(store, [root, child])
    await insert_logs(store, [event({**BY_ANN, "tracescore.annotator": "bob"})])
    await insert_logs(store, [event({**BY_ANN, "tracescore.annotator": "bob"})])  # sent again: still one

    labels = await stored_annotations(store, TRACE)
    assert sorted((a.span_id, a.annotator) for a in labels) == [(CHILD, "ann"), (CHILD, "bob")]
    assert await root_spans(store, [TRACE, "f" * 32]) == {TRACE: ROOT}
