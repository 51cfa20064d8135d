"""Small readers of AgentRuns that the transform and adapter tests share."""

from __future__ import annotations

from typing import Any

from schemas import AgentRun, Message


def texts(items: list[Message]) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in items]


def only_run(runs: list[AgentRun]) -> AgentRun:
    assert len(runs) == 1, [r.span_id for r in runs]
    return runs[0]


def invocations(message: Message) -> list[dict[str, Any]]:
    return [i.model_dump() for i in message.tool_invocations]


def parts(message: Message) -> list[dict[str, Any]]:
    return [p.model_dump() for p in message.parts]
