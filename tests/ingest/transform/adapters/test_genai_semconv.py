"""The OTel GenAI semantic-conventions adapter, every generation, through the transform.

On the convention fixtures (v1.37+ main trace, the v1.28-v1.36 trace whose content is in log records, the
v1.40 retrieval span) and on hand-built spans for the shapes the fixtures lack, each taken from the
emitting library's code: v1.26-v1.27 content events (Semantic Kernel, OpenLIT), message events as span
events (Semantic Kernel .NET ``gen_ai.event.content``, Strands flat attributes) and as log records
(openai-v2, Semantic Kernel Python), the v1.37 operation-details event (util-genai, Strands), v1.40
server tool calls, unnamed model-call spans. Expected values are written by hand from the spans.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.fixture_files import OTLP_DIR, TRACE_ID, load_otlp_spans, make_span
from tests.support.runs import invocations, only_run, parts, texts
from tracescore.ingest.decode import decode_logs
from tracescore.ingest.transform.adapters import ADAPTERS, SpanRole, adapter_for
from tracescore.ingest.transform.adapters.genai_events import read_events, tool_from_events
from tracescore.ingest.transform.adapters.genai_semconv import GenAiSemconvAdapter
from tracescore.ingest.transform.runs import build_runs
from tracescore.schemas import AgentRun, LogRecord, Message, Span, SpanEvent
from tracescore.schemas.spans import STATUS_ERROR, JsonValue

ADAPTER = GenAiSemconvAdapter()
WEATHER_PROMPT = "You are a helpful weather assistant. Use the get_weather tool."
CALL_ID = "call_VSPygqKTWdrhaFErNvMV18Yl"
FINAL = "The weather in Paris is currently rainy with a temperature of 57°F."
LEGACY = "otel_genai_semconv__legacy-event-based-semconv-v1-28-v1-36-content-in-logrecords"
RETRIEVAL = "otel_genai_semconv__retrieval-span-semconv-v1-40-gen-ai-retrieval-documents-is-i"
AGENT, CHAT1, TOOL, CHAT2, OTHER = (
    "a000000000000001",
    "c000000000000001",
    "b000000000000001",
    "c000000000000002",
    "e000000000000001",
)


def event(name: str, **attributes: Any) -> SpanEvent:
    return SpanEvent(name=name, time_unix_nano=0, attributes=attributes)


def with_events(span: Span, *events: SpanEvent) -> Span:
    return span.model_copy(update={"events": list(events)})


def record(span_id: str, name: str, body: Any, time: int, **attributes: Any) -> LogRecord:
    return LogRecord(
        trace_id=TRACE_ID,
        span_id=span_id,
        time_unix_nano=time,
        event_name=name,
        body=body,
        attributes={"event.name": name, **attributes},
    )


def fixture_logs(name: str) -> list[LogRecord]:
    batch = decode_logs("otlp_json", (OTLP_DIR / f"{name}.logs.json").read_bytes())
    assert not batch.errors
    return batch.logs


def runs_per_trace(spans: list[Span], logs: list[LogRecord]) -> list[AgentRun]:
    """As the pipeline builds them: one trace at a time (this fixture holds two traces)."""
    trace_ids = sorted({s.trace_id for s in spans})
    return [
        run
        for trace_id in trace_ids
        for run in build_runs(
            [s for s in spans if s.trace_id == trace_id], [r for r in logs if r.trace_id == trace_id]
        )
    ]


# --- the convention fixtures ---------------------------------------------------------------------------


def test_main_fixture_spans_are_classified_and_read_one_by_one() -> None:
    spans = {s.span_id: s for s in load_otlp_spans("otel_genai_semconv__main")}
    assert {sid: ADAPTER.classify(s) for sid, s in spans.items()} == {
        "594f8d102c7c4a19": SpanRole.AGENT,
        "41577dfd278c2ded": SpanRole.LLM,
        "b5dc95d9aa98161c": SpanRole.TOOL,
        "4bcdd5c433ba8408": SpanRole.LLM,
    }
    assert all(adapter_for(s) is ADAPTERS[-1] for s in spans.values())
    tool = ADAPTER.tool_execution(spans["b5dc95d9aa98161c"])
    assert (tool.call_id, tool.name, tool.args, tool.result, tool.is_error) == (
        CALL_ID,
        "get_weather",
        {"location": "Paris"},
        "rainy, 57°F",
        False,
    )
    call = ADAPTER.llm_call(spans["4bcdd5c433ba8408"])
    assert (call.model, call.usage.input_tokens, call.usage.output_tokens) == ("gpt-4o", 97, 52)
    # The tool message of the second call's prompt carries the result under "response".
    assert parts(call.input_messages[5]) == [
        {"type": "tool_result", "tool_call_id": CALL_ID, "result": "rainy, 57°F"}
    ]
    info = ADAPTER.agent_info(spans["594f8d102c7c4a19"])
    assert (info.name, info.model, texts(info.input_messages)) == (
        "weather_agent",
        "gpt-4o",
        [("user", "What's the weather in Paris?")],
    )
    assert texts(info.output_messages) == [("assistant", FINAL)]


def test_legacy_fixture_reads_the_content_from_the_correlated_log_records() -> None:
    runs = runs_per_trace(load_otlp_spans(LEGACY), fixture_logs(LEGACY))
    assert [r.span_id for r in runs] == ["591a967493a73908", "80ab5126c616b43a"]
    first, second = runs

    # Trace 1: the model asks for the tool; no tool span and no later prompt in this trace.
    assert (first.agent_name, first.model, first.content_missing) == (None, "gpt-4o", False)
    assert texts(first.input.system_messages) == [("system", WEATHER_PROMPT)]
    assert texts(first.input.remembered_messages) == [
        ("user", "Hi, I am planning a trip to France."),
        ("assistant", "Great! How can I help with your trip?"),
    ]
    assert texts(first.input.input_messages) == [("user", "What's the weather in Paris?")]
    (ask,) = first.output
    assert ask.content == ""
    assert invocations(ask) == [
        {
            "tool_call_id": CALL_ID,
            "tool_name": "get_weather",
            "args": {"location": "Paris"},
            "result": None,
            "state": "call",
        }
    ]
    assert (first.usage.input_tokens, first.usage.output_tokens) == (47, 17)

    # Trace 2: the prompt replays the call and its result (gen_ai.assistant.message /
    # gen_ai.tool.message) after the user's question: that exchange is the turn's own work, so the
    # question stays the new input and only the earlier pair is history.
    assert texts(second.output) == [("assistant", FINAL)]
    assert (second.usage.input_tokens, second.usage.output_tokens) == (97, 52)
    assert texts(second.input.input_messages) == [("user", "What's the weather in Paris?")]
    assert texts(second.input.remembered_messages) == [
        ("user", "Hi, I am planning a trip to France."),
        ("assistant", "Great! How can I help with your trip?"),
    ]
    assert texts(second.input.system_messages) == [("system", WEATHER_PROMPT)]


def test_legacy_fixture_without_its_logs_has_usage_but_no_content() -> None:
    runs = runs_per_trace(load_otlp_spans(LEGACY), [])
    assert [(r.content_missing, r.usage.input_tokens, r.output) for r in runs] == [
        (True, 47, []),
        (True, 97, []),
    ]


def test_retrieval_fixture_span_is_a_retriever_whose_id_only_documents_give_no_context() -> None:
    (span,) = load_otlp_spans(RETRIEVAL)
    assert ADAPTER.claims(span) and ADAPTER.classify(span) is SpanRole.RETRIEVER
    assert ADAPTER.retrieved_texts(span) == []
    info = ADAPTER.agent_info(span)
    assert texts(info.input_messages) == [("user", "weather in Paris")]


# --- v1.26 - v1.27: gen_ai.content.prompt / gen_ai.content.completion --------------------------------


def content_events_span(prompt: str, completion: str, span_id: str = CHAT1, **attrs: Any) -> Span:
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.system": "openai", **attrs}
    return with_events(
        make_span(span_id, attributes=attributes, name="chat gpt-4"),
        event("gen_ai.content.prompt", **{"gen_ai.prompt": prompt}),
        event("gen_ai.content.completion", **{"gen_ai.completion": completion}),
    )


def test_content_events_with_json_message_lists() -> None:
    prompt = json.dumps(
        [
            {"role": "system", "content": "Be terse."},
            {"role": "user", "content": "Capital of France?"},
            {"role": "assistant", "content": "Paris."},
            {"role": "user", "content": "And of Italy?"},
        ]
    )
    completion = json.dumps([{"role": "assistant", "content": "Rome."}])
    run = only_run(build_runs([content_events_span(prompt, completion, **{"gen_ai.request.model": "gpt-4"})]))
    assert texts(run.input.system_messages) == [("system", "Be terse.")]
    assert texts(run.input.remembered_messages) == [("user", "Capital of France?"), ("assistant", "Paris.")]
    assert texts(run.input.input_messages) == [("user", "And of Italy?")]
    assert texts(run.output) == [("assistant", "Rome.")]
    assert run.model == "gpt-4"


def test_content_events_as_openlit_role_prefixed_lines_and_plain_completion() -> None:
    prompt = "system: Be terse.\nuser: Write two lines:\nfirst and\nsecond\nassistant: ok\nuser: Now three."
    run = only_run(build_runs([content_events_span(prompt, "One.\nTwo.\nThree.")]))
    assert texts(run.input.system_messages) == [("system", "Be terse.")]
    assert texts(run.input.remembered_messages) == [
        ("user", "Write two lines:\nfirst and\nsecond"),
        ("assistant", "ok"),
    ]
    assert texts(run.input.input_messages) == [("user", "Now three.")]
    assert texts(run.output) == [("assistant", "One.\nTwo.\nThree.")]


def test_content_events_in_semantic_kernel_dotnet_pseudo_json() -> None:
    # ModelDiagnostics.ToOpenAIFormat before SK 1.20: not JSON, but each message is recognisable.
    prompt = '[{"role:" system, "content:" Be terse.}, \n{"role:" user, "content:" Hi {there}}]'
    completion = '[{"role:" assistant, "content:" Hello.}]'
    run = only_run(
        build_runs([content_events_span(prompt, completion, **{"gen_ai.operation.name": "chat.completions"})])
    )
    assert texts(run.input.system_messages) == [("system", "Be terse.")]
    assert texts(run.input.input_messages) == [("user", "Hi {there}")]
    assert texts(run.output) == [("assistant", "Hello.")]


def test_openlit_content_as_span_attributes() -> None:
    chat = make_span(
        CHAT1,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.system": "openai",
            "gen_ai.prompt": "system: Be kind.\nuser: Hello",
            "gen_ai.completion": "Hi there!",
        },
        name="chat gpt-4o",
    )
    # Read with this adapter directly: the Mastra adapter, earlier in the registry, claims chat spans with
    # bare gen_ai.prompt / gen_ai.completion (its 0.x exporter's keys).
    call = ADAPTER.llm_call(chat)
    assert texts(call.input_messages) == [("system", "Be kind."), ("user", "Hello")]
    assert texts(call.output_messages) == [("assistant", "Hi there!")]


def test_free_text_prompt_is_one_user_message() -> None:
    run = only_run(build_runs([content_events_span("Translate 'cat' to French", "chat")]))
    assert texts(run.input.input_messages) == [("user", "Translate 'cat' to French")]
    assert texts(run.output) == [("assistant", "chat")]


# --- v1.28 - v1.36: message events, as span events ---------------------------------------------------


def test_semantic_kernel_dotnet_span_events_with_gen_ai_event_content() -> None:
    tool_call = {
        "id": "call_1",
        "function": {"arguments": {"city": "Oslo"}, "name": "weather-get"},
        "type": "function",
    }
    chat = with_events(
        make_span(
            CHAT1,
            attributes={
                "gen_ai.operation.name": "chat.completions",
                "gen_ai.system": "openai",
                "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.usage.input_tokens": 30,
                "gen_ai.usage.output_tokens": 9,
                "gen_ai.response.finish_reason": '["ToolCalls"]',
            },
            name="chat.completions gpt-4o-mini",
        ),
        event(
            "gen_ai.system.message",
            **{"gen_ai.event.content": '{"role": "system", "content": "Weather bot."}'},
        ),
        event("gen_ai.user.message", **{"gen_ai.event.content": '{"role": "user", "content": "Oslo?"}'}),
        # SK writes the calls in the message and again beside it: one call, not two.
        event(
            "gen_ai.choice",
            **{
                "gen_ai.event.content": json.dumps(
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": None, "tool_calls": [tool_call]},
                        "tool_calls": [tool_call],
                        "finish_reason": "ToolCalls",
                    }
                )
            },
        ),
    )
    run = only_run(build_runs([chat]))
    assert texts(run.input.system_messages) == [("system", "Weather bot.")]
    assert texts(run.input.input_messages) == [("user", "Oslo?")]
    (answer,) = run.output
    assert invocations(answer) == [
        {
            "tool_call_id": "call_1",
            "tool_name": "weather-get",
            "args": {"city": "Oslo"},
            "result": None,
            "state": "call",
        }
    ]
    assert (run.model, run.usage.input_tokens, run.usage.output_tokens) == ("gpt-4o-mini", 30, 9)


def strands_legacy_trace() -> list[Span]:
    """Strands before gen_ai_latest_experimental: flat event attributes, content as JSON text of
    Bedrock content blocks; usage accumulated on the agent span; an event-loop span without
    operation name between agent and calls; tool spans with their input and result only in events."""
    use = {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": {"city": "Paris"}}}
    result = {"toolResult": {"toolUseId": "tooluse_1", "status": "success", "content": [{"text": "rainy"}]}}
    user = event("gen_ai.user.message", content=json.dumps([{"text": "Weather in Paris?"}]))
    agent = with_events(
        make_span(
            AGENT,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.system": "strands-agents",
                "gen_ai.agent.name": "Strands Agents",
                "gen_ai.request.model": "us.anthropic.claude-sonnet-4",
                "gen_ai.agent.system_prompt": "You forecast weather.",
                "gen_ai.usage.input_tokens": 300,
                "gen_ai.usage.output_tokens": 40,
            },
            start=100,
            end=900,
            name="invoke_agent Strands Agents",
        ),
        user,
        event("gen_ai.choice", message="It is rainy in Paris.\n", finish_reason="end_turn"),
    )
    cycle = with_events(
        make_span(
            OTHER, AGENT, {"event_loop.cycle_id": "c-1"}, start=110, end=800, name="execute_event_loop_cycle"
        ),
        user,
        event("gen_ai.choice", message=json.dumps([{"text": "It is rainy in Paris."}])),
    )
    chat_attrs = {"gen_ai.operation.name": "chat", "gen_ai.system": "strands-agents"}
    chat1 = with_events(
        make_span(
            CHAT1,
            OTHER,
            {**chat_attrs, "gen_ai.usage.input_tokens": 120, "gen_ai.usage.output_tokens": 25},
            start=120,
            name="chat",
        ),
        user,
        event(
            "gen_ai.choice",
            finish_reason="tool_use",
            message=json.dumps([{"reasoningContent": {"reasoningText": {"text": "Need the tool."}}}, use]),
        ),
    )
    tool = with_events(
        make_span(
            TOOL,
            OTHER,
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.system": "strands-agents",
                "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.id": "tooluse_1",
                "gen_ai.tool.status": "success",
            },
            start=300,
            name="execute_tool get_weather",
        ),
        event("gen_ai.tool.message", role="tool", content=json.dumps({"city": "Paris"}), id="tooluse_1"),
        event("gen_ai.choice", message=json.dumps([{"text": "rainy"}]), id="tooluse_1"),
    )
    chat2 = with_events(
        make_span(
            CHAT2,
            OTHER,
            {**chat_attrs, "gen_ai.usage.input_tokens": 180, "gen_ai.usage.output_tokens": 15},
            start=400,
            name="chat",
        ),
        user,
        event("gen_ai.assistant.message", content=json.dumps([use])),
        event("gen_ai.tool.message", content=json.dumps([result])),
        event(
            "gen_ai.choice", finish_reason="end_turn", message=json.dumps([{"text": "It is rainy in Paris."}])
        ),
    )
    return [agent, cycle, chat1, tool, chat2]


def test_strands_flat_event_attributes_give_one_faithful_run() -> None:
    spans = strands_legacy_trace()
    # The event-loop span carries message events but no provider: not a model call, not claimed.
    assert adapter_for(spans[1]) is None
    run = only_run(build_runs(spans))
    assert (run.span_id, run.agent_name, run.model) == (
        AGENT,
        "Strands Agents",
        "us.anthropic.claude-sonnet-4",
    )
    assert texts(run.input.system_messages) == [("system", "You forecast weather.")]
    assert texts(run.input.input_messages) == [("user", "Weather in Paris?")]
    assert run.input.remembered_messages == []
    first, final = run.output
    assert (first.content, first.reasoning) == ("", "Need the tool.")
    assert invocations(first) == [
        {
            "tool_call_id": "tooluse_1",
            "tool_name": "get_weather",
            "args": {"city": "Paris"},
            "result": "rainy",
            "state": "result",
        }
    ]
    assert (final.content, final.tool_invocations) == ("It is rainy in Paris.", [])
    # The chat spans only: the agent's accumulated 300/40 would count every call twice.
    assert (run.usage.input_tokens, run.usage.output_tokens) == (300, 40)


def test_strands_tool_span_reads_arguments_and_result_from_its_events() -> None:
    tool = ADAPTER.tool_execution(strands_legacy_trace()[3])
    assert (tool.call_id, tool.name, tool.args, tool.result, tool.is_error) == (
        "tooluse_1",
        "get_weather",
        {"city": "Paris"},
        "rainy",
        False,
    )
    failed = make_span(
        TOOL, attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.status": "error"}
    )
    failed = with_events(
        failed, event("gen_ai.choice", message=json.dumps([{"text": "city unknown"}]), id="t9")
    )
    broken = ADAPTER.tool_execution(failed)
    assert (broken.call_id, broken.result, broken.is_error) == ("t9", "city unknown", True)


def test_strands_latest_conventions_operation_details_span_events() -> None:
    details = "gen_ai.client.inference.operation.details"
    inputs = [{"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]}]
    call = {"type": "tool_call", "name": "get_weather", "id": "tooluse_1", "arguments": {"city": "Paris"}}
    agent = with_events(
        make_span(
            AGENT,
            attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "forecaster"},
            start=100,
            end=900,
        ),
        event(details, **{"gen_ai.input.messages": json.dumps(inputs)}),
    )
    chat = with_events(
        make_span(
            CHAT1,
            AGENT,
            {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "strands-agents"},
            start=200,
        ),
        event(details, **{"gen_ai.input.messages": json.dumps(inputs)}),
        event(
            details,
            **{
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [call], "finish_reason": "tool_use"}]
                )
            },
        ),
    )
    tool = with_events(
        make_span(
            TOOL,
            AGENT,
            {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.id": "tooluse_1"},
            start=300,
        ),
        event(details, **{"gen_ai.input.messages": json.dumps([{"role": "tool", "parts": [call]}])}),
        event(
            details,
            **{
                "gen_ai.output.messages": json.dumps(
                    [
                        {
                            "role": "tool",
                            "parts": [
                                {
                                    "type": "tool_call_response",
                                    "id": "tooluse_1",
                                    "response": [{"text": "rainy"}],
                                }
                            ],
                        }
                    ]
                )
            },
        ),
    )
    run = only_run(build_runs([agent, chat, tool]))
    assert texts(run.input.input_messages) == [("user", "Weather in Paris?")]
    assert invocations(run.output[0]) == [
        {
            "tool_call_id": "tooluse_1",
            "tool_name": "get_weather",
            "args": {"city": "Paris"},
            "result": "rainy",
            "state": "result",
        }
    ]
    assert ADAPTER.tool_execution(tool).name == "get_weather"


def test_semantic_kernel_agent_invocation_input_and_output() -> None:
    agent = make_span(
        AGENT,
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "Host",
            "gen_ai.agent.invocation_input": json.dumps(
                [{"role": "user", "content": "Book a table for two"}]
            ),
            "gen_ai.agent.invocation_output": json.dumps(
                [{"role": "assistant", "content": "Booked for 7pm.", "name": "Host"}]
            ),
        },
    )
    run = only_run(build_runs([agent]))
    assert (run.agent_name, texts(run.input.input_messages)) == ("Host", [("user", "Book a table for two")])
    assert texts(run.output) == [("assistant", "Booked for 7pm.")]


# --- v1.28 - v1.36: message events as log records ----------------------------------------------------


def test_semantic_kernel_python_log_records_with_json_text_bodies() -> None:
    chat = make_span(
        CHAT1,
        attributes={
            "gen_ai.operation.name": "chat.completions",
            "gen_ai.system": "openai",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.usage.input_tokens": 21,
            "gen_ai.usage.output_tokens": 4,
        },
        start=1_000,
        end=2_000,
    )
    logs = [
        record(
            CHAT1,
            "gen_ai.system.message",
            json.dumps({"role": "system", "content": "Answer in French."}),
            1_001,
        ),
        record(CHAT1, "gen_ai.user.message", json.dumps({"role": "user", "content": "cat?"}), 1_002),
        record(
            CHAT1,
            "gen_ai.choice",
            json.dumps(
                {"message": {"role": "assistant", "content": "chat"}, "finish_reason": "stop", "index": 0}
            ),
            1_900,
        ),
    ]
    run = only_run(build_runs([chat], logs))
    assert texts(run.input.system_messages) == [("system", "Answer in French.")]
    assert texts(run.input.input_messages) == [("user", "cat?")]
    assert texts(run.output) == [("assistant", "chat")]
    assert (run.usage.input_tokens, run.usage.output_tokens) == (21, 4)


def test_openai_v2_log_records_with_multimodal_user_content_and_developer_role() -> None:
    chat = make_span(CHAT1, attributes={"gen_ai.operation.name": "chat", "gen_ai.system": "openai"})
    image = {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}
    inline = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0K"}}
    logs = [
        record(CHAT1, "gen_ai.developer.message", {"content": "Describe images."}, 1),
        record(
            CHAT1,
            "gen_ai.user.message",
            {"content": [{"type": "text", "text": "What is this?"}, image, inline]},
            2,
        ),
        record(
            CHAT1,
            "gen_ai.choice",
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "A cat."}},
            3,
        ),
    ]
    run = only_run(build_runs([chat], logs))
    assert texts(run.input.system_messages) == [("system", "Describe images.")]
    (user,) = run.input.input_messages
    assert user.content == "What is this?"
    assert parts(user) == [
        {"type": "text", "text": "What is this?"},
        {"type": "uri", "modality": "image", "uri": "https://example.com/cat.png"},
        {"type": "blob", "modality": "image", "mime_type": "image/png", "content": "iVBORw0K"},
    ]
    assert texts(run.output) == [("assistant", "A cat.")]


def test_openai_v2_log_records_with_content_capture_off_keep_the_tool_call_names_only() -> None:
    chat = make_span(CHAT1, attributes={"gen_ai.operation.name": "chat", "gen_ai.system": "openai"})
    logs = [
        record(CHAT1, "gen_ai.system.message", None, 1),
        record(CHAT1, "gen_ai.user.message", None, 2),
        record(
            CHAT1,
            "gen_ai.choice",
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "tool_calls": [{"id": "call_7", "type": "function", "function": {"name": "lookup"}}],
                },
            },
            3,
        ),
    ]
    run = only_run(build_runs([chat], logs))
    assert run.content_missing is True
    assert invocations(run.output[0]) == [
        {"tool_call_id": "call_7", "tool_name": "lookup", "args": {}, "result": None, "state": "call"}
    ]


def test_several_choices_are_ordered_by_index_and_the_first_is_the_answer() -> None:
    chat = make_span(CHAT1, attributes={"gen_ai.operation.name": "chat", "gen_ai.system": "openai"})
    logs = [
        record(CHAT1, "gen_ai.user.message", {"content": "Name a colour"}, 1),
        record(CHAT1, "gen_ai.choice", {"index": 1, "message": {"content": "blue"}}, 2),
        record(CHAT1, "gen_ai.choice", {"index": 0, "message": {"content": "red"}}, 3),
    ]
    call = ADAPTER.llm_call(build_runs_input(chat, logs))
    assert texts(call.output_messages) == [("assistant", "red"), ("assistant", "blue")]
    assert texts(only_run(build_runs([chat], logs)).output) == [("assistant", "red")]


def build_runs_input(span: Span, logs: list[LogRecord]) -> Span:
    """The span as the transform reads it once its log records are attached."""
    from tracescore.ingest.transform.correlate import attach_logs

    (attached,) = attach_logs([span], logs)
    return attached


# --- v1.37+: the operation-details event --------------------------------------------------------------


def test_util_genai_operation_details_log_record_with_structured_attributes() -> None:
    # EVENT_ONLY capture: the span has model and usage, the log record has the (structured) content.
    chat = make_span(
        CHAT1,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.usage.input_tokens": 12,
            "gen_ai.usage.output_tokens": 3,
        },
    )
    # Typed as JSON values: mypy infers no nested literal against the AttributeValue union.
    input_messages: JsonValue = [{"role": "user", "parts": [{"type": "text", "content": "2+2?"}]}]
    output_messages: JsonValue = [
        {"role": "assistant", "parts": [{"type": "text", "content": "4"}], "finish_reason": "stop"}
    ]
    system_instructions: JsonValue = [{"type": "text", "content": "Be exact."}]
    details = LogRecord(
        trace_id=TRACE_ID,
        span_id=CHAT1,
        event_name="gen_ai.client.inference.operation.details",
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.usage.input_tokens": 12,
            "gen_ai.input.messages": input_messages,
            "gen_ai.output.messages": output_messages,
            "gen_ai.system_instructions": system_instructions,
        },
    )
    run = only_run(build_runs([chat], [details]))
    assert texts(run.input.system_messages) == [("system", "Be exact.")]
    assert texts(run.input.input_messages) == [("user", "2+2?")]
    assert texts(run.output) == [("assistant", "4")]
    # Usage comes from the span once, not again from the event.
    assert (run.usage.input_tokens, run.usage.output_tokens, run.model) == (12, 3, "gpt-4o")


def test_attributes_win_over_events_carrying_the_same_content() -> None:
    chat = with_events(
        make_span(
            CHAT1,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": json.dumps(
                    [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]
                ),
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": "hello"}]}]
                ),
            },
        ),
        event("gen_ai.user.message", content="hi (old event)"),
        event("gen_ai.choice", message=json.dumps({"content": "hello (old event)"})),
    )
    call = ADAPTER.llm_call(chat)
    assert (texts(call.input_messages), texts(call.output_messages)) == (
        [("user", "hi")],
        [("assistant", "hello")],
    )


# --- v1.37+ parts ------------------------------------------------------------------------------------


def test_v1_40_server_tool_call_parts_keep_their_details() -> None:
    answer = {
        "role": "assistant",
        "parts": [
            {
                "type": "server_tool_call",
                "id": "srv_1",
                "name": "web_search",
                "server_tool_call": {"type": "web_search", "input": {"query": "eclipse 2026"}},
            },
            {
                "type": "server_tool_call_response",
                "id": "srv_1",
                "server_tool_call_response": {
                    "type": "web_search_tool_result",
                    "content": [{"title": "Aug 12"}],
                },
            },
            {"type": "reasoning", "content": "The search says August."},
            {"type": "text", "content": "On 12 August."},
        ],
    }
    chat = make_span(
        CHAT1,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": "Eclipse?"}]}]
            ),
            "gen_ai.output.messages": json.dumps([answer]),
        },
    )
    (message,) = only_run(build_runs([chat])).output
    assert (message.content, message.reasoning) == ("On 12 August.", "The search says August.")
    assert invocations(message) == [
        {
            "tool_call_id": "srv_1",
            "tool_name": "web_search",
            "args": {"query": "eclipse 2026"},
            "result": [{"title": "Aug 12"}],
            "state": "result",
        }
    ]
    assert parts(message)[0] == {
        "type": "tool_call",
        "tool_call_id": "srv_1",
        "tool_name": "web_search",
        "args": {"query": "eclipse 2026"},
        "server": True,
    }


def test_file_and_uri_parts_are_kept_and_redacted_text_reads_as_missing() -> None:
    inputs = [
        {
            "role": "user",
            "parts": [
                {"type": "text", "content": "__REDACTED__"},
                {"type": "file", "modality": "document", "file_id": "file-123"},
                {"type": "uri", "modality": "image", "uri": "gs://bucket/cat.png"},
            ],
        }
    ]
    chat = make_span(
        CHAT1,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps(inputs),
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": "__REDACTED__"}]}]
            ),
        },
    )
    run = only_run(build_runs([chat]))
    (user,) = run.input.input_messages
    assert parts(user) == [
        {"type": "text", "text": ""},
        {"type": "file", "modality": "document", "file_id": "file-123"},
        {"type": "uri", "modality": "image", "uri": "gs://bucket/cat.png"},
    ]
    assert texts(run.output) == [("assistant", "")]
    assert run.content_missing is True


def test_tool_call_arguments_and_results_as_json_plain_or_double_encoded_text() -> None:
    def tool(**attrs: Any) -> Span:
        return make_span(TOOL, attributes={"gen_ai.operation.name": "execute_tool", **attrs})

    assert ADAPTER.tool_execution(tool(**{"gen_ai.tool.call.arguments": '"{\\"q\\": 1}"'})).args == {"q": 1}
    assert ADAPTER.tool_execution(tool(**{"gen_ai.tool.call.arguments": "city=Paris"})).args == "city=Paris"
    assert (
        ADAPTER.tool_execution(tool(**{"gen_ai.tool.call.arguments": '{"q": "trunc'})).args == '{"q": "trunc'
    )
    assert ADAPTER.tool_execution(tool(**{"gen_ai.tool.call.result": '{"temp": 57}'})).result == {"temp": 57}
    assert ADAPTER.tool_execution(tool(**{"gen_ai.tool.call.result": "__REDACTED__"})).result is None
    failed = ADAPTER.tool_execution(
        make_span(
            TOOL,
            attributes={"gen_ai.operation.name": "execute_tool", "error.type": "TimeoutError"},
            status_code=STATUS_ERROR,
        )
    )
    assert (failed.result, failed.is_error) == ("TimeoutError", True)


# --- operations, unnamed spans, usage, model ---------------------------------------------------------


def test_operation_names_map_to_roles() -> None:
    def role(operation: str) -> SpanRole:
        return ADAPTER.classify(make_span(OTHER, attributes={"gen_ai.operation.name": operation}))

    assert [role(op) for op in ("invoke_agent", "chat", "text_completion", "generate_content")] == [
        SpanRole.AGENT,
        SpanRole.LLM,
        SpanRole.LLM,
        SpanRole.LLM,
    ]
    assert [
        role(op) for op in ("execute_tool", "retrieval", "create_agent", "embeddings", "invoke_workflow")
    ] == [
        SpanRole.TOOL,
        SpanRole.RETRIEVER,
        SpanRole.OTHER,
        SpanRole.OTHER,
        SpanRole.OTHER,
    ]


def test_embeddings_and_create_agent_usage_is_not_a_model_call() -> None:
    spans = [
        make_span(
            AGENT, attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "rag"}, start=100
        ),
        make_span(
            OTHER,
            AGENT,
            {
                "gen_ai.operation.name": "embeddings",
                "gen_ai.request.model": "text-embedding-3",
                "gen_ai.usage.input_tokens": 500,
            },
            start=150,
        ),
        make_span(
            CHAT1,
            AGENT,
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.usage.input_tokens": 40,
                "gen_ai.usage.output_tokens": 8,
                "gen_ai.input.messages": json.dumps(
                    [{"role": "user", "parts": [{"type": "text", "content": "q"}]}]
                ),
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": "a"}]}]
                ),
            },
            start=200,
        ),
    ]
    run = only_run(build_runs(spans))
    assert (run.usage.input_tokens, run.usage.output_tokens, run.model) == (40, 8, "gpt-4o")


def test_unnamed_older_model_call_span_with_gen_ai_system_is_an_llm_run() -> None:
    chat = with_events(
        make_span(
            CHAT1,
            attributes={
                "gen_ai.system": "openai",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.usage.prompt_tokens": 9,
            },
            name="chat gpt-4o",
        ),
        event("gen_ai.user.message", content="Hello"),
        event("gen_ai.choice", message=json.dumps({"role": "assistant", "content": "Hi!"})),
    )
    assert adapter_for(chat) is ADAPTERS[-1] and ADAPTER.classify(chat) is SpanRole.LLM
    run = only_run(build_runs([chat]))
    assert (texts(run.input.input_messages), texts(run.output)) == (
        [("user", "Hello")],
        [("assistant", "Hi!")],
    )
    assert (run.model, run.usage.input_tokens) == ("gpt-4o", 9)


def test_unnamed_spans_are_classified_by_their_name_and_plain_spans_are_not_claimed() -> None:
    tool = make_span(TOOL, attributes={"gen_ai.tool.name": "lookup"}, name="execute_tool lookup")
    assert ADAPTER.claims(tool) and ADAPTER.classify(tool) is SpanRole.TOOL
    assert (
        ADAPTER.tool_execution(
            make_span(TOOL, attributes={"gen_ai.operation.name": "execute_tool"}, name="execute_tool fetch")
        ).name
        == "fetch"
    )
    assert not ADAPTER.claims(make_span(OTHER, attributes={"http.route": "/chat"}, name="chat"))
    assert not ADAPTER.claims(make_span(OTHER, attributes={"gen_ai.system": "openai"}, name="setup"))


def test_usage_names_of_every_generation_and_junk_models() -> None:
    def call(**attrs: Any) -> tuple[int, int, str | None]:
        result = ADAPTER.llm_call(make_span(CHAT1, attributes={"gen_ai.operation.name": "chat", **attrs}))
        return result.usage.input_tokens, result.usage.output_tokens, result.model

    assert call(**{"gen_ai.usage.input_tokens": "47", "gen_ai.usage.output_tokens": 17}) == (47, 17, None)
    assert call(**{"gen_ai.usage.prompt_tokens": 5, "gen_ai.usage.completion_tokens": 2}) == (5, 2, None)
    # Semantic Kernel .NET 1.x: its own names, and -1 for "not reported".
    assert call(**{"gen_ai.response.prompt_tokens": -1, "gen_ai.response.completion_tokens": 6}) == (
        0,
        6,
        None,
    )
    # Cache counts are already inside input_tokens.
    cached = {
        "gen_ai.usage.input_tokens": 100,
        "gen_ai.usage.cache_read.input_tokens": 80,
        "gen_ai.usage.output_tokens": 1,
    }
    assert call(**cached) == (100, 1, None)
    assert call(**{"gen_ai.request.model": "unknown", "gen_ai.response.model": "gpt-4o-2024-08-06"})[2] == (
        "gpt-4o-2024-08-06"
    )


def test_retrieval_documents_with_text_become_context() -> None:
    docs = [
        {"id": "d1", "score": 0.9, "content": "Paris is in France."},
        {"id": "d2", "page_content": "It rains."},
        {"id": "d3"},
    ]
    retriever = make_span(
        OTHER,
        AGENT,
        {"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.documents": json.dumps(docs)},
        start=150,
    )
    agent = make_span(AGENT, attributes={"gen_ai.operation.name": "invoke_agent"}, start=100)
    assert only_run(build_runs([agent, retriever])).context == ["Paris is in France.", "It rains."]


# --- leniency -----------------------------------------------------------------------------------------

EVENT_NAMES = [
    "gen_ai.user.message",
    "gen_ai.assistant.message",
    "gen_ai.tool.message",
    "gen_ai.system.message",
    "gen_ai.choice",
    "gen_ai.content.prompt",
    "gen_ai.content.completion",
    "gen_ai.client.inference.operation.details",
]
values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=12)
    | st.sampled_from(["[{", '{"text": 1}', "[]"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "content",
                    "message",
                    "tool_calls",
                    "id",
                    "role",
                    "parts",
                    "type",
                    "text",
                    "toolUse",
                    "function",
                ]
            ),
            inner,
            max_size=3,
        )
    ),
    max_leaves=8,
)
event_attributes = st.dictionaries(
    st.sampled_from(
        [
            "content",
            "message",
            "tool_calls",
            "id",
            "log.body",
            "gen_ai.event.content",
            "gen_ai.prompt",
            "gen_ai.completion",
            "gen_ai.input.messages",
            "gen_ai.output.messages",
            "gen_ai.system_instructions",
        ]
    ),
    values | values.map(lambda v: json.dumps(v)),
    max_size=4,
)
events = st.lists(
    st.builds(event, st.sampled_from(EVENT_NAMES)).flatmap(
        lambda e: event_attributes.map(lambda a: e.model_copy(update={"attributes": a}))
    ),
    max_size=5,
)


@settings(max_examples=300, deadline=None)
@given(events)
def test_reading_events_never_raises(span_events: list[SpanEvent]) -> None:
    span = with_events(make_span(CHAT1, attributes={"gen_ai.operation.name": "chat"}), *span_events)
    content = read_events(span)
    assert all(isinstance(m, Message) for m in [*content.input_messages, *content.output_messages])
    tool_from_events(span)
    ADAPTER.llm_call(span)
    ADAPTER.agent_info(span)
    ADAPTER.tool_execution(span)
