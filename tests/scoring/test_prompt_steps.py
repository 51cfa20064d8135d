"""Prompt-object steps (LLM judge) in the scorer pipeline and the executor, against the local server."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Literal

import pytest
from pydantic import BaseModel, SecretStr

from tests.support.llm_server import LLMServer, Reply, error_reply, json_reply, judge_at, text_reply
from tests.support.runs import agent_run
from tests.support.sinks import RecordingSink
from tracescore.schemas import AgentRun
from tracescore.schemas.config import JudgeConfig, ScorerRule, ScoringConfig
from tracescore.scoring import ScorerError, StepContext, create_scorer
from tracescore.scoring.framework.message_text import input_text, output_text
from tracescore.scoring.framework.prompt_step import PromptObject
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.judge import Judge, JudgeError, delimit
from tracescore.scoring.runtime.executor import ScoringExecutor
from tracescore.scoring.runtime.scoring_metrics import ScoringMetrics

MODEL = "openai/gpt-4o-mini"
GPT_4O_MINI_PRICE = (0.15e-6, 0.60e-6)  # published USD per input, output token


class Claims(BaseModel):
    claims: list[str]


class Verdict(BaseModel):
    claim: str
    verdict: Literal["yes", "no"]


class Verdicts(BaseModel):
    verdicts: list[Verdict]


def make_run(trace: int = 1, answer: str = "Paris is in France. It has 3 million people.") -> AgentRun:
    return agent_run(
        "Tell me about Paris", answer, agent_name="geo", trace_id=f"{trace:032x}", span_id=f"{trace:016x}"
    )


def judge_for(server: LLMServer, model: str = MODEL, **settings: Any) -> Judge:
    return judge_at(server, model, instructions="You check facts.", **settings)


def extract_prompt(ctx: StepContext) -> str:
    return "List the claims.\n" + delimit("answer", output_text(ctx.run))


async def analyze_prompt(ctx: StepContext) -> str:  # async create_prompt is allowed
    claims = ctx.results["preprocess_step_result"].claims
    return f"Question: {input_text(ctx.run)}\nJudge each claim:\n" + delimit("claims", json.dumps(claims))


def fraction_supported(ctx: StepContext) -> float:
    verdicts: list[Verdict] = ctx.results["analyze_step_result"].verdicts
    return sum(v.verdict == "yes" for v in verdicts) / len(verdicts)


def fact_scorer(judge: Judge) -> Scorer:
    return (
        create_scorer(id="facts", description="Share of supported claims", judge=judge)
        .preprocess(
            {"description": "Extract claims", "output_schema": Claims, "create_prompt": extract_prompt}
        )
        .analyze(PromptObject("Judge claims", analyze_prompt, output_schema=Verdicts))
        .generate_score(fraction_supported)
        .generate_reason(
            {"description": "Explain", "create_prompt": lambda ctx: f"Explain the score {ctx.score:.2f}."}
        )
    )


async def test_prompt_steps_end_to_end(llm_server: LLMServer) -> None:
    claims = ["Paris is in France", "Paris has 3 million people"]
    llm_server.script(
        json_reply({"claims": claims}, prompt_tokens=100, completion_tokens=20),
        json_reply(
            {"verdicts": [{"claim": claims[0], "verdict": "yes"}, {"claim": claims[1], "verdict": "no"}]},
            prompt_tokens=200,
            completion_tokens=40,
        ),
        text_reply("One of two claims holds.", prompt_tokens=50, completion_tokens=8),
    )
    run = make_run()
    result = await fact_scorer(judge_for(llm_server)).run(run)

    assert result.score == 0.5
    assert result.reason == "One of two claims holds."
    assert result.preprocess_step_result == Claims(claims=claims)
    assert [v.verdict for v in result.analyze_step_result.verdicts] == ["yes", "no"]
    stored = result.step_results()["analyze_step_result"]
    assert stored["verdicts"][1] == {"claim": claims[1], "verdict": "no"}
    # Each prompt the scorer built is recorded, and is exactly what the judge received.
    first, second, third = llm_server.chat_requests
    assert result.preprocess_prompt is not None and result.analyze_prompt is not None
    assert result.preprocess_prompt == first.messages[1]["content"]
    assert result.preprocess_prompt.startswith("List the claims.\n<data-")
    assert "Paris is in France. It has 3 million people." in result.preprocess_prompt
    assert result.analyze_prompt == second.messages[1]["content"]
    assert result.analyze_prompt.startswith("Question: Tell me about Paris\nJudge each claim:\n")
    assert json.dumps(claims) in result.analyze_prompt
    assert result.generate_score_prompt is None  # a function step
    assert result.generate_reason_prompt == third.messages[1]["content"] == "Explain the score 0.50."
    assert first.body["response_format"]["json_schema"]["name"] == "Claims"
    assert second.body["response_format"]["json_schema"]["name"] == "Verdicts"
    assert "response_format" not in third.body
    # Usage summed over the three judge calls.
    assert result.judge_model == MODEL
    assert (result.input_tokens, result.output_tokens) == (350, 68)
    assert result.cost_usd == pytest.approx(350 * GPT_4O_MINI_PRICE[0] + 68 * GPT_4O_MINI_PRICE[1])


async def test_generate_score_prompt_and_a_step_judge(llm_server: LLMServer) -> None:
    llm_server.script(json_reply({"score": 0.8}), text_reply("Mostly relevant."))
    scorer = (
        create_scorer(id="relevance", description="LLM relevance", judge=judge_for(llm_server))
        .generate_score(
            {
                "description": "Rate relevance",
                "create_prompt": lambda ctx: "Rate 0-1.\n" + delimit("answer", output_text(ctx.run)),
                "judge": judge_for(llm_server, "openai/other-judge"),
            }
        )
        .generate_reason(
            {"description": "Explain", "create_prompt": lambda ctx: f"Why {ctx.results['score']}?"}
        )
    )
    result = await scorer.run(make_run())

    assert (result.score, result.reason) == (0.8, "Mostly relevant.")
    assert result.generate_score_prompt is not None and result.generate_score_prompt.startswith("Rate 0-1.")
    assert result.generate_reason_prompt == "Why 0.8?"
    score_request, reason_request = llm_server.chat_requests
    assert score_request.body["model"] == "other-judge"  # the step's own judge
    assert score_request.body["response_format"] == {"type": "json_object"}  # unknown model: JSON mode
    assert '"score"' in score_request.messages[0]["content"]
    assert reason_request.body["model"] == "gpt-4o-mini"  # the scorer's judge
    assert result.judge_model == "openai/other-judge,openai/gpt-4o-mini"


async def test_generate_score_prompt_with_a_schema_and_calculate_score(llm_server: LLMServer) -> None:
    llm_server.script(
        json_reply(
            {
                "verdicts": [
                    {"claim": "Paris is in France", "verdict": "yes"},
                    {"claim": "It has 3 million people", "verdict": "no"},
                    {"claim": "It is a capital", "verdict": "yes"},
                ]
            }
        )
    )

    def calculate(ctx: StepContext) -> float:
        verdicts: list[Verdict] = ctx.results["generate_score_step_result"].verdicts
        return sum(v.verdict == "yes" for v in verdicts) / len(verdicts)

    scorer = create_scorer(id="faith", description="d", judge=judge_for(llm_server)).generate_score(
        {
            "description": "Judge each claim",
            "create_prompt": lambda ctx: "Judge each claim.\n" + delimit("answer", output_text(ctx.run)),
            "output_schema": Verdicts,
            "calculate_score": calculate,
        }
    )
    result = await scorer.run(make_run())
    assert result.score == 2 / 3
    assert result.generate_score_prompt is not None and result.generate_score_prompt.startswith("Judge each")
    [request] = llm_server.chat_requests
    assert request.body["response_format"]["type"] == "json_schema"  # gpt-4o-mini takes a schema


async def test_a_judge_failure_is_a_scorer_error_naming_the_step(llm_server: LLMServer) -> None:
    llm_server.script(json_reply({"claims": ["x"]}), error_reply(400))
    with pytest.raises(ScorerError, match="step 'analyze'") as caught:
        await fact_scorer(judge_for(llm_server)).run(make_run())
    assert str(caught.value) == (
        "scorer 'facts', step 'analyze': judge 'openai/gpt-4o-mini' failed: 400 bad request "
        "(BadRequestError: OpenAIException - scripted 400)"
    )
    assert isinstance(caught.value.__cause__, JudgeError) and not caught.value.retriable


async def test_a_generate_score_answer_without_a_number_fails(llm_server: LLMServer) -> None:
    llm_server.script(json_reply({"score": "high"}), json_reply({"verdict": "high"}))
    scorer = create_scorer(id="s", description="d", judge=judge_for(llm_server)).generate_score(
        {"description": "Rate", "create_prompt": lambda ctx: "Rate."}
    )
    with pytest.raises(ScorerError, match="generate_score.*invalid JSON twice"):
        await scorer.run(make_run())


def test_prompt_objects_are_checked_when_the_scorer_is_built() -> None:
    judge = Judge("openai/x")
    base = create_scorer(id="s", description="d", judge=judge)
    with pytest.raises(ValueError, match="output_schema"):
        base.analyze({"description": "a", "create_prompt": lambda ctx: "p"})
    with pytest.raises(ValueError, match="needs calculate_score"):
        base.generate_score({"description": "a", "create_prompt": lambda ctx: "p", "output_schema": Claims})
    with pytest.raises(ValueError, match="needs calculate_score"):
        base.generate_score({"description": "a", "create_prompt": lambda ctx: "p", "calculate_score": len})
    with pytest.raises(ValueError, match="generate_score only"):
        base.analyze(
            {
                "description": "a",
                "create_prompt": lambda ctx: "p",
                "output_schema": Claims,
                "calculate_score": len,
            }
        )
    with pytest.raises(ValueError, match="no output_schema"):
        base.generate_reason({"description": "a", "create_prompt": lambda ctx: "p", "output_schema": Claims})
    with pytest.raises(ValueError, match="unknown prompt object keys"):
        base.analyze({"description": "a", "createPrompt": lambda ctx: "p", "output_schema": Claims})
    with pytest.raises(ValueError, match="needs a judge"):
        create_scorer(id="s", description="d").generate_reason({"description": "a", "create_prompt": str})
    with pytest.raises(TypeError, match="function or a prompt object"):
        base.analyze(42)  # type: ignore[arg-type]


async def test_executor_records_judge_usage_and_fails_without_a_score(llm_server: LLMServer) -> None:
    def respond(body: dict[str, Any]) -> Reply:
        # The run whose answer mentions Lyon meets a broken judge; the other gets a score.
        if "Lyon" in body["messages"][1]["content"]:
            return error_reply(500)
        return json_reply({"score": 0.9}, prompt_tokens=40, completion_tokens=5)

    llm_server.responder = respond
    scorer = create_scorer(
        id="llm-relevance", description="d", judge=judge_for(llm_server, max_retries=1)
    ).generate_score(
        {"description": "Rate", "create_prompt": lambda ctx: delimit("answer", output_text(ctx.run))}
    )
    sink = RecordingSink()
    metrics = ScoringMetrics()
    # The judge stays broken: with no waiting for it (retry_max_age 0), the run fails at once.
    config = ScoringConfig(
        rules=[ScorerRule(scorer="llm")], concurrency=2, timeout_seconds=10, retry_max_age_seconds=0
    )
    executor = ScoringExecutor(config, sink, metrics, registry={"llm": lambda: scorer})
    await executor.start()
    try:
        await executor.consume_runs([make_run(1), make_run(2, answer="Lyon is in France.")])
        await executor.drain()
    finally:
        await executor.shutdown()

    decisions = {d.trace_id: d for d in sink.decisions}
    assert decisions[f"{1:032x}"].decision == "scored"
    failed = decisions[f"{2:032x}"]
    assert failed.decision == "failed"
    assert "step 'generate_score'" in failed.detail and "InternalServerError" in failed.detail
    [record] = sink.records
    assert record.trace_id == f"{1:032x}" and record.score == 0.9
    assert (record.judge_model, record.input_tokens, record.output_tokens) == (MODEL, 40, 5)
    assert record.cost_usd == pytest.approx(40 * GPT_4O_MINI_PRICE[0] + 5 * GPT_4O_MINI_PRICE[1])
    # The failing run's judge was asked twice (max_retries=1); the other once.
    assert len(llm_server.chat_requests) == 3

    # Spend is counted in metrics by outcome; the failed run's calls were never answered.
    def sample(name: str, **labels: str) -> float | None:
        return metrics.registry.get_sample_value(name, {"scorer": "llm-relevance", **labels})

    assert sample("tracescore_judge_tokens_total", outcome="scored", direction="input") == 40
    assert sample("tracescore_judge_tokens_total", outcome="scored", direction="output") == 5
    assert sample("tracescore_judge_cost_usd_total", outcome="scored") == pytest.approx(record.cost_usd)
    assert sample("tracescore_judge_tokens_total", outcome="failed", direction="input") is None


async def test_a_failed_run_still_counts_the_judge_calls_it_paid_for(llm_server: LLMServer) -> None:
    # The judge answers the preprocess step; its analyze answer is invalid twice, so the run fails.
    llm_server.script(
        json_reply({"claims": ["Paris is in France."]}, prompt_tokens=30, completion_tokens=4),
        text_reply("not json", prompt_tokens=50, completion_tokens=3),
        text_reply("still not json", prompt_tokens=60, completion_tokens=3),
    )
    sink = RecordingSink()
    metrics = ScoringMetrics()
    executor = ScoringExecutor(
        ScoringConfig(rules=[ScorerRule(scorer="claims")], timeout_seconds=10),
        sink,
        metrics,
        registry={"claims": lambda: fact_scorer(judge_for(llm_server))},
    )
    await executor.start()
    try:
        await executor.consume_runs([make_run(3)])
        await executor.drain()
    finally:
        await executor.shutdown()
    [decision] = sink.decisions
    assert decision.decision == "failed" and "invalid JSON twice" in decision.detail
    assert sink.records == []
    labels = {"scorer": "facts", "outcome": "failed"}
    tokens = metrics.registry.get_sample_value
    assert tokens("tracescore_judge_tokens_total", {**labels, "direction": "input"}) == 140
    assert tokens("tracescore_judge_tokens_total", {**labels, "direction": "output"}) == 10


async def test_judge_calls_in_a_steps_own_code_are_counted(llm_server: LLMServer) -> None:
    judge = judge_for(llm_server)

    async def verify_each(ctx: StepContext) -> list[str]:
        # Calls made by the step's code (one per sentence), not by a prompt object.
        sentences = [s for s in output_text(ctx.run).split(".") if s.strip()]
        answers = [await judge.structured(delimit("claim", s), Verdict) for s in sentences]
        vectors = await judge.embed(sentences, "openai/test-embed")
        assert len(vectors) == len(sentences)
        return [a.value.verdict for a in answers]

    llm_server.script(
        json_reply({"claim": "a", "verdict": "yes"}, prompt_tokens=20, completion_tokens=2),
        json_reply({"claim": "b", "verdict": "no"}, prompt_tokens=30, completion_tokens=3),
        json_reply({"score": 0.5}, prompt_tokens=7, completion_tokens=1),
    )
    scorer = (
        create_scorer(id="own-code", description="d", judge=judge)
        .analyze(verify_each)
        .generate_score({"description": "Rate", "create_prompt": lambda ctx: "rate"})
    )
    result = await scorer.run(make_run())
    assert result.analyze_step_result == ["yes", "no"]
    # Two verdicts, the embedding call (one token per word: "Paris is in France", " It has 3
    # million people" -> 4 + 5) and the score prompt.
    assert result.input_tokens == 20 + 30 + 9 + 7
    assert result.output_tokens == 2 + 3 + 1
    assert result.judge_model == f"{MODEL},openai/test-embed"


async def test_judge_calls_of_a_coroutine_a_sync_step_hands_back_are_counted(llm_server: LLMServer) -> None:
    judge = judge_for(llm_server)

    def verify(ctx: StepContext) -> Any:  # sync: hands back its judge call's coroutine
        return judge.structured(delimit("claim", output_text(ctx.run)), Verdict)

    scorer = create_scorer(id="handed", description="d").analyze(verify).generate_score(lambda ctx: 1.0)
    # The first run tries the step in a thread; measured cheap, the second calls it right on the loop.
    for _ in range(2):
        llm_server.script(json_reply({"claim": "a", "verdict": "yes"}, prompt_tokens=11, completion_tokens=2))
        result = await scorer.run(make_run())
        assert (result.judge_model, result.input_tokens, result.output_tokens) == (MODEL, 11, 2)


async def test_one_scorer_instance_scores_many_runs_concurrently(llm_server: LLMServer) -> None:
    # Run n's answer has n true sentences ("Paris ...") and one false one ("Lyon ..."); the judge
    # answers by content, with a delay so that every run's calls interleave with the others'.
    def respond(body: dict[str, Any]) -> Reply:
        prompt = body["messages"][1]["content"]
        if prompt.startswith("List the claims."):
            answer = prompt.split("\n")[2]  # the delimited answer's line
            claims = [c.strip() for c in answer.split(".") if c.strip()]
            return json_reply({"claims": claims}, delay_s=0.05, prompt_tokens=len(claims))
        if prompt.startswith("Question:"):
            claims = json.loads(prompt.split("\n")[3])
            verdicts = [{"claim": c, "verdict": "yes" if "Paris" in c else "no"} for c in claims]
            return json_reply({"verdicts": verdicts}, delay_s=0.05, prompt_tokens=len(claims))
        return text_reply(prompt, prompt_tokens=1)  # the reason echoes its own prompt

    llm_server.responder = respond
    scorer = fact_scorer(judge_for(llm_server))
    runs = [
        make_run(n, answer=" ".join([f"Paris fact {i}." for i in range(n)] + ["Lyon is the capital."]))
        for n in range(1, 7)
    ]
    results = await asyncio.gather(*(scorer.run(run) for run in runs))
    for n, (run, result) in enumerate(zip(runs, results, strict=True), start=1):
        assert result.run_id == run.run_id
        assert result.score == pytest.approx(n / (n + 1))  # n supported claims out of n + 1
        assert result.reason == f"Explain the score {n / (n + 1):.2f}."
        # Each run's usage is its own: n + 1 claims counted twice, plus the reason's one token.
        assert result.input_tokens == 2 * (n + 1) + 1


async def test_the_configured_judge_serves_rules_that_name_none(llm_server: LLMServer) -> None:
    # Toxicity has no judge option of its own: it gets scoring.judge. Bias names its own model.
    llm_server.responder = lambda body: (
        json_reply({"verdicts": [{"verdict": "no", "reason": "calm"}]})
        if "verdicts" in json.dumps(body.get("response_format", {}))
        else json_reply({"opinions": []})
        if "Opinions" in json.dumps(body.get("response_format", {}))
        else json_reply({"results": []})
        if "response_format" in body
        else text_reply("fine")
    )
    own_judge = {"model": "openai/gpt-4o", "api_base": llm_server.api_base, "api_key": "test-key"}
    config = ScoringConfig(
        rules=[ScorerRule(scorer="toxicity"), ScorerRule(scorer="bias", options={"judge": own_judge})],
        judge=JudgeConfig(
            model=MODEL, api_base=llm_server.api_base, api_key=SecretStr("test-key"), max_retries=0
        ),
    )
    sink = RecordingSink()
    executor = ScoringExecutor(config, sink, ScoringMetrics())
    await executor.start()
    try:
        await executor.consume_runs([make_run(5)])
        await executor.drain()
    finally:
        await executor.shutdown()
    by_scorer = {r.scorer_id: r for r in sink.records}
    assert by_scorer["toxicity"].score == 0.0  # one verdict, not toxic
    assert by_scorer["toxicity"].judge_model == MODEL
    assert by_scorer["bias"].judge_model == "openai/gpt-4o"
    assert {r.body["model"] for r in llm_server.chat_requests} == {"gpt-4o-mini", "gpt-4o"}


def test_an_llm_rule_without_any_judge_is_refused_at_start() -> None:
    config = ScoringConfig(rules=[ScorerRule(scorer="toxicity")])
    with pytest.raises(ValueError, match=r"scoring\.rules\[0\] \(toxicity\): .* asks an LLM judge"):
        ScoringExecutor(config, RecordingSink(), ScoringMetrics())
