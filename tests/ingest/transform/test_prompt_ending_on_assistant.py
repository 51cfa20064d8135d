"""A prompt that ends on an assistant message: a prefill (Anthropic's "put words in Claude's mouth")
or an answer the model is asked to continue. Its last user block is still the input being answered;
the trailing assistant text is part of the prompt, kept in ``remembered_messages`` after the history,
and never the run's output. Checked in every convention that carries a whole prompt.

Expected values are written by hand from the spans built here.
"""

from __future__ import annotations

import json
from typing import Any

from tests.support.fixture_files import make_span
from tests.support.runs import only_run, texts
from tracescore.ingest.transform.adapters.mastra_messages import convert_messages, split_new_turn
from tracescore.ingest.transform.runs import build_runs, split_turn
from tracescore.schemas import Message
from tracescore.schemas.agent_run import Role

CHAT = "c000000000000001"
ROOT = "a000000000000001"
QUESTION = "List three primes as a JSON array."
PREFILL = "["
COMPLETION = "2, 3, 5]"


def message(role: Role, content: str) -> Message:
    return Message(role=role, content=content)


def test_split_turn_keeps_the_last_user_block_as_the_turn_and_the_trailing_text_apart() -> None:
    call = Message.model_validate(
        {"role": "assistant", "content": "", "parts": [{"type": "tool_call", "tool_call_id": "c1"}]}
    )
    tool = message("tool", "sunny")
    earlier = [message("user", "Hi"), message("assistant", "Hello!")]
    turn = [message("user", "Weather?"), message("user", "In Oslo.")]
    # A prefill after the user's block.
    assert split_turn([*earlier, *turn, message("assistant", "The weather")]) == (
        earlier,
        turn,
        [message("assistant", "The weather")],
    )
    # The turn's tool exchange is left out; text after it is the answer being continued.
    assert split_turn([*earlier, *turn, call, tool, message("assistant", "In Oslo it is")]) == (
        earlier,
        turn,
        [message("assistant", "In Oslo it is")],
    )
    # Unchanged: a prompt ending with the user, and one without any user message.
    assert split_turn([*earlier, *turn]) == (earlier, turn, [])
    assert split_turn([message("assistant", "Hello!")]) == ([message("assistant", "Hello!")], [], [])


def test_genai_semconv_chat_with_a_prefill() -> None:
    def msg(role: str, content: str) -> dict[str, Any]:
        return {"role": role, "parts": [{"type": "text", "content": content}]}

    chat = make_span(
        CHAT,
        name="chat claude-sonnet-4",
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "anthropic",
            "gen_ai.request.model": "claude-sonnet-4",
            "gen_ai.system_instructions": json.dumps([{"type": "text", "content": "Answer in JSON."}]),
            "gen_ai.input.messages": json.dumps(
                [
                    msg("user", "Hi"),
                    msg("assistant", "Hello!"),
                    msg("user", QUESTION),
                    msg("assistant", PREFILL),
                ]
            ),
            "gen_ai.output.messages": json.dumps([msg("assistant", COMPLETION)]),
        },
    )
    run = only_run(build_runs([chat]))
    assert texts(run.input.input_messages) == [("user", QUESTION)]
    assert texts(run.input.remembered_messages) == [
        ("user", "Hi"),
        ("assistant", "Hello!"),
        ("assistant", PREFILL),
    ]
    assert texts(run.input.system_messages) == [("system", "Answer in JSON.")]
    assert texts(run.output) == [("assistant", COMPLETION)]


def test_openllmetry_anthropic_call_with_a_prefill() -> None:
    # opentelemetry-instrumentation-anthropic: gen_ai.prompt.N.role/content, gen_ai.completion.N.*.
    chat = make_span(
        CHAT,
        name="anthropic.chat",
        attributes={
            "llm.request.type": "chat",
            "gen_ai.system": "Anthropic",
            "gen_ai.request.model": "claude-sonnet-4",
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": QUESTION,
            "gen_ai.prompt.1.role": "assistant",
            "gen_ai.prompt.1.content": PREFILL,
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": COMPLETION,
        },
    )
    run = only_run(build_runs([chat]))
    assert texts(run.input.input_messages) == [("user", QUESTION)]
    assert texts(run.input.remembered_messages) == [("assistant", PREFILL)]
    assert texts(run.output) == [("assistant", COMPLETION)]


def test_openinference_llm_span_with_a_prefill() -> None:
    # openinference-instrumentation-anthropic: llm.input_messages.N.message.role/content, flattened.
    chat = make_span(
        CHAT,
        name="Messages",
        attributes={
            "openinference.span.kind": "LLM",
            "llm.model_name": "claude-sonnet-4",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": QUESTION,
            "llm.input_messages.1.message.role": "assistant",
            "llm.input_messages.1.message.content": PREFILL,
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": COMPLETION,
        },
    )
    run = only_run(build_runs([chat]))
    assert texts(run.input.input_messages) == [("user", QUESTION)]
    assert texts(run.input.remembered_messages) == [("assistant", PREFILL)]
    assert texts(run.output) == [("assistant", COMPLETION)]


def test_vercel_ai_generate_text_with_a_prefill() -> None:
    # generateText({messages}) records the whole conversation in ai.prompt on the root span and the
    # provider prompt in ai.prompt.messages on the doGenerate span.
    conversation = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": PREFILL},
    ]
    provider_prompt = [
        {"role": m["role"], "content": [{"type": "text", "text": m["content"]}]} for m in conversation
    ]

    def span(span_id: str, parent: str, operation: str, start: int, **attrs: Any) -> Any:
        attributes = {"ai.operationId": operation, "operation.name": operation, **attrs}
        return make_span(span_id, parent, attributes, start=start, end=start + 50, name=operation)

    spans = [
        span(
            ROOT,
            "",
            "ai.generateText",
            0,
            **{"ai.prompt": json.dumps({"messages": conversation}), "ai.response.text": COMPLETION},
        ),
        span(
            CHAT,
            ROOT,
            "ai.generateText.doGenerate",
            10,
            **{
                "ai.prompt.messages": json.dumps(provider_prompt),
                "ai.response.text": COMPLETION,
                "ai.model.id": "claude-sonnet-4",
            },
        ),
    ]
    run = only_run(build_runs(spans))
    assert texts(run.input.input_messages) == [("user", QUESTION)]
    assert texts(run.input.remembered_messages) == [
        ("user", "Hi"),
        ("assistant", "Hello!"),
        ("assistant", PREFILL),
    ]
    assert texts(run.output) == [("assistant", COMPLETION)]


def test_mastra_agent_input_ending_on_an_assistant_message_keeps_it_with_the_turn() -> None:
    messages = convert_messages(
        json.dumps(
            [
                {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "Hello!"},
                {"role": "user", "content": QUESTION},
                {"role": "assistant", "content": PREFILL},
            ]
        ),
        ROOT,
        "in",
        "user",
    )
    earlier, new_turn = split_new_turn(messages)
    assert texts(earlier) == [("user", "Hi"), ("assistant", "Hello!")]
    # The transform then keeps the user's block as the input and the prefill with the prompt.
    assert texts(new_turn) == [("user", QUESTION), ("assistant", PREFILL)]
