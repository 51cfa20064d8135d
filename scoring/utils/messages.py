"""Messages in the shapes Mastra's utils accept: ours, their JSON dicts, Mastra's stored messages
(``content: {format: 2, parts, content, toolInvocations, reasoning}``), AI SDK messages and strings."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tracescore.schemas import AgentRun, Message, RunInput
from tracescore.scoring.framework.message_text import message_text

# Mastra's tool states -> ours; a partial call (still streaming its arguments) is not a call yet.
TOOL_STATES = {"call": "call", "result": "result", "error": "error", "output-error": "error"}


def _tool_invocations(raw: Iterable[Any]) -> list[Any]:
    kept = []
    for invocation in raw:
        if isinstance(invocation, Mapping) and "state" in invocation:
            state = TOOL_STATES.get(str(invocation["state"]))
            if state is None:
                continue
            if state == "result" and invocation.get("isError") is True:
                state = "error"  # a result the tool flagged as an error
            invocation = {**invocation, "state": state}
        kept.append(invocation)
    return kept


def merge_tool_invocations(from_parts: list[Any], legacy: list[Any]) -> list[Any]:
    """Mastra's ``mergeToolInvocations``: the parts' calls in order, each legacy-only call placed
    before the next call both lists share (or at the end)."""
    part_ids = {i.get("toolCallId") for i in from_parts if i.get("toolCallId")}
    positions = {i.get("toolCallId"): index for index, i in enumerate(legacy) if isinstance(i, Mapping)}
    merged: list[Any] = []
    legacy_index = 0
    for invocation in from_parts:
        shared = positions.get(invocation.get("toolCallId")) if invocation.get("toolCallId") else None
        if shared is not None and shared >= legacy_index:
            for previous in legacy[legacy_index:shared]:
                if isinstance(previous, Mapping) and previous.get("toolCallId") not in part_ids:
                    merged.append(previous)
            legacy_index = shared + 1
        merged.append(invocation)
    merged.extend(
        i for i in legacy[legacy_index:] if isinstance(i, Mapping) and i.get("toolCallId") not in part_ids
    )
    return merged


def to_message(value: Message | Mapping[str, Any] | str, role: str = "user") -> Message:
    """A ``Message`` from ours, its JSON dict, a Mastra stored message, or a string (of ``role``).

    A Mastra message keeps its text, parts, reasoning and tool invocations under ``content``; an
    AI SDK message may hold its parts as ``content``. Mastra's ``signal`` role is read as the role
    the signal carries.
    """
    if isinstance(value, Message):
        return value
    if isinstance(value, str):
        return Message.model_validate({"role": role, "content": value})
    data = dict(value)
    if data.get("role") == "signal":
        data["role"] = _signal_role(data) or "user"
    content = data.get("content")
    if isinstance(content, Mapping):
        parts = list(content.get("parts") or [])
        invocations = list(content.get("toolInvocations") or content.get("tool_invocations") or [])
        # Mastra's native parts carry tool calls too; parts win over the legacy list (same call id).
        from_parts = [
            p["toolInvocation"]
            for p in parts
            if p.get("type") == "tool-invocation" and isinstance(p.get("toolInvocation"), Mapping)
        ]
        invocations = merge_tool_invocations(from_parts, invocations)
        text = content.get("content")
        data.update(
            content=text if isinstance(text, str) else "",
            parts=[p for p in parts if p.get("type") != "tool-invocation"],
            tool_invocations=invocations,
            reasoning=content.get("reasoning") or data.get("reasoning"),
        )
    elif isinstance(content, list):
        data.update(content="", parts=content)
    for key in ("tool_invocations", "toolInvocations"):
        if key in data:
            data[key] = _tool_invocations(data[key] or [])
    return Message.model_validate(data)


def _signal_role(message: Mapping[str, Any]) -> str | None:
    content = message.get("content")
    metadata = content.get("metadata") if isinstance(content, Mapping) else None
    signal = metadata.get("signal") if isinstance(metadata, Mapping) else None
    if isinstance(signal, Mapping):
        for key in ("tagName", "type"):
            if isinstance(signal.get(key), str):
                return str(signal[key])
    kind = message.get("type")
    return kind if isinstance(kind, str) else None


def as_messages(value: Any) -> list[Message] | None:
    """A message list from a sequence of messages or dicts; None when ``value`` is not a list."""
    if isinstance(value, str) or not isinstance(value, Sequence):
        return None
    return [to_message(item) for item in value if isinstance(item, Message | Mapping)]


def as_run_input(value: Any) -> RunInput | None:
    """The ``RunInput`` that ``value`` is or holds (an AgentRun, its dict, a RunInput dict)."""
    if isinstance(value, AgentRun):
        return value.input
    if isinstance(value, RunInput):
        return value
    if not isinstance(value, Mapping):
        return None
    inner = value.get("input")
    if isinstance(inner, Mapping) and ({"input_messages", "inputMessages"} & inner.keys()):
        return as_run_input(inner)
    keys = ("input_messages", "remembered_messages", "system_messages", "tagged_system_messages")
    present = {k: value.get(k, value.get(camel(k))) for k in keys}
    if all(v is None for v in present.values()):
        return None
    tagged = present["tagged_system_messages"] or {}
    return RunInput(
        input_messages=as_messages(present["input_messages"]) or [],
        remembered_messages=as_messages(present["remembered_messages"]) or [],
        system_messages=as_messages(present["system_messages"]) or [],
        tagged_system_messages={tag: as_messages(ms) or [] for tag, ms in tagged.items()},
    )


def camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(word.title() for word in rest)


def text_of(value: Any) -> str | None:
    """Mastra's ``getTextFromValue``: a non-empty text from a string, parts, or a message."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, Message):
        return message_text(value) or None
    if isinstance(value, Sequence):
        texts = [p["text"] for p in value if isinstance(p, Mapping) and p.get("type") == "text"]
        texts = [t for t in texts if isinstance(t, str)]
        return texts[-1] if texts else None
    if not isinstance(value, Mapping):
        return None
    for key in ("content", "text", "body"):
        found = text_of(value.get(key)) if key == "content" else value.get(key)
        if isinstance(found, str) and found:
            return found
    parts = value.get("parts")
    return text_of(parts) if isinstance(parts, list) else None


def first_text_of_role(messages: Sequence[Message], role: str) -> str | None:
    message = next((m for m in messages if m.role == role), None)
    return text_of(message) if message else None
