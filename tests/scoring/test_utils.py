"""Mastra's scorer utils in Python: the same answers on our AgentRun, its dicts and Mastra's shapes."""

from __future__ import annotations

from typing import Any

import pytest

from tracescore.schemas import AgentRun, Message
from tracescore.scoring.framework.message_text import extract_tool_calls as text_extract_tool_calls
from tracescore.scoring.utils import (
    create_agent_test_run,
    create_test_message,
    create_tool_invocation,
    extract_agent_response_messages,
    extract_input_messages,
    extract_tool_calls,
    get_assistant_message_from_run_output,
    get_combined_system_prompt,
    get_reasoning_from_run_output,
    get_system_messages_from_run_input,
    get_user_message_from_run_input,
    to_message,
)


def _run() -> AgentRun:
    return create_agent_test_run(
        input_messages=[
            {"role": "system", "content": "Answer in French."},
            "What is the weather in Paris?",
            "And in Lyon?",
        ],
        system_messages=["You are a weather agent.", {"role": "system", "content": ""}],
        tagged_system_messages={"memory": ["The user lives in Paris."]},
        output=[
            {
                "role": "assistant",
                "content": "",
                "reasoning": "The user wants the weather.",
                "tool_invocations": [{"tool_call_id": "c1", "tool_name": "weather", "state": "result"}],
            },
            {"role": "assistant", "content": "Il pleut à Paris."},
            {"role": "assistant", "content": "", "tool_invocations": [{"tool_name": "log", "state": "call"}]},
        ],
        trace_id="a" * 32,
        span_id="b" * 16,
    )


def test_user_message_is_the_first_user_input_message() -> None:
    run = _run()
    assert get_user_message_from_run_input(run) == "What is the weather in Paris?"
    assert get_user_message_from_run_input(run.input) == "What is the weather in Paris?"
    assert get_user_message_from_run_input(run.to_json_dict()) == "What is the weather in Paris?"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("hello", "hello"),
        ({"inputMessages": [{"role": "user", "content": "camel"}]}, "camel"),
        ({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "m"}]}, "m"),
        ({"prompt": "p", "text": "t"}, "p"),
        ({"text": "t"}, "t"),
        ({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}, "b"),
        ({"input": "i"}, "i"),
        ({"user": {"text": "u"}}, "u"),
        ({"messages": []}, None),
        (None, None),
        (42, None),
    ],
)
def test_user_message_accepts_mastras_input_shapes(value: Any, expected: str | None) -> None:
    assert get_user_message_from_run_input(value) == expected


def test_system_messages_in_mastras_order_without_empty_ones() -> None:
    run = _run()
    expected = [
        "You are a weather agent.",
        "Answer in French.",
        "The user lives in Paris.",
    ]
    assert get_system_messages_from_run_input(run) == expected
    assert (
        get_combined_system_prompt(run)
        == "You are a weather agent.\n\nAnswer in French.\n\nThe user lives in Paris."
    )
    assert get_system_messages_from_run_input("text") == []
    assert get_combined_system_prompt({"messages": [{"role": "system", "content": "only"}]}) == "only"


def test_system_message_without_content_joins_its_text_parts_with_spaces() -> None:
    run = create_agent_test_run(
        output="x",
        system_messages=[
            {
                "role": "system",
                "parts": [
                    {"type": "text", "text": "one"},
                    {"type": "image"},
                    {"type": "text", "text": "two"},
                ],
            }
        ],
    )
    assert get_system_messages_from_run_input(run) == ["one two"]


def test_assistant_message_is_the_last_assistant_text() -> None:
    run = _run()
    # The trailing tool-call-only step has no text, so the answer before it is the answer.
    assert get_assistant_message_from_run_output(run) == "Il pleut à Paris."
    assert get_assistant_message_from_run_output(run.output) == "Il pleut à Paris."
    assert get_assistant_message_from_run_output(run.to_json_dict()) == "Il pleut à Paris."


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("plain", "plain"),
        ({"text": "workflow"}, "workflow"),
        ({"content": "task"}, "task"),
        ({"role": "user", "text": "not mine"}, None),
        ({"role": "assistant", "content": [{"type": "text", "text": "from parts"}]}, "from parts"),
        ([{"role": "user", "content": "q"}], None),
        ([], None),
        (Message(role="assistant", content="msg"), "msg"),
        (None, None),
    ],
)
def test_assistant_message_accepts_mastras_output_shapes(value: Any, expected: str | None) -> None:
    assert get_assistant_message_from_run_output(value) == expected


