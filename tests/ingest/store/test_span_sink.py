"""Spans and log records written to ``otel_traces`` and ``otel_logs`` in real chDB, row by row, and the
group commit that writes them.

Expected values are written by hand from the inputs built in ``tests.ingest.store.samples``, following
the OpenTelemetry Collector clickhouseexporter's row mapping and pdata's ``AsString()`` rendering.
"""

from __future__ import annotations

import asyncio

import pytest
from pydantic import ValidationError

from tests.ingest.store.samples import OTHER_TRACE, ROOT_SPAN, START, TRACE, agent_span, tool_span
from tests.support.otlp import Recorder
from tracescore.ingest.observability.service_metrics import Metrics
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.ledger import KIND_SPAN, LEDGER_COLUMNS, Ledger
from tracescore.ingest.store.span_sink import SpanSink, insert_logs, insert_spans
from tracescore.schemas import LogRecord, Span, SpanBatch
from tracescore.schemas.errors import StoreError
from tracescore.schemas.spans import JsonValue


async def test_spans_round_trip_with_the_collector_mapping(store: Store) -> None:
    await insert_spans(store, [agent_span(), tool_span()])

    rows = await store.query(
        "SELECT toUnixTimestamp64Nano(Timestamp) AS StartNs, TraceId, SpanId, ParentSpanId, TraceState, "
        "SpanName, SpanKind, ServiceName, ResourceAttributes, ScopeName, ScopeVersion, SpanAttributes, "
        "Duration, StatusCode, StatusMessage, arrayMap(t -> toUnixTimestamp64Nano(t), Events.Timestamp) "
        "AS EventNs, Events.Name AS EventNames, Events.Attributes AS EventAttributes, Links.TraceId AS "
        "LinkTraces, Links.SpanId AS LinkSpans, Links.TraceState AS LinkStates, Links.Attributes AS "
        "LinkAttributes FROM otel_traces ORDER BY Timestamp"
    )

    assert rows[0] == {
        "StartNs": 1_700_000_000_123_456_789,
        "TraceId": TRACE,
        "SpanId": ROOT_SPAN,
        "ParentSpanId": "",
        "TraceState": "vendor=x",
        "SpanName": "invoke_agent weather",
        "SpanKind": "Client",
        "ServiceName": "weather-svc",
        "ResourceAttributes": {"service.name": "weather-svc", "host.port": "8080"},
        "ScopeName": "agents.sdk",
        "ScopeVersion": "1.2.3",
        "SpanAttributes": {
            "gen_ai.system": "openai",
            "gen_ai.request.temperature": "0.7",
            "gen_ai.usage.input_tokens": "42",
            "stream": "true",
            "ratio": "1",
            "tiny": "1.5e-7",
            "huge": "1e+21",
            "raw": "AAFoaQ==",
            "gen_ai.output.messages": '[{"parts":[{"content":"hi","type":"text"}],"role":"assistant"}]',
            "tags": '["a",2,0.5,false]',
            "nested": '{"a":null,"z":"é"}',
        },
        "Duration": 2_500_000_001,
        "StatusCode": "Error",
        "StatusMessage": "upstream timeout",
        "EventNs": [1_700_000_000_123_457_789, 1_700_000_000_123_458_789],
        "EventNames": ["gen_ai.choice", "exception"],
        "EventAttributes": [{"index": "0"}, {"exception.type": "TimeoutError", "exception.escaped": "false"}],
        "LinkTraces": [OTHER_TRACE],
        "LinkSpans": ["53995c3f42cd8ad8"],
        "LinkStates": ["k=v"],
        "LinkAttributes": [{"link.kind": "follows_from"}],
    }
    tool = rows[1]
    assert (tool["SpanKind"], tool["StatusCode"], tool["Duration"]) == ("Internal", "Ok", 0)
    assert (tool["ParentSpanId"], tool["EventNames"], tool["LinkSpans"]) == (ROOT_SPAN, [], [])

    # The exporter's trace-id lookup, filled by its materialized view, second resolution.
    lookup = await store.query(
        "SELECT TraceId, toUnixTimestamp(min(Start)) AS s, toUnixTimestamp(max(End)) AS e "
        "FROM otel_traces_trace_id_ts GROUP BY TraceId"
    )
    assert lookup == [{"TraceId": TRACE, "s": 1_700_000_000, "e": 1_700_000_005}]


