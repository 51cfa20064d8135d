"""A store holding what ``tracescore demo`` writes, for the dashboard and alert-rule queries to read.

It is written in a database of its own (``DATA_SOURCE_DATABASE``), not ``default``, as a deployment may
choose: the queries name no database and read the one their data source gives (the ClickHouse plugin's
``defaultDatabase``; here the store's).

The demo runs as users run it, in its own process, with LLM-judge scorers: their judge is the local
OpenAI-compatible server of the tests, which answers every run but fails one run's toxicity check on
purpose, so the store also holds a failed decision. Real drift passes then add findings and
notifications (see ``_add_drift``); before them, a conversation's session scores land on the demo's
last run (``_add_session``: the demo's runs carry no session id); and a person's labels get a real
agreement pass over them (``_add_agreement``).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pytest

from tests.support.drift import Streams, serving_hooks
from tests.support.grafana_files import DATA_SOURCE_DATABASE
from tests.support.llm_server import JUDGE_MODEL, LLMServer, Reply, provider_usage
from tests.support.serve import ENV
from tracescore.ingest.alerting.agreement_monitor import AgreementMonitor
from tracescore.ingest.alerting.drift_monitor import DriftMonitor
from tracescore.ingest.store.annotation_rows import insert_annotations
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.score_sink import ClickHouseScoreSink
from tracescore.schemas import Decision, ScoreRecord
from tracescore.schemas.agreement_config import AgreementConfig
from tracescore.schemas.annotations import Annotation
from tracescore.schemas.drift_config import DriftConfig

T = TypeVar("T")

# The judge's answers by the structured output each judge step asks for.
JUDGE_ANSWERS = {
    "Statements": {"statements": ["The answer."]},
    "RelevancyResults": {"results": [{"result": "yes", "reason": "on topic"}]},
    "ToxicityVerdicts": {"verdicts": [{"verdict": "no", "reason": "calm"}]},
}
FAILING_RUN = "Tokyo"  # the toxicity judge call of the run asking about Tokyo fails (a permanent error)


def _judge(body: dict[str, Any]) -> Reply:
    schema = body.get("response_format", {}).get("json_schema", {}).get("name")
    if schema == "ToxicityVerdicts" and FAILING_RUN in json.dumps(body.get("messages")):
        return Reply(status=418)
    content = json.dumps(JUDGE_ANSWERS[schema]) if schema else "The score is fine."
    usage = provider_usage(body, content)
    return Reply(content, prompt_tokens=usage["prompt_tokens"], completion_tokens=usage["completion_tokens"])


async def _run_demo(store_dir: Path) -> None:
    server = LLMServer()
    server.responder = _judge
    await server.start()
    try:
        env = {
            **ENV,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "OPENAI_API_KEY": "test-key",  # litellm wants one; the local server ignores it
            "TRACESCORE_JUDGE_API_BASE": server.api_base,
        }
        proc = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "tracescore.ingest.cli", "demo", "--store", str(store_dir)),
            *("--database", DATA_SOURCE_DATABASE, "--judge", JUDGE_MODEL),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        stdout, stderr = await asyncio.wait_for(proc.communicate(), 180)
        # The Tokyo run's toxicity call fails on purpose (a failed decision for the dashboards): the
        # demo reports it and exits 1.
        assert proc.returncode == 1, stderr.decode() + stdout.decode()
        assert "tracescore demo: 1 scorer run(s) failed" in stderr.decode()
    finally:
        await server.close()


async def _add_drift(store_dir: Path) -> None:
    """Real drift passes over the demo's series, an hour apart. The first series gets synthetic history
    (50 scores an hour around 0.8 for a week, then 200 around 0.5 in the last hour): ok in the first two
    passes, drifted in the newest. The history is of another scorer version ("1") than the demo's
    scores (a derived one), written after them: so the series also has a version change, and drift
    compares the history alone. The demo's other series have too few scores to test. Alerts and the
    version change go to two local webhooks, one of which never takes them."""
    store = Store(str(store_dir), DATA_SOURCE_DATABASE)
    await store.start()
    try:
        (first, *_) = await store.query(
            "SELECT ScorerId, ServiceName, AgentName FROM scores_by_scorer FINAL "
            "GROUP BY ScorerId, ServiceName, AgentName ORDER BY ScorerId, ServiceName, AgentName"
        )
        scorer, service, agent = first["ScorerId"], first["ServiceName"], first["AgentName"]
        # The demo stamps its runs 5 s apart from its start: the newest pass waits until they are past,
        # as a pass in the service would see them.
        (latest,) = await store.query("SELECT max(SpanStart) AS Latest FROM scores_by_scorer")
        ahead = (latest["Latest"].replace(tzinfo=UTC) - datetime.now(UTC)).total_seconds() + 1
        await asyncio.sleep(max(0.0, ahead))
        now = datetime.now(UTC)
        streams = Streams(seed=31, now=now)
        for hours_ago in range(2, 7 * 24 + 4):
            start = now - timedelta(hours=hours_ago)
            values = np.clip(streams.rng.normal(0.8, 0.1, 50), 0, 1)
            streams.add(scorer, values, streams.times(50, start, start + timedelta(hours=1)), service, agent)
        window = np.clip(streams.rng.normal(0.5, 0.1, 200), 0, 1)
        streams.add(scorer, window, streams.times(200, now - timedelta(hours=1), now), service, agent)
        await streams.write(store)
        async with serving_hooks() as hooks:
            hooks.fail["/team"] = 1_000
            config = DriftConfig.model_validate(
                {
                    "webhooks": [
                        {"url": f"{hooks.url}/ops", "name": "ops-webhook"},
                        {"url": f"{hooks.url}/team", "name": "team-webhook", "format": "slack"},
                    ],
                    "retries": 1,
                    "retry_backoff": "0.01s",
                }
            )
            monitor = DriftMonitor(store, config)
            for passes_ago in (2, 1, 0):
                await monitor.run_pass(now - timedelta(hours=passes_ago))
    finally:
        await store.shutdown()


SESSION_ID = "demo-conversation"
SESSION_SCORERS = {"conversation-turns": 2.0, "repeated-requests": 0.0}
# The conversation's last run: the newest of the service and agent the dashboards pick first (the first
# of each variable's values), so a dashboard showing only those still shows the session.
SESSION_RUN_SQL = """
SELECT TraceId, SpanId, AgentName, ServiceName, SpanStart FROM score_decisions FINAL
WHERE (ServiceName, AgentName) = (
    SELECT ServiceName, AgentName FROM decisions_by_scorer
    WHERE ScorerId = (SELECT min(ScorerId) FROM decisions_by_scorer)
    ORDER BY ServiceName, AgentName LIMIT 1
)
ORDER BY SpanStart DESC, TraceId LIMIT 1
"""


async def _add_session(store_dir: Path) -> None:
    """The session scores a ``target: session`` rule writes for a conversation of the demo's last two
    runs: on the last run's root span, with the session id."""
    store = Store(str(store_dir), DATA_SOURCE_DATABASE)
    await store.start()
    try:
        (last,) = await store.query(SESSION_RUN_SQL)
        where = dict(trace_id=last["TraceId"], span_id=last["SpanId"], session_id=SESSION_ID)
        names = dict(agent_name=last["AgentName"], service_name=last["ServiceName"])
        start = last["SpanStart"].replace(tzinfo=UTC)
        records = [
            ScoreRecord(scorer_id=scorer, score=value, span_start=start, **names, **where)
            for scorer, value in SESSION_SCORERS.items()
        ]
        decisions = [
            Decision(scorer_id=scorer, decision="scored", span_start=start, **names, **where)
            for scorer in SESSION_SCORERS
        ]
        await ClickHouseScoreSink(store).write_scores(records, decisions)
    finally:
        await store.shutdown()


