"""RAGAS context relevancy (VoltAgent): the share of the context (in UTF-16 units) picked as relevant.

Judge answers are scripted on the local OpenAI-compatible server and reach the scorer through
litellm's real HTTP path; expected scores are computed by hand.
"""

from __future__ import annotations

import pytest

from tests.scoring.prebuilt.ragas.rag_runs import rag_run
from tests.support.llm_server import LLMServer, Reply, json_reply
from tracescore.scoring import ScorerError
from tracescore.scoring.judge import Judge
from tracescore.scoring.prebuilt.ragas.ragas_context_relevancy import create_ragas_context_relevancy_scorer

# VoltAgent measures a list context as its JSON.stringify text, written out here by hand.
CONTEXT_JSON = '["Water boils at 100 C at sea level.","Boiling points fall with altitude."]'


def picked(*sentences: str) -> Reply:
    return json_reply({"sentences": [{"sentence": s, "reasons": ["relevant"]} for s in sentences]})


@pytest.mark.parametrize(
    ("sentences", "expected"),
    [
        (["Water boils at 100 C at sea level."], 34 / 75),
        (
            ["Water boils at 100 C at sea level.", "Boiling points fall with altitude."],
            68 / 75,
        ),  # 34 + 34 characters
        ([], 0.0),
        ([CONTEXT_JSON, "more"], 1.0),  # clamped
    ],
)
async def test_context_relevancy_ratio(
    llm_server: LLMServer, judge: Judge, sentences: list[str], expected: float
) -> None:
    assert len(CONTEXT_JSON) == 75
    llm_server.script(picked(*sentences))
    scorer = create_ragas_context_relevancy_scorer(judge)
    result = await scorer.run(rag_run())
    assert result.score == pytest.approx(expected)
    assert CONTEXT_JSON in str(llm_server.chat_requests[0].messages[1]["content"])


async def test_context_relevancy_counts_utf16_units(llm_server: LLMServer, judge: Judge) -> None:
    # JSON of ["ab😀"] is 8 UTF-16 units: [ " a b, 2 for the emoji (a surrogate pair), " ]
    llm_server.script(picked("😀"))
    scorer = create_ragas_context_relevancy_scorer(judge)
    result = await scorer.run(rag_run(context=["ab😀"]))
    assert result.score == pytest.approx(2 / 8)  # 1 / 7 if counted in code points


async def test_context_relevancy_invalid_answer_fails(llm_server: LLMServer, judge: Judge) -> None:
    bad = json_reply({"sentences": [{"sentence": "x"}]})  # reasons missing
    llm_server.script(bad, bad)
    scorer = create_ragas_context_relevancy_scorer(judge)
    with pytest.raises(ScorerError) as caught:
        await scorer.run(rag_run())
    assert caught.value.step == "analyze" and "invalid JSON twice" in str(caught.value)
