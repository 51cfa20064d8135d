"""``tracescore backfill`` end to end: traces stored while no judge rule applied are scored later, a
second run adds nothing, and the dry run's estimate matches the real spend (local judge server).

Six support runs are stored two hours ago under a heuristic rule only; then the toxicity rule is
added and four runs are scored live (the judge's answer sizes the dry run learns from); then the
old window is backfilled, as users run it: the command in its own process on the same store.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests.support.llm_server import LLMServer, answering
from tests.support.serve import ENV
from tests.support.service import running_service
from tracescore.ingest.cli.demo_traces import LlmStep, Scenario, emit_scenario
from tracescore.ingest.configuration.config_loader import load_config
from tracescore.ingest.service import Service
from tracescore.ingest.store.clickhouse import Store

HOUR_NS = 3600 * 10**9
QUESTIONS = [
    "How do I reset my password?",
    "Why was I charged twice this month?",
    "Can I export my data as CSV?",
    "Is there a student discount?",
    "How do I delete my account?",
    "Which regions do you host in?",
    "Do you support single sign-on?",
    "Where can I see my invoices?",
    "What is your uptime guarantee?",
    "Can two people share one seat?",
]


def _scenario(i: int) -> Scenario:
    answer = f"Here is how: open Settings, then follow the steps for '{QUESTIONS[i][:-1].lower()}'. " * (
        1 + i % 3
    )
    return Scenario(
        agent="support_agent",
        system="You are the support assistant of Acme Cloud.",
        user=QUESTIONS[i],
        steps=(LlmStep(text=answer.strip(), input_tokens=40, output_tokens=30),),
    )


def _send(service: Service, numbers: range, start_ns: int) -> list[str]:
    provider = TracerProvider(resource=Resource.create({"service.name": "support"}))
    exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{service.grpc.port}", insecure=True)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("app")
    trace_ids = [emit_scenario(tracer, _scenario(i), start_ns + i * 10**9) for i in numbers]
    provider.shutdown()
    return trace_ids


async def _scored(service: Service, trace_ids: list[str], per_trace: int) -> None:
    deadline = time.monotonic() + 60
    for trace_id in trace_ids:
        while len(await service.scores.trace_decisions(trace_id)) < per_trace:
            assert time.monotonic() < deadline, trace_id
            await asyncio.sleep(0.1)


async def _backfill(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tracescore.ingest.cli",
        "backfill",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=ENV,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 180)
    return proc.returncode or 0, out.decode(), err.decode()


async def _counts(store_dir: Path) -> dict[str, Any]:
    store = Store(str(store_dir))
    await store.start()
    try:
        raw = await store.query(
            "SELECT (SELECT count() FROM scores) AS scores, "
            "(SELECT count() FROM score_decisions) AS decisions"
        )
        backfilled = await store.query(
            "SELECT TraceId, Score, CostUsd FROM scores FINAL "
            "WHERE Source = 'backfill' AND ScorerId = 'toxicity'"
        )
    finally:
        await store.shutdown()
    return {"raw": raw[0], "backfilled": backfilled}


async def test_backfill_scores_what_no_rule_scored_once_and_as_estimated(
    tmp_path: Path, llm_server: LLMServer
) -> None:
    llm_server.responder = answering(
        {"verdicts": [{"verdict": "no", "reason": "The answer is helpful, neutral and free of insults."}]},
        "The score is 0 because the answer is calm and helpful, with no toxic wording at all.",
    )
    store_dir = tmp_path / "store"
    judge = {
        "model": "openai/gpt-4o-mini",
        "api_base": llm_server.api_base,
        "api_key": "test-key",
        "max_retries": 0,
    }
    with_judge = {
        "scoring": {
            "rules": [{"scorer": "textual-difference"}, {"scorer": "toxicity", "options": {"judge": judge}}]
        }
    }
    config_file = tmp_path / "tracescore.yaml"
    config_file.write_text(yaml.safe_dump(with_judge))
    overrides = {
        "store": str(store_dir),
        "receiver.grpc_port": 0,
        "receiver.http_port": 0,
        "assembly.idle_seconds": 0.2,
    }
    two_hours_ago = time.time_ns() - 2 * HOUR_NS

    # 1. No judge rule yet: six runs stored two hours ago, scored by the heuristic only.
    without = load_config(
        overrides={**overrides, "scoring.rules": [{"scorer": "textual-difference"}]}, environ={}
    )
    async with running_service(without) as service:
        old = await asyncio.to_thread(_send, service, range(6), two_hours_ago)
        await _scored(service, old, 1)
    # 2. The toxicity rule joins: four runs now, scored live.
    async with running_service(load_config(config_file, overrides=overrides, environ={})) as service:
        recent = await asyncio.to_thread(_send, service, range(6, 10), time.time_ns())
        await _scored(service, recent, 2)
    live_requests = len(llm_server.chat_requests)
    assert live_requests == 8  # four runs, two judge calls each; the old runs were not rescored

    window = ["--config", str(config_file), "--store", str(store_dir), "--since", "3h", "--until", "1h"]
    # 3. The dry run: what it would do, without a judge call.
    code, out, err = await _backfill(*window, "--dry-run", "--json")
    assert code == 0, err
    plan = json.loads(out)
    assert (plan["runs"], plan["scorer_runs"], plan["judge_calls"], plan["traces"]) == (6, 6, 12, 6)
    assert len(llm_server.chat_requests) == live_requests

    # 4. The backfill itself.
    before = await _counts(store_dir)
    code, out, err = await _backfill(*window, "--json")
    assert code == 0, err
    done = json.loads(out)
    assert (done["scorer_runs"], done["judge_calls"], done["decisions"]) == (6, 12, {"scored": 6})
    after = await _counts(store_dir)
    assert {row["TraceId"] for row in after["backfilled"]} == set(old)
    spent = sum(row["CostUsd"] for row in after["backfilled"])
    assert spent == pytest.approx(done["cost_usd"], rel=1e-3)
    assert abs(plan["estimated_cost_usd"] - spent) <= 0.25 * spent, (plan["estimated_cost_usd"], spent)
    assert after["raw"]["scores"] == before["raw"]["scores"] + 6

    # 5. Again: nothing to do, nothing written, no judge asked.
    requests = len(llm_server.chat_requests)
    code, out, err = await _backfill(*window, "--json")
    assert code == 0, err
    assert json.loads(out)["scorer_runs"] == 0
    assert len(llm_server.chat_requests) == requests
    assert (await _counts(store_dir))["raw"] == after["raw"]

    # --rule picks rules; an unknown one is a usage error naming the rules.
    code, out, err = await _backfill(*window, "--rule", "textual-difference", "--dry-run", "--json")
    assert code == 0 and json.loads(out)["scorer_runs"] == 0  # the heuristic scored them live
    code, out, err = await _backfill(*window, "--rule", "nope")
    assert code == 2 and "--rule nope: no such rule" in err and "toxicity" in err
