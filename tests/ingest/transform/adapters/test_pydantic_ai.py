"""The Pydantic AI / Logfire adapter: instrumentation formats 1 - 6 through the transform, on the shared
fixtures and on hand-built spans for the shapes the fixtures lack.

Expected values are written by hand from the spans (FIELD-GUIDE section 6; pydantic-ai's
``_instrumentation.py``, ``messages.py``, ``tests/test_logfire.py``), never computed by the code under test.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.conventions import adapter_name
from tests.support.fixture_files import TRACE_ID, load_otlp_spans, make_span
from tests.support.runs import invocations, only_run, parts, texts
from tracescore.ingest.transform.adapters import SpanRole
from tracescore.ingest.transform.adapters.pydantic_ai import PydanticAiAdapter
from tracescore.ingest.transform.adapters.pydantic_ai_messages import request_groups
from tracescore.ingest.transform.runs import build_runs
from tracescore.schemas import LogRecord, Span
from tracescore.schemas.spans import STATUS_ERROR, JsonValue

ADAPTER = PydanticAiAdapter()
INSTRUCTIONS = "You are a helpful weather assistant. Always use the get_weather tool."
CALL_ID = "call_VSPygqKTWdrhaFErNvMV18Yl"
THOUGHT = "The user wants the weather in Paris; I should call get_weather."
FINAL = "It is rainy and 57°F in Paris right now."
HISTORY = [
    ("user", "Hi, I am planning a trip to France."),
    ("assistant", "Great! How can I help with your trip?"),
]
QUESTION = [("user", "What is the weather in Paris?")]
ROOT, CHAT1, TOOL, CHAT2 = "a000000000000001", "c000000000000001", "d000000000000001", "c000000000000002"
RETRY = "Tool error\n\nFix the errors and try again."


# --- helpers ---------------------------------------------------------------------------------------


def text(content: str) -> dict[str, Any]:
    return {"type": "text", "content": content}


def msg(role: str, *parts: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"role": role, "parts": list(parts), **extra}


def call(call_id: str, name: str, arguments: Any, **extra: Any) -> dict[str, Any]:
    return {"type": "tool_call", "id": call_id, "name": name, "arguments": arguments, **extra}


def reply(call_id: str, name: str, result: Any, **extra: Any) -> dict[str, Any]:
    return {"type": "tool_call_response", "id": call_id, "name": name, "result": result, **extra}


def dumps(*items: Any) -> str:
    return json.dumps(list(items))


def pai(span_id: str, parent: str, name: str, start: int, attrs: dict[str, Any], **kw: Any) -> Span:
    """A span as pydantic-ai's tracer writes it (instrumentation scope ``pydantic-ai``)."""
    return make_span(span_id, parent, attrs, start=start, end=start + 50, name=name, **kw).model_copy(
        update={"scope_name": "pydantic-ai"}
    )


def agent_span(all_messages: list[dict[str, Any]], span_id: str = ROOT, /, **attrs: Any) -> Span:
    base = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "helper",
        "model_name": "gpt-4o",
        "pydantic_ai.all_messages": json.dumps(all_messages),
        "gen_ai.aggregated_usage.input_tokens": 900,
        "gen_ai.aggregated_usage.output_tokens": 90,
    }
    return pai(span_id, "", "invoke_agent helper", 0, {**base, **attrs})


def chat_span(
    span_id: str, start: int, inputs: list[dict[str, Any]], outputs: list[dict[str, Any]], **attrs: Any
) -> Span:
    base = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o",
        "model_request_parameters": "{}",
        "gen_ai.input.messages": json.dumps(inputs),
        "gen_ai.output.messages": json.dumps(outputs),
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 5,
    }
    return pai(span_id, ROOT, "chat gpt-4o", start, {**base, **attrs})


def tool_span(
    span_id: str,
    start: int,
    call_id: str,
    name: str,
    status_code: int = 0,
    status_message: str = "",
    /,
    **attrs: Any,
) -> Span:
    base = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call_id,
        "logfire.msg": f"running tool: {name}",
    }
    status = {"status_code": status_code, "status_message": status_message}
    return pai(span_id, ROOT, f"execute_tool {name}", start, {**base, **attrs}, **status)


# --- the convention fixtures ---------------------------------------------------------------------------


