"""Mastra's message shapes -> our Messages and Parts (helpers of
``ingest.transform.adapters.mastra_tracing``).

Mastra records messages in whichever shape they had at that point of the agent loop, so one
attribute may hold any of them (FIELD-GUIDE section 4):

- AI SDK model messages ``{role, content: str | [parts]}`` with parts ``text {text}``,
  ``reasoning {text}``, ``tool-call {toolCallId, toolName, input | args}``,
  ``tool-result {toolCallId, toolName, output: {type, value} | result}``, ``image``, ``file``;
- UI messages ``{role, parts}`` (AI SDK v4 ``tool-invocation``, v5 ``tool-<name>`` / ``dynamic-tool``)
  and Mastra's stored ``{role, content: {format: 2, parts, content}}``;
- the otel-exporter's GenAI conversion ``{role, parts: [{type: "text", content}, ...]}``; a message
  it could not convert stays in the raw shape above, inside the converted list;
- generation results ``{text, reasoningText, reasoning[], toolCalls[], toolResults[], files[], object}``.

Every helper accepts any value and never raises.
"""

from __future__ import annotations

from collections.abc import Mapping

from tracescore.ingest.transform.adapters.base import make_message, make_part, normalize_role, text_part
from tracescore.ingest.transform.adapters.genai_semconv import convert_part as convert_semconv_part
from tracescore.ingest.transform.jsonvalue import as_text, clean_text, parse_json_value, plain_json
from tracescore.schemas import Message, Part
from tracescore.schemas.agent_run import Role
from tracescore.schemas.spans import AttributeValue, JsonValue

# Semconv part types the exporter's conversion writes; read by the semconv adapter's converter.
_SEMCONV_TYPES = frozenset(
    {"tool_call", "tool_call_response", "server_tool_call", "server_tool_call_response", "blob", "uri"}
)
# UI-only bookkeeping parts that carry no content.
_NOISE_TYPES = frozenset({"step-start", "step-finish", "source", "source-url", "source-document"})
# Keys that mark a generation result (as opposed to a message).
_RESULT_KEYS = ("text", "reasoningText", "reasoning", "toolCalls", "toolResults", "files", "object")


def _text_part(value: object) -> Part:
    return text_part("text", clean_text(value))


def _tool_call(call_id: AttributeValue, name: AttributeValue, args: AttributeValue, **extra: bool) -> Part:
    parsed = parse_json_value(args)
    return make_part(
        {
            "type": "tool_call",
            "tool_call_id": as_text(call_id),
            "tool_name": as_text(name),
            "args": {} if parsed is None else plain_json(parsed),
            **extra,
        }
    )


def _tool_output(raw: Mapping[str, AttributeValue]) -> JsonValue:
    """A tool result: AI SDK v5 wraps it as ``output: {type: "json" | "text" | ..., value}``."""
    output = raw["output"] if "output" in raw else raw.get("result")
    output = parse_json_value(output)
    if isinstance(output, dict) and "value" in output and isinstance(output.get("type"), str):
        output = parse_json_value(output["value"])
    return plain_json(output)


def _tool_result(call_id: AttributeValue, result: AttributeValue, **extra: bool) -> Part:
    return make_part({"type": "tool_result", "tool_call_id": as_text(call_id), "result": result, **extra})


