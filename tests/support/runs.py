"""AgentRuns for tests: one builder of runs to score, and small readers the transform tests share."""

from __future__ import annotations

from typing import Any, Literal

from tracescore.schemas import AgentRun, Message, RunInput, ToolInvocation
from tracescore.schemas.agent_run import Role


def texts(items: list[Message]) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in items]


def only_run(runs: list[AgentRun]) -> AgentRun:
    assert len(runs) == 1, [r.span_id for r in runs]
    return runs[0]


def invocations(message: Message) -> list[dict[str, Any]]:
    return [i.model_dump() for i in message.tool_invocations]


def parts(message: Message) -> list[dict[str, Any]]:
    return [p.model_dump() for p in message.parts]


def agent_run(
    question: str | None,
    answer: str | None,
    *,
    context: list[str] | None = None,
    ground_truth: Any = None,
    system: str | None = None,
    history: list[tuple[Role, str]] | None = None,
    tools: list[ToolInvocation] | None = None,
    agent_name: str | None = None,
    service_name: str | None = None,
    status: Literal["ok", "error"] = "ok",
    trace_id: str = "a" * 32,
    span_id: str = "b" * 16,
) -> AgentRun:
    """A run to score: the user's ``question``, the agent's ``answer`` (None: no such message), and
    optionally retrieved ``context``, ``ground_truth``, a ``system`` prompt, earlier ``history`` as
    (role, text) pairs and the answer's tool invocations."""
    return AgentRun(
        trace_id=trace_id,
        span_id=span_id,
        agent_name=agent_name,
        service_name=service_name,
        status=status,
        input=RunInput(
            input_messages=[Message(role="user", content=question)] if question is not None else [],
            remembered_messages=[Message(role=role, content=text) for role, text in history or []],
            system_messages=[Message(role="system", content=system)] if system is not None else [],
        ),
        output=[Message(role="assistant", content=answer, tool_invocations=tools or [])]
        if answer is not None
        else [],
        context=context or [],
        ground_truth=ground_truth,
    )
