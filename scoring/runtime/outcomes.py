"""What a scorer run leaves: its score row (validated against the scorer's scale), its decision row,
and the judge spend it is counted with in the metrics. ``OutcomeRows`` makes the rows of one executor
and counts each in its metrics as it is made, with what a judge rule's scored units cost on average:
a ``gated`` decision of that rule counts those calls and dollars as avoided."""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import Counter, Histogram

from tracescore.schemas import AgentRun, Decision, DecisionKind, ScoreRecord, ScoreSource, TraceRound
from tracescore.schemas.score import JudgeExchange
from tracescore.schemas.secrets import scrub
from tracescore.scoring.framework.scorer import ScorerResult
from tracescore.scoring.judge import JudgeUsage
from tracescore.scoring.runtime.rule_routing import Rule
from tracescore.scoring.runtime.scoring_metrics import ScoringMetrics

MAX_DETAIL_CHARS = 2_000


@dataclass(frozen=True, slots=True)
class OutcomeRows:
    """The score and decision rows of one executor (of ``source``), each counted in ``metrics``."""

    metrics: ScoringMetrics
    source: ScoreSource
    # The metrics' children by label values, kept: prometheus' ``labels(...)`` costs four times the
    # count itself, and every scorer run counts a decision and a score (as many children as
    # prometheus keeps anyway).
    _decision_counts: dict[tuple[str, str], Counter] = field(default_factory=dict, repr=False)
    _scores: dict[tuple[str, str, str], Histogram] = field(default_factory=dict, repr=False)
    _score_outcomes: dict[tuple[str, str, str, str], Counter] = field(default_factory=dict, repr=False)
    _spend: dict[str, JudgeSpend] = field(default_factory=dict, repr=False)  # by scorer id

    def score(self, run: AgentRun, rule: Rule, result: ScorerResult, latency_ms: float) -> ScoreRecord:
        """The score row of a result (``score_record``), in the score histogram and pass/fail counts
        if its rule has a threshold."""
        record = score_record(run, rule, result, latency_ms, self.source)
        key = (record.scorer_id, record.service_name, record.agent_name)
        if (histogram := self._scores.get(key)) is None:
            scorer, service, agent = key
            histogram = self._scores[key] = self.metrics.score.labels(
                scorer=scorer, service=service, agent=agent
            )
        histogram.observe(record.score)
        if (passed := rule.passes(record.score)) is not None:
            outcome_key = (*key, "pass" if passed else "fail")
            if (outcomes := self._score_outcomes.get(outcome_key)) is None:
                scorer, service, agent, outcome = outcome_key
                outcomes = self._score_outcomes[outcome_key] = self.metrics.score_outcomes.labels(
                    scorer=scorer, service=service, agent=agent, outcome=outcome
                )
            outcomes.inc()
        return record

    def decision(
        self,
        run: AgentRun,
        rule: Rule,
        kind: DecisionKind,
        detail: str = "",
        judge_io: tuple[JudgeExchange, ...] = (),
    ) -> Decision:
        """The decision row of a (unit, rule) (``decision``), counted by scorer and kind."""
        key = (rule.scorer_id, kind)
        if (count := self._decision_counts.get(key)) is None:
            count = self._decision_counts[key] = self.metrics.decisions.labels(
                scorer=rule.scorer_id, decision=kind
            )
        count.inc()
        if kind == "gated" and rule.scorer.judge_models:
            self._avoided(rule)
        return decision(run, rule, kind, detail, self.source, judge_io)

    def usage(self, rule: Rule, usage: JudgeUsage, outcome: DecisionKind) -> None:
        """The judge spend of a scorer run in the metrics (failed runs too: no score row carries it),
        and in the rule's cost per scored unit."""
        count_usage(self.metrics, rule, usage, outcome)
        if not rule.scorer.judge_models:
            return
        spend = self._spend.setdefault(rule.scorer_id, JudgeSpend())
        spend.add(usage, scored=outcome == "scored")
        if spend.units:
            per_1000 = self.metrics.judge_cost_per_1000_units.labels(scorer=rule.scorer_id)
            per_1000.set(1000.0 * spend.usd / spend.units)
            self._price_avoided(rule.scorer_id, spend)

    def _avoided(self, rule: Rule) -> None:
        """A gate held a unit of this judge rule: it did not spend what a scored unit of the rule costs
        on average (priced once the rule has scored a unit, when it has not yet)."""
        self.metrics.judge_units_avoided.labels(scorer=rule.scorer_id).inc()
        spend = self._spend.setdefault(rule.scorer_id, JudgeSpend())
        spend.unpriced += 1
        if spend.units:
            self._price_avoided(rule.scorer_id, spend)

    def _price_avoided(self, scorer_id: str, spend: JudgeSpend) -> None:
        """The held units not yet counted in the calls and dollars avoided, at the average so far."""
        if spend.unpriced:
            held, spend.unpriced = spend.unpriced, 0
            self.metrics.judge_calls_avoided.labels(scorer=scorer_id).inc(held * spend.calls / spend.units)
            self.metrics.judge_cost_avoided.labels(scorer=scorer_id).inc(held * spend.usd / spend.units)


