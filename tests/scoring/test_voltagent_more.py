"""VoltAgent's context entity recall, answer similarity and code tool-call accuracy scorers.

Judge answers and embedding vectors are scripted on the local OpenAI-compatible server and reach the
scorers through litellm's real HTTP path. Expected scores are worked out by hand from VoltAgent's
formulas; where VoltAgent's own ``*.spec.ts`` cases apply to our runs they are reproduced and cited.
"""

from __future__ import annotations

import json
import math

import pytest

from schemas import AgentRun, Message, RunInput, ToolInvocation
from scoring import ScorerError
from scoring.judge import Judge
from scoring.prebuilt.ragas_answer_similarity import create_ragas_answer_similarity_scorer
from scoring.prebuilt.ragas_context_entity_recall import create_ragas_context_entity_recall_scorer
from scoring.prebuilt.tool_call_accuracy import create_tool_call_accuracy_scorer_code
from scoring.prebuilt.voltagent_tool_call_accuracy import create_voltagent_tool_call_accuracy_scorer
from scoring.registry import build_scorer
from tests.support.llm_server import LLMServer, Reply, error_reply, json_reply, text_reply

MODEL = "openai/gpt-4o-mini"
EMBEDDING_MODEL = "openai/text-embedding-3-small"
# VoltAgent's context-entity-recall.spec.ts BASE_CONTEXT
FLEMING_EXPECTED = "Alexander Fleming discovered penicillin in 1928."
FLEMING_CONTEXT = "Penicillin was discovered in 1928 by Alexander Fleming at St. Mary's Hospital."
ANSWER = "Water boils at 100 C at sea level."  # 8 whitespace words (embedding tokens)
GROUND_TRUTH = "Water boils at 100 C (212 F) at sea level; it changes with altitude."  # 14 words


def judge_for(server: LLMServer, max_retries: int = 3) -> Judge:
    return Judge(
        MODEL, api_base=server.api_base, api_key="test-key", backoff_initial_s=0.01, max_retries=max_retries
    )


def qa_run(
    answer: str = ANSWER, *, ground_truth: object = GROUND_TRUTH, context: list[str] | None = None
) -> AgentRun:
    return AgentRun(
        trace_id="a" * 32,
        span_id="b" * 16,
        input=RunInput(input_messages=[Message(role="user", content="Who discovered penicillin?")]),
        output=[Message(role="assistant", content=answer)],
        ground_truth=ground_truth,
        context=[FLEMING_CONTEXT] if context is None else context,
    )


def entities(*names: str) -> Reply:
    return json_reply({"entities": list(names)})


def user_prompt(server: LLMServer, index: int) -> str:
    return str(server.chat_requests[index].messages[-1]["content"])


# --- context entity recall -----------------------------------------------------------------------


async def test_entity_recall_all_expected_entities_found(llm_server: LLMServer) -> None:
    # context-entity-recall.spec.ts "computes recall based on entity overlap": 2 of 2 found -> 1
    llm_server.script(
        entities("Alexander Fleming", "1928"),
        entities("Alexander Fleming", "1928", "St. Mary's Hospital"),
    )
    scorer = create_ragas_context_entity_recall_scorer(judge_for(llm_server))
    result = await scorer.run(qa_run(ground_truth=FLEMING_EXPECTED))
    assert result.scorer_id == "contextEntityRecall"
    assert result.score == 1.0
    assert result.preprocess_step_result == ["Alexander Fleming", "1928"]
    assert result.analyze_step_result == ["Alexander Fleming", "1928", "St. Mary's Hospital"]
    # The ground truth is asked first, then the context list as its JSON.stringify text.
    assert FLEMING_EXPECTED in user_prompt(llm_server, 0)
    assert f"{json.dumps([FLEMING_CONTEXT])}\n" in user_prompt(llm_server, 1)  # ["Penicillin ..."]
    assert result.input_tokens == 2 * 11 and result.judge_model == MODEL


async def test_entity_recall_no_expected_entities_scores_zero(llm_server: LLMServer) -> None:
    # context-entity-recall.spec.ts "returns zero when no expected entities are present"; the
    # context is still asked, as VoltAgent does
    llm_server.script(entities(), entities())
    result = await create_ragas_context_entity_recall_scorer(judge_for(llm_server)).run(qa_run())
    assert result.score == 0.0
    assert (result.preprocess_step_result, result.analyze_step_result) == ([], [])
    assert len(llm_server.chat_requests) == 2


