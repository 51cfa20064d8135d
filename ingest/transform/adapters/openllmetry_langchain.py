"""LangChain messages in OpenLLMetry's ``traceloop.entity.input`` / ``output`` -> our Messages.

LangChain callbacks serialise messages as ``{"lc": 1, "id": [..., "HumanMessage"], "kwargs": {...}}``;
``messages_to_dict()`` gives ``{"type": "human", "data": {...}}``, and chains pass OpenAI-style dicts
and ``(role, text)`` pairs too. Their content is read like any OpenLLMetry content
(``openllmetry_messages``).
"""

from __future__ import annotations

from collections.abc import Mapping

from tracescore.ingest.transform.adapters.base import make_part, normalize_role
from tracescore.ingest.transform.adapters.openllmetry_messages import (
    content_parts,
    finish,
    tool_call_part,
    tool_result_part,
    with_tool_calls,
)
from tracescore.ingest.transform.jsonvalue import as_text
from tracescore.schemas import Message, Part
from tracescore.schemas.agent_run import Role
from tracescore.schemas.spans import AttributeValue

# The message classes of the serialised ``id`` path, and the ``type`` values of dumped messages.
_LC_ROLES: dict[str, Role] = {
    "HumanMessage": "user",
    "HumanMessageChunk": "user",
    "AIMessage": "assistant",
    "AIMessageChunk": "assistant",
    "SystemMessage": "system",
    "SystemMessageChunk": "system",
    "ToolMessage": "tool",
    "ToolMessageChunk": "tool",
    "FunctionMessage": "tool",
}
_LC_TYPES: dict[str, Role] = {
    "human": "user",
    "ai": "assistant",
    "system": "system",
    "tool": "tool",
    "function": "tool",
}


def lc_fields(raw: AttributeValue) -> tuple[Role, Mapping[str, AttributeValue]] | None:
    """(role, fields) of a serialised LangChain message, an OpenAI-style dict or a (role, text) pair."""
    if isinstance(raw, dict):
        ident, kwargs = raw.get("id"), raw.get("kwargs")
        if raw.get("lc") is not None and isinstance(ident, list) and ident and isinstance(kwargs, dict):
            if ident[-1] in ("ChatMessage", "ChatMessageChunk"):
                return normalize_role(kwargs.get("role")), kwargs
            role = _LC_ROLES.get(str(ident[-1])) or _LC_TYPES.get(str(kwargs.get("type")))
            return (role, kwargs) if role else None
        kind, data = raw.get("type"), raw.get("data")
        if isinstance(kind, str) and kind in _LC_TYPES:
            if "content" in raw:
                return _LC_TYPES[kind], raw
            if isinstance(data, dict) and "content" in data:  # langchain messages_to_dict()
                return _LC_TYPES[kind], data
        if isinstance(raw.get("role"), str) and ("content" in raw or "tool_calls" in raw):
            return normalize_role(raw.get("role")), raw
    if isinstance(raw, list) and len(raw) == 2:
        said_by, text = raw
        said = said_by.strip().lower() if isinstance(said_by, str) and isinstance(text, str) else ""
        if said in ("user", "human", "assistant", "ai", "system", "tool"):
            return normalize_role(said), {"content": text}
    return None


def lc_message(raw: AttributeValue, msg_id: str) -> Message | None:
    found = lc_fields(raw)
    if found is None:
        return None
    role, fields = found
    extra = fields.get("additional_kwargs")
    extra = extra if isinstance(extra, dict) else {}
    parts: list[Part] = []
    if reasoning := as_text(extra.get("reasoning_content")):
        parts.append(make_part({"type": "reasoning", "text": reasoning}))
    parts.extend(content_parts(fields.get("content")))
    calls: list[Part] = []
    raw_calls = fields.get("tool_calls") or extra.get("tool_calls")
    for call in raw_calls if isinstance(raw_calls, list) else []:
        if isinstance(call, dict):
            function = nested if isinstance(nested := call.get("function"), dict) else {}
            name = call.get("name", function.get("name"))
            args = call.get("args", function.get("arguments", call.get("arguments")))
            calls.append(tool_call_part(call.get("id"), name, args))
    parts = with_tool_calls(parts, calls)
    call_id = fields.get("tool_call_id")
    if role == "tool" and call_id and fields.get("status") == "error":
        text = "\n".join(as_text((p.model_extra or {}).get("text")) for p in parts if p.type == "text")
        parts = [tool_result_part(call_id, text, is_error=True)]
    return finish(msg_id, role, parts, call_id)


def lc_messages(items: AttributeValue, span_id: str, tag: str) -> list[Message] | None:
    """A list whose items are all messages -> Messages; None when it is not such a list."""
    if not isinstance(items, list) or not items:
        return None
    messages = [lc_message(item, f"{span_id}-{tag}-{i}") for i, item in enumerate(items)]
    if any(m is None for m in messages):
        return None
    return [m for m in messages if m is not None]


def lc_model(items: AttributeValue) -> str | None:
    """The model name LangChain recorded on the last AI message that has one."""
    for item in reversed(items if isinstance(items, list) else []):
        found = lc_fields(item)
        if found is None or found[0] != "assistant":
            continue
        meta = found[1].get("response_metadata")
        if isinstance(meta, dict):
            name = meta.get("model_name") or meta.get("model")
            if isinstance(name, str) and name and name != "unknown":
                return name
    return None
