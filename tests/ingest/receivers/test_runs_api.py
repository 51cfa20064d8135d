"""``GET /api/runs``: what the scorers saw of a stored trace -- its units rebuilt from the stored spans
(as the AgentRun JSON the scorers received), each rule's decision and score, the switch that turns
content capture on for a unit without content, and why a trace has no unit at all."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests.support.fixture_files import OTLP_DIR
from tests.support.serve import tracescore
from tests.support.service import running_service, service_config
from tracescore.ingest.service import Service

TOKEN = "runs-api-token"
GENAI_MAIN = OTLP_DIR / "otel_genai_semconv__main.traces.json"
GENAI_TRACE = "5dbdf98695bd5785f3d3e61006ad2dba"
RUN_SPAN = "594f8d102c7c4a19"
CALL_SPANS = ["41577dfd278c2ded", "4bcdd5c433ba8408"]
RULES = [
    {"scorer": "content-similarity"},
    {"scorer": "textual-difference"},
    {"scorer": "textual-difference", "name": "call-difference", "target": "llm_call"},
]


async def _get(service: Service, params: dict[str, str], token: str | None = TOKEN) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{service.http.port}/api/runs", params=params, headers=headers) as resp,
    ):
        return resp.status, await resp.json(content_type=None)


async def _decided(service: Service, trace_id: str, count: int) -> None:
    deadline = time.monotonic() + 30
    while len(await service.scores.trace_decisions(trace_id)) < count:
        assert time.monotonic() < deadline, trace_id
        await asyncio.sleep(0.1)


def _tracer(service: Service, name: str) -> tuple[TracerProvider, Any]:
    provider = TracerProvider(resource=Resource.create({"service.name": name}))
    exporter = OTLPSpanExporter(
        endpoint=f"127.0.0.1:{service.grpc.port}", insecure=True, headers={"authorization": f"Bearer {TOKEN}"}
    )
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, provider.get_tracer("app")


def _send_without_content(service: Service, convention: str) -> str:
    """One agent run whose spans carry operations and usage but no message text (capture off)."""
    provider, tracer = _tracer(service, f"no-content-{convention}")
    if convention == "genai":
        agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "quiet"}
        call = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.usage.input_tokens": 9,
        }
    else:  # OpenInference with OPENINFERENCE_HIDE_INPUTS / HIDE_OUTPUTS set
        agent = {"openinference.span.kind": "AGENT", "agent.name": "quiet"}
        call = {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o", "llm.token_count.prompt": 9}
    with (
        tracer.start_as_current_span("invoke_agent quiet", attributes=agent) as root,
        tracer.start_as_current_span("chat gpt-4o", attributes=call),
    ):
        pass
    provider.shutdown()
    return format(root.get_span_context().trace_id, "032x")


def _send_plain(service: Service) -> str:
    provider, tracer = _tracer(service, "shop-api")
    with tracer.start_as_current_span("GET /health") as span:
        pass
    provider.shutdown()
    return format(span.get_span_context().trace_id, "032x")


@pytest.fixture
async def service(tmp_path: Path) -> Any:
    config = service_config(tmp_path, **{"scoring.rules": RULES, "receiver.auth_token": TOKEN})
    async with running_service(config) as running:
        yield running


async def test_the_units_of_a_stored_trace_as_the_scorers_received_them(
    service: Service, tmp_path: Path
) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"http://127.0.0.1:{service.http.port}/v1/traces",
            data=GENAI_MAIN.read_bytes(),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"},
        ) as resp,
    ):
        assert resp.status == 200
    await _decided(service, GENAI_TRACE, 4)  # two run rules, one rule on each of the two model calls
    status, answer = await _get(service, {"trace_id": GENAI_TRACE})
    assert status == 200
    assert (answer["trace_id"], answer["spans"], answer["log_records"]) == (GENAI_TRACE, 4, 0)
    assert [(u["kind"], u["span_id"]) for u in answer["units"]] == [
        ("run", RUN_SPAN),
        ("llm_call", CALL_SPANS[0]),
        ("llm_call", CALL_SPANS[1]),
    ]
    run, first_call, second_call = answer["units"]
    # The run is the one `tracescore inspect` builds from the same export request.
    inspected = tracescore("inspect", str(GENAI_MAIN))
    assert inspected.returncode == 0, inspected.stderr
    assert run["unit"] == json.loads(inspected.stdout)[0]
    assert run["unit"]["output"][-1]["content"] == (
        "The weather in Paris is currently rainy with a temperature of 57°F."
    )
    assert second_call["unit"]["parent_span_id"] == RUN_SPAN
    assert second_call["unit"]["usage"] == {"input_tokens": 97, "output_tokens": 52}
    assert run["rules"] == ["content-similarity", "textual-difference"]
    assert first_call["rules"] == second_call["rules"] == ["call-difference"]
    # @mastra/evals on this run: content similarity 0.4615..., textual difference 0.4.
    scores = {d["scorer_id"]: (d["decision"], round(d["score"]["score"], 3)) for d in run["decisions"]}
    assert scores == {
        "content-similarity": ("scored", 0.462),
        "textual-difference": ("scored", 0.4),
    }
    # The first model call answered with a tool call only: nothing for textual difference to compare.
    [skipped] = first_call["decisions"]
    assert (skipped["scorer_id"], skipped["decision"]) == ("call-difference", "skipped_empty")
    assert skipped["detail"] == "run has no output text"
    [scored] = second_call["decisions"]
    assert (scored["scorer_id"], scored["decision"]) == ("call-difference", "scored")
    assert run["content_capture"] is None and answer["other_decisions"] == []
    assert all("judge_io" not in d for u in answer["units"] for d in u["decisions"])  # not asked to keep


@pytest.mark.parametrize(
    ("convention", "switch"),
    [
        (
            "genai",
            "set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true; or the content is in log records, "
            "which tracescore did not receive (export the app's logs to it too: OTLP /v1/logs)",
        ),
        ("openinference", "OPENINFERENCE_HIDE_INPUTS / OPENINFERENCE_HIDE_OUTPUTS must not be true"),
    ],
)
async def test_a_run_without_content_names_the_switch_that_turns_capture_on(
    service: Service, convention: str, switch: str
) -> None:
    trace_id = await asyncio.to_thread(_send_without_content, service, convention)
    await _decided(service, trace_id, 3)  # two on the run, one on its model call
    decisions = await service.scores.trace_decisions(trace_id)
    run_decisions = [d for d in decisions if d["scorer_id"] != "call-difference"]
    assert {d["decision"] for d in run_decisions} == {"skipped_empty"}
    for decision in run_decisions:
        assert decision["detail"].endswith(f"(content capture off or redacted: {switch})"), decision["detail"]
    status, answer = await _get(service, {"trace_id": trace_id})
    assert status == 200
    run = answer["units"][0]
    assert run["kind"] == "run" and run["unit"]["content_missing"] is True
    assert run["content_capture"] == switch


async def test_a_trace_without_units_says_why_and_a_trace_never_received_is_404(service: Service) -> None:
    plain = await asyncio.to_thread(_send_plain, service)
    deadline = time.monotonic() + 30
    while True:
        status, answer = await _get(service, {"trace_id": plain})
        if status == 200 and answer.get("status", {}).get("status") == "nothing_to_score":
            break
        assert time.monotonic() < deadline, answer
        await asyncio.sleep(0.1)
    assert answer["units"] == []
    assert answer["no_units"] == (
        "1 span, none is an agent or model call (span names: GET /health; conventions seen: none); no span "
        "has GenAI attributes: is the app's LLM client or agent framework instrumented?"
    )
    unknown = "0123456789abcdef0123456789abcdef"
    status, answer = await _get(service, {"trace_id": unknown})
    assert status == 404
    assert answer["status"] == "not_received"
    assert answer["message"] == "not received: no span of this trace is in the store"


async def test_the_request_is_checked_and_authenticated(service: Service) -> None:
    assert await _get(service, {"trace_id": "xyz"}) == (
        400,
        {"error": "trace_id: must be 32 hex characters", "parameter": "trace_id"},
    )
    status, answer = await _get(service, {})
    assert (status, answer["parameter"]) == (400, "trace_id")
    status, answer = await _get(service, {"trace_id": GENAI_TRACE, "scorer": "x"})
    assert (status, answer["parameter"]) == (400, "scorer")
    status, _ = await _get(service, {"trace_id": GENAI_TRACE}, token=None)
    assert status == 401
    status, _ = await _get(service, {"trace_id": GENAI_TRACE}, token="wrong")
    assert status == 401
