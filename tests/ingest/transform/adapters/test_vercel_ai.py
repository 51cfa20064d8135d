"""The Vercel AI SDK adapter: legacy ``ai.*`` spans (v4 – v7) and ``@ai-sdk/otel`` spans, through the
transform, on the convention fixtures and on hand-built spans for the shapes the fixtures lack.

Expected values are written by hand from the spans (FIELD-GUIDE section 5, the SDK's telemetry code and
test snapshots), never computed by the code under test.
"""

from __future__ import annotations

import json
from typing import Any

from tests.support.conventions import adapter_name
from tests.support.fixture_files import load_otlp_spans, make_span
from tests.support.runs import invocations, only_run, texts
from tracescore.ingest.transform.adapters import (
    ADAPTERS,
    AgentInfo,
    ConventionAdapter,
    LlmCall,
    SpanRole,
    ToolExecution,
)
from tracescore.ingest.transform.adapters.vercel_ai import VercelAiAdapter
from tracescore.ingest.transform.runs import build_runs
from tracescore.schemas import Span
from tracescore.schemas.spans import STATUS_ERROR, JsonValue

ADAPTER = VercelAiAdapter()
WEATHER_PROMPT = "You are a helpful weather assistant. Use the weather tool."
CALL_ID = "call_VSPygqKTWdrhaFErNvMV18Yl"
PARIS = {"location": "Paris", "conditions": "rainy", "temperatureF": 57}
FINAL = "The weather in Paris is currently rainy with a temperature of 57°F."
ROOT, CALL1, TOOL, CALL2 = "a000000000000001", "c000000000000001", "d000000000000001", "c000000000000002"


def span(span_id: str, parent: str, operation: str, start: int, **attrs: Any) -> Span:
    """A legacy span as the SDK names it: span name = operation id = ``ai.operationId``."""
    attributes = {"ai.operationId": operation, "operation.name": operation, **attrs}
    return make_span(span_id, parent, attributes, start=start, end=start + 50, name=operation)


def otel_span(
    span_id: str, parent: str, name: str, start: int, scope: str = "gen_ai", /, **attrs: Any
) -> Span:
    return make_span(span_id, parent, attrs, start=start, end=start + 50, name=name).model_copy(
        update={"scope_name": scope}
    )


# --- the convention fixtures ---------------------------------------------------------------------------


def test_main_fixture_ai5_generate_text_gives_one_faithful_run() -> None:
    run = only_run(build_runs(load_otlp_spans("vercel_ai_sdk__main")))

    assert (run.trace_id, run.span_id) == ("0b8fc206be530b4e50981bca8f852ac2", "1a3848fb12a0fea9")
    assert run.agent_name == "weather-agent"  # ai.telemetry.functionId
    assert run.model == "gpt-4o"
    assert run.status == "ok"
    assert texts(run.input.input_messages) == [("user", "What's the weather in Paris?")]
    assert texts(run.input.remembered_messages) == [
        ("user", "Hi, I am planning a trip to France."),
        ("assistant", "Great! How can I help with your trip?"),
    ]
    assert texts(run.input.system_messages) == [("system", WEATHER_PROMPT)]

    first, final = run.output
    assert first.content == ""
    assert invocations(first) == [
        {
            "tool_call_id": CALL_ID,
            "tool_name": "weather",
            "args": {"location": "Paris"},  # a JSON string inside ai.response.toolCalls
            "result": PARIS,
            "state": "result",
        }
    ]
    assert final.content == FINAL and final.tool_invocations == []
    # doGenerate spans 47/17 and 97/52; the root's 97/52 (last step only in ai@5) is not counted.
    assert (run.usage.input_tokens, run.usage.output_tokens) == (144, 69)
    assert run.content_missing is False


