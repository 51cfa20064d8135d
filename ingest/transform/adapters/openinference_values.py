"""Values on OpenInference spans -> our Messages and parts: one message or content block at a time.

OpenInference spans carry what the instrumented call saw in ``input.value`` / ``output.value``:
plain text, or the provider's own request/response JSON (OpenAI chat and Responses, Anthropic
Messages, Gemini, Bedrock Converse), LangChain-serialised messages, AI SDK messages, or a
framework's kwargs. It is often the only record of an answer or of a user turn (FIELD-GUIDE
section 3), so these readers accept every shape leniently and return nothing for shapes they do
not know rather than guessing. Content redacted by OpenInference's TraceConfig reads as missing.
Where a whole payload keeps its messages is read by ``openinference_payloads``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from typing import TypeVar

from tracescore.ingest.transform.adapters.base import make_message, make_part, normalize_role
from tracescore.ingest.transform.adapters.base import text_part as base_text_part
from tracescore.ingest.transform.jsonvalue import as_text, clean_text, parse_json_value, plain_json
from tracescore.schemas import Message, Part
from tracescore.schemas.agent_run import Role
from tracescore.schemas.redaction_placeholders import is_placeholder
from tracescore.schemas.spans import AttributeValue, JsonValue

_Value = TypeVar("_Value")

# LangChain message classes (serialised ``id`` path) and dumped ``type`` values -> roles.
_LC_ROLES = {
    "human": "user",
    "humanmessage": "user",
    "ai": "assistant",
    "aimessage": "assistant",
    "aimessagechunk": "assistant",
    "system": "system",
    "systemmessage": "system",
    "tool": "tool",
    "toolmessage": "tool",
    "function": "tool",
    "functionmessage": "tool",
}
_TEXT_BLOCKS = frozenset({"text", "input_text", "output_text"})
_REASONING_BLOCKS = frozenset({"reasoning", "thinking"})
_CALL_BLOCKS = frozenset(
    {"tool_use", "server_tool_use", "tool-call", "tool_call", "function_call", "custom_tool_call"}
)
_RESULT_BLOCKS = frozenset({"tool_result", "tool-result", "function_call_output", "custom_tool_call_output"})
_IMAGE_BLOCKS = frozenset({"image", "image_url", "input_image"})
# ``<FunctionTool object>``, ``<workflows.context.Context object at 0x7f...>``.
_BARE_OBJECT = re.compile(r"<[\w.]+ object(?: at 0x[0-9a-fA-F]+)?>")
# ``ChatMessage(role=...)``, ``AgentWorkflowStartEvent()``: a class name, then keyword fields or none.
_DATACLASS_REPR = re.compile(r"[A-Z]\w*\((?:\)|[a-z_]\w*=)")


def lenient(value: _Value) -> _Value | JsonValue:
    """JSON decoded leniently, then the Python reprs LangChain writes for dicts (``{'a': 1}``)."""
    parsed = parse_json_value(value)
    if isinstance(parsed, str):
        text = parsed.strip()
        if text[:1] in ("{", "[") and len(text) < 100_000:
            try:
                return plain_json(ast.literal_eval(text))
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                return parsed
    return parsed


def parse_args(value: object) -> JsonValue:
    """Tool-call arguments: JSON strings (possibly truncated, kept as text), objects, or nothing."""
    if value is None or value == "" or is_placeholder(value):
        return {}
    parsed = lenient(value)
    return {} if parsed is None else plain_json(parsed)


def unwrap_tool_output(value: AttributeValue) -> AttributeValue:
    """A tool result without its envelope: AI SDK 5 ``{type, value}``, LangChain ToolMessage dumps."""
    if isinstance(value, dict):
        kind = value.get("type")
        if "value" in value and set(value) <= {"type", "value"} and isinstance(kind, str):
            return plain_json(lenient(value["value"]) if kind in ("json", "error-json") else value["value"])
        if kind == "tool" and "content" in value:
            return plain_json(lenient(value["content"]))
    return value


def text_part(text: str) -> Part:
    return base_text_part("text", text)


def call_part(call_id: object, name: object, args: object, *, server: bool = False) -> Part:
    return make_part(
        {
            "type": "tool_call",
            "tool_call_id": as_text(call_id),
            "tool_name": as_text(name),
            "args": parse_args(args),
            **({"server": True} if server else {}),
        }
    )


def result_part(call_id: object, result: object) -> Part:
    value = None if is_placeholder(result) else unwrap_tool_output(plain_json(lenient(result)))
    return make_part({"type": "tool_result", "tool_call_id": as_text(call_id), "result": value})


def media_part(modality: str, url: object, **extra: object) -> Part | None:
    uri = clean_text(url)
    fields = {k: v for k, v in extra.items() if v not in (None, "")}
    if not uri and not fields:
        return None
    return make_part({"type": "uri", "modality": modality, "uri": uri, **fields})


def first_of(mapping: Mapping[str, AttributeValue], *keys: str) -> AttributeValue:
    return next((mapping[k] for k in keys if mapping.get(k) is not None), None)


def _image_url(block: Mapping[str, AttributeValue]) -> AttributeValue:
    image = first_of(block, "image_url", "image", "url")
    if isinstance(image, dict):
        return image.get("url")
    source = block.get("source")
    if image is None and isinstance(source, dict):  # Anthropic image blocks
        data = source.get("data")
        if source.get("type") == "base64" and isinstance(data, str) and data:
            return f"data:{as_text(source.get('media_type')) or 'image'};base64,{data}"
        return source.get("url")
    return image


def _untyped_block(block: Mapping[str, AttributeValue]) -> list[Part]:
    """Bedrock Converse and Gemini blocks name their kind by key instead of ``type``."""
    if isinstance(use := first_of(block, "toolUse", "functionCall", "function_call"), dict):
        return [call_part(first_of(use, "toolUseId", "id"), use.get("name"), first_of(use, "input", "args"))]
    if isinstance(res := first_of(block, "toolResult", "functionResponse", "function_response"), dict):
        content = first_of(res, "content", "response")
        if isinstance(content, list):  # Bedrock: [{"text": ...} | {"json": ...}]
            content = [c.get("text", c.get("json")) if isinstance(c, dict) else c for c in content]
            content = content[0] if len(content) == 1 else content
        return [result_part(first_of(res, "toolUseId", "id", "name"), content)]
    if isinstance(rc := block.get("reasoningContent"), dict):
        reasoning_text = rc.get("reasoningText")
        text = clean_text(reasoning_text.get("text") if isinstance(reasoning_text, dict) else None)
        return [make_part({"type": "reasoning", "text": text})] if text else []
    if "text" in block:
        text = clean_text(block["text"])
        kind = "reasoning" if block.get("thought") is True else "text"
        return [make_part({"type": kind, "text": text})] if text else []
    return [make_part(dict(block))] if block else []


def block_parts(block: AttributeValue) -> list[Part]:
    """One provider content block (any of the shapes above) -> zero or more of our parts."""
    if isinstance(block, str):
        return [text_part(t)] if (t := clean_text(block)) else []
    if not isinstance(block, dict):
        return []
    kind = first_of(block, "type", "block_type")  # LlamaIndex content blocks say "block_type"
    kind = kind.lower() if isinstance(kind, str) else ""
    if not kind:
        return _untyped_block(block)
    if kind in _TEXT_BLOCKS or kind == "refusal":
        text = clean_text(first_of(block, "text", "refusal"))
        return [text_part(text)] if text else []
    if kind in _REASONING_BLOCKS:
        text = clean_text(first_of(block, "thinking", "text", "reasoning"))
        summary = block.get("summary")
        if not text and isinstance(summary, list):  # OpenAI Responses reasoning items
            text = "\n".join(clean_text(s.get("text") if isinstance(s, dict) else s) for s in summary)
        return [make_part({"type": "reasoning", "text": text})] if text.strip() else []
    if kind == "redacted_thinking":
        return []  # opaque provider data, no readable reasoning
    if kind in _CALL_BLOCKS:
        args = first_of(block, "input", "args", "arguments")
        call_id = first_of(block, "id", "toolCallId", "call_id")
        if kind == "function_call" and block.get("call_id"):
            call_id = block["call_id"]  # Responses items: "id" is the item, "call_id" the call
        name = first_of(block, "name", "toolName")
        return [call_part(call_id, name, args, server=kind == "server_tool_use")]
    if kind in _RESULT_BLOCKS:
        result = first_of(block, "content", "result", "output")
        return [result_part(first_of(block, "tool_use_id", "toolCallId", "call_id", "id"), result)]
    if kind in _IMAGE_BLOCKS:
        part = media_part("image", _image_url(block))
        return [part] if part else []
    return [make_part(dict(block))]


def _tool_call_parts(calls: AttributeValue) -> list[Part]:
    """OpenAI ``tool_calls`` ({id, function: {name, arguments}}) or LangChain ({id, name, args})."""
    parts: list[Part] = []
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, dict):
            continue
        function = nested if isinstance(nested := call.get("function"), dict) else call
        parts.append(call_part(call.get("id"), function.get("name"), first_of(function, "arguments", "args")))
    return parts


def _lc_role(raw: Mapping[str, AttributeValue]) -> tuple[AttributeValue, Mapping[str, AttributeValue]]:
    """Role hint and message body, looking through LangChain's serialised and dumped forms."""
    ident, kwargs = raw.get("id"), raw.get("kwargs")
    if isinstance(ident, list) and ident and isinstance(kwargs, dict):
        cls = str(ident[-1]).lower()
        role = next((r for name, r in _LC_ROLES.items() if cls.startswith(name) and "message" in name), None)
        return (kwargs.get("role") if cls.startswith("chatmessage") else role), kwargs
    kind = raw.get("type")
    if isinstance(kind, str) and kind.lower() in _LC_ROLES and "role" not in raw:
        return _LC_ROLES[kind.lower()], raw
    return raw.get("role"), raw


