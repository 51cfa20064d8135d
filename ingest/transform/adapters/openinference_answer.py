"""A model call's answer on an OpenInference span: the flattened output message, completed from
``output.value`` and, on spans converted from the AI SDK, from ``ai.response.*``.

Instrumentations and converters drop different pieces of an answer (thinking, plain text, call ids):
each source fills what the one before lacks.
"""

from __future__ import annotations

from collections.abc import Mapping

from tracescore.ingest.transform.adapters.base import make_message, make_part
from tracescore.ingest.transform.adapters.openinference_payloads import response_message
from tracescore.ingest.transform.adapters.openinference_values import (
    call_part,
    chat_message,
    first_of,
)
from tracescore.ingest.transform.jsonvalue import as_list, clean_text
from tracescore.schemas import Message, Part
from tracescore.schemas.spans import AttributeValue


def call_answer(
    flattened: Message | None, attributes: Mapping[str, AttributeValue], msg_id: str, *, llama_index: bool
) -> Message | None:
    """The single answer of a model call whose flattened output is ``flattened`` (None if absent)."""
    raw = output_message(attributes, msg_id, llama_index=llama_index)
    return _with_sdk_calls(_complete_answer(flattened, raw), attributes, msg_id)


def output_message(
    attributes: Mapping[str, AttributeValue],
    msg_id: str,
    *,
    keep_unknown: bool = False,
    llama_index: bool = False,
) -> Message | None:
    """``output.value`` as an answer: plain text when its mime type says so, else a payload.

    LlamaIndex writes a model call's response as ``str(ChatResponse)``, ``"assistant: <text>"``:
    the text is what follows the role (empty for a call that only asked for tools).
    """
    value = attributes.get("output.value")
    if isinstance(value, str) and llama_index and value.startswith("assistant: "):
        return chat_message(value.removeprefix("assistant: "), msg_id, "assistant")
    if isinstance(value, str) and attributes.get("output.mime_type") == "text/plain":
        return chat_message(value, msg_id, "assistant")
    return response_message(value, msg_id, keep_unknown=keep_unknown)


def _complete_answer(answer: Message | None, raw: Message | None) -> Message | None:
    """Fill what the flattened answer lacks from ``output.value`` (plain text or the raw response).

    Text answers sometimes exist only there (AI SDK converter), thinking dropped by an
    instrumentation is in the raw response, and older OpenAI Responses instrumentation wrote
    reasoning summaries as plain text items: text equal to the response's reasoning is reasoning.
    """
    if answer is None or raw is None:
        return answer or raw
    parts, kinds = list(answer.parts), {p.type for p in answer.parts}
    if "text" not in kinds:
        parts.extend(p for p in raw.parts if p.type == "text")
    if "tool_call" not in kinds:
        parts.extend(p for p in raw.parts if p.type == "tool_call")
    reasoning = [p for p in raw.parts if p.type == "reasoning"]
    if reasoning and "reasoning" not in kinds:
        thought = set(_texts_of(reasoning, "reasoning"))
        parts = [p for p in parts if not (p.type == "text" and _texts_of([p], "text")[0] in thought)]
        parts = [*reasoning, *parts]
    return make_message(answer.id, "assistant", parts)


def _texts_of(parts: list[Part], kind: str) -> list[str]:
    return [str((p.model_extra or {}).get("text") or "") for p in parts if p.type == kind]


def _sdk_call(call: Mapping[str, AttributeValue]) -> Part:
    """One AI SDK ``{toolCallId, toolName, args|input}`` tool call."""
    args = first_of(call, "input", "args")
    return call_part(first_of(call, "toolCallId", "id"), first_of(call, "toolName"), args)


def _with_sdk_calls(
    answer: Message | None, attributes: Mapping[str, AttributeValue], msg_id: str
) -> Message | None:
    """Spans converted from the AI SDK keep ``ai.response.*``: its tool calls carry the call ids and
    its reasoning the thinking that the OpenInference copies (openinference-vercel/-mastra) lose."""
    calls = [_sdk_call(c) for c in as_list(attributes.get("ai.response.toolCalls")) if isinstance(c, dict)]
    reasoning = clean_text(attributes.get("ai.response.reasoning"))
    if not calls and not reasoning:
        return answer
    parts = list(answer.parts) if answer else []
    if calls:
        parts = [p for p in parts if p.type != "tool_call"] + calls
    if reasoning.strip() and not any(p.type == "reasoning" for p in parts):
        parts.insert(0, make_part({"type": "reasoning", "text": reasoning}))
    return make_message(msg_id, "assistant", parts)
