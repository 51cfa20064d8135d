"""The OpenInference adapter on the convention fixtures and on hand-built spans of shapes they lack.

Expected values are written by hand from the spans (FIELD-GUIDE section 3, the OpenInference spec
and the instrumentations' code), never computed by the code under test.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.conventions import adapter_name
from tests.support.fixture_files import load_otlp_spans, make_span
from tests.support.runs import only_run, parts, texts
from tracescore.ingest.transform.adapters import OpenInferenceAdapter, SpanRole
from tracescore.ingest.transform.adapters.openinference_payloads import request_messages, response_message
from tracescore.ingest.transform.runs import build_runs
from tracescore.schemas import Message, SpanEvent
from tracescore.schemas.spans import STATUS_ERROR, JsonValue

ADAPTER = OpenInferenceAdapter()
MAIN = "openinference__main"
PYDANTIC = "openinference__pydantic-ai-openinferencespanprocessor-openinference-keys-me"
RETRIEVER = "openinference__retriever-span-with-retrieval-documents-n-document"
CALL_ID = "call_VSPygqKTWdrhaFErNvMV18Yl"


# --- helpers to write OpenInference attributes by hand ---------------------------------------------


def flat(prefix: str, value: Any) -> dict[str, Any]:
    """Flatten like the instrumentations do: lists by index, maps by key, joined with dots."""
    if isinstance(value, Mapping):
        return {k: v for key, item in value.items() for k, v in flat(f"{prefix}.{key}", item).items()}
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in flat(f"{prefix}.{i}", item).items()}
    return {prefix: value}


def oi(kind: str, **attrs: Any) -> dict[str, Any]:
    return {"openinference.span.kind": kind, **attrs}


def llm(inputs: list[Any], outputs: list[Any], **attrs: Any) -> dict[str, Any]:
    return {
        **oi("LLM"),
        **flat("llm.input_messages", [{"message": m} for m in inputs]),
        **flat("llm.output_messages", [{"message": m} for m in outputs]),
        **attrs,
    }


def found(message: Message | None) -> Message:
    """The message the test knows is there."""
    assert message is not None
    return message


def calls(message: Message) -> list[tuple[str, str, Any, Any, str]]:
    return [(t.tool_name, t.tool_call_id, t.args, t.result, t.state) for t in message.tool_invocations]


def fixture_span(name: str, span_id: str) -> Any:
    return next(s for s in load_otlp_spans(name) if s.span_id == span_id)


# --- the fixtures ----------------------------------------------------------------------------------


def test_main_fixture_spans_are_claimed_and_classified() -> None:
    roles = {s.name + s.span_id[:2]: ADAPTER.classify(s) for s in load_otlp_spans(MAIN)}
    assert roles == {
        "weather_agent20": SpanRole.AGENT,
        "ChatCompletion30": SpanRole.LLM,
        "get_weatherd0": SpanRole.TOOL,
        "ChatCompletiondf": SpanRole.LLM,
    }
    assert all(adapter_name(s) == "openinference" for s in load_otlp_spans(MAIN))


def test_main_fixture_model_call_reads_messages_request_model_and_token_counts() -> None:
    call = ADAPTER.llm_call(fixture_span(MAIN, "306f532c5fc5058d"))
    assert texts(call.input_messages) == [
        ("system", "You are a helpful weather assistant. Use the get_weather tool."),
        ("user", "Hi, I am planning a trip to France."),
        ("assistant", "Great! How can I help with your trip?"),
        ("user", "What's the weather in Paris?"),
    ]
    [answer] = call.output_messages
    assert parts(answer) == [
        {
            "type": "tool_call",
            "tool_call_id": CALL_ID,
            "tool_name": "get_weather",
            "args": {"location": "Paris"},
        }
    ]
    # llm.model_name is the response's dated model; the request's is in llm.invocation_parameters.
    assert call.model == "gpt-4o"
    assert (call.usage.input_tokens, call.usage.output_tokens) == (47, 17)


def test_main_fixture_tool_reply_in_the_second_prompt_is_a_tool_result() -> None:
    call = ADAPTER.llm_call(fixture_span(MAIN, "dfc171c22f06f73a"))
    assistant, tool_reply = call.input_messages[4], call.input_messages[5]
    assert parts(assistant) == [
        {
            "type": "tool_call",
            "tool_call_id": CALL_ID,
            "tool_name": "get_weather",
            "args": {"location": "Paris"},
        }
    ]
    assert (tool_reply.role, tool_reply.content) == ("tool", "rainy, 57°F")
    assert parts(tool_reply) == [{"type": "tool_result", "tool_call_id": CALL_ID, "result": "rainy, 57°F"}]
    assert texts(call.output_messages) == [
        ("assistant", "The weather in Paris is currently rainy with a temperature of 57°F.")
    ]


def test_main_fixture_tool_and_agent_spans() -> None:
    tool = ADAPTER.tool_execution(fixture_span(MAIN, "d0403e06be01310b"))
    # @tracer.tool records no call id; tool.parameters is the schema, input.value the arguments.
    assert (tool.call_id, tool.name, tool.args, tool.result, tool.is_error) == (
        None,
        "get_weather",
        {"location": "Paris"},
        "rainy, 57°F",
        False,
    )
    agent = ADAPTER.agent_info(fixture_span(MAIN, "2058d21cfa3b3ca2"))
    assert (agent.name, agent.span_name) == (None, "weather_agent")  # no name attribute: the span's
    assert texts(agent.input_messages) == [("user", "What's the weather in Paris?")]
    assert texts(agent.output_messages) == [
        ("assistant", "The weather in Paris is currently rainy with a temperature of 57°F.")
    ]
    assert agent.remembered_messages is None


def test_main_fixture_gives_one_run_with_hand_checked_fields() -> None:
    run = only_run(build_runs(load_otlp_spans(MAIN)))
    assert (run.span_id, run.agent_name, run.model, run.status) == (
        "2058d21cfa3b3ca2",
        "weather_agent",
        "gpt-4o",
        "ok",
    )
    assert texts(run.input.input_messages) == [("user", "What's the weather in Paris?")]
    assert texts(run.input.remembered_messages) == [
        ("user", "Hi, I am planning a trip to France."),
        ("assistant", "Great! How can I help with your trip?"),
    ]
    assert texts(run.input.system_messages) == [
        ("system", "You are a helpful weather assistant. Use the get_weather tool.")
    ]
    assert texts(run.output) == [
        ("assistant", ""),
        ("assistant", "The weather in Paris is currently rainy with a temperature of 57°F."),
    ]
    assert (run.usage.input_tokens, run.usage.output_tokens) == (47 + 97, 17 + 52)
    assert run.context == [] and not run.content_missing


def test_main_fixture_id_less_tool_span_is_the_model_s_tool_call_not_a_second_one() -> None:
    # Needs the transform to treat an id-less tool span as the same call as a named invocation no
    # tool span answered by id (see the adapter report): one get_weather call was made, not two.
    run = only_run(build_runs(load_otlp_spans(MAIN)))
    assert calls(run.output[0]) == [("get_weather", CALL_ID, {"location": "Paris"}, "rainy, 57°F", "result")]
    assert calls(run.output[1]) == []


def test_pydantic_ai_processor_fixture_reads_both_conventions_on_one_span() -> None:
    run = only_run(build_runs(load_otlp_spans(PYDANTIC)))
    assert (run.agent_name, run.model) == ("weather_agent", "gpt-4o")
    assert texts(run.input.input_messages) == [("user", "What is the weather in Paris?")]
    # pydantic_ai.new_message_index = 2 splits the history from the new turn.
    assert texts(run.input.remembered_messages) == [
        ("user", "Hi, I am planning a trip to France."),
        ("assistant", "Great! How can I help with your trip?"),
    ]
    assert texts(run.input.system_messages) == [
        ("system", "You are a helpful weather assistant. Always use the get_weather tool.")
    ]
    first, final = run.output
    # The thinking part exists only in gen_ai.output.messages (the OpenInference copy drops it).
    assert first.reasoning == "The user wants the weather in Paris; I should call get_weather."
    assert first.content == ""
    assert calls(first) == [("get_weather", CALL_ID, {"city": "Paris"}, "rainy, 57°F", "result")]
    assert (final.content, final.reasoning, calls(final)) == (
        "It is rainy and 57°F in Paris right now.",
        None,
        [],
    )
    assert (run.usage.input_tokens, run.usage.output_tokens) == (47 + 97, 17 + 14)


def test_pydantic_ai_processor_fixture_sparse_tool_call_index_in_the_openinference_copy() -> None:
    span = fixture_span(PYDANTIC, "36f45b8ef794bf16")
    # Only the OpenInference keys: tool_calls.1 with no tool_calls.0.
    oi_only = {k: v for k, v in span.attributes.items() if not k.startswith("gen_ai.")}
    call = ADAPTER.llm_call(span.model_copy(update={"attributes": oi_only}))
    [answer] = call.output_messages
    assert [p for p in parts(answer) if p["type"] == "tool_call"] == [
        {"type": "tool_call", "tool_call_id": CALL_ID, "tool_name": "get_weather", "args": {"city": "Paris"}}
    ]
    assert texts(call.input_messages)[0] == (
        "system",
        "You are a helpful weather assistant. Always use the get_weather tool.",
    )


def test_retriever_fixture_is_a_run_whose_context_is_the_documents() -> None:
    run = only_run(build_runs(load_otlp_spans(RETRIEVER)))
    assert run.context == ["Paris trips are rescheduled when rain exceeds 10mm."]
    assert texts(run.input.input_messages) == [("user", "What is the weather policy for Paris trips?")]
    assert (run.output, run.model, run.agent_name) == ([], None, None)
    assert ADAPTER.retrieved_texts(load_otlp_spans(RETRIEVER)[0]) == [
        "Paris trips are rescheduled when rain exceeds 10mm."
    ]


# --- detection and classification ------------------------------------------------------------------


def test_only_spans_with_an_openinference_kind_are_claimed() -> None:
    assert ADAPTER.claims(make_span("a000000000000001", attributes=oi("LLM")))
    assert not ADAPTER.claims(make_span("a000000000000002", attributes={"gen_ai.operation.name": "chat"}))
    assert not ADAPTER.claims(make_span("a000000000000003", attributes={"openinference.span.kind": ""}))


@pytest.mark.parametrize(
    ("kind", "top", "role"),
    [
        ("LLM", False, SpanRole.LLM),
        ("llm", True, SpanRole.LLM),
        ("TOOL", False, SpanRole.TOOL),
        ("AGENT", False, SpanRole.AGENT),
        ("CHAIN", True, SpanRole.OTHER),  # the topmost chain is the run: see test_the_topmost_chain...
        ("CHAIN", False, SpanRole.OTHER),
        ("RETRIEVER", False, SpanRole.RETRIEVER),
        ("RETRIEVER", True, SpanRole.RETRIEVER),
        ("RERANKER", False, SpanRole.OTHER),
        ("EMBEDDING", False, SpanRole.OTHER),
        ("GUARDRAIL", False, SpanRole.OTHER),
        ("EVALUATOR", False, SpanRole.OTHER),
        ("PROMPT", False, SpanRole.OTHER),
        ("UNKNOWN", True, SpanRole.OTHER),
    ],
)
def test_span_kinds(kind: str, top: bool, role: SpanRole) -> None:
    span = make_span("a000000000000001", "" if top else "b000000000000001", oi(kind))
    assert ADAPTER.classify(span) is role


def test_agent_kind_spans_that_are_not_agents_are_demoted() -> None:
    http = make_span("a000000000000001", attributes=oi("AGENT", **{"http.method": "POST"}), name="POST /x")
    helper = make_span(
        "a000000000000002",
        "a000000000000001",
        oi("AGENT", componentName="Weather Agent", **{"agent.fetchMemory.result": "{}"}),
        name="agent.fetchMemory",
    )
    entry = make_span(
        "a000000000000003", "a000000000000001", oi("AGENT", componentName="W"), name="agent.stream"
    )
    node = make_span(
        "a000000000000004", "a000000000000001", oi("AGENT", metadata='{"langgraph_node": "agent"}')
    )
    assert [ADAPTER.classify(s) for s in (http, helper, entry, node)] == [
        SpanRole.OTHER,
        SpanRole.OTHER,
        SpanRole.AGENT,
        SpanRole.OTHER,
    ]


# --- message shapes --------------------------------------------------------------------------------


def test_contents_parts_reasoning_images_ordered_tool_use_and_message_gaps() -> None:
    attrs = llm(
        [
            {
                "role": "user",
                "contents": [
                    {"message_content": {"type": "text", "text": "What is in this picture?"}},
                    {
                        "message_content": {
                            "type": "image",
                            "image": {"image": {"url": "https://img/cat.png"}},
                        }
                    },
                ],
            },
        ],
        [
            {
                "role": "assistant",
                "contents": [
                    {
                        "message_content": {
                            "type": "reasoning",
                            "text": "A cat, probably.",
                            "signature": "sig",
                        }
                    },
                    {"message_content": {"type": "text", "text": "Let me check."}},
                    {
                        "message_content": {"type": "tool_use"},
                        "tool_call": {
                            "id": "toolu_1",
                            "function": {"name": "classify", "arguments": '{"k": 3}'},
                        },
                    },
                ],
            },
        ],
    )
    # A gap in the indices: message 2 with no message 1.
    attrs |= flat("llm.input_messages.2.message", {"role": "user", "content": "Quickly please."})
    call = ADAPTER.llm_call(make_span("c000000000000001", attributes=attrs))
    assert [parts(m) for m in call.input_messages] == [
        [
            {"type": "text", "text": "What is in this picture?"},
            {"type": "uri", "modality": "image", "uri": "https://img/cat.png"},
        ],
        [{"type": "text", "text": "Quickly please."}],
    ]
    [answer] = call.output_messages
    assert (answer.content, answer.reasoning) == ("Let me check.", "A cat, probably.")
    assert parts(answer)[2] == {
        "type": "tool_call",
        "tool_call_id": "toolu_1",
        "tool_name": "classify",
        "args": {"k": 3},
    }


def test_vercel_converter_shapes_placeholder_tool_call_bare_image_and_enveloped_tool_output() -> None:
    attrs = llm(
        [
            {
                "role": "user",
                "contents": [
                    {"message_content": {"type": "text", "text": "weather in ann arbor"}},
                    {"message_content": {"type": "image", "image": "data:image/png;base64,iVBOR"}},
                ],
            },
            # The converter writes a "tool-call" placeholder and the call under tool_calls.<same index>.
            {
                "role": "assistant",
                "contents": [
                    {"message_content": {"type": "reasoning", "text": "Use the tool."}},
                    {"message_content": {"type": "tool-call"}},
                ],
                "tool_calls": {
                    "1": {
                        "tool_call": {
                            "id": "call_j",
                            "function": {"name": "weatherTool", "arguments": '{"location":"Ann Arbor"}'},
                        }
                    }
                },
            },
            {"role": "tool", "tool_call_id": "call_j", "content": '{"type":"json","value":{"temp":12.2}}'},
        ],
        [],
        **{"output.value": "It is overcast in Ann Arbor.", "output.mime_type": "text/plain"},
    )
    call = ADAPTER.llm_call(make_span("c000000000000001", attributes=attrs))
    user, assistant, tool_reply = call.input_messages
    assert parts(user)[1] == {"type": "uri", "modality": "image", "uri": "data:image/png;base64,iVBOR"}
    assert parts(assistant) == [
        {"type": "reasoning", "text": "Use the tool."},
        {
            "type": "tool_call",
            "tool_call_id": "call_j",
            "tool_name": "weatherTool",
            "args": {"location": "Ann Arbor"},
        },
    ]
    assert parts(tool_reply) == [{"type": "tool_result", "tool_call_id": "call_j", "result": {"temp": 12.2}}]
    # The text answer exists only in output.value.
    assert texts(call.output_messages) == [("assistant", "It is overcast in Ann Arbor.")]


def test_unflattened_list_attributes_and_legacy_function_call() -> None:
    attrs = oi(
        "LLM",
        **{
            "llm.input_messages": [{"message.role": "user", "message.content": "what is 23 times 87"}],
            "llm.output_messages": [
                {
                    "message.role": "assistant",
                    "message.tool_calls": [
                        {
                            "tool_call.function.name": "multiply",
                            "tool_call.function.arguments": '{\n  "a": 23,\n  "b": 87\n}',
                        }
                    ],
                }
            ],
        },
    )
    call = ADAPTER.llm_call(make_span("c000000000000001", attributes=attrs))
    assert texts(call.input_messages) == [("user", "what is 23 times 87")]
    assert parts(call.output_messages[0]) == [
        {"type": "tool_call", "tool_call_id": "", "tool_name": "multiply", "args": {"a": 23, "b": 87}}
    ]
    legacy = llm(
        [], [{"role": "assistant", "function_call_name": "add", "function_call_arguments_json": '{"x": 1}'}]
    )
    [answer] = ADAPTER.llm_call(make_span("c000000000000002", attributes=legacy)).output_messages
    assert parts(answer) == [{"type": "tool_call", "tool_call_id": "", "tool_name": "add", "args": {"x": 1}}]


def test_tool_arguments_truncated_kept_as_text_and_double_encoded_decoded() -> None:
    attrs = llm(
        [{"role": "user", "content": "go"}],
        [
            {
                "role": "assistant",
                "tool_calls": [
                    {"tool_call": {"id": "c1", "function": {"name": "a", "arguments": '{"city": "Par'}}},
                    {
                        "tool_call": {
                            "id": "c2",
                            "function": {"name": "b", "arguments": json.dumps('{"n": 2}')},
                        }
                    },
                ],
            }
        ],
    )
    [answer] = ADAPTER.llm_call(make_span("c000000000000001", attributes=attrs)).output_messages
    assert [p["args"] for p in parts(answer)] == ['{"city": "Par', {"n": 2}]


def test_completion_api_prompts_and_choices() -> None:
    listed = oi(
        "LLM", **{"llm.prompts": ["def fib(n):"], **flat("llm.choices", [{"completion": {"text": " ..."}}])}
    )
    call = ADAPTER.llm_call(make_span("c000000000000001", attributes=listed))
    assert (texts(call.input_messages), texts(call.output_messages)) == (
        [("user", "def fib(n):")],
        [("assistant", " ...")],
    )
    indexed = oi("LLM", **flat("llm.prompts", [{"prompt": {"text": "Once upon"}}]))
    assert texts(ADAPTER.llm_call(make_span("c000000000000002", attributes=indexed)).input_messages) == [
        ("user", "Once upon")
    ]


def test_responses_api_output_items_are_one_answer_and_reasoning_summaries_are_reasoning() -> None:
    raw = {
        "object": "response",
        "output": [
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [{"type": "summary_text", "text": "Need the weather."}],
            },
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Checking."}],
            },
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "get_weather",
                "arguments": '{"city": "Oslo"}',
            },
        ],
    }
    # Older instrumentation: one output message per item, the reasoning summary typed as text.
    attrs = llm(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Oslo?"}],
        [
            {
                "role": "assistant",
                "contents": [{"message_content": {"type": "text", "text": "Need the weather."}}],
            },
            {"role": "assistant", "contents": [{"message_content": {"type": "text", "text": "Checking."}}]},
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "tool_call": {
                            "id": "call_1",
                            "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                        }
                    }
                ],
            },
        ],
        **{
            "output.value": json.dumps(raw),
            "llm.model_name": "unknown",
            "llm.invocation_parameters": '{"model": "o4-mini"}',
        },
    )
    call = ADAPTER.llm_call(make_span("c000000000000001", attributes=attrs))
    [answer] = call.output_messages
    assert (answer.content, answer.reasoning) == ("Checking.", "Need the weather.")
    assert [p["type"] for p in parts(answer)] == ["reasoning", "text", "tool_call"]
    assert call.model == "o4-mini"


def test_several_choices_stay_separate_and_the_run_continues_with_the_first() -> None:
    attrs = llm(
        [{"role": "user", "content": "Pick a colour"}],
        [{"role": "assistant", "content": "Blue."}, {"role": "assistant", "content": "Green."}],
        **{"llm.invocation_parameters": '{"model": "gpt-4o", "n": 2}'},
    )
    assert len(ADAPTER.llm_call(make_span("c000000000000001", attributes=attrs)).output_messages) == 2
    run = only_run(build_runs([make_span("c000000000000001", attributes=attrs)]))
    assert texts(run.output) == [("assistant", "Blue.")]


def test_anthropic_system_only_in_the_request_and_thinking_only_in_the_raw_response() -> None:
    request = {
        "model": "claude-sonnet-4",
        "system": "You are terse.",
        "messages": [{"role": "user", "content": "2+2?"}],
    }
    response = {
        "type": "message",
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Simple sum.", "signature": "s"},
            {"type": "text", "text": "4"},
        ],
    }
    attrs = llm(
        [{"role": "user", "content": "2+2?"}],
        [{"role": "assistant", "content": "4"}],
        **{
            "input.value": json.dumps(request),
            "output.value": json.dumps(response),
            "llm.model_name": "claude-sonnet-4",
        },
    )
    call = ADAPTER.llm_call(make_span("c000000000000001", attributes=attrs))
    assert texts(call.system_messages) == [("system", "You are terse.")]
    [answer] = call.output_messages
    assert (answer.content, answer.reasoning) == ("4", "Simple sum.")
    assert call.model == "claude-sonnet-4"


def test_raw_provider_payloads_when_no_flattened_messages() -> None:
    chat = {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_9",
                            "type": "function",
                            "function": {"name": "lookup", "arguments": '{"q": "x"}'},
                        }
                    ],
                }
            }
        ]
    }
    attrs = oi(
        "LLM",
        **{
            "input.value": json.dumps(
                {"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]}
            ),
            "output.value": json.dumps(chat),
        },
    )
    call = ADAPTER.llm_call(make_span("c000000000000001", attributes=attrs))
    assert (texts(call.system_messages), texts(call.input_messages)) == ([("system", "S")], [("user", "U")])
    assert parts(call.output_messages[0]) == [
        {"type": "tool_call", "tool_call_id": "call_9", "tool_name": "lookup", "args": {"q": "x"}}
    ]
    gemini = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {"thought": True, "text": "hm"},
                        {"text": "Hi"},
                        {"functionCall": {"name": "f", "args": {"a": 1}}},
                    ],
                }
            }
        ]
    }
    assert parts(found(response_message(json.dumps(gemini), "m"))) == [
        {"type": "reasoning", "text": "hm"},
        {"type": "text", "text": "Hi"},
        {"type": "tool_call", "tool_call_id": "", "tool_name": "f", "args": {"a": 1}},
    ]
    bedrock: JsonValue = {
        "output": {
            "message": {
                "role": "assistant",
                "content": [
                    {"reasoningContent": {"reasoningText": {"text": "r"}}},
                    {"toolUse": {"toolUseId": "tu1", "name": "g", "input": {"b": 2}}},
                ],
            }
        }
    }
    assert parts(found(response_message(bedrock, "m"))) == [
        {"type": "reasoning", "text": "r"},
        {"type": "tool_call", "tool_call_id": "tu1", "tool_name": "g", "args": {"b": 2}},
    ]
    assert (
        found(response_message('{"generations": [[{"text": "plain completion"}]]}', "m")).content
        == "plain completion"
    )


def test_a_responses_message_item_whose_content_is_no_list_of_blocks_gives_no_parts() -> None:
    call = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
    for content in ("Hi", 5, {"text": "Hi"}):
        response = {"output": [{"type": "message", "content": content}, call]}
        assert parts(found(response_message(json.dumps(response), "m"))) == [
            {"type": "tool_call", "tool_call_id": "c1", "tool_name": "f", "args": {}}
        ]


def test_an_anthropic_base64_image_is_a_data_url_only_when_its_data_is_text() -> None:
    def image(data: object) -> dict[str, Any]:
        source = {"type": "base64", "media_type": "image/png", "data": data}
        return {"role": "assistant", "content": [{"type": "image", "source": source}]}

    assert parts(found(response_message(json.dumps(image("iVBORw0")), "m"))) == [
        {"type": "uri", "modality": "image", "uri": "data:image/png;base64,iVBORw0"}
    ]
    assert parts(found(response_message(json.dumps(image(["iVBORw0"])), "m"))) == []


def test_redacted_content_is_missing_content() -> None:
    spans = [
        make_span("a000000000000001", attributes=oi("AGENT", **{"input.value": "__REDACTED__"}), end=2_000),
        make_span(
            "c000000000000001",
            "a000000000000001",
            llm(
                [{"role": "user", "content": "__REDACTED__"}],
                [
                    {
                        "role": "assistant",
                        "contents": [{"message_content": {"type": "text", "text": "__REDACTED__"}}],
                    }
                ],
                **{
                    "output.value": "__REDACTED__",
                    "llm.token_count.prompt": 9,
                    "llm.token_count.completion": 2,
                },
            ),
            start=1_100,
        ),
    ]
    run = only_run(build_runs(spans))
    assert run.content_missing
    assert all(m.content == "" for m in (*run.input.input_messages, *run.output))
    assert (run.usage.input_tokens, run.usage.output_tokens) == (9, 2)


def test_model_prefers_the_request_and_skips_junk() -> None:
    def model(**attrs: Any) -> str | None:
        return ADAPTER.llm_call(make_span("c000000000000001", attributes=oi("LLM", **attrs))).model

    assert (
        model(**{"llm.request.model_name": "claude-opus-5", "llm.model_name": "claude-opus-4-8"})
        == "claude-opus-5"
    )
    assert (
        model(**{"llm.model_name": "unknown", "llm.response.model_name": "gpt-4o-2024-08-06"})
        == "gpt-4o-2024-08-06"
    )
    assert (
        model(**{"llm.invocation_parameters": '{"model_name": "gpt-4o-mini"}', "llm.model_name": "x-1"})
        == "gpt-4o-mini"
    )
    assert model(**{"llm.model_name": "None"}) is None


def test_token_counts_fall_back_to_gen_ai_usage() -> None:
    attrs = oi("LLM", **{"gen_ai.usage.input_tokens": 179, "gen_ai.usage.output_tokens": 15})
    usage = ADAPTER.llm_call(make_span("c000000000000001", attributes=attrs)).usage
    assert (usage.input_tokens, usage.output_tokens) == (179, 15)


# --- tools -----------------------------------------------------------------------------------------


def test_langchain_tool_span_python_repr_input_and_tool_message_output() -> None:
    output = {
        "content": "snow",
        "type": "tool",
        "name": "get_weather",
        "tool_call_id": "call_1",
        "status": "success",
    }
    span = make_span(
        "b000000000000001",
        attributes=oi(
            "TOOL",
            **{
                "tool.name": "get_weather",
                "input.value": "{'city': 'Oslo'}",
                "output.value": json.dumps(output),
            },
        ),
    )
    tool = ADAPTER.tool_execution(span)
    assert (tool.call_id, tool.name, tool.args, tool.result, tool.is_error) == (
        "call_1",
        "get_weather",
        {"city": "Oslo"},
        "snow",
        False,
    )


def test_tool_span_call_id_converter_parameters_and_error() -> None:
    converted = make_span(
        "b000000000000001",
        attributes=oi(
            "TOOL",
            **{
                "tool_call.id": "call_j",
                "tool.name": "weatherTool",
                "tool.parameters": '{"location": "Ann Arbor"}',
                "output.value": '{"type": "text", "value": "Overcast"}',
            },
        ),
    )
    tool = ADAPTER.tool_execution(converted)
    assert (tool.call_id, tool.args, tool.result) == ("call_j", {"location": "Ann Arbor"}, "Overcast")
    failed = make_span(
        "b000000000000002",
        attributes=oi("TOOL", **{"tool.name": "fetch", "input.value": '{"url": "x"}'}),
        status_code=STATUS_ERROR,
    ).model_copy(
        update={"events": [SpanEvent(name="exception", attributes={"exception.message": "timeout"})]}
    )
    tool = ADAPTER.tool_execution(failed)
    assert (tool.is_error, tool.result, tool.name) == (True, "timeout", "fetch")


# --- runs built from hand-made traces --------------------------------------------------------------


def langgraph_trace() -> list[Any]:
    node = json.dumps({"langgraph_step": 1, "langgraph_node": "agent"})
    tools_node = json.dumps({"langgraph_step": 2, "langgraph_node": "tools"})
    graph_input = {"messages": [["user", "hi"], ["assistant", "hello!"], ["user", "weather in Oslo?"]]}
    call = {"id": "call_1", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}
    history = [
        {"role": "system", "content": "You help."},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello!"},
        {"role": "user", "content": "weather in Oslo?"},
    ]
    tool_message = {"content": "snow", "type": "tool", "name": "get_weather", "tool_call_id": "call_1"}
    return [
        make_span(
            "0000000000000001",
            attributes=oi("CHAIN", **{"input.value": json.dumps(graph_input)}),
            name="LangGraph",
            start=100,
            end=1_000,
        ),
        make_span(
            "0000000000000002", "0000000000000001", oi("AGENT", metadata=node), name="agent", start=110
        ),
        make_span(
            "0000000000000003",
            "0000000000000002",
            llm(
                history,
                [{"role": "assistant", "tool_calls": [{"tool_call": call}]}],
                **{
                    "llm.token_count.prompt": 20,
                    "llm.token_count.completion": 5,
                    "metadata": node,
                    "llm.invocation_parameters": '{"model": "gpt-4o-mini"}',
                },
            ),
            name="ChatOpenAI",
            start=120,
        ),
        make_span(
            "0000000000000004", "0000000000000001", oi("CHAIN", metadata=tools_node), name="tools", start=300
        ),
        make_span(
            "0000000000000005",
            "0000000000000004",
            oi(
                "TOOL",
                **{
                    "tool.name": "get_weather",
                    "input.value": "{'city': 'Oslo'}",
                    "output.value": json.dumps(tool_message),
                },
            ),
            name="get_weather",
            start=310,
        ),
        make_span(
            "0000000000000006", "0000000000000001", oi("AGENT", metadata=node), name="agent", start=400
        ),
        make_span(
            "0000000000000007",
            "0000000000000006",
            llm(
                [
                    *history,
                    {"role": "assistant", "tool_calls": [{"tool_call": call}]},
                    {"role": "tool", "tool_call_id": "call_1", "content": "snow"},
                ],
                [{"role": "assistant", "content": "It is snowing in Oslo."}],
                **{"llm.token_count.prompt": 30, "llm.token_count.completion": 6, "metadata": node},
            ),
            name="ChatOpenAI",
            start=410,
        ),
        make_span("0000000000000008", "0000000000000001", oi("EMBEDDING"), name="embed", start=420),
    ]


def test_langgraph_graph_is_one_run_and_its_agent_nodes_are_steps() -> None:
    run = only_run(build_runs(langgraph_trace()))
    assert (run.span_id, run.agent_name, run.model) == ("0000000000000001", None, "gpt-4o-mini")
    assert texts(run.input.input_messages) == [("user", "weather in Oslo?")]
    assert texts(run.input.remembered_messages) == [("user", "hi"), ("assistant", "hello!")]
    assert texts(run.input.system_messages) == [("system", "You help.")]
    assert texts(run.output) == [("assistant", ""), ("assistant", "It is snowing in Oslo.")]
    # The tool span's id is in its LangChain ToolMessage output: one call, joined by id.
    assert calls(run.output[0]) == [("get_weather", "call_1", {"city": "Oslo"}, "snow", "result")]
    assert (run.usage.input_tokens, run.usage.output_tokens) == (50, 11)


def _with_foreign_parent(spans: list[Any], parent_id: str, present: bool) -> list[Any]:
    """The graph under ``parent_id``: a web server's request span (present) or a remote parent."""
    root = spans[0]
    moved = [root.model_copy(update={"parent_span_id": parent_id}), *spans[1:]]
    if not present:
        return moved
    http = make_span(
        parent_id,
        attributes={"http.request.method": "POST", "url.path": "/chat"},
        name="POST /chat",
        start=50,
        end=1_100,
    )
    return [http, *moved]


