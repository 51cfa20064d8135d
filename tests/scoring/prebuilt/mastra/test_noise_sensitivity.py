"""Noise sensitivity in CI/offline evals (the run answers a noisy query; the options hold the clean
answer): Mastra's formula, the prompts, required options, invalid answers.

Scripted judge answers on the local OpenAI-compatible server -> hand-computed scores, edge cases,
and invalid judge answers that end in a ScorerError, never a score.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.scoring.prebuilt.mastra.judge_answers import (
    BASELINE,
    MODEL,
    NOISY_QUERY,
    haiku_run,
    noise_analysis,
    noisy_run,
)
from tests.support.llm_server import LLMServer, json_reply, text_reply
from tracescore.scoring import ScorerError
from tracescore.scoring.judge import Judge
from tracescore.scoring.prebuilt.mastra.noise_sensitivity import create_noise_sensitivity_scorer

# (robustness, impact levels, major issues, scoring options, expected), by hand with Mastra's defaults
# (weights none 1, minimal .85, moderate .6, significant .3, severe .1; .1 per issue up to .3; threshold .2).
NOISE_CASES = [
    # mean .91, within .2 of .85 -> keep .85
    (0.85, ["minimal", "none", "minimal", "minimal", "none"], None, None, 0.85),
    # mean .2 differs by .7 -> .2; one issue -> .1
    (0.9, ["severe", "significant"], ["went off topic"], None, 0.1),
    # mean .6 within .2 of .7: the judge's higher score stands
    (0.7, ["moderate", "moderate"], [], None, 0.7),
    # no dimensions: .5 - min(5 x .1, .3)
    (0.5, [], ["a", "b", "c", "d", "e"], None, 0.2),
    # the penalty never takes the score below 0
    (0.1, [], ["a", "b"], None, 0.0),
    # custom options in Mastra's camelCase: moderate weighs .2, threshold .1, .05 per issue
    (
        0.5,
        ["moderate"],
        ["x"],
        {
            "impactWeights": {"moderate": 0.2},
            "discrepancyThreshold": 0.1,
            "penalties": {"majorIssuePerItem": 0.05},
        },
        0.15,
    ),
    # the same in snake_case; .3 of the default max penalty lowered to .1
    (1.0, ["none"], ["x", "y"], {"penalties": {"max_major_issue_penalty": 0.1}}, 0.9),
]


@pytest.mark.parametrize(("robustness", "levels", "issues", "scoring", "expected"), NOISE_CASES)
async def test_noise_sensitivity_formula(
    llm_server: LLMServer,
    judge: Judge,
    robustness: float,
    levels: list[str],
    issues: list[str] | None,
    scoring: dict[str, Any] | None,
    expected: float,
) -> None:
    llm_server.script(json_reply(noise_analysis(robustness, levels, issues)), text_reply("Robust enough."))
    scorer = create_noise_sensitivity_scorer(
        judge, baseline_response=BASELINE, noisy_query=NOISY_QUERY, scoring=scoring
    )
    result = await scorer.run(noisy_run())
    assert result.score == pytest.approx(expected, abs=1e-9)
    assert result.reason == "Robust enough."
    analyze, reason = llm_server.chat_requests
    prompt = analyze.messages[1]["content"]
    for text in (BASELINE, NOISY_QUERY, "What are the benefits of exercise?", "The pyramids are old."):
        assert text in prompt
    assert 'label="baseline agent response">\n' + BASELINE in prompt
    assert "Type of noise added" not in prompt
    assert "noise sensitivity evaluator" in analyze.messages[0]["content"]
    assert f"Score: {expected:g} out of 1.0" in reason.messages[1]["content"]
    assert scorer.id == "noise-sensitivity"


async def test_noise_sensitivity_noise_type_goes_in_the_prompt(llm_server: LLMServer, judge: Judge) -> None:
    llm_server.script(json_reply(noise_analysis(1, ["none"])), text_reply("ok"))
    scorer = create_noise_sensitivity_scorer(
        judge,
        baseline_response=BASELINE,
        noisy_query=NOISY_QUERY,
        noise_type="misinformation",
    )
    assert (await scorer.run(noisy_run())).score == 1.0
    assert "Type of noise added: misinformation" in llm_server.chat_requests[0].messages[1]["content"]


def test_noise_sensitivity_needs_baseline_and_noisy_query() -> None:
    judge = Judge(MODEL)
    with pytest.raises(ValueError, match="baselineResponse and noisyQuery are required"):
        create_noise_sensitivity_scorer(judge, baseline_response="", noisy_query=NOISY_QUERY)
    with pytest.raises(ValueError, match="baselineResponse and noisyQuery are required"):
        create_noise_sensitivity_scorer(judge, baseline_response=BASELINE, noisy_query="")
    with pytest.raises(ValueError, match="impactWeight"):
        create_noise_sensitivity_scorer(
            judge, baseline_response=BASELINE, noisy_query=NOISY_QUERY, scoring={"impactWeight": {}}
        )


async def test_noise_sensitivity_without_an_answer_fails(llm_server: LLMServer, judge: Judge) -> None:
    scorer = create_noise_sensitivity_scorer(judge, baseline_response=BASELINE, noisy_query=NOISY_QUERY)
    with pytest.raises(ScorerError, match="step 'analyze'.*original query and noisy response are required"):
        await scorer.run(haiku_run(answer=""))
    assert llm_server.chat_requests == []


@pytest.mark.parametrize(
    "bad",
    [
        noise_analysis(0.9, ["mild"]),  # not an impact level
        noise_analysis(1.2, ["none"]),  # robustness outside [0, 1]
        noise_analysis("0.9", ["none"]),  # a string, not a number
    ],
)
async def test_noise_sensitivity_invalid_answer_is_repaired_then_fails(
    llm_server: LLMServer, judge: Judge, bad: dict[str, Any]
) -> None:
    llm_server.script(json_reply(bad), json_reply(bad))
    scorer = create_noise_sensitivity_scorer(judge, baseline_response=BASELINE, noisy_query=NOISY_QUERY)
    with pytest.raises(ScorerError, match="step 'analyze'.*invalid JSON twice"):
        await scorer.run(noisy_run())
    assert len(llm_server.chat_requests) == 2
    assert "impactLevel" in llm_server.chat_requests[1].messages[-1]["content"]  # the repair shows the schema
