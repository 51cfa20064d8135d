"""OpenLLMetry / Traceloop spans -> AgentRuns: the real fixtures and hand-built span trees.

Expected values are written by hand from the spans (FIELD-GUIDE section 2, the fixtures' attributes),
never computed by the code under test. Message-shape details live in test_openllmetry_messages.
"""

from __future__ import annotations

import json
from typing import Any

from tests.support.conventions import adapter_name
from tests.support.fixture_files import TRACE_ID, load_otlp_spans, make_span
from tests.support.runs import only_run, texts
from tracescore.ingest.transform.adapters import (
    GenAiSemconvAdapter,
    OpenLlmetryAdapter,
    SpanRole,
    adapter_for,
)
from tracescore.ingest.transform.runs import build_runs
from tracescore.schemas import LogRecord, SpanEvent
from tracescore.schemas.spans import STATUS_ERROR, AttributeValue, JsonValue

MAIN = "openllmetry_traceloop__main"
LANGGRAPH = "openllmetry_traceloop__langgraph-react-agent-through-opentelemetry-instrumentation-"
V055 = "openllmetry_traceloop__openllmetry-0-55-2026-same-call-now-emits-gen-ai-input-messa"
CALL_ID = "call_VSPygqKTWdrhaFErNvMV18Yl"
WEATHER_PROMPT = "You are a helpful weather assistant. Use the get_weather tool."
ANSWER = "The weather in Paris is currently rainy with a temperature of 57°F."
ADAPTER = OpenLlmetryAdapter()


def roles_by_name(spans: list[Any]) -> dict[str, set[SpanRole]]:
    found: dict[str, set[SpanRole]] = {}
    for span in spans:
        assert ADAPTER.claims(span), span.name
        found.setdefault(span.name, set()).add(ADAPTER.classify(span))
    return found


def prompt(*messages: tuple[str, str]) -> dict[str, Any]:
    """gen_ai.prompt.N.role/content keys for (role, content) pairs."""
    attrs: dict[str, Any] = {}
    for i, (role, content) in enumerate(messages):
        attrs[f"gen_ai.prompt.{i}.role"] = role
        attrs[f"gen_ai.prompt.{i}.content"] = content
    return attrs


