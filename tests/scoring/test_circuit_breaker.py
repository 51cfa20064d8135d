"""The circuit breaker of a judge model: open after failures in a row, a half-open probe after the
cooldown, closed again when the probe is answered; runs wait meanwhile and are scored afterwards."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from tests.support.llm_server import LLMServer, Reply, answering
from tests.support.runs import agent_run
from tests.support.sinks import RecordingSink
from tracescore.schemas.config import ScorerRule, ScoringConfig
from tracescore.schemas.rules import CircuitBreakerConfig
from tracescore.scoring.judge import JudgeError
from tracescore.scoring.judge.breaker import CircuitBreaker
from tracescore.scoring.runtime.executor import ScoringExecutor
from tracescore.scoring.runtime.scoring_metrics import ScoringMetrics


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_open_half_open_closed() -> None:
    clock = Clock()
    changes: list[str] = []
    breaker = CircuitBreaker(
        "m",
        CircuitBreakerConfig(failures=3, cooldown_seconds=10),
        clock,
        lambda _, state: changes.append(state),
    )
    for _ in range(2):
        breaker.before_call()
        breaker.failed(retriable=True)
    breaker.before_call()
    breaker.failed(retriable=False)  # a 400 shows the provider answers: the count starts over
    for _ in range(3):
        breaker.before_call()
        breaker.failed(retriable=True)
    assert breaker.state == "open"
    with pytest.raises(JudgeError, match="circuit open after 3 failure") as refused:
        breaker.before_call()
    assert refused.value.retriable and refused.value.retry_after_s == pytest.approx(10)
    clock.now += 10
    breaker.before_call()  # the probe
    breaker = breaker  # mypy keeps breaker.state as narrowed by the assert above unless breaker is assigned
    assert breaker.state == "half_open"
    with pytest.raises(JudgeError):  # one probe at a time
        breaker.before_call()
    breaker.failed(retriable=True)  # the probe failed: open for another cooldown
    breaker = breaker  # as above
    assert breaker.state == "open"
    clock.now += 5
    with pytest.raises(JudgeError):
        breaker.before_call()
    clock.now += 5
    breaker.before_call()
    breaker.succeeded()
    breaker = breaker  # as above
    assert breaker.state == "closed"
    breaker.before_call()
    assert changes == ["open", "half_open", "open", "half_open", "closed"]


def test_a_disabled_breaker_never_opens() -> None:
    breaker = CircuitBreaker("m", CircuitBreakerConfig(enabled=False, failures=1), Clock())
    for _ in range(5):
        breaker.before_call()
        breaker.failed(retriable=True)
    breaker.before_call()


class Outage:
    """The judge server's answers: 503 for ``down_for_s`` from the first request, then real answers."""

    def __init__(self, down_for_s: float) -> None:
        self.down_for_s = down_for_s
        self.up_at = float("inf")
        self.answer = answering({"verdicts": [{"verdict": "no", "reason": "polite"}]}, "It is polite.")

    def __call__(self, body: dict[str, Any]) -> Reply:
        if self.up_at == float("inf"):
            self.up_at = time.monotonic() + self.down_for_s
        if time.monotonic() < self.up_at:
            return Reply(status=503, content="overloaded")
        return self.answer(body)


async def test_runs_wait_while_the_circuit_is_open_and_are_scored_after(llm_server: LLMServer) -> None:
    outage = Outage(down_for_s=2.0)
    llm_server.responder = outage
    judge = {"model": "openai/gpt-4o-mini", "api_base": llm_server.api_base, "api_key": "k", "max_retries": 0}
    rule = ScorerRule(
        scorer="toxicity",
        options={"judge": judge},
        circuit_breaker=CircuitBreakerConfig(failures=2, cooldown_seconds=0.5),
    )
    metrics, sink = ScoringMetrics(), RecordingSink()
    executor = ScoringExecutor(
        ScoringConfig(rules=[rule], concurrency=2, retry_max_age_seconds=60),
        sink,
        metrics,
        flush_interval=0.05,
    )
    runs = [
        agent_run(f"q{i}", f"a polite answer {i}", trace_id=f"{i:032x}", span_id=f"{i:016x}")
        for i in range(6)
    ]
    await executor.start()
    try:
        await executor.consume_runs(runs)
        for _ in range(400):
            await executor.drain()
            if len(sink.decisions) == len(runs):
                break
            await asyncio.sleep(0.05)
    finally:
        await executor.shutdown()
    assert [d.decision for d in sink.decisions] == ["scored"] * len(runs)
    failed = [r for r in llm_server.chat_requests if r.at < outage.up_at]
    # Without the breaker every run would have asked the failing judge at each of its retries; with
    # it, two failures opened the circuit and only single probes went out until the judge was back.
    assert len(failed) <= 2 + 2 * 4, len(failed)  # 12 with the breaker disabled
    transitions = {
        state: metrics.registry.get_sample_value(
            "tracescore_judge_circuit_transitions_total", {"model": "openai/gpt-4o-mini", "state": state}
        )
        for state in ("open", "half_open", "closed")
    }
    assert transitions["open"] and transitions["half_open"] and transitions["closed"] == 1
    assert (
        metrics.registry.get_sample_value("tracescore_judge_circuit_state", {"model": "openai/gpt-4o-mini"})
        == 0
    )
