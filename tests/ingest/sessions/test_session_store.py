"""Sessions in the store (chDB): which are complete, their marks, and superseded rows removed."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from tracescore.ingest.sessions.session_recorder import PendingSessionRuns, SessionRecorder, SessionRunsSink
from tracescore.ingest.sessions.session_store import (
    DueSession,
    ScoredSession,
    SessionStore,
    delete_statements,
)
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.schema import SchemaOptions, schema_ddl
from tracescore.ingest.store.score_sink import ClickHouseScoreSink
from tracescore.schemas import AgentRun, Decision, ScoreRecord, TraceRound

S = 1_000_000_000
T0 = 1_800_000_000 * S  # 2027-01-15, in ns
IDLE, MAX_DURATION, LOOKBACK = 60.0, 3_600.0, 86_400.0


def run(session_id: str | None, trace_id: str, span_id: str = "root") -> AgentRun:
    return AgentRun(trace_id=trace_id, span_id=span_id, session_id=session_id, start_time=datetime.now(UTC))


async def due(sessions: SessionStore, now: int) -> list[DueSession]:
    return await sessions.due(now, idle=IDLE, max_duration=MAX_DURATION, lookback=LOOKBACK, limit=100)


async def test_a_session_is_due_once_idle_and_again_only_when_a_run_arrives_after_its_mark(
    store: Store,
) -> None:
    sessions = SessionStore(store)
    await sessions.record_runs([(run("a", "t1"), T0), (run("a", "t2"), T0 + S), (run("b", "t3"), T0 + 5 * S)])
    await sessions.record_runs([(run(None, "t4"), T0)])  # no session: no row

    assert await due(sessions, T0 + S + int(IDLE * S) - 1) == []
    assert await due(sessions, T0 + S + int(IDLE * S)) == [DueSession("a", T0 + S)]
    both = await due(sessions, T0 + 5 * S + int(IDLE * S))
    assert both == [DueSession("a", T0 + S), DueSession("b", T0 + 5 * S)]

    await sessions.mark_done([ScoredSession("a", T0 + S, "t2", "root")])
    assert await due(sessions, T0 + 5 * S + int(IDLE * S)) == [DueSession("b", T0 + 5 * S)]
    # The conversation resumes: due again once idle, with its newest arrival.
    await sessions.record_runs([(run("a", "t5"), T0 + 100 * S)])
    assert await due(sessions, T0 + 100 * S + int(IDLE * S)) == [
        DueSession("b", T0 + 5 * S),
        DueSession("a", T0 + 100 * S),
    ]
    assert await sessions.runs_of(["a"]) == {"a": [("t1", "root"), ("t2", "root"), ("t5", "root")]}


async def test_a_session_that_never_pauses_is_due_when_its_oldest_unscored_run_waited_max_duration(
    store: Store,
) -> None:
    sessions = SessionStore(store)
    every_half_idle = [(run("busy", f"t{i}"), T0 + i * int(IDLE / 2 * S)) for i in range(130)]
    await sessions.record_runs(every_half_idle)
    last = every_half_idle[-1][1]
    assert last - T0 > MAX_DURATION * S
    assert await due(sessions, last) == [DueSession("busy", last)]
    await sessions.mark_done([ScoredSession("busy", last, "t129", "root")])
    await sessions.record_runs([(run("busy", "t130"), last + S)])
    assert await due(sessions, last + 2 * S) == []  # the new run has not waited max_duration yet
    assert await due(sessions, last + S + int(MAX_DURATION * S)) == [DueSession("busy", last + S)]


async def test_an_earlier_scorings_rows_on_another_span_are_removed_from_every_read(store: Store) -> None:
    sink, sessions = ClickHouseScoreSink(store), SessionStore(store)
    await sink.write_scores(
        [
            ScoreRecord(
                scorer_id="conversation-turns", score=1, trace_id="t1", span_id="old", session_id="s"
            ),
            ScoreRecord(scorer_id="textual-difference", score=0.5, trace_id="t1", span_id="old"),
            ScoreRecord(
                scorer_id="conversation-turns", score=2, trace_id="t2", span_id="new", session_id="s"
            ),
        ],
        [
            Decision(
                scorer_id="conversation-turns",
                decision="scored",
                trace_id="t1",
                span_id="old",
                session_id="s",
            )
        ],
    )
    removed = await sessions.remove_superseded(ScoredSession("s", T0, "t2", "new"))
    assert removed == 1
    assert await sessions.remove_superseded(ScoredSession("s", T0, "t2", "new")) == 0  # redone: nothing left
    for table in ("scores", "scores_by_scorer"):
        rows = await store.query(f"SELECT SpanId, ScorerId FROM {table} FINAL ORDER BY SpanId, ScorerId")
        assert [(r["SpanId"], r["ScorerId"]) for r in rows] == [
            ("new", "conversation-turns"),
            ("old", "textual-difference"),
        ]
    for table in ("score_decisions", "decisions_by_scorer"):
        assert await store.query(f"SELECT SpanId FROM {table} FINAL") == []


async def test_session_runs_are_written_with_their_rounds_mark_not_before(store: Store) -> None:
    sessions, pending = SessionStore(store), PendingSessionRuns()
    sink = SessionRunsSink(ClickHouseScoreSink(store), pending, sessions)
    marked: list[TraceRound] = []

    class Executor:
        async def consume_runs(
            self, runs: object, round: TraceRound | None = None, trace: object = None
        ) -> None:
            assert round is not None
            marked.append(round)

    recorder = SessionRecorder(Executor(), pending)
    first = TraceRound(trace_id="t1", since_unix_nano=0, through_unix_nano=T0, reason="idle")
    await recorder.consume_runs([run("s", "t1"), run(None, "t1", "other")], first)
    assert await store.query("SELECT * FROM session_runs") == []
    assert pending.held == 1

    await sink.mark_done(marked)
    rows = await store.query("SELECT SessionId, TraceId, SpanId FROM session_runs FINAL")
    assert rows == [{"SessionId": "s", "TraceId": "t1", "SpanId": "root"}]
    done = await store.query("SELECT TraceId FROM trace_done")
    assert done == [{"TraceId": "t1"}]
    assert pending.held == 0


def test_on_a_cluster_the_removal_deletes_from_the_local_tables_on_the_cluster() -> None:
    # The Distributed tables as `tracescore schema --cluster` creates them (engine_full reads the same).
    engines = {
        statement.split(" ON CLUSTER")[0].rsplit(".", 1)[1]: statement.split("ENGINE = ", 1)[1]
        for statement in schema_ddl(SchemaOptions(cluster="prod's"))
        if "ENGINE = Distributed" in statement
    }
    keys = [("t1", "old", "conversation-turns")]
    statements = delete_statements("`default`", engines, keys)
    assert statements[3] == (
        "DELETE FROM `default`.scores_local ON CLUSTER `prod\\'s` "  # quote_identifier's escape
        "WHERE has([('t1', 'old', 'conversation-turns')], (TraceId, SpanId, ScorerId))"
    )
    assert all(
        ".scores" in s or ".score_decisions" in s or "_by_scorer" in s or "judge_io" in s for s in statements
    )
    assert all("_local ON CLUSTER `prod\\'s` WHERE" in s for s in statements)
    # On one node (chDB, a server without --cluster): the tables themselves.
    single = delete_statements("`default`", {"scores": "ReplacingMergeTree(Version) ORDER BY ..."}, keys)
    assert single[3] == (
        "DELETE FROM `default`.scores WHERE has([('t1', 'old', 'conversation-turns')], (TraceId, SpanId, "
        "ScorerId))"
    )


async def test_a_store_made_before_sessions_gets_the_session_columns_and_keeps_its_rows(
    tmp_path: Path,
) -> None:
    old = Store(str(tmp_path / "chdb"))
    await old.start()
    try:
        for table in ("scores", "score_decisions"):
            await old.command(f"ALTER TABLE {table} DROP COLUMN SessionId")
        await old.command(
            "INSERT INTO scores (ScoreId, TraceId, SpanId, ScorerId, Score, Version) "
            "VALUES ('x', 't', 's', 'tone', 1, 1)"
        )
    finally:
        await old.shutdown()
    upgraded = Store(str(tmp_path / "chdb"))
    await upgraded.start()  # the DDL again: ALTER TABLE ... ADD COLUMN IF NOT EXISTS
    try:
        rows = await upgraded.query("SELECT ScorerId, SessionId FROM scores FINAL")
        assert rows == [{"ScorerId": "tone", "SessionId": ""}]
        await ClickHouseScoreSink(upgraded).write_scores(
            [ScoreRecord(scorer_id="conversation-turns", score=2, trace_id="t", span_id="s", session_id="c")],
            [],
        )
        rows = await upgraded.query("SELECT ScorerId, SessionId FROM scores FINAL ORDER BY ScorerId")
        assert rows == [
            {"ScorerId": "conversation-turns", "SessionId": "c"},
            {"ScorerId": "tone", "SessionId": ""},
        ]
    finally:
        await upgraded.shutdown()