@pytest.mark.parametrize(
    ("expected", "found", "score"),
    [
        # distinct lower-cased expected: paris, france, 1889 (the second "paris" counts once); the
        # context names paris -> 1/3
        (["Paris", "France", "1889", "paris"], ["PARIS", "Eiffel"], 1 / 3),
        # 2 of 4 distinct expected entities
        (["Fleming", "1928", "London", "mould"], ["fleming", "Mould", "Oxford"], 0.5),
        # none found
        (["Fleming"], ["Pasteur"], 0.0),
        # expected entities, empty context answer
        (["Fleming"], [], 0.0),
    ],
)
async def test_entity_recall_formula(
    llm_server: LLMServer, expected: list[str], found: list[str], score: float
) -> None:
    llm_server.script(entities(*expected), entities(*found))
    result = await create_ragas_context_entity_recall_scorer(judge_for(llm_server)).run(qa_run())
    assert result.score == pytest.approx(score)


async def test_entity_recall_serialises_like_voltagent(llm_server: LLMServer) -> None:
    # normalizeText: a non-string expected is JSON.stringify'd; the context list is a compact JSON
    # array with non-ASCII characters kept
    llm_server.script(entities("Zürich"), entities("zürich"))
    run = qa_run(ground_truth={"city": "Zürich"}, context=["Zürich liegt am See.", "Bern"])
    result = await create_ragas_context_entity_recall_scorer(judge_for(llm_server)).run(run)
    assert result.score == 1.0  # "Zürich" and "zürich" match lower-cased
    assert '{"city":"Zürich"}' in user_prompt(llm_server, 0)
    assert '["Zürich liegt am See.","Bern"]' in user_prompt(llm_server, 1)


async def test_entity_recall_empty_expected_costs_no_call(llm_server: LLMServer) -> None:
    # Scored directly (the executor would skip it): an empty expected text has no entities and no
    # judge call; the context is still asked; recall of nothing is 0
    llm_server.script(entities("Fleming"))
    scorer = create_ragas_context_entity_recall_scorer(judge_for(llm_server))
    result = await scorer.run(qa_run(ground_truth=None))
    assert result.score == 0.0
    assert result.preprocess_step_result == []
    assert len(llm_server.chat_requests) == 1 and FLEMING_CONTEXT in user_prompt(llm_server, 0)


def test_entity_recall_needs_context_and_ground_truth() -> None:
    scorer = create_ragas_context_entity_recall_scorer(Judge(MODEL))
    assert scorer.needs == {"context", "ground_truth"}
    assert scorer.missing_needs(qa_run(ground_truth="  ", context=[])) == ["context", "ground_truth"]
    assert scorer.missing_needs(qa_run(ground_truth={"a": 1})) == []


async def test_entity_recall_invalid_answer_is_repaired_once(llm_server: LLMServer) -> None:
    # VoltAgent would read "not json" as no entities (score 0); we ask again and score the repair
    llm_server.script(text_reply("not json"), entities("Fleming"), entities("fleming"))
    result = await create_ragas_context_entity_recall_scorer(judge_for(llm_server)).run(qa_run())
    assert result.score == 1.0
    assert len(llm_server.chat_requests) == 3


@pytest.mark.parametrize(
    ("first", "second", "step"),
    [
        (text_reply("not json"), text_reply("still not json"), "preprocess"),
        # a JSON answer outside the schema (entities must be a list of strings)
        (json_reply({"entities": "Fleming"}), json_reply({"entities": [1928]}), "preprocess"),
    ],
)
async def test_entity_recall_invalid_answer_twice_fails(
    llm_server: LLMServer, first: Reply, second: Reply, step: str
) -> None:
    llm_server.script(first, second)
    with pytest.raises(ScorerError) as caught:
        await create_ragas_context_entity_recall_scorer(judge_for(llm_server)).run(qa_run())
    assert caught.value.step == step and "invalid JSON twice" in str(caught.value)
    assert len(llm_server.chat_requests) == 2


async def test_entity_recall_invalid_context_answer_fails_in_analyze(llm_server: LLMServer) -> None:
    llm_server.script(entities("Fleming"), text_reply("no"), text_reply("no"))
    with pytest.raises(ScorerError) as caught:
        await create_ragas_context_entity_recall_scorer(judge_for(llm_server)).run(qa_run())
    assert caught.value.step == "analyze" and "invalid JSON twice" in str(caught.value)


# --- answer similarity ---------------------------------------------------------------------------