def test_main_fixture_format_5_gives_one_faithful_run() -> None:
    spans = load_otlp_spans("pydantic_ai_logfire__main")
    assert all(adapter_name(s) == "pydantic_ai_logfire" for s in spans)
    roles = {s.name: ADAPTER.classify(s) for s in spans}
    assert roles == {
        "invoke_agent weather_agent": SpanRole.AGENT,
        "chat gpt-4o": SpanRole.LLM,
        "execute_tool get_weather": SpanRole.TOOL,
    }

    run = only_run(build_runs(spans))
    assert (run.trace_id, run.span_id) == ("db8811f5682206d47312788c6171ef12", "aca093e06e4d692f")
    assert (run.agent_name, run.model, run.status) == ("weather_agent", "gpt-4o", "ok")
    assert texts(run.input.input_messages) == QUESTION  # the user request at new_message_index=2
    assert texts(run.input.remembered_messages) == HISTORY
    assert texts(run.input.system_messages) == [("system", INSTRUCTIONS)]

    first, final = run.output
    assert (first.content, first.reasoning) == ("", THOUGHT)  # thinking part, kept out of content
    assert invocations(first) == [
        {
            "tool_call_id": CALL_ID,
            "tool_name": "get_weather",
            "args": {"city": "Paris"},
            "result": "rainy, 57°F",
            "state": "result",
        }
    ]
    assert (final.content, final.tool_invocations) == (FINAL, [])
    # 47+97 / 17+14 from the chat spans; the agent's aggregated_usage (144/31) is never added on top.
    assert (run.usage.input_tokens, run.usage.output_tokens) == (144, 31)
    assert not run.content_missing


def test_format_6_fixture_agent_span_alone_gives_input_history_and_final_answer() -> None:
    run = only_run(
        build_runs(
            load_otlp_spans(
                "pydantic_ai_logfire__format-version-6-opt-in-tool-results-in-role-tool-messages-a"
            )
        )
    )
    assert (run.span_id, run.agent_name, run.model) == ("df77c3c1ff17d52d", "weather_agent", "gpt-4o")
    assert texts(run.input.input_messages) == QUESTION
    assert texts(run.input.remembered_messages) == HISTORY
    assert texts(run.input.system_messages) == [("system", INSTRUCTIONS)]
    # No chat span: the run's own messages after the new turn are its steps.
    step, final = run.output
    assert (step.content, step.reasoning, final.content) == ("", THOUGHT, FINAL)
    # The role-tool result sits in the agent span only: joined by call id, it is not a step itself.
    assert [(i.tool_call_id, i.tool_name, i.args, i.state, i.result) for i in step.tool_invocations] == [
        (CALL_ID, "get_weather", {"city": "Paris"}, "result", "rainy, 57°F")
    ]
    assert (run.usage.input_tokens, run.usage.output_tokens) == (0, 0)  # aggregated_usage is not usage


def test_format_1_fixture_event_dicts_give_the_same_run() -> None:
    spans = load_otlp_spans(
        "pydantic_ai_logfire__pydantic-ai-0-x-format-version-1-per-message-event-dicts-in-"
    )
    roles = {s.span_id: ADAPTER.classify(s) for s in spans}
    assert roles == {
        "ee45f80e13341bb9": SpanRole.AGENT,  # carries run-total gen_ai.usage.*: must not be a model call
        "544d6a2176712d38": SpanRole.LLM,
        "8bb186a5df3e5cf6": SpanRole.OTHER,  # "running tools" wrapper
        "33fedcff342862f5": SpanRole.TOOL,
        "568b5a644bdc9a87": SpanRole.LLM,
    }
    run = only_run(build_runs(spans))
    assert (run.span_id, run.agent_name, run.model) == ("ee45f80e13341bb9", "weather_agent", "gpt-4o")
    assert texts(run.input.input_messages) == QUESTION
    assert texts(run.input.remembered_messages) == HISTORY
    assert texts(run.input.system_messages) == [("system", INSTRUCTIONS)]
    first, final = run.output
    assert (first.content, first.reasoning) == ("", THOUGHT)  # [{"kind": "thinking", "text"}]
    assert invocations(first) == [
        {
            "tool_call_id": CALL_ID,
            "tool_name": "get_weather",
            "args": {"city": "Paris"},
            "result": "rainy, 57°F",  # tool_response of the "running tool" span
            "state": "result",
        }
    ]
    assert final.content == FINAL
    assert (run.usage.input_tokens, run.usage.output_tokens) == (47 + 97, 17 + 14)


