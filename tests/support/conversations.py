"""Multi-turn conversations written by the real OTel SDK, each turn its own trace, carrying the
session attributes real frameworks write: OpenInference's ``session.id`` on an AGENT span (with a
TOOL span below), and the Vercel AI SDK's ``ai.telemetry.metadata.sessionId`` on ``ai.generateText``
(the shapes of tests/fixtures/conventions/otlp/openinference__main and vercel_ai_sdk__main)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Literal

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode, Tracer

Convention = Literal["openinference", "vercel"]
TURN_NS = 1_000_000_000  # a turn starts a second after the one before


@dataclass(frozen=True)
class Turn:
    user: str
    answer: str
    tool_failed: bool | None = None  # OpenInference turns: a tool span, failed or not; None: no tool


@dataclass(frozen=True)
class SentTurn:
    """One turn as sent: its trace, its run's root span, its OTLP protobuf export request."""

    trace_id: str
    root_span_id: str
    request: bytes


def conversation(
    session_id: str, convention: Convention, turns: list[Turn], start_ns: int | None = None
) -> list[SentTurn]:
    """The turns of one conversation, each an OTLP export request of its own trace."""
    start = start_ns if start_ns is not None else time.time_ns()
    return [_turn(session_id, convention, turn, start + i * TURN_NS) for i, turn in enumerate(turns)]


def _turn(session_id: str, convention: Convention, turn: Turn, start: int) -> SentTurn:
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": f"{convention}-chat"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer(convention)
    if convention == "openinference":
        root = _openinference(tracer, session_id, turn, start)
    else:
        root = _vercel(tracer, session_id, turn, start)
    provider.shutdown()
    trace_id, span_id = root
    return SentTurn(trace_id, span_id, encode_spans(memory.get_finished_spans()).SerializeToString())


def _openinference(tracer: Tracer, session_id: str, turn: Turn, start: int) -> tuple[str, str]:
    agent = tracer.start_span("support_agent", start_time=start)
    agent.set_attributes(
        {
            "openinference.span.kind": "AGENT",
            "session.id": session_id,
            "input.value": turn.user,
            "input.mime_type": "text/plain",
            "output.value": turn.answer,
            "output.mime_type": "text/plain",
        }
    )
    if turn.tool_failed is not None:
        from opentelemetry import trace

        with trace.use_span(agent):
            tool = tracer.start_span("lookup_order", start_time=start + 1_000_000)
            tool.set_attributes(
                {
                    "openinference.span.kind": "TOOL",
                    "session.id": session_id,
                    "tool.name": "lookup_order",
                    "input.value": json.dumps({"order": "A-17"}),
                    "input.mime_type": "application/json",
                    "output.value": "timeout" if turn.tool_failed else "shipped",
                }
            )
            if turn.tool_failed:
                tool.set_status(Status(StatusCode.ERROR, "timeout"))
            tool.end(end_time=start + 2_000_000)
    agent.end(end_time=start + 5_000_000)
    context = agent.get_span_context()
    return format(context.trace_id, "032x"), format(context.span_id, "016x")


def _vercel(tracer: Tracer, session_id: str, turn: Turn, start: int) -> tuple[str, str]:
    span = tracer.start_span("ai.generateText", start_time=start)
    span.set_attributes(
        {
            "operation.name": "ai.generateText support-agent",
            "resource.name": "support-agent",
            "ai.operationId": "ai.generateText",
            "ai.telemetry.functionId": "support-agent",
            "ai.model.provider": "openai.chat",
            "ai.model.id": "gpt-4o",
            "ai.telemetry.metadata.sessionId": session_id,
            "ai.prompt": json.dumps({"messages": [{"role": "user", "content": turn.user}]}),
            "ai.response.finishReason": "stop",
            "ai.response.text": turn.answer,
        }
    )
    span.end(end_time=start + 5_000_000)
    context = span.get_span_context()
    return format(context.trace_id, "032x"), format(context.span_id, "016x")
