"""RAGAS context precision (VoltAgent): the judge's binary verdict on whether the context was useful.

Judge answers are scripted on the local OpenAI-compatible server and reach the scorer through
litellm's real HTTP path; expected scores are computed by hand.
"""

from __future__ import annotations

from typing import TypedDict

import pytest

from tests.scoring.prebuilt.ragas.rag_runs import ANSWER, CONTEXT, QUESTION, rag_run
from tests.support.llm_server import LLMServer, json_reply
from tracescore.scoring import ScorerError
from tracescore.scoring.judge import Judge
from tracescore.scoring.prebuilt.ragas.ragas_context_precision import create_ragas_context_precision_scorer


class PrecisionOptions(TypedDict, total=False):
    binary_threshold: float
    weighted: bool


@pytest.mark.parametrize(
    ("verdict", "options", "expected"),
    [
        (1, {}, 1.0),
        (0, {}, 0.0),
        (1, {"binary_threshold": 1}, 1.0),
        (0, {"binary_threshold": 0}, 1.0),  # 0 >= 0
        (1, {"weighted": True}, 1.0),
    ],
)
async def test_context_precision_verdict(
    llm_server: LLMServer, judge: Judge, verdict: int, options: PrecisionOptions, expected: float
) -> None:
    llm_server.script(json_reply({"reason": "useful context", "verdict": verdict}))
    scorer = create_ragas_context_precision_scorer(judge, **options)
    result = await scorer.run(rag_run())
    assert result.score == expected
    assert result.reason == "useful context"
    assert len(llm_server.chat_requests) == 1  # the reason is the judge's, no second call
    prompt = str(llm_server.chat_requests[0].messages[1]["content"])
    assert "\n".join(CONTEXT) in prompt and QUESTION in prompt and ANSWER in prompt


async def test_context_precision_invalid_verdict_fails(llm_server: LLMServer, judge: Judge) -> None:
    bad = json_reply({"reason": "?", "verdict": 0.7})
    llm_server.script(bad, bad)
    scorer = create_ragas_context_precision_scorer(judge)
    with pytest.raises(ScorerError) as caught:
        await scorer.run(rag_run())
    assert caught.value.step == "analyze" and "invalid JSON twice" in str(caught.value)
    assert len(llm_server.chat_requests) == 2
