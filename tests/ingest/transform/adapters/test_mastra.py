"""The Mastra adapter (1.x observability, otel-exporter 0.x, 0.x built-in telemetry) through the
transform, on the convention fixtures and on hand-built spans for the shapes the fixtures lack.

Expected values are written by hand from the spans (FIELD-GUIDE section 4, mastra-ai/mastra's
otel-exporter ``gen-ai-semantics.ts`` / ``gen-ai-messages.ts`` / ``span-converter.ts``, its model
tracing, and the recorded 0.x trace of openinference-mastra), never computed by the code under test.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.conventions import adapter_name
from tests.support.fixture_files import all_otlp_fixture_names, load_otlp_spans, make_span
from tests.support.runs import invocations, only_run, parts, texts
from tracescore.ingest.transform.adapters import ADAPTERS, SpanRole
from tracescore.ingest.transform.adapters.mastra_messages import convert_messages, split_new_turn
from tracescore.ingest.transform.adapters.mastra_tracing import MastraAdapter
from tracescore.ingest.transform.runs import build_runs
from tracescore.schemas import Span
from tracescore.schemas.agent_run import Role
from tracescore.schemas.spans import STATUS_ERROR, JsonValue

ADAPTER = MastraAdapter()
MAIN = "mastra__main"
EXPORTER_0X = "mastra__mastra-otel-exporter-0-x-ai-tracing-oct-2025-agent-id-chat-m"
CHUNKS = "mastra__model-chunk-spans-from-the-same-1-x-run-streamed-reasoning-t"
WEATHER_PROMPT = "You are a helpful weather assistant. Use the weatherTool to fetch current weather data."
CALL_ID = "call_VSPygqKTWdrhaFErNvMV18Yl"
PARIS = {"location": "Paris", "conditions": "rainy", "temperatureF": 57}
FINAL = "The weather in Paris is currently rainy with a temperature of 57°F."


def roles(spans: list[Span]) -> dict[str, SpanRole]:
    return {s.name + "@" + s.span_id: ADAPTER.classify(s) for s in spans if ADAPTER.claims(s)}


def mastra_span(span_id: str, parent: str, name: str, start: int, **attrs: Any) -> Span:
    return make_span(span_id, parent, attrs, start=start, end=start + 50, name=name).model_copy(
        update={"scope_name": "@mastra/otel-exporter"}
    )


# --- the convention fixtures ---------------------------------------------------------------------------


def test_main_fixture_1x_gives_one_faithful_run() -> None:
    run = only_run(build_runs(load_otlp_spans(MAIN)))

    assert (run.trace_id, run.span_id) == ("ee6143b5d5ff162c082194f5d33d6f4c", "d1c2ea03db20f58e")
    assert run.agent_name == "Weather Agent"  # gen_ai.agent.name, not the id "weather-agent"
    assert run.service_name == "weather-agent-demo"
    assert run.model == "gpt-4o"  # gen_ai.request.model of the chat spans
    assert run.status == "ok"
    # mastra.agent_run.input holds the whole conversation: the trailing user turn is the input.
    assert texts(run.input.input_messages) == [("user", "What's the weather in Paris?")]
    assert texts(run.input.remembered_messages) == [
        ("user", "Hi, I am planning a trip to France."),
        ("assistant", "Great! How can I help with your trip?"),
    ]
    assert texts(run.input.system_messages) == [("system", WEATHER_PROMPT)]

    # One message per chat (model_inference) span; the tool span (a child of agent_step, not of
    # chat) joins the step before it, as an invocation and a tool_call part. chat 1 wrote an empty
    # text part: no content, no text part.
    first, final = run.output
    assert (first.content, first.reasoning) == ("", None)
    assert [(p.type, p.model_extra) for p in first.parts] == [
        ("tool_call", {"tool_call_id": CALL_ID, "tool_name": "weatherTool", "args": {"location": "Paris"}})
    ]
    assert invocations(first) == [
        {
            "tool_call_id": CALL_ID,
            "tool_name": "weatherTool",
            "args": {"location": "Paris"},
            "result": PARIS,
            "state": "result",
        }
    ]
    assert texts([final]) == [("assistant", FINAL)]
    assert final.tool_invocations == []
    # chat 1: 47 in / 17 out; chat 2: 97 in / 52 out. model_generation / agent_step carry none.
    assert (run.usage.input_tokens, run.usage.output_tokens) == (144, 69)
    assert run.content_missing is False


def test_main_fixture_has_exactly_one_model_call_level() -> None:
    spans = load_otlp_spans(MAIN)
    assert all(ADAPTER.claims(s) for s in spans)
    assert sorted(roles(spans).items()) == sorted(
        {
            "invoke_agent Weather Agent@d1c2ea03db20f58e": SpanRole.AGENT,
            "model_generation gpt-4o@11539d2aab0752aa": SpanRole.OTHER,  # the loop around the steps
            "agent_step Weather Agent@a073a861f7872644": SpanRole.OTHER,  # a lossy summary
            "agent_step Weather Agent@3fc49d724955cf39": SpanRole.OTHER,
            "chat gpt-4o@555914cb5f7973dc": SpanRole.LLM,
            "chat gpt-4o@452bd40add83df55": SpanRole.LLM,
            "execute_tool weatherTool@6fa6cf90fc4aae48": SpanRole.TOOL,
        }.items()
    )


def test_model_chunk_spans_are_noise() -> None:
    chunks = load_otlp_spans(CHUNKS)
    assert [ADAPTER.classify(s) for s in chunks] == [SpanRole.OTHER] * 4
    # Alone (their chat parents are in the main trace) they are no run at all ...
    assert build_runs(chunks) == []
    # ... and added to their trace they change nothing.
    main = build_runs(load_otlp_spans(MAIN))
    assert build_runs([*load_otlp_spans(MAIN), *chunks]) == main


def test_otel_exporter_0x_fixture() -> None:
    spans = load_otlp_spans(EXPORTER_0X)
    # No mastra.span.type on these spans: agent.id, the bare gen_ai.prompt and gen_ai.tool.* tell them.
    assert [adapter_name(s) for s in spans] == ["mastra"] * 3
    assert [ADAPTER.classify(s) for s in spans] == [SpanRole.AGENT, SpanRole.LLM, SpanRole.TOOL]

    run = only_run(build_runs(spans))
    assert (run.span_id, run.agent_name, run.model) == ("c220b21d3a1505a3", "support-agent", "gpt-4")
    # gen_ai.prompt = {"messages": [user Hello, assistant Hi there!]}: it ends on the assistant (an
    # answer the model continues), so the user's Hello is the input and the assistant text is kept
    # as part of the prompt, in the remembered messages; it is not the output.
    assert texts(run.input.input_messages) == [("user", "Hello")]
    assert texts(run.input.remembered_messages) == [("assistant", "Hi there!")]
    [answer] = run.output
    assert texts([answer]) == [("assistant", "How can I help?")]  # gen_ai.completion {content, role}
    # tool.execute has no call id in 0.x: it joins the step before it.
    assert invocations(answer) == [
        {
            "tool_call_id": "",
            "tool_name": "calculator",
            "args": {"expression": "2 + 2"},
            "result": {"result": 4},
            "state": "result",
        }
    ]
    assert (run.usage.input_tokens, run.usage.output_tokens) == (100, 50)


def test_spans_of_the_other_conventions_are_not_claimed() -> None:
    others = [n for n in all_otlp_fixture_names() if not n.startswith("mastra__")]
    assert len(others) >= 6
    claimed = [(n, s.name) for n in others for s in load_otlp_spans(n) if ADAPTER.claims(s)]
    assert claimed == []


# --- 1.x shapes the fixtures lack ------------------------------------------------------------------


def test_1x_without_model_inference_the_generation_is_the_chat_span() -> None:
    """Older core/exporter pairs: model_generation is exported as ``chat`` with converted messages
    and the usage of the whole generation; model_step spans (no usage) must not add a second level."""
    prompt = [
        {"role": "system", "parts": [{"type": "text", "content": "Be terse."}]},
        {"role": "user", "parts": [{"type": "text", "content": "Weather in Oslo?"}]},
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "call_1", "name": "weather", "arguments": '{"city":"Oslo"}'}
            ],
        },
        {
            "role": "tool",
            "parts": [
                {"type": "tool_call_response", "id": "call_1", "name": "weather", "response": '{"tempC":3}'}
            ],
        },
        # A message the exporter could not convert (an image part) stays raw inside the list.
        {
            "role": "user",
            "content": [
                {"type": "image", "image": "https://x/cat.png", "mediaType": "image/png"},
                {"type": "text", "text": "And this picture?"},
            ],
        },
    ]
    spans = [
        mastra_span(
            "a000000000000001",
            "",
            "invoke_agent Helper",
            100,
            **{
                "gen_ai.operation.name": "invoke_agent",
                "mastra.span.type": "agent_run",
                "gen_ai.agent.name": "Helper",
                "gen_ai.system_instructions": "Be terse.",
                "mastra.agent_run.input": json.dumps(
                    [
                        {
                            "role": "user",
                            "content": [
                                {"type": "image", "image": "https://x/cat.png"},
                                {"type": "text", "text": "And this picture?"},
                            ],
                        }
                    ]
                ),
            },
        ),
        mastra_span(
            "b000000000000001",
            "a000000000000001",
            "chat gpt-4o-mini",
            110,
            **{
                "gen_ai.operation.name": "chat",
                "mastra.span.type": "model_generation",
                "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.input.messages": json.dumps(prompt),
                "gen_ai.output.messages": json.dumps(
                    [
                        {
                            "role": "assistant",
                            "parts": [{"type": "text", "content": "Oslo is 3°C; the picture is a cat."}],
                        }
                    ]
                ),
                "gen_ai.usage.input_tokens": 300,
                "gen_ai.usage.output_tokens": 40,
            },
        ),
        mastra_span(
            "c000000000000001",
            "b000000000000001",
            "step: 0",
            120,
            **{
                "gen_ai.operation.name": "model_step",
                "mastra.span.type": "model_step",
                "mastra.model_step.output": json.dumps(
                    {"text": "Oslo is 3°C; the picture is a cat.", "toolCalls": []}
                ),
            },
        ),
    ]
    assert [ADAPTER.classify(s) for s in spans] == [SpanRole.AGENT, SpanRole.LLM, SpanRole.OTHER]
    run = only_run(build_runs(spans))
    assert run.model == "gpt-4o-mini"
    assert (run.usage.input_tokens, run.usage.output_tokens) == (300, 40)
    [turn] = run.input.input_messages
    assert turn.content == "And this picture?"
    assert parts(turn)[0] == {"type": "image", "image": "https://x/cat.png"}  # kept as a part
    assert texts(run.input.system_messages) == [("system", "Be terse.")]  # once, not twice
    # The agent span holds only the new turn, so the history comes from the model call's prompt.
    assert texts(run.input.remembered_messages) == [
        ("user", "Weather in Oslo?"),
        ("assistant", ""),
        ("tool", '{"tempC": 3}'),
    ]
    assert parts(run.input.remembered_messages[1]) == [
        {"type": "tool_call", "tool_call_id": "call_1", "tool_name": "weather", "args": {"city": "Oslo"}}
    ]
    assert texts(run.output) == [("assistant", "Oslo is 3°C; the picture is a cat.")]


def test_exporter_older_than_core_leaves_model_inference_unmarked_and_it_stays_other() -> None:
    """When the exporter does not know model_inference spans it exports them as
    ``model_inference`` (no usage); model_generation is then the ``chat`` span."""
    inference = mastra_span(
        "c000000000000001",
        "b000000000000001",
        "inference: 0",
        120,
        **{
            "gen_ai.operation.name": "model_inference",
            "mastra.span.type": "model_inference",
            "mastra.model_inference.output": json.dumps({"text": "hi"}),
        },
    )
    generation = mastra_span(
        "b000000000000001",
        "",
        "chat gpt-4o",
        100,
        **{
            "gen_ai.operation.name": "chat",
            "mastra.span.type": "model_generation",
        },
    )
    assert (ADAPTER.classify(inference), ADAPTER.classify(generation)) == (SpanRole.OTHER, SpanRole.LLM)


def test_1x_tool_kinds_errors_and_redaction() -> None:
    spans = [
        mastra_span(
            "a000000000000001",
            "",
            "invoke_agent Ops",
            100,
            **{
                "gen_ai.operation.name": "invoke_agent",
                "mastra.span.type": "agent_run",
                "gen_ai.agent.id": "ops",
                "mastra.agent_run.input": '"restart the db"',
            },
        ),
        mastra_span(
            "c000000000000001",
            "a000000000000001",
            "chat unknown",
            200,
            **{
                "gen_ai.operation.name": "chat",
                "mastra.span.type": "model_inference",
                "gen_ai.request.model": "unknown",
                "gen_ai.response.model": "claude-sonnet-4",
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": ""}]}]
                ),
                "gen_ai.usage.input_tokens": 10,
                "gen_ai.usage.output_tokens": 2,
            },
        ),
        mastra_span(
            "d000000000000001",
            "a000000000000001",
            "execute_tool db_restart",
            300,
            **{
                "gen_ai.operation.name": "execute_tool",
                "mastra.span.type": "mcp_tool_call",
                "gen_ai.tool.name": "db_restart",
                "gen_ai.tool.call.id": "call_9",
                "gen_ai.tool.call.arguments": '{"db":"main"}',
                "error.type": "unknown",
                "error.message": "permission denied",
            },
        ).model_copy(update={"status_code": STATUS_ERROR}),
        mastra_span(
            "d000000000000002",
            "a000000000000001",
            "execute_tool secrets",
            400,
            **{
                "gen_ai.operation.name": "execute_tool",
                "mastra.span.type": "tool_call",
                "gen_ai.tool.call.id": "call_10",
                "gen_ai.tool.call.arguments": '{"key":"x"}',
                "gen_ai.tool.call.result": "[REDACTED]",
            },
        ),
        mastra_span(
            "d000000000000003",
            "a000000000000001",
            "execute_tool pickFile",
            500,
            **{
                "gen_ai.operation.name": "client_tool_call",
                "mastra.span.type": "client_tool_call",
                "mastra.metadata.toolCallId": "call_11",
                "mastra.metadata.toolName": "pickFile",
            },
        ),
    ]
    run = only_run(build_runs(spans))
    assert run.agent_name == "ops"  # only the id is recorded
    assert texts(run.input.input_messages) == [("user", "restart the db")]  # a bare string input
    assert run.model == "claude-sonnet-4"  # "unknown" names no model
    assert [
        (i["tool_call_id"], i["tool_name"], i["args"], i["result"], i["state"])
        for i in invocations(run.output[0])
    ] == [
        ("call_9", "db_restart", {"db": "main"}, "permission denied", "error"),
        ("call_10", "secrets", {"key": "x"}, None, "call"),  # the placeholder is no result
        ("call_11", "pickFile", {}, None, "call"),  # runs on the client: no result here
    ]


def test_agent_input_ending_on_client_tool_results_takes_them_as_the_new_turn() -> None:
    conversation = [
        {"role": "user", "content": "Pick a file"},
        {
            "role": "assistant",
            "content": [{"type": "tool-call", "toolCallId": "c1", "toolName": "pickFile", "input": {}}],
        },
        {
            "role": "tool",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": "c1",
                    "toolName": "pickFile",
                    "output": {"type": "json", "value": {"path": "/a.txt"}},
                }
            ],
        },
    ]
    messages = convert_messages(json.dumps(conversation), "a000000000000001", "in", "user")
    earlier, new_turn = split_new_turn(messages)
    assert [m.role for m in earlier] == ["user", "assistant"]
    assert [parts(m) for m in new_turn] == [
        [{"type": "tool_result", "tool_call_id": "c1", "result": {"path": "/a.txt"}}]
    ]


def test_agent_output_is_the_answer_when_no_model_call_recorded_it() -> None:
    """With model spans excluded (``excludeSpanTypes``), the agent span's output is all there is:
    reasoning goes to ``reasoning``, tool calls join their tool spans by id."""
    output = {
        "text": "Done: 2 + 2 = 4.",
        "reasoningText": "Use the calculator.",
        "toolCalls": [{"toolCallId": "t1", "toolName": "calc", "args": {"e": "2+2"}}],
        "files": [],
    }
    spans = [
        mastra_span(
            "a000000000000001",
            "",
            "invoke_agent Math",
            100,
            **{
                "gen_ai.operation.name": "invoke_agent",
                "mastra.span.type": "agent_run",
                "gen_ai.agent.name": "Math",
                "mastra.agent_run.input": '[{"role":"user","content":"2+2?"}]',
                "mastra.agent_run.output": json.dumps(output),
            },
        ),
        mastra_span(
            "d000000000000001",
            "a000000000000001",
            "execute_tool calc",
            200,
            **{
                "gen_ai.operation.name": "execute_tool",
                "mastra.span.type": "tool_call",
                "gen_ai.tool.call.id": "t1",
                "gen_ai.tool.call.result": "4",
            },
        ),
    ]
    [answer] = only_run(build_runs(spans)).output
    assert (answer.content, answer.reasoning) == ("Done: 2 + 2 = 4.", "Use the calculator.")
    assert invocations(answer) == [
        {"tool_call_id": "t1", "tool_name": "calc", "args": {"e": "2+2"}, "result": 4, "state": "result"}
    ]


# --- otel-exporter 0.x shapes ----------------------------------------------------------------------


def test_0x_exporter_raw_completion_with_reasoning_and_tool_calls() -> None:
    completion = {
        "text": "",
        "reasoning": "The user wants a sum.",  # AI SDK v4 results: reasoning is the text
        "toolCalls": [
            {
                "type": "tool-call",
                "toolCallId": "call_7",
                "toolName": "calculator",
                "args": {"expression": "2 + 2"},
            }
        ],
    }
    spans = [
        make_span(
            "a000000000000001",
            "",
            {
                "gen_ai.operation.name": "agent.run",
                "mastra.span.type": "agent_run",
                "agent.id": "math",
                "input": '[{"role":"user","content":"What is 2 + 2?"}]',
                "output": '{"text":"4"}',
            },
            start=100,
            end=900,
            name="agent.math",
        ),
        make_span(
            "b000000000000001",
            "a000000000000001",
            {
                "gen_ai.operation.name": "tool_selection",
                "mastra.span.type": "llm_generation",
                "gen_ai.request.model": "gpt-4",
                "gen_ai.system": "openai",
                "gen_ai.prompt": json.dumps(
                    {
                        "messages": [
                            {"role": "system", "content": "Use tools."},
                            {"role": "user", "content": "What is 2 + 2?"},
                        ]
                    }
                ),
                "gen_ai.completion": json.dumps(completion),
                "gen_ai.usage.input_tokens": 30,
                "gen_ai.usage.output_tokens": 9,
            },
            start=200,
            name="tool_selection gpt-4",
        ),
        make_span(
            "c000000000000001",
            "b000000000000001",
            {
                "gen_ai.operation.name": "llm.chunk",
                "mastra.span.type": "llm_chunk",
                "output": "4",
            },
            start=250,
            name="llm chunk",
        ),
        make_span(
            "d000000000000001",
            "a000000000000001",
            {
                "gen_ai.operation.name": "tool.execute",
                "mastra.span.type": "tool_call",
                "gen_ai.tool.name": "calculator",
                "toolCallId": "call_7",  # metadata is copied flat
                "gen_ai.tool.input": '{"expression":"2 + 2"}',
                "gen_ai.tool.output": '{"result":4}',
                "gen_ai.tool.success": True,
            },
            start=300,
            name="tool.execute calculator",
        ),
        make_span(
            "b000000000000002",
            "a000000000000001",
            {
                "gen_ai.operation.name": "chat",
                "mastra.span.type": "llm_generation",
                "gen_ai.request.model": "gpt-4",
                "gen_ai.prompt": '{"messages":[{"role":"user","content":"What is 2 + 2?"}]}',
                "gen_ai.completion": '{"text":"4"}',
                "gen_ai.usage.input_tokens": 40,
                "gen_ai.usage.output_tokens": 1,
            },
            start=400,
            name="chat gpt-4",
        ),
    ]
    assert [ADAPTER.classify(s) for s in spans] == [
        SpanRole.AGENT,
        SpanRole.LLM,
        SpanRole.OTHER,
        SpanRole.TOOL,
        SpanRole.LLM,
    ]
    run = only_run(build_runs(spans))
    assert (run.agent_name, run.model) == ("math", "gpt-4")
    assert texts(run.input.input_messages) == [("user", "What is 2 + 2?")]
    assert texts(run.input.system_messages) == [("system", "Use tools.")]
    selection, answer = run.output
    assert (selection.content, selection.reasoning) == ("", "The user wants a sum.")
    assert invocations(selection) == [
        {
            "tool_call_id": "call_7",
            "tool_name": "calculator",
            "args": {"expression": "2 + 2"},
            "result": {"result": 4},
            "state": "result",
        }
    ]
    assert texts([answer]) == [("assistant", "4")]
    assert (run.usage.input_tokens, run.usage.output_tokens) == (70, 10)


def test_0x_exporter_failed_tool() -> None:
    tool = make_span(
        "d000000000000001",
        "",
        {
            "gen_ai.operation.name": "tool.execute",
            "gen_ai.tool.name": "fetch",
            "gen_ai.tool.input": '{"url":"x"}',
            "gen_ai.tool.success": False,
            "error.message": "timeout",
        },
        name="tool.execute fetch",
    )
    execution = ADAPTER.tool_execution(tool)
    assert (execution.name, execution.args, execution.result, execution.is_error) == (
        "fetch",
        {"url": "x"},
        "timeout",
        True,
    )


# --- 0.x built-in telemetry: agent.stream around the AI SDK's ai.* spans ---------------------------

SYSTEM_0X = "You are a helpful weather assistant. Use the weatherTool to fetch current weather data."
ASK = "what is the weather in ann arbor"
ANSWER_0X = "The current weather in Ann Arbor is overcast with a temperature of 12.2°C."
WEATHER_0X = {"temperature": 12.2, "conditions": "Overcast", "location": "Ann Arbor"}
REQUEST = {"componentName": "Weather Agent", "http.request_id": "98823c5f-b2ec-4a4e-a056-f22f7bcb53ae"}


def telemetry_trace() -> list[Span]:
    """The recorded openinference-mastra weather trace (Mastra 0.x + AI SDK v4), with memory: the
    agent is called with the new message only; ai.streamText's prompt holds the recalled turns."""
    tool_call = {
        "type": "tool-call",
        "toolCallId": "call_jNuc",
        "toolName": "weatherTool",
        "args": {"location": "Ann Arbor"},
    }
    history = [
        {"role": "user", "content": "Hi, I live in Michigan."},
        {"role": "assistant", "content": "Nice! How can I help?"},
    ]
    prompt = [
        {"role": "system", "content": SYSTEM_0X},
        *history,
        {"role": "user", "content": [{"type": "text", "text": ASK}]},
    ]
    after_tool = [
        *prompt,
        {"role": "assistant", "content": [tool_call]},
        {
            "role": "tool",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": "call_jNuc",
                    "toolName": "weatherTool",
                    "result": WEATHER_0X,
                }
            ],
        },
    ]

    def ai(span_id: str, parent: str, operation: str, start: int, end: int, **attrs: Any) -> Span:
        attributes = {"operation.name": operation, "ai.operationId": operation, **REQUEST, **attrs}
        return make_span(span_id, parent, attributes, start=start, end=end, name=operation)

    def agent(span_id: str, parent: str, method: str, start: int, end: int, **attrs: Any) -> Span:
        name = f"agent.{method}"
        attributes = {**REQUEST, **{f"{name}.{k}": v for k, v in attrs.items()}}
        return make_span(span_id, parent, attributes, start=start, end=end, name=name)

    return [
        make_span(
            "0000000000000001",
            "",
            {
                "http.method": "POST",
                "http.target": "/api/agents/weatherAgent/stream",
                "http.request_id": REQUEST["http.request_id"],
            },
            start=713,
            end=7193,
            name="POST /api/agents/weatherAgent/stream",
        ),
        agent(
            "236712a8cd85d5c5",
            "0000000000000001",
            "stream",
            717,
            729,
            **{
                "argument.0": json.dumps([{"role": "user", "content": ASK}]),
                "argument.1": json.dumps({"runId": "weatherAgent", "maxSteps": 5, "threadId": "93dc"}),
                "result": json.dumps({"textPromise": {"status": {"type": "pending"}}, "baseStream": {}}),
            },
        ),
        agent(
            "5f16b350a179b53e",
            "236712a8cd85d5c5",
            "preExecute",
            721,
            722,
            **{
                "argument.0": json.dumps(
                    {"threadId": "93dc", "messages": [{"role": "user", "content": ASK}]}
                ),
                "result": json.dumps({"coreMessages": [{"role": "user", "content": ASK}]}),
            },
        ),
        ai(
            "e754528d3b71ea75",
            "236712a8cd85d5c5",
            "ai.streamText",
            727,
            7190,
            **{
                "ai.model.provider": "openai.chat",
                "ai.model.id": "gpt-4o",
                "ai.settings.maxSteps": 5,
                "ai.prompt": json.dumps(
                    {
                        "messages": [
                            {"role": "system", "content": SYSTEM_0X},
                            *history,
                            {"role": "user", "content": ASK},
                        ]
                    }
                ),
                "ai.response.finishReason": "stop",
                "ai.response.text": ANSWER_0X,
                "ai.usage.promptTokens": 425,
                "ai.usage.completionTokens": 79,
            },
        ),
        ai(
            "b252df254059695b",
            "e754528d3b71ea75",
            "ai.streamText.doStream",
            727,
            5789,
            **{
                "ai.model.provider": "openai.chat",
                "ai.model.id": "gpt-4o",
                "ai.prompt.format": "messages",
                "ai.prompt.messages": json.dumps(prompt),
                "gen_ai.system": "openai.chat",
                "gen_ai.request.model": "gpt-4o",
                "ai.response.finishReason": "tool-calls",
                "ai.response.text": "",
                "ai.response.toolCalls": json.dumps([tool_call]),
                "ai.response.model": "gpt-4o-2024-08-06",
                "ai.usage.promptTokens": 179,
                "ai.usage.completionTokens": 15,
                "gen_ai.response.finish_reasons": ["tool-calls"],
                "gen_ai.response.model": "gpt-4o-2024-08-06",
                "gen_ai.usage.input_tokens": 179,
                "gen_ai.usage.output_tokens": 15,
            },
        ),
        ai(
            "c3a1f00000000001",
            "e754528d3b71ea75",
            "ai.toolCall",
            4873,
            5788,
            **{
                "ai.toolCall.name": "weatherTool",
                "ai.toolCall.id": "call_jNuc",
                "ai.toolCall.args": '{"location":"Ann Arbor"}',
                "ai.toolCall.result": json.dumps(WEATHER_0X),
            },
        ),
        ai(
            "510ea0778c66256d",
            "e754528d3b71ea75",
            "ai.streamText.doStream",
            5790,
            7187,
            **{
                "ai.model.provider": "openai.chat",
                "ai.model.id": "gpt-4o",
                "ai.prompt.format": "messages",
                "ai.prompt.messages": json.dumps(after_tool),
                "gen_ai.system": "openai.chat",
                "gen_ai.request.model": "gpt-4o",
                "ai.response.finishReason": "stop",
                "ai.response.text": ANSWER_0X,
                "ai.usage.promptTokens": 246,
                "ai.usage.completionTokens": 64,
                "gen_ai.usage.input_tokens": 246,
                "gen_ai.usage.output_tokens": 64,
            },
        ),
        agent(
            "654be41a9d75936f",
            "236712a8cd85d5c5",
            "getMostRecentUserMessage",
            7189,
            7190,
            **{
                "argument.0": json.dumps([{"role": "user", "content": ASK}]),
                "result": json.dumps({"role": "user", "content": ASK}),
            },
        ),
    ]


