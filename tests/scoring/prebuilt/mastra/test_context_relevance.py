"""Context relevance (Mastra's weighted relevance levels and penalties; runs without evaluations or
without context; invalid answers).

Judge answers are scripted on the local OpenAI-compatible server and reach the scorer through
litellm's real HTTP path; every expected score is worked out by hand from Mastra's formula (the
formula cases were also run through @mastra/evals 1.10.2 with a scripted model: same numbers).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.scoring.prebuilt.mastra.judge_answers import deal_run, evaluations
from tests.support.llm_server import LLMServer, json_reply, text_reply
from tracescore.scoring import ScorerError
from tracescore.scoring.judge import Judge
from tracescore.scoring.prebuilt.mastra.context_relevance import (
    CONTEXT_RELEVANCE,
    create_context_relevance_scorer,
)


@pytest.mark.parametrize(
    ("rated", "missing", "options", "expected"),
    [
        # base = mean weight: (1 + 0.7 + 0.3 + 0) / 4
        ([("high", True), ("medium", True), ("low", True), ("none", True)], [], {}, 0.5),
        # 1.0 - 0.1 (one unused high) - 0.15 (one missing item)
        ([("high", False), ("high", True)], ["dates"], {}, 0.75),
        # 0.7 - min(5 * 0.15, 0.5)
        ([("medium", True), ("medium", False)], list("abcde"), {}, 0.2),
        # (1 + 0.3) / 2 * 10; an unused low piece costs nothing
        ([("high", True), ("low", False)], [], {"scale": 10.0}, 6.5),
        # 0 - 0.15 clamps to 0
        ([("none", False)], ["x"], {}, 0.0),
        # camelCase penalties: 1.0 - 0.25 - min(2 * 0.2, 0.3)
        (
            [("high", False), ("high", True)],
            ["x", "y"],
            {
                "penalties": {
                    "unusedHighRelevanceContext": 0.25,
                    "missingContextPerItem": 0.2,
                    "maxMissingContextPenalty": 0.3,
                }
            },
            0.45,
        ),
        # a zero penalty is respected (Mastra's `??`), not replaced by the default
        ([("high", False)], [], {"penalties": {"unused_high_relevance_context": 0}}, 1.0),
    ],
)
async def test_context_relevance_weights_and_penalties(
    llm_server: LLMServer,
    judge: Judge,
    rated: list[tuple[str, bool]],
    missing: list[str],
    options: dict[str, Any],
    expected: float,
) -> None:
    llm_server.script(evaluations(rated, missing), text_reply("Reasoned."))
    scorer = create_context_relevance_scorer(judge, **options)
    pieces = [f"piece {i}" for i in range(len(rated))]
    result = await scorer.run(deal_run("Answer.", "Question?", context=pieces))
    assert result.score == expected
    assert result.reason == "Reasoned."
    analyze, reason = llm_server.chat_requests
    assert CONTEXT_RELEVANCE.instructions in analyze.messages[0]["content"]
    assert "User Query:\n<data-" in analyze.messages[1]["content"]
    assert "[0] piece 0" in analyze.messages[1]["content"]
    reason_prompt = reason.messages[1]["content"]
    level, used = rated[0]
    assert f"[0] Relevance: {level}, Used: {'Yes' if used else 'No'}\n" in reason_prompt
    assert '   Context: "piece 0"\n   Reasoning: why 0' in reason_prompt
    assert ("Missing Context Issues:" in reason_prompt) == bool(missing)
    assert f"Score: {expected:g} out of {options.get('scale', 1):g}\n" in reason_prompt


@pytest.mark.parametrize(("missing", "expected"), [(["x"], 0.0), ([], 1.0)])
async def test_context_relevance_without_evaluations(
    llm_server: LLMServer, judge: Judge, missing: list[str], expected: float
) -> None:
    # Mastra returns these two unscaled.
    llm_server.script(evaluations([], missing), text_reply("r"))
    scorer = create_context_relevance_scorer(judge, scale=10)
    assert (await scorer.run(deal_run(context=["c"]))).score == expected


async def test_context_relevance_without_context_scores_the_scale(
    llm_server: LLMServer, judge: Judge
) -> None:
    llm_server.script(evaluations([]), text_reply("No context."))
    scorer = create_context_relevance_scorer(judge, scale=4, context_extractor=lambda run: [])
    result = await scorer.run(deal_run(context=["ignored: the extractor decides"]))
    assert result.score == 4.0
    analyze, reason = llm_server.chat_requests
    assert "[0] [No context was provided for evaluation]" in analyze.messages[1]["content"]
    assert reason.messages[1]["content"] == (
        "No context was available for evaluation. The agent response was generated without any "
        "supporting context. Score: 4"
    )


@pytest.mark.parametrize(
    "bad_field", [{"relevanceLevel": "very high"}, {"relevanceLevel": "High"}, {"wasUsed": "yes"}]
)
async def test_context_relevance_invalid_answer_fails(
    llm_server: LLMServer, judge: Judge, bad_field: dict[str, Any]
) -> None:
    row = {
        "context_index": 0,
        "contextPiece": "c",
        "relevanceLevel": "high",
        "wasUsed": True,
        "reasoning": "r",
    }
    bad = json_reply({"evaluations": [{**row, **bad_field}], "overallAssessment": "ok"})
    llm_server.script(bad, bad)
    with pytest.raises(ScorerError, match="step 'analyze'.*invalid JSON twice"):
        await create_context_relevance_scorer(judge).run(deal_run(context=["c"]))
    with pytest.raises(ValueError):
        create_context_relevance_scorer(judge, penalties={"unknownPenalty": 1})
