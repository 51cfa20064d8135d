"""End to end for the retrieval-context (RAG) scorers: spans in, judged score rows out.

An OpenInference AGENT span with a RETRIEVER child is sent with the real OpenTelemetry SDK and OTLP
gRPC exporter; the service stores it in chDB, assembles the run (its ``context`` is the retrieved
documents), and scores it with Mastra's context scorers and the RAGAS-style ones, whose judge is
litellm talking HTTP to the local test server. Live traces carry no ground truth, so the ground-truth
scorer among them (RAGAS context recall) is skipped without a judge call. The judge's answers are
scripted per scorer, so every expected score, token count and cost below is worked out by hand from
those answers.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from prometheus_client.parser import text_string_to_metric_families

from tests.support.llm_server import LLMServer, Reply, error_reply, json_reply, text_reply
from tests.support.service import running_service, service_config
from tracescore.ingest.service import Service

QUESTION = "When are Paris trips rescheduled?"  # 5 whitespace words
ANSWER = "Paris trips are rescheduled when rain exceeds 10mm."
DOCUMENTS = (
    "Paris trips are rescheduled when rain exceeds 10mm.",
    "Lyon trips include a museum pass.",
    "Rescheduled trips keep their original price.",
)
# The questions the answer-relevancy judge "generates" (6 and 7 whitespace words).
GENERATED = ("When is a Paris trip rescheduled?", "How much rain cancels a Paris trip?")

JUDGE_MODEL = "openai/gpt-4o-mini"
EMBEDDING_MODEL = "openai/text-embedding-3-small"
GPT_4O_MINI_PRICE = (0.15e-6, 0.60e-6)  # published USD per input, output token
EMBEDDING_PRICE = 0.02e-6  # text-embedding-3-small, published USD per input token
# Every chat answer of the test server reports 11 prompt and 7 completion tokens.
CHAT_CALL_COST = 11 * GPT_4O_MINI_PRICE[0] + 7 * GPT_4O_MINI_PRICE[1]

# Each scorer's judge instructions (its system message) -> the id its rows are stored under.
SCORER_OF_INSTRUCTIONS = {
    "You are a precise context precision evaluator": "context-precision",
    "You are an expert context relevance evaluator": "context-relevance",
    "You evaluate if context was useful for arriving at the answer": "ragas-context-precision",
    "You evaluate how well provided context supports factual statements": "ragas-context-recall",
    "You generate questions from answers to evaluate relevancy": "ragas-answer-relevancy",
}
# Context relevancy has no instructions of its own: its user prompt tells it apart.
SCORER_OF_PROMPT = {
    "Extract the sentences from the context that are most relevant": "ragas-context-relevancy"
}
# The scorers that score a run with retrieved context (context recall needs a ground truth too).
SCORED = {
    "context-precision",
    "context-relevance",
    "ragas-context-precision",
    "ragas-context-relevancy",
    "ragas-answer-relevancy",
}
CONTEXT_SCORERS = SCORED - {"ragas-answer-relevancy"}


def _scorer_of(body: Mapping[str, Any]) -> str | None:
    system, prompt = (str(message["content"]) for message in body["messages"][:2])
    by_system = (sid for marker, sid in SCORER_OF_INSTRUCTIONS.items() if marker in system)
    by_prompt = (sid for marker, sid in SCORER_OF_PROMPT.items() if marker in prompt)
    return next(by_prompt, None) or next(by_system, None)


def _scripted_judge(replies: dict[str, list[Reply]]) -> Callable[[dict[str, Any]], Reply]:
    """A responder answering each scorer's calls from its own queue: the five scorers run
    concurrently, but each one's calls are sequential, so per-scorer order is deterministic."""
    queues = {scorer_id: deque(queue) for scorer_id, queue in replies.items()}

    def respond(body: dict[str, Any]) -> Reply:
        queue = queues.get(_scorer_of(body) or "")
        if not queue:
            return Reply(status=418, content=f"no scripted reply for {_scorer_of(body)}")
        return queue.popleft()

    return respond


