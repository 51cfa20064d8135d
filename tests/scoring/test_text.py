"""``scoring.text``: how the scorers read a run's texts and tool calls, the way Mastra reads them."""

from __future__ import annotations

from schemas import AgentRun, Message, Part, ToolInvocation
from scoring.text import extract_tool_calls, js_collapse_whitespace, js_trim, message_text, output_text


def test_output_text_skips_text_less_messages_only() -> None:
    run = AgentRun(
        output=[
            Message(role="assistant", content="first"),
            Message(role="assistant"),
            Message(role="assistant", content="second"),
        ]
    )
    assert output_text(run) == "first, second"


def test_message_text_falls_back_to_the_last_text_part() -> None:
    parts = [
        Part(type="text", text="early"),
        Part(type="reasoning", text="hmm"),
        Part(type="text", text="late"),
    ]
    assert message_text(Message(role="assistant", parts=parts)) == "late"
    assert message_text(Message(role="assistant", content="content wins", parts=parts)) == "content wins"
    assert message_text(Message(role="assistant", parts=[Part(type="reasoning", text="hmm")])) == ""


def test_extract_tool_calls_like_mastra() -> None:
    output = [
        Message(role="assistant", tool_invocations=[ToolInvocation(tool_name="a", state="call")]),
        Message(
            role="assistant",
            tool_invocations=[
                ToolInvocation(tool_call_id="x-1", tool_name="b", state="error"),
                ToolInvocation(tool_call_id="x-2", tool_name="", state="result"),
                ToolInvocation(tool_name="c", state="result"),
            ],
        ),
    ]
    names, infos = extract_tool_calls(output)
    assert names == ["a", "b", "c"]
    assert [(i.tool_call_id, i.message_index, i.invocation_index) for i in infos] == [
        ("0-0", 0, 0),
        ("x-1", 1, 0),
        ("1-2", 1, 2),
    ]


def test_javascript_whitespace_set() -> None:
    assert js_trim("\ufeff\u3000 x \u00a0\u2029") == "x"
    assert js_trim("\x1cx\x85") == "\x1cx\x85"  # whitespace to Python, not to JavaScript
    assert js_collapse_whitespace(" a \t\n b\u200a\u205fc ") == "a b c"
