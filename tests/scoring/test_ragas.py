"""RAGAS-style (VoltAgent / autoevals) LLM-judge scorers.

Judge answers and embedding vectors are scripted on the local OpenAI-compatible server and reach the
scorers through litellm's real HTTP path; expected scores are computed by hand and, where cheap,
with autoevals' own formula functions on the same parsed answers.
"""

from __future__ import annotations

import pytest
from autoevals.ragas import compute_f1_score
from autoevals.string import EmbeddingSimilarity

from schemas import AgentRun, Message, RunInput
from scoring import ScorerError
from scoring.judge import Judge
from scoring.prebuilt.ragas_answer_correctness import create_ragas_answer_correctness_scorer
from scoring.prebuilt.ragas_answer_relevancy import create_ragas_answer_relevancy_scorer
from scoring.prebuilt.ragas_context_precision import create_ragas_context_precision_scorer
from scoring.prebuilt.ragas_context_recall import create_ragas_context_recall_scorer
from scoring.prebuilt.ragas_context_relevancy import create_ragas_context_relevancy_scorer
from scoring.registry import build_scorer
from tests.support.llm_server import LLMServer, json_reply

MODEL = "openai/gpt-4o-mini"
QUESTION = "What is the boiling point of water?"
ANSWER = "Water boils at 100 C at sea level."
GROUND_TRUTH = "Water boils at 100 C (212 F) at sea level; it changes with altitude."


def judge_for(server: LLMServer) -> Judge:
    return Judge(MODEL, api_base=server.api_base, api_key="test-key", backoff_initial_s=0.01)


CONTEXT = ["Water boils at 100 C at sea level.", "Boiling points fall with altitude."]


def make_run(ground_truth: str | None = GROUND_TRUTH, context: list[str] | None = None) -> AgentRun:
    return AgentRun(
        trace_id="a" * 32,
        span_id="b" * 16,
        input=RunInput(input_messages=[Message(role="user", content=QUESTION)]),
        output=[Message(role="assistant", content=ANSWER)],
        ground_truth=ground_truth,
        context=CONTEXT if context is None else context,
    )


def classification(tp: int, fp: int, fn: int) -> dict[str, list[str]]:
    return {
        "TP": [f"tp {i}" for i in range(tp)],
        "FP": [f"fp {i}" for i in range(fp)],
        "FN": [f"fn {i}" for i in range(fn)],
    }


# --- answer correctness --------------------------------------------------------------------------


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
    llm_server: LLMServer, counts: tuple[int, int, int], expected: float
) -> None:
    answer = classification(*counts)
    llm_server.script(json_reply(answer))
    scorer = create_ragas_answer_correctness_scorer(judge_for(llm_server))  # VoltAgent's defaults
    result = await scorer.run(make_run())
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
    llm_server: LLMServer, answer_vec: list[float], truth_vec: list[float], similarity: float
) -> None:
    llm_server.vectors = {ANSWER: answer_vec, GROUND_TRUTH: truth_vec}
    llm_server.script(json_reply(classification(1, 0, 2)))  # F1 0.5
    scorer = create_ragas_answer_correctness_scorer(  # autoevals' weights
        judge_for(llm_server), factuality_weight=0.75, answer_similarity_weight=0.25
    )
    result = await scorer.run(make_run())
    assert result.score == pytest.approx((0.75 * 0.5 + 0.25 * similarity) / 1.0)
    # autoevals' own cosine and rescaling agree on the same vectors.
    reference = EmbeddingSimilarity.scale_score(
        EmbeddingSimilarity.cosine_similarity(answer_vec, truth_vec), 0.7
    )
    assert reference == pytest.approx(similarity)
    embedding_requests = [r for r in llm_server.requests if r.path == "/v1/embeddings"]
    assert len(embedding_requests) == 1
    assert embedding_requests[0].body["input"] == [ANSWER, GROUND_TRUTH]