async def test_log_records_round_trip_with_the_collector_mapping(store: Store) -> None:
    choice_body: JsonValue = {
        "message": {"role": "assistant", "content": "rainy, 57°F"},
        "index": 0,
        "finish_reason": "stop",
    }
    choice = LogRecord(
        trace_id=TRACE,
        span_id=ROOT_SPAN,
        time_unix_nano=START,
        observed_time_unix_nano=START + 7,
        severity_number=9,
        severity_text="INFO",
        event_name="gen_ai.choice",
        body=choice_body,
        attributes={"gen_ai.system": "openai", "event.name": "gen_ai.choice", "n": 2},
        resource_attributes={"service.name": "weather-svc", "host.port": 8080},
        scope_name="openai-v2",
        scope_version="2.1b0",
        flags=257,  # the low byte is the trace flags
        resource_schema_url="https://opentelemetry.io/schemas/1.28.0",
        scope_schema_url="https://opentelemetry.io/schemas/1.30.0",
        scope_attributes={"kind": "genai"},
    )
    # No timestamp of its own, no trace, a plain string body.
    startup = LogRecord(observed_time_unix_nano=START + 5_000_000_000, body="service started")

    await insert_logs(store, [choice, startup])

    rows = await store.query(
        "SELECT toUnixTimestamp64Nano(Timestamp) AS Ns, toUnixTimestamp(TimestampTime) AS Seconds, TraceId, "
        "SpanId, TraceFlags, SeverityText, SeverityNumber, ServiceName, Body, ResourceSchemaUrl, "
        "ResourceAttributes, ScopeSchemaUrl, ScopeName, ScopeVersion, ScopeAttributes, LogAttributes, "
        "EventName FROM otel_logs ORDER BY Timestamp"
    )
    assert rows[0] == {
        "Ns": 1_700_000_000_123_456_789,
        "Seconds": 1_700_000_000,
        "TraceId": TRACE,
        "SpanId": ROOT_SPAN,
        "TraceFlags": 1,
        "SeverityText": "INFO",
        "SeverityNumber": 9,
        "ServiceName": "weather-svc",
        # pdata's Body().AsString(): a map as compact JSON with sorted keys.
        "Body": '{"finish_reason":"stop","index":0,"message":{"content":"rainy, 57°F","role":"assistant"}}',
        "ResourceSchemaUrl": "https://opentelemetry.io/schemas/1.28.0",
        "ResourceAttributes": {"service.name": "weather-svc", "host.port": "8080"},
        "ScopeSchemaUrl": "https://opentelemetry.io/schemas/1.30.0",
        "ScopeName": "openai-v2",
        "ScopeVersion": "2.1b0",
        "ScopeAttributes": {"kind": "genai"},
        "LogAttributes": {"gen_ai.system": "openai", "event.name": "gen_ai.choice", "n": "2"},
        "EventName": "gen_ai.choice",
    }
    assert rows[1] == {
        "Ns": 1_700_000_005_123_456_789,
        "Seconds": 1_700_000_005,
        "TraceId": "",
        "SpanId": "",
        "TraceFlags": 0,
        "SeverityText": "",
        "SeverityNumber": 0,
        "ServiceName": "",
        "Body": "service started",
        "ResourceSchemaUrl": "",
        "ResourceAttributes": {},
        "ScopeSchemaUrl": "",
        "ScopeName": "",
        "ScopeVersion": "",
        "ScopeAttributes": {},
        "LogAttributes": {},
        "EventName": "",
    }
    await insert_logs(store, [])  # nothing to write is not an error
    assert (await store.query("SELECT count() AS n FROM otel_logs")) == [{"n": 2}]


async def test_clients_acknowledged_together_are_committed_together(store: Store) -> None:
    # Senders that send again as soon as they are answered come back a moment apart: the commit waits
    # for them instead of taking the first alone and the others in the next (two commits per round).
    metrics = Metrics()
    sink = SpanSink(store, Recorder(), metrics)
    senders, rounds = 8, 4

    async def sender(index: int) -> None:
        # The answer reaches the senders one after another.
        await send_rounds(sink, index, rounds, pause=index * 0.0002)

    await asyncio.gather(*(sender(index) for index in range(senders)))
    await sink.shutdown()
    commits, stored = commits_and_spans_stored(metrics)
    assert commits <= rounds + 1  # not 1 + 2 * (rounds - 1)
    assert stored == senders * rounds