def is_object_repr(text: str) -> bool:
    """A Python object's repr, as instrumentors record arguments they cannot serialise
    (``ChatMessage(role=<MessageRole.USER: 'user'>, ...)``, ``<FunctionTool object>``): not a message."""
    text = text.strip()
    if _BARE_OBJECT.fullmatch(text):
        return True
    return bool(_DATACLASS_REPR.match(text)) and text.endswith((")", "..."))


def chat_message(raw: AttributeValue, msg_id: str, default_role: Role) -> Message | None:
    """One message of any provider or framework shape; None when it is not a message."""
    if isinstance(raw, str):
        text = clean_text(raw)
        if not text or is_object_repr(text):
            return None
        return make_message(msg_id, default_role, [text_part(text)])
    if isinstance(raw, Sequence) and len(raw) == 2 and isinstance(raw[0], str):  # ("user", "hi")
        return chat_message({"role": raw[0], "content": raw[1]}, msg_id, default_role)
    if not isinstance(raw, dict):
        return None
    kind = raw.get("type")
    if kind in ("function_call", "custom_tool_call", "reasoning") and "role" not in raw:
        return make_message(msg_id, "assistant", block_parts(raw))  # Responses input items
    if kind in ("function_call_output", "custom_tool_call_output") and "role" not in raw:
        return make_message(msg_id, "tool", block_parts(raw))
    role_hint, body = _lc_role(raw)
    role = normalize_role(role_hint, default_role)
    content = first_of(body, "content", "parts", "blocks")
    parts: list[Part] = []
    if isinstance(reasoning := body.get("reasoning_content"), str) and reasoning.strip():
        parts.append(make_part({"type": "reasoning", "text": reasoning}))
    if isinstance(content, list):
        parts.extend(p for block in content for p in block_parts(block))
    elif content is not None and (text := clean_text(content)):
        parts.append(text_part(text))
    known = {_call_id(p) for p in parts if p.type == "tool_call"} - {""}
    parts.extend(p for p in _tool_call_parts(body.get("tool_calls")) if _call_id(p) not in known)
    if isinstance(fc := body.get("function_call"), dict):
        parts.append(call_part(None, fc.get("name"), fc.get("arguments")))
    call_id = body.get("tool_call_id")
    if role == "tool" and call_id and not any(p.type == "tool_result" for p in parts):
        parts = as_tool_result(call_id, parts)
    return make_message(msg_id, role, parts)


def _call_id(part: Part) -> str:
    return as_text((part.model_extra or {}).get("tool_call_id"))


def as_tool_result(call_id: object, parts: list[Part]) -> list[Part]:
    """A tool message's text parts as one tool_result answering ``call_id`` (other parts kept)."""
    texts = [as_text((p.model_extra or {}).get("text")) for p in parts if p.type == "text"]
    others = [p for p in parts if p.type != "text"]
    return [result_part(call_id, "\n".join(texts) if texts else None), *others]
