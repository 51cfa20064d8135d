"""Mastra's scorer utils in Python: read a run's user message, answer, reasoning and system prompt.

Same names as ``@mastra/evals/scorers/utils`` in snake_case, same behaviour on our ``AgentRun``::

    from scoring.utils import get_assistant_message_from_run_output, get_user_message_from_run_input

    scorer = create_scorer(id="echo", description="...").preprocess(lambda ctx: {
        "question": get_user_message_from_run_input(ctx.run),
        "answer": get_assistant_message_from_run_output(ctx.run),
    })

Where Mastra accepts several shapes, so do these: an ``AgentRun`` (read through its ``input`` or
``output``), a ``RunInput`` or message list, their JSON dicts (snake_case or camelCase), Mastra's
stored messages (``content: {format: 2, parts, content, toolInvocations, reasoning}``) and plain
strings. ``create_test_message`` and ``create_agent_test_run`` build runs for tests and evals.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from schemas import AgentRun, Message, Part, RunInput, ToolInvocation
from scoring.text import ToolCallInfo, extract_tool_calls, message_text

__all__ = [
    "ToolCallInfo",
    "create_agent_test_run",
    "create_test_message",
    "create_tool_invocation",
    "extract_agent_response_messages",
    "extract_input_messages",
    "extract_tool_calls",
    "get_assistant_message_from_run_output",
    "get_combined_system_prompt",
    "get_conversation_history_from_run_input",
    "get_reasoning_from_run_output",
    "get_system_messages_from_run_input",
    "get_user_message_from_run_input",
    "to_message",
]

# Mastra's tool states -> ours; a partial call (still streaming its arguments) is not a call yet.
_TOOL_STATES = {"call": "call", "result": "result", "error": "error", "output-error": "error"}


def _tool_invocations(raw: Iterable[Any]) -> list[Any]:
    kept = []
    for invocation in raw:
        if isinstance(invocation, Mapping) and "state" in invocation:
            state = _TOOL_STATES.get(str(invocation["state"]))
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


def _messages(value: Any) -> list[Message] | None:
    """A message list from a sequence of messages or dicts; None when ``value`` is not a list."""
    if isinstance(value, str) or not isinstance(value, Sequence):
        return None
    return [to_message(item) for item in value if isinstance(item, Message | Mapping)]


def _run_input(value: Any) -> RunInput | None:
    """The ``RunInput`` that ``value`` is or holds (an AgentRun, its dict, a RunInput dict)."""
    if isinstance(value, AgentRun):
        return value.input
    if isinstance(value, RunInput):
        return value
    if not isinstance(value, Mapping):
        return None
    inner = value.get("input")
    if isinstance(inner, Mapping) and ({"input_messages", "inputMessages"} & inner.keys()):
        return _run_input(inner)
    keys = ("input_messages", "remembered_messages", "system_messages", "tagged_system_messages")
    present = {k: value.get(k, value.get(_camel(k))) for k in keys}
    if all(v is None for v in present.values()):
        return None
    tagged = present["tagged_system_messages"] or {}
    return RunInput(
        input_messages=_messages(present["input_messages"]) or [],
        remembered_messages=_messages(present["remembered_messages"]) or [],
        system_messages=_messages(present["system_messages"]) or [],
        tagged_system_messages={tag: _messages(ms) or [] for tag, ms in tagged.items()},
    )


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(word.title() for word in rest)


def _text(value: Any) -> str | None:
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
        found = _text(value.get(key)) if key == "content" else value.get(key)
        if isinstance(found, str) and found:
            return found
    parts = value.get("parts")
    return _text(parts) if isinstance(parts, list) else None


def _first_text_of_role(messages: Sequence[Message], role: str) -> str | None:
    message = next((m for m in messages if m.role == role), None)
    return _text(message) if message else None


def get_user_message_from_run_input(run_input: Any = None) -> str | None:
    """The text of the first user message of this turn's input, or None.

    Accepts an AgentRun, a RunInput (or their dicts), ``{"messages": [...]}``, ``{"prompt"}``,
    ``{"text"}``, ``{"content"}``, ``{"input"}``, ``{"user"}`` and a bare string, in Mastra's order.
    """
    if isinstance(run_input, str):
        return run_input
    structured = _run_input(run_input)
    if structured is not None:
        return _first_text_of_role(structured.input_messages, "user")
    if not isinstance(run_input, Mapping):
        return None
    messages = _messages(run_input.get("messages"))
    found = _first_text_of_role(messages, "user") if messages else None
    for key in ("prompt", "text"):
        if found is None and isinstance(run_input.get(key), str):
            found = run_input[key]
    for key in ("content", "input", "user"):
        found = found if found is not None else _text(run_input.get(key))
    return found


DEFAULT_CONVERSATION_HISTORY_MESSAGES = 10


def get_conversation_history_from_run_input(
    run_input: Any = None, max_messages: int = DEFAULT_CONVERSATION_HISTORY_MESSAGES
) -> str | None:
    """The last ``max_messages`` remembered messages as a ``role: text`` transcript, or None.

    Only agent run inputs carry remembered messages (the conversation before this turn); other
    shapes, and a history without text, give None so callers fall back to single-turn behaviour.
    """
    structured = _run_input(run_input)
    if structured is None or max_messages <= 0:
        return None
    lines = []
    for message in structured.remembered_messages[-max_messages:]:
        text = (_text(message) or "").strip()
        if message.role and text:
            lines.append(f"{message.role}: {text}")
    return "\n".join(lines) or None


def get_system_messages_from_run_input(run_input: Any = None) -> list[str]:
    """Texts of the system messages, then system-role input messages, then tagged system messages.

    Empty texts are left out. A system message whose ``content`` is empty joins its text parts
    with spaces, as Mastra does for part arrays.
    """
    structured = _run_input(run_input)
    extra_messages: list[Message] = []
    if structured is None:
        if not isinstance(run_input, Mapping):
            return []
        extra_messages = _messages(run_input.get("messages")) or []
        structured = RunInput()
    texts: list[str] = []
    for message in structured.system_messages:
        text = message.content or " ".join(
            str((p.model_extra or {}).get("text") or "") for p in message.parts if p.type == "text"
        )
        if text:
            texts.append(text)
    for message in [*structured.input_messages, *extra_messages]:
        if message.role == "system" and (text := _text(message)):
            texts.append(text)
    for messages in structured.tagged_system_messages.values():
        texts.extend(text for message in messages if (text := _text(message)))
    return texts


def get_combined_system_prompt(run_input: Any = None) -> str:
    """All system messages (standard and tagged) joined with blank lines."""
    return "\n\n".join(get_system_messages_from_run_input(run_input))


def _output_messages(output: Any) -> list[Message] | None:
    if isinstance(output, AgentRun):
        return output.output
    if isinstance(output, Mapping) and isinstance(output.get("output"), list):
        return _messages(output["output"])  # an AgentRun dict
    return _messages(output)


def get_assistant_message_from_run_output(output: Any = None) -> str | None:
    """The text of the last assistant message that has text (tool-call-only steps are passed over).

    Accepts an AgentRun (or its dict), a message list, one assistant message (``{"text"}``,
    ``{"content"}``, a Message) and a bare string.
    """
    if isinstance(output, str):
        return output
    messages = _output_messages(output)
    if messages is not None:
        for message in reversed(messages):
            if message.role == "assistant" and (text := _text(message)):
                return text
        return None
    if isinstance(output, Message):
        return (_text(output) if output.role == "assistant" else None) or None
    if not isinstance(output, Mapping) or output.get("role") not in (None, "assistant"):
        return None
    if isinstance(output.get("text"), str):
        return str(output["text"])
    if isinstance(output.get("content"), str):
        return str(output["content"])
    return _text(to_message({**output, "role": "assistant"})) if output.get("content") else None


def get_reasoning_from_run_output(output: Any = None) -> str | None:
    """The reasoning of the first assistant message, or None.

    ``reasoning`` on the message first; else its reasoning parts (their ``details`` text parts
    concatenated, or their ``text``/``reasoning``), joined with newlines.
    """
    messages = _output_messages(output) or []
    message = next((m for m in messages if m.role == "assistant"), None)
    if message is None:
        return None
    if message.reasoning:
        return message.reasoning
    texts = []
    for part in message.parts:
        if part.type != "reasoning":
            continue
        extra = part.model_extra or {}
        details = extra.get("details")
        if isinstance(details, list):
            text = "".join(
                str(d.get("text", "")) for d in details if isinstance(d, Mapping) and d.get("type") == "text"
            )
        else:
            text = extra.get("reasoning") or extra.get("text") or ""
        if text:
            texts.append(str(text))
    return "\n".join(texts) if texts else None


def extract_input_messages(run_input: Any = None) -> list[str]:
    """The text of every input message of this turn (empty strings kept, as Mastra)."""
    structured = _run_input(run_input)
    return [message_text(m) for m in structured.input_messages] if structured else []


def extract_agent_response_messages(output: Any) -> list[str]:
    """The text of every assistant message of the output (empty strings kept, as Mastra)."""
    return [message_text(m) for m in _output_messages(output) or [] if m.role == "assistant"]


def create_tool_invocation(
    tool_call_id: str,
    tool_name: str,
    args: Mapping[str, Any] | None = None,
    result: Any = None,
    state: str = "result",
) -> ToolInvocation:
    """A tool invocation for tests (Mastra's ``createToolInvocation``; ``output-error`` -> ``error``)."""
    return ToolInvocation(
        tool_call_id=tool_call_id,
        tool_name=tool_name,
        args=dict(args or {}),
        result=result,
        state=_TOOL_STATES.get(state, state),  # type: ignore[arg-type]  # pydantic rejects the rest
    )


def create_test_message(
    content: str,
    role: str,
    id: str = "test-message",
    tool_invocations: Sequence[ToolInvocation | Mapping[str, Any]] = (),
    parts: Sequence[Part | Mapping[str, Any]] | None = None,
) -> Message:
    """A message for tests (Mastra's ``createTestMessage``): one text part unless ``parts`` is given."""
    return to_message(
        {
            "id": id,
            "role": role,
            "content": content,
            "parts": list(parts) if parts is not None else [{"type": "text", "text": content}],
            "tool_invocations": list(tool_invocations),
        }
    )


MessagesLike = str | Message | Mapping[str, Any] | Sequence[str | Message | Mapping[str, Any]]


def _message_list(value: MessagesLike | None, role: str) -> list[Message]:
    if value is None:
        return []
    if isinstance(value, str | Message | Mapping):
        value = [value]
    return [to_message(item, role) for item in value]


def create_agent_test_run(
    *,
    output: MessagesLike,
    input_messages: MessagesLike | None = None,
    remembered_messages: MessagesLike | None = None,
    system_messages: MessagesLike | None = None,
    tagged_system_messages: Mapping[str, MessagesLike] | None = None,
    context: Sequence[str] = (),
    ground_truth: Any = None,
    trace_id: str | None = None,
    span_id: str | None = None,
) -> AgentRun:
    """An AgentRun from simple arguments (Mastra's ``createAgentTestRun``).

    Messages may be ``Message`` objects, dicts, or strings: a string becomes a user message in
    ``input_messages``/``remembered_messages``, an assistant message in ``output`` and a system
    message in the system lists. Without ids, the run gets a random trace and span id (Mastra
    gives each test run a random run id).
    """
    return AgentRun(
        trace_id=trace_id if trace_id is not None else uuid.uuid4().hex,
        span_id=span_id if span_id is not None else secrets.token_hex(8),
        input=RunInput(
            input_messages=_message_list(input_messages, "user"),
            remembered_messages=_message_list(remembered_messages, "user"),
            system_messages=_message_list(system_messages, "system"),
            tagged_system_messages={
                tag: _message_list(ms, "system") for tag, ms in (tagged_system_messages or {}).items()
            },
        ),
        output=_message_list(output, "assistant"),
        context=list(context),
        ground_truth=ground_truth,
    )