async def test_answer_similarity_default_scaling(llm_server: LLMServer) -> None:
    # cos([3, 4], [4, 3]) = 24 / 25 = 0.96; (0.96 - 0.7) / (1 - 0.7) = 0.26 / 0.3; usage: 8 + 14 words
    llm_server.vectors = {ANSWER: [3.0, 4.0], GROUND_TRUTH: [4.0, 3.0]}
    scorer = create_ragas_answer_similarity_scorer(judge_for(llm_server))
    result = await scorer.run(qa_run())
    assert result.scorer_id == "answerSimilarity"
    assert result.score == pytest.approx(0.26 / 0.3)
    assert result.analyze_step_result == {"score": pytest.approx(0.26 / 0.3), "raw_score": 0.96, "usage": 22}
    [request] = llm_server.requests
    assert request.path.endswith("/embeddings")
    assert request.body["input"] == [ANSWER, GROUND_TRUTH]
    assert request.body["model"] == "text-embedding-3-small"
    assert llm_server.chat_requests == []  # embeddings only
    assert (result.input_tokens, result.output_tokens, result.judge_model) == (22, 0, EMBEDDING_MODEL)


async def test_answer_similarity_prefix_and_expected_min(llm_server: LLMServer) -> None:
    # answer-similarity.spec.ts "uses params to override embedding configuration" (expectedMin 0.6,
    # prefix "Q: ", score 0.9), as options: both texts embedded with the prefix; cos 0.96 ->
    # (0.96 - 0.6) / 0.4 = 0.9; usage 9 + 15 words ("Q:" adds one to each)
    llm_server.vectors = {f"Q: {ANSWER}": [3.0, 4.0], f"Q: {GROUND_TRUTH}": [4.0, 3.0]}
    result = await build_scorer(
        "answerSimilarity",
        {"judge": judge_for(llm_server), "embeddingExpectedMin": 0.6, "embeddingPrefix": "Q: "},
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
    answer_vector: list[float],
    truth_vector: list[float],
    expected_min: float,
    score: float,
) -> None:
    llm_server.vectors = {ANSWER: answer_vector, GROUND_TRUTH: truth_vector}
    scorer = create_ragas_answer_similarity_scorer(judge_for(llm_server), embedding_expected_min=expected_min)
    assert (await scorer.run(qa_run())).score == pytest.approx(score)


async def test_answer_similarity_non_string_expected_is_json(llm_server: LLMServer) -> None:
    llm_server.vectors = {ANSWER: [1.0, 0.0], '{"answer":100,"unit":"°C"}': [1.0, 0.0]}
    scorer = create_ragas_answer_similarity_scorer(judge_for(llm_server))
    result = await scorer.run(qa_run(ground_truth={"answer": 100, "unit": "°C"}))
    assert llm_server.requests[0].body["input"][1] == '{"answer":100,"unit":"°C"}'
    assert result.score == 1.0  # cos 1


async def test_answer_similarity_unequal_vectors_fail(llm_server: LLMServer) -> None:
    llm_server.vectors = {ANSWER: [1.0, 0.0, 0.0], GROUND_TRUTH: [1.0, 0.0]}
    with pytest.raises(ScorerError) as caught:
        await create_ragas_answer_similarity_scorer(judge_for(llm_server)).run(qa_run())
    assert caught.value.step == "analyze" and "same length" in str(caught.value)


async def test_answer_similarity_empty_query_fails_without_a_call(llm_server: LLMServer) -> None:
    # Scored directly (the executor skips a run without output text): VoltAgent's embedding step
    # refuses an empty query
    scorer = create_ragas_answer_similarity_scorer(judge_for(llm_server))
    assert scorer.needs == {"output", "ground_truth"}
    assert scorer.missing_needs(qa_run("  ", ground_truth="")) == ["ground_truth", "output"]
    with pytest.raises(ScorerError, match="non-empty query"):
        await scorer.run(qa_run(""))
    assert llm_server.requests == []