@pytest.mark.parametrize("present", [True, False], ids=["web-server-parent", "remote-parent"])
def test_the_topmost_chain_is_the_run_under_a_span_of_another_instrumentation(present: bool) -> None:
    # FastAPI (or another service) instrumented with plain OpenTelemetry above a LangGraph graph:
    # the graph's CHAIN is still the one run, with the same reading as at the top of the trace.
    alone = only_run(build_runs(langgraph_trace()))
    under = only_run(build_runs(_with_foreign_parent(langgraph_trace(), "00000000000000f0", present)))
    assert under.span_id == "0000000000000001"
    assert under.model_dump(exclude={"span_id"}) == alone.model_dump(exclude={"span_id"})


def test_a_chain_under_another_openinference_span_is_a_step() -> None:
    # The "tools" CHAIN (span 4) sits under the graph's CHAIN: it never becomes a run of its own.
    spans = langgraph_trace()
    runs = build_runs(spans)
    assert [run.span_id for run in runs] == ["0000000000000001"]
    assert ADAPTER.top_role(spans[3]) is SpanRole.AGENT  # what it would be with nothing above it
    assert ADAPTER.top_role(make_span("a000000000000001", attributes=oi("LLM"))) is None


def test_mastra_openinference_export_is_one_agent_run() -> None:
    tool_calls = [
        {"type": "tool-call", "toolCallId": "call_j", "toolName": "weatherTool", "args": {"location": "AA"}}
    ]
    first_prompt = [
        {"role": "system", "content": "You are a weather assistant."},
        {"role": "user", "contents": [{"message_content": {"type": "text", "text": "weather in ann arbor"}}]},
    ]
    spans = [
        make_span(
            "1000000000000001",
            attributes=oi("AGENT", **{"http.method": "POST"}),
            name="POST /api/agents/weatherAgent/stream",
            start=100,
            end=1_000,
        ),
        make_span(
            "1000000000000002",
            "1000000000000001",
            oi(
                "AGENT",
                **{
                    "componentName": "Weather Agent",
                    "agent.stream.argument.0": '[{"role":"user","content":"weather in ann arbor"}]',
                    "agent.stream.result": '{"textPromise": {"status": {"type": "pending"}}}',
                },
            ),
            name="agent.stream",
            start=110,
            end=900,
        ),
        make_span(
            "1000000000000003",
            "1000000000000002",
            oi("AGENT", **{"componentName": "Weather Agent", "agent.fetchMemory.result": "{}"}),
            name="agent.fetchMemory",
            start=115,
        ),
        make_span(
            "1000000000000004",
            "1000000000000002",
            oi("CHAIN", **{"output.value": "Overcast."}),
            name="ai.streamText",
            start=130,
            end=880,
        ),
        # The OpenInference copy of the tool call has no id; ai.response.toolCalls has it.
        make_span(
            "1000000000000005",
            "1000000000000004",
            llm(
                first_prompt,
                [
                    {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "tool_call": {
                                    "function": {"name": "weatherTool", "arguments": '{"location":"AA"}'}
                                }
                            }
                        ],
                    }
                ],
                **{
                    "ai.response.toolCalls": json.dumps(tool_calls),
                    "output.value": "",
                    "gen_ai.request.model": "gpt-4o",
                    "llm.token_count.prompt": 179,
                    "llm.token_count.completion": 15,
                },
            ),
            name="ai.streamText.doStream",
            start=140,
        ),
        make_span(
            "1000000000000006",
            "1000000000000004",
            oi(
                "TOOL",
                **{
                    "tool_call.id": "call_j",
                    "tool.name": "weatherTool",
                    "input.value": '{"location":"AA"}',
                    "output.value": '{"conditions":"Overcast"}',
                },
            ),
            name="ai.toolCall",
            start=310,
        ),
        make_span(
            "1000000000000007",
            "1000000000000004",
            llm(
                [
                    *first_prompt,
                    {"role": "tool", "tool_call_id": "call_j", "content": '{"conditions":"Overcast"}'},
                ],
                [],
                **{
                    "output.value": "Overcast.",
                    "llm.token_count.prompt": 246,
                    "llm.token_count.completion": 64,
                },
            ),
            name="ai.streamText.doStream",
            start=410,
        ),
    ]
    run = only_run(build_runs(spans))
    assert (run.span_id, run.agent_name, run.model) == ("1000000000000002", "Weather Agent", "gpt-4o")
    assert texts(run.input.input_messages) == [("user", "weather in ann arbor")]
    assert texts(run.input.system_messages) == [("system", "You are a weather assistant.")]
    assert texts(run.output) == [("assistant", ""), ("assistant", "Overcast.")]
    assert calls(run.output[0]) == [
        ("weatherTool", "call_j", {"location": "AA"}, {"conditions": "Overcast"}, "result")
    ]
    assert (run.usage.input_tokens, run.usage.output_tokens) == (425, 79)


