"""The spans and score records the store tests write, with the ids and times they are checked against."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tracescore.schemas import ScoreRecord, Span, SpanEvent, SpanLink
from tracescore.schemas.spans import JsonValue

TRACE = "0af7651916cd43dd8448eb211c80319c"
OTHER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
ROOT_SPAN = "b7ad6b7169203331"
CHILD_SPAN = "00f067aa0ba902b7"
START = 1_700_000_000_123_456_789
CREATED = datetime(2025, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
LATER = datetime(2025, 1, 2, 3, 9, 0, 1, tzinfo=UTC)


def agent_span() -> Span:
    # Typed as JSON values: mypy infers no nested literal against the AttributeValue union.
    output_messages: JsonValue = [{"role": "assistant", "parts": [{"type": "text", "content": "hi"}]}]
    tags: JsonValue = ["a", 2, 0.5, False]
    nested: JsonValue = {"z": "é", "a": None}
    return Span(
        trace_id=TRACE,
        span_id=ROOT_SPAN,
        parent_span_id="",
        trace_state="vendor=x",
        name="invoke_agent weather",
        kind=3,
        start_time_unix_nano=START,
        end_time_unix_nano=START + 2_500_000_001,
        attributes={
            "gen_ai.system": "openai",
            "gen_ai.request.temperature": 0.7,
            "gen_ai.usage.input_tokens": 42,
            "stream": True,
            "ratio": 1.0,
            "tiny": 1.5e-7,
            "huge": 1e21,
            "raw": b"\x00\x01hi",
            "gen_ai.output.messages": output_messages,
            "tags": tags,
            "nested": nested,
        },
        events=[
            SpanEvent(name="gen_ai.choice", time_unix_nano=START + 1_000, attributes={"index": 0}),
            SpanEvent(
                name="exception",
                time_unix_nano=START + 2_000,
                attributes={"exception.type": "TimeoutError", "exception.escaped": False},
            ),
        ],
        links=[
            SpanLink(
                trace_id=OTHER_TRACE,
                span_id="53995c3f42cd8ad8",
                trace_state="k=v",
                attributes={"link.kind": "follows_from"},
            )
        ],
        status_code=2,
        status_message="upstream timeout",
        resource_attributes={"service.name": "weather-svc", "host.port": 8080},
        scope_name="agents.sdk",
        scope_version="1.2.3",
    )


def tool_span() -> Span:
    return Span(
        trace_id=TRACE,
        span_id=CHILD_SPAN,
        parent_span_id=ROOT_SPAN,
        name="execute_tool get_weather",
        kind=1,
        start_time_unix_nano=START + 5_000_000_000,
        end_time_unix_nano=START + 5_000_000_000,
        attributes={"gen_ai.tool.name": "get_weather"},
        status_code=1,
        resource_attributes={"service.name": "weather-svc"},
    )


def relevancy(**changes: Any) -> ScoreRecord:
    values: dict[str, Any] = {
        "trace_id": TRACE, "span_id": ROOT_SPAN, "scorer_id": "answer-relevancy", "score": 0.75,
        "label": "relevant", "reason": "answers the question",
        "step_results": {"statements": ["a", "b"], "n": 2},
        "judge_model": "gpt-4o-mini", "input_tokens": 120, "output_tokens": 30, "cost_usd": 0.0004,
        "latency_ms": 812.5, "sample_rate": 0.5, "scorer_version": "1", "source": "live",
        "agent_name": "weather_agent", "service_name": "weather-svc", "created_at": CREATED,
    }  # fmt: skip
    values.update(changes)
    return ScoreRecord(**values)