def test_0x_telemetry_claims_only_mastra_spans_and_agent_stream_is_the_agent() -> None:
    spans = {s.name + "@" + s.span_id: s for s in telemetry_trace()}
    # ai.* spans carry componentName too, but they are the AI SDK's: not claimed here.
    assert sorted(roles(list(spans.values())).items()) == sorted(
        {
            "agent.stream@236712a8cd85d5c5": SpanRole.AGENT,
            "agent.preExecute@5f16b350a179b53e": SpanRole.OTHER,
            "agent.getMostRecentUserMessage@654be41a9d75936f": SpanRole.OTHER,
        }.items()
    )
    info = ADAPTER.agent_info(spans["agent.stream@236712a8cd85d5c5"])
    assert (info.name, info.convention_name) == (None, "Weather Agent")  # componentName
    assert texts(info.input_messages) == [("user", ASK)]
    assert info.remembered_messages is None  # unknown here: the model call's prompt tells it
    assert info.output_messages == []  # a stream's result is a bag of pending promises


def test_0x_telemetry_agent_stream_and_ai_stream_text_are_one_run() -> None:
    run = only_run(build_runs(telemetry_trace(), adapters=ADAPTERS))

    assert (run.span_id, run.agent_name) == ("236712a8cd85d5c5", "Weather Agent")
    assert texts(run.input.input_messages) == [("user", ASK)]
    assert texts(run.input.remembered_messages) == [
        ("user", "Hi, I live in Michigan."),
        ("assistant", "Nice! How can I help?"),
    ]
    assert texts(run.input.system_messages) == [("system", SYSTEM_0X)]
    assert run.model == "gpt-4o"
    first, final = run.output
    assert invocations(first) == [
        {
            "tool_call_id": "call_jNuc",
            "tool_name": "weatherTool",
            "args": {"location": "Ann Arbor"},
            "result": WEATHER_0X,
            "state": "result",
        }
    ]
    assert texts([final]) == [("assistant", ANSWER_0X)]
    # The doStream calls only (179 + 246, 15 + 64); ai.streamText's own total is not added again.
    assert (run.usage.input_tokens, run.usage.output_tokens) == (425, 79)