def _rag_replies() -> dict[str, list[Reply]]:
    return {
        "context-precision": [
            json_reply(
                {
                    "verdicts": [
                        {"context_index": 0, "verdict": "yes", "reason": "states the rule"},
                        {"context_index": 1, "verdict": "no", "reason": "about Lyon"},
                        {"context_index": 2, "verdict": "yes", "reason": "about rescheduling"},
                    ]
                }
            ),
            text_reply("The score is 0.83 because the relevant pieces come first and third."),
        ],
        "context-relevance": [
            json_reply(
                {
                    "evaluations": [
                        {
                            "context_index": i,
                            "contextPiece": DOCUMENTS[i],
                            "relevanceLevel": level,
                            "wasUsed": used,
                            "reasoning": "scripted",
                        }
                        for i, (level, used) in enumerate([("high", True), ("high", False), ("medium", True)])
                    ],
                    "missingContext": ["how rain is measured"],
                    "overallAssessment": "mostly relevant",
                }
            ),
            text_reply("The score is 0.65 because one relevant piece went unused and one fact is missing."),
        ],
        "ragas-context-precision": [
            json_reply({"reason": "the first document states the rule", "verdict": 1})
        ],
        "ragas-context-relevancy": [
            json_reply({"sentences": [{"sentence": DOCUMENTS[0], "reasons": ["states the rule"]}]}),
        ],
        "ragas-answer-relevancy": _answer_relevancy_replies(),
    }


def _answer_relevancy_replies() -> list[Reply]:
    return [json_reply({"question": q, "noncommittal": 0}) for q in GENERATED]


def _judge(server: LLMServer) -> dict[str, Any]:
    # One retry, quickly: an outage must fail the scorer within the test's time.
    return {
        "model": JUDGE_MODEL,
        "api_base": server.api_base,
        "api_key": "test-key",
        "max_retries": 1,
        "backoff_initial_s": 0.01,
        "timeout_s": 10,
    }


def _rules(server: LLMServer) -> list[dict[str, Any]]:
    judge = _judge(server)
    return [
        {"scorer": "context-precision", "options": {"judge": judge}},
        {"scorer": "context-relevance", "options": {"judge": judge}},
        {"scorer": "ragas-context-precision", "options": {"judge": judge}},
        {"scorer": "ragas-context-relevancy", "options": {"judge": judge}},
        {"scorer": "ragas-context-recall", "options": {"judge": judge}},
        {
            "scorer": "ragas-answer-relevancy",
            "options": {"judge": judge, "strictness": 2, "embedding_model": EMBEDDING_MODEL},
        },
    ]


@pytest.fixture
async def service(tmp_path: Path, llm_server: LLMServer) -> AsyncIterator[Service]:
    config = service_config(
        tmp_path,
        **{
            "scoring.rules": _rules(llm_server),
            "scoring.retry_max_age_seconds": 0,  # an outage fails the scorer at once here
        },
    )
    async with running_service(config) as svc:
        yield svc


async def _send_trace(service: Service, with_retrieval: bool) -> tuple[str, str]:
    """Emit one agent run over OTLP gRPC; returns its (trace id, root span id)."""
    provider = TracerProvider(resource=Resource.create({"service.name": "rag-e2e"}))
    provider.add_span_processor(
        SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"127.0.0.1:{service.grpc.port}", insecure=True))
    )
    tracer = provider.get_tracer("e2e")

    def emit() -> tuple[str, str]:
        agent_attributes = {
            "openinference.span.kind": "AGENT",
            "agent.name": "policy_agent",
            "input.value": QUESTION,
            "output.value": ANSWER,
        }
        with tracer.start_as_current_span("policy_agent", attributes=agent_attributes) as agent:
            if with_retrieval:
                documents = {
                    f"retrieval.documents.{i}.document.content": text for i, text in enumerate(DOCUMENTS)
                }
                retriever = {"openinference.span.kind": "RETRIEVER", "input.value": QUESTION, **documents}
                with tracer.start_as_current_span("retrieve", attributes=retriever):
                    pass
            context = agent.get_span_context()
            return format(context.trace_id, "032x"), format(context.span_id, "016x")

    # SimpleSpanProcessor exports inside span.end(): emit off the event loop the service runs on.
    ids = await asyncio.to_thread(emit)
    await asyncio.to_thread(provider.shutdown)
    return ids


async def _wait_decisions(service: Service, trace_id: str, count: int) -> dict[str, dict[str, Any]]:
    deadline = time.monotonic() + 20
    while len(decisions := await service.scores.trace_decisions(trace_id)) < count:
        assert time.monotonic() < deadline, decisions
        await asyncio.sleep(0.1)
    return {d["scorer_id"]: d for d in decisions}


async def _api_scores(service: Service, trace_id: str) -> dict[str, dict[str, Any]]:
    url = f"http://127.0.0.1:{service.http.port}/api/scores"
    async with aiohttp.ClientSession() as http, http.get(url, params={"trace_id": trace_id}) as resp:
        assert resp.status == 200, await resp.text()
        rows = await resp.json()
    return {row["scorer_id"]: row for row in rows}


def _calls_by_scorer(server: LLMServer) -> dict[str | None, list[str]]:
    """The user prompt of every chat request, grouped by the scorer whose instructions it carried."""
    calls: dict[str | None, list[str]] = {}
    for request in server.chat_requests:
        calls.setdefault(_scorer_of(request.body), []).append(str(request.messages[-1]["content"]))
    return calls