# --- formats 5 / 6 by hand -------------------------------------------------------------------------


def weather_trace(tool_role: str) -> list[Span]:
    """The fixture's conversation, with chat spans, tool results in a ``tool_role`` message."""
    history = [msg("user", text("Hi")), msg("assistant", text("Hello!"))]
    ask = msg("user", text("Weather in Paris?"))
    step = msg(
        "assistant",
        {"type": "thinking", "content": "call it"},
        call(CALL_ID, "get_weather", {"city": "Paris"}),
    )
    result = msg(tool_role, reply(CALL_ID, "get_weather", "rainy"))
    answer = msg("assistant", text("Rainy."), finish_reason="stop")
    return [
        agent_span([*history, ask, step, result, answer], **{"pydantic_ai.new_message_index": 2}),
        chat_span(CHAT1, 100, [*history, ask], [step]),
        chat_span(CHAT2, 300, [*history, ask, step, result], [answer]),
    ]


def test_format_6_tool_role_results_join_the_call_without_a_tool_span() -> None:
    run = only_run(build_runs(weather_trace("tool")))
    first, final = run.output
    assert invocations(first) == [
        {
            "tool_call_id": CALL_ID,
            "tool_name": "get_weather",
            "args": {"city": "Paris"},
            "result": "rainy",
            "state": "result",
        }
    ]
    assert (first.reasoning, final.content) == ("call it", "Rainy.")
    assert texts(run.input.input_messages) == [("user", "Weather in Paris?")]
    assert texts(run.input.remembered_messages) == [("user", "Hi"), ("assistant", "Hello!")]
    assert (run.usage.input_tokens, run.usage.output_tokens) == (20, 10)


def test_format_5_user_role_tool_result_is_read_as_a_tool_message() -> None:
    spans = weather_trace("user")
    call2 = ADAPTER.llm_call(spans[2])
    assert [m.role for m in call2.input_messages] == ["user", "assistant", "user", "assistant", "tool"]
    assert call2.input_messages[-1].content == "rainy"
    assert invocations(only_run(build_runs(spans)).output[0])[0]["result"] == "rainy"


def test_chat_span_alone_does_not_take_a_user_role_tool_result_for_the_new_input() -> None:
    # A model request outside any agent (direct model_request): the run is the chat span itself.
    ask = msg("user", text("Weather in Paris?"))
    step = msg("assistant", call(CALL_ID, "get_weather", {"city": "Paris"}))
    spans = [
        chat_span(
            CHAT2,
            300,
            [ask, step, msg("user", reply(CALL_ID, "get_weather", "rainy"))],
            [msg("assistant", text("Rainy."))],
        ).model_copy(update={"parent_span_id": ""})
    ]
    run = only_run(build_runs(spans))
    assert run.span_id == CHAT2
    # The role-user tool result is read as a tool message, so it is the turn's own tool exchange:
    # the question stays the new input, and there is no earlier history.
    assert texts(run.input.input_messages) == [("user", "Weather in Paris?")]
    assert run.input.remembered_messages == []
    assert texts(run.output) == [("assistant", "Rainy.")]


def test_mixed_request_message_is_split_into_tool_results_and_the_user_prompt() -> None:
    # Up to format 5 one ModelRequest (deferred tool results + a new prompt) is one role-user message.
    mixed = msg("user", reply("c1", "approve", "approved"), text("Now book it."))
    call_ = ADAPTER.llm_call(chat_span(CHAT1, 100, [mixed], [msg("assistant", text("Booked."))]))
    assert [(m.role, m.content) for m in call_.input_messages] == [
        ("tool", "approved"),
        ("user", "Now book it."),
    ]


def test_history_with_a_system_prompt_is_cut_at_the_model_message_index() -> None:
    # new_message_index counts ModelMessages: the first request [system prompt, user] is two OTel messages.
    all_messages = [
        msg("system", text("Be brief.")),
        msg("user", text("Hi")),
        msg("assistant", text("Hello!")),
        msg("user", text("What now?")),
        msg("assistant", text("Sleep.")),
    ]
    info = ADAPTER.agent_info(agent_span(all_messages, **{"pydantic_ai.new_message_index": 2}))
    assert texts(info.remembered_messages or []) == [("user", "Hi"), ("assistant", "Hello!")]
    assert texts(info.input_messages) == [("user", "What now?")]
    assert texts(info.system_messages) == [("system", "Be brief.")]


