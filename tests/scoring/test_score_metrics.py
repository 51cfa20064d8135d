"""Scores in Prometheus: the value histogram per scorer, service and agent, and pass/fail counts at a
rule's threshold; and the run's names and start carried onto its score and decision rows."""

from __future__ import annotations

from datetime import UTC, datetime

from prometheus_client import generate_latest

from tests.scoring.test_executor import config, make_run, running
from tests.support.sinks import RecordingSink
from tracescore.schemas.config import ScorerRule
from tracescore.scoring.runtime.scoring_metrics import ScoringMetrics


def sample(metrics: ScoringMetrics, name: str, **labels: str) -> float:
    value = metrics.registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


async def scored(rule: ScorerRule, runs: list[tuple[int, str, str, str]]) -> ScoringMetrics:
    """Score runs (number, agent, user text, answer) with ``rule``; the metrics they leave."""
    metrics = ScoringMetrics()
    async with running(config(rule), RecordingSink(), metrics=metrics) as executor:
        await executor.consume_runs([make_run(i, agent=a, user=u, answer=o) for i, a, u, o in runs])
        await executor.drain()
    return metrics


async def test_scores_fill_a_histogram_per_scorer_service_and_agent() -> None:
    # Textual difference: "ab" against "ba" is 0.5 (Mastra reference case c096); equal texts are 1.
    metrics = await scored(
        ScorerRule(scorer="textual-difference"),
        [(1, "weather", "ab", "ba"), (2, "weather", "ab", "ab"), (3, "travel", "ab", "ab")],
    )
    weather = {"scorer": "textual-difference", "service": "svc-a", "agent": "weather"}
    assert sample(metrics, "tracescore_score_count", **weather) == 2
    assert sample(metrics, "tracescore_score_sum", **weather) == 1.5
    assert sample(metrics, "tracescore_score_bucket", **weather, le="0.5") == 1
    assert sample(metrics, "tracescore_score_bucket", **weather, le="0.9") == 1
    assert sample(metrics, "tracescore_score_bucket", **weather, le="1.0") == 2
    travel = weather | {"agent": "travel"}
    assert sample(metrics, "tracescore_score_count", **travel) == 1
    # Without a threshold there is nothing to pass or fail.
    assert b"tracescore_score_outcomes_total{" not in generate_latest(metrics.registry)


async def test_a_rules_threshold_counts_passes_and_failures() -> None:
    runs = [(1, "weather", "ab", "ba"), (2, "weather", "ab", "ab"), (3, "weather", "ab", "ab")]
    above = await scored(ScorerRule(scorer="textual-difference", threshold=0.6), runs)
    labels = {"scorer": "textual-difference", "service": "svc-a", "agent": "weather"}
    assert sample(above, "tracescore_score_outcomes_total", **labels, outcome="pass") == 2
    assert sample(above, "tracescore_score_outcomes_total", **labels, outcome="fail") == 1

    below = await scored(ScorerRule(scorer="textual-difference", threshold=0.5, pass_when="below"), runs)
    assert sample(below, "tracescore_score_outcomes_total", **labels, outcome="pass") == 1  # 0.5 <= 0.5
    assert sample(below, "tracescore_score_outcomes_total", **labels, outcome="fail") == 2


async def test_score_and_decision_rows_carry_the_runs_start_and_names() -> None:
    sink = RecordingSink()
    run = make_run(7, agent="travel", service="svc-b").model_copy(
        update={"start_time": datetime(2026, 11, 1, 12, 0, tzinfo=UTC)}
    )
    async with running(config(ScorerRule(scorer="textual-difference")), sink) as executor:
        await executor.consume_runs([run])
        await executor.drain()
    (record,) = sink.records
    (decision,) = sink.decisions
    assert record.span_start == decision.span_start == datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
    assert (decision.agent_name, decision.service_name) == ("travel", "svc-b")
    assert record.span_start is not None
    assert record.created_at > record.span_start
