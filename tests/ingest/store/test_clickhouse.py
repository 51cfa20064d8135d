"""The ClickHouse store against real chDB (through clickhouse-connect) in temp directories.

Expected values are written by hand from the inputs built here, following the OpenTelemetry Collector
clickhouseexporter's row mapping and pdata's ``AsString()`` rendering.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from clickhouse_connect.driver.exceptions import DatabaseError

from ingest.store.clickhouse import Store, StoreError, store_error
from ingest.store.rows import attribute_string
from ingest.store.score_sink import ClickHouseScoreSink
from ingest.store.span_sink import insert_logs, insert_spans
from schemas import Decision, LogRecord, ScoreRecord, Span, SpanEvent, SpanLink
from schemas.score import score_id

REPO_ROOT = Path(__file__).resolve().parents[3]
TRACE = "0af7651916cd43dd8448eb211c80319c"
OTHER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
ROOT_SPAN = "b7ad6b7169203331"
CHILD_SPAN = "00f067aa0ba902b7"
START = 1_700_000_000_123_456_789
CREATED = datetime(2025, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
LATER = datetime(2025, 1, 2, 3, 9, 0, 1, tzinfo=UTC)


def agent_span() -> Span:
    return Span(
        trace_id=TRACE,
        span_id=ROOT_SPAN,
        parent_span_id="",
        trace_state="vendor=x",
        name="invoke_agent weather",
        kind=3,
        start_time_unix_nano=START,
        end_time_unix_nano=START + 2_500_000_001,
        attributes={
            "gen_ai.system": "openai",
            "gen_ai.request.temperature": 0.7,
            "gen_ai.usage.input_tokens": 42,
            "stream": True,
            "ratio": 1.0,
            "tiny": 1.5e-7,
            "huge": 1e21,
            "raw": b"\x00\x01hi",
            "gen_ai.output.messages": [{"role": "assistant", "parts": [{"type": "text", "content": "hi"}]}],
            "tags": ["a", 2, 0.5, False],
            "nested": {"z": "é", "a": None},
        },
        events=[
            SpanEvent(name="gen_ai.choice", time_unix_nano=START + 1_000, attributes={"index": 0}),
            SpanEvent(
                name="exception",
                time_unix_nano=START + 2_000,
                attributes={"exception.type": "TimeoutError", "exception.escaped": False},
            ),
        ],
        links=[
            SpanLink(
                trace_id=OTHER_TRACE,
                span_id="53995c3f42cd8ad8",
                trace_state="k=v",
                attributes={"link.kind": "follows_from"},
            )
        ],
        status_code=2,
        status_message="upstream timeout",
        resource_attributes={"service.name": "weather-svc", "host.port": 8080},
        scope_name="agents.sdk",
        scope_version="1.2.3",
    )


def tool_span() -> Span:
    return Span(
        trace_id=TRACE,
        span_id=CHILD_SPAN,
        parent_span_id=ROOT_SPAN,
        name="execute_tool get_weather",
        kind=1,
        start_time_unix_nano=START + 5_000_000_000,
        end_time_unix_nano=START + 5_000_000_000,
        attributes={"gen_ai.tool.name": "get_weather"},
        status_code=1,
        resource_attributes={"service.name": "weather-svc"},
    )


def relevancy(**changes: Any) -> ScoreRecord:
    values: dict[str, Any] = {
        "trace_id": TRACE, "span_id": ROOT_SPAN, "scorer_id": "answer-relevancy", "score": 0.75,
        "label": "relevant", "reason": "answers the question",
        "step_results": {"statements": ["a", "b"], "n": 2},
        "judge_model": "gpt-4o-mini", "input_tokens": 120, "output_tokens": 30, "cost_usd": 0.0004,
        "latency_ms": 812.5, "sample_rate": 0.5, "scorer_version": "1", "source": "live",
        "agent_name": "weather_agent", "service_name": "weather-svc", "created_at": CREATED,
    }  # fmt: skip
    values.update(changes)
    return ScoreRecord(**values)


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


async def test_scores_are_idempotent_and_the_latest_write_wins(store: Store) -> None:
    await ClickHouseScoreSink(store).write_scores([relevancy(), relevancy()], [])
    expected = {
        "trace_id": TRACE, "span_id": ROOT_SPAN, "scorer_id": "answer-relevancy", "scorer_version": "1",
        "score": 0.75, "label": "relevant", "reason": "answers the question",
        "step_results": {"statements": ["a", "b"], "n": 2}, "judge_model": "gpt-4o-mini",
        "input_tokens": 120, "output_tokens": 30, "cost_usd": 0.0004, "latency_ms": 812.5,
        "sample_rate": 0.5, "source": "live", "agent_name": "weather_agent", "service_name": "weather-svc",
        "created_at": "2025-01-02T03:04:05.678901+00:00",
        "score_id": score_id(TRACE, ROOT_SPAN, "answer-relevancy"),
    }  # fmt: skip
    assert await ClickHouseScoreSink(store).get_scores(TRACE) == [expected]

    # A replay re-scores the run later with a different verdict: one row, the new values.
    await ClickHouseScoreSink(store).write_scores(
        [relevancy(score=0.25, reason="replayed", label="partial", created_at=LATER)], []
    )
    replayed = {**expected, "score": 0.25, "reason": "replayed", "label": "partial",
                "created_at": "2025-01-02T03:09:00.000001+00:00"}  # fmt: skip
    assert await ClickHouseScoreSink(store).get_scores(TRACE) == [replayed]

    # A late, older write does not roll the score back.
    await ClickHouseScoreSink(store).write_scores([relevancy(reason="stale")], [])
    assert await ClickHouseScoreSink(store).get_scores(TRACE) == [replayed]

    # Same created_at (same Version): the last insert wins.
    await ClickHouseScoreSink(store).write_scores(
        [relevancy(score=0.25, reason="again", label="partial", created_at=LATER)], []
    )
    assert await ClickHouseScoreSink(store).get_scores(TRACE) == [{**replayed, "reason": "again"}]

    # Other spans, scorers and traces are separate rows, ordered by span then scorer.
    await ClickHouseScoreSink(store).write_scores(
        [
            relevancy(scorer_id="toxicity", score=0.0),
            relevancy(span_id=CHILD_SPAN, scorer_id="tool-accuracy"),
            relevancy(trace_id=OTHER_TRACE),
        ],
        [],
    )
    keys = [(row["span_id"], row["scorer_id"]) for row in await ClickHouseScoreSink(store).get_scores(TRACE)]
    assert keys == [(CHILD_SPAN, "tool-accuracy"), (ROOT_SPAN, "answer-relevancy"), (ROOT_SPAN, "toxicity")]
    assert await ClickHouseScoreSink(store).get_scores("ffffffffffffffffffffffffffffffff") == []


async def test_decisions_keep_one_current_row_per_run_and_scorer(store: Store) -> None:
    failed = Decision(
        trace_id=TRACE,
        span_id=ROOT_SPAN,
        scorer_id="answer-relevancy",
        decision="failed",
        detail="judge timed out",
        sample_rate=0.5,
        created_at=CREATED,
    )
    sampled_out = Decision(
        trace_id=TRACE,
        span_id=ROOT_SPAN,
        scorer_id="toxicity",
        decision="sampled_out",
        sample_rate=0.1,
        source="backfill",
        created_at=CREATED,
    )
    await ClickHouseScoreSink(store).write_scores([], [failed, sampled_out, failed])
    scored = failed.model_copy(update={"decision": "scored", "detail": "", "created_at": LATER})
    await ClickHouseScoreSink(store).write_scores([relevancy()], [scored])

    assert await ClickHouseScoreSink(store).get_decisions(TRACE) == [
        {"trace_id": TRACE, "span_id": ROOT_SPAN, "scorer_id": "answer-relevancy", "decision": "scored",
         "detail": "", "sample_rate": 0.5, "source": "live",
         "created_at": "2025-01-02T03:09:00.000001+00:00"},
        {"trace_id": TRACE, "span_id": ROOT_SPAN, "scorer_id": "toxicity", "decision": "sampled_out",
         "detail": "", "sample_rate": 0.1, "source": "backfill",
         "created_at": "2025-01-02T03:04:05.678901+00:00"},
    ]  # fmt: skip
    assert len(await ClickHouseScoreSink(store).get_scores(TRACE)) == 1


async def test_view_shows_scores_as_genai_evaluation_span_attributes(store: Store) -> None:
    await insert_spans(store, [agent_span(), tool_span()])
    await ClickHouseScoreSink(store).write_scores(
        [relevancy(), relevancy(scorer_id="toxicity", score=1.0, label="", reason="no toxic content")], []
    )
    await ClickHouseScoreSink(store).write_scores([relevancy(reason="replayed", created_at=LATER)], [])

    rows = await store.query(
        "SELECT SpanId, SpanAttributes, SpanKind, Duration, Events.Name AS EventNames "
        "FROM otel_traces_scored WHERE TraceId = {t:String} ORDER BY SpanId",
        {"t": TRACE},
    )
    assert [row["SpanId"] for row in rows] == [CHILD_SPAN, ROOT_SPAN]
    assert rows[0]["SpanAttributes"] == {"gen_ai.tool.name": "get_weather"}
    scored = rows[1]["SpanAttributes"]
    assert scored["gen_ai.evaluation.answer-relevancy.score"] == "0.75"
    assert scored["gen_ai.evaluation.answer-relevancy.label"] == "relevant"
    assert scored["gen_ai.evaluation.answer-relevancy.explanation"] == "replayed"
    assert scored["gen_ai.evaluation.toxicity.score"] == "1"
    assert scored["gen_ai.evaluation.toxicity.explanation"] == "no toxic content"
    assert scored["gen_ai.system"] == "openai"  # the span's own attributes stay
    assert len(scored) == 11 + 6
    assert (rows[1]["SpanKind"], rows[1]["Duration"], rows[1]["EventNames"]) == (
        "Client", 2_500_000_001, ["gen_ai.choice", "exception"])  # fmt: skip


async def test_data_survives_a_restart_on_the_same_directory(tmp_path: Path) -> None:
    first = Store(str(tmp_path / "data"))
    await first.start()
    try:
        await insert_spans(first, [agent_span()])
        await ClickHouseScoreSink(first).write_scores([relevancy()], [])
    finally:
        await first.shutdown()

    reopened = Store(f"chdb://{tmp_path / 'data'}")
    await reopened.start()  # the DDL runs again: IF NOT EXISTS everywhere
    try:
        assert [row["reason"] for row in await ClickHouseScoreSink(reopened).get_scores(TRACE)] == [
            "answers the question"
        ]
        assert await reopened.query("SELECT SpanId FROM otel_traces") == [{"SpanId": ROOT_SPAN}]
    finally:
        await reopened.shutdown()


async def test_second_chdb_path_in_one_process_is_a_clear_error(store: Store, tmp_path: Path) -> None:
    other = Store(str(tmp_path / "other"))
    with pytest.raises(StoreError) as caught:
        await other.start()
    message = str(caught.value)
    assert "in use" in message and "--store" in message and str(tmp_path / "other") in message
    await other.shutdown()
    assert await store.query("SELECT 1 AS one") == [{"one": 1}]  # the open store is unharmed


async def test_directory_held_by_another_process_is_a_clear_error(store: Store, tmp_path: Path) -> None:
    held = str(tmp_path / "chdb")  # the fixture's directory, open in this process
    program = (
        "import asyncio, sys\n"
        "from ingest.store.clickhouse import Store, StoreError\n"
        "async def main():\n"
        f"    s = Store({held!r})\n"
        "    try:\n"
        "        await s.start()\n"
        "    except StoreError as exc:\n"
        "        print(exc)\n"
        "        sys.exit(3)\n"
        "    await s.shutdown()\n"
        "asyncio.run(main())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", program, cwd=REPO_ROOT, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 3
    assert "in use" in out.decode() and "stop the other tracescore" in out.decode().lower()


async def test_query_binds_parameters(store: Store) -> None:
    await insert_spans(store, [agent_span(), tool_span()])
    assert await store.query("SELECT {a:UInt32} + 1 AS x, {s:String} AS s", {"a": 41, "s": "it's"}) == [
        {"x": 42, "s": "it's"}
    ]
    rows = await store.query(
        "SELECT SpanName FROM otel_traces WHERE SpanKind = {kind:String} AND Duration > {d:UInt64}",
        {"kind": "Client", "d": 1_000},
    )
    assert rows == [{"SpanName": "invoke_agent weather"}]
    with pytest.raises(StoreError, match="query on chdb://") as missing_table:
        await store.query("SELECT * FROM no_such_table")
    assert not missing_table.value.retriable  # the same statement fails the same way again
    with pytest.raises(StoreError, match="UNKNOWN_TABLE") as refused:  # an insert refused: permanently
        await store.insert("no_such_table", [[1]], ["x"])
    assert not refused.value.retriable


def test_server_errors_are_classified_by_their_code() -> None:
    # clickhouse-connect raises DatabaseError with the server's "Code: N." for statement failures.
    def classified(message: str) -> bool:
        return store_error("insert into scores", DatabaseError(message)).retriable

    assert classified(
        "HTTPDriver for http://ch:8123 received ClickHouse error code 252\n Code: 252. "
        "DB::Exception: Too many parts (300). Merges are processing significantly slower"
    )
    assert classified("Code: 241. DB::Exception: Memory limit (total) exceeded: would use 9.31 GiB")
    assert not classified("Code: 60. DB::Exception: Table default.scores does not exist. (UNKNOWN_TABLE)")
    assert not classified("Code: 516. DB::Exception: default: Authentication failed")
    assert not classified("something without a code")


async def test_lifecycle_is_safe_in_any_order(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "life"))
    await store.shutdown()  # before start
    await store.shutdown()
    with pytest.raises(StoreError, match="shut down"):
        await insert_spans(store, [agent_span()])
    with pytest.raises(StoreError, match="shut down"):
        await store.start()

    store = Store(str(tmp_path / "life"))
    await store.start()
    await store.start()  # already started: no second client
    await insert_spans(store, [])
    await ClickHouseScoreSink(store).write_scores([], [])
    await store.shutdown()
    await store.shutdown()
    with pytest.raises(StoreError):
        await ClickHouseScoreSink(store).get_scores(TRACE)


async def test_unreachable_server_is_a_retriable_store_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    store = Store(f"http://alice:s3cret@127.0.0.1:{port}")
    with pytest.raises(StoreError) as caught:
        await store.start()
    assert caught.value.retriable
    assert f"http://127.0.0.1:{port}" in str(caught.value) and "s3cret" not in str(caught.value)
    await store.shutdown()


def test_description_names_the_store_without_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert Store("rel/data").description == f"chdb://{tmp_path}/rel/data"
    assert Store("chdb:///var/lib/ts").description == "chdb:///var/lib/ts"
    assert Store("http://alice:s3cret@clickhouse:8123/?compress=1").description == "http://clickhouse:8123"
    assert Store("https://ch.internal").description == "https://ch.internal"
    with pytest.raises(StoreError, match="absolute"):
        Store("chdb://relative")


@pytest.mark.parametrize(
    ("value", "rendered"),
    [
        ("plain \u2028 text", "plain \u2028 text"),
        (True, "true"),
        (-7, "-7"),
        (1.0, "1"),
        (0.1, "0.1"),
        (-0.0, "-0"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (1e-6, "0.000001"),
        (2.5e-10, "2.5e-10"),
        (float("nan"), "json: unsupported value: NaN"),
        (float("-inf"), "json: unsupported value: -Inf"),
        (b"", ""),
        ({"b": [1.0, None], "a": "x"}, '{"a":"x","b":[1,null]}'),
        (["\u2028", b"\xff"], '["\\u2028","/w=="]'),
        ({"x": float("nan")}, ""),
        (None, ""),
    ],
)
def test_attribute_values_render_as_pdata_as_string(value: object, rendered: str) -> None:
    assert attribute_string(value) == rendered


async def test_log_records_round_trip_with_the_collector_mapping(store: Store) -> None:
    choice = LogRecord(
        trace_id=TRACE,
        span_id=ROOT_SPAN,
        time_unix_nano=START,
        observed_time_unix_nano=START + 7,
        severity_number=9,
        severity_text="INFO",
        event_name="gen_ai.choice",
        body={
            "message": {"role": "assistant", "content": "rainy, 57°F"},
            "index": 0,
            "finish_reason": "stop",
        },
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
