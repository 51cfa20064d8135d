"""Rules end to end: spans from the OTel SDK over OTLP/gRPC, units and filters, rows in the store.

A travel agent run makes 3 model calls and 2 tool calls; a weather run 2 model calls and 1 tool call.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.service import running_service, service_config
from tracescore.ingest.cli.demo_traces import SCENARIOS, emit_scenario
from tracescore.ingest.service import Service

WEATHER, TRAVEL = SCENARIOS[0], SCENARIOS[2]

RULES: list[dict[str, Any]] = [
    # One score per model call, on the model call's span.
    {"scorer": "check-max-tool-calls", "name": "per-call", "options": {"max": 1}, "target": "llm_call"},
    # One score per tool span (the run's content, the score on the tool's span).
    {
        "scorer": "check-no-tool-errors",
        "name": "per-tool-span",
        "target": {"span": {"name": {"regex": "^execute_tool "}}},
    },
    # Root-span attribute and resource attribute tests.
    {
        "scorer": "check-used-no-tools",
        "name": "travel-only",
        "filter": {
            "attributes": {"gen_ai.agent.name": "travel_agent"},
            "resource_attributes": {"deployment.environment": {"in": ["production", "staging"]}},
        },
    },
    # "The trace contains a span where ...".
    {
        "scorer": "check-used-no-tools",
        "name": "hotel-traces",
        "filter": {"trace_has": {"name": "execute_tool search_hotels", "operation": ["execute_tool"]}},
    },
    # A team's own scorer by import path, with options.
    {
        "use": "tests.scoring.custom_scorers:create_answer_length_scorer",
        "name": "length",
        "options": {"target_words": 24},
        "filter": {"min_duration_ms": 1000, "operation": ["invoke_agent"]},
    },
]


def _send(service: Service) -> tuple[dict[str, str], dict[str, list[tuple[str, str]]]]:
    """Both runs through the SDK's gRPC exporter; their trace ids, and each trace's (span name, id)."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create({"service.name": "agents", "deployment.environment": "production"})
    )
    provider.add_span_processor(SimpleSpanProcessor(memory))
    provider.add_span_processor(
        SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"127.0.0.1:{service.grpc.port}", insecure=True))
    )
    tracer = provider.get_tracer("rules-e2e")
    start = time.time_ns()
    trace_ids = {
        "weather": emit_scenario(tracer, WEATHER, start),
        "travel": emit_scenario(tracer, TRAVEL, start),
    }
    provider.shutdown()
    spans: dict[str, list[tuple[str, str]]] = {}
    for span in memory.get_finished_spans():
        spans.setdefault(format(span.context.trace_id, "032x"), []).append(
            (span.name, format(span.context.span_id, "016x"))
        )
    return trace_ids, spans


async def _decisions(service: Service, trace_id: str, count: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 30
    while True:
        rows = await service.scores.trace_decisions(trace_id)
        if len(rows) >= count:
            return rows
        assert time.monotonic() < deadline, rows
        await asyncio.sleep(0.1)


async def test_units_filters_and_targets_through_the_service(tmp_path: Path) -> None:
    async with running_service(service_config(tmp_path, **{"scoring.rules": RULES})) as service:
        assert service.executor.wants_llm_calls
        trace_ids, spans = await asyncio.to_thread(_send, service)
        weather, travel = trace_ids["weather"], trace_ids["travel"]
        # travel: 3 calls + 2 tool spans + 3 run rules; weather: 2 calls + 1 tool span + 3 run rules
        travel_decisions = await _decisions(service, travel, 8)
        weather_decisions = await _decisions(service, weather, 6)
        travel_scores = await service.scores.trace_scores(travel)

    def ids(trace_id: str, prefix: str) -> set[str]:
        return {span_id for name, span_id in spans[trace_id] if name.startswith(prefix)}

    def scored_on(rows: list[dict[str, Any]], scorer: str) -> set[str]:
        return {r["span_id"] for r in rows if r["scorer_id"] == scorer}

    travel_root = ids(travel, "invoke_agent").pop()
    per_call = [r for r in travel_scores if r["scorer_id"] == "per-call"]
    assert len(per_call) == 3 and {r["span_id"] for r in per_call} == ids(travel, "chat ")
    assert all(r["score"] == 1.0 for r in per_call)  # each call made at most one tool call
    assert (
        scored_on(travel_scores, "per-tool-span") == ids(travel, "execute_tool ")
        and len(ids(travel, "execute_tool ")) == 2
    )
    assert scored_on(travel_scores, "travel-only") == {travel_root}
    assert scored_on(travel_scores, "hotel-traces") == {travel_root}
    assert scored_on(travel_scores, "length") == {travel_root}

    weather_by_scorer = {
        d["scorer_id"]: d for d in weather_decisions if d["span_id"] in ids(weather, "invoke_agent")
    }
    assert weather_by_scorer["travel-only"]["decision"] == "filtered"
    assert "does not pass the filter's span tests" in weather_by_scorer["travel-only"]["detail"]
    assert weather_by_scorer["hotel-traces"]["decision"] == "filtered"
    assert "trace_has[0]" in weather_by_scorer["hotel-traces"]["detail"]
    assert weather_by_scorer["length"]["decision"] == "scored"  # the run lasts over a second
    weather_calls = {d["span_id"] for d in weather_decisions if d["scorer_id"] == "per-call"}
    assert weather_calls == ids(weather, "chat ")
    # Every unit has exactly one decision per rule that targets it.
    assert len(travel_decisions) == 3 + 2 + 3 and len(weather_decisions) == 2 + 1 + 3