def test_first_run_without_index_has_no_history() -> None:
    # pydantic-ai writes new_message_index only when it is > 0.
    all_messages = [
        msg("system", text("Be brief.")),
        msg("user", text("Hi")),
        msg("assistant", text("Hello!")),
    ]
    run = only_run(build_runs([agent_span(all_messages, final_result="Hello!")]))
    assert texts(run.input.input_messages) == [("user", "Hi")]
    assert run.input.remembered_messages == []
    assert texts(run.input.system_messages) == [("system", "Be brief.")]


def test_index_out_of_range_falls_back_to_the_last_user_turn_not_a_retry_prompt() -> None:
    all_messages = [
        msg("user", text("Old question")),
        msg("assistant", text("Old answer")),
        msg("user", text("Where is order 2?")),
        msg("assistant", text("{bad")),
        msg("user", text("Validation feedback: bad JSON\n\nFix the errors and try again.")),
        msg("assistant", text("Shipped.")),
    ]
    info = ADAPTER.agent_info(agent_span(all_messages, **{"pydantic_ai.new_message_index": 99}))
    assert texts(info.input_messages) == [("user", "Where is order 2?")]
    assert texts(info.remembered_messages or []) == [("user", "Old question"), ("assistant", "Old answer")]


def test_retry_prompt_without_a_tool_span_gives_state_error() -> None:
    # Older pydantic-ai opened no tool span for an argument-validation failure: only the next prompt
    # says the call failed.
    step = msg("assistant", call("c1", "add", {"x": 1}))
    retry = msg("user", reply("c1", "add", RETRY))
    spans = [
        chat_span(CHAT1, 100, [msg("user", text("Add"))], [step]).model_copy(update={"parent_span_id": ""}),
        chat_span(CHAT2, 300, [msg("user", text("Add")), step, retry], [msg("assistant", text("Gave up."))]),
    ]
    runs = build_runs(spans)
    first = next(r for r in runs if r.span_id == CHAT1)
    assert invocations(first.output[0]) == [
        {"tool_call_id": "c1", "tool_name": "add", "args": {"x": 1}, "result": RETRY, "state": "error"}
    ]


def test_retry_prompt_and_failed_tool_span_give_state_error() -> None:
    step = msg("assistant", call("c1", "add", {"x": 1}))
    retry = msg("user", reply("c1", "add", RETRY))
    spans = [
        agent_span([msg("user", text("Add")), step, retry, msg("assistant", text("Gave up."))]),
        chat_span(CHAT1, 100, [msg("user", text("Add"))], [step]),
        # Logfire marks the failed tool span with level 17; the retry prompt is its tool_response.
        tool_span(
            TOOL,
            200,
            "c1",
            "add",
            **{
                "gen_ai.tool.call.arguments": '{"x":1}',
                "gen_ai.tool.call.result": RETRY,
                "logfire.level_num": 17,
            },
        ),
        chat_span(CHAT2, 300, [msg("user", text("Add")), step, retry], [msg("assistant", text("Gave up."))]),
    ]
    retry_part = ADAPTER.llm_call(spans[3]).input_messages[-1].parts[0].model_extra
    assert retry_part == {"tool_call_id": "c1", "result": RETRY, "is_error": True}
    run = only_run(build_runs(spans))
    assert invocations(run.output[0]) == [
        {"tool_call_id": "c1", "tool_name": "add", "args": {"x": 1}, "result": RETRY, "state": "error"}
    ]


def test_tool_span_errors_and_deferrals() -> None:
    failed = ADAPTER.tool_execution(tool_span(TOOL, 0, "c1", "boom", STATUS_ERROR, "ValueError: boom"))
    assert (failed.is_error, failed.result) == (True, "ValueError: boom")
    not_validated = ADAPTER.tool_execution(
        tool_span(TOOL, 0, "c1", "t", **{"pydantic_ai.tool.failure_stage": "x"})
    )
    assert not_validated.is_error
    # Before format 5 a deferred call (approval required) also had status ERROR; it is not a failure.
    deferred = ADAPTER.tool_execution(
        tool_span(
            TOOL,
            0,
            "c1",
            "t",
            STATUS_ERROR,
            "",
            **{"pydantic_ai.tool.deferral.name": "ApprovalRequired"},
        )
    )
    assert (deferred.is_error, deferred.result) == (False, None)