def convert_part(raw: AttributeValue) -> list[Part]:
    """One Mastra / AI SDK / GenAI part -> our parts (a UI tool part gives its call and its result)."""
    if not isinstance(raw, dict):
        return [_text_part(raw)] if raw is not None else []
    part_type = raw.get("type")
    if not isinstance(part_type, str):
        return [make_part(dict(raw))]
    extra = {"server": True} if raw.get("providerExecuted") is True else {}
    if part_type == "text":
        return [_text_part(raw["text"] if "text" in raw else raw.get("content"))]
    if part_type in ("reasoning", "thinking"):
        text = next((raw[k] for k in ("text", "content", "reasoning") if k in raw), "")
        return [text_part("reasoning", clean_text(text))]
    if part_type in ("redacted-reasoning", *_NOISE_TYPES):
        return []
    if part_type in _SEMCONV_TYPES:
        return [convert_semconv_part(raw)]
    if part_type == "tool-call":
        args = raw["input"] if "input" in raw else raw.get("args")
        return [_tool_call(raw.get("toolCallId"), raw.get("toolName"), args, **extra)]
    if part_type == "tool-result":
        return [_tool_result(raw.get("toolCallId"), _tool_output(raw), **extra)]
    if part_type == "tool-invocation":  # AI SDK v4 UI part
        invocation = raw.get("toolInvocation")
        if isinstance(invocation, dict):
            return _ui_tool(invocation, invocation.get("toolName"), {})
        return [make_part(dict(raw))]
    if part_type == "dynamic-tool" or part_type.startswith("tool-"):  # AI SDK v5 UI parts
        name = raw.get("toolName") if part_type == "dynamic-tool" else part_type.removeprefix("tool-")
        return _ui_tool(raw, name, extra)
    return [make_part(dict(raw))]


def _ui_tool(raw: Mapping[str, AttributeValue], name: AttributeValue, extra: dict[str, bool]) -> list[Part]:
    """A UI tool part holds the call and, once run, its result (``result`` v4, ``output`` v5)."""
    call_id = raw.get("toolCallId")
    args = raw["input"] if "input" in raw else raw.get("args")
    parts = [_tool_call(call_id, name, args, **extra)]
    if "output" in raw or "result" in raw:
        parts.append(_tool_result(call_id, _tool_output(raw), **extra))
    elif isinstance(raw.get("errorText"), str):
        parts.append(_tool_result(call_id, raw["errorText"], **extra))
    return parts


def _content_parts(content: AttributeValue) -> list[Part]:
    content = parse_json_value(content)
    if isinstance(content, list):
        return [p for raw in content for p in convert_part(raw)]
    if isinstance(content, dict):
        # Mastra's stored message: {format: 2, parts: [...], content: "..."}.
        if isinstance(content.get("parts"), list):
            return _content_parts(content["parts"])
        if "content" in content:
            return _content_parts(content["content"])
        return convert_part(content)
    if content is None:
        return []
    return [_text_part(content)]


def convert_message(raw: AttributeValue, msg_id: str, default_role: Role) -> Message:
    if not isinstance(raw, dict):
        return make_message(msg_id, default_role, [_text_part(raw)])
    role = normalize_role(raw.get("role"), default_role)
    if isinstance(raw.get("parts"), list):
        parts = _content_parts(raw["parts"])
    elif "content" in raw:
        parts = _content_parts(raw["content"])
    elif any(k in raw for k in _RESULT_KEYS):
        parts = result_parts(raw)
    else:
        parts = [make_part(dict(raw))] if raw else []
    return make_message(msg_id, role, parts)


def convert_messages(value: AttributeValue, span_id: str, tag: str, default_role: Role) -> list[Message]:
    """A message-holding value of any shape -> Messages with ids ``{span_id}-{tag}-{i}``.

    Accepts a list of messages (of any shape above, or plain strings), ``{messages: [...]}``, one
    message, a generation result, or plain text.
    """
    parsed = parse_json_value(value)
    if isinstance(parsed, dict):
        if isinstance(parsed.get("messages"), list):
            parsed = parsed["messages"]
        elif "role" not in parsed and any(k in parsed for k in _RESULT_KEYS):
            parts = result_parts(parsed)
            return [make_message(f"{span_id}-{tag}-0", "assistant", parts)] if parts else []
        else:
            return [convert_message(parsed, f"{span_id}-{tag}-0", default_role)]
    if isinstance(parsed, list):
        return [convert_message(raw, f"{span_id}-{tag}-{i}", default_role) for i, raw in enumerate(parsed)]
    text = clean_text(parsed)
    return [make_message(f"{span_id}-{tag}-0", default_role, [_text_part(text)])] if text else []


