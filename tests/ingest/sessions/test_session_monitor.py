"""The completion pass over a real store (chDB): ownership among replicas, and sessions whose spans
are gone."""

from __future__ import annotations

from tracescore.ingest.sessions.session_monitor import SESSION_KEY_PREFIX, SessionMonitor, split_session_rules
from tracescore.ingest.sessions.session_store import SessionStore
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.ledger import Ledger
from tracescore.ingest.store.score_sink import ClickHouseScoreSink
from tracescore.schemas import AgentRun
from tracescore.schemas.scoring_config import ScoringConfig
from tracescore.schemas.session_config import SessionConfig
from tracescore.scoring.runtime.scoring_metrics import ScoringMetrics

S = 1_000_000_000
T0 = 1_800_000_000 * S


def test_session_rules_go_to_an_executor_of_their_own() -> None:
    scoring = ScoringConfig.model_validate(
        {"rules": [{"scorer": "textual-difference"}, {"scorer": "conversation-turns", "target": "session"}]}
    )
    runs, sessions = split_session_rules(scoring)
    assert [rule.reference for rule in runs.rules] == ["textual-difference"]
    assert sessions is not None and [rule.reference for rule in sessions.rules] == ["conversation-turns"]
    assert split_session_rules(runs) == (runs, None)


async def test_a_replica_completes_only_the_sessions_it_owns(store: Store) -> None:
    sessions = SessionStore(store)
    await sessions.record_runs([(AgentRun(trace_id="gone", span_id="root", session_id="s-1"), T0)])
    scoring = ScoringConfig.model_validate({"rules": [{"scorer": "conversation-turns", "target": "session"}]})
    asked: list[str] = []

    def another_replicas(key: str) -> bool:
        asked.append(key)
        return False

    config, sink = SessionConfig(idle=60), ClickHouseScoreSink(store)
    other = SessionMonitor(
        sessions, Ledger(store), config, scoring, sink, ScoringMetrics(), owns=another_replicas
    )
    mine = SessionMonitor(sessions, Ledger(store), config, scoring, sink, ScoringMetrics())
    now = T0 + 61 * S
    assert await other.run_pass(now) == 0
    assert asked == [SESSION_KEY_PREFIX + "s-1"]
    due = await sessions.due(now, idle=60, max_duration=86_400, lookback=1, limit=9)
    assert [s.session_id for s in due] == ["s-1"]
    # Its trace is gone from the store (expired): marked, with nothing to score, never due again.
    assert await mine.run_pass(now) == 1
    assert await sessions.due(now, idle=60, max_duration=86_400, lookback=1, limit=9) == []
    assert await store.query("SELECT * FROM scores") == []
