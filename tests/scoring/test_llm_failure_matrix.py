"""Every LLM-judge scorer of the registry through one matrix of judge behaviours.

Each scorer (one row of ``tests/scoring/llm_cases.py``) is built by name with a judge pointing at the
local OpenAI-compatible server, so every answer travels litellm's real HTTP path. Per row: the happy
path gives the hand-computed score and metered tokens; a 429 is retried and not billed; a persistent
500, an answer that stays malformed JSON and a judge timeout end as a ``failed`` decision of the
executor, never a score; runs without the output or context a scorer needs are ``skipped_empty``
before any judge call; and the statement-based scorers give their documented score when the judge
finds nothing to judge.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pytest

from tests.scoring.llm_cases import CASES, CHAT_CASES, EMBEDDING_CASES, Case
from tests.support.llm_server import LLMServer, Reply, error_reply, text_reply
from tests.support.sinks import RecordingSink
from tracescore.schemas import AgentRun, Decision, ScoreRecord
from tracescore.schemas.config import ScorerRule, ScoringConfig
from tracescore.scoring.framework.scorer import ScorerResult
from tracescore.scoring.prebuilt.registry import SCORERS, build_scorer
from tracescore.scoring.runtime.executor import ScoringExecutor
from tracescore.scoring.runtime.scoring_metrics import ScoringMetrics

TOKENS_PER_CHAT_ANSWER = 11  # the prompt_tokens the local server reports for every chat answer
COMPLETION_TOKENS_PER_CHAT_ANSWER = 7
MAX_RETRIES = 2

# Every registry scorer that takes a judge, written out: a new LLM scorer must get a row in CASES.
LLM_SCORERS = {
    "prompt-alignment",
    "tool-call-accuracy-llm",
    "trajectory-accuracy-llm",
    "noise-sensitivity",
    "answer-relevancy",
    "faithfulness",
    "hallucination",
    "answer-similarity",
    "bias",
    "toxicity",
    "context-precision",
    "context-relevance",
    "context-recall",
    "factuality",
    "summary",
    "translation",
    "humor",
    "possible",
    "moderation",
    "ragas-answer-correctness",
    "ragas-answer-relevancy",
    "ragas-context-precision",
    "ragas-context-recall",
    "ragas-context-relevancy",
    "ragas-context-entity-recall",
    "ragas-answer-similarity",
    "rubric",
    "summarization",
    "multi-turn-judge",
}


def by_id(cases: Sequence[Case]) -> pytest.MarkDecorator:
    return pytest.mark.parametrize("case", cases, ids=[case.label for case in cases])


def options(case: Case, server: LLMServer, **judge: Any) -> dict[str, Any]:
    spec = {
        "model": case.model,
        "api_base": server.api_base,
        "api_key": "test-key",
        "backoff_initial_s": 0.01,
        "max_retries": MAX_RETRIES,
        "timeout_s": 10.0,
        **judge,
    }
    return {**case.options, "judge": spec}


def prime(case: Case, server: LLMServer, *replies: Reply) -> None:
    """Script the chat answers, embedding vectors and moderation answers of one scoring."""
    server.vectors = dict(case.vectors)
    server.moderations.extend(case.moderations)
    server.script(*replies)


async def score(case: Case, server: LLMServer) -> ScorerResult:
    """``case.run`` scored directly by the scorer built from the registry."""
    return await build_scorer(case.name, options(case, server)).run(case.run)


async def execute(
    case: Case, server: LLMServer, run: AgentRun, **judge: Any
) -> tuple[Decision, list[ScoreRecord]]:
    """The executor's one decision (and any score rows) for ``run`` under ``case``'s scorer."""
    sink = RecordingSink()
    rule = ScorerRule(scorer=case.name, options=options(case, server, **judge))
    # No waiting for a judge that stays down: these cases are about the failure once retries end.
    config = ScoringConfig(rules=[rule], concurrency=1, timeout_seconds=30, retry_max_age_seconds=0)
    executor = ScoringExecutor(config, sink, ScoringMetrics())
    await executor.start()
    try:
        await executor.consume_runs([run])
        await executor.drain()
    finally:
        await executor.shutdown()
    [decision] = sink.decisions
    return decision, sink.records


def requests_to(server: LLMServer, endpoint: str) -> int:
    return sum(r.path.endswith(f"/{endpoint}") for r in server.requests)


def judge_requests(case: Case, server: LLMServer) -> int:
    return requests_to(server, "completions" if case.fault_endpoint == "chat" else case.fault_endpoint)


def fault(case: Case, server: LLMServer, *replies: Reply) -> None:
    """``replies`` answer the scorer's first judge calls (chat, or the moderation endpoint)."""
    if case.fault_endpoint != "chat":
        server.script_faults(case.fault_endpoint, *replies)
        prime(case, server)
    else:
        prime(case, server, *replies, *case.happy)


