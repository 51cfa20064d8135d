"""The transform (GenAI semconv v1.37+ spans -> AgentRun) on the real fixture and hand-built span trees.

Expected values are written by hand from the spans, never computed by the code under test.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.support.fixture_files import SERVICE, TRACE_ID, load_otlp_spans, make_span
from tests.support.runs import only_run, texts
from tracescore.ingest.transform.runs import build_runs
from tracescore.schemas.spans import STATUS_ERROR

GOLDEN_DIR = Path(__file__).parents[1] / "golden"
UPDATE_GOLDEN = os.environ.get("TRACESCORE_UPDATE_GOLDEN") == "1"
WEATHER_PROMPT = "You are a helpful weather assistant. Use the get_weather tool."
CALL_ID = "call_VSPygqKTWdrhaFErNvMV18Yl"


# --- helpers to write GenAI semconv attributes by hand ---------------------------------------------


def text(content: str) -> dict[str, Any]:
    return {"type": "text", "content": content}


def msg(role: str, *parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": role, "parts": list(parts)}


def messages(*items: dict[str, Any]) -> str:
    return json.dumps(list(items))


def agent(name: str = "helper", /, **attrs: Any) -> dict[str, Any]:
    return {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name, **attrs}


def chat(inputs: list[dict[str, Any]], outputs: list[dict[str, Any]], **attrs: Any) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.input.messages": messages(*inputs),
        "gen_ai.output.messages": messages(*outputs),
        **attrs,
    }


def tool(call_id: str, name: str, **attrs: Any) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call_id,
        **attrs,
    }


# --- the real fixture ------------------------------------------------------------------------------


def test_fixture_main_trace_gives_one_run_with_hand_checked_fields() -> None:
    run = only_run(build_runs(load_otlp_spans("otel_genai_semconv__main")))

    assert run.trace_id == "5dbdf98695bd5785f3d3e61006ad2dba"
    assert run.span_id == "594f8d102c7c4a19"
    assert run.agent_name == "weather_agent"
    assert run.service_name == "weather-agent-demo"
    assert run.model == "gpt-4o"
    assert run.status == "ok"
    assert run.start_time == datetime(2026, 11, 22, 9, 41, 52, 811241, tzinfo=UTC)
    assert run.end_time == datetime(2026, 11, 22, 9, 41, 52, 873666, tzinfo=UTC)
    assert texts(run.input.input_messages) == [("user", "What's the weather in Paris?")]
    assert texts(run.input.remembered_messages) == [
        ("user", "Hi, I am planning a trip to France."),
        ("assistant", "Great! How can I help with your trip?"),
    ]
    assert texts(run.input.system_messages) == [("system", WEATHER_PROMPT)]

    assert len(run.output) == 2
    first, final = run.output
    assert first.role == "assistant" and first.content == ""
    assert [i.model_dump() for i in first.tool_invocations] == [
        {
            "tool_call_id": CALL_ID,
            "tool_name": "get_weather",
            "args": {"location": "Paris"},
            "result": "rainy, 57°F",
            "state": "result",
        }
    ]
    assert final.content == "The weather in Paris is currently rainy with a temperature of 57°F."
    assert final.tool_invocations == []
    # chat 1: 47 in / 17 out; chat 2: 97 in / 52 out.
    assert (run.usage.input_tokens, run.usage.output_tokens) == (144, 69)
    assert run.context == []


def test_fixture_main_trace_matches_golden_file() -> None:
    golden = GOLDEN_DIR / "otel_genai_semconv__main.json"
    actual = [r.to_json_dict() for r in build_runs(load_otlp_spans("otel_genai_semconv__main"))]
    if UPDATE_GOLDEN:
        golden.write_text(json.dumps(actual, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    assert actual == json.loads(golden.read_text(encoding="utf-8"))


# --- hand-built span trees -------------------------------------------------------------------------


def test_llm_span_without_agent_is_its_own_run() -> None:
    spans = [
        make_span("a000000000000001", attributes={"http.route": "/ask"}, start=100, end=900),
        make_span(
            "c000000000000001",
            "a000000000000001",
            chat(
                [msg("system", text("Be brief.")), msg("user", text("2+2?"))],
                [msg("assistant", text("4"))],
                **{"gen_ai.usage.input_tokens": 12, "gen_ai.usage.output_tokens": 1},
            ),
            start=200,
        ),
    ]
    run = only_run(build_runs(spans))
    assert run.span_id == "c000000000000001"
    assert run.agent_name is None
    assert run.model == "gpt-4o-mini"
    assert run.service_name == SERVICE
    assert texts(run.input.system_messages) == [("system", "Be brief.")]
    assert texts(run.input.input_messages) == [("user", "2+2?")]
    assert run.input.remembered_messages == []
    assert texts(run.output) == [("assistant", "4")]
    assert (run.usage.input_tokens, run.usage.output_tokens) == (12, 1)


def test_two_agents_in_one_trace_are_two_runs_and_the_nested_one_is_not_part_of_its_parent() -> None:
    spans = [
        make_span("a000000000000001", attributes=agent("planner"), start=100, end=1000),
        make_span(
            "c000000000000001",
            "a000000000000001",
            chat(
                [msg("user", text("plan a trip"))],
                [msg("assistant", text("asking the booker"))],
                **{"gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 3},
            ),
            start=200,
        ),
        make_span("a000000000000002", "a000000000000001", agent("booker"), start=300, end=800),
        make_span(
            "c000000000000002",
            "a000000000000002",
            chat(
                [msg("user", text("book a hotel"))],
                [msg("assistant", text("booked"))],
                **{"gen_ai.usage.input_tokens": 20, "gen_ai.usage.output_tokens": 5},
            ),
            start=400,
        ),
    ]
    runs = build_runs(spans)
    assert [(r.span_id, r.agent_name) for r in runs] == [
        ("a000000000000001", "planner"),
        ("a000000000000002", "booker"),
    ]
    planner, booker = runs
    assert texts(planner.output) == [("assistant", "asking the booker")]
    assert (planner.usage.input_tokens, planner.usage.output_tokens) == (10, 3)
    assert texts(booker.input.input_messages) == [("user", "book a hotel")]
    assert texts(booker.output) == [("assistant", "booked")]
    assert (booker.usage.input_tokens, booker.usage.output_tokens) == (20, 5)


def test_reasoning_part_goes_to_reasoning_not_content() -> None:
    spans = [
        make_span("a000000000000001", attributes=agent()),
        make_span(
            "c000000000000001",
            "a000000000000001",
            chat(
                [msg("user", text("Is 91 prime?"))],
                [msg("assistant", {"type": "reasoning", "content": "91 = 7 * 13"}, text("No."))],
            ),
        ),
    ]
    (answer,) = only_run(build_runs(spans)).output
    assert answer.content == "No."
    assert answer.reasoning == "91 = 7 * 13"
    assert [p.model_dump() for p in answer.parts] == [
        {"type": "reasoning", "text": "91 = 7 * 13"},
        {"type": "text", "text": "No."},
    ]


def test_tool_result_joined_from_a_later_chat_inputs_tool_message() -> None:
    call = {"type": "tool_call", "id": "call_1", "name": "lookup", "arguments": '{"q": "x"}'}
    spans = [
        make_span("a000000000000001", attributes=agent(), start=100, end=900),
        make_span(
            "c000000000000001",
            "a000000000000001",
            chat([msg("user", text("find x"))], [msg("assistant", call)]),
            start=200,
        ),
        make_span(
            "c000000000000002",
            "a000000000000001",
            chat(
                [
                    msg("user", text("find x")),
                    msg("assistant", call),
                    # "result" is the registry example's / pydantic-ai's key for the tool's answer.
                    msg("tool", {"type": "tool_call_response", "id": "call_1", "result": {"found": 3}}),
                ],
                [msg("assistant", text("found 3"))],
            ),
            start=500,
        ),
    ]
    run = only_run(build_runs(spans))
    assert [i.model_dump() for i in run.output[0].tool_invocations] == [
        {
            "tool_call_id": "call_1",
            "tool_name": "lookup",
            "args": {"q": "x"},
            "result": {"found": 3},
            "state": "result",
        }
    ]
    # The history of the second call never shows up as input or memory.
    assert texts(run.input.input_messages) == [("user", "find x")]
    assert run.input.remembered_messages == []


def test_tool_span_with_error_status_gives_state_error() -> None:
    call = {"type": "tool_call", "id": "call_9", "name": "divide", "arguments": {"a": 1, "b": 0}}
    spans = [
        make_span("a000000000000001", attributes=agent()),
        make_span(
            "c000000000000001", "a000000000000001", chat([msg("user", text("1/0"))], [msg("assistant", call)])
        ),
        make_span(
            "b000000000000001",
            "a000000000000001",
            tool("call_9", "divide"),
            status_code=STATUS_ERROR,
            status_message="ZeroDivisionError: division by zero",
        ),
    ]
    (invocation,) = only_run(build_runs(spans)).output[0].tool_invocations
    assert invocation.state == "error"
    assert invocation.result == "ZeroDivisionError: division by zero"
    assert invocation.args == {"a": 1, "b": 0}


def test_tool_call_without_any_result_stays_in_state_call() -> None:
    call = {"type": "tool_call", "id": "call_5", "name": "search", "arguments": {}}
    spans = [
        make_span("a000000000000001", attributes=agent()),
        make_span(
            "c000000000000001", "a000000000000001", chat([msg("user", text("hi"))], [msg("assistant", call)])
        ),
    ]
    (invocation,) = only_run(build_runs(spans)).output[0].tool_invocations
    assert (invocation.tool_name, invocation.state, invocation.result) == ("search", "call", None)


def test_invalid_json_in_input_messages_is_kept_as_text() -> None:
    broken = '[{"role":"user","parts":[{"type":"text","content":"trunc'
    spans = [
        make_span("a000000000000001", attributes=agent()),
        make_span(
            "c000000000000001",
            "a000000000000001",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": broken,
                "gen_ai.output.messages": "not json either",
            },
        ),
    ]
    run = only_run(build_runs(spans))
    assert texts(run.input.input_messages) == [("user", broken)]
    assert texts(run.output) == [("assistant", "not json either")]


def test_system_instructions_and_agent_input_and_history() -> None:
    instructions = json.dumps([text("Answer in French.")])
    spans = [
        make_span(
            "a000000000000001",
            attributes=agent(
                "translator",
                **{
                    "gen_ai.system_instructions": instructions,
                    "gen_ai.input.messages": messages(msg("user", text("Translate 'cat'"))),
                },
            ),
        ),
        make_span(
            "c000000000000001",
            "a000000000000001",
            chat(
                [
                    msg("user", text("Translate 'dog'")),
                    msg("assistant", text("chien")),
                    msg("user", text("Translate 'cat'")),
                ],
                [msg("assistant", text("chat"))],
                # The same instructions repeated on the chat span must not appear twice.
                **{"gen_ai.system_instructions": instructions},
            ),
        ),
    ]
    run = only_run(build_runs(spans))
    assert texts(run.input.system_messages) == [("system", "Answer in French.")]
    assert texts(run.input.input_messages) == [("user", "Translate 'cat'")]
    assert texts(run.input.remembered_messages) == [("user", "Translate 'dog'"), ("assistant", "chien")]
    assert run.input.input_messages[0].id == "a000000000000001-in-0"
    assert run.input.remembered_messages[1].id == "c000000000000001-in-1"


def test_agent_output_is_the_fallback_when_no_llm_span_has_the_final_text() -> None:
    spans = [
        make_span(
            "a000000000000001",
            attributes=agent(
                **{"gen_ai.output.messages": messages(msg("assistant", text("Done: 42")))},
                **{"gen_ai.usage.input_tokens": 999, "gen_ai.usage.output_tokens": 999},
            ),
            status_code=STATUS_ERROR,
        ),
    ]
    run = only_run(build_runs(spans))
    assert texts(run.output) == [("assistant", "Done: 42")]
    assert run.status == "error"
    # Usage counts model calls only; the agent span's own numbers would double count.
    assert (run.usage.input_tokens, run.usage.output_tokens) == (0, 0)


def test_retrieval_documents_with_text_become_context_and_id_only_documents_do_not() -> None:
    spans = [
        make_span("a000000000000001", attributes=agent()),
        make_span(
            "d000000000000001",
            "a000000000000001",
            {
                "gen_ai.operation.name": "retrieval",
                "gen_ai.retrieval.documents": json.dumps(
                    [{"id": "doc_1", "content": "Paris is in France."}, {"id": "doc_2", "text": "It rains."}]
                ),
            },
            start=100,
        ),
        make_span(
            "d000000000000002",
            "a000000000000001",
            {
                "gen_ai.operation.name": "retrieval",
                "gen_ai.retrieval.documents": json.dumps([{"id": "doc_123", "score": 0.95}]),
            },
            start=200,
        ),
    ]
    assert only_run(build_runs(spans)).context == ["Paris is in France.", "It rains."]


def test_unknown_parts_are_kept_and_double_encoded_messages_are_read() -> None:
    blob = {"type": "blob", "modality": "image", "mime_type": "image/png", "content": "iVBORw0K"}
    double = json.dumps(messages(msg("user", text("look"), blob)))
    spans = [
        make_span(
            "c000000000000001",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.response.model": "gpt-4o-2024-08-06",
                "gen_ai.input.messages": double,
                "gen_ai.output.messages": messages(msg("assistant", text("a cat"))),
            },
        )
    ]
    run = only_run(build_runs(spans))
    (user,) = run.input.input_messages
    assert user.content == "look"
    assert [p.model_dump() for p in user.parts] == [
        {"type": "text", "text": "look"},
        {"type": "blob", "modality": "image", "mime_type": "image/png", "content": "iVBORw0K"},
    ]
    assert run.model == "gpt-4o-2024-08-06"


def test_parent_cycle_does_not_hang_and_every_span_is_read_once() -> None:
    spans = [
        make_span("a000000000000001", "a000000000000002", agent("x")),
        make_span("a000000000000002", "a000000000000001", agent("y"), start=2_000),
        make_span(
            "c000000000000001",
            "c000000000000001",
            chat([msg("user", text("q"))], [msg("assistant", text("r"))]),
            start=3_000,
        ),
        # The same span re-sent: read once.
        make_span(
            "c000000000000001",
            "c000000000000001",
            chat([msg("user", text("q"))], [msg("assistant", text("r"))]),
            start=3_000,
        ),
    ]
    runs = build_runs(spans)
    assert [(r.span_id, r.agent_name) for r in runs] == [
        ("a000000000000001", "x"),
        ("a000000000000002", "y"),
        ("c000000000000001", None),
    ]
    assert texts(runs[2].output) == [("assistant", "r")]
    assert all(r.trace_id == TRACE_ID for r in runs)


def test_spans_of_no_known_convention_give_no_runs() -> None:
    assert build_runs([make_span("a000000000000001", attributes={"http.method": "GET"})]) == []
    assert build_runs([]) == []


# --- joining rules shared by every convention ------------------------------------------------------


def test_tool_span_no_model_output_names_joins_the_step_before_it() -> None:
    spans = [
        make_span("a000000000000001", attributes=agent("weather"), start=100, end=2_000),
        make_span(
            "c000000000000001",
            "a000000000000001",
            chat([msg("user", text("weather in Oslo?"))], [msg("assistant", text(""))]),
            start=200,
        ),
        # Content capture off on the chat span: the tool call is only visible as a tool span.
        make_span(
            "b000000000000001",
            "a000000000000001",
            tool("call_1", "get_weather", **{"gen_ai.tool.call.result": "snow"}),
            start=300,
        ),
        make_span(
            "c000000000000002",
            "a000000000000001",
            chat([msg("user", text("weather in Oslo?"))], [msg("assistant", text("Snowing."))]),
            start=400,
        ),
        make_span("b000000000000002", "a000000000000001", tool("", "log_answer"), start=500),
    ]
    run = only_run(build_runs(spans))
    assert [
        [(t.tool_name, t.tool_call_id, t.result, t.state) for t in m.tool_invocations] for m in run.output
    ] == [
        [("get_weather", "call_1", "snow", "result")],
        [("log_answer", "", None, "call")],
    ]


def test_tool_span_before_any_model_call_gets_a_message_of_its_own() -> None:
    spans = [
        make_span("a000000000000001", attributes=agent("fetcher"), start=100, end=2_000),
        make_span("b000000000000001", "a000000000000001", tool("call_9", "fetch"), start=150),
    ]
    run = only_run(build_runs(spans))
    assert [(m.id, m.role, m.content) for m in run.output] == [("b000000000000001-call", "assistant", "")]
    assert [t.tool_name for t in run.output[0].tool_invocations] == ["fetch"]


def test_agent_span_that_only_wraps_one_inner_agent_is_one_run() -> None:
    spans = [
        make_span("a000000000000001", attributes=agent("outer"), start=100, end=2_000),
        make_span(
            "a000000000000002",
            "a000000000000001",
            agent("", **{"gen_ai.input.messages": messages(msg("user", text("hello")))}),
            start=150,
        ),
        make_span(
            "c000000000000001",
            "a000000000000002",
            chat(
                [msg("user", text("hello"))],
                [msg("assistant", text("hi!"))],
                **{"gen_ai.usage.input_tokens": 4, "gen_ai.usage.output_tokens": 2},
            ),
            start=200,
        ),
    ]
    run = only_run(build_runs(spans))
    assert (run.span_id, run.agent_name) == ("a000000000000001", "outer")
    assert texts(run.input.input_messages) == [("user", "hello")]
    assert texts(run.output) == [("assistant", "hi!")]
    assert (run.usage.input_tokens, run.usage.output_tokens) == (4, 2)


def test_server_executed_tool_call_is_joined_with_its_result_in_the_same_answer() -> None:
    answer = msg(
        "assistant",
        {"type": "server_tool_call", "id": "srv_1", "name": "web_search", "arguments": {"q": "eclipse"}},
        {"type": "server_tool_call_response", "id": "srv_1", "response": {"hits": 3}},
        text("There are three results."),
    )
    spans = [make_span("c000000000000001", attributes=chat([msg("user", text("eclipse?"))], [answer]))]
    run = only_run(build_runs(spans))
    [invocation] = run.output[0].tool_invocations
    assert (invocation.tool_name, invocation.args, invocation.result, invocation.state) == (
        "web_search",
        {"q": "eclipse"},
        {"hits": 3},
        "result",
    )
    assert run.output[0].content == "There are three results."


def test_run_without_any_message_content_is_marked_content_missing() -> None:
    spans = [
        make_span("a000000000000001", attributes=agent("quiet"), start=100, end=2_000),
        make_span(
            "c000000000000001",
            "a000000000000001",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.usage.input_tokens": 12,
                "gen_ai.usage.output_tokens": 4,
            },
            start=200,
        ),
    ]
    run = only_run(build_runs(spans))
    assert run.content_missing is True
    assert (run.usage.input_tokens, run.usage.output_tokens) == (12, 4)
    full = only_run(build_runs(load_otlp_spans("otel_genai_semconv__main")))
    assert full.content_missing is False


def test_a_tool_span_joined_to_a_step_is_also_one_of_its_parts() -> None:
    spans = [
        make_span("a000000000000001", attributes=agent("weather"), start=100, end=2_000),
        make_span(
            "c000000000000001",
            "a000000000000001",
            chat([msg("user", text("Oslo?"))], [msg("assistant", text(""))]),
            start=200,
        ),
        make_span(
            "b000000000000001",
            "a000000000000001",
            tool("call_1", "get_weather", **{"gen_ai.tool.call.arguments": '{"city": "Oslo"}'}),
            start=300,
        ),
    ]
    [step] = only_run(build_runs(spans)).output
    calls = [p.model_extra for p in step.parts if p.type == "tool_call"]
    assert calls == [{"tool_call_id": "call_1", "tool_name": "get_weather", "args": {"city": "Oslo"}}]


def test_reasoning_a_later_prompt_replays_is_given_back_to_its_step() -> None:
    call = {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Oslo"}}
    thought = {"type": "reasoning", "content": "The user wants Oslo's weather; call the tool."}
    spans = [
        make_span("a000000000000001", attributes=agent("weather"), start=100, end=2_000),
        # The first step's own span records the tool call but not the reasoning...
        make_span(
            "c000000000000001",
            "a000000000000001",
            chat([msg("user", text("Oslo?"))], [msg("assistant", call)]),
            start=200,
        ),
        # ...which the second prompt replays with the call.
        make_span(
            "c000000000000002",
            "a000000000000001",
            chat(
                [
                    msg("user", text("Oslo?")),
                    msg("assistant", thought, call),
                    msg("tool", {"type": "tool_call_response", "id": "call_1", "response": "snow"}),
                ],
                [msg("assistant", text("Snowing."))],
            ),
            start=300,
        ),
    ]
    first, final = only_run(build_runs(spans)).output
    assert first.reasoning == "The user wants Oslo's weather; call the tool."
    assert [p.type for p in first.parts] == ["reasoning", "tool_call"]
    assert first.content == ""
    assert (final.reasoning, final.content) == (None, "Snowing.")


def test_a_model_call_continuing_after_tool_results_keeps_the_users_turn_as_input() -> None:
    call = {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Oslo"}}
    prompt = [
        msg("user", text("Hi")),
        msg("assistant", text("Hello! How can I help?")),
        msg("user", text("Weather in Oslo?")),
        msg("assistant", call),
        msg("tool", {"type": "tool_call_response", "id": "call_1", "response": "snow"}),
    ]
    spans = [make_span("c000000000000002", attributes=chat(prompt, [msg("assistant", text("Snowing."))]))]
    run = only_run(build_runs(spans))
    assert texts(run.input.input_messages) == [("user", "Weather in Oslo?")]
    assert texts(run.input.remembered_messages) == [("user", "Hi"), ("assistant", "Hello! How can I help?")]
    assert texts(run.output) == [("assistant", "Snowing.")]


def test_an_id_less_tool_span_completes_the_same_named_call_instead_of_adding_one() -> None:
    call = {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Oslo"}}
    spans = [
        make_span("a000000000000001", attributes=agent("weather"), start=100, end=2_000),
        make_span(
            "c000000000000001",
            "a000000000000001",
            chat([msg("user", text("Oslo?"))], [msg("assistant", call)]),
            start=200,
        ),
        # A decorator-made tool span: no call id, but the result.
        make_span(
            "b000000000000001",
            "a000000000000001",
            tool("", "get_weather", **{"gen_ai.tool.call.result": "snow"}),
            start=300,
        ),
        make_span(
            "c000000000000002",
            "a000000000000001",
            chat([msg("user", text("Oslo?"))], [msg("assistant", text("Snowing."))]),
            start=400,
        ),
    ]
    first, _ = only_run(build_runs(spans)).output
    assert [(t.tool_call_id, t.tool_name, t.result, t.state) for t in first.tool_invocations] == [
        ("call_1", "get_weather", "snow", "result")
    ]


def test_tool_results_held_by_the_agent_span_are_joined_and_are_not_steps() -> None:
    call = {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Oslo"}}
    failed = {"type": "tool_call", "id": "call_2", "name": "get_time", "arguments": {}}
    output = [
        msg("assistant", call, failed),
        msg("tool", {"type": "tool_call_response", "id": "call_1", "response": "snow"}),
        msg("assistant", text("Snowing; I could not get the time.")),
    ]
    spans = [
        make_span(
            "a000000000000001", attributes=agent("weather", **{"gen_ai.output.messages": messages(*output)})
        )
    ]
    run = only_run(build_runs(spans))
    assert [m.role for m in run.output] == ["assistant", "assistant"]
    assert [(t.tool_name, t.result, t.state) for t in run.output[0].tool_invocations] == [
        ("get_weather", "snow", "result"),
        ("get_time", None, "call"),
    ]


def test_a_trace_of_retrievals_only_is_a_run_of_its_own() -> None:
    spans = [
        make_span(
            "d000000000000001",
            attributes={
                "gen_ai.operation.name": "retrieval",
                "gen_ai.retrieval.query.text": "weather in Paris",
                "gen_ai.retrieval.documents": json.dumps(
                    [{"id": "doc1", "score": 0.9, "content": "Paris: rain."}]
                ),
            },
        )
    ]
    run = only_run(build_runs(spans))
    assert run.span_id == "d000000000000001"
    assert run.context == ["Paris: rain."]


def test_a_model_call_instrumented_twice_counts_once() -> None:
    # A framework's model span (no usage recorded) around the provider SDK's span of the same call.
    spans = [
        make_span("a000000000000001", attributes=agent("weather"), start=100, end=2_000),
        make_span(
            "c000000000000001",
            "a000000000000001",
            chat([msg("user", text("Oslo?"))], [msg("assistant", text("Snowing."))]),
            start=200,
            end=900,
        ),
        make_span(
            "c000000000000002",
            "c000000000000001",
            chat(
                [msg("user", text("Oslo?"))],
                [msg("assistant", text("Snowing."))],
                **{"gen_ai.usage.input_tokens": 9, "gen_ai.usage.output_tokens": 3},
            ),
            start=210,
            end=890,
        ),
    ]
    run = only_run(build_runs(spans))
    assert texts(run.output) == [("assistant", "Snowing.")]
    assert (run.usage.input_tokens, run.usage.output_tokens) == (9, 3)
    # Without an agent above, the pair is still one run, rooted at the outer span.
    alone = only_run(build_runs(spans[1:]))
    assert alone.span_id == "c000000000000001"
    assert (alone.usage.input_tokens, alone.usage.output_tokens) == (9, 3)


# --- agent_name precedence (docs/conventions/README.md, "Agent name") ------------------------------


def _wrapped_run(outer: dict[str, Any], inner: dict[str, Any], inner_name: str = "") -> str | None:
    """The agent name of an agent span wrapping one agent span that makes one model call."""
    spans = [
        make_span("a000000000000001", attributes=outer, start=100, end=900, name="invoke_agent"),
        make_span("a000000000000002", "a000000000000001", inner, start=150, end=800, name=inner_name),
        make_span(
            "c000000000000001",
            "a000000000000002",
            chat([msg("user", text("Rain?"))], [msg("assistant", text("Yes."))]),
            start=200,
        ),
    ]
    return only_run(build_runs(spans)).agent_name


def test_agent_name_is_the_inner_agents_own_name_not_the_wrappers() -> None:
    assert _wrapped_run(agent("workflow"), agent("weather_agent")) == "weather_agent"


def test_agent_name_attribute_beats_a_span_name_whichever_span_has_it() -> None:
    # The inner agent has no name attribute, only its span name: the wrapper's attribute wins.
    bare = {"gen_ai.operation.name": "invoke_agent"}
    assert _wrapped_run(agent("planner"), bare, "invoke_agent helper") == "planner"
    # Neither has an attribute: the innermost span name.
    assert _wrapped_run(bare, bare, "invoke_agent helper") == "helper"
