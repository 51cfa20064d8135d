"""Hallucination (hallucinated claims / claims; the context from get_context, the option or the run).

The judge's answers are scripted on the local OpenAI-compatible server and reach the scorer through
litellm's real HTTP path; expected scores are computed by hand from Mastra's formula.
"""

from __future__ import annotations

import pytest

from tests.scoring.prebuilt.mastra.judge_answers import claim_replies, data_block
from tests.support.llm_server import LLMServer, json_reply, text_reply
from tests.support.runs import agent_run
from tracescore.scoring import ScorerError
from tracescore.scoring.judge import Judge
from tracescore.scoring.prebuilt.mastra.hallucination import GetContextParams, create_hallucination_scorer

QUESTION = "What is the capital of France?"
ANSWER = "Paris is the capital of France. It is big. I like bread."


@pytest.mark.parametrize(
    ("verdicts", "scale", "expected"),
    [
        (["yes", "no", "no", "no"], 1, 0.25),  # "yes" marks a hallucinated claim
        (["yes", "yes", "no"], 1, 0.67),
        (["no", "yes", "no"], 10, 3.33),
        (["no", "no"], 1, 0.0),
        (["Yes"], 1, 1.0),
    ],
)
async def test_hallucination_formula(
    llm_server: LLMServer, judge: Judge, verdicts: list[str], scale: float, expected: float
) -> None:
    llm_server.script(*claim_replies(verdicts, key="statement"))
    run = agent_run(QUESTION, ANSWER, context=["Paris is the capital of France."])
    result = await create_hallucination_scorer(judge, scale=scale).run(run)
    assert result.score == expected
    assert result.scorer_id == "hallucination"


async def test_hallucination_context_sources(llm_server: LLMServer, judge: Judge) -> None:
    seen: list[tuple[str, float | None, bool]] = []

    async def get_context(params: GetContextParams) -> list[str]:
        seen.append((params.step, params.score, "analyze_step_result" in params.results))
        return [f"from {params.step}"]

    run = agent_run(QUESTION, ANSWER, context=["run ctx"])
    llm_server.script(*claim_replies(["yes", "no"], key="statement"))
    result = await create_hallucination_scorer(judge, context=["ignored"], get_context=get_context).run(run)
    assert result.score == 0.5
    assert seen == [("analyze", None, False), ("generate_reason", 0.5, True)]
    assert data_block(llm_server.user_prompt(1)) == "from analyze"
    assert data_block(llm_server.user_prompt(2)) == "from generate_reason"
    assert "Number of context statements: 1" in llm_server.user_prompt(1)
    assert "You are a precise and thorough hallucination evaluator" in llm_server.system_prompt(0)

    llm_server.script(*claim_replies(["no"], key="statement"))
    await create_hallucination_scorer(judge, context=["opt A", "opt B"]).run(run)
    assert data_block(llm_server.user_prompt(4)) == "opt A\nopt B"

    llm_server.script(*claim_replies(["no"], key="statement"))
    await create_hallucination_scorer(judge).run(run)
    assert data_block(llm_server.user_prompt(7)) == "run ctx"

    llm_server.script(*claim_replies(["yes"], key="statement"))
    result = await create_hallucination_scorer(judge).run(agent_run(QUESTION, ANSWER))  # no context anywhere
    assert data_block(llm_server.user_prompt(10)) == ""
    assert "Number of context statements: 0" in llm_server.user_prompt(10)
    assert result.score == 1.0


async def test_hallucination_no_claims_and_invalid_verdict(llm_server: LLMServer, judge: Judge) -> None:
    llm_server.script(json_reply({"claims": []}), json_reply({"verdicts": []}), text_reply("None."))
    result = await create_hallucination_scorer(judge).run(agent_run(QUESTION, ""))
    assert result.score == 0
    # "unsure" is a faithfulness label, not a hallucination one: rejected, repaired once, then failed.
    bad = json_reply({"verdicts": [{"statement": "c", "verdict": "unsure", "reason": "r"}]})
    llm_server.script(json_reply({"claims": ["c"]}), bad, bad)
    with pytest.raises(ScorerError) as caught:
        await create_hallucination_scorer(judge).run(agent_run(QUESTION, ANSWER))
    assert caught.value.step == "analyze"
    assert len(llm_server.chat_requests) == 6


async def test_hallucination_get_context_must_return_strings(llm_server: LLMServer, judge: Judge) -> None:
    llm_server.script(json_reply({"claims": ["c"]}))
    scorer = create_hallucination_scorer(
        judge,
        get_context=lambda params: "not a list",  # type: ignore[arg-type, return-value]
    )
    with pytest.raises(ScorerError, match="list of strings"):
        await scorer.run(agent_run(QUESTION, ANSWER))
