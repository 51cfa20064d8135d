"""Multi-turn conversations written by the real OTel SDK, each turn its own trace, carrying the
session attributes real frameworks write: OpenInference's ``session.id`` on an AGENT span (with a
TOOL span below), and the Vercel AI SDK's ``ai.telemetry.metadata.sessionId`` on ``ai.generateText``
(the shapes of tests/fixtures/conventions/otlp/openinference__main and vercel_ai_sdk__main)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode, Tracer

from tracescore.ingest.store.clickhouse import Store

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


@dataclass(frozen=True)
class SessionRows:
    """What a stopped service left of its session scores, read from the store through FINAL."""

    scores: dict[tuple[str, str], tuple[str, str, float, int]]  # (session, scorer) -> (trace, span, score, n)
    decisions: dict[tuple[str, str], int]  # (session, scorer) -> current decision rows
    by_scorer: dict[str, int]  # scorer -> rows of scores_by_scorer (what dashboards and drift read)


def session_rows(store_dir: Path, scorers: Sequence[str]) -> SessionRows:
    """The session score and decision rows of a stopped service's embedded store."""

    async def read() -> SessionRows:
        store = Store(str(store_dir))
        await store.start()
        try:
            scores = await store.query(
                "SELECT SessionId, ScorerId, any(TraceId) AS T, any(SpanId) AS S, any(Score) AS V, "
                "count() AS n FROM scores FINAL WHERE SessionId != '' GROUP BY SessionId, ScorerId"
            )
            decisions = await store.query(
                "SELECT SessionId, ScorerId, count() AS n FROM score_decisions FINAL "
                "WHERE SessionId != '' GROUP BY SessionId, ScorerId"
            )
            by_scorer = await store.query(
                "SELECT ScorerId, count() AS n FROM scores_by_scorer FINAL "
                "WHERE ScorerId IN {scorers:Array(String)} GROUP BY ScorerId",
                {"scorers": list(scorers)},
            )
        finally:
            await store.shutdown()
        return SessionRows(
            {(r["SessionId"], r["ScorerId"]): (r["T"], r["S"], float(r["V"]), int(r["n"])) for r in scores},
            {(r["SessionId"], r["ScorerId"]): int(r["n"]) for r in decisions},
            {r["ScorerId"]: int(r["n"]) for r in by_scorer},
        )

    return asyncio.run(read())