async def test_rag_scorers_judge_the_retrieved_documents_end_to_end(
    service: Service, llm_server: LLMServer
) -> None:
    llm_server.responder = _scripted_judge(_rag_replies())
    llm_server.vectors[QUESTION] = [1.0, 0.0, 0.0]
    llm_server.vectors[GENERATED[0]] = [1.0, 0.0, 0.0]  # cosine 1 with the question
    llm_server.vectors[GENERATED[1]] = [0.8, 0.6, 0.0]  # cosine 0.8 with the question

    trace_id, root_span_id = await _send_trace(service, with_retrieval=True)
    decisions = await _wait_decisions(service, trace_id, 6)
    assert {sid: d["decision"] for sid, d in decisions.items()} == {
        **dict.fromkeys(SCORED, "scored"),
        "ragas-context-recall": "skipped_empty",
    }, decisions
    assert decisions["ragas-context-recall"]["detail"] == "run has no ground truth"
    rows = await _api_scores(service, trace_id)

    # Mastra MAP over verdicts yes, no, yes: (1/1 + 2/3) / 2 = 0.8333 -> 0.83.
    assert rows["context-precision"]["score"] == 0.83
    # base (high 1 + high 1 + medium 0.7) / 3 = 0.9, minus 0.1 for the unused high piece, minus 0.15
    # for one missing item: 0.65.
    assert rows["context-relevance"]["score"] == 0.65
    assert rows["ragas-context-precision"]["score"] == 1.0  # verdict 1 >= threshold 0.5
    # The picked sentence's 51 characters of the context's 138 (its JSON text: 51 + 33 + 44
    # characters, 6 quotes, 2 commas, 2 brackets).
    assert rows["ragas-context-relevancy"]["score"] == pytest.approx(51 / 138)
    # Scaled cosine max((cos - 0.7) / 0.3, 0): 1.0 and 1/3 for the two questions; their mean is 2/3.
    assert rows["ragas-answer-relevancy"]["score"] == pytest.approx(0.6666666666666666)

    # Usage of every judge call a scorer made: analyze + reason (2 calls), 1 call, 1 call, 2 generated
    # questions plus one embeddings call of 5 + 6 + 7 = 18 words.
    chat_calls = {
        "context-precision": 2,
        "context-relevance": 2,
        "ragas-context-precision": 1,
        "ragas-context-relevancy": 1,
        "ragas-answer-relevancy": 2,
    }
    for scorer_id, chat_count in chat_calls.items():
        row = rows[scorer_id]
        embedded = 18 if scorer_id == "ragas-answer-relevancy" else 0
        assert row["input_tokens"] == 11 * chat_count + embedded, scorer_id
        assert row["output_tokens"] == 7 * chat_count, scorer_id
        cost = chat_count * CHAT_CALL_COST + embedded * EMBEDDING_PRICE
        assert row["cost_usd"] == pytest.approx(cost), scorer_id
        expected_model = f"{JUDGE_MODEL},{EMBEDDING_MODEL}" if embedded else JUDGE_MODEL
        assert row["judge_model"] == expected_model, scorer_id
        assert (row["span_id"], row["agent_name"], row["service_name"], row["source"]) == (
            root_span_id,
            "policy_agent",
            "rag-e2e",
            "live",
        )
    assert rows["ragas-context-precision"]["reason"] == "the first document states the rule"
    assert "ragas-context-recall" not in rows

    # The retrieved documents reached the judge: numbered for Mastra, joined for RAGAS.
    calls = _calls_by_scorer(llm_server)
    assert {scorer: len(prompts) for scorer, prompts in calls.items()} == chat_calls
    for i, text in enumerate(DOCUMENTS):
        assert f"[{i}] {text}" in calls["context-precision"][0]
        assert f"[{i}] {text}" in calls["context-relevance"][0]
    assert "\n".join(DOCUMENTS) in calls["ragas-context-precision"][0]
    assert '","'.join(DOCUMENTS) in calls["ragas-context-relevancy"][0]  # the context as its JSON text
    embeddings = [r.body["input"] for r in llm_server.requests if r.path.endswith("/embeddings")]
    assert embeddings == [[QUESTION, *GENERATED]]

    # The scores as GenAI evaluation attributes of the run's root span.
    [span] = await service.store.query(
        "SELECT SpanAttributes FROM otel_traces_scored WHERE TraceId = {t:String} AND SpanId = {s:String}",
        {"t": trace_id, "s": root_span_id},
    )
    attributes = span["SpanAttributes"]
    assert attributes["gen_ai.evaluation.context-precision.score"] == "0.83"
    assert attributes["gen_ai.evaluation.context-relevance.score"] == "0.65"
    assert attributes["gen_ai.evaluation.ragas-context-precision.score"] == "1"
    assert float(attributes["gen_ai.evaluation.ragas-context-relevancy.score"]) == pytest.approx(51 / 138)
    assert "gen_ai.evaluation.ragas-context-recall.score" not in attributes
    assert float(attributes["gen_ai.evaluation.ragas-answer-relevancy.score"]) == pytest.approx(
        0.6666666666666666
    )
    explanation = attributes["gen_ai.evaluation.ragas-context-precision.explanation"]
    assert explanation == "the first document states the rule"
    assert attributes["openinference.span.kind"] == "AGENT"  # the span's own attributes stay


