"""The Prometheus metrics a scoring run reports: decisions, written rows, judge spend.

They are registered on the registry they are given (the service's, so ``/metrics`` shows them with
the ingest metrics), or on one of their own (tests, embedding applications).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

# Scores are mostly on a 0-1 scale; a few scorers count higher.
SCORE_BUCKETS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0, 2.0, 5.0, 10.0, float("inf"))


class ScoringMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.decisions = Counter(
            "tracescore_scoring_decisions",
            "Scoring decisions by scorer and kind",
            ["scorer", "decision"],
            registry=r,
        )
        self.scores_written = Counter("tracescore_scores_written", "Score rows written", registry=r)
        self.score = Histogram(
            "tracescore_score",
            "Score values by scorer, service and agent",
            ["scorer", "service", "agent"],
            buckets=SCORE_BUCKETS,
            registry=r,
        )
        self.score_outcomes = Counter(
            "tracescore_score_outcomes",
            "Scores that pass or fail their rule's threshold, by scorer, service, agent and outcome",
            ["scorer", "service", "agent", "outcome"],
            registry=r,
        )
        # Judge spend, of failed scorer runs too (their score rows do not exist to carry it).
        self.judge_tokens = Counter(
            "tracescore_judge_tokens",
            "Tokens of answered judge calls by scorer, outcome and direction",
            ["scorer", "outcome", "direction"],
            registry=r,
        )
        self.judge_calls = Counter(
            "tracescore_judge_calls",
            "Answered judge calls by scorer and outcome",
            ["scorer", "outcome"],
            registry=r,
        )
        self.judge_cost = Counter(
            "tracescore_judge_cost_usd",
            "Cost in USD of answered judge calls (litellm's price map) by scorer and outcome",
            ["scorer", "outcome"],
            registry=r,
        )
        # Cascades: what a gate kept from a judge rule (``gated`` decisions of a scorer with judges),
        # estimated from what the rule's scored units cost on average (``OutcomeRows``).
        self.judge_units_avoided = Counter(
            "tracescore_judge_units_avoided",
            "Units a cascade's gate kept from a judge scorer (gated decisions), by scorer",
            ["scorer"],
            registry=r,
        )
        self.judge_calls_avoided = Counter(
            "tracescore_judge_calls_avoided",
            "Judge calls not made because a gate held the unit (estimated: the scorer's average calls "
            "per scored unit), by scorer",
            ["scorer"],
            registry=r,
        )
        self.judge_cost_avoided = Counter(
            "tracescore_judge_cost_avoided_usd",
            "USD not spent because a gate held the unit (estimated: the scorer's average judge cost per "
            "scored unit), by scorer",
            ["scorer"],
            registry=r,
        )
        self.judge_cost_per_1000_units = Gauge(
            "tracescore_judge_cost_per_1000_scored_units_usd",
            "Judge cost in USD (failed runs included) per 1,000 units a scorer scored, since start",
            ["scorer"],
            registry=r,
        )
        self.pending_retries = Gauge(
            "tracescore_scoring_pending_retries", "Runs waiting for their judge to answer again", registry=r
        )
        self.budget_remaining = Gauge(
            "tracescore_budget_remaining",
            "Judge budget left in the current UTC hour or day, by budget (a rule's scorer id, or * for "
            "scoring.budget), window and unit (calls, usd)",
            ["budget", "window", "unit"],
            registry=r,
        )
        self.circuit_state = Gauge(
            "tracescore_judge_circuit_state",
            "A judge model's circuit breaker: 0 closed, 1 half-open, 2 open",
            ["model"],
            registry=r,
        )
        self.circuit_transitions = Counter(
            "tracescore_judge_circuit_transitions",
            "Circuit breaker state changes by judge model and new state",
            ["model", "state"],
            registry=r,
        )
        self.loop_guarded = Counter(
            "tracescore_loop_guarded_units",
            "Runs and model calls recognised as tracescore's own judge calls, never scored",
            registry=r,
        )
        self.rows_dropped = Counter(
            "tracescore_scoring_rows_dropped",
            "Score and decision rows the store refused for good (a permanent error; their traces stay "
            "undecided)",
            ["kind"],
            registry=r,
        )
