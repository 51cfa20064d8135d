"""Backfill: score stored traces with the configured rules, as live scoring would have.

Traces are picked by their spans' start time (``otel_traces``) and rebuilt from tracescore's typed
copy (``span_ledger``); each unit goes through the same routing as live (filters, the same
deterministic sampling, needs, budgets, circuit breakers, redaction), and its rows carry the same ids
with ``source = backfill``. A (unit, scorer) pair that already has a score is left alone, and a pair
routed to the decision it already has is not written again, so a backfill run twice adds nothing,
and one that stopped half way resumes where it stopped. Traces go oldest first, ``batch`` at a time.

A dry run routes the same way and estimates, without calling a judge, the judge calls each scorer
run would make and their cost (``scoring.judge.dry``): prompts rendered and counted with litellm's
tokenizer, answers sized from what the judge answered before (the ``scores`` table), priced with
litellm's price map.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator, Callable, Hashable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tracescore.ingest.assembly.trace_state import item_key
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.ledger import Ledger, StoredTrace
from tracescore.ingest.store.score_sink import ClickHouseScoreSink, merged_outcome
from tracescore.ingest.transform.scoring_units import build_units
from tracescore.schemas import AgentRun, Decision, LogRecord, ScoreRecord, Span, TraceRound
from tracescore.schemas.assembly_rounds import UnitOutcome
from tracescore.schemas.config import ScorerRule, ServiceConfig
from tracescore.schemas.consumers import PriorOutcomes
from tracescore.schemas.trace_view import TraceView
from tracescore.scoring.framework.scorer import Scorer
from tracescore.scoring.judge import metered
from tracescore.scoring.judge.call_guard import JudgeGuard, guarded
from tracescore.scoring.judge.redact import Redactor
from tracescore.scoring.prebuilt.registry import former_ids, read_as, stored_ids
from tracescore.scoring.runtime.cascades import held_by
from tracescore.scoring.runtime.executor import ScoringExecutor
from tracescore.scoring.runtime.rule_routing import RuleGroup, is_own_judge_call, route, units_for
from tracescore.scoring.runtime.scoring_metrics import ScoringMetrics

BATCH_TRACES = 200
# Scorer runs: routed to a scorer (scored, failed, or stopped by a budget), not decided by routing.
EXECUTED = ("scored", "failed", "budget_exceeded")

Progress = Callable[[int, int], None]  # (traces done, traces in the window)
# A backfill run by the service (POST /api/backfill) tells its progress at least this often, so that
# the command waiting on it can tell a slow backfill from a lost connection.
PROGRESS_EVERY_SECONDS = 10.0


@dataclass
class BackfillReport:
    traces: int = 0
    not_in_ledger: int = 0  # traces in otel_traces that tracescore did not receive (another exporter)
    runs: int = 0  # units at least one scorer runs on
    scorer_runs: int = 0
    judge_calls: int = 0
    cost_usd: float = 0.0  # estimated (dry run) or spent
    decisions: dict[str, int] = field(default_factory=dict)

    def as_json(self, dry_run: bool) -> dict[str, Any]:
        cost = round(self.cost_usd, 6)
        counts = {"runs": self.runs, "scorer_runs": self.scorer_runs, "judge_calls": self.judge_calls}
        where = {"traces": self.traces, "traces_not_in_ledger": self.not_in_ledger}
        if dry_run:
            return {**counts, "estimated_cost_usd": cost, **where}
        return {**counts, "cost_usd": cost, **where, "decisions": dict(sorted(self.decisions.items()))}


def select_rules(rules: Sequence[ScorerRule], names: Sequence[str], scorer_ids: Sequence[str]) -> list[int]:
    """Indexes of the rules ``names`` asks for (a rule's name, scorer, use or stored id), with the gates
    they wait for (a cascade's ``when``: a gate that decided a unit before is read, not run again);
    all if none."""
    if not names:
        return list(range(len(rules)))
    known = [
        {rule.name, rule.scorer, rule.use, *stored_ids(scorer_id)} - {None}
        for rule, scorer_id in zip(rules, scorer_ids, strict=True)
    ]
    unknown = [name for name in names if not any(name in names_of for names_of in known)]
    if unknown:
        every = sorted({scorer_id for scorer_id in scorer_ids} | {rule.label for rule in rules})
        raise ValueError(f"--rule {', '.join(unknown)}: no such rule; the rules are {', '.join(every)}")
    chosen = {index for index, names_of in enumerate(known) if names_of & set(names)}
    while True:
        waited_for = {when.rule for index in chosen if (when := rules[index].when) is not None}
        gates = {index for index, rule in enumerate(rules) if rule.label in waited_for} - chosen
        if not gates:
            return sorted(chosen)
        chosen |= gates


class Backfill:
    def __init__(
        self,
        config: ServiceConfig,
        *,
        rules: Sequence[str] = (),
        rate: float | None = None,
        progress: Progress | None = None,
        store: Store | None = None,
    ) -> None:
        """``store``: an open store to work in (the service's, for ``POST /api/backfill``), left open;
        without one, the store of ``config`` is opened and closed by ``run``."""
        every = ScoringExecutor(config.scoring, _NoSink(), ScoringMetrics())  # the rules, built and checked
        ids = [rule.scorer_id for group in every.rule_groups for rule in group]
        chosen = select_rules(config.scoring.rules, rules, ids)
        self._scoring = config.scoring.model_copy(update={"rules": [config.scoring.rules[i] for i in chosen]})
        self._config = config
        self._rate = rate
        self._progress = progress
        self._own_store = store is None
        self._store = store if store is not None else Store.from_config(config)
        self._sink = ClickHouseScoreSink(self._store)
        self._ledger = Ledger(self._store)

    async def run(self, since: datetime, until: datetime, *, dry_run: bool = False) -> BackfillReport:
        if self._own_store:
            await self._store.start()
        try:
            trace_ids = await self._trace_ids(since, until)
            if dry_run:
                return await self._plan(trace_ids)
            return await self._score(trace_ids)
        finally:
            if self._own_store:
                await self._store.shutdown()

    async def _trace_ids(self, since: datetime, until: datetime) -> list[str]:
        rows = await self._store.query(
            "SELECT TraceId, min(Timestamp) AS Start "
            f"FROM {self._store.quoted_database}.otel_traces "
            "WHERE Timestamp >= {since:DateTime64(9)} AND Timestamp < {until:DateTime64(9)} "
            "GROUP BY TraceId ORDER BY Start, TraceId",
            {"since": since, "until": until},
        )
        return [row["TraceId"] for row in rows]

    async def _traces(
        self, trace_ids: list[str], report: BackfillReport, wants_calls: bool
    ) -> AsyncIterator[tuple[str, list[AgentRun], TraceView, PriorOutcomes]]:
        """Each stored trace's units and earlier decisions, a batch at a time, oldest first."""
        report.traces = len(trace_ids)
        done = 0
        for start in range(0, len(trace_ids), BATCH_TRACES):
            batch = trace_ids[start : start + BATCH_TRACES]
            stored = await self._ledger.load(batch)
            earlier = await self._earlier(batch)
            for trace_id in batch:
                done += 1
                trace = stored.get(trace_id)
                if trace is None:
                    report.not_in_ledger += 1
                else:
                    spans, logs = stored_items(trace, self._config.assembly.max_spans_per_trace)
                    runs, view = await asyncio.to_thread(build_units, spans, logs, llm_calls=wants_calls)
                    yield trace_id, runs, view, earlier.get(trace_id, PriorOutcomes())
                if self._progress is not None:
                    self._progress(done, len(trace_ids))

    async def _earlier(self, trace_ids: list[str]) -> dict[str, PriorOutcomes]:
        """Decisions (and scores without one) already stored for these traces, by (span, scorer),
        with what each came to (a cascade's gated rules read their gate's)."""
        database = self._store.quoted_database
        where = "WHERE TraceId IN {ids:Array(String)}"
        columns = "SELECT TraceId, SpanId, ScorerId"
        decided = await self._store.query(
            f"{columns}, Decision, 1 AS Decided FROM {database}.score_decisions FINAL {where}",
            {"ids": trace_ids},
        )
        scored = await self._store.query(
            f"{columns}, Score, Label, 0 AS Decided FROM {database}.scores FINAL {where}", {"ids": trace_ids}
        )
        earlier: dict[str, dict[tuple[str, str], str]] = {}
        outcomes: dict[str, dict[tuple[str, str], UnitOutcome]] = {}
        renamed = former_ids()
        for rows, decision in ((decided, None), (scored, "scored")):
            for row in rows:
                found = outcomes.setdefault(row["TraceId"], {})
                for scorer_id in read_as(row["ScorerId"], renamed):
                    pair = (row["SpanId"], scorer_id)
                    earlier.setdefault(row["TraceId"], {})[pair] = decision or row["Decision"]
                    found[pair] = merged_outcome(found.get(pair), row)
        return {
            trace_id: PriorOutcomes(earlier=pairs, outcomes=outcomes[trace_id])
            for trace_id, pairs in earlier.items()
        }

    async def _score(self, trace_ids: list[str]) -> BackfillReport:
        report = BackfillReport()
        metrics = ScoringMetrics()
        sink = _Counting(self._sink)
        executor = ScoringExecutor(
            self._scoring,
            sink,
            metrics,
            source="backfill",
            spend=self._sink,
            replica_id=f"backfill@{socket.gethostname()}",
        )
        await executor.start()
        started = time.monotonic()
        try:
            async for _, runs, view, prior in self._traces(trace_ids, report, executor.wants_llm_calls):
                await executor.consume_runs(runs, None, view, prior=prior)
                if self._rate:
                    await executor.drain()  # the rate counts scorer runs that were made
                    made = _sum(metrics, "tracescore_scoring_decisions_total", EXECUTED)
                    await asyncio.sleep(max(0.0, made / self._rate - (time.monotonic() - started)))
            await executor.drain()
        finally:
            await executor.shutdown()
        report.decisions = _by_decision(metrics)
        report.scorer_runs = sum(report.decisions.get(kind, 0) for kind in EXECUTED)
        report.runs = len(sink.units)
        report.judge_calls = int(_sum(metrics, "tracescore_judge_calls_total"))
        report.cost_usd = _sum(metrics, "tracescore_judge_cost_usd_total")
        return report

    async def _plan(self, trace_ids: list[str]) -> BackfillReport:
        report = BackfillReport()
        executor = ScoringExecutor(self._scoring, _NoSink(), ScoringMetrics())
        ratios = await self._answer_ratios()
        redactor = Redactor.configured(self._scoring.redact)
        async for _, runs, view, prior in self._traces(trace_ids, report, executor.wants_llm_calls):
            scored_units: set[str] = set()
            for group in executor.rule_groups:
                for unit in units_for(group[0].target, group, runs, view):
                    if not _to_score(
                        unit, group, prior, self._scoring.sampling_salt, self._scoring.max_run_chars, view
                    ):
                        continue
                    report.scorer_runs += 1
                    scored_units.add(unit.span_id)
                    scorer = group[0].scorer if len(group) == 1 else _rule_for(unit, group, view)
                    if scorer.judge_models:
                        guard = JudgeGuard(
                            redact=redactor,
                            estimated_output_tokens=self._scoring.estimated_output_tokens,
                            answer_ratios=ratios.get(group[0].scorer_id, ratios.get("", {})),
                            dry_run=True,
                        )
                        calls, cost = await _dry_run(scorer, unit, guard, self._scoring.timeout_seconds)
                        report.judge_calls += calls
                        report.cost_usd += cost
            report.runs += len(scored_units)
        return report

    async def _answer_ratios(self) -> dict[str, dict[str, float]]:
        """Answer tokens per prompt token of each scorer's judge (and of each model, under ""), from
        the scores of the last 30 days."""
        rows = await self._store.query(
            "SELECT ScorerId, JudgeModel, sum(InputTokens) AS Prompt, sum(OutputTokens) AS Answer "
            f"FROM {self._store.quoted_database}.scores FINAL "
            "WHERE InputTokens > 0 AND JudgeModel != '' AND position(JudgeModel, ',') = 0 "
            "AND Timestamp > now() - INTERVAL 30 DAY GROUP BY ScorerId, JudgeModel"
        )
        ratios: dict[str, dict[str, float]] = {}
        totals: dict[str, list[int]] = {}
        for row in rows:
            prompt, answer = int(row["Prompt"]), int(row["Answer"])
            ratios.setdefault(row["ScorerId"], {})[row["JudgeModel"]] = answer / prompt
            total = totals.setdefault(row["JudgeModel"], [0, 0])
            total[0] += prompt
            total[1] += answer
        ratios[""] = {model: answer / prompt for model, (prompt, answer) in totals.items()}
        return ratios


def stored_items(trace: StoredTrace, max_items: int) -> tuple[list[Span], list[LogRecord]]:
    """The trace's items, the first copy of each (an exporter may have sent some twice)."""
    first: dict[Hashable, Span | LogRecord] = {}
    arrivals: list[tuple[int, Span | LogRecord]] = [*trace.spans, *trace.logs]
    for _, item in sorted(arrivals, key=lambda pair: pair[0]):
        first.setdefault(item_key(item), item)
    kept = list(first.values())[:max_items]
    return [i for i in kept if isinstance(i, Span)], [i for i in kept if isinstance(i, LogRecord)]


def _to_score(
    unit: AgentRun,
    group: RuleGroup,
    prior: PriorOutcomes,
    salt: str,
    max_chars: int,
    view: TraceView,
) -> bool:
    """Whether the executor would run a scorer on ``unit`` (as ``ScoringExecutor.consume_runs``). A
    dry run runs no gate: a cascade's gated rule counts unless its gate's stored result holds it."""
    if is_own_judge_call(unit, view):
        return False
    if prior.earlier.get((unit.span_id, group[0].scorer_id)) == "scored":
        return False
    routed = route(unit, group, salt, max_chars, view)
    if routed.decision is not None:
        return False
    when, gate = routed.rule.when, prior.outcomes.get((unit.span_id, routed.rule.gate_id))
    return when is None or gate is None or held_by(when, gate) is None


def _rule_for(unit: AgentRun, group: RuleGroup, view: TraceView) -> Scorer:
    return next(rule.scorer for rule in group if rule.targets(unit, view) and rule.matches(unit, view))


async def _dry_run(scorer: Scorer, unit: AgentRun, guard: JudgeGuard, limit_s: float) -> tuple[int, float]:
    """The judge calls a scorer run would make on ``unit`` and their estimated cost."""
    with metered() as usage, guarded(guard):
        try:
            async with asyncio.timeout(limit_s):
                await scorer.run(unit)
        except Exception:  # a step that cannot go on with an empty answer: what was counted stands
            pass
    return usage.calls, usage.cost_usd


def _by_decision(metrics: ScoringMetrics) -> dict[str, int]:
    counts: dict[str, int] = {}
    for metric in metrics.registry.collect():
        for sample in metric.samples:
            if sample.name == "tracescore_scoring_decisions_total":
                kind = sample.labels["decision"]
                counts[kind] = counts.get(kind, 0) + int(sample.value)
    return counts


def _sum(metrics: ScoringMetrics, name: str, decisions: Sequence[str] = ()) -> float:
    total = 0.0
    for metric in metrics.registry.collect():
        for sample in metric.samples:
            if sample.name == name and (not decisions or sample.labels.get("decision") in decisions):
                total += sample.value
    return total


class _Counting:
    """The score sink, counting the units a scorer ran on."""

    def __init__(self, sink: ClickHouseScoreSink) -> None:
        self._sink = sink
        self.units: set[tuple[str, str]] = set()

    async def write_scores(self, records: Sequence[ScoreRecord], decisions: Sequence[Decision]) -> None:
        await self._sink.write_scores(records, decisions)
        self.units.update((d.trace_id, d.span_id) for d in decisions if d.decision in EXECUTED)

    async def mark_done(self, rounds: Sequence[TraceRound]) -> None:
        await self._sink.mark_done(rounds)

    async def prior_outcomes(self, trace_id: str, since_unix_nano: int) -> PriorOutcomes:
        return await self._sink.prior_outcomes(trace_id, since_unix_nano)


class _NoSink:
    """The sink of an executor that only routes (the rules are built; nothing is written)."""

    async def write_scores(self, records: Sequence[Any], decisions: Sequence[Any]) -> None:
        raise AssertionError("a planning executor writes nothing")

    async def mark_done(self, rounds: Sequence[Any]) -> None:
        raise AssertionError("a planning executor writes nothing")

    async def prior_outcomes(self, trace_id: str, since_unix_nano: int) -> PriorOutcomes:
        return PriorOutcomes()
