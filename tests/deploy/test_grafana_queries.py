"""Every ClickHouse query of the dashboards and alert rules runs on the real schema after a demo run,
expanded as Grafana and the ClickHouse plugin expand it, and returns rows; some panels are checked
for what they show against the tables themselves."""

from __future__ import annotations

import functools
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.conftest import SESSION_ID, SESSION_RUN_SQL, SESSION_SCORERS
from tests.support.grafana import Selection, TimeRange, expand_macros, render
from tests.support.grafana_files import (
    DATA_SOURCE_DATABASE,
    AlertQuery,
    alert_queries,
    dashboard_queries,
    is_clickhouse,
    load_dashboards,
    load_yaml,
    repeat_scopes,
    resolve_variables,
    walk_panels,
)
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.score_sink import ClickHouseScoreSink
from tracescore.schemas import Decision

DASHBOARDS = {d["uid"]: d for d in load_dashboards().values()}
# Grafana's trace view reads these fields of a trace frame (Explore's trace integration: data frame
# structure); the others it shows when present.
TRACE_VIEW_FIELDS = {
    "traceID", "spanID", "parentSpanID", "serviceName", "operationName", "startTime", "duration",
    "tags", "serviceTags", "logs", "references", "kind", "statusCode", "statusMessage",
}  # fmt: skip
# The columns the plugin's OpenTelemetry mode maps (src/otel.ts, traceColumnMap and logColumnMap of
# OTel 1.2.9), and the Events./Links. nested columns of its trace query.
OTEL_TRACE_COLUMNS = {
    "Timestamp", "TraceId", "SpanId", "ParentSpanId", "ServiceName", "SpanName", "Duration", "SpanAttributes",
    "ResourceAttributes", "StatusCode", "SpanKind", "StatusMessage", "TraceState", "Events.Timestamp",
    "Events.Name", "Events.Attributes", "Links.TraceId", "Links.SpanId", "Links.Attributes",
}  # fmt: skip
OTEL_LOG_COLUMNS = {
    "TimestampTime", "Timestamp", "Body", "SeverityText", "TraceId", "ResourceAttributes", "ScopeAttributes",
    "LogAttributes",
}  # fmt: skip


@pytest.fixture
async def demo(demo_store: Path) -> AsyncIterator[Store]:
    store = Store(str(demo_store), DATA_SOURCE_DATABASE)  # as the data source's defaultDatabase gives it
    await store.start()
    try:
        yield store
    finally:
        await store.shutdown()


@functools.cache
def dashboard_range() -> TimeRange:
    """The last 6 hours (the demo's runs and every drift pass), a little of the future too: the demo
    stamps its runs a few seconds apart from when it started."""
    now = datetime.now(UTC)
    return TimeRange(now - timedelta(hours=6), now + timedelta(minutes=5), timedelta(seconds=60))


async def scored_trace(store: Store) -> str:
    # (A trace the demo sent: the drift history of conftest has scores without spans.)
    rows = await store.query(
        "SELECT TraceId FROM scores FINAL WHERE TraceId IN (SELECT TraceId FROM otel_traces) "
        "ORDER BY TraceId LIMIT 1"
    )
    return str(rows[0]["TraceId"])


async def first_series(store: Store) -> tuple[str, str, str]:
    """The series conftest's drift pass made drift: the first of the demo's (scorer, service, agent)."""
    rows = await store.query(
        "SELECT ScorerId, ServiceName, AgentName FROM scores FINAL "
        "ORDER BY ScorerId, ServiceName, AgentName LIMIT 1"
    )
    return rows[0]["ScorerId"], rows[0]["ServiceName"], rows[0]["AgentName"]


async def selections(store: Store, dashboard: dict[str, Any], pick_all: bool) -> dict[str, Selection]:
    # A link from another dashboard picks a trace: the trace explorer shows that one, not the newest.
    overrides = {} if pick_all else {"trace_id": Selection.one(await scored_trace(store))}
    return await resolve_variables(dashboard, store.query, dashboard_range(), pick_all, overrides)


