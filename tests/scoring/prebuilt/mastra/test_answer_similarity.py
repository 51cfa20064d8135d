"""Answer similarity (Mastra's unit-matching formula against the run's ground truth, its prompts,
runs without ground truth).

The judge's answers are scripted on the local OpenAI-compatible server and reach the scorer through
litellm's real HTTP path; expected scores are computed by hand from Mastra's formula.
"""

from __future__ import annotations

import json
from typing import Any, TypedDict

import pytest

from tests.scoring.prebuilt.mastra.judge_answers import data_block, similarity_replies
from tests.support.llm_server import LLMServer, json_reply
from tests.support.runs import agent_run
from tracescore.schemas import AgentRun
from tracescore.scoring import ScorerError
from tracescore.scoring.judge import Judge
from tracescore.scoring.prebuilt.mastra.answer_similarity import create_answer_similarity_scorer

QUESTION = "What is the capital of France?"
ANSWER = "Paris is the capital of France. It is big. I like bread."


class SimilarityOptions(TypedDict, total=False):
    semantic_threshold: float
    exact_match_bonus: float
    contradiction_penalty: float
    scale: float


class JudgeFindings(TypedDict, total=False):
    """What ``similarity_replies`` has the judge find beside the matches."""

    contradictions: int
    extras: int


def run_with(ground_truth: Any) -> AgentRun:
    return agent_run(QUESTION, ANSWER, ground_truth=ground_truth)


@pytest.mark.parametrize(
    ("match_types", "extra", "options", "expected"),
    [
        # (1.2 + 0.8 + 0.4 - 0.15) / (4 x 1.2) = 0.46875
        (["exact", "semantic", "partial", "missing"], {}, {}, 0.47),
        (["exact", "semantic", "partial", "missing"], {}, {"scale": 10}, 4.69),
        (["exact", "exact"], {"extras": 1}, {}, 0.95),  # 1 - 0.05
        (["exact", "semantic"], {"extras": 5}, {}, 0.63),  # 2.0 / 2.4 - 0.2 (extra penalty capped)
        (["semantic"], {"contradictions": 1}, {}, 0.0),  # 0.667 - 1.0, clamped at 0
        (["exact", "semantic"], {"contradictions": 1}, {"contradiction_penalty": 0.3}, 0.53),  # 0.8333 - 0.3
        (["missing", "missing"], {}, {}, 0.0),  # negative, clamped
        (["exact"], {}, {}, 1.0),
        # exact_match_bonus 0: (1 + 0.5 x 0.5) / 2 = 0.625 -> 0.63 (semantic_threshold 0.5)
        (["exact", "partial"], {}, {"exact_match_bonus": 0, "semantic_threshold": 0.5}, 0.63),
        ([], {}, {}, 0.0),  # no ground-truth units
    ],
)
async def test_answer_similarity_formula(
    llm_server: LLMServer,
    judge: Judge,
    match_types: list[str],
    extra: JudgeFindings,
    options: SimilarityOptions,
    expected: float,
) -> None:
    llm_server.script(*similarity_replies(match_types, **extra))
    run = run_with("Paris is the capital of France.")
    result = await create_answer_similarity_scorer(judge, **options).run(run)
    assert result.score == expected
    assert result.scorer_id == "answer-similarity"
    assert result.reason == "Similar enough."


async def test_answer_similarity_prompts(llm_server: LLMServer, judge: Judge) -> None:
    llm_server.script(*similarity_replies(["exact", "missing"], units=["Paris", "capital"]))
    result = await create_answer_similarity_scorer(judge).run(run_with({"city": "Paris", "note": "é"}))
    assert result.score == 0.44  # (1.2 - 0.15) / 2.4 = 0.4375 -> 0.44 (half rounds up, as Math.round)
    extract, analyze, reason = (llm_server.user_prompt(i) for i in range(3))
    assert "You are a precise answer similarity evaluator" in llm_server.system_prompt(0)
    assert data_block(extract, "agent output") == ANSWER
    assert data_block(extract, "ground truth") == '{"city":"Paris","note":"é"}'
    assert data_block(analyze, "output units") == '[\n  "Paris",\n  "capital"\n]'
    assert data_block(analyze, "ground truth units") == '[\n  "truth 0",\n  "truth 1"\n]'
    assert "- Score: 0.44/1\n" in reason
    analysis = json.loads(data_block(reason, "analysis"))
    assert analysis["matches"][1] == {
        "groundTruthUnit": "truth 1",
        "outputUnit": None,
        "matchType": "missing",
        "explanation": "e",
    }
    assert analysis["extraInOutput"] == [] and analysis["contradictions"] == []


async def test_answer_similarity_missing_ground_truth(llm_server: LLMServer, judge: Judge) -> None:
    # Required (the default): the scorer fails before asking the judge.
    with pytest.raises(ScorerError, match="requires ground truth") as caught:
        await create_answer_similarity_scorer(judge).run(run_with(None))
    assert caught.value.step == "preprocess"
    assert llm_server.chat_requests == []
    # Not required: Mastra still asks the judge, with empty texts, and scores 0 whatever it says.
    llm_server.script(*similarity_replies(["exact"]))
    scorer = create_answer_similarity_scorer(judge, require_ground_truth=False)
    result = await scorer.run(run_with(""))
    assert result.score == 0
    assert data_block(llm_server.user_prompt(0), "agent output") == ""
    assert llm_server.user_prompt(2) == "No ground truth was provided for comparison. Score is 0 by default."
    # JavaScript truthiness: an empty list is ground truth, 0 is not.
    llm_server.script(*similarity_replies(["exact"]))
    result = await scorer.run(run_with([]))
    assert result.score == 1.0
    assert data_block(llm_server.user_prompt(3), "ground truth") == "[]"
    with pytest.raises(ScorerError, match="requires ground truth"):
        await create_answer_similarity_scorer(judge).run(run_with(0))


async def test_answer_similarity_invalid_match_type_fails(llm_server: LLMServer, judge: Judge) -> None:
    bad = json_reply(
        {
            "matches": [
                {"groundTruthUnit": "t", "outputUnit": "o", "matchType": "close", "explanation": "e"}
            ],
            "extraInOutput": [],
            "contradictions": [],
        }
    )
    llm_server.script(json_reply({"outputUnits": ["o"], "groundTruthUnits": ["t"]}), bad, bad)
    with pytest.raises(ScorerError) as caught:
        await create_answer_similarity_scorer(judge).run(run_with("t"))
    assert caught.value.step == "analyze"
    assert len(llm_server.chat_requests) == 3
