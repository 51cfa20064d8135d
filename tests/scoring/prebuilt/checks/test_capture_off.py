"""The checks with content capture off: output checks need the output text, tool checks need no text."""

from __future__ import annotations

import pytest

from tests.scoring.prebuilt.checks.registered_checks import REGISTRY
from tracescore.schemas import AgentRun
from tracescore.scoring.prebuilt.registry import build_scorer
from tracescore.scoring.utils import create_agent_test_run, create_test_message, create_tool_invocation


def capture_off_run() -> AgentRun:
    """A run as ingested with content capture off: tool names and states, no text."""
    invocations = [
        create_tool_invocation("c1", "search", state="result"),
        create_tool_invocation("c2", "save", state="call"),
    ]
    return create_agent_test_run(
        input_messages="", output=[create_test_message("", "assistant", tool_invocations=invocations)]
    )


@pytest.mark.parametrize(
    "name", ["check-includes", "check-excludes", "check-equals", "check-matches", "check-similarity"]
)
def test_output_checks_need_output_text(name: str) -> None:
    first_option = {"check-matches": "pattern"}.get(
        name, "unwanted" if name == "check-excludes" else "expected"
    )
    scorer = build_scorer(name, {first_option: "x"}, registry=REGISTRY)
    assert scorer.needs == frozenset({"output"})
    # Capture off: the executor records skipped_empty rather than, say, excludes passing on "".
    assert scorer.missing_needs(capture_off_run()) == ["output"]


async def test_tool_checks_need_nothing_and_score_with_capture_off() -> None:
    run = capture_off_run()
    # By hand: the run called search (returned) then save (no answer: state call).
    expected: dict[str, tuple[dict[str, object], int]] = {
        "check-called-tool": ({"tool_name": "save"}, 1),
        "check-did-not-call": ({"tool_name": "save"}, 0),
        "check-tool-order": ({"expected_order": ["search", "save"]}, 1),
        "check-max-tool-calls": ({"max": 1}, 0),
        "check-used-no-tools": ({}, 0),
        "check-no-tool-errors": ({}, 0),
    }
    for name, (options, score) in expected.items():
        scorer = build_scorer(name, options, registry=REGISTRY)
        assert scorer.needs == frozenset(), name
        assert scorer.missing_needs(run) == [], name
        assert (await scorer.run(run)).score == score, name
