"""Read a run's user message, answer, reasoning, history and system prompt, as Mastra's utils do."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracescore.schemas import AgentRun, Message, RunInput
from tracescore.scoring.framework.message_text import message_text
from tracescore.scoring.utils.messages import (
    as_messages,
    as_run_input,
    first_text_of_role,
    text_of,
    to_message,
)


def get_user_message_from_run_input(run_input: Any = None) -> str | None:
    """The text of the first user message of this turn's input, or None.

    Accepts an AgentRun, a RunInput (or their dicts), ``{"messages": [...]}``, ``{"prompt"}``,
    ``{"text"}``, ``{"content"}``, ``{"input"}``, ``{"user"}`` and a bare string, in Mastra's order.
    """
    if isinstance(run_input, str):
        return run_input
    structured = as_run_input(run_input)
    if structured is not None:
        return first_text_of_role(structured.input_messages, "user")
    if not isinstance(run_input, Mapping):
        return None
    messages = as_messages(run_input.get("messages"))
    found = first_text_of_role(messages, "user") if messages else None
    for key in ("prompt", "text"):
        if found is None and isinstance(run_input.get(key), str):
            found = run_input[key]
    for key in ("content", "input", "user"):
        found = found if found is not None else text_of(run_input.get(key))
    return found


DEFAULT_CONVERSATION_HISTORY_MESSAGES = 10


def get_conversation_history_from_run_input(
    run_input: Any = None, max_messages: int = DEFAULT_CONVERSATION_HISTORY_MESSAGES
) -> str | None:
    """The last ``max_messages`` remembered messages as a ``role: text`` transcript, or None.

    Only agent run inputs carry remembered messages (the conversation before this turn); other
    shapes, and a history without text, give None so callers fall back to single-turn behaviour.
    """
    structured = as_run_input(run_input)
    if structured is None or max_messages <= 0:
        return None
    lines = []
    for message in structured.remembered_messages[-max_messages:]:
        text = (text_of(message) or "").strip()
        if message.role and text:
            lines.append(f"{message.role}: {text}")
    return "\n".join(lines) or None


def get_system_messages_from_run_input(run_input: Any = None) -> list[str]:
    """Texts of the system messages, then system-role input messages, then tagged system messages.

    Empty texts are left out. A system message whose ``content`` is empty joins its text parts
    with spaces, as Mastra does for part arrays.
    """
    structured = as_run_input(run_input)
    extra_messages: list[Message] = []
    if structured is None:
        if not isinstance(run_input, Mapping):
            return []
        extra_messages = as_messages(run_input.get("messages")) or []
        structured = RunInput()
    texts: list[str] = []
    for message in structured.system_messages:
        text = message.content or " ".join(
            str((p.model_extra or {}).get("text") or "") for p in message.parts if p.type == "text"
        )
        if text:
            texts.append(text)
    for message in [*structured.input_messages, *extra_messages]:
        if message.role == "system" and (in_history := text_of(message)):
            texts.append(in_history)
    for messages in structured.tagged_system_messages.values():
        texts.extend(tagged for message in messages if (tagged := text_of(message)))
    return texts


def get_combined_system_prompt(run_input: Any = None) -> str:
    """All system messages (standard and tagged) joined with blank lines."""
    return "\n\n".join(get_system_messages_from_run_input(run_input))


def _output_messages(output: Any) -> list[Message] | None:
    if isinstance(output, AgentRun):
        return output.output
    if isinstance(output, Mapping) and isinstance(output.get("output"), list):
        return as_messages(output["output"])  # an AgentRun dict
    return as_messages(output)


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
            if message.role == "assistant" and (text := text_of(message)):
                return text
        return None
    if isinstance(output, Message):
        return (text_of(output) if output.role == "assistant" else None) or None
    if not isinstance(output, Mapping) or output.get("role") not in (None, "assistant"):
        return None
    if isinstance(output.get("text"), str):
        return str(output["text"])
    if isinstance(output.get("content"), str):
        return str(output["content"])
    return text_of(to_message({**output, "role": "assistant"})) if output.get("content") else None


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
    structured = as_run_input(run_input)
    return [message_text(m) for m in structured.input_messages] if structured else []


def extract_agent_response_messages(output: Any) -> list[str]:
    """The text of every assistant message of the output (empty strings kept, as Mastra)."""
    return [message_text(m) for m in _output_messages(output) or [] if m.role == "assistant"]
