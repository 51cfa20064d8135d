"""Content similarity against the published @mastra/evals 1.10.2 scorer, to the last bit of the float."""

from __future__ import annotations

from typing import Any

import pytest

from tests.scoring.prebuilt.heuristic.mastra_edge_cases import UNICODE_CASES
from tests.scoring.prebuilt.mastra_parity import CASES, REFERENCE, cases_with, run_like_reference
from tracescore.schemas import Message, ToolInvocation
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.prebuilt import create_content_similarity_scorer

# The reference.json key -> the scorer Mastra computed it with.
VARIANTS = {
    "content-similarity": lambda: create_content_similarity_scorer(),
    "content-similarity-exact": lambda: create_content_similarity_scorer(
        ignore_case=False, ignore_whitespace=False
    ),
}


def _params() -> list[Any]:
    return [
        pytest.param(case, name, id=f"{case['id']}-{name}")
        for case in CASES
        for name in VARIANTS
        if name in REFERENCE[case["id"]]
    ]


def test_the_fixtures_cover_the_scorer() -> None:
    assert len(cases_with("content-similarity")) >= 30
    assert len(cases_with("content-similarity-exact")) >= 30


@pytest.mark.parametrize(("case", "variant"), _params())
async def test_content_similarity_matches_mastra(case: dict[str, Any], variant: str) -> None:
    expected = REFERENCE[case["id"]][variant]
    result = await VARIANTS[variant]().run(run_like_reference(case["input"], case["output"]))
    assert result.score == expected


@pytest.mark.parametrize(
    ("user", "answer", "similarity", "exact"),
    [pytest.param(*case[1:5], id=case[0]) for case in UNICODE_CASES],
)
async def test_unicode_and_whitespace_match_mastra(
    user: str, answer: str, similarity: float, exact: float
) -> None:
    run = run_like_reference(user, answer)
    assert (await create_content_similarity_scorer().run(run)).score == similarity
    assert (await create_content_similarity_scorer(False, False).run(run)).score == exact


@pytest.mark.parametrize("make", [*VARIANTS.values()])
async def test_tool_only_steps_do_not_change_the_score(make: Any) -> None:
    # Our runs keep one assistant message per LLM step; a step that only called a tool has no
    # text. Scored as Mastra scores the merged message (reference case c000).
    case = next(case for case in CASES if case["id"] == "c000")
    run = run_like_reference(case["input"], case["output"])
    tool_step = Message(
        role="assistant", tool_invocations=[ToolInvocation(tool_name="search", state="result")]
    )
    split = run.model_copy(update={"output": [tool_step, *run.output]})
    scorer: Scorer = make()
    assert (await scorer.run(split)).score == (await scorer.run(run)).score