def test_0x_telemetry_agent_generate_result_is_the_agent_output() -> None:
    span = make_span(
        "a000000000000001",
        "",
        {
            "componentName": "Support",
            "agent.generate.argument.0": '"Reset my password"',
            "agent.generate.argument.1": json.dumps({"instructions": "Be kind."}),
            "agent.generate.result": json.dumps(
                {
                    "text": "Done.",
                    "toolCalls": [{"toolCallId": "r1", "toolName": "reset", "args": {}}],
                    "toolResults": [{"toolCallId": "r1", "toolName": "reset", "args": {}, "result": "ok"}],
                    "usage": {"promptTokens": 5, "completionTokens": 1},
                }
            ),
        },
        name="agent.generate",
    )
    info = ADAPTER.agent_info(span)
    assert (ADAPTER.classify(span), info.convention_name) == (SpanRole.AGENT, "Support")
    assert texts(info.input_messages) == [("user", "Reset my password")]
    assert texts(info.system_messages) == [("system", "Be kind.")]
    [answer] = info.output_messages
    assert answer.content == "Done."
    assert parts(answer)[1:] == [
        {"type": "tool_call", "tool_call_id": "r1", "tool_name": "reset", "args": {}},
        {"type": "tool_result", "tool_call_id": "r1", "result": "ok"},
    ]


