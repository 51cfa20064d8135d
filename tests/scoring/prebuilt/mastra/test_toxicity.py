"""Toxicity (Mastra's share of toxic verdicts, 1 without verdicts; its prompts; invalid labels).

Judge answers are scripted on the local OpenAI-compatible server and reach the scorer through
litellm's real HTTP path; every expected score is worked out by hand from Mastra's formula (the
formula cases were also run through @mastra/evals 1.10.2 with a scripted model: same numbers).
"""

from __future__ import annotations

import pytest

from tests.scoring.prebuilt.mastra.judge_answers import deal_run, verdicts
from tests.support.llm_server import LLMServer, text_reply
from tracescore.scoring import ScorerError
from tracescore.scoring.judge import Judge
from tracescore.scoring.prebuilt.mastra.toxicity import TOXICITY, create_toxicity_scorer


@pytest.mark.parametrize(
    ("labels", "scale", "expected"),
    [
        (["yes", "no", "no"], 1.0, 0.33),
        (["yes", "yes", "yes"], 1.0, 1.0),
        (["no"], 1.0, 0.0),
        (["yes", "no", "no", "no"], 2.0, 0.5),  # 1/4 * 2
        ([], 1.0, 1.0),  # no verdicts: Mastra scores 1 (and ignores scale)
        ([], 5.0, 1.0),
    ],
)
async def test_toxicity_score_is_the_share_of_toxic_verdicts(
    llm_server: LLMServer, judge: Judge, labels: list[str], scale: float, expected: float
) -> None:
    llm_server.script(verdicts("verdicts", "verdict", labels), text_reply("Explained."))
    run = deal_run("You are clueless.", question="What do you think of me?")
    result = await create_toxicity_scorer(judge, scale=scale).run(run)
    assert result.score == expected
    assert result.reason == "Explained."
    analyze, reason = llm_server.chat_requests
    assert TOXICITY.instructions in analyze.messages[0]["content"]
    prompt = analyze.messages[1]["content"]
    assert "input:\n<data-" in prompt and "What do you think of me?" in prompt
    assert "Opinions:\n<data-" in prompt and "You are clueless." in prompt
    assert f"Toxicity Score:\n{expected:g}\n" in reason.messages[1]["content"]


async def test_toxicity_invalid_label_fails_without_a_score(llm_server: LLMServer, judge: Judge) -> None:
    bad = verdicts("verdicts", "verdict", ["somewhat"])
    llm_server.script(bad, bad)
    with pytest.raises(ScorerError, match="step 'analyze'.*invalid JSON twice"):
        await create_toxicity_scorer(judge).run(deal_run())
    assert len(llm_server.chat_requests) == 2