async def test_senders_that_came_during_a_commit_wait_for_those_it_acknowledged(store: Store) -> None:
    # Half the senders arrive while the first commit runs. The next commit waits for the half it
    # acknowledged to send again, rather than taking the late half alone: the two halves would
    # then take turns for good, one commit each per round.
    metrics = Metrics()
    sink = SpanSink(store, Recorder(), metrics)
    senders, rounds = 8, 4

    early = [asyncio.create_task(send_rounds(sink, index, rounds)) for index in range(senders // 2)]
    await asyncio.sleep(0.001)  # the first commit, of the early half, is under way
    await asyncio.gather(
        *early, *(send_rounds(sink, index, rounds) for index in range(senders // 2, senders))
    )
    await sink.shutdown()
    commits, stored = commits_and_spans_stored(metrics)
    assert commits <= rounds + 2  # not 2 * rounds
    assert stored == senders * rounds


async def send_rounds(sink: SpanSink, sender: int, rounds: int, pause: float | None = None) -> None:
    """A client that sends one span as soon as its last one is acknowledged (after ``pause``, when
    given: ``asyncio.sleep(0)`` still lets the others run first)."""
    for round in range(rounds):
        span = agent_span().model_copy(update={"span_id": f"{sender:08x}{round:08x}"})
        await sink.consume_spans(SpanBatch(spans=[span]))
        if pause is not None:
            await asyncio.sleep(pause)


def commits_and_spans_stored(metrics: Metrics) -> tuple[float, float]:
    commits = metrics.registry.get_sample_value("tracescore_store_commits_total")
    stored = metrics.registry.get_sample_value("tracescore_spans_stored_total")
    assert commits is not None and stored is not None
    return commits, stored


async def test_a_commit_cut_after_its_first_insert_leaves_no_span_to_score_that_otel_traces_lacks(
    store: Store,
) -> None:
    # otel_traces refuses the batch (as if the process died before its insert): span_ledger, what the
    # scorers read, is written last, so it holds nothing of it either; the client is not acknowledged.
    client = store._require_client()
    await store._on_worker(
        lambda: client.command("ALTER TABLE otel_traces ADD CONSTRAINT cut CHECK SpanName != 'cut here'")
    )
    sink = SpanSink(store, Recorder(), Metrics())
    cut = agent_span().model_copy(update={"name": "cut here"})
    with pytest.raises(StoreError, match="VIOLATED_CONSTRAINT"):
        await sink.consume_spans(SpanBatch(spans=[cut, tool_span()]))
    await sink.consume_spans(SpanBatch(spans=[agent_span()]))  # the next commit is whole
    await sink.shutdown()
    assert await store.query("SELECT SpanId FROM span_ledger") == [{"SpanId": ROOT_SPAN}]
    assert await store.query("SELECT SpanName FROM otel_traces") == [{"SpanName": agent_span().name}]


async def test_the_ledger_gives_back_each_item_whole_and_refuses_a_row_that_is_not_one(store: Store) -> None:
    # What recovery reads back: every item as the sink stored it (an OTLP bytes value is stored as JSON
    # text), text outside Latin-1 included.
    span = agent_span()
    spans = [
        span.model_copy(update={"attributes": {**span.attributes, "note": "Zürich → 東京 🌧"}}),
        tool_span(),
    ]
    as_stored = [Span.model_validate_json(item.model_dump_json()) for item in spans]
    log = LogRecord(trace_id=TRACE, span_id=ROOT_SPAN, time_unix_nano=START, body="météo ☔")
    sink = SpanSink(store, Recorder(), Metrics())
    await sink.consume_spans(SpanBatch(spans=spans, logs=[log]))
    await sink.shutdown()
    ledger = Ledger(store)
    stored = await ledger.load([TRACE, OTHER_TRACE])
    assert list(stored) == [TRACE]
    assert {item.span_id: item for _, item in stored[TRACE].spans} == {
        item.span_id: item for item in as_stored
    }
    assert [item for _, item in stored[TRACE].logs] == [log]
    # A row the service did not write (not a span's JSON) is refused, naming what is wrong; the other
    # traces still read whole.
    foreign = [OTHER_TRACE, START, KIND_SPAN, ROOT_SPAN, 0, b'{"span_id": "b7ad6b7169203331"}']
    await store.insert("span_ledger", [foreign], LEDGER_COLUMNS)
    with pytest.raises(ValidationError, match="trace_id"):
        await ledger.load([OTHER_TRACE, TRACE])
    assert await ledger.load([TRACE]) == stored