def _link_fields(panel: dict[str, Any]) -> set[str]:
    text = str(panel.get("fieldConfig", {}))
    return set(re.findall(r"\$\{__data\.fields\.(\w+)\}", text))


async def test_the_queries_have_only_the_data_sources_database_to_read(demo: Store) -> None:
    # Every query below finds its rows although default holds nothing: none names a database.
    assert demo.database == DATA_SOURCE_DATABASE != "default"
    assert await demo.query("SELECT name FROM system.tables WHERE database = 'default'") == []


async def test_the_otel_tables_the_plugin_reads_have_its_columns(demo: Store) -> None:
    rows = await demo.query(
        "SELECT table, name FROM system.columns WHERE database = currentDatabase() "
        "AND table IN ('otel_traces_scored', 'otel_logs')"
    )
    columns = {(r["table"], r["name"]) for r in rows}
    assert {("otel_traces_scored", c) for c in OTEL_TRACE_COLUMNS} <= columns
    assert {("otel_logs", c) for c in OTEL_LOG_COLUMNS} <= columns


@pytest.mark.parametrize("pick_all", [True, False], ids=["all", "first-of-each"])
@pytest.mark.parametrize("uid", sorted(DASHBOARDS))
async def test_every_query_of_the_dashboard_returns_rows(demo: Store, uid: str, pick_all: bool) -> None:
    dashboard = DASHBOARDS[uid]
    variables = await selections(demo, dashboard, pick_all)
    failures: list[str] = []
    ran = 0
    for query in filter(is_clickhouse, dashboard_queries(dashboard)):
        for scope in repeat_scopes(query, variables):
            sql = render(query.sql, variables, dashboard_range(), scope)
            assert "$" not in sql, f"{query.where}: not expanded: {sql}"
            try:
                rows = await demo.query(sql)
            except Exception as exc:
                failures.append(f"{query.where}: {exc}\n{sql}")
                continue
            ran += 1
            if not rows:
                failures.append(f"{query.where}: no rows\n{sql}")
                continue
            columns = set(rows[0])
            missing_link_fields = _link_fields(query.panel) - columns
            if missing_link_fields:
                failures.append(f"{query.where}: data links name missing fields {missing_link_fields}")
            if query.target.get("queryType") == "traces" and not columns >= TRACE_VIEW_FIELDS:
                failures.append(f"{query.where}: trace view fields missing: {TRACE_VIEW_FIELDS - columns}")
    assert not failures, "\n\n".join(failures)
    assert ran > 0


async def _panel(demo: Store, uid: str, title: str, pick_all: bool = True) -> list[dict[str, Any]]:
    dashboard = DASHBOARDS[uid]
    variables = await selections(demo, dashboard, pick_all)
    (panel,) = [p for p in walk_panels(dashboard["panels"]) if p["title"] == title]
    (target,) = panel["targets"]
    return await demo.query(render(target["rawSql"], variables, dashboard_range()))


async def _value(demo: Store, uid: str, title: str) -> Any:
    (row,) = await _panel(demo, uid, title)
    (value,) = row.values()
    return value


async def _one(demo: Store, sql: str) -> Any:
    (row,) = await demo.query(sql)
    (value,) = row.values()
    return value


