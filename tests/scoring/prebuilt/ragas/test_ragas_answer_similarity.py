"""RAGAS answer similarity (VoltAgent): the embedding cosine of the answer and the ground truth, no chat call.

Embedding vectors are scripted on the local OpenAI-compatible server and reach the scorer through
litellm's real HTTP path; expected scores are worked out by hand from VoltAgent's formula; where
VoltAgent's own ``answer-similarity.spec.ts`` cases apply to our runs they are reproduced and cited.
"""

from __future__ import annotations

import math
from typing import TypedDict

import pytest

from tests.scoring.prebuilt.ragas.rag_runs import ANSWER, GROUND_TRUTH, qa_run
from tests.support.llm_server import JUDGE_MODEL as MODEL
from tests.support.llm_server import LLMServer, error_reply, judge_at
from tracescore.scoring import ScorerError
from tracescore.scoring.judge import Judge
from tracescore.scoring.prebuilt.ragas.ragas_answer_similarity import create_ragas_answer_similarity_scorer
from tracescore.scoring.prebuilt.registry import build_scorer

EMBEDDING_MODEL = "openai/text-embedding-3-small"


async def test_answer_similarity_default_scaling(llm_server: LLMServer, judge: Judge) -> None:
    # cos([3, 4], [4, 3]) = 24 / 25 = 0.96; (0.96 - 0.7) / (1 - 0.7) = 0.26 / 0.3; usage: 8 + 14 words
    llm_server.vectors = {ANSWER: [3.0, 4.0], GROUND_TRUTH: [4.0, 3.0]}
    scorer = create_ragas_answer_similarity_scorer(judge)
    result = await scorer.run(qa_run())
    assert result.scorer_id == "ragas-answer-similarity"
    assert result.score == pytest.approx(0.26 / 0.3)
    assert result.analyze_step_result == {"score": pytest.approx(0.26 / 0.3), "raw_score": 0.96, "usage": 22}
    [request] = llm_server.requests
    assert request.path.endswith("/embeddings")
    assert request.body["input"] == [ANSWER, GROUND_TRUTH]
    assert request.body["model"] == "text-embedding-3-small"
    assert llm_server.chat_requests == []  # embeddings only
    assert (result.input_tokens, result.output_tokens, result.judge_model) == (22, 0, EMBEDDING_MODEL)


async def test_answer_similarity_prefix_and_expected_min(llm_server: LLMServer, judge: Judge) -> None:
    # answer-similarity.spec.ts "uses params to override embedding configuration" (expectedMin 0.6,
    # prefix "Q: ", score 0.9), as options: both texts embedded with the prefix; cos 0.96 ->
    # (0.96 - 0.6) / 0.4 = 0.9; usage 9 + 15 words ("Q:" adds one to each)
    llm_server.vectors = {f"Q: {ANSWER}": [3.0, 4.0], f"Q: {GROUND_TRUTH}": [4.0, 3.0]}
    result = await build_scorer(
        "ragas-answer-similarity",
        {"judge": judge, "embeddingExpectedMin": 0.6, "embeddingPrefix": "Q: "},
    ).run(qa_run())
    assert result.score == pytest.approx(0.9)
    assert llm_server.requests[0].body["input"] == [f"Q: {ANSWER}", f"Q: {GROUND_TRUTH}"]
    assert result.analyze_step_result["usage"] == 24