async def test_answer_correctness_custom_weights(llm_server: LLMServer) -> None:
    llm_server.vectors = {ANSWER: [1.0, 0.0], GROUND_TRUTH: [1.0, 0.0]}  # similarity 1
    llm_server.script(json_reply(classification(3, 1, 1)))  # F1 0.75
    scorer = create_ragas_answer_correctness_scorer(
        judge_for(llm_server), factuality_weight=1, answer_similarity_weight=3
    )
    result = await scorer.run(make_run())
    assert result.score == pytest.approx((1 * 0.75 + 3 * 1.0) / 4)  # 0.9375


def test_answer_correctness_weights_validated() -> None:
    judge = Judge(MODEL)
    with pytest.raises(ValueError, match="nonzero"):
        create_ragas_answer_correctness_scorer(judge, factuality_weight=0, answer_similarity_weight=0)
    with pytest.raises(ValueError, match="non-negative"):
        create_ragas_answer_correctness_scorer(judge, factuality_weight=-1)


async def test_answer_correctness_without_ground_truth_fails(llm_server: LLMServer) -> None:
    scorer = create_ragas_answer_correctness_scorer(judge_for(llm_server))
    with pytest.raises(ScorerError, match="ground_truth"):
        await scorer.run(make_run(ground_truth=None))
    assert llm_server.requests == []


async def test_answer_correctness_factuality_weight_scales(llm_server: LLMServer) -> None:
    llm_server.script(json_reply(classification(3, 1, 1)))  # F1 0.75
    scorer = create_ragas_answer_correctness_scorer(judge_for(llm_server), factuality_weight=0.5)
    result = await scorer.run(make_run())
    assert result.score == pytest.approx(0.375)  # VoltAgent: F1 x factuality_weight


async def test_answer_correctness_no_statements_scores_zero(llm_server: LLMServer) -> None:
    # VoltAgent scores 0 where autoevals' formula divides by zero.
    llm_server.script(json_reply(classification(0, 0, 0)))
    scorer = create_ragas_answer_correctness_scorer(judge_for(llm_server))
    result = await scorer.run(make_run())
    assert result.score == 0


async def test_answer_correctness_invalid_answer_fails_after_repair(llm_server: LLMServer) -> None:
    bad = json_reply({"TP": "not a list", "FP": []})
    llm_server.script(bad, bad)
    scorer = create_ragas_answer_correctness_scorer(judge_for(llm_server), answer_similarity_weight=1)
    with pytest.raises(ScorerError) as caught:
        await scorer.run(make_run())
    assert caught.value.step == "preprocess"
    assert "invalid JSON twice" in str(caught.value)
    assert len(llm_server.chat_requests) == 2
    assert not [r for r in llm_server.requests if r.path == "/v1/embeddings"]


# --- context precision ---------------------------------------------------------------------------


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
    llm_server: LLMServer, verdict: int, options: dict[str, float], expected: float
) -> None:
    llm_server.script(json_reply({"reason": "useful context", "verdict": verdict}))
    scorer = create_ragas_context_precision_scorer(judge_for(llm_server), **options)
    result = await scorer.run(make_run())
    assert result.score == expected
    assert result.reason == "useful context"
    assert len(llm_server.chat_requests) == 1  # the reason is the judge's, no second call
    prompt = str(llm_server.chat_requests[0].messages[1]["content"])
    assert "\n".join(CONTEXT) in prompt and QUESTION in prompt and ANSWER in prompt


async def test_context_precision_invalid_verdict_fails(llm_server: LLMServer) -> None:
    bad = json_reply({"reason": "?", "verdict": 0.7})
    llm_server.script(bad, bad)
    scorer = create_ragas_context_precision_scorer(judge_for(llm_server))
    with pytest.raises(ScorerError) as caught:
        await scorer.run(make_run())
    assert caught.value.step == "analyze" and "invalid JSON twice" in str(caught.value)
    assert len(llm_server.chat_requests) == 2


# --- context recall ------------------------------------------------------------------------------


