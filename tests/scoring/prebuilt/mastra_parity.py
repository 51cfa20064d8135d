"""The shared Mastra parity cases: the published @mastra/evals 1.10.2 code scorers' scores, and runs
built the way the script that computed them builds its runs.

The fixtures ``tests/fixtures/mastra_parity`` (cases.json, reference.json) were computed with Node by
its mastra_reference.mjs; the case input is one user message, the output one assistant message whose
tool invocations are named by ``tools``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.fixture_files import PARITY_DIR
from tracescore.schemas import AgentRun, Message, RunInput, ToolInvocation
from tracescore.schemas.agent_run import ToolState

CASES: list[dict[str, Any]] = json.loads((PARITY_DIR / "cases.json").read_text(encoding="utf-8"))
REFERENCE: dict[str, dict[str, Any]] = {
    entry["id"]: entry["scores"]
    for entry in json.loads((PARITY_DIR / "reference.json").read_text(encoding="utf-8"))
}


def cases_with(scorer_name: str) -> list[Any]:
    """The cases Mastra scored with ``scorer_name`` (a key of reference.json), as pytest params."""
    return [pytest.param(case, id=case["id"]) for case in CASES if scorer_name in REFERENCE[case["id"]]]


def run_like_reference(
    user: str, answer: str, tools: list[str] | None = None, states: list[ToolState] | None = None
) -> AgentRun:
    """The run mastra_reference.mjs builds for a case."""
    return AgentRun(
        input=RunInput(input_messages=[Message(id="u1", role="user", content=user)]),
        output=[
            Message(
                id="a1",
                role="assistant",
                content=answer,
                tool_invocations=[
                    ToolInvocation(
                        tool_call_id=f"call-{i}",
                        tool_name=name,
                        args={},
                        result={},
                        state=(states or [])[i] if i < len(states or []) else "result",
                    )
                    for i, name in enumerate(tools or [])
                ],
            )
        ],
    )