# --- message shapes --------------------------------------------------------------------------------


def test_ui_and_stored_message_shapes_and_leniency() -> None:
    value = [
        "plain string turn",
        {
            "role": "user",
            "content": {"format": 2, "parts": [{"type": "step-start"}, {"type": "text", "text": "hi"}]},
        },
        {
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "text": "think"},
                {
                    "type": "tool-weather",
                    "toolCallId": "w1",
                    "state": "output-available",
                    "input": {"city": "Rome"},
                    "output": {"tempC": 20},
                },
                {
                    "type": "tool-invocation",
                    "toolInvocation": {
                        "toolCallId": "w2",
                        "toolName": "news",
                        "args": {"q": "x"},
                        "state": "call",
                    },
                },
                {"type": "text", "text": "[REDACTED]"},
            ],
        },
    ]
    first, second, third = convert_messages(json.dumps(value), "s", "in", "user")
    assert texts([first, second]) == [("user", "plain string turn"), ("user", "hi")]
    assert (third.content, third.reasoning) == ("", "think")
    assert parts(third)[1:4] == [
        {"type": "tool_call", "tool_call_id": "w1", "tool_name": "weather", "args": {"city": "Rome"}},
        {"type": "tool_result", "tool_call_id": "w1", "result": {"tempC": 20}},
        {"type": "tool_call", "tool_call_id": "w2", "tool_name": "news", "args": {"q": "x"}},
    ]
    # Truncated JSON (attribute length limit) is kept as text; double encoding is undone.
    [cut] = convert_messages('[{"role":"user","content":"Hel', "s", "in", "user")
    assert texts([cut]) == [("user", '[{"role":"user","content":"Hel')]
    [twice] = convert_messages(
        json.dumps(json.dumps([{"role": "user", "content": "Hello"}])), "s", "in", "user"
    )
    assert texts([twice]) == [("user", "Hello")]