def recall_replies(verdicts: list[tuple[int, str]]) -> list[object]:
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
    llm_server: LLMServer, verdicts: list[tuple[int, str]], options: dict[str, float], expected: float
) -> None:
    llm_server.script(*recall_replies(verdicts))
    scorer = create_ragas_context_recall_scorer(judge_for(llm_server), **options)
    result = await scorer.run(make_run())
    assert result.score == pytest.approx(expected)
    # One extract call, then one verify call per statement, in order.
    assert len(llm_server.chat_requests) == 1 + len(verdicts)
    assert "statement 1" in str(llm_server.chat_requests[2].messages[1]["content"])
    assert GROUND_TRUTH in str(llm_server.chat_requests[0].messages[1]["content"])


async def test_context_recall_reason_and_no_statements(llm_server: LLMServer) -> None:
    llm_server.script(*recall_replies([(1, "ok"), (0, "no")]))
    scorer = create_ragas_context_recall_scorer(judge_for(llm_server))
    result = await scorer.run(make_run())
    assert result.reason == (
        "Context recall: 1/2 statements from expected output are supported by context. "
        "Missing support for: statement 1"
    )
    llm_server.script(json_reply({"statements": []}))
    empty = await scorer.run(make_run())
    assert empty.score == 0 and empty.reason == "No statements found in expected output to evaluate"


async def test_context_recall_invalid_verdict_fails(llm_server: LLMServer) -> None:
    bad = json_reply({"verdict": "yes", "reasoning": "?"})
    llm_server.script(json_reply({"statements": ["s"]}), bad, bad)
    scorer = create_ragas_context_recall_scorer(judge_for(llm_server))
    with pytest.raises(ScorerError) as caught:
        await scorer.run(make_run())
    assert caught.value.step == "analyze" and "invalid JSON twice" in str(caught.value)


# --- context relevancy ---------------------------------------------------------------------------

# VoltAgent measures a list context as its JSON.stringify text, written out here by hand.
CONTEXT_JSON = '["Water boils at 100 C at sea level.","Boiling points fall with altitude."]'


def picked(*sentences: str) -> object:
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
async def test_context_relevancy_ratio(llm_server: LLMServer, sentences: list[str], expected: float) -> None:
    assert len(CONTEXT_JSON) == 75
    llm_server.script(picked(*sentences))
    scorer = create_ragas_context_relevancy_scorer(judge_for(llm_server))
    result = await scorer.run(make_run())
    assert result.score == pytest.approx(expected)
    assert CONTEXT_JSON in str(llm_server.chat_requests[0].messages[1]["content"])


async def test_context_relevancy_counts_utf16_units(llm_server: LLMServer) -> None:
    # JSON of ["ab😀"] is 8 UTF-16 units: [ " a b, 2 for the emoji (a surrogate pair), " ]
    llm_server.script(picked("😀"))
    scorer = create_ragas_context_relevancy_scorer(judge_for(llm_server))
    result = await scorer.run(make_run(context=["ab😀"]))
    assert result.score == pytest.approx(2 / 8)  # 1 / 7 if counted in code points


async def test_context_relevancy_invalid_answer_fails(llm_server: LLMServer) -> None:
    bad = json_reply({"sentences": [{"sentence": "x"}]})  # reasons missing
    llm_server.script(bad, bad)
    scorer = create_ragas_context_relevancy_scorer(judge_for(llm_server))
    with pytest.raises(ScorerError) as caught:
        await scorer.run(make_run())
    assert caught.value.step == "analyze" and "invalid JSON twice" in str(caught.value)


# --- answer relevancy (embeddings) ---------------------------------------------------------------


def question(text: str, noncommittal: int = 0) -> object:
    return json_reply({"question": text, "noncommittal": noncommittal})


