"""A store holding what ``tracescore demo`` writes, for the dashboard and alert-rule queries to read.

The demo runs as users run it, in its own process, with LLM-judge scorers: their judge is the local
OpenAI-compatible server of the tests, which answers every run but fails one run's toxicity check on
purpose, so the store also holds a failed decision. Drift findings and notifications are added
beside the demo's scores.
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

import pytest

from ingest.store.clickhouse import Store
from tests.support.llm_server import JUDGE_MODEL, LLMServer, Reply, provider_usage
from tests.support.serve import ENV

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
            *(sys.executable, "-m", "ingest.cli", "demo", "--store", str(store_dir), "--judge", JUDGE_MODEL),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        stdout, stderr = await asyncio.wait_for(proc.communicate(), 180)
        assert proc.returncode == 0, stderr.decode() + stdout.decode()
    finally:
        await server.close()


NOTIFICATION_COLUMNS = ("SentAt", "Webhook", "Kind", "Series", "Attempts", "Delivered", "Error", "Payload")


def drift_rows(series: list[dict[str, Any]], now: datetime) -> list[dict[str, Any]]:
    """Three passes over the demo's series, an hour apart: all ok, then in the newest pass the first
    series drifted (its window mean 0.3 below its baseline) and the second with too few scores."""
    rows = []
    for passes_ago in (2, 1, 0):
        checked = now - timedelta(hours=passes_ago, minutes=5)
        for index, s in enumerate(series):
            drifted = passes_ago == 0 and index == 0
            insufficient = passes_ago == 0 and index == 1
            p_value = 0.0004 if drifted else 0.62
            rows.append(
                {
                    "CheckedAt": checked,
                    "ScorerId": s["ScorerId"],
                    "ServiceName": s["ServiceName"],
                    "AgentName": s["AgentName"],
                    "BaselineStart": checked - timedelta(days=7),
                    "BaselineEnd": checked - timedelta(hours=1),
                    "WindowStart": checked - timedelta(hours=1),
                    "WindowEnd": checked,
                    "BaselineN": 400,
                    "WindowN": 3 if insufficient else 60,
                    "BaselineMean": float(s["mean"]),
                    "WindowMean": max(float(s["mean"]) - (0.3 if drifted else 0.01), 0.0),
                    "BaselineSd": 0.12,
                    "WindowSd": 0.13,
                    "MeanShiftSd": 2.4 if drifted else 0.08,
                    "KsStatistic": 0.31 if drifted else 0.05,
                    "KsPValue": p_value,
                    "MannWhitneyPValue": 0.001 if drifted else 0.7,
                    "Psi": 0.27 if drifted else 0.02,
                    "PsiPValue": 0.003 if drifted else 0.8,
                    "BaselinePassRate": 0.9,
                    "WindowPassRate": 0.6 if drifted else 0.89,
                    "PassRatePValue": 0.002 if drifted else 0.75,
                    "BaselineFailureRate": 0.01,
                    "WindowFailureRate": 0.01,
                    "FailureRatePValue": 1.0,
                    "Cusum": 5.2 if drifted else 0.4,
                    "CusumAlarm": int(drifted),
                    "PValue": p_value,
                    "Effect": -0.3 if drifted else -0.01,
                    "Drifted": int(drifted),
                    "Severity": "warning" if drifted else "",
                    "State": "drifted" if drifted else "insufficient" if insufficient else "ok",
                    "Reasons": ["mean shifted 2.4 sd", "KS p=0.0004"] if drifted else [],
                }
            )
    return rows


async def _add_drift(store_dir: Path) -> None:
    store = Store(str(store_dir))
    await store.start()
    try:
        series = await store.query(
            "SELECT ScorerId, ServiceName, AgentName, avg(Score) AS mean FROM scores_by_scorer FINAL "
            "GROUP BY ScorerId, ServiceName, AgentName ORDER BY ScorerId, ServiceName, AgentName"
        )
        now = datetime.now(UTC)
        # drift pass: rows a drift pass would write, until the drift engine runs here for real.
        passes = drift_rows(series, now)
        await store.insert("score_drift", [list(row.values()) for row in passes], list(passes[0]))
        first = f"{series[0]['ScorerId']}/{series[0]['ServiceName']}/{series[0]['AgentName']}"
        notified = now - timedelta(minutes=4)
        await store.insert(
            "drift_notifications",
            [
                [notified, "ops-webhook", "drifted", [first], 1, 1, "", json.dumps({"series": [first]})],
                [
                    notified,
                    "team-webhook",
                    "drifted",
                    [first],
                    3,
                    0,
                    "HTTP 503",
                    json.dumps({"series": [first]}),
                ],
            ],
            NOTIFICATION_COLUMNS,
        )
    finally:
        await store.shutdown()


def _in_own_thread(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine on an event loop of its own, apart from the tests' loops."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


@pytest.fixture(scope="package")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The data directory of a finished demo run (closed: open it with ``Store``)."""
    store_dir = tmp_path_factory.mktemp("grafana") / "store"
    _in_own_thread(_run_demo(store_dir))
    _in_own_thread(_add_drift(store_dir))
    assert os.path.isdir(store_dir)
    return store_dir