def test_main_fixture_span_roles() -> None:
    roles = {s.name: ADAPTER.classify(s) for s in load_otlp_spans("vercel_ai_sdk__main")}
    assert roles == {
        "ai.generateText": SpanRole.AGENT,
        "ai.generateText.doGenerate": SpanRole.LLM,
        "ai.toolCall": SpanRole.TOOL,
    }
    assert {adapter_name(s) for s in load_otlp_spans("vercel_ai_sdk__main")} == {"vercel_ai_sdk"}


def test_v7_legacy_stream_text_fixture_keeps_reasoning_out_of_content() -> None:
    run = only_run(
        build_runs(
            load_otlp_spans("vercel_ai_sdk__ai-sdk-7-legacyopentelemetry-streamtext-2-steps-snapshot-inp")
        )
    )

    assert run.span_id == "3df39d6f2458b8a9"
    assert run.agent_name is None  # no functionId in the snapshot
    assert run.model == "mock-model-id"
    assert texts(run.input.input_messages) == [("user", "test-input")]
    assert run.input.remembered_messages == [] and run.input.system_messages == []
    first, final = run.output
    assert (first.content, first.reasoning) == ("", "thinking")  # ai.response.reasoning
    assert invocations(first) == [
        {
            "tool_call_id": "call-1",
            "tool_name": "tool1",
            "args": {"value": "value"},  # an object inside ai.response.toolCalls (streamText)
            "result": "result1",  # ai.toolCall.result is the double-encoded '"result1"'
            "state": "result",
        }
    ]
    assert (final.content, final.reasoning) == ("Hello, world!", None)
    # doStream spans 3/10 each (ai.usage.inputTokens/outputTokens and gen_ai.usage.*).
    assert (run.usage.input_tokens, run.usage.output_tokens) == (6, 20)


def test_ai_sdk_otel_fixture_step_spans_are_other_and_root_output_is_not_repeated() -> None:
    spans = load_otlp_spans("vercel_ai_sdk__ai-sdk-7-ai-sdk-otel-opentelemetry-integration-genai-semconv")
    assert {s.name: ADAPTER.classify(s) for s in spans} == {
        "invoke_agent gpt-4o": SpanRole.AGENT,
        "step 1": SpanRole.OTHER,
        "step 2": SpanRole.OTHER,
        "chat gpt-4o": SpanRole.LLM,
        "execute_tool weather": SpanRole.TOOL,
    }
    assert {adapter_name(s) for s in spans} == {"vercel_ai_sdk"}

    run = only_run(build_runs(spans))
    assert run.span_id == "01396495b05aade5"
    assert (run.agent_name, run.model) == ("weather-agent", "gpt-4o")
    assert texts(run.input.input_messages) == [("user", "What's the weather in Paris?")]
    assert texts(run.input.remembered_messages) == [
        ("user", "Hi, I am planning a trip to France."),
        ("assistant", "Great! How can I help with your trip?"),
    ]
    assert texts(run.input.system_messages) == [("system", WEATHER_PROMPT)]
    # Two steps, no third message made of the root's merged output.
    first, final = run.output
    assert (first.content, first.reasoning) == ("", "The user wants the weather in Paris; call weather tool.")
    assert invocations(first) == [
        {
            "tool_call_id": CALL_ID,
            "tool_name": "weather",
            "args": {"location": "Paris"},
            "result": PARIS,
            "state": "result",
        }
    ]
    assert final.content == FINAL and final.tool_invocations == []
    assert (run.usage.input_tokens, run.usage.output_tokens) == (144, 69)  # chat spans, not the root


# --- detection ------------------------------------------------------------------------------------


def test_claims_legacy_spans_and_ai_sdk_otel_spans_only() -> None:
    assert ADAPTER.claims(span(ROOT, "", "ai.generateText", 0))
    assert ADAPTER.claims(make_span(ROOT, attributes={"ai.toolCall.id": "x"}, name="ai.toolCall"))
    # GenAI semconv spans of another instrumentation stay with the semconv adapter.
    other = make_span(ROOT, attributes={"gen_ai.operation.name": "invoke_agent"}, name="invoke_agent x")
    assert not ADAPTER.claims(other)
    assert adapter_name(other) == "genai_semconv"
    assert not ADAPTER.claims(make_span(ROOT, attributes={"ai.foo": 1}, name="agent.stream"))
    assert not ADAPTER.claims(make_span(ROOT, attributes={"http.route": "/"}, name="ai.generateText"))