def always(reply: Reply) -> Callable[[dict[str, Any]], Reply]:
    return lambda body: reply


def blank_output(run: AgentRun) -> AgentRun:
    """``run`` with every output text emptied (tool calls kept), as with content capture off."""
    output = [message.model_copy(update={"content": "", "parts": []}) for message in run.output]
    return run.model_copy(update={"output": output})


# --- the table covers the registry ---------------------------------------------------------------


def test_every_llm_scorer_of_the_registry_has_a_row() -> None:
    takes_judge = {
        name for name, factory in SCORERS.items() if "judge" in inspect.signature(factory).parameters
    }
    assert takes_judge == LLM_SCORERS
    assert {case.name for case in CASES} == LLM_SCORERS
    assert len({case.label for case in CASES}) == len(CASES)


@by_id(CASES)
def test_needs(case: Case) -> None:
    assert build_scorer(case.name, {**case.options, "judge": case.model}).needs == case.needs


# --- happy path and retried failures -------------------------------------------------------------


@by_id(CASES)
async def test_happy_path(llm_server: LLMServer, case: Case) -> None:
    prime(case, llm_server, *case.happy)
    result = await score(case, llm_server)
    assert result.score == pytest.approx(case.score, abs=1e-9)
    # The meter counts every answered call, also those the scorer's own code makes (embeddings).
    assert result.input_tokens == TOKENS_PER_CHAT_ANSWER * case.chat_calls + case.embed_tokens
    assert result.output_tokens == COMPLETION_TOKENS_PER_CHAT_ANSWER * case.chat_calls
    assert result.judge_model == case.judge_model
    assert len(llm_server.chat_requests) == case.chat_calls
    assert requests_to(llm_server, "embeddings") == (1 if case.embed_tokens else 0)
    assert requests_to(llm_server, "moderations") == len(case.moderations)
    assert not llm_server.replies  # every scripted answer was asked for


@by_id(CASES)
async def test_rate_limit_is_retried_and_not_billed(llm_server: LLMServer, case: Case) -> None:
    fault(case, llm_server, error_reply(429, retry_after=0.01))
    result = await score(case, llm_server)
    assert result.score == pytest.approx(case.score, abs=1e-9)
    assert result.input_tokens == TOKENS_PER_CHAT_ANSWER * case.chat_calls + case.embed_tokens
    expected_judge_requests = case.chat_calls + 1 if case.fault_endpoint == "chat" else 2
    assert judge_requests(case, llm_server) == expected_judge_requests


@by_id(EMBEDDING_CASES)
async def test_embedding_rate_limit_is_retried_and_not_billed(llm_server: LLMServer, case: Case) -> None:
    llm_server.script_faults("embeddings", error_reply(429, retry_after=0.01))
    prime(case, llm_server, *case.happy)
    result = await score(case, llm_server)
    assert result.score == pytest.approx(case.score, abs=1e-9)
    assert result.input_tokens == TOKENS_PER_CHAT_ANSWER * case.chat_calls + case.embed_tokens
    assert requests_to(llm_server, "embeddings") == 2


@by_id(CHAT_CASES)
async def test_malformed_json_is_repaired_once(llm_server: LLMServer, case: Case) -> None:
    prime(case, llm_server, text_reply("not json"), *case.happy)
    result = await score(case, llm_server)
    assert result.score == pytest.approx(case.score, abs=1e-9)
    # The malformed answer was answered, so it is billed like any other.
    assert result.input_tokens == TOKENS_PER_CHAT_ANSWER * (case.chat_calls + 1) + case.embed_tokens
    assert len(llm_server.chat_requests) == case.chat_calls + 1


# --- failures: a failed decision, never a score --------------------------------------------------


@by_id(CASES)
async def test_persistent_server_error_fails_the_run(llm_server: LLMServer, case: Case) -> None:
    if case.fault_endpoint == "chat":
        llm_server.responder = always(error_reply(500))
        prime(case, llm_server)
    else:
        fault(case, llm_server, *[error_reply(500)] * (MAX_RETRIES + 1))
    decision, records = await execute(case, llm_server, case.run)
    assert decision.decision == "failed"
    assert f"step '{case.first_step}'" in decision.detail and "InternalServerError" in decision.detail
    assert records == []
    assert judge_requests(case, llm_server) == MAX_RETRIES + 1  # the first call, retried, then given up


