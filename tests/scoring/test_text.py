"""``scoring.framework.message_text``: how the scorers read a run's texts and tool calls, the way Mastra
reads them."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from tracescore.schemas import AgentRun, Message, Part, ToolInvocation
from tracescore.scoring.framework.message_text import (
    JS_WHITESPACE,
    JS_WHITESPACE_CHARS,
    JS_WHITESPACE_RUN,
    extract_tool_calls,
    js_collapse_whitespace,
    js_remove_whitespace,
    js_split_words,
    js_trim,
    message_text,
    output_text,
)

# Text rich in whitespace of either language: JavaScript's set, Python's own extras (U+001C..U+001F,
# U+0085) and JavaScript's U+FEFF, which decide between the str.split fast path and the regex.
whitespace_heavy = st.text(alphabet=st.sampled_from([*JS_WHITESPACE, *"\x1c\x1d\x1e\x1f\x85", *"ab é😀"]))


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
        Part.model_validate({"type": "text", "text": "early"}),
        Part.model_validate({"type": "reasoning", "text": "hmm"}),
        Part.model_validate({"type": "text", "text": "late"}),
    ]
    assert message_text(Message(role="assistant", parts=parts)) == "late"
    assert message_text(Message(role="assistant", content="content wins", parts=parts)) == "content wins"
    assert (
        message_text(
            Message(role="assistant", parts=[Part.model_validate({"type": "reasoning", "text": "hmm"})])
        )
        == ""
    )


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


def test_the_spelled_out_whitespace_is_the_regex_class() -> None:
    js_class = re.compile(f"[{JS_WHITESPACE_CHARS}]")
    assert set(JS_WHITESPACE) == {chr(c) for c in range(0x110000) if js_class.match(chr(c))}


@given(text=whitespace_heavy | st.text())
def test_whitespace_helpers_equal_their_javascript_definitions(text: str) -> None:
    # JavaScript's text.replace(/\s+/g, ...), .split(/\s+/) and .trim(), written as regexes.
    assert js_collapse_whitespace(text) == re.sub(
        f"\\A[{JS_WHITESPACE_CHARS}]+|[{JS_WHITESPACE_CHARS}]+\\Z", "", JS_WHITESPACE_RUN.sub(" ", text)
    )
    assert js_split_words(text) == [word for word in JS_WHITESPACE_RUN.split(text) if word]
    assert js_remove_whitespace(text) == JS_WHITESPACE_RUN.sub("", text)
    assert js_trim(text) == re.sub(f"\\A[{JS_WHITESPACE_CHARS}]+|[{JS_WHITESPACE_CHARS}]+\\Z", "", text)