def test_top_level_chain_with_retriever_and_llm_is_a_run_with_context() -> None:
    spans = [
        make_span(
            "0000000000000001",
            attributes=oi(
                "CHAIN",
                **{
                    "input.value": json.dumps({"input": "What is our refund window?", "chat_history": []}),
                    "output.value": json.dumps({"output": "30 days."}),
                },
            ),
            name="AgentExecutor",
            start=100,
            end=900,
        ),
        make_span(
            "0000000000000002",
            "0000000000000001",
            oi(
                "RETRIEVER",
                **flat(
                    "retrieval.documents",
                    [
                        {"document": {"id": "1", "content": "Refunds within 30 days.", "score": 0.8}},
                        {"document": {"id": "2", "content": "__REDACTED__"}},
                    ],
                ),
            ),
            start=150,
        ),
        make_span(
            "0000000000000003",
            "0000000000000001",
            oi(
                "RERANKER",
                **flat("reranker.output_documents", [{"document": {"content": "Refunds within 30 days."}}]),
            ),
            start=160,
        ),
        make_span(
            "0000000000000004",
            "0000000000000001",
            llm(
                [{"role": "user", "content": "Context: Refunds within 30 days.\nWhat is our refund window?"}],
                [{"role": "assistant", "content": "30 days."}],
            ),
            start=200,
        ),
    ]
    run = only_run(build_runs(spans))
    assert run.context == ["Refunds within 30 days."]
    assert texts(run.input.input_messages) == [("user", "What is our refund window?")]
    assert texts(run.output) == [("assistant", "30 days.")]