async def test_score_and_judge_panels_count_what_the_tables_hold(demo: Store) -> None:
    # The demo's judge failed one run's toxicity check on purpose (conftest.FAILING_RUN).
    failed = await _one(demo, "SELECT count() FROM score_decisions FINAL WHERE Decision = 'failed'")
    assert failed == 1
    assert await _value(demo, "tracescore-scores", "Failed decisions") == failed
    assert await _value(demo, "tracescore-judge", "Failed decisions") == failed
    # (In the dashboard's range: the drift history of conftest reaches back a week.)
    shown = dashboard_range()
    in_range = (
        f"SpanStart >= toDateTime({int(shown.start.timestamp())}) "
        f"AND SpanStart <= toDateTime({int(shown.end.timestamp())})"
    )
    assert await _value(demo, "tracescore-scores", "Scores") == await _one(
        demo, f"SELECT count() FROM scores FINAL WHERE {in_range}"
    )
    judge_cost = await _one(demo, "SELECT sum(CostUsd) FROM scores FINAL WHERE JudgeModel != ''")
    assert judge_cost > 0
    assert await _value(demo, "tracescore-judge", "Judge cost") == pytest.approx(judge_cost)
    worst = await _panel(demo, "tracescore-scores", "Worst runs")
    lowest = await _one(
        demo,
        "SELECT min(Score) FROM scores FINAL WHERE ScorerId NOT IN ('bias', 'hallucination', 'toxicity')",
    )
    assert worst[0]["Score"] == lowest


async def test_drift_panels_show_the_newest_pass_of_each_series(demo: Store) -> None:
    # The drift passes of conftest: of the demo's series, the first drifted in the newest pass and the
    # others had too few scores to test; one of the two webhooks took the alert.
    # Every series with a score or a decision (a scorer whose every run failed has only decisions).
    series = await _one(
        demo,
        "SELECT count() FROM (SELECT ScorerId, ServiceName, AgentName FROM scores_by_scorer "
        "UNION DISTINCT SELECT ScorerId, ServiceName, AgentName FROM decisions_by_scorer)",
    )
    assert await _value(demo, "tracescore-drift", "Series watched") == series
    assert await _value(demo, "tracescore-drift", "Series drifting now") == 1
    assert await _value(demo, "tracescore-drift", "Too few scores") == series - 1
    # The webhook that takes nothing refused the alert and the version change.
    assert await _value(demo, "tracescore-drift", "Notifications not delivered") == 2
    state = await _panel(demo, "tracescore-drift", "Current state per series")
    assert len(state) == series
    newest = state[0]
    assert (newest["Scorer"], newest["Service"], newest["Agent"]) == await first_series(demo)
    assert (newest["State"], newest["Version"]) == ("drifted", "1")  # the history's version alone
    [change] = await _panel(demo, "tracescore-drift", "Scorer version changes")
    assert (change["Scorer"], change["Service"], change["Agent"]) == await first_series(demo)
    assert change["To version"] == "1" and re.fullmatch(r"1\+[0-9a-f]{8}", change["From version"])


async def test_the_trace_view_shows_every_span_of_the_picked_trace_with_its_scores(demo: Store) -> None:
    trace_id = await scored_trace(demo)
    spans = await _panel(demo, "tracescore-traces", "Trace", pick_all=False)
    assert {s["traceID"] for s in spans} == {trace_id}
    assert len(spans) == await _one(demo, f"SELECT count() FROM otel_traces WHERE TraceId = '{trace_id}'")
    scores = await demo.query(
        f"SELECT SpanId, ScorerId, Score FROM scores FINAL WHERE TraceId = '{trace_id}'"
    )
    assert scores
    tags = {s["spanID"]: {t["key"]: t["value"] for t in s["tags"]} for s in spans}
    for score in scores:
        value = tags[score["SpanId"]][f"gen_ai.evaluation.{score['ScorerId']}.score"]
        assert float(value) == pytest.approx(score["Score"])
    listed = await _panel(demo, "tracescore-traces", "Scores in this trace", pick_all=False)
    assert sorted((r["SpanId"], r["Scorer"]) for r in listed) == sorted(
        (s["SpanId"], s["ScorerId"]) for s in scores
    )