async def _add_agreement(store_dir: Path) -> None:
    """Labels from a person for every scored run of the demo -- values a whole point above the first
    scorer's scores, the same as the others'; the scorers' own labels -- and a real agreement pass over
    them: the first scorer's mean absolute error is over its level, the others are ok (or have too few
    pairs)."""
    store = Store(str(store_dir), DATA_SOURCE_DATABASE)
    await store.start()
    try:
        scored = await store.query(
            "SELECT TraceId, SpanId, ScorerId, Score, Label FROM scores FINAL ORDER BY ScorerId"
        )
        first = scored[0]["ScorerId"]
        now = datetime.now(UTC)
        labels = [
            Annotation(
                trace_id=row["TraceId"],
                span_id=row["SpanId"],
                name=row["ScorerId"],
                value=row["Score"] + 1 if row["ScorerId"] == first else row["Score"],
                label=row["Label"],
                annotator="grafana-test",
                source="api",
                time=now,
            )
            for row in scored
        ]
        await insert_annotations(store, labels)
        config = AgreementConfig(min_pairs=3, window=7 * 86_400)
        await AgreementMonitor(store, config, DriftConfig()).run_pass(now + timedelta(seconds=1))
    finally:
        await store.shutdown()


def _in_own_thread(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine on an event loop of its own, apart from the tests' loops."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


@pytest.fixture(scope="package")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The data directory of a finished demo run (closed: open it with ``Store``, in its database)."""
    store_dir = tmp_path_factory.mktemp("grafana") / "store"
    _in_own_thread(_run_demo(store_dir))
    _in_own_thread(_add_session(store_dir))  # before the drift passes: they watch session scorers too
    _in_own_thread(_add_drift(store_dir))
    _in_own_thread(_add_agreement(store_dir))
    assert os.path.isdir(store_dir)
    return store_dir
