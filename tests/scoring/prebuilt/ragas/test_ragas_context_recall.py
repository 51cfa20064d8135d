"""RAGAS context recall (VoltAgent): the ground truth's statements, each verified against the context.

Judge answers are scripted on the local OpenAI-compatible server and reach the scorer through
litellm's real HTTP path; expected scores are computed by hand.
"""

from __future__ import annotations

from typing import TypedDict

import pytest

from tests.scoring.prebuilt.ragas.rag_runs import GROUND_TRUTH, rag_run
from tests.support.llm_server import LLMServer, Reply, json_reply
from tracescore.scoring import ScorerError
from tracescore.scoring.judge import Judge
from tracescore.scoring.prebuilt.ragas.ragas_context_recall import create_ragas_context_recall_scorer


class RecallOptions(TypedDict, total=False):
    strictness: float
    partial_credit: bool


def recall_replies(verdicts: list[tuple[int, str]]) -> list[Reply]:
    return [
        json_reply({"statements": [f"statement {i}" for i in range(len(verdicts))]}),
        *(json_reply({"verdict": v, "reasoning": why}) for v, why in verdicts),
    ]


@pytest.mark.parametrize(
    ("verdicts", "options", "expected"),
    [
        ([(1, "ok"), (1, "ok"), (1, "ok"), (0, "no")], {}, 0.75),  # 3/4 >= 0.7: kept
        ([(1, "ok"), (0, "no")], {}, 0.5 * 0.5 / 0.7),  # 1/2 < 0.7: 0.5 x (0.5 / 0.7)
        ([(1, "ok"), (0, "no")], {"strictness": 0.5}, 0.5),  # no penalty at 0.5
        ([(1, "ok"), (0, "partially supported")], {"partial_credit": True}, 0.75),  # 1.5 / 2
        ([(1, "ok"), (0, "partially supported")], {}, 0.5 * 0.5 / 0.7),
        ([(0, "no"), (0, "no")], {}, 0.0),
    ],
)
async def test_context_recall_formula(
    llm_server: LLMServer,
    judge: Judge,
    verdicts: list[tuple[int, str]],
    options: RecallOptions,
    expected: float,
) -> None:
    llm_server.script(*recall_replies(verdicts))
    scorer = create_ragas_context_recall_scorer(judge, **options)
    result = await scorer.run(rag_run())
    assert result.score == pytest.approx(expected)
    # One extract call, then one verify call per statement, in order.
    assert len(llm_server.chat_requests) == 1 + len(verdicts)
    assert "statement 1" in str(llm_server.chat_requests[2].messages[1]["content"])
    assert GROUND_TRUTH in str(llm_server.chat_requests[0].messages[1]["content"])


async def test_context_recall_reason_and_no_statements(llm_server: LLMServer, judge: Judge) -> None:
    llm_server.script(*recall_replies([(1, "ok"), (0, "no")]))
    scorer = create_ragas_context_recall_scorer(judge)
    result = await scorer.run(rag_run())
    assert result.reason == (
        "Context recall: 1/2 statements from expected output are supported by context. "
        "Missing support for: statement 1"
    )
    llm_server.script(json_reply({"statements": []}))
    empty = await scorer.run(rag_run())
    assert empty.score == 0 and empty.reason == "No statements found in expected output to evaluate"


async def test_context_recall_invalid_verdict_fails(llm_server: LLMServer, judge: Judge) -> None:
    bad = json_reply({"verdict": "yes", "reasoning": "?"})
    llm_server.script(json_reply({"statements": ["s"]}), bad, bad)
    scorer = create_ragas_context_recall_scorer(judge)
    with pytest.raises(ScorerError) as caught:
        await scorer.run(rag_run())
    assert caught.value.step == "analyze" and "invalid JSON twice" in str(caught.value)