def test_classifies_every_operation() -> None:
    expected = {
        "ai.generateText": SpanRole.AGENT,
        "ai.streamText": SpanRole.AGENT,
        "ai.generateObject": SpanRole.AGENT,
        "ai.streamObject": SpanRole.AGENT,
        "ai.generateText.doGenerate": SpanRole.LLM,
        "ai.streamText.doStream": SpanRole.LLM,
        "ai.generateObject.doGenerate": SpanRole.LLM,
        "ai.streamObject.doStream": SpanRole.LLM,
        "ai.toolCall": SpanRole.TOOL,
        "ai.embed": SpanRole.OTHER,
        "ai.embedMany.doEmbed": SpanRole.OTHER,
        "ai.rerank": SpanRole.OTHER,
    }
    assert {op: ADAPTER.classify(span(ROOT, "", op, 0)) for op in expected} == expected


# --- hand-built legacy traces ----------------------------------------------------------------------


def v4_trace() -> list[Span]:
    """ai@4.3 generateText with maxSteps 2: v4 names (args/result, promptTokens, gen_ai prompt_tokens)."""
    prompt_1 = [
        {"role": "system", "content": WEATHER_PROMPT},
        {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Hello! How can I help?"}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Weather where this photo was taken?"},
                {"type": "image", "image": "https://example.com/paris.jpg", "mimeType": "image/jpeg"},
            ],
        },
    ]
    prompt_2 = [
        *prompt_1,
        {
            "role": "assistant",
            "content": [
                {"type": "tool-call", "toolCallId": "c1", "toolName": "weather", "args": {"city": "Paris"}}
            ],
        },
        {
            "role": "tool",
            "content": [
                {"type": "tool-result", "toolCallId": "c1", "toolName": "weather", "result": "rainy"}
            ],
        },
    ]
    common = {"ai.model.id": "gpt-4o", "ai.model.provider": "openai.chat", "ai.telemetry.functionId": "trip"}
    call = {
        **common,
        "gen_ai.system": "openai.chat",
        "gen_ai.request.model": "gpt-4o",
        "ai.prompt.format": "messages",
    }
    return [
        span(
            ROOT,
            "",
            "ai.generateText",
            100,
            **common,
            **{
                "ai.prompt": json.dumps(
                    {
                        "system": WEATHER_PROMPT,
                        "messages": [
                            {"role": "user", "content": "Hi"},
                            {"role": "assistant", "content": "Hello! How can I help?"},
                            prompt_1[3],
                        ],
                    }
                ),
                "ai.response.text": "It is rainy in Paris.",
                "ai.usage.promptTokens": 90,  # ai@4 root: the total, which must not be added again
                "ai.usage.completionTokens": 30,
            },
        ),
        span(
            CALL1,
            ROOT,
            "ai.generateText.doGenerate",
            200,
            **call,
            **{
                "ai.prompt.messages": json.dumps(prompt_1),
                "ai.response.text": "",
                "ai.response.toolCalls": json.dumps(
                    [
                        {
                            "toolCallType": "function",
                            "toolCallId": "c1",
                            "toolName": "weather",
                            "args": '{"city":"Paris"}',
                        }
                    ]
                ),
                "ai.usage.promptTokens": 40,
                "ai.usage.completionTokens": 10,
                "gen_ai.usage.prompt_tokens": 40,
                "gen_ai.usage.completion_tokens": 10,
                "gen_ai.response.model": "gpt-4o-2024-08-06",
            },
        ),
        span(
            TOOL,
            ROOT,
            "ai.toolCall",
            300,
            **{
                "ai.toolCall.name": "weather",
                "ai.toolCall.id": "c1",
                "ai.toolCall.args": '{"city":"Paris"}',
                "ai.toolCall.result": '"rainy"',
            },
        ),
        span(
            CALL2,
            ROOT,
            "ai.generateText.doGenerate",
            400,
            **call,
            **{
                "ai.prompt.messages": json.dumps(prompt_2),
                "ai.response.text": "It is rainy in Paris.",
                "ai.usage.promptTokens": 50,
                "ai.usage.completionTokens": 20,
                "gen_ai.usage.prompt_tokens": 50,
                "gen_ai.usage.completion_tokens": 20,
            },
        ),
    ]