async def test_answer_relevancy_mean_scaled_cosine(llm_server: LLMServer) -> None:
    # Input along x; questions at cos 1, cos 0.96 and cos 0: scaled 1, 0.26 / 0.3, 0.
    llm_server.vectors = {
        QUESTION: [1.0, 0.0],
        "q same": [2.0, 0.0],
        "q close": [0.96, 0.28],  # a unit vector
        "q far": [0.0, 1.0],
    }
    llm_server.script(question("q same"), question("q close"), question("q far"))
    scorer = create_ragas_answer_relevancy_scorer(judge_for(llm_server))  # strictness 3
    result = await scorer.run(make_run())
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


async def test_answer_relevancy_strictness(llm_server: LLMServer) -> None:
    llm_server.vectors = {QUESTION: [1.0, 0.0], "q same": [1.0, 0.0], "q far": [0.0, 1.0]}
    llm_server.script(question("q same"), question("q far"))
    scorer = create_ragas_answer_relevancy_scorer(judge_for(llm_server), strictness=2, temperature=0)
    result = await scorer.run(make_run())
    assert result.score == pytest.approx(0.5)
    assert len(llm_server.chat_requests) == 2
    assert all(r.body["temperature"] == 0 for r in llm_server.chat_requests)
    with pytest.raises(ValueError, match="strictness"):
        create_ragas_answer_relevancy_scorer(judge_for(llm_server), strictness=0)


async def test_answer_relevancy_any_noncommittal_scores_zero(llm_server: LLMServer) -> None:
    llm_server.vectors = {QUESTION: [1.0, 0.0], "q same": [1.0, 0.0]}
    llm_server.script(question("q same"), question("q same", noncommittal=1), question("q same"))
    scorer = create_ragas_answer_relevancy_scorer(judge_for(llm_server))
    result = await scorer.run(make_run())
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
    llm_server: LLMServer, questions: list[str], flags: list[int], expected: float
) -> None:
    llm_server.script(*(question(q, f) for q, f in zip(questions, flags, strict=True)))
    scorer = create_ragas_answer_relevancy_scorer(
        judge_for(llm_server), strictness=len(questions), similarity="word_overlap"
    )
    run = make_run().model_copy(
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


async def test_answer_relevancy_invalid_noncommittal_fails(llm_server: LLMServer) -> None:
    bad = json_reply({"question": "q", "noncommittal": 0.5})
    llm_server.script(bad, bad)
    scorer = create_ragas_answer_relevancy_scorer(judge_for(llm_server))
    with pytest.raises(ScorerError) as caught:
        await scorer.run(make_run())
    assert caught.value.step == "preprocess" and "invalid JSON twice" in str(caught.value)
    assert len(llm_server.chat_requests) == 2


# --- registry ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "scorer_id"),
    [
        ("ragas-answer-correctness", "answerCorrectness"),
        ("ragas-answer-relevancy", "answerRelevancy"),
        ("ragas-context-precision", "contextPrecision"),
        ("ragas-context-recall", "contextRecall"),
        ("ragas-context-relevancy", "contextRelevancy"),
    ],
)
def test_registry_builds_by_name_and_id(name: str, scorer_id: str) -> None:
    assert build_scorer(name, {"judge": MODEL}).id == scorer_id
    assert build_scorer(scorer_id, {"judge": {"model": MODEL}}).id == scorer_id


async def test_registry_camel_case_options_reach_the_scorer(llm_server: LLMServer) -> None:
    judge = {"model": MODEL, "apiBase": llm_server.api_base, "apiKey": "test-key"}
    llm_server.script(
        json_reply({"statements": ["s1", "s2"]}), *[json_reply({"verdict": 1, "reasoning": "ok"})] * 2
    )
    recall = build_scorer("contextRecall", {"judge": judge, "partialCredit": True, "strictness": 0.9})
    assert (await recall.run(make_run())).score == 1.0
    llm_server.script(json_reply(classification(3, 1, 1)))
    correctness = build_scorer("answerCorrectness", {"judge": judge, "factualityWeight": 0.5})
    assert (await correctness.run(make_run())).score == pytest.approx(0.375)
    with pytest.raises(ValueError, match="no option"):
        build_scorer("ragas-context-relevancy", {"judge": MODEL, "strictness": 2})
