"""Textual difference against the published @mastra/evals 1.10.2 scorer, to the last bit of the float."""

from __future__ import annotations

from typing import Any

import pytest

from tests.scoring.prebuilt.heuristic.mastra_edge_cases import UNICODE_CASES
from tests.scoring.prebuilt.mastra_parity import CASES, REFERENCE, cases_with, run_like_reference
from tracescore.schemas import Message, ToolInvocation
from tracescore.scoring.prebuilt import create_textual_difference_scorer


def test_the_fixtures_cover_the_scorer() -> None:
    assert len(cases_with("textual-difference")) >= 30


@pytest.mark.parametrize("case", cases_with("textual-difference"))
async def test_textual_difference_matches_mastra(case: dict[str, Any]) -> None:
    expected = REFERENCE[case["id"]]["textual-difference"]
    result = await create_textual_difference_scorer().run(run_like_reference(case["input"], case["output"]))
    assert result.score == expected


@pytest.mark.parametrize(
    ("user", "answer", "difference", "details"),
    [pytest.param(*case[1:3], *case[5:7], id=case[0]) for case in UNICODE_CASES],
)
async def test_unicode_and_whitespace_match_mastra(
    user: str, answer: str, difference: float, details: tuple[float, int, float]
) -> None:
    result = await create_textual_difference_scorer().run(run_like_reference(user, answer))
    confidence, changes, length_diff = details
    assert result.score == difference
    assert result.preprocess_step_result == {
        "ratio": difference,
        "confidence": confidence,
        "changes": changes,
        "length_diff": length_diff,
    }


async def test_tool_only_steps_do_not_change_the_score() -> None:
    # Our runs keep one assistant message per LLM step; a step that only called a tool has no
    # text. Scored as Mastra scores the merged message (reference case c000).
    case = next(case for case in CASES if case["id"] == "c000")
    run = run_like_reference(case["input"], case["output"])
    tool_step = Message(
        role="assistant", tool_invocations=[ToolInvocation(tool_name="search", state="result")]
    )
    split = run.model_copy(update={"output": [tool_step, *run.output]})
    scorer = create_textual_difference_scorer()
    assert (await scorer.run(split)).score == (await scorer.run(run)).score