def test_raw_string_arguments_and_builtin_tools() -> None:
    step = msg(
        "assistant",
        call("c1", "lookup", '{"q": "Par'),  # the model's JSON was invalid: pydantic-ai keeps the raw string
        call("ws1", "web_search", {"query": "paris"}, builtin=True),
        reply("ws1", "web_search", {"hits": 3}, builtin=True),
        text("Found it."),
    )
    run = only_run(
        build_runs(
            [
                chat_span(CHAT1, 100, [msg("user", text("Search"))], [step]).model_copy(
                    update={"parent_span_id": ""}
                )
            ]
        )
    )
    assert invocations(run.output[0]) == [
        {"tool_call_id": "c1", "tool_name": "lookup", "args": '{"q": "Par', "result": None, "state": "call"},
        {
            "tool_call_id": "ws1",
            "tool_name": "web_search",
            "args": {"query": "paris"},
            "result": {"hits": 3},
            "state": "result",
        },
    ]
    assert parts(run.output[0])[1]["server"] is True


def test_structured_output_ends_with_final_result_and_steps_are_not_repeated() -> None:
    ask = msg("user", text("Where?"))
    out_call = msg("assistant", call("f1", "final_result", {"city": "Paris"}))
    done = msg("user", reply("f1", "final_result", "Final result processed."))
    spans = [
        agent_span([ask, out_call, done], final_result='{"city": "Paris"}'),
        chat_span(CHAT1, 100, [ask], [out_call]),
    ]
    run = only_run(build_runs(spans))
    # The output-tool call, then the run's final_result (the last call has no text); not the steps again.
    assert [m.content for m in run.output] == ["", '{"city": "Paris"}']
    # "Final result processed." is only in the agent's all_messages, which the transform does not join.
    assert [(i.tool_name, i.args, i.state) for i in run.output[0].tool_invocations] == [
        ("final_result", {"city": "Paris"}, "call")
    ]
    # With an output function, pydantic-ai opens a tool span for it: the call is joined with its result.
    output_function = tool_span(
        TOOL,
        200,
        "f1",
        "final_result",
        **{"gen_ai.tool.call.arguments": '{"city":"Paris"}', "gen_ai.tool.call.result": '{"ok": true}'},
    )
    run = only_run(build_runs([*spans, output_function]))
    assert invocations(run.output[0]) == [
        {
            "tool_call_id": "f1",
            "tool_name": "final_result",
            "args": {"city": "Paris"},
            "result": {"ok": True},
            "state": "result",
        }
    ]


def test_content_capture_off_marks_the_run_content_missing() -> None:
    # include_content=False: parts without content, tool calls without arguments, no final_result.
    ask = msg("user", {"type": "text"})
    step = msg("assistant", {"type": "tool_call", "id": "c1", "name": "t"})
    answer = msg("assistant", {"type": "text"})
    spans = [
        agent_span([ask, step, msg("user", {"type": "tool_call_response", "id": "c1", "name": "t"}), answer]),
        chat_span(CHAT1, 100, [ask], [step]),
        tool_span(TOOL, 200, "c1", "t"),
        chat_span(CHAT2, 300, [ask], [answer]),
    ]
    run = only_run(build_runs(spans))
    assert run.content_missing
    assert [m.content for m in run.input.input_messages] == [""]
    assert [(i.tool_name, i.args) for i in run.output[0].tool_invocations] == [("t", {})]


def test_redaction_placeholder_reads_as_empty_text() -> None:
    spans = [
        chat_span(
            CHAT1, 100, [msg("user", text("__REDACTED__"))], [msg("assistant", text("__REDACTED__"))]
        ).model_copy(update={"parent_span_id": ""})
    ]
    run = only_run(build_runs(spans))
    assert run.content_missing and run.output[0].content == ""


def test_agent_usage_is_never_counted_and_junk_models_are_ignored() -> None:
    spans = [
        agent_span(
            [msg("user", text("Hi")), msg("assistant", text("Yo"))],
            **{"gen_ai.usage.input_tokens": 500, "gen_ai.usage.output_tokens": 50, "model_name": "unknown"},
        ),
        chat_span(
            CHAT1,
            100,
            [msg("user", text("Hi"))],
            [msg("assistant", text("Yo"))],
            **{"gen_ai.request.model": "unknown", "gen_ai.response.model": "gpt-4o-2024"},
        ),
    ]
    run = only_run(build_runs(spans))
    assert (run.usage.input_tokens, run.usage.output_tokens, run.model) == (10, 5, "gpt-4o-2024")