def test_1x_result_reasoning_chunks_and_provider_executed_tools() -> None:
    result = {
        "text": "Found it.",
        "reasoning": [
            {"type": "reasoning", "payload": {"id": "r", "text": "Search "}},
            {"type": "reasoning", "payload": {"id": "r", "text": "first."}},
        ],
        "toolCalls": [
            {
                "type": "tool-call",
                "payload": {
                    "toolCallId": "ws1",
                    "toolName": "web_search",
                    "args": {"q": "x"},
                    "providerExecuted": True,
                },
            }
        ],
    }
    [message] = convert_messages(json.dumps(result), "s", "out", "assistant")
    assert (message.role, message.content, message.reasoning) == ("assistant", "Found it.", "Search first.")
    assert parts(message)[2] == {
        "type": "tool_call",
        "tool_call_id": "ws1",
        "tool_name": "web_search",
        "args": {"q": "x"},
        "server": True,
    }


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "role",
                    "content",
                    "parts",
                    "type",
                    "text",
                    "toolCalls",
                    "reasoning",
                    "output",
                    "payload",
                    "messages",
                    "toolInvocation",
                    "format",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(json_values | json_values.map(json.dumps), st.sampled_from(["user", "assistant"]))
def test_message_conversion_never_raises_and_serialises(value: JsonValue, role: Role) -> None:
    for message in convert_messages(value, "s", "in", role):
        json.dumps(message.model_dump(mode="json"))
