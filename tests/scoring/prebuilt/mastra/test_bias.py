"""Bias (Mastra's share of biased opinions, its prompts, labels that need a repair).

Judge answers are scripted on the local OpenAI-compatible server and reach the scorer through
litellm's real HTTP path; every expected score is worked out by hand from Mastra's formula (the
formula cases were also run through @mastra/evals 1.10.2 with a scripted model: same numbers).
"""

from __future__ import annotations

import pytest

from tests.scoring.prebuilt.mastra.judge_answers import deal_run, verdicts
from tests.support.llm_server import LLMServer, json_reply, judge_at, text_reply
from tracescore.scoring import ScorerError
from tracescore.scoring.judge import Judge
from tracescore.scoring.prebuilt.mastra.bias import BIAS, create_bias_scorer


@pytest.fixture
def judge(llm_server: LLMServer) -> Judge:
    """A judge with instructions of its own, which the scorer replaces by Mastra's."""
    return judge_at(llm_server, instructions="ignored")


@pytest.mark.parametrize(
    ("labels", "scale", "expected"),
    [
        (["yes", "no", "no"], 1.0, 0.33),  # 1/3 = 0.333.. -> 0.33
        (["yes", "yes", "no"], 1.0, 0.67),  # 2/3 -> 0.67
        (["no", "no"], 1.0, 0.0),
        (["YES", "Yes", "no", "no"], 10.0, 5.0),  # labels compared lower-cased; 2/4 * 10
        (["yes", "no", "no"], 0.0, 0.33),  # scale 0 is Mastra's `scale || 1`
        (["yes", "no", "no", "no", "no", "no", "no", "no"], 1.0, 0.13),  # 0.125 rounds half up
    ],
)
async def test_bias_score_is_the_share_of_biased_opinions(
    llm_server: LLMServer, judge: Judge, labels: list[str], scale: float, expected: float
) -> None:
    opinions = [f"opinion {i}" for i in range(len(labels))]
    llm_server.script(
        json_reply({"opinions": opinions}),
        verdicts("results", "result", labels),
        text_reply("The score is low."),
    )
    result = await create_bias_scorer(judge, scale=scale).run(deal_run("Bossy answer."))
    assert result.score == expected
    assert result.reason == "The score is low."
    extract, analyze, reason = llm_server.chat_requests
    # Mastra's instructions replace the judge's own; trace content sits inside data markers.
    assert BIAS.instructions in extract.messages[0]["content"]
    assert "ignored" not in extract.messages[0]["content"]
    assert "Text:\n<data-" in extract.messages[1]["content"]
    assert "Bossy answer." in extract.messages[1]["content"]
    assert "\n".join(opinions) in analyze.messages[1]["content"]
    assert "Opinions:\n<data-" in analyze.messages[1]["content"]
    assert f"Bias Score:\n{expected:g}\n" in reason.messages[1]["content"]
    assert "\n".join(f"r{i}" for i in range(len(labels))) in reason.messages[1]["content"]


async def test_bias_analyze_prompt_keeps_mastras_escaped_newline(llm_server: LLMServer, judge: Judge) -> None:
    # Mastra's prompt says "separated by \n characters" in a template literal, so the judge reads a
    # line break there (after a space a text editor may want to trim): the template keeps both.
    llm_server.script(json_reply({"opinions": []}), json_reply({"results": []}), text_reply("None."))
    await create_bias_scorer(judge).run(deal_run())
    analyze = llm_server.chat_requests[1].messages[1]["content"]
    assert analyze.startswith(
        "Based on the given opinions, which is a list of strings separated by \n characters,"
    )


async def test_bias_without_verdicts_scores_zero(llm_server: LLMServer, judge: Judge) -> None:
    llm_server.script(json_reply({"opinions": []}), json_reply({"results": []}), text_reply("None."))
    result = await create_bias_scorer(judge).run(deal_run())
    assert result.score == 0.0
    # The reason prompt prints the score as JavaScript does: 0, not 0.0.
    assert "Bias Score:\n0\n" in llm_server.chat_requests[2].messages[1]["content"]


async def test_bias_invalid_label_is_repaired_once_then_fails(llm_server: LLMServer, judge: Judge) -> None:
    bad = verdicts("results", "result", ["maybe"])
    llm_server.script(json_reply({"opinions": ["x"]}), bad, bad)
    with pytest.raises(ScorerError, match="step 'analyze'.*invalid JSON twice"):
        await create_bias_scorer(judge).run(deal_run())
    assert len(llm_server.chat_requests) == 3  # extract, analyze, one repair; no score, no reason


@pytest.mark.parametrize("bad_label", ["biased", " yes "])
async def test_bias_invalid_label_repaired_gives_a_score(
    llm_server: LLMServer, judge: Judge, bad_label: str
) -> None:
    # Mastra does not trim bias labels: " yes " is no allowed label (Mastra would count it "no").
    llm_server.script(
        json_reply({"opinions": ["x", "y"]}),
        verdicts("results", "result", [bad_label, "no"]),
        verdicts("results", "result", ["yes", "no"]),
        text_reply("Half."),
    )
    result = await create_bias_scorer(judge).run(deal_run())
    assert result.score == 0.5
    repair = llm_server.chat_requests[2].messages
    assert repair[-1]["content"].startswith("Your answer was not valid JSON")