def plugin_trace_query(database: str, table: str, trace_id: str) -> str:
    """What the plugin runs when a trace id's "View trace" link opens the trace: generateTraceIdQuery of
    src/data/sqlGenerator.ts for a data source in OpenTelemetry mode (its OTel column map, nested
    events and links, no <table>_trace_id_ts table beside the view), as it prints it."""

    def attributes(column: str) -> str:
        return f"arrayMap(key -> map('key', key, 'value',{column}[key]), mapKeys({column}))"

    nested = "arrayMap(key -> map('key', key, 'value', attributes[key]), mapKeys(attributes))"
    return " ".join(
        [
            'SELECT "TraceId" as traceID, "SpanId" as spanID, "ParentSpanId" as parentSpanID,',
            '"ServiceName" as serviceName, "SpanName" as operationName,',
            'multiply(toUnixTimestamp64Nano("Timestamp"), 0.000001) as startTime,',
            'multiply("Duration", 0.000001) as duration,',
            attributes('"SpanAttributes"') + " as tags,",
            attributes('"ResourceAttributes"') + " as serviceTags,",
            "if(\"StatusCode\" IN ('Error', 'STATUS_CODE_ERROR'), 2, 0) as statusCode,",
            "arrayMap((name, timestamp, attributes) ->",
            "tuple(name, toString(toUnixTimestamp64Milli(timestamp)),",
            f"{nested})::Tuple(name String, timestamp String, fields Array(Map(String, String))),",
            '"Events".Name, "Events".Timestamp, "Events".Attributes) AS logs,',
            f"arrayMap((traceID, spanID, attributes) -> tuple(traceID, spanID, {nested})"
            "::Tuple(traceID String, spanID String, tags Array(Map(String, String))),",
            '"Links".TraceId, "Links".SpanId, "Links".Attributes) AS references,',
            '"SpanKind" as kind, "StatusMessage" as statusMessage, "TraceState" as traceState',
            f'FROM "{database}"."{table}" WHERE traceID = \'{trace_id}\'',
        ]
    )


async def test_explore_opens_a_trace_of_the_data_source_with_its_scores(demo: Store) -> None:
    (source,) = [
        s
        for s in load_yaml("datasources/tracescore.yaml")["datasources"]
        if s["uid"] == "tracescore-clickhouse"
    ]
    trace_id = await scored_trace(demo)
    spans = await demo.query(
        plugin_trace_query(demo.database, source["jsonData"]["traces"]["defaultTable"], trace_id)
    )
    assert len(spans) == await _one(demo, f"SELECT count() FROM otel_traces WHERE TraceId = '{trace_id}'")
    keys = {t["key"] for s in spans for t in s["tags"]}
    scorers = await demo.query(f"SELECT DISTINCT ScorerId FROM scores FINAL WHERE TraceId = '{trace_id}'")
    assert {f"gen_ai.evaluation.{r['ScorerId']}.score" for r in scorers} <= keys


# --- alert rules ----------------------------------------------------------------------------------------


def _alert_range(query: AlertQuery) -> TimeRange:
    window = query.data["relativeTimeRange"]
    interval = timedelta(milliseconds=query.data["model"].get("intervalMs", 1000))
    return TimeRange.relative(datetime.now(UTC), window["from"], window["to"], interval)


async def _alert_rows(demo: Store, query: AlertQuery) -> list[dict[str, Any]]:
    # Grafana evaluates rules on the server: only the plugin's backend macros apply.
    sql = expand_macros(query.data["model"]["rawSql"], _alert_range(query))
    assert "$" not in sql, f"{query.where}: not expanded: {sql}"
    return await demo.query(sql)


@pytest.mark.parametrize("query", alert_queries("tracescore-clickhouse"), ids=lambda q: q.rule["uid"])
async def test_alert_rule_query_gives_one_number_per_series(demo: Store, query: AlertQuery) -> None:
    rows = await _alert_rows(demo, query)
    assert rows, f"{query.where}: no rows"
    for row in rows:
        # Grafana reads a table as one series per row: string columns are its labels, and there must
        # be exactly one number.
        numbers = [v for v in row.values() if isinstance(v, int | float) and not isinstance(v, bool)]
        labels = [v for v in row.values() if isinstance(v, str)]
        assert len(numbers) == 1 and len(labels) == len(row) - 1, row
        assert set(row) - {"scorer", "service", "agent"} == {next(k for k, v in row.items() if v in numbers)}


