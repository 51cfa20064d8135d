"""What reaches a judge and what a judge's failure leaves behind, through the running service.

Redaction (``scoring.redact``) takes e-mail addresses, credential-shaped tokens and custom patterns
out of every prompt before it leaves, while the stored spans keep them. A judge key given as
``TRACESCORE_JUDGE_API_KEY`` or ``scoring.judge.api_key_file`` is in no log line, decision, metric or
repr after a provider error that quotes it back.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests.support.llm_server import LLMServer, answering, error_reply
from tests.support.service import running_service
from tracescore.ingest.cli.demo_traces import LlmStep, Scenario, emit_scenario
from tracescore.ingest.configuration.config_loader import load_config
from tracescore.ingest.service import Service

EMAIL = "jane.doe@example.com"
TICKET = "TICKET-884213"
LEAKED = "sk-live-abcdefghijklmnop1234"
SCENARIO = Scenario(
    agent="support_agent",
    system="You are the support assistant.",
    user=f"I am {EMAIL}, ticket {TICKET}; my old key {LEAKED} stopped working. Help?",
    steps=(
        LlmStep(
            text=f"Sorry {EMAIL}, I reopened {TICKET} and revoked the key.", input_tokens=9, output_tokens=9
        ),
    ),
)


def _send(service: Service) -> str:
    provider = TracerProvider(resource=Resource.create({"service.name": "support"}))
    exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{service.grpc.port}", insecure=True)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace_id = emit_scenario(provider.get_tracer("app"), SCENARIO, time.time_ns())
    provider.shutdown()
    return trace_id


async def _decisions(service: Service, trace_id: str) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 30
    while not (rows := await service.scores.trace_decisions(trace_id)):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.1)
    return rows


def _config(tmp_path: Path, llm_server: LLMServer, environ: dict[str, str], **scoring: Any) -> Any:
    file = tmp_path / "tracescore.yaml"
    file.write_text(
        "scoring:\n"
        f"  judge: {{model: openai/gpt-4o-mini, api_base: '{llm_server.api_base}', max_retries: 0}}\n"
        "  rules: [{scorer: toxicity}]\n"
    )
    overrides = {
        "store": str(tmp_path / "store"),
        "receiver.grpc_port": 0,
        "receiver.http_port": 0,
        "assembly.idle_seconds": 0.2,
        **{f"scoring.{key}": value for key, value in scoring.items()},
    }
    return load_config(file, overrides=overrides, environ=environ)


async def test_redaction_before_the_judge_leaves_the_stored_spans_whole(
    tmp_path: Path, llm_server: LLMServer
) -> None:
    llm_server.responder = answering({"verdicts": [{"verdict": "no", "reason": "polite"}]}, "It is polite.")
    redact = {"emails": True, "api_keys": True, "patterns": [r"TICKET-\d+"]}
    config = _config(
        tmp_path, llm_server, {"TRACESCORE_JUDGE_API_KEY": "sk-test-judgekey0001"}, redact=redact
    )
    async with running_service(config) as service:
        trace_id = await asyncio.to_thread(_send, service)
        [decision] = await _decisions(service, trace_id)
        stored = await service.store.query(
            "SELECT SpanAttributes['gen_ai.input.messages'] AS input FROM otel_traces "
            "WHERE TraceId = {t:String}",
            {"t": trace_id},
        )
    assert decision["decision"] == "scored"
    sent = "\n".join(str(m.get("content")) for r in llm_server.chat_requests for m in r.messages)
    assert llm_server.chat_requests and "[REDACTED]" in sent
    for secret in (EMAIL, TICKET, LEAKED):
        assert secret not in sent
    assert any(EMAIL in row["input"] and TICKET in row["input"] and LEAKED in row["input"] for row in stored)


@pytest.mark.parametrize("source", ["environment", "file"])
async def test_the_judge_key_is_in_no_log_row_metric_or_repr_after_a_failure(
    tmp_path: Path, llm_server: LLMServer, caplog: pytest.LogCaptureFixture, source: str
) -> None:
    key = "sk-test-9f8e7d6c5b4a3210zyxw"
    # OpenAI's 401 quotes the key it was given; so do some proxies, with the request's headers.
    llm_server.script(
        error_reply(401, content=f"Incorrect API key provided: {key}. Authorization: Bearer {key}")
    )
    if source == "file":
        secret_file = tmp_path / "judge-key"
        secret_file.write_text(key + "\n")
        environ = {"TRACESCORE_JUDGE_API_KEY_FILE": str(secret_file)}
    else:
        environ = {"TRACESCORE_JUDGE_API_KEY": key}
    config = _config(tmp_path, llm_server, environ)
    assert config.scoring.judge.api_key.get_secret_value() == key
    assert key not in repr(config) and key not in str(config.model_dump())
    with caplog.at_level(logging.DEBUG):
        async with running_service(config) as service:
            trace_id = await asyncio.to_thread(_send, service)
            [decision] = await _decisions(service, trace_id)
            async with (
                aiohttp.ClientSession() as session,
                session.get(f"http://127.0.0.1:{service.http.port}/metrics") as response,
            ):
                metrics = await response.text()
            stored_details = await service.store.query("SELECT Detail FROM score_decisions")
    assert llm_server.chat_requests[0].body  # the key was sent, and refused
    assert decision["decision"] == "failed" and "AuthenticationError" in decision["detail"]
    assert key not in decision["detail"] and "[REDACTED]" in decision["detail"]
    assert all(key not in row["Detail"] for row in stored_details)
    assert key not in metrics
    logged = "\n".join(record.getMessage() + str(record.exc_text or "") for record in caplog.records)
    assert "AuthenticationError" in logged and key not in logged