def test_v4_generate_text_with_args_result_and_prompt_tokens() -> None:
    run = only_run(build_runs(v4_trace()))

    assert (run.span_id, run.agent_name, run.model) == (ROOT, "trip", "gpt-4o")
    (turn,) = run.input.input_messages
    assert turn.content == "Weather where this photo was taken?"
    assert [p.model_dump() for p in turn.parts][1] == {
        "type": "uri",
        "modality": "image",
        "mime_type": "image/jpeg",
        "uri": "https://example.com/paris.jpg",
    }
    assert texts(run.input.remembered_messages) == [("user", "Hi"), ("assistant", "Hello! How can I help?")]
    assert texts(run.input.system_messages) == [("system", WEATHER_PROMPT)]
    first, final = run.output
    assert invocations(first) == [
        {
            "tool_call_id": "c1",
            "tool_name": "weather",
            "args": {"city": "Paris"},
            "result": "rainy",
            "state": "result",
        }
    ]
    assert final.content == "It is rainy in Paris."
    assert (run.usage.input_tokens, run.usage.output_tokens) == (90, 30)  # 40+50 / 10+20, root ignored


def test_v4_call_span_reads_tool_results_of_its_prompt() -> None:
    call = ADAPTER.llm_call(v4_trace()[3])
    tool_message = call.input_messages[-1]
    assert tool_message.role == "tool"
    assert [p.model_dump() for p in tool_message.parts] == [
        {"type": "tool_result", "tool_call_id": "c1", "result": "rainy"}
    ]
    assistant = call.input_messages[-2]
    assert [p.model_dump() for p in assistant.parts] == [
        {"type": "tool_call", "tool_call_id": "c1", "tool_name": "weather", "args": {"city": "Paris"}}
    ]
    assert call.model == "gpt-4o"
    assert (call.usage.input_tokens, call.usage.output_tokens) == (50, 20)


def test_tool_result_joined_from_next_prompt_when_no_tool_span() -> None:
    spans = [s for s in v4_trace() if s.span_id != TOOL]  # e.g. the tool span was dropped
    first, _ = only_run(build_runs(spans)).output
    assert invocations(first)[0]["result"] == "rainy"


def test_v6_usage_names_and_unknown_model() -> None:
    call = ADAPTER.llm_call(
        span(
            CALL1,
            ROOT,
            "ai.streamText.doStream",
            0,
            **{
                "ai.model.id": "unknown",
                "ai.response.model": "claude-sonnet-4",
                "ai.usage.inputTokens": 11,
                "ai.usage.outputTokens": 7,
                "ai.usage.totalTokens": 18,
                "ai.response.text": "ok",
            },
        )
    )
    assert call.model == "claude-sonnet-4"
    assert (call.usage.input_tokens, call.usage.output_tokens) == (11, 7)


def test_generate_object_answer_is_the_object_text() -> None:
    obj = '{"city":"Paris","temperatureF":57}'
    spans = [
        span(
            ROOT,
            "",
            "ai.generateObject",
            0,
            **{"ai.prompt": '{"prompt":"Weather as JSON"}', "ai.response.object": obj},
        ),
        span(
            CALL1,
            ROOT,
            "ai.generateObject.doGenerate",
            10,
            **{
                "ai.prompt.messages": json.dumps(
                    [{"role": "user", "content": [{"type": "text", "text": "Weather as JSON"}]}]
                ),
                "ai.response.object": obj,
                "ai.usage.promptTokens": 5,
                "ai.usage.completionTokens": 9,
            },
        ),
    ]
    run = only_run(build_runs(spans))
    assert texts(run.input.input_messages) == [("user", "Weather as JSON")]
    assert texts(run.output) == [("assistant", obj)]  # once: the root's copy is not added
    assert (run.usage.input_tokens, run.usage.output_tokens) == (5, 9)


