"""OpenTelemetry GenAI semantic conventions v1.37+ (``gen_ai.operation.name`` spans).

Messages are ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (JSON lists of
``{role, parts}``), instructions ``gen_ai.system_instructions`` (a JSON list of parts), tools
``gen_ai.tool.call.{id,arguments,result}`` on ``execute_tool`` spans. See FIELD-GUIDE.md section 1.
The message helpers are public: other conventions that adopted these attributes reuse them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ingest.adapters.base import (
    AgentInfo,
    LlmCall,
    SpanRole,
    ToolExecution,
    make_message,
    make_part,
    normalize_role,
)
from ingest.jsonvalue import as_int, as_list, as_str, as_text, parse_json_value, plain_json
from schemas import Message, Part, Span, Usage
from schemas.agent_run import Role
from schemas.spans import STATUS_ERROR

OPERATION = "gen_ai.operation.name"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"

_ROLE_BY_OPERATION = {
    "invoke_agent": SpanRole.AGENT,
    "chat": SpanRole.LLM,
    "text_completion": SpanRole.LLM,
    "generate_content": SpanRole.LLM,
    "execute_tool": SpanRole.TOOL,
    "retrieval": SpanRole.RETRIEVER,
}

# pydantic-ai writes "thinking" where the semconv says "reasoning" (FIELD-GUIDE section 6).
_REASONING_TYPES = frozenset({"reasoning", "thinking"})


def convert_part(raw: Any) -> Part:
    """One semconv part -> our part representation; unknown part types are kept as they came."""
    if not isinstance(raw, Mapping):
        return make_part({"type": "text", "text": as_text(raw)})
    part_type = raw.get("type")
    if not isinstance(part_type, str):  # may be any JSON value, even an unhashable one
        return make_part(dict(raw))
    if part_type == "text":
        return make_part({"type": "text", "text": as_text(raw.get("content"))})
    if part_type in _REASONING_TYPES:
        return make_part({"type": "reasoning", "text": as_text(raw.get("content"))})
    if part_type in ("tool_call", "server_tool_call"):
        args = parse_json_value(raw.get("arguments", raw.get(part_type)))
        return make_part(
            {
                "type": "tool_call",
                "tool_call_id": as_text(raw.get("id")),
                "tool_name": as_text(raw.get("name")),
                "args": {} if args is None else args,
                **({"server": True} if part_type == "server_tool_call" else {}),
            }
        )
    if part_type in ("tool_call_response", "server_tool_call_response"):
        # The JSON schema says "response"; the registry example and pydantic-ai say "result".
        result = next((raw[k] for k in ("response", "result", part_type) if k in raw), None)
        call_id = as_text(raw.get("id"))
        return make_part(
            {
                "type": "tool_result",
                "tool_call_id": call_id,
                "result": parse_json_value(result),
                **({"server": True} if part_type == "server_tool_call_response" else {}),
            }
        )
    return make_part(dict(raw))


def convert_message(raw: Any, msg_id: str, default_role: Role) -> Message:
    """One ``{role, parts}`` message; a bare string (invalid or truncated JSON) is kept as text."""
    if not isinstance(raw, Mapping):
        return make_message(msg_id, default_role, [convert_part(raw)])
    role = normalize_role(raw.get("role"), default_role)
    raw_parts = raw.get("parts")
    if isinstance(raw_parts, list):
        parts = [convert_part(p) for p in raw_parts]
    elif "content" in raw:
        # Older shapes ({"role", "content": "..."}) still turn up under these attribute names.
        parts = [convert_part(raw.get("content"))]
    else:
        parts = []
    return make_message(msg_id, role, parts)


def convert_messages(value: Any, span_id: str, tag: str, default_role: Role) -> list[Message]:
    """A messages attribute -> Messages with ids ``{span_id}-{tag}-{i}``; never raises."""
    if value is None:
        return []
    parsed = parse_json_value(value)
    if isinstance(parsed, Mapping):
        parsed = [parsed]
    if not isinstance(parsed, list):
        text = as_text(parsed)
        return [make_message(f"{span_id}-{tag}-0", default_role, [convert_part(text)])] if text else []
    return [convert_message(raw, f"{span_id}-{tag}-{i}", default_role) for i, raw in enumerate(parsed)]


def convert_system_instructions(value: Any, span_id: str) -> list[Message]:
    """``gen_ai.system_instructions`` (a list of parts, or plain text) -> one system Message."""
    if value is None:
        return []
    parsed = parse_json_value(value)
    raw_parts = parsed if isinstance(parsed, list) else [parsed]
    parts = [convert_part(p) for p in raw_parts if p is not None and p != ""]
    if not parts:
        return []
    return [make_message(f"{span_id}-sys-0", "system", parts)]


def usage_of(attributes: Mapping[str, Any]) -> Usage:
    # prompt_tokens / completion_tokens are the pre-v1.27 names of the same counts.
    input_tokens = as_int(
        attributes.get("gen_ai.usage.input_tokens", attributes.get("gen_ai.usage.prompt_tokens"))
    )
    output_tokens = as_int(
        attributes.get("gen_ai.usage.output_tokens", attributes.get("gen_ai.usage.completion_tokens"))
    )
    return Usage(input_tokens=max(0, input_tokens), output_tokens=max(0, output_tokens))


def model_of(attributes: Mapping[str, Any]) -> str | None:
    return as_str(attributes.get("gen_ai.request.model")) or as_str(attributes.get("gen_ai.response.model"))


class GenAiSemconvAdapter:
    name = "genai_semconv"

    def claims(self, span: Span) -> bool:
        return isinstance(span.attributes.get(OPERATION), str)

    def classify(self, span: Span) -> SpanRole:
        operation = span.attributes.get(OPERATION)
        if not isinstance(operation, str):
            return SpanRole.OTHER
        return _ROLE_BY_OPERATION.get(operation, SpanRole.OTHER)

    def llm_call(self, span: Span) -> LlmCall:
        attrs = span.attributes
        return LlmCall(
            input_messages=convert_messages(attrs.get(INPUT_MESSAGES), span.span_id, "in", "user"),
            output_messages=convert_messages(attrs.get(OUTPUT_MESSAGES), span.span_id, "out", "assistant"),
            system_messages=convert_system_instructions(attrs.get(SYSTEM_INSTRUCTIONS), span.span_id),
            model=model_of(attrs),
            usage=usage_of(attrs),
            start_ns=span.start_time_unix_nano,
        )

    def tool_execution(self, span: Span) -> ToolExecution:
        attrs = span.attributes
        is_error = span.status_code == STATUS_ERROR
        result = plain_json(parse_json_value(attrs.get("gen_ai.tool.call.result")))
        if result is None and is_error:
            result = span.status_message or as_str(attrs.get("error.type"))
        return ToolExecution(
            call_id=as_str(attrs.get("gen_ai.tool.call.id")),
            name=as_str(attrs.get("gen_ai.tool.name")),
            args=plain_json(parse_json_value(attrs.get("gen_ai.tool.call.arguments"))),
            result=result,
            is_error=is_error,
        )

    def agent_info(self, span: Span) -> AgentInfo:
        attrs = span.attributes
        return AgentInfo(
            name=as_str(attrs.get("gen_ai.agent.name")),
            input_messages=convert_messages(attrs.get(INPUT_MESSAGES), span.span_id, "in", "user"),
            output_messages=convert_messages(attrs.get(OUTPUT_MESSAGES), span.span_id, "out", "assistant"),
            system_messages=convert_system_instructions(attrs.get(SYSTEM_INSTRUCTIONS), span.span_id),
            model=model_of(attrs),
        )

    def retrieved_texts(self, span: Span) -> list[str]:
        texts: list[str] = []
        for doc in as_list(span.attributes.get("gen_ai.retrieval.documents")):
            if isinstance(doc, Mapping):
                text = doc.get("content", doc.get("text"))
                if isinstance(text, str) and text:
                    texts.append(text)
        return texts
