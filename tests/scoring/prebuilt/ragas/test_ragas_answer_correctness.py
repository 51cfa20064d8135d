"""RAGAS answer correctness (VoltAgent / autoevals): statement F1, optionally with embedding similarity.

Judge answers and embedding vectors are scripted on the local OpenAI-compatible server and reach the
scorer through litellm's real HTTP path; expected scores are computed by hand and with autoevals' own
formula functions on the same parsed answers.
"""

from __future__ import annotations

import pytest
from autoevals.ragas import compute_f1_score
from autoevals.string import EmbeddingSimilarity

from tests.scoring.prebuilt.ragas.rag_runs import ANSWER, GROUND_TRUTH, QUESTION, classification, rag_run
from tests.support.llm_server import JUDGE_MODEL as MODEL
from tests.support.llm_server import LLMServer, json_reply
from tracescore.scoring import ScorerError
from tracescore.scoring.judge import Judge
from tracescore.scoring.prebuilt.ragas.ragas_answer_correctness import create_ragas_answer_correctness_scorer


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        ((1, 0, 2), 0.5),  # 1 / (1 + 0.5 x 2)
        ((3, 1, 1), 0.75),  # 3 / (3 + 0.5 x 2)
        ((2, 0, 0), 1.0),
        ((0, 2, 3), 0.0),
        ((1, 1, 0), 2 / 3),  # 1 / 1.5
        ((4, 2, 1), 8 / 11),  # P 4/6, R 4/5: 2PR / (P + R) = (16/15) / (22/15)
    ],
)
async def test_answer_correctness_factuality_only(
    llm_server: LLMServer, judge: Judge, counts: tuple[int, int, int], expected: float
) -> None:
    answer = classification(*counts)
    llm_server.script(json_reply(answer))
    scorer = create_ragas_answer_correctness_scorer(judge)  # VoltAgent's defaults
    result = await scorer.run(rag_run())
    assert result.score == pytest.approx(expected)
    assert result.score == pytest.approx(compute_f1_score(answer))
    # No embedding call without a similarity weight.
    assert [r.path for r in llm_server.requests] == ["/v1/chat/completions"]
    prompt = str(llm_server.chat_requests[0].messages[1]["content"])
    assert QUESTION in prompt and ANSWER in prompt and GROUND_TRUTH in prompt


@pytest.mark.parametrize(
    ("answer_vec", "truth_vec", "similarity"),
    [
        ([1.0, 0.0], [1.0, 0.0], 1.0),  # cos 1 -> (1 - 0.7) / 0.3
        ([1.0, 0.0], [0.0, 1.0], 0.0),  # cos 0, below 0.7 -> 0
        ([3.0, 4.0], [4.0, 3.0], 0.26 / 0.3),  # cos 24/25 = 0.96 -> 0.26 / 0.3 = 0.8666..
    ],
)
async def test_answer_correctness_with_similarity(
    llm_server: LLMServer, judge: Judge, answer_vec: list[float], truth_vec: list[float], similarity: float
) -> None:
    llm_server.vectors = {ANSWER: answer_vec, GROUND_TRUTH: truth_vec}
    llm_server.script(json_reply(classification(1, 0, 2)))  # F1 0.5
    scorer = create_ragas_answer_correctness_scorer(  # autoevals' weights
        judge, factuality_weight=0.75, answer_similarity_weight=0.25
    )
    result = await scorer.run(rag_run())
    assert result.score == pytest.approx((0.75 * 0.5 + 0.25 * similarity) / 1.0)
    # autoevals' own cosine and rescaling agree on the same vectors.
    reference = EmbeddingSimilarity.scale_score(
        EmbeddingSimilarity.cosine_similarity(answer_vec, truth_vec), 0.7
    )
    assert reference == pytest.approx(similarity)
    embedding_requests = [r for r in llm_server.requests if r.path == "/v1/embeddings"]
    assert len(embedding_requests) == 1
    assert embedding_requests[0].body["input"] == [ANSWER, GROUND_TRUTH]


async def test_answer_correctness_custom_weights(llm_server: LLMServer, judge: Judge) -> None:
    llm_server.vectors = {ANSWER: [1.0, 0.0], GROUND_TRUTH: [1.0, 0.0]}  # similarity 1
    llm_server.script(json_reply(classification(3, 1, 1)))  # F1 0.75
    scorer = create_ragas_answer_correctness_scorer(judge, factuality_weight=1, answer_similarity_weight=3)
    result = await scorer.run(rag_run())
    assert result.score == pytest.approx((1 * 0.75 + 3 * 1.0) / 4)  # 0.9375


def test_answer_correctness_weights_validated() -> None:
    judge = Judge(MODEL)
    with pytest.raises(ValueError, match="nonzero"):
        create_ragas_answer_correctness_scorer(judge, factuality_weight=0, answer_similarity_weight=0)
    with pytest.raises(ValueError, match="non-negative"):
        create_ragas_answer_correctness_scorer(judge, factuality_weight=-1)


async def test_answer_correctness_without_ground_truth_fails(llm_server: LLMServer, judge: Judge) -> None:
    scorer = create_ragas_answer_correctness_scorer(judge)
    with pytest.raises(ScorerError, match="ground_truth"):
        await scorer.run(rag_run(ground_truth=None))
    assert llm_server.requests == []


async def test_answer_correctness_factuality_weight_scales(llm_server: LLMServer, judge: Judge) -> None:
    llm_server.script(json_reply(classification(3, 1, 1)))  # F1 0.75
    scorer = create_ragas_answer_correctness_scorer(judge, factuality_weight=0.5)
    result = await scorer.run(rag_run())
    assert result.score == pytest.approx(0.375)  # VoltAgent: F1 x factuality_weight


async def test_answer_correctness_no_statements_scores_zero(llm_server: LLMServer, judge: Judge) -> None:
    # VoltAgent scores 0 where autoevals' formula divides by zero.
    llm_server.script(json_reply(classification(0, 0, 0)))
    scorer = create_ragas_answer_correctness_scorer(judge)
    result = await scorer.run(rag_run())
    assert result.score == 0


async def test_answer_correctness_invalid_answer_fails_after_repair(
    llm_server: LLMServer, judge: Judge
) -> None:
    bad = json_reply({"TP": "not a list", "FP": []})
    llm_server.script(bad, bad)
    scorer = create_ragas_answer_correctness_scorer(judge, answer_similarity_weight=1)
    with pytest.raises(ScorerError) as caught:
        await scorer.run(rag_run())
    assert caught.value.step == "preprocess"
    assert "invalid JSON twice" in str(caught.value)
    assert len(llm_server.chat_requests) == 2
    assert not [r for r in llm_server.requests if r.path == "/v1/embeddings"]
