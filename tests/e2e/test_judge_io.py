"""``scoring.record_judge_io``: what a judge was sent (after redaction) and answered, kept with the
decision of its scorer run and shown by ``GET /api/runs`` and ``tracescore runs``; nothing is kept
without it. The judge is a local OpenAI-compatible server (``tests.support.llm_server``).

The store the service starts on was made before the ``judge_io`` table existed (the table is dropped
first): the table is added on start, as on an upgraded store.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import aiohttp

from tests.support.llm_server import LLMServer, answering, error_reply
from tests.support.otlp import send_scenario
from tests.support.service import running_service, service_config
from tracescore.ingest.cli.demo_traces import LlmStep, Scenario
from tracescore.ingest.cli.runs_command import render
from tracescore.ingest.service import Service
from tracescore.ingest.store.clickhouse import Store

EMAIL = "jane.doe@example.com"
VERDICTS = {"verdicts": [{"verdict": "no", "reason": "polite"}]}
REASON = "The answer is polite: no toxic opinion."
SCENARIO = Scenario(
    agent="support_agent",
    system="You are the support assistant.",
    user=f"I am {EMAIL}; why was I charged twice?",
    steps=(LlmStep(text=f"Sorry {EMAIL}, the second charge is refunded.", input_tokens=9, output_tokens=9),),
)


def _send(service: Service) -> str:
    return send_scenario(service.grpc.port, "support", SCENARIO)


async def _runs(service: Service, trace_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while not await service.scores.trace_decisions(trace_id):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.1)
    url = f"http://127.0.0.1:{service.http.port}/api/runs"
    async with aiohttp.ClientSession() as session, session.get(url, params={"trace_id": trace_id}) as resp:
        assert resp.status == 200
        answer: dict[str, Any] = await resp.json()
    return answer


def _config(tmp_path: Path, llm_server: LLMServer, record: bool) -> Any:
    judge = {"model": "openai/gpt-4o-mini", "api_base": llm_server.api_base, "max_retries": 0}
    return service_config(
        tmp_path,
        **{
            "scoring.judge": judge,
            "scoring.rules": [{"scorer": "toxicity"}],
            "scoring.redact": {"emails": True},
            "scoring.record_judge_io": record,
        },
    )


async def _store_from_before_judge_io(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "store"))
    await store.start()
    await store.query("DROP TABLE judge_io")
    await store.shutdown()


async def test_the_judges_prompts_and_raw_answers_are_kept_with_the_decision(
    tmp_path: Path, llm_server: LLMServer
) -> None:
    await _store_from_before_judge_io(tmp_path)
    llm_server.responder = answering(VERDICTS, REASON)
    async with running_service(_config(tmp_path, llm_server, record=True)) as service:
        trace_id = await asyncio.to_thread(_send, service)
        answer = await _runs(service, trace_id)
    assert [u["kind"] for u in answer["units"]] == ["run", "llm_call"]  # the rule scores the run
    [decision] = answer["units"][0]["decisions"]
    assert (decision["scorer_id"], decision["decision"]) == ("toxicity", "scored")
    exchanges = decision["judge_io"]
    sent = llm_server.chat_requests
    assert len(exchanges) == len(sent) == 2  # toxicity's analyze step, then its reason
    for exchange, request in zip(exchanges, sent, strict=True):
        assert exchange["model"] == "openai/gpt-4o-mini" and exchange["operation"] == "chat"
        # What the judge received, message for message (the e-mail address redacted before it left).
        assert exchange["messages"] == [
            {"role": m["role"], "content": m["content"]} for m in request.messages
        ]
    assert [e["answer"] for e in exchanges] == [json.dumps(VERDICTS), REASON]
    user_prompt = exchanges[0]["messages"][-1]["content"]
    assert "[REDACTED]" in user_prompt and EMAIL not in json.dumps(exchanges)
    text = "\n".join(render(answer))
    assert "      judge request 1: openai/gpt-4o-mini (chat)" in text
    assert f"        answer: {REASON}" in text


async def test_a_failed_judge_request_is_kept_with_its_error(tmp_path: Path, llm_server: LLMServer) -> None:
    llm_server.script(error_reply(400, content="this model does not take that request"))
    async with running_service(_config(tmp_path, llm_server, record=True)) as service:
        trace_id = await asyncio.to_thread(_send, service)
        answer = await _runs(service, trace_id)
    [decision] = answer["units"][0]["decisions"]
    assert decision["decision"] == "failed"
    [exchange] = decision["judge_io"]
    assert "answer" not in exchange and "BadRequestError" in exchange["error"]
    assert exchange["messages"][-1]["content"] == llm_server.chat_requests[0].messages[-1]["content"]


async def test_nothing_is_kept_unless_asked(tmp_path: Path, llm_server: LLMServer) -> None:
    llm_server.responder = answering(VERDICTS, REASON)
    config = _config(tmp_path, llm_server, record=False)
    assert service_config(tmp_path).scoring.record_judge_io is False  # the default
    async with running_service(config) as service:
        trace_id = await asyncio.to_thread(_send, service)
        answer = await _runs(service, trace_id)
        [kept] = await service.store.query("SELECT count() AS n FROM judge_io")
    [decision] = answer["units"][0]["decisions"]
    assert decision["decision"] == "scored" and len(llm_server.chat_requests) == 2
    assert "judge_io" not in decision
    assert kept["n"] == 0