@by_id(EMBEDDING_CASES)
async def test_persistent_embedding_error_fails_the_run(llm_server: LLMServer, case: Case) -> None:
    llm_server.script_faults("embeddings", *[error_reply(500)] * (MAX_RETRIES + 1))
    prime(case, llm_server, *case.happy)
    decision, records = await execute(case, llm_server, case.run)
    assert decision.decision == "failed"
    assert "step 'analyze'" in decision.detail and "InternalServerError" in decision.detail
    assert records == []
    assert requests_to(llm_server, "embeddings") == MAX_RETRIES + 1


@by_id(CHAT_CASES)
async def test_malformed_json_twice_fails_the_run(llm_server: LLMServer, case: Case) -> None:
    prime(case, llm_server, text_reply("not json"), text_reply("not json"))
    decision, records = await execute(case, llm_server, case.run)
    assert decision.decision == "failed"
    assert f"step '{case.first_step}'" in decision.detail and "invalid JSON twice" in decision.detail
    assert records == []
    assert len(llm_server.chat_requests) == 2  # the answer and its one repair round


@by_id(CASES)
async def test_judge_timeout_fails_the_run(llm_server: LLMServer, case: Case) -> None:
    if case.fault_endpoint == "chat":
        prime(case, llm_server, replace(case.happy[0], delay_s=5.0), *case.happy[1:])
    else:
        fault(case, llm_server, Reply(delay_s=5.0))
    # A second for the request to reach the server on a loaded machine; the answer takes five.
    decision, records = await execute(case, llm_server, case.run, timeout_s=1.0, max_retries=0)
    assert decision.decision == "failed"
    # The judge's own timeout, classified and given up on after one attempt; not the executor's 30 s.
    assert f"step '{case.first_step}'" in decision.detail
    assert "failed (retriable) after 1 attempt(s)" in decision.detail
    assert "timed out after 1 s" in decision.detail
    assert records == []
    assert judge_requests(case, llm_server) == 1


# --- edge cases ----------------------------------------------------------------------------------


@by_id(CASES)
async def test_empty_output(llm_server: LLMServer, case: Case) -> None:
    run = blank_output(case.run)
    if "output" in case.needs:
        decision, records = await execute(case, llm_server, run)
        assert (decision.decision, decision.detail, records) == (
            "skipped_empty",
            "run has no output text",
            [],
        )
        assert llm_server.requests == []  # no judge call at all
    else:
        # A scorer that never reads the output text scores the run as it would with one.
        prime(case, llm_server, *case.happy)
        decision, [record] = await execute(case, llm_server, run)
        assert decision.decision == "scored"
        assert record.score == pytest.approx(case.score, abs=1e-9)


CONTEXT_CASES = [case for case in CASES if "context" in case.needs]


@by_id(CONTEXT_CASES)
async def test_missing_context_is_skipped(llm_server: LLMServer, case: Case) -> None:
    decision, records = await execute(case, llm_server, case.run.model_copy(update={"context": []}))
    assert (decision.decision, decision.detail, records) == ("skipped_empty", "run has no context text", [])
    assert llm_server.requests == []


GROUND_TRUTH_CASES = [case for case in CASES if "ground_truth" in case.needs]


@by_id(GROUND_TRUTH_CASES)
async def test_missing_ground_truth_is_skipped(llm_server: LLMServer, case: Case) -> None:
    decision, records = await execute(case, llm_server, case.run.model_copy(update={"ground_truth": None}))
    assert (decision.decision, decision.detail, records) == ("skipped_empty", "run has no ground truth", [])
    assert llm_server.requests == []


STATEMENT_CASES = [case for case in CASES if case.none_found_score is not None]


@by_id(STATEMENT_CASES)
async def test_no_statements_gives_the_documented_score(llm_server: LLMServer, case: Case) -> None:
    prime(case, llm_server, *case.none_found)
    result = await score(case, llm_server)
    assert result.score == pytest.approx(case.none_found_score, abs=1e-9)
    assert len(llm_server.chat_requests) == len(case.none_found)


def test_statement_based_scorers_have_an_edge_row() -> None:
    assert {case.name for case in STATEMENT_CASES} == {
        "answer-relevancy",
        "faithfulness",
        "hallucination",
        "bias",
        "toxicity",
        "context-recall",
        "ragas-answer-correctness",
        "ragas-context-recall",
        "ragas-context-entity-recall",
        "rubric",
        "summarization",
    }
