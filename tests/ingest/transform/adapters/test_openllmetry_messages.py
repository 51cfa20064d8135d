"""OpenLLMetry message shapes the fixtures lack, each written the way the instrumentation writes it.

Shapes follow traceloop/openllmetry's instrumentations: openai chat_wrappers/responses_wrappers
(legacy attributes), anthropic span_utils and event_emitter (thinking, tool_use, tool_result), the
langchain callback handler (serialised messages). Expected values are written by hand.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.fixture_files import TRACE_ID, load_otlp_spans, make_span
from tracescore.ingest.transform.adapters import OpenLlmetryAdapter
from tracescore.ingest.transform.adapters.openllmetry_langchain import lc_message
from tracescore.ingest.transform.adapters.openllmetry_messages import content_parts
from tracescore.ingest.transform.runs import build_runs
from tracescore.schemas import LogRecord, Message, SpanEvent
from tracescore.schemas.spans import JsonValue

ADAPTER = OpenLlmetryAdapter()


def call_of(attrs: dict[str, Any]) -> tuple[list[Message], list[Message]]:
    call = ADAPTER.llm_call(make_span("c000000000000001", attributes={"llm.request.type": "chat", **attrs}))
    return call.input_messages, call.output_messages


def parts(message: Message) -> list[tuple[str, dict[str, Any]]]:
    return [(p.type, p.model_extra or {}) for p in message.parts]


def test_anthropic_thinking_completion_becomes_reasoning_of_the_answer() -> None:
    _, outputs = call_of(
        {
            "gen_ai.system": "Anthropic",
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": "How many r in strawberry?",
            "gen_ai.completion.0.role": "thinking",
            "gen_ai.completion.0.content": "s-t-r-a-w-b-e-r-r-y: three.",
            "gen_ai.completion.1.role": "assistant",
            "gen_ai.completion.1.content": "There are 3.",
            "gen_ai.completion.1.finish_reason": "end_turn",
        }
    )
    [answer] = outputs
    assert (answer.role, answer.content, answer.reasoning) == (
        "assistant",
        "There are 3.",
        "s-t-r-a-w-b-e-r-r-y: three.",
    )
    assert [p.type for p in answer.parts] == ["reasoning", "text"]


def test_thinking_with_nothing_after_it_stays_reasoning() -> None:
    _, outputs = call_of({"gen_ai.completion.0.role": "thinking", "gen_ai.completion.0.content": "hmm"})
    [answer] = outputs
    assert (answer.role, answer.content, answer.reasoning) == ("assistant", "", "hmm")


def test_anthropic_tool_use_in_content_and_tool_calls_is_one_call_and_tool_results_are_a_tool_message() -> (
    None
):
    assistant_blocks = [
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}},
    ]
    result_blocks = [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "4°C"}]}
    ]
    inputs, _ = call_of(
        {
            "gen_ai.prompt.0.role": "system",
            "gen_ai.prompt.0.content": "Be brief.",
            "gen_ai.prompt.1.role": "user",
            "gen_ai.prompt.1.content": "Oslo?",
            "gen_ai.prompt.2.role": "assistant",
            "gen_ai.prompt.2.content": json.dumps(assistant_blocks),
            "gen_ai.prompt.2.tool_calls.0.id": "toolu_1",
            "gen_ai.prompt.2.tool_calls.0.name": "get_weather",
            "gen_ai.prompt.2.tool_calls.0.arguments": '{"city": "Oslo"}',
            "gen_ai.prompt.3.role": "user",
            "gen_ai.prompt.3.content": json.dumps(result_blocks),
        }
    )
    assert [(m.role, m.content) for m in inputs] == [
        ("system", "Be brief."),
        ("user", "Oslo?"),
        ("assistant", "Checking."),
        ("tool", "4°C"),
    ]
    assert parts(inputs[2]) == [
        ("text", {"text": "Checking."}),
        ("tool_call", {"tool_call_id": "toolu_1", "tool_name": "get_weather", "args": {"city": "Oslo"}}),
    ]
    assert parts(inputs[3]) == [("tool_result", {"tool_call_id": "toolu_1", "result": "4°C"})]


def test_openai_list_content_keeps_text_and_image_parts() -> None:
    content = [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
    ]
    inputs, _ = call_of({"gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": json.dumps(content)})
    [message] = inputs
    assert message.content == "What is in this picture?"
    assert parts(message) == [
        ("text", {"text": "What is in this picture?"}),
        ("image_url", {"image_url": {"url": "https://example.com/cat.png"}}),
    ]


def test_gaps_in_indices_truncated_and_double_encoded_arguments() -> None:
    _, outputs = call_of(
        {
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.tool_calls.0.id": "call_a",
            "gen_ai.completion.0.tool_calls.0.name": "search",
            "gen_ai.completion.0.tool_calls.0.arguments": json.dumps(json.dumps({"q": "x"})),
            "gen_ai.completion.0.tool_calls.2.id": "call_b",
            "gen_ai.completion.0.tool_calls.2.name": "search",
            "gen_ai.completion.0.tool_calls.2.arguments": '{"q": "unfinis',
            "gen_ai.completion.2.role": "assistant",
            "gen_ai.completion.2.content": "second choice",
        }
    )
    assert [(m.role, m.content) for m in outputs] == [("assistant", ""), ("assistant", "second choice")]
    assert parts(outputs[0]) == [
        ("tool_call", {"tool_call_id": "call_a", "tool_name": "search", "args": {"q": "x"}}),
        ("tool_call", {"tool_call_id": "call_b", "tool_name": "search", "args": '{"q": "unfinis'}),
    ]


def test_legacy_completion_prompt_key_function_call_refusal_and_content_filter() -> None:
    inputs, outputs = call_of(
        {
            "llm.request.type": "completion",
            "gen_ai.prompt.0.user": "Complete: roses are",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.tool_calls.0.name": "rhyme",
            "gen_ai.completion.0.tool_calls.0.arguments": '{"word": "red"}',
            "gen_ai.completion.1.role": "assistant",
            "gen_ai.completion.1.refusal": "I can't help with that.",
            "gen_ai.completion.2.finish_reason": "content_filter",
            "gen_ai.completion.2.role": "assistant",
            "gen_ai.completion.2.content": "FILTERED",
        }
    )
    assert [(m.role, m.content) for m in inputs] == [("user", "Complete: roses are")]
    assert parts(outputs[0]) == [
        ("tool_call", {"tool_call_id": "", "tool_name": "rhyme", "args": {"word": "red"}})
    ]
    assert (outputs[1].content, outputs[2].content, outputs[2].parts) == ("I can't help with that.", "", [])


def test_openai_responses_legacy_reasoning_tool_output_and_server_tools() -> None:
    inputs, outputs = call_of(
        {
            "gen_ai.prompt.0.role": "system",
            "gen_ai.prompt.0.content": "You are terse.",
            "gen_ai.prompt.1.role": "user",
            "gen_ai.prompt.1.content": json.dumps([{"type": "input_text", "text": "Weather in Lima?"}]),
            "gen_ai.prompt.2.role": "tool",
            "gen_ai.prompt.2.content": json.dumps({"call_id": "call_7", "output": "sunny"}),
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": "Sunny in Lima.",
            "gen_ai.completion.0.reasoning": json.dumps(
                [{"type": "summary_text", "text": "Tool said sunny."}]
            ),
            "gen_ai.completion.0.tool_calls.0.id": "ws_1",
            "gen_ai.completion.0.tool_calls.0.name": "web_search_call",
        }
    )
    assert [(m.role, m.content) for m in inputs] == [
        ("system", "You are terse."),
        ("user", "Weather in Lima?"),
        ("tool", "sunny"),
    ]
    assert parts(inputs[2]) == [("tool_result", {"tool_call_id": "call_7", "result": "sunny"})]
    [answer] = outputs
    assert (answer.content, answer.reasoning) == ("Sunny in Lima.", "Tool said sunny.")
    assert parts(answer)[-1] == (
        "tool_call",
        {"tool_call_id": "ws_1", "tool_name": "web_search_call", "args": {}, "server": True},
    )


def test_langchain_completion_with_blocks_and_tool_calls() -> None:
    blocks = [
        {"type": "thinking", "thinking": "Need the tool.", "signature": "sig"},
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_9", "name": "lookup", "input": {"k": 1}},
    ]
    _, outputs = call_of(
        {
            "gen_ai.system": "Anthropic",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": json.dumps(blocks),
            "gen_ai.completion.0.tool_calls.0.id": "toolu_9",
            "gen_ai.completion.0.tool_calls.0.name": "lookup",
            "gen_ai.completion.0.tool_calls.0.arguments": '{"k": 1}',
            # LangChain json.dumps'es string content when generation.text is empty: '""'.
            "gen_ai.completion.1.role": "assistant",
            "gen_ai.completion.1.content": '""',
        }
    )
    assert (outputs[0].content, outputs[0].reasoning) == ("Let me look.", "Need the tool.")
    assert [p.type for p in outputs[0].parts] == ["reasoning", "text", "tool_call"]
    assert (outputs[1].content, outputs[1].parts) == ("", [])


def test_json_looking_user_text_that_is_not_blocks_stays_text() -> None:
    assert [(p.type, p.model_extra) for p in content_parts('{"a": 1}')] == [("text", {"text": '{"a": 1}'})]
    assert [(p.type, p.model_extra) for p in content_parts("[1] first point")] == [
        ("text", {"text": "[1] first point"})
    ]


def test_langchain_serialised_message_variants() -> None:
    ai: JsonValue = {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", "AIMessage"],
        "kwargs": {
            "content": "",
            "additional_kwargs": {
                "reasoning_content": "think first",
                "tool_calls": [{"id": "call_1", "function": {"name": "f", "arguments": '{"x": 1}'}}],
            },
        },
    }
    message = lc_message(ai, "m")
    assert message is not None
    assert (message.role, message.reasoning) == ("assistant", "think first")
    assert parts(message)[-1] == ("tool_call", {"tool_call_id": "call_1", "tool_name": "f", "args": {"x": 1}})
    human: JsonValue = {"type": "human", "data": {"content": "hello", "type": "human"}}
    as_dict = lc_message(human, "m")
    assert as_dict is not None and (as_dict.role, as_dict.content) == ("user", "hello")
    system_pair: JsonValue = ["system", "be kind"]
    pair = lc_message(system_pair, "m")
    assert pair is not None and (pair.role, pair.content) == ("system", "be kind")
    chat_message: JsonValue = {
        "lc": 1,
        "id": ["x", "ChatMessage"],
        "kwargs": {"role": "assistant", "content": "ok"},
    }
    chat = lc_message(chat_message, "m")
    assert chat is not None and (chat.role, chat.content) == ("assistant", "ok")
    document: JsonValue = {"lc": 1, "id": ["x", "Document"], "kwargs": {"page_content": "p"}}
    assert lc_message(document, "m") is None


def test_anthropic_event_mode_choices_are_one_answer_with_thinking_as_reasoning() -> None:
    span = make_span(
        "c000000000000001",
        attributes={
            "llm.request.type": "chat",
            "gen_ai.system": "Anthropic",
            "gen_ai.request.model": "claude",
        },
    )

    def record(name: str, body: Any, at: int) -> LogRecord:
        return LogRecord(
            trace_id=TRACE_ID,
            span_id="c000000000000001",
            time_unix_nano=at,
            event_name=name,
            body=body,
            attributes={"gen_ai.system": "anthropic"},
        )

    logs = [
        record("gen_ai.user.message", {"content": [{"type": "text", "text": "How many r?"}]}, 1),
        record(
            "gen_ai.choice",
            {"index": 0, "finish_reason": "end_turn", "message": {"content": "count them"}},
            2,
        ),
        record(
            "gen_ai.choice", {"index": 1, "finish_reason": "end_turn", "message": {"content": "Three."}}, 3
        ),
    ]
    [run] = build_runs([span], logs)
    assert [(m.role, m.content) for m in run.input.input_messages] == [("user", "How many r?")]
    [answer] = run.output
    assert (answer.content, answer.reasoning) == ("Three.", "count them")


def test_event_mode_tool_message_carries_its_call_id() -> None:
    span = make_span("c000000000000001", attributes={"llm.request.type": "chat"})
    body: JsonValue = {"content": "12°C", "id": "call_5"}
    logs = [
        LogRecord(
            trace_id=TRACE_ID,
            span_id="c000000000000001",
            time_unix_nano=1,
            event_name="gen_ai.tool.message",
            body=body,
        )
    ]
    assert ADAPTER.llm_call(span).input_messages == []  # the content is only in the log record
    [run] = build_runs([span], logs)
    [tool_reply] = run.input.remembered_messages
    assert (tool_reply.role, tool_reply.content) == ("tool", "12°C")
    assert parts(tool_reply) == [("tool_result", {"tool_call_id": "call_5", "result": "12°C"})]


_FIELDS = ["content", "text", "role", "type", "id", "kwargs", "args", "lc", "inputs", "outputs", "output"]
_FIELDS += [
    "messages",
    "tool_calls",
    "function",
    "tool_call_id",
    "status",
    "input_str",
    "thinking",
    "call_id",
]
_scalars = (
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10) | st.binary(max_size=3)
)
_json_ish = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(_FIELDS), inner, max_size=4),
    max_leaves=8,
)
_values = (
    _json_ish
    | _json_ish.map(lambda v: json.dumps(v, default=str))
    | _json_ish.map(lambda v: json.dumps(v, default=str)[:9])  # truncated JSON
    | st.sampled_from(["thinking", "tool", "assistant", "workflow", "agent", "task", "chat", "unknown", "[]"])
)
_KEYS = [
    "traceloop.span.kind",
    "traceloop.entity.input",
    "traceloop.entity.output",
    "llm.request.type",
    "gen_ai.prompt.0.role",
    "gen_ai.prompt.0.content",
    "gen_ai.prompt.2.tool_calls.0.arguments",
    "gen_ai.prompt.0.user",
    "gen_ai.completion.0.role",
    "gen_ai.completion.0.content",
    "gen_ai.completion.0.reasoning",
    "gen_ai.completion.1.tool_calls.3.id",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.call.result",
    "gen_ai.request.model",
    "gen_ai.usage.input_tokens",
]


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.sampled_from(load_otlp_spans("openllmetry_traceloop__main")),
    st.dictionaries(st.sampled_from(_KEYS), _values, max_size=6),
    st.lists(st.tuples(st.sampled_from(["gen_ai.choice", "gen_ai.tool.message"]), _values), max_size=2),
)
def test_every_read_of_a_bent_span_returns_instead_of_raising(
    span: Any, extra: dict[str, Any], bodies: list[tuple[str, Any]]
) -> None:
    events = [SpanEvent(name=name, attributes={"log.body": body}) for name, body in bodies]
    bent = span.model_copy(update={"attributes": {**span.attributes, **extra}, "events": events})
    assert ADAPTER.claims(bent)
    ADAPTER.classify(bent)
    ADAPTER.llm_call(bent)
    ADAPTER.tool_execution(bent)
    ADAPTER.agent_info(bent)
    assert isinstance(ADAPTER.retrieved_texts(bent), list)