async def test_answer_similarity_embedding_errors_fail_after_retries(llm_server: LLMServer) -> None:
    llm_server.script_faults("embeddings", *[error_reply(500)] * 2)
    scorer = create_ragas_answer_similarity_scorer(judge_for(llm_server, max_retries=1))
    with pytest.raises(ScorerError) as caught:
        await scorer.run(qa_run())
    assert caught.value.step == "analyze" and "InternalServerError" in str(caught.value)
    assert len(llm_server.requests) == 2  # the call and its one retry


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"embedding_expected_min": math.nan}, "finite"),
        ({"embedding_expected_min": math.inf}, "finite"),
        ({"embedding_model": ""}, "embedding_model"),
    ],
)
def test_answer_similarity_options_validated(options: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        create_ragas_answer_similarity_scorer(Judge(MODEL), **options)  # type: ignore[arg-type]


def test_answer_similarity_registry_rejects_unknown_option() -> None:
    with pytest.raises(ValueError, match="no option 'strategy'"):
        build_scorer("ragas-answer-similarity", {"judge": MODEL, "strategy": "max"})


# --- tool-call accuracy (VoltAgent, code) --------------------------------------------------------


def calls_run(*tools: str, state: str = "result") -> AgentRun:
    invocations = [
        ToolInvocation(tool_call_id=f"call-{i}", tool_name=tool, state=state)  # type: ignore[arg-type]
        for i, tool in enumerate(tools)
    ]
    return AgentRun(
        trace_id="c" * 32,
        span_id="d" * 16,
        input=RunInput(input_messages=[Message(role="user", content="Find shoes")]),
        output=[Message(role="assistant", tool_invocations=invocations)],
    )


async def test_tool_accuracy_lenient_single_tool() -> None:
    # tool-call-accuracy.spec.ts "returns 1 when the expected tool is present in lenient mode"
    scorer = create_voltagent_tool_call_accuracy_scorer(expected_tool="searchProducts")
    result = await scorer.run(calls_run("searchProducts", "checkInventory"))
    assert result.scorer_id == "toolCallAccuracyCode"
    assert result.score == 1
    assert result.preprocess_step_result["correct_tool_called"] is True
    assert result.reason == (
        'Expected tool "searchProducts" was called. Actual tools: ["searchProducts","checkInventory"].'
    )


async def test_tool_accuracy_strict_single_tool_with_extra_calls() -> None:
    # tool-call-accuracy.spec.ts "returns 0 in strict single-tool mode when extra tools are called"
    scorer = create_voltagent_tool_call_accuracy_scorer(expected_tool="searchProducts", strict_mode=True)
    result = await scorer.run(calls_run("searchProducts", "checkInventory"))
    assert result.score == 0
    assert result.preprocess_step_result["correct_tool_called"] is False
    assert result.reason == (
        'Expected tool "searchProducts" was not called. Actual tools: ["searchProducts","checkInventory"].'
    )
    assert (await scorer.run(calls_run("searchProducts"))).score == 1


async def test_tool_accuracy_strict_order() -> None:
    # tool-call-accuracy.spec.ts "checks tool order in strict mode"
    scorer = create_voltagent_tool_call_accuracy_scorer(
        expected_tool_order=["searchProducts", "checkInventory"], strict_mode=True
    )
    passing = await scorer.run(calls_run("searchProducts", "checkInventory"))
    failing = await scorer.run(calls_run("searchProducts", "checkInventory", "fetchPricing"))
    assert (passing.score, failing.score) == (1, 0)
    assert failing.reason == (
        'Tool call order mismatch. Expected order ["searchProducts","checkInventory"], actual tools '
        '["searchProducts","checkInventory","fetchPricing"].'
    )


async def test_tool_accuracy_lenient_order_allows_extra_calls() -> None:
    # tool-call-accuracy.spec.ts "allows extra tools in non-strict order mode"
    scorer = create_voltagent_tool_call_accuracy_scorer(
        expected_tool_order=["searchProducts", "checkInventory"]
    )
    result = await scorer.run(calls_run("logRequest", "searchProducts", "cacheWarmup", "checkInventory"))
    assert result.score == 1
    assert result.preprocess_step_result == {
        "mode": "tool_order",
        "strict_mode": False,
        "has_tool_calls": True,
        "actual_tools": ["logRequest", "searchProducts", "cacheWarmup", "checkInventory"],
        "expected_tool": None,
        "expected_tool_order": ["searchProducts", "checkInventory"],
        "correct_tool_called": False,
        "correct_order_called": True,
    }
    assert result.reason == (
        'Tool calls matched expected order ["searchProducts","checkInventory"]. Actual tools: '
        '["logRequest","searchProducts","cacheWarmup","checkInventory"].'
    )


async def test_tool_accuracy_counts_a_call_whatever_its_outcome() -> None:
    # tool-call-accuracy.spec.ts "extracts tool names from message chains": a call followed by its
    # result is one invocation of our run; a failed call counts too
    scorer = create_voltagent_tool_call_accuracy_scorer(expected_tool="weatherTool")
    assert (await scorer.run(calls_run("weatherTool", state="result"))).score == 1
    assert (await scorer.run(calls_run("weatherTool", state="error"))).score == 1
    assert (await scorer.run(calls_run("weatherTool", state="call"))).score == 1


@pytest.mark.parametrize(
    ("calls", "order", "voltagent", "mastra"),
    [
        # subsequence a (index 1), then b after it (index 2): VoltAgent 1; Mastra compares first
        # calls (a at 1, b at 0): 0
        (("b", "a", "b"), ["a", "b"], 1, 0),
        # a tool expected twice must be called twice here; Mastra compares its first call with
        # itself (0 < 0 fails) whatever the calls
        (("a", "b"), ["a", "a"], 0, 0),
        (("a", "b", "a"), ["a", "a"], 1, 0),
        (("b", "a"), ["a", "b"], 0, 0),
        (("a", "c"), ["a", "b"], 0, 0),
    ],
)
async def test_tool_accuracy_lenient_order_is_a_subsequence(
    calls: tuple[str, ...], order: list[str], voltagent: int, mastra: int
) -> None:
    run = calls_run(*calls)
    ours = await create_voltagent_tool_call_accuracy_scorer(expected_tool_order=order).run(run)
    theirs = await create_tool_call_accuracy_scorer_code(expected_tool_order=order).run(run)
    assert (ours.score, theirs.score) == (voltagent, mastra)


async def test_tool_accuracy_no_tool_calls() -> None:
    single = create_voltagent_tool_call_accuracy_scorer(expected_tool="search")
    ordered = create_voltagent_tool_call_accuracy_scorer(expected_tool_order=["a", "b"], strict_mode=True)
    # No text at all (content capture off): still scored, the scorer needs none
    run = AgentRun(trace_id="e" * 32, span_id="f" * 16)
    assert single.needs == frozenset() and single.missing_needs(run) == []
    first, second = await single.run(run), await ordered.run(run)
    assert (first.score, second.score) == (0, 0)
    assert first.reason == 'No tool calls were made. Expected tool: "search".'
    assert second.reason == 'No tool calls were made. Expected order: ["a","b"].'
    assert first.preprocess_step_result["has_tool_calls"] is False
    assert second.preprocess_step_result["correct_order_called"] is False


async def test_tool_accuracy_names_are_trimmed_and_blanks_dropped() -> None:
    scorer = create_voltagent_tool_call_accuracy_scorer(expected_tool="  search ", strict_mode=True)
    result = await scorer.run(calls_run(" search\t", "   "))
    # " search\t" is search; the blank name is no call: exactly [search] -> 1 in strict mode
    assert result.score == 1 and result.preprocess_step_result["actual_tools"] == ["search"]
    assert result.preprocess_step_result["expected_tool"] == "search"


async def test_tool_accuracy_order_wins_and_empty_order_is_not_given() -> None:
    both = create_voltagent_tool_call_accuracy_scorer(expected_tool="x", expected_tool_order=["a"])
    result = await both.run(calls_run("a"))
    assert result.score == 1 and result.preprocess_step_result["mode"] == "tool_order"
    # An order of blanks is no order: single-tool mode on expected_tool
    single = create_voltagent_tool_call_accuracy_scorer(expected_tool="a", expected_tool_order=[" ", ""])
    result = await single.run(calls_run("b", "a"))
    assert result.score == 1 and result.preprocess_step_result["mode"] == "single_tool"
    assert result.preprocess_step_result["expected_tool_order"] is None


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"expected_tool": "  "},
        {"expected_tool_order": []},
        {"expected_tool": "", "expected_tool_order": [" "]},
    ],
)
def test_tool_accuracy_needs_an_expectation(options: dict[str, object]) -> None:
    # tool-call-accuracy.spec.ts "throws when no expected tool configuration is provided"
    with pytest.raises(ValueError, match="requires either expectedTool or expectedToolOrder"):
        create_voltagent_tool_call_accuracy_scorer(**options)  # type: ignore[arg-type]


async def test_tool_accuracy_from_the_registry_by_id() -> None:
    scorer = build_scorer("toolCallAccuracyCode", {"expectedToolOrder": ["a", "b"], "strictMode": True})
    assert scorer.id == "toolCallAccuracyCode"
    assert (await scorer.run(calls_run("a", "b"))).score == 1
    with pytest.raises(ValueError, match="invalid options"):
        build_scorer("voltagent-tool-call-accuracy", {"expectedToolOrder": "a,b"})
