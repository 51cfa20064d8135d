"""The demo's agent runs, written as OpenTelemetry spans the way the GenAI instrumentations write them.

Each ``Scenario`` is one multi-step agent run (tool calls and their results, history, usage);
``emit_scenario`` writes it through an OpenTelemetry ``Tracer`` with the GenAI semantic conventions
(v1.37+ attributes).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.trace import SpanKind, Tracer, set_span_in_context

MS = 1_000_000


@dataclass(frozen=True)
class ToolStep:
    call_id: str
    name: str
    args: dict[str, Any]
    result: str


@dataclass(frozen=True)
class LlmStep:
    tool_calls: tuple[ToolStep, ...] = ()
    text: str = ""
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class Scenario:
    agent: str
    system: str
    user: str
    steps: tuple[LlmStep, ...]
    history: tuple[tuple[str, str], ...] = field(default=())
    model: str = "gpt-4o"


SCENARIOS = (
    Scenario(
        agent="weather_agent",
        system="You are a helpful weather assistant. Use the get_weather tool.",
        history=(
            ("user", "Hi, I am planning a trip to France."),
            ("assistant", "Great! How can I help with your trip?"),
        ),
        user="What's the weather in Paris?",
        steps=(
            LlmStep(
                tool_calls=(ToolStep("call_w1", "get_weather", {"location": "Paris"}, "rainy, 57°F"),),
                input_tokens=47,
                output_tokens=17,
            ),
            LlmStep(
                text="The weather in Paris is currently rainy with a temperature of 57°F.",
                input_tokens=97,
                output_tokens=52,
            ),
        ),
    ),
    Scenario(
        agent="weather_agent",
        system="You are a helpful weather assistant. Use the get_weather tool.",
        user="Will it rain in Tokyo tomorrow?",
        steps=(
            LlmStep(
                tool_calls=(
                    ToolStep(
                        "call_w2",
                        "web_search",
                        {"query": "Tokyo rain tomorrow"},
                        '[{"title": "Tokyo forecast", "snippet": "Showers likely Tuesday"}]',
                    ),
                ),
                input_tokens=41,
                output_tokens=15,
            ),
            LlmStep(
                text="Showers are likely in Tokyo tomorrow, so pack an umbrella.",
                input_tokens=88,
                output_tokens=19,
            ),
        ),
    ),
    Scenario(
        agent="travel_agent",
        system="You plan trips. Search flights before hotels and quote prices in euros.",
        user="Find me a flight from Berlin to Lisbon on May 3 and a hotel near the old town.",
        steps=(
            LlmStep(
                tool_calls=(
                    ToolStep(
                        "call_t1",
                        "search_flights",
                        {"from": "BER", "to": "LIS", "date": "2027-05-03"},
                        '{"flight": "TP 557", "departs": "09:40", "price_eur": 142}',
                    ),
                ),
                input_tokens=120,
                output_tokens=31,
            ),
            LlmStep(
                tool_calls=(
                    ToolStep(
                        "call_t2",
                        "search_hotels",
                        {"city": "Lisbon", "area": "Alfama"},
                        '{"hotel": "Memmo Alfama", "price_eur": 189}',
                    ),
                ),
                input_tokens=171,
                output_tokens=28,
            ),
            LlmStep(
                text="Flight TP 557 leaves Berlin at 09:40 on May 3 for 142 euros, and Memmo Alfama "
                "in the old town has a room for 189 euros a night.",
                input_tokens=230,
                output_tokens=44,
            ),
        ),
    ),
    Scenario(
        agent="support_agent",
        system="You are the support assistant of Acme Cloud. Answer briefly.",
        history=(
            ("user", "I can't log in."),
            ("assistant", "Sorry to hear that. Do you remember your password?"),
        ),
        user="No. How do I reset my password?",
        steps=(
            LlmStep(
                text="Click 'Forgot password' on the login page and follow the link we email you.",
                input_tokens=64,
                output_tokens=21,
            ),
        ),
    ),
)


def _text(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def emit_scenario(tracer: Tracer, scenario: Scenario, start_ns: int) -> str:
    """Write one agent run as the GenAI semantic conventions (v1.37+) describe it; return its trace id."""
    now = start_ns
    user_msg = _text("user", scenario.user)
    agent = tracer.start_span(
        f"invoke_agent {scenario.agent}",
        kind=SpanKind.INTERNAL,
        start_time=now,
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": scenario.agent,
            "gen_ai.request.model": scenario.model,
            "gen_ai.input.messages": json.dumps([user_msg]),
        },
    )
    ctx = set_span_in_context(agent)
    messages = [_text("system", scenario.system), *(_text(r, t) for r, t in scenario.history), user_msg]
    final = ""
    for step in scenario.steps:
        now += 40 * MS
        output: dict[str, Any]
        if step.tool_calls:
            output = {
                "role": "assistant",
                "finish_reason": "tool_calls",
                "parts": [
                    {"type": "tool_call", "id": t.call_id, "name": t.name, "arguments": t.args}
                    for t in step.tool_calls
                ],
            }
        else:
            output = {
                "role": "assistant",
                "finish_reason": "stop",
                "parts": [{"type": "text", "content": step.text}],
            }
            final = step.text
        chat = tracer.start_span(
            f"chat {scenario.model}",
            context=ctx,
            kind=SpanKind.CLIENT,
            start_time=now,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "openai",
                "gen_ai.request.model": scenario.model,
                "gen_ai.response.model": f"{scenario.model}-2024-08-06",
                "gen_ai.usage.input_tokens": step.input_tokens,
                "gen_ai.usage.output_tokens": step.output_tokens,
                "gen_ai.response.finish_reasons": [output["finish_reason"]],
                "gen_ai.input.messages": json.dumps(messages),
                "gen_ai.output.messages": json.dumps([output]),
            },
        )
        now += 600 * MS
        chat.end(end_time=now)
        messages = [*messages, output]
        for tool in step.tool_calls:
            now += 2 * MS
            span = tracer.start_span(
                f"execute_tool {tool.name}",
                context=ctx,
                kind=SpanKind.INTERNAL,
                start_time=now,
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": tool.name,
                    "gen_ai.tool.type": "function",
                    "gen_ai.tool.call.id": tool.call_id,
                    "gen_ai.tool.call.arguments": json.dumps(tool.args),
                    "gen_ai.tool.call.result": tool.result,
                },
            )
            now += 150 * MS
            span.end(end_time=now)
            messages = [
                *messages,
                {
                    "role": "tool",
                    "parts": [{"type": "tool_call_response", "id": tool.call_id, "response": tool.result}],
                },
            ]
    agent.set_attribute(
        "gen_ai.output.messages",
        json.dumps(
            [{"role": "assistant", "finish_reason": "stop", "parts": [{"type": "text", "content": final}]}]
        ),
    )
    agent.end(end_time=now + 5 * MS)
    return format(agent.get_span_context().trace_id, "032x")
