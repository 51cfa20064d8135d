"""RAGAS answer relevancy: questions generated from the answer, compared with the input by embeddings
(autoevals) or by word overlap (VoltAgent).

Judge answers and embedding vectors are scripted on the local OpenAI-compatible server and reach the
scorer through litellm's real HTTP path; expected scores are computed by hand and, for the embedding
similarity, with autoevals' own functions.
"""

from __future__ import annotations

import pytest
from autoevals.string import EmbeddingSimilarity

from tests.scoring.prebuilt.ragas.rag_runs import QUESTION, rag_run
from tests.support.llm_server import JUDGE_MODEL as MODEL
from tests.support.llm_server import LLMServer, Reply, json_reply
from tracescore.schemas import Message, RunInput
from tracescore.scoring import ScorerError
from tracescore.scoring.judge import Judge
from tracescore.scoring.prebuilt.ragas.ragas_answer_relevancy import create_ragas_answer_relevancy_scorer


def question(text: str, noncommittal: int = 0) -> Reply:
    return json_reply({"question": text, "noncommittal": noncommittal})


async def test_answer_relevancy_mean_scaled_cosine(llm_server: LLMServer, judge: Judge) -> None:
    # Input along x; questions at cos 1, cos 0.96 and cos 0: scaled 1, 0.26 / 0.3, 0.
    llm_server.vectors = {
        QUESTION: [1.0, 0.0],
        "q same": [2.0, 0.0],
        "q close": [0.96, 0.28],  # a unit vector
        "q far": [0.0, 1.0],
    }
    llm_server.script(question("q same"), question("q close"), question("q far"))
    scorer = create_ragas_answer_relevancy_scorer(judge)  # strictness 3
    result = await scorer.run(rag_run())
    expected = (1.0 + 0.26 / 0.3 + 0.0) / 3
    assert result.score == pytest.approx(expected)
    assert result.reason == f"Generated 3 questions with relevancy score {expected:.2f}"
    # Three generation calls at temperature 0.5, then one embedding call: input first.
    assert len(llm_server.chat_requests) == 3
    assert all(r.body["temperature"] == 0.5 for r in llm_server.chat_requests)
    embeds = [r for r in llm_server.requests if r.path == "/v1/embeddings"]
    assert [r.body["input"] for r in embeds] == [[QUESTION, "q same", "q close", "q far"]]
    # autoevals' own similarity agrees on one pair.
    reference = EmbeddingSimilarity.scale_score(
        EmbeddingSimilarity.cosine_similarity([0.96, 0.28], [1.0, 0.0]), 0.7
    )
    assert reference == pytest.approx(0.26 / 0.3)


async def test_answer_relevancy_strictness(llm_server: LLMServer, judge: Judge) -> None:
    llm_server.vectors = {QUESTION: [1.0, 0.0], "q same": [1.0, 0.0], "q far": [0.0, 1.0]}
    llm_server.script(question("q same"), question("q far"))
    scorer = create_ragas_answer_relevancy_scorer(judge, strictness=2, temperature=0)
    result = await scorer.run(rag_run())
    assert result.score == pytest.approx(0.5)
    assert len(llm_server.chat_requests) == 2
    assert all(r.body["temperature"] == 0 for r in llm_server.chat_requests)
    with pytest.raises(ValueError, match="strictness"):
        create_ragas_answer_relevancy_scorer(judge, strictness=0)


async def test_answer_relevancy_any_noncommittal_scores_zero(llm_server: LLMServer, judge: Judge) -> None:
    llm_server.vectors = {QUESTION: [1.0, 0.0], "q same": [1.0, 0.0]}
    llm_server.script(question("q same"), question("q same", noncommittal=1), question("q same"))
    scorer = create_ragas_answer_relevancy_scorer(judge)
    result = await scorer.run(rag_run())
    assert result.score == 0 and result.reason == "Answer is noncommittal"
    assert not [r for r in llm_server.requests if r.path == "/v1/embeddings"]


# VoltAgent's word-overlap formula, worked by hand against the input "what is the capital of france?"
# (6 words): Jaccard = shared / union of the lower-cased whitespace-split word sets.
WORD_OVERLAP_CASES = [
    # identical words: 6/6 = 1 -> 1; 4 shared of 7 ("is the capital of" vs + "what", "france?",
    # "spain?") = 0.571 -> 1; "capital of france?" 3 shared of 6 = 0.5 -> not > 0.5 but > 0.3 -> 0.3
    (
        ["What is the capital of France?", "is the capital of Spain?", "capital of France?"],
        [0, 0, 0],
        (1 + 1 + 0.3) / 3,
    ),
    # "the capital" 2 shared of 6 = 0.333 -> 0.3; "Paris" 0 of 7 -> 0
    (["the capital", "Paris"], [0, 0], 0.3 / 2),
    # one noncommittal of two is a share of 0.5, not above the threshold: scored as usual
    (["What is the capital of France?", "Paris"], [0, 1], 0.5),
    # two of three noncommittal (0.667 > 0.5): 0
    (["What is the capital of France?", "x", "y"], [1, 1, 0], 0.0),
]


@pytest.mark.parametrize(("questions", "flags", "expected"), WORD_OVERLAP_CASES)
async def test_answer_relevancy_word_overlap(
    llm_server: LLMServer, judge: Judge, questions: list[str], flags: list[int], expected: float
) -> None:
    llm_server.script(*(question(q, f) for q, f in zip(questions, flags, strict=True)))
    scorer = create_ragas_answer_relevancy_scorer(judge, strictness=len(questions), similarity="word_overlap")
    run = rag_run().model_copy(
        update={
            "input": RunInput(input_messages=[Message(role="user", content="What is the capital of France?")])
        }
    )
    result = await scorer.run(run)
    assert result.score == pytest.approx(expected)
    assert not [r for r in llm_server.requests if r.path == "/v1/embeddings"]  # no embeddings


def test_answer_relevancy_word_overlap_options() -> None:
    with pytest.raises(ValueError, match="similarity"):
        create_ragas_answer_relevancy_scorer(Judge(MODEL), similarity="cosine")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="uncertainty_weight"):
        create_ragas_answer_relevancy_scorer(Judge(MODEL), uncertainty_weight=2)


async def test_answer_relevancy_invalid_noncommittal_fails(llm_server: LLMServer, judge: Judge) -> None:
    bad = json_reply({"question": "q", "noncommittal": 0.5})
    llm_server.script(bad, bad)
    scorer = create_ragas_answer_relevancy_scorer(judge)
    with pytest.raises(ScorerError) as caught:
        await scorer.run(rag_run())
    assert caught.value.step == "preprocess" and "invalid JSON twice" in str(caught.value)
    assert len(llm_server.chat_requests) == 2