def chat(**attrs: Any) -> dict[str, Any]:
    return {"llm.request.type": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o", **attrs}


def decorated(kind: str, name: str, inputs: Any = None, output: Any = None) -> dict[str, Any]:
    attrs: dict[str, Any] = {"traceloop.span.kind": kind, "traceloop.entity.name": name}
    if inputs is not None:
        attrs["traceloop.entity.input"] = json.dumps(inputs)
    if output is not None:
        attrs["traceloop.entity.output"] = json.dumps(output)
    return attrs


# --- the fixtures -------------------------------------------------------------------------------------


def test_main_fixture_decorated_agent_with_two_openai_calls_is_one_run() -> None:
    spans = load_otlp_spans(MAIN)
    assert roles_by_name(spans) == {
        "weather_agent.agent": {SpanRole.AGENT},
        "openai.chat": {SpanRole.LLM},
        # The @tool span records no call id: the transform takes it for the execution of the
        # same-named call the model output names (call_VSPy...), never as a second call.
        "get_weather.tool": {SpanRole.TOOL},
    }
    run = only_run(build_runs(spans))
    assert (run.trace_id, run.span_id) == ("105f50de9768829bb5c77e6597a0a783", "6751b507e6072ca4")
    assert (run.agent_name, run.model, run.service_name) == ("weather_agent", "gpt-4o", "weather-agent-demo")
    # The agent's argument is the new turn; history and instructions come from the first prompt.
    assert texts(run.input.input_messages) == [("user", "What's the weather in Paris?")]
    assert texts(run.input.remembered_messages) == [
        ("user", "Hi, I am planning a trip to France."),
        ("assistant", "Great! How can I help with your trip?"),
    ]
    assert texts(run.input.system_messages) == [("system", WEATHER_PROMPT)]
    assert texts(run.output) == [("assistant", ""), ("assistant", ANSWER)]
    [invocation] = run.output[0].tool_invocations
    assert invocation.model_dump() == {
        "tool_call_id": CALL_ID,
        "tool_name": "get_weather",
        "args": {"location": "Paris"},
        "result": "rainy, 57°F",
        "state": "result",
    }
    assert run.output[1].tool_invocations == []
    assert (run.usage.input_tokens, run.usage.output_tokens) == (47 + 97, 17 + 52)
    assert run.content_missing is False


def test_main_fixture_tool_span_reads_the_decorated_call() -> None:
    [tool] = [s for s in load_otlp_spans(MAIN) if s.name == "get_weather.tool"]
    execution = ADAPTER.tool_execution(tool)
    assert (execution.call_id, execution.name) == (None, "get_weather")
    assert (execution.args, execution.result, execution.is_error) == (
        {"location": "Paris"},
        "rainy, 57°F",
        False,
    )


def test_langgraph_fixture_workflow_span_is_the_run_and_tool_joins_by_toolmessage_id() -> None:
    spans = load_otlp_spans(LANGGRAPH)
    assert len(spans) == 15
    assert roles_by_name(spans) == {
        "LangGraph.workflow": {SpanRole.AGENT},
        "agent.task": {SpanRole.OTHER},
        "call_model.task": {SpanRole.OTHER},
        "RunnableSequence.task": {SpanRole.OTHER},
        "Prompt.task": {SpanRole.OTHER},
        "should_continue.task": {SpanRole.OTHER},
        "tools.task": {SpanRole.OTHER},
        "FakeToolModel.chat": {SpanRole.LLM},
        "get_weather.tool": {SpanRole.TOOL},
    }
    [tool] = [s for s in spans if s.name == "get_weather.tool"]
    execution = ADAPTER.tool_execution(tool)
    # input_str is "{'location': 'Paris'}" (Python repr); inputs holds the dict; the output is a
    # serialised ToolMessage carrying the call id.
    assert (execution.call_id, execution.name, execution.args, execution.result) == (
        CALL_ID,
        "get_weather",
        {"location": "Paris"},
        "rainy, 57°F",
    )

    run = only_run(build_runs(spans))
    assert (run.span_id, run.agent_name) == ("18f0e0d5ddb96872", "LangGraph")
    # The chat spans say "unknown"; the workflow's AIMessages carry response_metadata.model_name.
    assert run.model == "gpt-4o-2024-08-06"
    assert texts(run.input.input_messages) == [("user", "What's the weather in Paris?")]
    assert texts(run.input.remembered_messages) == [
        ("user", "Hi, I am planning a trip to France."),
        ("assistant", "Great! How can I help with your trip?"),
    ]
    assert texts(run.input.system_messages) == [("system", WEATHER_PROMPT)]
    assert texts(run.output) == [("assistant", ""), ("assistant", ANSWER)]
    [invocation] = run.output[0].tool_invocations
    assert (invocation.tool_call_id, invocation.tool_name, invocation.args, invocation.result) == (
        CALL_ID,
        "get_weather",
        {"location": "Paris"},
        "rainy, 57°F",
    )
    assert (run.usage.input_tokens, run.usage.output_tokens) == (144, 69)


def test_langgraph_workflow_agent_info_reads_the_serialised_messages() -> None:
    [workflow] = [s for s in load_otlp_spans(LANGGRAPH) if s.name == "LangGraph.workflow"]
    info = ADAPTER.agent_info(workflow)
    assert (info.name, info.convention_name) == (None, "LangGraph")  # traceloop.entity.name
    assert texts(info.input_messages) == [
        ("user", "Hi, I am planning a trip to France."),
        ("assistant", "Great! How can I help with your trip?"),
        ("user", "What's the weather in Paris?"),
    ]
    # The output repeats the input conversation: only what the run added, its AI messages, stays.
    assert texts(info.output_messages) == [("assistant", ""), ("assistant", ANSWER)]
    [call] = info.output_messages[0].parts
    assert (call.type, call.model_extra) == (
        "tool_call",
        {"tool_call_id": CALL_ID, "tool_name": "get_weather", "args": {"location": "Paris"}},
    )


def test_v055_fixture_plain_semconv_spans_are_left_to_the_genai_adapter() -> None:
    spans = load_otlp_spans(V055)
    assert [ADAPTER.claims(s) for s in spans] == [False, False]
    assert all(isinstance(adapter_for(s), GenAiSemconvAdapter) for s in spans)
    # Without traceloop-sdk each call is a trace of its own (as the receivers group them).
    first = only_run(build_runs([s for s in spans if s.trace_id == "c5b6bbc896040aa80f20e1140d6737cb"]))
    second = only_run(build_runs([s for s in spans if s.trace_id == "d4fe942da7e2e223891598c30221d074"]))
    [call] = first.output[0].tool_invocations
    assert (call.tool_call_id, call.args, call.state) == (CALL_ID, {"location": "Paris"}, "call")
    assert texts(second.output) == [("assistant", ANSWER)]


def test_v055_span_with_traceloop_markers_is_ours_and_reads_the_new_message_attributes() -> None:
    [first, _] = load_otlp_spans(V055)
    marked = first.model_copy(
        update={"attributes": {**first.attributes, "traceloop.workflow.name": "weather_agent"}}
    )
    assert adapter_name(marked) == "openllmetry_traceloop"
    assert ADAPTER.classify(marked) is SpanRole.LLM
    call = ADAPTER.llm_call(marked)
    assert texts(call.input_messages) == [
        ("system", WEATHER_PROMPT),
        ("user", "Hi, I am planning a trip to France."),
        ("assistant", "Great! How can I help with your trip?"),
        ("user", "What's the weather in Paris?"),
    ]
    [out] = call.output_messages
    assert [(p.type, p.model_extra) for p in out.parts] == [
        ("tool_call", {"tool_call_id": CALL_ID, "tool_name": "get_weather", "args": {"location": "Paris"}})
    ]
    assert (call.model, call.usage.input_tokens, call.usage.output_tokens) == ("gpt-4o", 47, 17)


# --- detection and roles ------------------------------------------------------------------------------


def test_claims_only_openllmetry_spans() -> None:
    ours: list[dict[str, object]] = [
        {"traceloop.workflow.name": "w"},
        {"gen_ai.prompt.0.content": "hi"},
        {"gen_ai.completion.3.tool_calls.0.name": "f"},
        {"llm.request.type": "chat"},
        {"llm.usage.total_tokens": 5},
        {"llm.prompts.0.content": "hi"},  # the first OpenLLMetry releases
    ]
    theirs: list[dict[str, object]] = [
        {"gen_ai.operation.name": "chat", "gen_ai.input.messages": "[]"},
        {"llm.input_messages.0.message.role": "user", "llm.token_count.prompt": 3},
        {"llm.prompts.0.prompt.text": "hi"},  # OpenInference's completion prompts
        {"gen_ai.prompt": "free text of semconv 1.26"},
        {"http.route": "/"},
    ]
    assert [ADAPTER.claims(make_span("a000000000000001", attributes=a)) for a in ours] == [True] * 6
    assert [ADAPTER.claims(make_span("a000000000000001", attributes=a)) for a in theirs] == [False] * 5


def test_roles_of_span_kinds_request_types_and_operations() -> None:
    def role(attrs: dict[str, Any]) -> SpanRole:
        return ADAPTER.classify(make_span("a000000000000001", attributes=attrs))

    assert role({"traceloop.span.kind": "agent"}) is SpanRole.AGENT
    assert role({"traceloop.span.kind": "workflow"}) is SpanRole.AGENT
    assert role({"traceloop.span.kind": "task", "traceloop.entity.name": "t"}) is SpanRole.OTHER
    assert role({"traceloop.span.kind": "tool", "gen_ai.tool.call.id": "c1"}) is SpanRole.TOOL
    assert role({"traceloop.span.kind": "tool"}) is SpanRole.TOOL  # content off: the only record
    assert role({"llm.request.type": "completion", "gen_ai.prompt.0.user": "x"}) is SpanRole.LLM
    # Embedding spans list their input texts as gen_ai.prompt.N.content: not a model turn.
    assert role({"llm.request.type": "embedding", "gen_ai.prompt.0.content": "x"}) is SpanRole.OTHER
    assert role({"traceloop.workflow.name": "w", "gen_ai.operation.name": "chat"}) is SpanRole.LLM
    assert role({"traceloop.workflow.name": "w", "gen_ai.operation.name": "embeddings"}) is SpanRole.OTHER
    assert role({"gen_ai.completion.0.content": "x"}) is SpanRole.LLM


def test_vector_db_query_span_is_a_retriever_with_its_documents() -> None:
    hit: dict[str, AttributeValue] = {
        "db.query.result.id": "1",
        "db.query.result.document": "Paris is in France.",
    }
    span = make_span("d000000000000001", name="chroma.query", attributes={"traceloop.workflow.name": "rag"})
    span = span.model_copy(
        update={
            "events": [
                SpanEvent(name="db.query.result", attributes=hit),
                SpanEvent(name="db.query.result", attributes={"db.query.result.id": "2"}),
            ]
        }
    )
    assert ADAPTER.classify(span) is SpanRole.RETRIEVER
    assert ADAPTER.retrieved_texts(span) == ["Paris is in France."]


# --- hand-built span trees ----------------------------------------------------------------------------


def test_workflow_wrapping_an_agent_is_one_run_rooted_at_the_workflow() -> None:
    spans = [
        make_span("a000000000000001", attributes=decorated("workflow", "trip_planner"), start=100, end=900),
        make_span(
            "a000000000000002",
            "a000000000000001",
            {
                **decorated("agent", "weather_agent", {"args": ["Rain in Oslo?"], "kwargs": {}}),
                "gen_ai.agent.name": "weather_agent",
            },
            start=150,
            end=800,
        ),
        make_span(
            "c000000000000001",
            "a000000000000002",
            chat(
                **prompt(("system", "Be brief."), ("user", "Rain in Oslo?")),
                **{"gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "Yes."},
                **{"gen_ai.usage.input_tokens": 9, "gen_ai.usage.output_tokens": 2},
            ),
            start=200,
        ),
    ]
    run = only_run(build_runs(spans))
    # The transform keeps the outer span as the run; the inner agent's own name names it (the
    # workflow's traceloop.entity.name is only the convention's), and fills what the workflow lacks.
    assert (run.span_id, run.agent_name) == ("a000000000000001", "weather_agent")
    assert texts(run.input.input_messages) == [("user", "Rain in Oslo?")]
    assert texts(run.input.system_messages) == [("system", "Be brief.")]
    assert texts(run.output) == [("assistant", "Yes.")]
    assert (run.usage.input_tokens, run.usage.output_tokens) == (9, 2)


def test_model_calls_without_a_decorator_are_runs_of_their_own() -> None:
    spans = [
        make_span(
            "c000000000000001",
            attributes=chat(
                **prompt(("user", "2+2?")),
                **{"gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "4"},
                **{"gen_ai.usage.prompt_tokens": 5, "gen_ai.usage.completion_tokens": 1},  # 0.33.x names
            ),
        )
    ]
    run = only_run(build_runs(spans))
    assert (run.span_id, run.agent_name, run.model) == ("c000000000000001", None, "gpt-4o")
    assert texts(run.input.input_messages) == [("user", "2+2?")]
    assert texts(run.output) == [("assistant", "4")]
    assert (run.usage.input_tokens, run.usage.output_tokens) == (5, 1)


def test_oldest_llm_prefixed_keys_are_read() -> None:
    span = make_span(
        "c000000000000001",
        attributes={
            "llm.vendor": "OpenAI",
            "llm.request.type": "chat",
            "llm.request.model": "gpt-3.5-turbo",
            "llm.prompts.0.role": "user",
            "llm.prompts.0.content": "Tell me a joke",
            "llm.completions.0.role": "assistant",
            "llm.completions.0.content": "Why did the chicken...",
            "llm.usage.prompt_tokens": 11,
            "llm.usage.completion_tokens": 7,
            "llm.usage.total_tokens": 18,
        },
    )
    call = ADAPTER.llm_call(span)
    assert texts(call.input_messages) == [("user", "Tell me a joke")]
    assert texts(call.output_messages) == [("assistant", "Why did the chicken...")]
    assert (call.model, call.usage.input_tokens, call.usage.output_tokens) == ("gpt-3.5-turbo", 11, 7)


def test_junk_model_and_empty_array_values_are_ignored() -> None:
    attrs = {
        "llm.request.type": "chat",
        "gen_ai.request.model": "unknown",
        "gen_ai.response.model": "unknown",
        "llm.request.reasoning_effort": [],
        "traceloop.association.properties.ls_model_name": "claude-3-5-sonnet",
        **prompt(("user", "hi")),
    }
    call = ADAPTER.llm_call(make_span("c000000000000001", attributes=attrs))
    assert call.model == "claude-3-5-sonnet"
    del attrs["traceloop.association.properties.ls_model_name"]
    assert ADAPTER.llm_call(make_span("c000000000000001", attributes=attrs)).model is None


def test_decorated_method_input_skips_self_and_kwargs_name_the_question() -> None:
    def turn(inputs: Any) -> list[tuple[str, str]]:
        span = make_span("a000000000000001", attributes=decorated("agent", "a", inputs))
        return texts(ADAPTER.agent_info(span).input_messages)

    # traceloop's JSONEncoder writes a bound method's self as its class name.
    assert turn({"args": ["WeatherAgent", "Is it sunny?"], "kwargs": {}}) == [("user", "Is it sunny?")]
    assert turn({"args": [], "kwargs": {"question": "Why?", "style": "short"}}) == [("user", "Why?")]
    assert turn({"args": [{"role": "user", "content": "one message"}], "kwargs": {}}) == [
        ("user", "one message")
    ]
    assert turn(
        {"args": [[{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]], "kwargs": {}}
    ) == [
        ("system", "S"),
        ("user", "U"),
    ]
    # Two free-text arguments: which one the user typed is unknown, the first prompt decides.
    assert turn({"args": ["first text", "second text"], "kwargs": {}}) == []
    assert turn({"args": [3, 4], "kwargs": {}}) == []


def test_langchain_agent_executor_input_and_output_keys() -> None:
    span = make_span(
        "a000000000000001",
        attributes={
            "traceloop.span.kind": "workflow",
            "traceloop.entity.name": "AgentExecutor",
            "traceloop.entity.input": json.dumps(
                {
                    "inputs": {"input": "What is 3 * 7?"},
                    "tags": [],
                    "metadata": {},
                    "kwargs": {"name": "AgentExecutor"},
                }
            ),
            "traceloop.entity.output": json.dumps(
                {"outputs": {"input": "What is 3 * 7?", "output": "21"}, "kwargs": {}}
            ),
        },
    )
    info = ADAPTER.agent_info(span)
    assert (info.convention_name, texts(info.input_messages), texts(info.output_messages)) == (
        "AgentExecutor",
        [("user", "What is 3 * 7?")],
        [("assistant", "21")],
    )


def test_agent_output_is_the_fallback_when_model_calls_recorded_no_text() -> None:
    spans = [
        make_span(
            "a000000000000001",
            attributes=decorated(
                "agent", "summarizer", {"args": ["Summarize it"], "kwargs": {}}, {"summary": "Short."}
            ),
            start=100,
            end=900,
        ),
        make_span(
            "c000000000000001", "a000000000000001", chat(**{"gen_ai.usage.input_tokens": 3}), start=200
        ),
    ]
    run = only_run(build_runs(spans))
    assert texts(run.output) == [("assistant", '{"summary": "Short."}')]


def test_content_tracing_off_keeps_tool_calls_and_marks_the_run_content_missing() -> None:
    spans = [
        make_span("a000000000000001", attributes=decorated("agent", "weather_agent"), start=100, end=900),
        make_span(
            "c000000000000001",
            "a000000000000001",
            chat(**{"gen_ai.usage.input_tokens": 47, "gen_ai.usage.output_tokens": 17}),
            start=200,
        ),
        make_span("b000000000000001", "a000000000000001", decorated("tool", "get_weather"), start=300),
        make_span(
            "c000000000000002",
            "a000000000000001",
            chat(**{"gen_ai.usage.input_tokens": 97, "gen_ai.usage.output_tokens": 52}),
            start=400,
        ),
    ]
    run = only_run(build_runs(spans))
    assert run.content_missing is True
    assert [(t.tool_name, t.state) for m in run.output for t in m.tool_invocations] == [
        ("get_weather", "call")
    ]
    assert (run.usage.input_tokens, run.usage.output_tokens) == (144, 69)


def test_redacted_content_reads_as_empty_text() -> None:
    spans = [
        make_span(
            "c000000000000001",
            attributes=chat(
                **prompt(("user", "__REDACTED__")),
                **{"gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "__REDACTED__"},
            ),
        )
    ]
    run = only_run(build_runs(spans))
    assert run.content_missing is True
    assert [m.content for m in [*run.input.input_messages, *run.output]] == ["", ""]


def test_langchain_tool_error_and_list_content_toolmessage() -> None:
    output = {
        "output": {
            "lc": 1,
            "type": "constructor",
            "id": ["langchain", "schema", "messages", "ToolMessage"],
            "kwargs": {
                "content": [{"type": "text", "text": "city not found"}],
                "tool_call_id": "call_1",
                "status": "error",
                "type": "tool",
            },
        },
        "kwargs": {},
    }
    span = make_span(
        "b000000000000001",
        attributes={
            "traceloop.span.kind": "tool",
            "traceloop.entity.name": "get_weather",
            "traceloop.entity.input": json.dumps({"input_str": "{'location': 'Atlantis'}", "inputs": None}),
            "traceloop.entity.output": json.dumps(output),
        },
        status_code=STATUS_ERROR,
    )
    assert ADAPTER.classify(span) is SpanRole.TOOL
    tool = ADAPTER.tool_execution(span)
    assert (tool.call_id, tool.args, tool.result, tool.is_error) == (
        "call_1",
        {"location": "Atlantis"},
        "city not found",
        True,
    )


def test_semconv_tool_keys_on_a_traceloop_tool_span_win() -> None:
    span = make_span(
        "b000000000000001",
        attributes={
            **decorated("tool", "search", {"args": [], "kwargs": {"q": "x"}}, "ignored"),
            "gen_ai.tool.call.id": "call_9",
            "gen_ai.tool.name": "web_search",
            "gen_ai.tool.call.arguments": '{"q": "eclipse"}',
            "gen_ai.tool.call.result": '{"hits": 3}',
        },
    )
    tool = ADAPTER.tool_execution(span)
    assert (tool.call_id, tool.name, tool.args, tool.result) == (
        "call_9",
        "web_search",
        {"q": "eclipse"},
        {"hits": 3},
    )


def test_event_mode_content_comes_from_log_records() -> None:
    span = make_span(
        "c000000000000001",
        attributes=chat(**{"gen_ai.usage.input_tokens": 8, "gen_ai.usage.output_tokens": 4}),
    )

    def record(at: int, name: str, body: JsonValue) -> LogRecord:
        return LogRecord(
            trace_id=TRACE_ID, span_id="c000000000000001", time_unix_nano=at, event_name=name, body=body
        )

    logs = [
        record(1, "gen_ai.system.message", {"content": "Be brief."}),
        record(2, "gen_ai.user.message", {"content": "Weather in Rome?"}),
        record(
            3,
            "gen_ai.choice",
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {"content": ""},
                "tool_calls": [
                    {
                        "id": "call_r",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'},
                    }
                ],
            },
        ),
    ]
    run = only_run(build_runs([span], logs))
    assert texts(run.input.system_messages) == [("system", "Be brief.")]
    assert texts(run.input.input_messages) == [("user", "Weather in Rome?")]
    [invocation] = run.output[0].tool_invocations
    assert (invocation.tool_call_id, invocation.tool_name, invocation.args) == (
        "call_r",
        "get_weather",
        {"city": "Rome"},
    )


def test_decorated_workflow_without_an_agent_owns_the_calls_under_its_tasks() -> None:
    spans = [
        make_span(
            "a000000000000001",
            attributes=decorated("workflow", "joke_pipeline", {"args": [], "kwargs": {"topic": "cats"}}),
            start=100,
            end=900,
        ),
        make_span("b000000000000001", "a000000000000001", decorated("task", "write_joke"), start=150),
        make_span(
            "c000000000000001",
            "b000000000000001",
            chat(
                **prompt(("user", "Tell a joke about cats")),
                **{"gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "Meow."},
                **{"gen_ai.usage.input_tokens": 6, "gen_ai.usage.output_tokens": 2},
            ),
            start=200,
        ),
        make_span("b000000000000002", "a000000000000001", decorated("task", "rate_joke"), start=400),
        make_span(
            "c000000000000002",
            "b000000000000002",
            chat(
                **prompt(("user", "Rate: Meow.")),
                **{"gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "3/10"},
                **{"gen_ai.usage.input_tokens": 5, "gen_ai.usage.output_tokens": 3},
            ),
            start=500,
        ),
    ]
    run = only_run(build_runs(spans))
    assert (run.span_id, run.agent_name) == ("a000000000000001", "joke_pipeline")
    # The only text argument is the topic keyword: the caller's input.
    assert texts(run.input.input_messages) == [("user", "cats")]
    assert texts(run.output) == [("assistant", "Meow."), ("assistant", "3/10")]
    assert (run.usage.input_tokens, run.usage.output_tokens) == (11, 5)