# --- format 2 --------------------------------------------------------------------------------------


def test_format_2_agent_run_and_running_tool_spans() -> None:
    ask = msg("user", text("Add 1 and 2"))
    step = msg("assistant", call("c1", "add", {"x": 1, "y": 2}))
    result = msg("user", reply("c1", "add", 3))
    answer = msg("assistant", text("3"))
    root = make_span(
        ROOT,
        "",
        {
            "agent_name": "calc",
            "model_name": "gpt-4o",
            "logfire.msg": "calc run",
            "pydantic_ai.all_messages": dumps(ask, step, result, answer),
            "final_result": "3",
        },
        name="agent run",
        start=0,
        end=500,
    )
    tool = make_span(
        TOOL,
        ROOT,
        {
            "gen_ai.tool.name": "add",
            "gen_ai.tool.call.id": "c1",
            "tool_arguments": '{"x":1,"y":2}',
            "tool_response": "3",
            "logfire.msg": "running tool: add",
        },
        name="running tool",
        start=200,
    )
    spans = [
        root,
        chat_span(CHAT1, 100, [ask], [step]),
        tool,
        chat_span(CHAT2, 300, [ask, step, result], [answer]),
    ]
    assert [ADAPTER.claims(s) for s in (root, tool)] == [True, True]  # by keys alone, no scope
    run = only_run(build_runs(spans))
    assert (run.agent_name, texts(run.input.input_messages)) == ("calc", [("user", "Add 1 and 2")])
    assert invocations(run.output[0]) == [
        {"tool_call_id": "c1", "tool_name": "add", "args": {"x": 1, "y": 2}, "result": 3, "state": "result"}
    ]
    assert texts(run.output[1:]) == [("assistant", "3")]


# --- format 1 by hand ------------------------------------------------------------------------------


def test_format_1_logs_mode_events_arrive_as_log_records() -> None:
    # event_mode='logs': no `events` attribute; each event is a log record of the chat span.
    chat = make_span(
        CHAT1,
        "",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.system": "openai",
            "gen_ai.request.model": "gpt-4o",
            "model_request_parameters": "{}",
            "gen_ai.usage.input_tokens": 7,
            "gen_ai.usage.output_tokens": 3,
        },
        name="chat gpt-4o",
        start=100,
    )

    def record(i: int, name: str, body: dict[str, Any], **attrs: Any) -> LogRecord:
        return LogRecord(
            trace_id=TRACE_ID,
            span_id=CHAT1,
            time_unix_nano=100 + i,
            event_name=name,
            body=body,
            attributes={"gen_ai.system": "openai", **attrs},
        )

    logs = [
        record(0, "gen_ai.system.message", {"role": "system", "content": "Be brief."}),
        record(1, "gen_ai.user.message", {"role": "user", "content": "Hello"}, **{"gen_ai.message.index": 0}),
        record(
            2,
            "gen_ai.choice",
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": [{"kind": "thinking", "text": "greet back"}, {"kind": "text", "text": "Hi!"}],
                },
            },
        ),
    ]
    run = only_run(build_runs([chat], logs))
    assert texts(run.input.system_messages) == [("system", "Be brief.")]
    assert texts(run.input.input_messages) == [("user", "Hello")]
    assert (run.output[0].content, run.output[0].reasoning) == ("Hi!", "greet back")
    assert (run.usage.input_tokens, run.usage.output_tokens) == (7, 3)