def test_mastra_stored_messages_are_read_from_their_content_object() -> None:
    stored = [
        {
            "id": "m1",
            "role": "assistant",
            "createdAt": "2025-01-01T00:00:00Z",
            "content": {
                "format": 2,
                "parts": [
                    {"type": "text", "text": "first"},
                    {
                        "type": "tool-invocation",
                        "toolInvocation": {"toolCallId": "t2", "toolName": "save", "state": "output-error"},
                    },
                    {"type": "text", "text": "Saved nothing."},
                ],
                "toolInvocations": [
                    {"toolCallId": "t1", "toolName": "search", "state": "result"},
                    {"toolCallId": "t3", "toolName": "draft", "state": "partial-call"},
                ],
                "reasoning": "thinking hard",
            },
        }
    ]
    assert get_assistant_message_from_run_output(stored) == "Saved nothing."
    assert get_reasoning_from_run_output(stored) == "thinking hard"
    message = to_message(stored[0])
    # Parts' invocations first, then legacy-only ones; the partial call is not a call yet.
    assert [(i.tool_name, i.state) for i in message.tool_invocations] == [
        ("save", "error"),
        ("search", "result"),
    ]


def test_signal_messages_take_the_role_they_carry() -> None:
    signal = {"role": "signal", "type": "user", "content": "from a signal"}
    assert get_user_message_from_run_input({"messages": [signal]}) == "from a signal"


def test_reasoning_from_the_message_or_its_reasoning_parts() -> None:
    assert get_reasoning_from_run_output(_run()) == "The user wants the weather."
    parts_only = [
        {
            "role": "assistant",
            "content": "answer",
            "parts": [
                {
                    "type": "reasoning",
                    "details": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                },
                {"type": "text", "text": "answer"},
                {"type": "reasoning", "text": "c"},
            ],
        }
    ]
    assert get_reasoning_from_run_output(parts_only) == "ab\nc"
    assert get_reasoning_from_run_output([{"role": "assistant", "content": "none"}]) is None
    assert get_reasoning_from_run_output([]) is None
    assert get_reasoning_from_run_output(None) is None


def test_extract_messages_keep_empty_texts_like_mastra() -> None:
    run = _run()
    assert extract_input_messages(run) == [
        "Answer in French.",
        "What is the weather in Paris?",
        "And in Lyon?",
    ]
    assert extract_agent_response_messages(run) == ["", "Il pleut à Paris.", ""]
    assert extract_input_messages(None) == []


def test_extract_tool_calls_is_the_shared_one() -> None:
    assert extract_tool_calls is text_extract_tool_calls
    names, infos = extract_tool_calls(_run().output)
    assert names == ["weather", "log"]
    assert [(i.tool_call_id, i.message_index) for i in infos] == [("c1", 0), ("2-0", 2)]


def test_create_test_message_has_one_text_part_by_default() -> None:
    message = create_test_message(
        "Let me check.",
        "assistant",
        tool_invocations=[
            create_tool_invocation("call-1", "weatherTool", {"location": "Paris"}, {"temp": 22})
        ],
    )
    assert message.model_dump() == {
        "id": "test-message",
        "role": "assistant",
        "content": "Let me check.",
        "parts": [{"type": "text", "text": "Let me check."}],
        "tool_invocations": [
            {
                "tool_call_id": "call-1",
                "tool_name": "weatherTool",
                "args": {"location": "Paris"},
                "result": {"temp": 22},
                "state": "result",
            }
        ],
        "reasoning": None,
    }
    assert create_tool_invocation("c", "t", state="output-error").state == "error"


def test_create_agent_test_run_turns_strings_into_messages_of_their_place() -> None:
    run = create_agent_test_run(
        input_messages="Hi", output="Hello!", remembered_messages=["earlier"], context=["doc"], ground_truth=4
    )
    assert [(m.role, m.content) for m in run.input.input_messages] == [("user", "Hi")]
    assert [(m.role, m.content) for m in run.input.remembered_messages] == [("user", "earlier")]
    assert [(m.role, m.content) for m in run.output] == [("assistant", "Hello!")]
    assert run.context == ["doc"]
    assert run.ground_truth == 4
    assert len(run.trace_id) == 32 and len(run.span_id) == 16
    assert create_agent_test_run(output="x").trace_id != run.trace_id  # a fresh random id each time


def _call(call_id: str, name: str, **extra: Any) -> dict[str, Any]:
    return {"toolCallId": call_id, "toolName": name, "state": "result", "args": {}, "result": {}, **extra}


def test_tool_invocations_merge_as_mastra_merges_them() -> None:
    # Parts hold call 2 and 4; the legacy list holds 1, 2, 3, 5. Mastra's mergeToolInvocations puts
    # a legacy-only call before the next shared call, the rest at the end: 1, 2, 4, 3, 5.
    message = {
        "role": "assistant",
        "content": {
            "format": 2,
            "parts": [
                {"type": "tool-invocation", "toolInvocation": _call("2", "b")},
                {"type": "tool-invocation", "toolInvocation": _call("4", "d")},
            ],
            "toolInvocations": [_call("1", "a"), _call("2", "b-legacy"), _call("3", "c"), _call("5", "e")],
        },
    }
    names = [call.tool_name for call in to_message(message).tool_invocations]
    assert names == ["a", "b", "d", "c", "e"]


def test_a_result_flagged_is_error_is_an_error() -> None:
    message = {
        "role": "assistant",
        "content": {"format": 2, "toolInvocations": [_call("1", "a", isError=True)]},
    }
    assert [call.state for call in to_message(message).tool_invocations] == ["error"]