def test_v7_legacy_tool_span_under_the_step_and_tool_error() -> None:
    spans = [
        span(ROOT, "", "ai.streamText", 0, **{"ai.prompt": '{"messages":[{"role":"user","content":"go"}]}'}),
        span(
            CALL1,
            ROOT,
            "ai.streamText.doStream",
            10,
            **{"ai.response.toolCalls": '[{"toolCallId":"t1","toolName":"fetch","input":{"url":"x"}}]'},
        ),
        make_span(
            TOOL,
            CALL1,  # v7 LegacyOpenTelemetry starts tool spans in the step's context
            {"ai.operationId": "ai.toolCall", "ai.toolCall.id": "t1", "ai.toolCall.name": "fetch"},
            start=20,
            status_code=STATUS_ERROR,
            status_message="connection refused",
            name="ai.toolCall",
        ),
    ]
    (step,) = only_run(build_runs(spans)).output
    assert invocations(step) == [
        {
            "tool_call_id": "t1",
            "tool_name": "fetch",
            "args": {"url": "x"},
            "result": "connection refused",
            "state": "error",
        }
    ]


def test_v5_tool_input_output_keys_and_output_types() -> None:
    tool = ADAPTER.tool_execution(
        span(
            TOOL,
            ROOT,
            "ai.toolCall",
            0,
            **{"ai.toolCall.id": "t", "ai.toolCall.input": '{"a":1}', "ai.toolCall.output": '{"b":2}'},
        )
    )
    args: JsonValue = {"a": 1}
    result: JsonValue = {"b": 2}
    assert tool == ToolExecution(call_id="t", name=None, args=args, result=result)

    prompt = [
        {
            "role": "tool",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": "1",
                    "toolName": "t",
                    "output": {"type": "error-text", "value": "boom"},
                },
                {
                    "type": "tool-result",
                    "toolCallId": "2",
                    "toolName": "t",
                    "output": {"type": "execution-denied", "reason": "no"},
                },
                {
                    "type": "tool-result",
                    "toolCallId": "3",
                    "toolName": "t",
                    "output": {"type": "json", "value": [1, 2]},
                },
            ],
        }
    ]
    call = ADAPTER.llm_call(
        span(CALL1, ROOT, "ai.generateText.doGenerate", 0, **{"ai.prompt.messages": json.dumps(prompt)})
    )
    assert [p.model_dump()["result"] for p in call.input_messages[0].parts] == [
        "boom",
        {"denied": True, "reason": "no"},
        [1, 2],
    ]


def test_provider_executed_tool_and_generated_file_are_kept() -> None:
    call = ADAPTER.llm_call(
        span(
            CALL1,
            ROOT,
            "ai.generateText.doGenerate",
            0,
            **{
                "ai.response.text": "Here it is.",
                "ai.response.toolCalls": json.dumps(
                    [{"toolCallId": "ws", "toolName": "web_search", "input": "{}", "providerExecuted": True}]
                ),
                "ai.response.files": '[{"type":"file","mediaType":"image/png","data":"iVBORw0KGgo="}]',
            },
        )
    )
    (answer,) = call.output_messages
    assert answer.content == "Here it is."
    assert [p.model_dump() for p in answer.parts[1:]] == [
        {"type": "tool_call", "tool_call_id": "ws", "tool_name": "web_search", "args": {}, "server": True},
        {"type": "blob", "modality": "image", "mime_type": "image/png", "content": "iVBORw0KGgo="},
    ]


