"""``tracescore demo``: the main job end to end on the embedded store.

Starts the service on free loopback ports, sends realistic multi-step agent traces through the
OpenTelemetry SDK and its OTLP/gRPC exporter (GenAI semantic conventions, as the OpenTelemetry
GenAI instrumentations write them), waits until every trace is scored and prints the scores.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import SpanKind, Tracer, set_span_in_context
from rich.console import Console
from rich.table import Table

from ingest.service import Service
from schemas.config import DEFAULT_STORE, ServiceConfig, load_config

DEMO_IDLE_SECONDS = 0.5
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


# With a judge model, these LLM scorers join the heuristic ones (they read only input and output).
DEMO_LLM_SCORERS = ("answer-relevancy", "toxicity")


def demo_config(store: str | None, judge: dict[str, Any] | None = None) -> ServiceConfig:
    llm_rules = [{"scorer": name} for name in DEMO_LLM_SCORERS] if judge else []
    return load_config(
        overrides={
            "store": store or DEFAULT_STORE,
            "receiver.grpc_port": 0,
            "receiver.http_port": 0,
            "assembly.idle_seconds": DEMO_IDLE_SECONDS,
            "scoring.judge": judge,
            "scoring.rules": [
                {"scorer": "content-similarity"},
                {"scorer": "textual-difference"},
                {
                    "scorer": "tool-call-accuracy-code",
                    "options": {"expected_tool": "get_weather"},
                    "filter": {"agent_name": ["weather_agent"]},
                },
                {
                    "scorer": "tool-call-accuracy-code",
                    "options": {"expected_tool_order": ["search_flights", "search_hotels"]},
                    "filter": {"agent_name": ["travel_agent"]},
                },
                *llm_rules,
            ],
        },
        environ={},
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


async def _wait_for_decisions(service: Service, expected: dict[str, int], limit_s: float) -> None:
    deadline = time.monotonic() + limit_s
    pending = dict(expected)
    while pending:
        for trace_id, count in list(pending.items()):
            if len(await service.store.get_decisions(trace_id)) >= count:
                del pending[trace_id]
        if not pending:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(pending)} demo trace(s) not scored within {limit_s:.0f}s")
        await asyncio.sleep(0.2)


def _print_scores(
    console: Console, rows: list[tuple[Scenario, str, list[dict[str, Any]], list[dict[str, Any]]]]
) -> None:
    """One row per agent run, one column per scorer: the score, or why there is none."""
    scorer_ids = sorted({d["scorer_id"] for _, _, _, decisions in rows for d in decisions})
    table = Table(title="tracescore demo: scores of live agent runs")
    table.add_column("agent", no_wrap=True)
    table.add_column("trace", no_wrap=True)
    table.add_column("user input", max_width=30, overflow="ellipsis", no_wrap=True)
    for scorer_id in scorer_ids:
        words = scorer_id.removeprefix("code-").removesuffix("-scorer").split("-")
        header = " ".join(words[:-1]) + "\n" + words[-1] if len(words) > 1 else words[0]
        table.add_column(header, justify="right", no_wrap=True)
    for scenario, trace_id, scores, decisions in rows:
        values = {s["scorer_id"]: f"{s['score']:.3f}" for s in scores}
        reasons = {d["scorer_id"]: d["decision"] for d in decisions}
        cells = [values.get(sid) or f"[dim]{reasons.get(sid, '-')}[/dim]" for sid in scorer_ids]
        table.add_row(scenario.agent, trace_id[:8], scenario.user, *cells)
    console.print(table)


def _print_judge_spend(console: Console, scores: list[dict[str, Any]]) -> None:
    judged = [s for s in scores if s["judge_model"]]
    if judged:
        tokens_in = sum(s["input_tokens"] for s in judged)
        tokens_out = sum(s["output_tokens"] for s in judged)
        cost = sum(s["cost_usd"] for s in judged)
        models = ", ".join(sorted({s["judge_model"] for s in judged}))
        console.print(
            f"judge {models}: {len(judged)} scores, {tokens_in} input and {tokens_out} output tokens, "
            f"${cost:.6f}"
        )


async def run_demo(
    store: str | None = None, limit_s: float = 60.0, judge: dict[str, Any] | None = None
) -> int:
    """Run the demo; with ``judge`` (JudgeConfig fields) LLM-judge scorers score the runs too."""
    console = Console()
    if not console.is_terminal:  # piped (make run, CI logs): don't squeeze the table into 80 columns
        console = Console(width=max(console.width, 110))
    config = demo_config(store, judge)
    service = Service(config)
    await service.start()
    try:
        provider = TracerProvider(resource=Resource.create({"service.name": "tracescore-demo"}))
        exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{service.grpc.port}", insecure=True)
        provider.add_span_processor(BatchSpanProcessor(exporter))
        tracer = provider.get_tracer("tracescore.demo")
        start = time.time_ns()
        trace_ids = [emit_scenario(tracer, s, start + i * 5_000 * MS) for i, s in enumerate(SCENARIOS)]
        console.print(f"sent {len(trace_ids)} agent traces over OTLP/gRPC to 127.0.0.1:{service.grpc.port}")
        await asyncio.to_thread(provider.shutdown)  # flushes the exporter
        await _wait_for_decisions(service, {t: len(service.executor.scorer_ids) for t in trace_ids}, limit_s)
        rows = [
            (s, t, await service.store.get_scores(t), await service.store.get_decisions(t))
            for s, t in zip(SCENARIOS, trace_ids, strict=True)
        ]
        _print_scores(console, rows)
        _print_judge_spend(console, [score for _, _, scores, _ in rows for score in scores])
        console.print(
            f"spans and scores are in {service.store.description} "
            "(tables otel_traces, scores, score_decisions)"
        )
    finally:
        await service.shutdown()
    return 0