def _reasoning_text(result: Mapping[str, AttributeValue]) -> str:
    text = result.get("reasoningText")
    if isinstance(text, str) and text:
        return clean_text(text)
    reasoning = parse_json_value(result.get("reasoning"))
    if isinstance(reasoning, str):  # AI SDK v4 results: reasoning is the text itself
        return clean_text(reasoning)
    pieces: list[str] = []
    for item in reasoning if isinstance(reasoning, list) else []:
        # 1.x stream chunks {type, payload: {text}}; AI SDK v5 parts {type, text}.
        body = item.get("payload") if isinstance(item, dict) and "payload" in item else item
        if isinstance(body, dict):
            pieces.append(clean_text(body.get("text")))
        elif isinstance(body, str):
            pieces.append(clean_text(body))
    return "".join(pieces)


def _call_body(item: AttributeValue) -> Mapping[str, AttributeValue]:
    """Tool calls/results come bare or as stream chunks ``{type, payload: {...}}``."""
    if isinstance(item, dict) and isinstance(payload := item.get("payload"), dict):
        return payload
    return item if isinstance(item, dict) else {}


def result_parts(result: Mapping[str, AttributeValue]) -> list[Part]:
    """A generation result -> reasoning, text, tool calls, their results (when run), files."""
    parts: list[Part] = []
    if reasoning := _reasoning_text(result):
        parts.append(make_part({"type": "reasoning", "text": reasoning}))
    text = clean_text(result.get("text")) if "text" in result else ""
    if not text and result.get("object") is not None:
        text = as_text(plain_json(parse_json_value(result["object"])))  # structured output
    if text:
        parts.append(_text_part(text))
    calls = parse_json_value(result.get("toolCalls"))
    for body in map(_call_body, calls if isinstance(calls, list) else []):
        args = body["input"] if "input" in body else body.get("args")
        extra = {"server": True} if body.get("providerExecuted") is True else {}
        parts.append(_tool_call(body.get("toolCallId"), body.get("toolName"), args, **extra))
    results = parse_json_value(result.get("toolResults"))
    for body in map(_call_body, results if isinstance(results, list) else []):
        if body.get("toolCallId"):
            parts.append(_tool_result(body.get("toolCallId"), _tool_output(body)))
    files = parse_json_value(result.get("files"))
    for item in files if isinstance(files, list) else []:
        if isinstance(item, dict) and item:
            parts.append(make_part({"type": "file", **item}))
    return parts


def split_new_turn(messages: list[Message]) -> tuple[list[Message], list[Message]]:
    """(earlier turns, new turn) of a conversation whose parts nothing marks (Mastra's agent input).

    The new turn is the trailing block of user messages; when the conversation ends on tool results
    (a continuation after client-side tools), those trailing results are the new input. Assistant
    text after the user's block (a prefill, or an answer to continue) stays with the turn: the
    transform keeps it as part of the prompt, apart from the input.
    """
    turns = [m for m in messages if m.role != "system"]
    end = len(turns)
    while end > 0 and turns[end - 1].role == "assistant" and not _has_tool_call(turns[end - 1]):
        end -= 1
    cut = end
    while cut > 0 and turns[cut - 1].role == "user":
        cut -= 1
    if cut < end:
        return turns[:cut], turns[cut:]
    cut = len(turns)
    while cut > 0 and turns[cut - 1].role == "tool":
        cut -= 1
    return turns[:cut], turns[cut:]


def _has_tool_call(message: Message) -> bool:
    return any(p.type == "tool_call" for p in message.parts)


def system_messages(value: AttributeValue, span_id: str) -> list[Message]:
    """Agent instructions: a plain string (1.x), a list of strings, or system messages."""
    parsed = parse_json_value(value)
    items = parsed if isinstance(parsed, list) else [parsed]
    parts: list[Part] = []
    for item in items:
        if isinstance(item, dict) and "type" not in item and "content" in item:
            parts.extend(_content_parts(item["content"]))
        elif isinstance(item, dict) and item.get("type") == "text":
            parts.append(_text_part(item["text"] if "text" in item else item.get("content")))
        elif item is not None:
            parts.append(_text_part(item))
    parts = [p for p in parts if (p.model_extra or {}).get("text") or p.type != "text"]
    return [make_message(f"{span_id}-sys-0", "system", parts)] if parts else []