def test_client_tool_continuation_keeps_the_turn_together() -> None:
    """useChat with a client-side tool: the request ends with the tool result, not a user message."""
    messages = [
        {"role": "user", "content": "Earlier question"},
        {"role": "assistant", "content": "Earlier answer"},
        {"role": "user", "content": "Book it"},
        {
            "role": "assistant",
            "content": [{"type": "tool-call", "toolCallId": "k", "toolName": "confirm", "input": {}}],
        },
        {
            "role": "tool",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": "k",
                    "toolName": "confirm",
                    "output": {"type": "json", "value": True},
                }
            ],
        },
    ]
    info = ADAPTER.agent_info(
        span(ROOT, "", "ai.streamText", 0, **{"ai.prompt": json.dumps({"messages": messages})})
    )
    assert texts(info.input_messages) == [("user", "Book it"), ("assistant", ""), ("tool", "true")]
    assert texts(info.remembered_messages or []) == [
        ("user", "Earlier question"),
        ("assistant", "Earlier answer"),
    ]


def test_v7_instructions_list_and_inline_system_messages() -> None:
    prompt = {
        "system": [{"role": "system", "content": "Rule one."}, {"role": "system", "content": "Rule two."}],
        "messages": [{"role": "system", "content": "Inline rule."}, {"role": "user", "content": "hi"}],
    }
    info = ADAPTER.agent_info(span(ROOT, "", "ai.generateText", 0, **{"ai.prompt": json.dumps(prompt)}))
    assert texts(info.system_messages) == [
        ("system", "Rule one."),
        ("system", "Rule two."),
        ("system", "Inline rule."),
    ]
    assert texts(info.input_messages) == [("user", "hi")]
    assert info.remembered_messages == []


def test_capture_off_marks_content_missing_but_keeps_usage_and_tools() -> None:
    """recordInputs / recordOutputs false: no ai.prompt*, ai.response.text/toolCalls, tool args/result."""
    spans = [
        span(ROOT, "", "ai.generateText", 0, **{"ai.model.id": "gpt-4o", "ai.response.finishReason": "stop"}),
        span(
            CALL1,
            ROOT,
            "ai.generateText.doGenerate",
            10,
            **{"gen_ai.usage.input_tokens": 8, "gen_ai.usage.output_tokens": 2},
        ),
        span(TOOL, ROOT, "ai.toolCall", 20, **{"ai.toolCall.name": "weather", "ai.toolCall.id": "c9"}),
        span(
            CALL2,
            ROOT,
            "ai.generateText.doGenerate",
            30,
            **{"gen_ai.usage.input_tokens": 12, "gen_ai.usage.output_tokens": 4},
        ),
    ]
    run = only_run(build_runs(spans))
    assert run.content_missing is True
    assert run.input.input_messages == [] and run.input.remembered_messages == []
    assert [i.tool_name for m in run.output for i in m.tool_invocations] == ["weather"]
    assert (run.usage.input_tokens, run.usage.output_tokens) == (20, 6)


def test_redacted_and_truncated_values() -> None:
    call = ADAPTER.llm_call(
        span(
            CALL1,
            ROOT,
            "ai.generateText.doGenerate",
            0,
            **{
                "ai.prompt.messages": '[{"role":"user","content":[{"type":"text","text":"What is the wea',
                "ai.response.text": "__REDACTED__",
            },
        )
    )
    assert texts(call.input_messages) == [
        ("user", '[{"role":"user","content":[{"type":"text","text":"What is the wea')
    ]
    assert texts(call.output_messages) == [("assistant", "")]


def test_odd_values_do_not_raise() -> None:
    odd = span(
        CALL1,
        ROOT,
        "ai.generateText.doGenerate",
        0,
        **{
            "ai.prompt.messages": '[1, null, {"role": 5, "content": {"x": 1}}, '
            '{"role":"user","content":[{"type":{}}]}]',
            "ai.response.toolCalls": '{"not":"a list"}',
            "ai.usage.promptTokens": "n/a",
        },
    )
    call = ADAPTER.llm_call(odd)
    assert isinstance(call, LlmCall) and len(call.input_messages) == 4
    info = ADAPTER.agent_info(span(ROOT, "", "ai.generateText", 0, **{"ai.prompt": '"just text"'}))
    assert info == AgentInfo()