def test_format_1_events_without_event_names_and_split_assistant_events() -> None:
    # pydantic-ai 0.4 wrote no event.name into the dicts; one response with tool calls then text gives
    # two assistant events of the same message index.
    events = [
        {"content": "Hello", "role": "user", "gen_ai.message.index": 0},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "my_ret", "arguments": '{"x": 0}'}}
            ],
            "gen_ai.message.index": 1,
        },
        {"role": "assistant", "content": "calling", "gen_ai.message.index": 1},
        {"content": RETRY, "role": "tool", "id": "c1", "name": "my_ret", "gen_ai.message.index": 2},
        {"role": "assistant", "content": {"kind": "text"}, "gen_ai.message.index": 3},
    ]
    root = pai(ROOT, "", "agent run", 0, {"agent_name": "a", "all_messages_events": json.dumps(events)})
    info = ADAPTER.agent_info(root)
    assert texts(info.input_messages) == [("user", "Hello")]
    assert info.remembered_messages == []
    chat = pai(
        CHAT1,
        "",
        "chat test",
        0,
        {
            "gen_ai.operation.name": "chat",
            "events": json.dumps(
                [*events[:3], {"index": 0, "message": {"role": "assistant", "content": "ok"}}]
            ),
        },
    )
    call_ = ADAPTER.llm_call(chat)
    assistant = call_.input_messages[1]
    assert (assistant.role, assistant.content) == ("assistant", "calling")
    assert [p.type for p in assistant.parts] == ["tool_call", "text"]
    assert parts(assistant)[0]["args"] == {"x": 0}  # arguments given as a JSON string
    assert texts(call_.output_messages) == [("assistant", "ok")]
    tool_message = ADAPTER.agent_info(root).output_messages
    assert tool_message == []  # no final_result, and the last answer is empty (content off)


def test_format_1_history_is_cut_at_the_last_user_request() -> None:
    events = [
        {"role": "system", "content": "Be brief.", "event.name": "gen_ai.system.message"},
        {"role": "user", "content": "Hi", "gen_ai.message.index": 0},
        {"role": "assistant", "content": "Hello!", "gen_ai.message.index": 1},
        {"role": "user", "content": "What now?", "gen_ai.message.index": 2},
        {
            "role": "user",
            "content": "Validation feedback\n\nFix the errors and try again.",
            "gen_ai.message.index": 4,
        },
        {"role": "assistant", "content": "Sleep.", "gen_ai.message.index": 5},
    ]
    info = ADAPTER.agent_info(
        pai(ROOT, "", "agent run", 0, {"all_messages_events": json.dumps(events), "final_result": "Sleep."})
    )
    assert texts(info.input_messages) == [("user", "What now?")]
    assert texts(info.remembered_messages or []) == [("user", "Hi"), ("assistant", "Hello!")]
    assert texts(info.system_messages) == [("system", "Be brief.")]
    assert texts(info.output_messages) == [("assistant", "Sleep.")]


# --- detection -------------------------------------------------------------------------------------


def test_claims_pydantic_and_logfire_spans_but_not_other_conventions() -> None:
    assert ADAPTER.claims(pai("1" * 16, "", "anything", 0, {}))  # scope alone
    assert ADAPTER.claims(make_span("1" * 16, "", {"pydantic_ai.all_messages": "[]"}))
    assert ADAPTER.claims(make_span("1" * 16, "", {"events": '[{"role": "user", "content": "x"}]'}))
    assert not ADAPTER.claims(make_span("1" * 16, "", {"events": "[1, 2]"}))
    # OpenLLMetry's span that went through a Logfire processor stays OpenLLMetry's.
    assert not ADAPTER.claims(
        make_span("1" * 16, "", {"logfire.level_num": 9, "traceloop.span.kind": "task"})
    )
    # A generic span name alone is not enough; with pydantic-ai's own keys it is.
    assert not ADAPTER.claims(make_span("1" * 16, "", {}, name="agent run"))
    assert ADAPTER.claims(make_span("1" * 16, "", {"agent_name": "a"}, name="agent run"))
    # Plain OTel GenAI spans are left to the generic adapter.
    assert not ADAPTER.claims(make_span("1" * 16, "", {"gen_ai.operation.name": "chat"}))


def test_logfire_openai_span_is_read_as_a_model_call() -> None:
    span = make_span(
        CHAT1,
        "",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4",
            "gen_ai.input.messages": dumps(msg("user", text("What is four plus five?"))),
            "gen_ai.system_instructions": dumps(text("You are a helpful assistant.")),
            "gen_ai.output.messages": dumps(msg("assistant", text("Nine"), finish_reason="stop")),
            "gen_ai.usage.input_tokens": 2,
            "gen_ai.usage.output_tokens": 1,
            "logfire.msg": "Chat Completion with 'gpt-4'",
            "logfire.span_type": "span",
        },
        name="Chat Completion with {request_data[model]!r}",
    )
    assert adapter_name(span) == "pydantic_ai_logfire"
    run = only_run(build_runs([span]))
    assert texts(run.input.system_messages) == [("system", "You are a helpful assistant.")]
    assert texts(run.input.input_messages) == [("user", "What is four plus five?")]
    assert texts(run.output) == [("assistant", "Nine")]


