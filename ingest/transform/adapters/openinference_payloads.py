"""Whole ``input.value`` / ``output.value`` payloads on OpenInference spans -> a request's messages,
a response's answer.

A payload is the instrumented call's own request or response (OpenAI chat and Responses, Anthropic
Messages, Gemini, Bedrock Converse, LangChain generations), an agent's or a chain's input kwargs and
output, or plain text. These readers find where it keeps its messages; the messages and content blocks
themselves are read by ``openinference_values``. A shape they do not know gives nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from tracescore.ingest.transform.adapters.base import make_message
from tracescore.ingest.transform.adapters.openinference_values import (
    block_parts,
    chat_message,
    first_of,
    lenient,
)
from tracescore.ingest.transform.jsonvalue import as_text, clean_text, plain_json
from tracescore.schemas import Message, Part
from tracescore.schemas.redaction_placeholders import is_placeholder
from tracescore.schemas.spans import AttributeValue

# Keys frameworks use for the user's request in an agent's or chain's input kwargs.
_INPUT_KEYS = (
    "input", "query", "question", "prompt", "user_input", "user_msg", "user_message",
    "message", "task", "request", "text", "content",
)  # fmt: skip
# Keys frameworks use for the final answer in an agent's or chain's output.
_ANSWER_KEYS = (
    "output", "answer", "final_output", "final_result", "result", "response", "raw", "text", "content",
)  # fmt: skip
# OpenAI Responses output items that are part of the answer besides its messages.
_RESPONSE_ITEMS = frozenset({"function_call", "custom_tool_call", "reasoning"})


def _structured_or_text(value: AttributeValue) -> AttributeValue:
    """A payload decoded when it is a JSON object or array; anything else (``"42"``) is its text."""
    parsed = lenient(value)
    return parsed if isinstance(parsed, str | dict | list) else clean_text(value)


def _message_list(value: AttributeValue) -> Sequence[AttributeValue] | None:
    """A list of messages; LangChain's ``[[message, ...]]`` batches read as their first batch."""
    if not isinstance(value, list):
        return None
    batches = [v for v in value if isinstance(v, list)]
    if (
        value
        and len(batches) == len(value)
        and not all(len(v) == 2 and isinstance(v[0], str) for v in batches)
    ):
        return batches[0]  # not [("user", "hi")]
    return value


def request_messages(
    value: AttributeValue, span_id: str, tag: str = "in"
) -> tuple[list[Message], list[Message]]:
    """(system messages, conversation) of a request payload or an agent's input; both may be empty."""
    if value is None or is_placeholder(value):
        return [], []
    parsed = _structured_or_text(value)
    system: list[Message] = []
    raw: Sequence[AttributeValue] = []
    if isinstance(parsed, str):
        raw = [parsed]
    elif (as_list := _message_list(parsed)) is not None:
        raw = as_list
    elif isinstance(parsed, dict):
        for key in ("system", "instructions", "system_prompt"):
            sys = parsed.get(key)
            blocks = sys if isinstance(sys, list) else [sys] if sys is not None else []
            parts = [p for b in blocks for p in block_parts(b)]
            if parts:
                system.append(make_message(f"{span_id}-{tag}sys-{len(system)}", "system", parts))
        for key in ("messages", "contents", "input", "prompt", *_INPUT_KEYS):
            candidate = parsed.get(key)
            if (listed := _message_list(candidate)) is not None:
                raw = listed
                break
            if isinstance(candidate, str) and not is_placeholder(candidate):
                raw = [candidate]
                break
        if not raw and "role" in parsed and first_of(parsed, "content", "parts") is not None:
            raw = [parsed]
        elif not raw and len(parsed) == 1 and isinstance(only := next(iter(parsed.values())), str):
            raw = [only]
    converted = [chat_message(m, f"{span_id}-{tag}-{i}", "user") for i, m in enumerate(raw)]
    messages = [m for m in converted if m is not None]
    system.extend(m for m in messages if m.role == "system")
    return system, [m for m in messages if m.role != "system"]


def _responses_output(items: Sequence[AttributeValue], msg_id: str) -> Message:
    """OpenAI Responses ``output`` items (message, function_call, reasoning, ...) as one answer."""
    parts: list[Part] = []
    for item in items:
        if isinstance(item, dict) and item.get("type") == "message":
            content = item.get("content")
            blocks = content if isinstance(content, list) else []
            parts.extend(p for block in blocks for p in block_parts(block))
        elif isinstance(item, dict) and item.get("type") in _RESPONSE_ITEMS:
            parts.extend(block_parts(item))
    return make_message(msg_id, "assistant", parts)


def response_message(value: AttributeValue, msg_id: str, *, keep_unknown: bool = False) -> Message | None:
    """The assistant message in a response payload or an agent's output; None if there is none.

    ``keep_unknown``: a JSON value of no known shape is the answer itself (an agent's structured
    output), kept as its JSON text; a model call's unknown raw response is not an answer.
    """
    if value is None or is_placeholder(value):
        return None
    message = _known_response(value, msg_id)
    if message is None and keep_unknown:
        return chat_message(as_text(plain_json(lenient(value))), msg_id, "assistant")
    return message


def _known_response(value: AttributeValue, msg_id: str) -> Message | None:
    parsed = _structured_or_text(value)
    if isinstance(parsed, str):
        return chat_message(parsed, msg_id, "assistant")
    if not isinstance(parsed, dict):
        return None
    choices = parsed.get("choices")
    if isinstance(choices, list) and choices and isinstance(choice := choices[0], dict):
        message = first_of(choice, "message", "delta")
        return chat_message(message if message is not None else choice.get("text"), msg_id, "assistant")
    output = parsed.get("output")
    if isinstance(output, list) and any(isinstance(i, dict) and "type" in i for i in output):
        return _responses_output(output, msg_id)
    if isinstance(output, dict) and isinstance(output.get("message"), dict):  # Bedrock Converse
        return chat_message(output["message"], msg_id, "assistant")
    candidates = parsed.get("candidates")
    if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict):  # Gemini
        return chat_message(candidates[0].get("content"), msg_id, "assistant")
    generations = _message_list(parsed.get("generations"))
    if generations and isinstance(gen := generations[0], dict):  # LangChain LLM outputs
        message = gen.get("message")
        return chat_message(message if message is not None else gen.get("text"), msg_id, "assistant")
    if isinstance(parsed.get("content"), list) and parsed.get("role", "assistant") == "assistant":
        return chat_message({**parsed, "role": "assistant"}, msg_id, "assistant")  # Anthropic
    if (messages := _message_list(parsed.get("messages"))) is not None:  # a graph's final state
        converted = [chat_message(m, msg_id, "assistant") for m in messages]
        return next((m for m in reversed(converted) if m is not None and m.role == "assistant"), None)
    for key in _ANSWER_KEYS:
        answer = parsed.get(key)
        if isinstance(answer, str) or (isinstance(answer, dict) and "role" in answer):
            return chat_message(answer, msg_id, "assistant")  # text, or a ChatMessage (LlamaIndex)
    return None