# --- nesting under a framework's wrapper (Mastra 0.x agent.stream) ---------------------------------


class WrapperAdapter(ConventionAdapter):
    """Stands for the Mastra adapter in this test: reads 0.x ``agent.stream`` spans as agents that
    know their name and nothing else."""

    name = "wrapper"

    def claims(self, span: Span) -> bool:
        return span.name == "agent.stream"

    def classify(self, span: Span) -> SpanRole:
        return SpanRole.AGENT

    def llm_call(self, span: Span) -> LlmCall:
        return LlmCall()

    def tool_execution(self, span: Span) -> ToolExecution:
        return ToolExecution(call_id=None, name=None)

    def agent_info(self, span: Span) -> AgentInfo:
        return AgentInfo(name="weatherAgent")

    def retrieved_texts(self, span: Span) -> list[str]:
        return []


def test_ai_spans_nested_under_a_framework_agent_span_form_one_run() -> None:
    # Mastra 0.x puts its instructions and the memory's history into streamText's messages.
    messages = [
        {"role": "system", "content": WEATHER_PROMPT},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    wrapper = make_span(
        "e000000000000001", "", {"componentName": "weatherAgent"}, start=0, end=1000, name="agent.stream"
    )
    spans = [
        wrapper,
        span(ROOT, wrapper.span_id, "ai.streamText", 50, **{"ai.prompt": json.dumps({"messages": messages})}),
        span(
            CALL1,
            ROOT,
            "ai.streamText.doStream",
            100,
            **{
                "ai.prompt.messages": json.dumps(messages),
                "ai.response.text": "Rainy.",
                "ai.usage.promptTokens": 30,
                "ai.usage.completionTokens": 2,
            },
        ),
    ]
    run = only_run(build_runs(spans, adapters=(WrapperAdapter(), *ADAPTERS)))
    assert (run.span_id, run.agent_name) == ("e000000000000001", "weatherAgent")
    assert texts(run.input.input_messages) == [("user", "Weather in Paris?")]
    assert texts(run.input.remembered_messages) == [("user", "Hi"), ("assistant", "Hello!")]
    assert texts(run.input.system_messages) == [("system", WEATHER_PROMPT)]
    assert texts(run.output) == [("assistant", "Rainy.")]
    assert (run.usage.input_tokens, run.usage.output_tokens) == (30, 2)


def test_ai_spans_nested_under_a_mastra_0x_agent_stream_span_with_the_registry() -> None:
    """The same trace read by the registered adapters: Mastra's reads the wrapper, this one the rest."""
    messages = [
        {"role": "system", "content": WEATHER_PROMPT},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    wrapper_attrs = {"componentName": "weatherAgent", "agent.stream.argument.0": '"Weather in Paris?"'}
    wrapper = make_span("e000000000000001", "", wrapper_attrs, start=0, end=1000, name="agent.stream")
    # Mastra passes its componentName to the AI SDK spans as telemetry metadata too.
    spans = [
        wrapper,
        span(
            ROOT,
            wrapper.span_id,
            "ai.streamText",
            50,
            componentName="weatherAgent",
            **{
                "ai.prompt": json.dumps({"messages": messages}),
                "ai.response.text": "Rainy.",
            },
        ),
        span(
            CALL1,
            ROOT,
            "ai.streamText.doStream",
            100,
            componentName="weatherAgent",
            **{
                "ai.prompt.messages": json.dumps(messages),
                "ai.response.text": "Rainy.",
                "ai.usage.promptTokens": 30,
                "ai.usage.completionTokens": 2,
            },
        ),
    ]
    assert [adapter_name(s) for s in spans] == ["mastra", "vercel_ai_sdk", "vercel_ai_sdk"]
    run = only_run(build_runs(spans))
    assert (run.span_id, run.agent_name) == ("e000000000000001", "weatherAgent")
    assert texts(run.input.input_messages) == [("user", "Weather in Paris?")]
    assert texts(run.input.remembered_messages) == [("user", "Hi"), ("assistant", "Hello!")]
    assert texts(run.input.system_messages) == [("system", WEATHER_PROMPT)]
    assert texts(run.output) == [("assistant", "Rainy.")]  # once, not again from either agent span
    assert (run.usage.input_tokens, run.usage.output_tokens) == (30, 2)


# --- @ai-sdk/otel (AI SDK 7) -----------------------------------------------------------------------


def otel_trace(*, with_chat_output: bool = True) -> list[Span]:
    """Two steps that both end in a tool call (stopWhen reached): the root's merged output has no text."""

    def out(call_id: str) -> str:
        part = {"type": "tool_call", "id": call_id, "name": "search", "arguments": {"q": call_id}}
        return json.dumps([{"role": "assistant", "parts": [part], "finish_reason": "tool_call"}])

    user = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "find it"}]}])
    merged = [
        {"type": "text", "content": "Still searching."},
        {"type": "tool_call", "id": "s1", "name": "search", "arguments": {"q": "s1"}},
        {"type": "tool_call", "id": "s2", "name": "search", "arguments": {"q": "s2"}},
    ]
    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.input.messages": user}
    spans = [
        otel_span(
            ROOT,
            "",
            "invoke_agent gpt-4o",
            0,
            **{
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "finder",
                "gen_ai.input.messages": user,
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": merged}]),
                "gen_ai.usage.input_tokens": 100,
                "gen_ai.usage.output_tokens": 100,
            },
        ),
        otel_span("b000000000000001", ROOT, "step 1", 10, **{"gen_ai.operation.name": "agent_step"}),
        otel_span(CALL1, "b000000000000001", "chat gpt-4o", 11, **chat, **{"gen_ai.usage.input_tokens": 5}),
        otel_span(
            TOOL,
            "b000000000000001",
            "execute_tool search",
            20,
            **{
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "search",
                "gen_ai.tool.call.id": "s1",
                "gen_ai.tool.call.arguments": '{"q":"s1"}',
                "gen_ai.tool.call.result": '"found nothing"',
            },
        ),
        otel_span("b000000000000002", ROOT, "step 2", 30, **{"gen_ai.operation.name": "agent_step"}),
        otel_span(CALL2, "b000000000000002", "chat gpt-4o", 31, **chat, **{"gen_ai.usage.input_tokens": 7}),
    ]
    if with_chat_output:
        outputs = {CALL1: out("s1"), CALL2: out("s2")}
        spans = [
            s.model_copy(
                update={"attributes": {**s.attributes, "gen_ai.output.messages": outputs[s.span_id]}}
            )
            if s.span_id in outputs
            else s
            for s in spans
        ]
    return spans


def test_otel_root_merged_output_does_not_duplicate_the_steps() -> None:
    run = only_run(build_runs(otel_trace()))
    assert [[i.tool_call_id for i in m.tool_invocations] for m in run.output] == [["s1"], ["s2"]]
    assert invocations(run.output[0])[0]["result"] == "found nothing"
    assert (run.agent_name, run.usage.input_tokens) == ("finder", 12)


def test_otel_root_output_is_not_read_even_when_the_steps_recorded_none() -> None:
    run = only_run(build_runs(otel_trace(with_chat_output=False)))
    # The tool span still is a call of the first step; the root's merged parts add nothing.
    assert [[i.tool_call_id for i in m.tool_invocations] for m in run.output] == [["s1"]]
    assert "Still searching." not in [m.content for m in run.output]


def test_otel_spans_of_the_legacy_tracer_name_are_claimed_too() -> None:
    step = otel_span(
        "b000000000000001", ROOT, "step 1", 0, scope="ai", **{"gen_ai.operation.name": "agent_step"}
    )
    assert ADAPTER.claims(step) and ADAPTER.classify(step) is SpanRole.OTHER