def test_agent_input_payloads_keep_only_the_new_turn() -> None:
    system, conversation = request_messages(
        json.dumps(
            {
                "messages": [
                    {"role": "system", "content": "S"},
                    {"role": "user", "content": "old"},
                    {"role": "assistant", "content": "reply"},
                    {"role": "user", "content": "new"},
                ]
            }
        ),
        "a",
    )
    assert texts(system) == [("system", "S")]
    assert texts(conversation) == [("user", "old"), ("assistant", "reply"), ("user", "new")]
    lc = [
        {
            "lc": 1,
            "type": "constructor",
            "id": ["langchain", "schema", "messages", "HumanMessage"],
            "kwargs": {"content": "hello"},
        }
    ]
    assert texts(request_messages(json.dumps({"messages": [lc]}), "a")[1]) == [("user", "hello")]
    assert texts(request_messages(json.dumps({"task": "Plan a trip", "stream": False}), "a")[1]) == [
        ("user", "Plan a trip")
    ]
    assert texts(request_messages("42", "a")[1]) == [("user", "42")]
    assert request_messages(json.dumps({"inputs": {"topic": "x"}, "n": 2}), "a") == ([], [])

    spans = [
        make_span(
            "a000000000000001",
            attributes=oi(
                "AGENT",
                **{
                    "input.value": json.dumps(
                        {
                            "messages": [
                                {"role": "user", "content": "old"},
                                {"role": "assistant", "content": "reply"},
                                {"role": "user", "content": "new"},
                            ]
                        }
                    )
                },
            ),
            name="helper",
            end=2_000,
        ),
        make_span(
            "c000000000000001",
            "a000000000000001",
            llm(
                [
                    {"role": "user", "content": "old"},
                    {"role": "assistant", "content": "reply"},
                    {"role": "user", "content": "new"},
                ],
                [{"role": "assistant", "content": "ok"}],
            ),
            start=1_100,
        ),
    ]
    run = only_run(build_runs(spans))
    assert texts(run.input.input_messages) == [("user", "new")]
    assert texts(run.input.remembered_messages) == [("user", "old"), ("assistant", "reply")]


