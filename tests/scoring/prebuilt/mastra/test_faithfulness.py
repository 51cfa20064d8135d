"""Faithfulness (supported claims / claims; the context from the option, the run or its tool results).

The judge's answers are scripted on the local OpenAI-compatible server and reach the scorer through
litellm's real HTTP path; expected scores are computed by hand from Mastra's formula.
"""

from __future__ import annotations

import pytest

from tests.scoring.prebuilt.mastra.judge_answers import claim_replies, data_block
from tests.support.llm_server import LLMServer, json_reply, text_reply
from tests.support.runs import agent_run
from tracescore.schemas import AgentRun, Message, RunInput, ToolInvocation
from tracescore.scoring import ScorerError
from tracescore.scoring.judge import Judge
from tracescore.scoring.prebuilt.mastra.faithfulness import create_faithfulness_scorer

QUESTION = "What is the capital of France?"
ANSWER = "Paris is the capital of France. It is big. I like bread."


@pytest.mark.parametrize(
    ("verdicts", "scale", "expected"),
    [
        (["yes", "no", "unsure", "yes"], 1, 0.5),  # unsure is not supported: 2 / 4
        (["yes", "yes", "unsure"], 1, 0.67),  # 2 / 3
        (["yes", "no", "no"], 5, 1.67),  # 1 / 3 x 5 = 1.666..
        (["unsure", "unsure"], 1, 0.0),
        (["yes"], 1, 1.0),
    ],
)
async def test_faithfulness_formula(
    llm_server: LLMServer, judge: Judge, verdicts: list[str], scale: float, expected: float
) -> None:
    llm_server.script(*claim_replies(verdicts))
    run = agent_run(QUESTION, ANSWER, context=["Paris is the capital of France."])
    result = await create_faithfulness_scorer(judge, scale=scale).run(run)
    assert result.score == expected
    assert result.scorer_id == "faithfulness"
    assert result.reason == "Because."


async def test_faithfulness_context_sources(llm_server: LLMServer, judge: Judge) -> None:
    # Two assistant messages: the tool calls alone, then the answer.
    tool_run = AgentRun(
        input=RunInput(input_messages=[Message(role="user", content=QUESTION)]),
        output=[
            Message(
                role="assistant",
                tool_invocations=[
                    ToolInvocation(
                        tool_name="lookup", result={"capital": "Paris", "note": "é"}, state="result"
                    ),
                    ToolInvocation(tool_name="pending", state="call"),
                ],
            ),
            Message(role="assistant", content="Paris."),
        ],
    )
    cases = [
        (
            create_faithfulness_scorer(judge, context=["given A", "given B"]),
            agent_run(QUESTION, ANSWER, context=["run ctx"]),
            "given A\ngiven B",
        ),
        (
            create_faithfulness_scorer(judge),
            agent_run(QUESTION, ANSWER, context=["run 1", "run 2"]),
            "run 1\nrun 2",
        ),
        (create_faithfulness_scorer(judge), tool_run, '{"capital":"Paris","note":"é"}'),
        (create_faithfulness_scorer(judge), agent_run(QUESTION, ANSWER), ""),  # no context at all
    ]
    for index, (scorer, run, expected_context) in enumerate(cases):
        llm_server.script(*claim_replies(["unsure"]))
        await scorer.run(run)
        analyze, reason = llm_server.user_prompt(3 * index + 1), llm_server.user_prompt(3 * index + 2)
        assert data_block(analyze) == expected_context
        assert data_block(reason) == expected_context
    assert "Paris." in llm_server.user_prompt(6)  # the tool run's answer is its last text message
    assert "You are a precise and thorough faithfulness evaluator" in llm_server.system_prompt(0)


async def test_faithfulness_no_claims_scores_zero(llm_server: LLMServer, judge: Judge) -> None:
    llm_server.script(json_reply({"claims": []}), json_reply({"verdicts": []}), text_reply("No claims."))
    result = await create_faithfulness_scorer(judge).run(agent_run(QUESTION, "", context=["c"]))
    assert result.score == 0
    assert "Number of claims: 0" in llm_server.user_prompt(1)


async def test_faithfulness_invalid_verdict_fails(llm_server: LLMServer, judge: Judge) -> None:
    bad = json_reply({"verdicts": [{"verdict": "supported", "reason": "r"}]})
    llm_server.script(json_reply({"claims": ["c"]}), bad, bad)
    with pytest.raises(ScorerError) as caught:
        await create_faithfulness_scorer(judge).run(agent_run(QUESTION, ANSWER, context=["c"]))
    assert caught.value.step == "analyze"
    assert len(llm_server.chat_requests) == 3