async def test_run_without_retrieval_skips_the_context_scorers_without_judging(
    service: Service, llm_server: LLMServer
) -> None:
    # Only answer relevancy (it reads input and output, not context) has answers scripted: any
    # call from a context scorer would get a 418 and show up as a failed decision.
    llm_server.responder = _scripted_judge({"ragas-answer-relevancy": _answer_relevancy_replies()})
    llm_server.vectors[QUESTION] = [1.0, 0.0, 0.0]
    llm_server.vectors[GENERATED[0]] = [1.0, 0.0, 0.0]
    llm_server.vectors[GENERATED[1]] = [1.0, 0.0, 0.0]

    trace_id, _ = await _send_trace(service, with_retrieval=False)
    decisions = await _wait_decisions(service, trace_id, 6)
    assert {sid: d["decision"] for sid, d in decisions.items()} == {
        **dict.fromkeys(CONTEXT_SCORERS | {"ragas-context-recall"}, "skipped_empty"),
        "ragas-answer-relevancy": "scored",
    }
    assert all(decisions[sid]["detail"] == "run has no context text" for sid in CONTEXT_SCORERS)
    assert decisions["ragas-context-recall"]["detail"] == "run has no context text and no ground truth"

    rows = await _api_scores(service, trace_id)
    assert set(rows) == {"ragas-answer-relevancy"}
    assert rows["ragas-answer-relevancy"]["score"] == 1.0  # both questions have cosine 1 with the input
    assert {scorer: len(prompts) for scorer, prompts in _calls_by_scorer(llm_server).items()} == {
        "ragas-answer-relevancy": 2
    }


async def test_judge_outage_fails_one_scorer_and_the_others_are_stored(
    service: Service, llm_server: LLMServer
) -> None:
    replies = _rag_replies()
    # Context relevance's judge is down: its first call and the one retry are answered 500.
    replies["context-relevance"] = [error_reply(500), error_reply(500)]
    llm_server.responder = _scripted_judge(replies)

    trace_id, _ = await _send_trace(service, with_retrieval=True)
    decisions = await _wait_decisions(service, trace_id, 6)
    assert decisions["context-relevance"]["decision"] == "failed"
    assert "step 'analyze'" in decisions["context-relevance"]["detail"]
    assert "after 2 attempt(s)" in decisions["context-relevance"]["detail"]
    others = SCORED - {"context-relevance"}
    assert {sid: decisions[sid]["decision"] for sid in others} == dict.fromkeys(others, "scored")

    rows = await _api_scores(service, trace_id)
    assert set(rows) == others
    assert rows["context-precision"]["score"] == 0.83  # as in the scripted run above
    assert len(_calls_by_scorer(llm_server)["context-relevance"]) == 2

    async with (
        aiohttp.ClientSession() as http,
        http.get(f"http://127.0.0.1:{service.http.port}/metrics") as resp,
    ):
        assert resp.status == 200
        exposition = await resp.text()
    tokens = {
        (s.labels["scorer"], s.labels["outcome"], s.labels["direction"]): s.value
        for family in text_string_to_metric_families(exposition)
        if family.name == "tracescore_judge_tokens"
        for s in family.samples
        if s.name == "tracescore_judge_tokens_total"
    }
    # The same per-run usage as the score rows: 11 / 7 tokens per chat call, 18 embedded words.
    assert tokens == {
        ("context-precision", "scored", "input"): 22.0,
        ("context-precision", "scored", "output"): 14.0,
        ("ragas-context-precision", "scored", "input"): 11.0,
        ("ragas-context-precision", "scored", "output"): 7.0,
        ("ragas-context-relevancy", "scored", "input"): 11.0,
        ("ragas-context-relevancy", "scored", "output"): 7.0,
        ("ragas-answer-relevancy", "scored", "input"): 40.0,
        ("ragas-answer-relevancy", "scored", "output"): 14.0,
    }  # no answered call for the failed scorer, so no sample for it