# --- odd values ------------------------------------------------------------------------------------

_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True)
    | st.text(max_size=6)
    | st.sampled_from(["__REDACTED__", "[", "{'a': (1,", '{"type": "json", "value": "[1"}', "tool-call"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
_json_values = _values.map(json.dumps)
_keys = st.sampled_from(
    [
        "input.value", "output.value", "llm.input_messages", "llm.output_messages",
        "llm.input_messages.0.message.role", "llm.input_messages.0.message.content",
        "llm.input_messages.1.message.contents.0.message_content.type",
        "llm.input_messages.1.message.contents.0.message_content.image",
        "llm.input_messages.1.message.tool_calls.0.tool_call.function.arguments",
        "llm.input_messages.2.message.tool_call_id", "llm.input_messages.x.message",
        "llm.output_messages.0.message", "llm.output_messages.0.message.tool_calls.3.tool_call.id",
        "llm.output_messages.0.message.contents.1.tool_call", "llm.invocation_parameters",
        "llm.token_count.prompt", "llm.prompts", "llm.choices.0.completion.text", "retrieval.documents",
        "retrieval.documents.0.document.content", "tool.parameters", "tool_call.id", "metadata",
        "pydantic_ai.all_messages", "pydantic_ai.new_message_index", "gen_ai.input.messages",
        "gen_ai.output.messages", "gen_ai.system_instructions", "ai.response.toolCalls",
        "agent.stream.argument.0", "final_result",
    ]
)  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["AGENT", "LLM", "TOOL", "CHAIN", "RETRIEVER", "RERANKER"]),
    st.booleans(),
    st.dictionaries(_keys, _values | _json_values, max_size=8),
)
def test_adapter_never_raises_nor_changes_the_span_on_odd_values(
    kind: str, top: bool, attrs: dict[str, Any]
) -> None:
    span = make_span(
        "a000000000000001", "" if top else "b000000000000001", oi(kind, **attrs), name="agent.stream"
    )
    before = copy.deepcopy(span.attributes)
    ADAPTER.classify(span)
    for read in (ADAPTER.llm_call, ADAPTER.tool_execution, ADAPTER.agent_info, ADAPTER.retrieved_texts):
        read(span)
    for run in build_runs([span]):
        json.dumps(run.to_json_dict())
    assert span.attributes == before


