"""Judge credentials and refusals over the real litellm HTTP path, against the local OpenAI-compatible
server: which key a call carries, and what a refused or missing key leaves (one attempt, a message
naming the variable to set, no waiting for a judge that will never accept)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from pydantic import BaseModel, SecretStr

from tests.support.llm_server import JUDGE_MODEL, LLMServer, Reply, error_reply, json_reply, text_reply
from tests.support.runs import agent_run
from tests.support.sinks import RecordingSink
from tracescore.schemas.config import JudgeConfig, ScorerRule, ScoringConfig
from tracescore.scoring.judge import Judge, JudgeError
from tracescore.scoring.judge.api_keys import NO_KEY
from tracescore.scoring.prebuilt.registry import build_scorer
from tracescore.scoring.runtime.executor import ScoringExecutor
from tracescore.scoring.runtime.scoring_metrics import ScoringMetrics


class Answer(BaseModel):
    score: float


@pytest.fixture(autouse=True)
def no_provider_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """No provider variable, as on a fresh machine: only what the test configures is sent."""
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "TRACESCORE_JUDGE_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (
            401,
            "judge 'openai/gpt-4o-mini' failed: 401 authentication failed — set TRACESCORE_JUDGE_API_KEY "
            "or OPENAI_API_KEY (AuthenticationError: OpenAIException - Incorrect API key provided.)",
        ),
        (
            403,
            "judge 'openai/gpt-4o-mini' failed: 403 permission denied — check that the judge's key may use "
            "openai/gpt-4o-mini (APIError: OpenAIException - Incorrect API key provided.)",
        ),
        (
            404,
            "judge 'openai/gpt-4o-mini' failed: 404 not found — check the model name 'openai/gpt-4o-mini' "
            "and the judge's api_base (NotFoundError: OpenAIException - Incorrect API key provided.)",
        ),
        (
            400,
            "judge 'openai/gpt-4o-mini' failed: 400 bad request "
            "(BadRequestError: OpenAIException - Incorrect API key provided.)",
        ),
    ],
)
async def test_a_refusal_is_tried_once_and_says_what_to_fix(
    llm_server: LLMServer, status: int, message: str
) -> None:
    llm_server.script(*[error_reply(status, content="Incorrect API key provided.")] * 4)
    judge = Judge(JUDGE_MODEL, api_base=llm_server.api_base, api_key="sk-wrong-000", max_retries=3)
    with pytest.raises(JudgeError) as caught:
        await judge.structured("Rate it.", Answer)
    assert len(llm_server.chat_requests) == 1  # no backoff, no retries
    assert (str(caught.value), caught.value.retriable, caught.value.attempts) == (message, False, 1)


async def test_a_local_endpoint_needs_no_key(llm_server: LLMServer) -> None:
    # No key configured and OPENAI_API_KEY unset: the OpenAI client would refuse to send the request;
    # a placeholder goes instead, which a local server ignores.
    llm_server.script(json_reply({"score": 0.5}), text_reply("fine"))
    judge = Judge(JUDGE_MODEL, api_base=llm_server.api_base)
    assert (await judge.structured("Rate it.", Answer)).value == Answer(score=0.5)
    assert (await judge.text("Why?")).value == "fine"
    assert [r.authorization for r in llm_server.chat_requests] == [f"Bearer {NO_KEY}"] * 2


async def test_a_local_endpoint_that_wants_a_key_says_none_was_configured(llm_server: LLMServer) -> None:
    llm_server.script(error_reply(401))
    with pytest.raises(JudgeError) as caught:
        await Judge(JUDGE_MODEL, api_base=llm_server.api_base).structured("Rate it.", Answer)
    assert str(caught.value) == (
        "judge 'openai/gpt-4o-mini' failed: 401 authentication failed (no API key was configured) — "
        "set TRACESCORE_JUDGE_API_KEY or OPENAI_API_KEY (AuthenticationError: OpenAIException - scripted 401)"
    )


async def test_the_providers_variable_is_sent_when_the_judge_has_no_key(
    llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    llm_server.script(json_reply({"score": 1}))
    await Judge(JUDGE_MODEL, api_base=llm_server.api_base).structured("Rate it.", Answer)
    assert llm_server.chat_requests[0].authorization == "Bearer sk-from-the-environment"


@pytest.mark.parametrize(
    ("model", "variable"),
    [("openai/gpt-4o-mini", "OPENAI_API_KEY"), ("anthropic/claude-3-5-haiku-latest", "ANTHROPIC_API_KEY")],
)
async def test_no_key_for_a_provider_fails_at_once_naming_its_variable(model: str, variable: str) -> None:
    # Nothing is sent: litellm refuses before any request (openai reports it as a 500, which must not
    # be taken for an outage and retried).
    with pytest.raises(JudgeError) as caught:
        await Judge(model, max_retries=3, backoff_initial_s=5.0).structured("Rate it.", Answer)
    assert str(caught.value).startswith(
        f"judge {model!r} failed: no API key — set TRACESCORE_JUDGE_API_KEY or {variable} ("
    )
    assert (caught.value.retriable, caught.value.attempts, caught.value.kind) == (False, 1, "auth")


async def test_a_refused_key_fails_the_run_at_once_with_one_warning_and_no_score(
    llm_server: LLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    llm_server.responder = lambda body: error_reply(401)
    judge = JudgeConfig(model=JUDGE_MODEL, api_base=llm_server.api_base, api_key=SecretStr("sk-wrong-000"))
    # An hour of waiting for the judge is allowed (the default): a 401 must not use any of it.
    config = ScoringConfig(rules=[ScorerRule(scorer="toxicity", name="polite")], judge=judge)
    sink = RecordingSink()
    executor = ScoringExecutor(config, sink, ScoringMetrics())
    run = agent_run("Is it raining?", "Yes, it is.")
    await executor.start()
    try:
        with caplog.at_level(logging.WARNING, logger="tracescore.scoring"):
            await executor.consume_runs([run])
            await executor.drain()
        assert executor.waiting_for_judge == 0
    finally:
        await executor.shutdown()
    [decision] = sink.decisions
    assert (decision.decision, sink.records) == ("failed", [])
    assert decision.detail.startswith(
        "scorer 'toxicity', step 'analyze': judge 'openai/gpt-4o-mini' failed: 401 authentication "
        "failed — set TRACESCORE_JUDGE_API_KEY or OPENAI_API_KEY"
    )
    assert len(llm_server.chat_requests) == 1
    assert caplog.messages == [
        f"rule polite (scorer toxicity) failed on trace {run.trace_id} span {run.span_id}: "
        "step 'analyze': judge 'openai/gpt-4o-mini' failed: 401 authentication failed — set "
        "TRACESCORE_JUDGE_API_KEY or OPENAI_API_KEY (AuthenticationError: OpenAIException - scripted 401)"
    ]  # nothing from the circuit breaker either: a refusal opens no circuit


async def test_the_configured_key_reaches_rules_naming_their_own_judge(llm_server: LLMServer) -> None:
    def respond(body: dict[str, Any]) -> Reply:
        schema = json.dumps(body.get("response_format", {}))
        answers: dict[str, dict[str, list[object]]] = {
            "Opinions": {"opinions": []},
            "BiasResults": {"results": []},
        }
        for name, answer in answers.items():
            if name in schema:
                return json_reply(answer)
        return json_reply({"verdicts": []}) if "response_format" in body else text_reply("ok")

    llm_server.responder = respond
    own = {"model": "openai/gpt-4o", "api_base": llm_server.api_base}
    config = ScoringConfig(
        rules=[ScorerRule(scorer="toxicity"), ScorerRule(scorer="bias", options={"judge": own})],
        judge=JudgeConfig(
            model=JUDGE_MODEL, api_base=llm_server.api_base, api_key=SecretStr("sk-configured-1")
        ),
    )
    sink = RecordingSink()
    executor = ScoringExecutor(config, sink, ScoringMetrics())
    await executor.start()
    try:
        await executor.consume_runs([agent_run("Is it raining?", "Yes, it is.")])
        await executor.drain()
    finally:
        await executor.shutdown()
    assert {d.decision for d in sink.decisions} == {"scored"}
    sent = {(r.body["model"], r.authorization) for r in llm_server.chat_requests}
    assert sent == {("gpt-4o-mini", "Bearer sk-configured-1"), ("gpt-4o", "Bearer sk-configured-1")}


def test_which_own_judges_take_the_configured_key() -> None:
    default = JudgeConfig(model="openai/gpt-4o-mini", api_key=SecretStr("sk-openai-1")).judge_settings()

    def key_of(judge: str | dict[str, str], default: dict[str, Any] = default) -> str | None:
        scorer = build_scorer("toxicity", {"judge": judge}, default_judge=default)
        assert scorer.judge is not None
        return scorer.judge.api_key

    assert key_of("openai/gpt-4o") == "sk-openai-1"  # same provider
    assert key_of({"model": "gpt-4o"}) == "sk-openai-1"  # litellm's openai, without the prefix
    assert key_of("anthropic/claude-3-5-haiku-latest") is None  # its own variable, ANTHROPIC_API_KEY
    assert key_of({"model": "openai/gpt-4o", "api_key": "sk-own-2"}) == "sk-own-2"  # its own key
    assert key_of({"model": "openai/llama", "api_base": "http://127.0.0.1:1/v1"}) is None  # another endpoint
    # A key without a model (TRACESCORE_JUDGE_API_KEY alone) goes to every own judge without one...
    only_key = JudgeConfig(api_key=SecretStr("sk-only-3")).judge_settings()
    assert key_of("anthropic/claude-3-5-haiku-latest", only_key) == "sk-only-3"
    # ... and judges nothing itself: a scorer that needs a judge still has to be given one.
    with pytest.raises(ValueError, match="asks an LLM judge"):
        build_scorer("toxicity", {}, default_judge=only_key)