def test_request_groups_follow_model_messages() -> None:
    raws: list[JsonValue] = [
        {"role": "system"},
        {"role": "user"},  # one request: system prompt + user prompt
        {"role": "assistant"},
        {"role": "assistant"},  # a request without parts lay between the two responses
        {"role": "user"},
        {"role": "user"},  # two requests in a row
    ]
    assert [(is_response, len(group)) for is_response, group in request_groups(raws)] == [
        (False, 2),
        (True, 1),
        (False, 0),
        (True, 1),
        (False, 1),
        (False, 1),
    ]


def test_truncated_all_messages_leaves_the_split_to_the_first_model_call() -> None:
    history = [msg("user", text("Hi")), msg("assistant", text("Hello!"))]
    ask = msg("user", text("And now?"))
    cut = json.dumps([*history, ask, msg("assistant", text("Now."))])[:60]
    spans = [
        agent_span([], **{"pydantic_ai.all_messages": cut, "pydantic_ai.new_message_index": 2}),
        chat_span(CHAT1, 100, [*history, ask], [msg("assistant", text("Now."))]),
    ]
    run = only_run(build_runs(spans))
    assert texts(run.input.input_messages) == [("user", "And now?")]
    assert texts(run.input.remembered_messages) == [("user", "Hi"), ("assistant", "Hello!")]


# --- never raises ----------------------------------------------------------------------------------

_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=2)
        | st.dictionaries(
            st.sampled_from(["role", "parts", "type", "content", "id", "kind", "message"]), inner
        )
    ),
    max_leaves=3,
)
_pai_parts = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "thinking", "tool_call", "tool_call_response", "uri", "binary", 3])},
    optional={
        "content": _values,
        "id": _values,
        "arguments": _values,
        "result": _values,
        "builtin": st.booleans(),
    },
)
_pai_messages = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant", "system", "tool", 5])},
        optional={"parts": st.lists(_pai_parts, max_size=2) | _values},
    )
    | _values,
    max_size=3,
)
_event_dicts = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "role": _values,
            "content": _values,
            "tool_calls": _values,
            "gen_ai.message.index": _values,
            "message": _values,
            "id": _values,
        },
    ),
    max_size=3,
)
_attributes = st.fixed_dictionaries(
    {},
    optional={
        "pydantic_ai.all_messages": _pai_messages.map(json.dumps) | _values,
        "pydantic_ai.new_message_index": _values,
        "all_messages_events": _event_dicts.map(json.dumps),
        "events": _event_dicts.map(json.dumps),
        "gen_ai.input.messages": _pai_messages.map(json.dumps),
        "gen_ai.output.messages": _pai_messages.map(json.dumps),
        "final_result": _values,
        "tool_response": _values,
        "gen_ai.tool.call.id": st.sampled_from(["c1", "c2"]),
        "logfire.level_num": _values,
    },
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.sampled_from(["agent run", "chat m", "running tool", "x"]), _attributes), max_size=3
    )
)
def test_adapter_and_transform_never_raise_on_odd_values(specs: list[tuple[str, dict[str, Any]]]) -> None:
    spans = [
        pai(f"{i + 1:016x}", "" if i == 0 else f"{1:016x}", name, i * 10, attrs)
        for i, (name, attrs) in enumerate(specs)
    ]
    for span in spans:
        ADAPTER.classify(span)
        ADAPTER.llm_call(span)
        ADAPTER.tool_execution(span)
        ADAPTER.agent_info(span)
    for run in build_runs(spans):
        json.dumps(run.to_json_dict())


def test_logfire_tool_span_of_another_library_is_an_error_at_level_17() -> None:
    span = make_span(
        TOOL,
        "",
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "search",
            "gen_ai.tool.call.id": "c9",
            "logfire.level_num": 17,
            "logfire.span_type": "span",
        },
        name="execute_tool search",
    )
    assert ADAPTER.claims(span) and ADAPTER.classify(span) is SpanRole.TOOL
    tool = ADAPTER.tool_execution(span)
    assert (tool.call_id, tool.name, tool.is_error) == ("c9", "search", True)