def test_nested_attribute_values_are_read_without_being_modified() -> None:
    message = {"role": "user"}
    attrs = oi(
        "LLM", **{"llm.input_messages.0.message": message, "llm.input_messages.0.message.content": "hi"}
    )
    call = ADAPTER.llm_call(make_span("c000000000000001", attributes=attrs))
    assert texts(call.input_messages) == [("user", "hi")]
    assert message == {"role": "user"}


def test_agent_output_shapes_and_structured_output_as_the_fallback_answer() -> None:
    llama = {
        "response": {"role": "assistant", "blocks": [{"block_type": "text", "text": "From LlamaIndex."}]}
    }
    assert found(response_message(json.dumps(llama), "m")).content == "From LlamaIndex."
    assert (
        found(response_message(json.dumps({"raw": "From CrewAI.", "tasks_output": []}), "m")).content
        == "From CrewAI."
    )
    assert response_message(json.dumps({"city": "Paris", "temp_c": 14}), "m") is None
    spans = [
        make_span(
            "a000000000000001",
            attributes=oi(
                "AGENT",
                **{"input.value": "Weather as JSON?", "output.value": '{"city": "Paris", "temp_c": 14}'},
            ),
            name="forecaster",
            end=2_000,
        ),
        # Structured output arrives as a final_result tool call: the model call has no text.
        make_span(
            "c000000000000001",
            "a000000000000001",
            llm(
                [{"role": "user", "content": "Weather as JSON?"}],
                [
                    {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "tool_call": {
                                    "id": "f1",
                                    "function": {
                                        "name": "final_result",
                                        "arguments": '{"city": "Paris", "temp_c": 14}',
                                    },
                                }
                            }
                        ],
                    }
                ],
            ),
            start=1_100,
        ),
    ]
    run = only_run(build_runs(spans))
    assert texts(run.output)[-1] == ("assistant", '{"city": "Paris", "temp_c": 14}')


def test_tool_values_typed_text_stay_text() -> None:
    span = make_span(
        "b000000000000001",
        attributes=oi(
            "TOOL",
            **{
                "tool.name": "count",
                "input.value": "7",
                "input.mime_type": "text/plain",
                "output.value": "42",
                "output.mime_type": "text/plain",
            },
        ),
    )
    tool = ADAPTER.tool_execution(span)
    assert (tool.args, tool.result) == ("7", "42")


def test_model_answer_typed_text_is_not_read_as_a_payload() -> None:
    attrs = oi("LLM", **{"output.value": '{"city": "Paris"}', "output.mime_type": "text/plain"})
    assert texts(ADAPTER.llm_call(make_span("c000000000000001", attributes=attrs)).output_messages) == [
        ("assistant", '{"city": "Paris"}')
    ]
    # Without a mime type it is a raw response of no known shape: no answer is made up from it.
    untyped = oi("LLM", **{"output.value": '{"city": "Paris"}'})
    assert ADAPTER.llm_call(make_span("c000000000000002", attributes=untyped)).output_messages == []