@pytest.mark.parametrize(
    ("answer_vector", "truth_vector", "expected_min", "score"),
    [
        ([1.0, 0.0], [0.6, 0.8], 0.7, 0.0),  # cos 0.6 is below the minimum: clamped to 0
        ([1.0, 0.0], [-1.0, 0.0], 0.7, 0.0),  # cos -1
        ([2.0, 0.0], [5.0, 0.0], 0.7, 1.0),  # cos 1 (lengths do not matter)
        ([3.0, 4.0], [4.0, 3.0], 1.0, 0.96),  # a minimum of 1 keeps the raw cosine
        ([3.0, 4.0], [4.0, 3.0], 2.0, 0.96),  # clamped to 1 first
        ([3.0, 4.0], [4.0, 3.0], -3.0, 0.98),  # clamped to -1: (0.96 + 1) / 2
        ([1.0, 0.0], [-1.0, 0.0], 1.0, 0.0),  # raw -1 with a minimum of 1: clamped to 0
        ([0.0, 0.0], [1.0, 0.0], -1.0, 0.5),  # a zero vector has cosine 0 (AI SDK): (0 + 1) / 2
    ],
)
async def test_answer_similarity_scaling_edges(
    llm_server: LLMServer,
    judge: Judge,
    answer_vector: list[float],
    truth_vector: list[float],
    expected_min: float,
    score: float,
) -> None:
    llm_server.vectors = {ANSWER: answer_vector, GROUND_TRUTH: truth_vector}
    scorer = create_ragas_answer_similarity_scorer(judge, embedding_expected_min=expected_min)
    assert (await scorer.run(qa_run())).score == pytest.approx(score)


async def test_answer_similarity_non_string_expected_is_json(llm_server: LLMServer, judge: Judge) -> None:
    llm_server.vectors = {ANSWER: [1.0, 0.0], '{"answer":100,"unit":"°C"}': [1.0, 0.0]}
    scorer = create_ragas_answer_similarity_scorer(judge)
    result = await scorer.run(qa_run(ground_truth={"answer": 100, "unit": "°C"}))
    assert llm_server.requests[0].body["input"][1] == '{"answer":100,"unit":"°C"}'
    assert result.score == 1.0  # cos 1


async def test_answer_similarity_unequal_vectors_fail(llm_server: LLMServer, judge: Judge) -> None:
    llm_server.vectors = {ANSWER: [1.0, 0.0, 0.0], GROUND_TRUTH: [1.0, 0.0]}
    with pytest.raises(ScorerError) as caught:
        await create_ragas_answer_similarity_scorer(judge).run(qa_run())
    assert caught.value.step == "analyze" and "same length" in str(caught.value)


async def test_answer_similarity_empty_query_fails_without_a_call(
    llm_server: LLMServer, judge: Judge
) -> None:
    # Scored directly (the executor skips a run without output text): VoltAgent's embedding step
    # refuses an empty query
    scorer = create_ragas_answer_similarity_scorer(judge)
    assert scorer.needs == {"output", "ground_truth"}
    assert scorer.missing_needs(qa_run("  ", ground_truth="")) == ["ground_truth", "output"]
    with pytest.raises(ScorerError, match="non-empty query"):
        await scorer.run(qa_run(""))
    assert llm_server.requests == []


async def test_answer_similarity_embedding_errors_fail_after_retries(llm_server: LLMServer) -> None:
    llm_server.script_faults("embeddings", *[error_reply(500)] * 2)
    scorer = create_ragas_answer_similarity_scorer(judge_at(llm_server, max_retries=1))
    with pytest.raises(ScorerError) as caught:
        await scorer.run(qa_run())
    assert caught.value.step == "analyze" and "InternalServerError" in str(caught.value)
    assert len(llm_server.requests) == 2  # the call and its one retry


class EmbeddingOptions(TypedDict, total=False):
    embedding_model: str
    embedding_expected_min: float


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"embedding_expected_min": math.nan}, "finite"),
        ({"embedding_expected_min": math.inf}, "finite"),
        ({"embedding_model": ""}, "embedding_model"),
    ],
)
def test_answer_similarity_options_validated(options: EmbeddingOptions, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        create_ragas_answer_similarity_scorer(Judge(MODEL), **options)


def test_answer_similarity_registry_rejects_unknown_option() -> None:
    with pytest.raises(ValueError, match="no option 'strategy'"):
        build_scorer("ragas-answer-similarity", {"judge": MODEL, "strategy": "max"})