@dataclass(slots=True)
class JudgeSpend:
    """One judge rule's spend since start: judge calls and dollars (failed runs too), units scored,
    and the units a gate held that the calls and dollars avoided do not count yet."""

    units: int = 0
    calls: int = 0
    usd: float = 0.0
    unpriced: int = 0

    def add(self, usage: JudgeUsage, *, scored: bool) -> None:
        self.units += scored
        self.calls += usage.calls
        self.usd += usage.cost_usd


def score_record(
    run: AgentRun, rule: Rule, result: ScorerResult, latency_ms: float, source: ScoreSource
) -> ScoreRecord:
    """The score row of a result (``Scorer.run`` has checked its score against the scorer's scale)."""
    return ScoreRecord.scored(
        rule.scorer_id,
        result.score,
        label=result.label,
        reason=result.reason,
        metadata=result.step_results(),
        trace_id=run.trace_id,
        span_id=run.span_id,
        judge_model=result.judge_model or "",
        input_tokens=result.input_tokens,
        output_tokens=result.output_tokens,
        cost_usd=result.cost_usd,
        latency_ms=latency_ms,
        sample_rate=rule.sample_rate,
        scorer_version=rule.version,
        source=source,
        agent_name=run.agent_name or "",
        service_name=run.service_name or "",
        span_start=run.start_time,
        session_id=session_of(run, rule),
    )


def session_of(run: AgentRun, rule: Rule) -> str:
    """The session id a row of ``rule`` carries: the conversation's, for a ``target: session`` rule."""
    return (run.session_id or "") if rule.target == "session" else ""


def decision(
    run: AgentRun,
    rule: Rule,
    kind: DecisionKind,
    detail: str,
    source: ScoreSource,
    judge_io: tuple[JudgeExchange, ...] = (),
) -> Decision:
    """The decision row of a (unit, rule); its detail scrubbed of secrets and cut to a bound."""
    return Decision(
        trace_id=run.trace_id,
        span_id=run.span_id,
        scorer_id=rule.scorer_id,
        decision=kind,
        detail=scrub(detail)[:MAX_DETAIL_CHARS] if detail else "",  # most are empty: no scan
        sample_rate=rule.sample_rate,
        source=source,
        agent_name=run.agent_name or "",
        service_name=run.service_name or "",
        span_start=run.start_time,
        session_id=session_of(run, rule),
        judge_io=judge_io,
    )


def count_usage(metrics: ScoringMetrics, rule: Rule, usage: JudgeUsage, outcome: DecisionKind) -> None:
    """The judge spend of a scorer run in the metrics (failed runs too: no score row carries it)."""
    if not usage.calls:
        return
    tokens = metrics.judge_tokens
    tokens.labels(scorer=rule.scorer_id, outcome=outcome, direction="input").inc(usage.input_tokens)
    tokens.labels(scorer=rule.scorer_id, outcome=outcome, direction="output").inc(usage.output_tokens)
    metrics.judge_cost.labels(scorer=rule.scorer_id, outcome=outcome).inc(usage.cost_usd)
    metrics.judge_calls.labels(scorer=rule.scorer_id, outcome=outcome).inc(usage.calls)


def with_round(detail: str, round: TraceRound | None) -> str:
    """A run of a trace released at max_wait (its root span never ended) says so in its decision."""
    if round is None or round.reason != "max_wait":
        return detail
    note = "released at max_wait: the trace's root span had not ended"
    return f"{detail}; {note}" if detail else note
