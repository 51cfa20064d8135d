"""Judge budgets: calls and dollars per hour and per day, per rule and global; budget_exceeded
decisions; what /metrics shows; and spend that holds across replicas and restarts (chDB store)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.support.llm_server import LLMServer, answering
from tests.support.runs import agent_run
from tests.support.sinks import RecordingSink
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.score_sink import ClickHouseScoreSink
from tracescore.schemas.config import ScorerRule, ScoringConfig
from tracescore.schemas.rules import BudgetLimits
from tracescore.scoring.runtime.executor import ScoringExecutor
from tracescore.scoring.runtime.judge_budgets import DAY, HOUR, Budget, BudgetBook, BudgetExceeded
from tracescore.scoring.runtime.scoring_metrics import ScoringMetrics

START = time.time() // DAY * DAY + 10 * HOUR  # 10:00 UTC today (the store keeps spend rows 3 days)


class Clock:
    def __init__(self, now: float = START) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_calls_per_hour_reset_with_the_hour() -> None:
    clock = Clock()
    budget = Budget("tox", BudgetLimits(max_calls_per_hour=2), clock)
    budget.reserve(0.0)
    budget.reserve(0.0)
    with pytest.raises(
        BudgetExceeded, match=r"rule 'tox': 2 judge call\(s\) per hour reached \(resets .* 11:00 UTC\)"
    ):
        budget.reserve(0.0)
    assert budget.remaining("hour", "calls") == 0
    clock.now += HOUR
    budget.reserve(0.0)
    assert budget.remaining("hour", "calls") == 1


def test_calls_per_day_sum_the_hours_and_reset_at_midnight() -> None:
    clock = Clock()
    budget = Budget("tox", BudgetLimits(max_calls_per_day=3), clock)
    for _ in range(3):
        budget.reserve(0.0)
        clock.now += HOUR
    with pytest.raises(BudgetExceeded, match="per day reached"):
        budget.reserve(0.0)
    clock.now = START - 10 * HOUR + DAY  # the next day, 00:00 UTC
    budget.reserve(0.0)
    assert budget.spent("day").calls == 1


def test_dollars_are_estimated_before_and_settled_after() -> None:
    clock = Clock()
    budget = Budget("*", BudgetLimits(max_usd_per_hour=1.0, max_usd_per_day=1.5), clock)
    first = budget.reserve(0.6)
    with pytest.raises(BudgetExceeded, match=r"all rules \(scoring.budget\): \$1 per hour would be passed"):
        budget.reserve(0.6)  # 1.2 > 1.0 while the first call's estimate stands
    budget.settle(first, 0.25)  # the provider's usage: it cost less
    second = budget.reserve(0.6)
    budget.settle(second, 0.7)
    assert budget.spent("hour").usd == pytest.approx(0.95)
    assert budget.remaining("hour", "usd") == pytest.approx(0.05)
    clock.now += HOUR
    third = budget.reserve(0.5)  # a new hour, but the day has 0.55 left
    budget.settle(third, 0.5)
    with pytest.raises(BudgetExceeded, match=r"\$1.5 per day"):
        budget.reserve(0.1)
    budget.cancel(third)  # a call that was not made gives its reservation back
    assert budget.spent("day").usd == pytest.approx(0.95)


def test_an_unpriced_model_counts_calls_but_no_dollars() -> None:
    budget = Budget("r", BudgetLimits(max_usd_per_hour=0.01, max_calls_per_hour=5), Clock())
    for _ in range(5):
        budget.reserve(0.0)
    with pytest.raises(BudgetExceeded, match="5 judge call"):
        budget.reserve(0.0)


async def test_spend_holds_across_replicas_and_restarts(store: Store) -> None:
    clock = Clock()
    sink = ClickHouseScoreSink(store)
    limits = {"tox": BudgetLimits(max_calls_per_hour=5)}
    a, b = BudgetBook(limits, clock=clock), BudgetBook(limits, clock=clock)
    await a.sync(sink, "replica-a")
    await b.sync(sink, "replica-b")
    for _ in range(3):
        a.budgets["tox"].reserve(0.0)
    await a.sync(sink, "replica-a")
    await b.sync(sink, "replica-b")  # b now sees a's three calls
    b.budgets["tox"].reserve(0.0)
    b.budgets["tox"].reserve(0.0)
    with pytest.raises(BudgetExceeded):
        b.budgets["tox"].reserve(0.0)
    await b.sync(sink, "replica-b")
    restarted = BudgetBook(limits, clock=clock)  # replica a after a crash: its own spend comes back
    await restarted.sync(sink, "replica-a")
    assert restarted.budgets["tox"].spent("hour").calls == 5
    with pytest.raises(BudgetExceeded):
        restarted.budgets["tox"].reserve(0.0)


def _rule(server: LLMServer, **budget: Any) -> ScorerRule:
    judge = {"model": "openai/gpt-4o-mini", "api_base": server.api_base, "api_key": "k", "max_retries": 0}
    return ScorerRule(scorer="toxicity", options={"judge": judge}, budget=BudgetLimits(**budget))


RUNS = [
    agent_run(f"Question {i}?", f"A polite answer number {i}.", trace_id=f"{i:032x}", span_id=f"{i:016x}")
    for i in range(1, 5)
]


async def _score(config: ScoringConfig, metrics: ScoringMetrics | None = None) -> RecordingSink:
    sink = RecordingSink()
    executor = ScoringExecutor(config, sink, metrics or ScoringMetrics())
    await executor.start()
    try:
        await executor.consume_runs(RUNS)
        await executor.drain()
    finally:
        await executor.shutdown()
    return sink


async def test_a_rule_over_its_call_budget_gets_budget_exceeded(llm_server: LLMServer) -> None:
    llm_server.responder = answering({"verdicts": [{"verdict": "no", "reason": "polite"}]}, "It is polite.")
    metrics = ScoringMetrics()
    # Toxicity asks twice per run (verdicts, then the reason): 5 calls an hour are two runs and a half.
    config = ScoringConfig(rules=[_rule(llm_server, max_calls_per_hour=5)], concurrency=1)
    sink = await _score(config, metrics)
    kinds = [d.decision for d in sorted(sink.decisions, key=lambda d: d.trace_id)]
    assert kinds == ["scored", "scored", "budget_exceeded", "budget_exceeded"]
    assert len(llm_server.chat_requests) == 5  # the third run's first call, then no more
    assert "rule 'toxicity': 5 judge call(s) per hour reached" in sink.decisions[-1].detail
    labels = {"budget": "toxicity", "window": "hour", "unit": "calls"}
    assert metrics.registry.get_sample_value("tracescore_budget_remaining", labels) == 0
    assert (
        metrics.registry.get_sample_value(
            "tracescore_scoring_decisions_total", {"scorer": "toxicity", "decision": "budget_exceeded"}
        )
        == 2
    )


async def test_the_global_dollar_budget_stops_every_rule(llm_server: LLMServer) -> None:
    llm_server.responder = answering({"verdicts": [{"verdict": "no", "reason": "polite"}]}, "It is polite.")
    one_run = await _score(ScoringConfig(rules=[_rule(llm_server)], concurrency=1))
    run_cost = one_run.records[0].cost_usd
    assert run_cost > 0  # gpt-4o-mini has a price in litellm's map
    llm_server.requests.clear()
    metrics = ScoringMetrics()
    config = ScoringConfig(
        rules=[_rule(llm_server)],
        budget=BudgetLimits(max_usd_per_day=2.5 * run_cost),
        concurrency=1,
        estimated_output_tokens=20,  # this judge's answers are short
    )
    sink = await _score(config, metrics)
    kinds = [d.decision for d in sorted(sink.decisions, key=lambda d: d.trace_id)]
    assert kinds[:2] == ["scored", "scored"] and set(kinds[2:]) == {"budget_exceeded"}
    assert "all rules (scoring.budget)" in sink.decisions[-1].detail
    spent = sum(record.cost_usd for record in sink.records)
    assert spent <= 2.5 * run_cost
    left = metrics.registry.get_sample_value(
        "tracescore_budget_remaining", {"budget": "*", "window": "day", "unit": "usd"}
    )
    assert left == pytest.approx(2.5 * run_cost - spent, rel=1e-6)
