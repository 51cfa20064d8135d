"""Build messages and runs for tests and evals (Mastra's ``createTestMessage``, ``createAgentTestRun``)."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from tracescore.schemas import AgentRun, Message, Part, RunInput, ToolInvocation
from tracescore.scoring.utils.messages import TOOL_STATES, to_message


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
        state=TOOL_STATES.get(state, state),  # type: ignore[arg-type]  # pydantic rejects the rest
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
