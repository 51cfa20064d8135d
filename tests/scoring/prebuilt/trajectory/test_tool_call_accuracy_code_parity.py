"""Code tool-call accuracy against the published @mastra/evals 1.10.2 ``createToolCallAccuracyScorerCode``,
to the last bit of the score.

The shared parity cases (``tests.scoring.prebuilt.mastra_parity``) give each case's tool calls and
options; the edge-case table below came from @mastra/evals 1.10.2 under Node 20 the same way.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.scoring.prebuilt.mastra_parity import REFERENCE, cases_with, run_like_reference
from tracescore.schemas import RunInput
from tracescore.schemas.agent_run import ToolState
from tracescore.scoring import ScorerError
from tracescore.scoring.prebuilt import create_tool_call_accuracy_scorer_code
from tracescore.scoring.prebuilt.registry import build_scorer


def test_the_fixtures_cover_the_scorer() -> None:
    assert len(cases_with("code-tool-call-accuracy")) >= 10


@pytest.mark.parametrize("case", cases_with("code-tool-call-accuracy"))
async def test_tool_call_accuracy_matches_mastra(case: dict[str, Any]) -> None:
    expected = REFERENCE[case["id"]]["code-tool-call-accuracy"]
    # Options in Mastra's camelCase, straight from the case, through the registry.
    scorer = build_scorer("tool-call-accuracy-code", case["tool_options"])
    result = await scorer.run(run_like_reference(case["input"], case["output"], case.get("tools")))
    assert result.score == expected


# (id, tools, states, options, score or the error Mastra raised), from @mastra/evals 1.10.2 under
# Node 20 with createToolCallAccuracyScorerCode(options); "error" is Mastra's state "output-error".
TOOL_CASES = [
    ("empty-order-no-calls", [], None, {"expectedToolOrder": []}, 0),
    ("empty-order-with-call", ["a"], None, {"expectedToolOrder": []}, 0),
    ("repeated-expected-tool", ["a", "b"], None, {"expectedToolOrder": ["a", "a"]}, 0),
    ("first-call-decides-order", ["b", "a", "b"], None, {"expectedToolOrder": ["a", "b"]}, 0),
    ("strict-order", ["a", "b"], None, {"expectedToolOrder": ["a", "b"], "strictMode": True}, 1),
    ("thrown-call-counts", ["a"], ["error"], {"expectedTool": "a", "strictMode": True}, 1),
    ("call-state-counts", ["a", "b"], ["call", "error"], {"expectedToolOrder": ["a", "b"]}, 1),
    ("empty-order-falls-back", ["a", "b"], None,
     {"expectedTool": "b", "expectedToolOrder": [], "strictMode": True}, 0),
]  # fmt: skip


@pytest.mark.parametrize(
    ("tools", "states", "options", "expected"), [pytest.param(*case[1:], id=case[0]) for case in TOOL_CASES]
)
async def test_tool_call_edge_cases_match_mastra(
    tools: list[str], states: list[ToolState] | None, options: dict[str, Any], expected: int
) -> None:
    scorer = build_scorer("tool-call-accuracy-code", options)
    assert (await scorer.run(run_like_reference("hi", "ok", tools, states))).score == expected


async def test_tool_call_preprocess_result_mirrors_mastra() -> None:
    scorer = create_tool_call_accuracy_scorer_code(expected_tool_order=["a", "b"])
    result = await scorer.run(run_like_reference("hi", "ok", ["b", "a", "b"]))
    # Mastra's preprocessStepResult for the same run, in snake_case.
    assert result.preprocess_step_result["actual_tools"] == ["b", "a", "b"]
    assert result.preprocess_step_result["correct_order_called"] is False
    assert result.preprocess_step_result["correct_tool_called"] is False
    assert result.preprocess_step_result["has_tool_calls"] is True
    assert result.step_results()["preprocess_step_result"]["tool_call_infos"][2] == {
        "tool_name": "b",
        "tool_call_id": "call-2",
        "message_index": 0,
        "invocation_index": 2,
    }


def test_tool_call_accuracy_needs_an_expectation() -> None:
    # Mastra: "Either expectedTool or expectedToolOrder must be provided".
    with pytest.raises(ValueError, match="Either expectedTool or expectedToolOrder must be provided"):
        create_tool_call_accuracy_scorer_code()


@pytest.mark.parametrize("empty", ["input", "output"])
async def test_tool_call_accuracy_refuses_runs_without_messages(empty: str) -> None:
    # Mastra: "Input and output messages cannot be null or empty".
    run = run_like_reference("hi", "ok", ["a"])
    run = run.model_copy(update={"input": RunInput()} if empty == "input" else {"output": []})
    scorer = create_tool_call_accuracy_scorer_code(expected_tool="a")
    with pytest.raises(ScorerError, match="Input and output messages cannot be null or empty"):
        await scorer.run(run)