async def test_the_drift_rule_fires_for_the_drifted_series_only(demo: Store) -> None:
    (query,) = [
        q for q in alert_queries("tracescore-clickhouse") if q.rule["uid"] == "tracescore-drift-detected"
    ]
    rows = await _alert_rows(demo, query)
    firing = {(r["scorer"], r["service"], r["agent"]) for r in rows if r["drifted"] > 0}
    assert firing == {await first_series(demo)}


async def test_the_session_panel_shows_each_sessions_scores_on_its_last_run(demo: Store) -> None:
    rows = await _panel(demo, "tracescore-scores", "Session scores")
    assert {(r["Session"], r["Scorer"]): r["Score"] for r in rows} == {
        (SESSION_ID, scorer): value for scorer, value in SESSION_SCORERS.items()
    }
    (last,) = await demo.query(SESSION_RUN_SQL)
    assert {(r["TraceId"], r["SpanId"]) for r in rows} == {(last["TraceId"], last["SpanId"])}


# Last: it adds rows to the demo's store (decisions the other tests do not count).
async def test_the_cascade_panel_shows_the_units_a_gate_held_and_the_cost_they_avoided(demo: Store) -> None:
    now = datetime.now(UTC)
    held = [
        Decision(
            trace_id="c" * 32, span_id=f"{i:016x}", scorer_id="toxicity", decision="gated", span_start=now
        )
        for i in range(3)
    ]
    await ClickHouseScoreSink(demo).write_scores([], held)
    shown = dashboard_range()
    scored = await demo.query(
        "SELECT sum(CostUsd) AS cost, count() AS n FROM scores FINAL WHERE ScorerId = 'toxicity' "
        f"AND JudgeModel != '' AND SpanStart >= toDateTime({int(shown.start.timestamp())})"
    )
    cost, count = scored[0]["cost"], scored[0]["n"]
    assert cost > 0 and count > 0
    rows = await _panel(demo, "tracescore-judge", "Judge runs avoided by cascades")
    (toxicity,) = [row for row in rows if row["Scorer"] == "toxicity"]
    assert (toxicity["Held by a gate"], toxicity["Scored"]) == (3, count)
    assert toxicity["Cost per 1,000 scored"] == pytest.approx(1000 * cost / count)
    assert toxicity["Cost avoided (est.)"] == pytest.approx(3 * cost / count)
    assert toxicity["Share held"] == pytest.approx(3 / (3 + count))


async def test_agreement_panels_and_rule_show_the_scorer_that_disagrees(demo: Store) -> None:
    # The labels of conftest: the opposite of the first scorer's scores, the same as the others'.
    (first,) = await demo.query("SELECT min(ScorerId) AS scorer FROM scores")
    state = await _panel(demo, "tracescore-agreement", "Agreement per scorer")
    assert state[0]["Scorer"] == first["scorer"] and state[0]["State"] == "below"
    assert all(row["State"] in ("ok", "insufficient") for row in state[1:])
    assert await _value(demo, "tracescore-agreement", "Scorers below or dropped") == 1
    assert await _value(demo, "tracescore-agreement", "Labels") == await _one(
        demo, "SELECT count() FROM scores FINAL"
    )
    (query,) = [
        q for q in alert_queries("tracescore-clickhouse") if q.rule["uid"] == "tracescore-judge-agreement-low"
    ]
    rows = await _alert_rows(demo, query)
    assert {r["scorer"] for r in rows if r["disagreeing"] > 0} == {first["scorer"]}
