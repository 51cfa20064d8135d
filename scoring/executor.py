"""Route and execute: which scorers score each agent run, and running them under bounds.

For every run and every configured rule: the rule's filter (no match -> ``filtered``), then
deterministic sampling (out -> ``sampled_out``), then the content the scorer needs (absent ->
``skipped_empty``), then the scorer runs in a bounded async pool
under a timeout (``scored`` with a score row, or ``failed`` with the error -- never a made-up
score). Several rules may store under one scorer id (one scorer with other options per agent)
when their filters are disjoint; a run then gets the decision of the rule that matches it. Rows
are buffered and written to the score sink every ``flush_interval`` seconds, on
``drain()`` and on ``shutdown()``.

Bounds: ``config.concurrency`` workers take jobs from a bounded queue; when it is full
``consume_runs`` waits (backpressure up the pipeline, nothing is dropped). While the sink fails,
rows stay buffered and are retried with backoff, up to ``MAX_BUFFERED_ROWS`` per kind; beyond
that the oldest rows are dropped with an error log.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from schemas import AgentRun, Decision, DecisionKind, ScoreRecord, ScoreSource
from schemas.config import JudgeConfig, RunFilter, ScorerRule, ScoringConfig
from schemas.consumers import ScoreSink
from scoring.judge import JudgeUsage, metered
from scoring.metrics import ScoringMetrics
from scoring.registry import ScorerFactory, build_scorer
from scoring.sampling import is_sampled
from scoring.scorer import Scorer, ScorerError, ScorerResult

logger = logging.getLogger(__name__)

DEFAULT_FLUSH_INTERVAL_SECONDS = 0.2
QUEUE_SLOTS_PER_WORKER = 4  # queued jobs per worker before consume_runs waits
MAX_BUFFERED_ROWS = 10_000  # per kind (scores, decisions) while the sink is failing
MAX_RETRY_DELAY_SECONDS = 5.0
MAX_DETAIL_CHARS = 2_000


@dataclass(frozen=True, slots=True)
class _Rule:
    scorer_id: str  # the id written to the store: the rule's name, else the scorer's own id
    scorer: Scorer
    sample_rate: float
    filter: RunFilter

    def matches(self, run: AgentRun) -> bool:
        wanted = self.filter
        return (
            (wanted.agent_name is None or run.agent_name in wanted.agent_name)
            and (wanted.service_name is None or run.service_name in wanted.service_name)
            and (wanted.status is None or run.status in wanted.status)
        )


@dataclass(frozen=True, slots=True)
class _Job:
    run: AgentRun
    rule: _Rule


def _disjoint(a: RunFilter, b: RunFilter) -> bool:
    """True when no run can match both filters: some field lists values the other excludes."""
    pairs = ((a.agent_name, b.agent_name), (a.service_name, b.service_name), (a.status, b.status))
    return any(x is not None and y is not None and not set(x) & set(y) for x, y in pairs)


def _build_rules(
    rules: Sequence[ScorerRule],
    registry: Mapping[str, ScorerFactory] | None,
    judge: JudgeConfig | None = None,
) -> tuple[tuple[_Rule, ...], ...]:
    """The rules, grouped by the scorer id they store (in order of first appearance)."""
    default_judge = judge.model_dump(exclude_none=True) if judge is not None else None
    built: list[_Rule] = []
    for index, rule in enumerate(rules):
        try:
            scorer = build_scorer(rule.scorer, rule.options, registry=registry, default_judge=default_judge)
        except ValueError as exc:
            raise ValueError(f"scoring rule {index} ({rule.scorer!r}): {exc}") from exc
        scorer_id = rule.name or scorer.id
        # Two rules may share a stored id only for runs they can never both match (one scorer,
        # other options per agent); otherwise one rule's score would overwrite the other's.
        for other_index, other in enumerate(built):
            if other.scorer_id == scorer_id and not _disjoint(other.filter, rule.filter):
                raise ValueError(
                    f"scoring rules {other_index} and {index} both store scores as {scorer_id!r} "
                    "for the same runs; give one of them a distinct name"
                )
        built.append(_Rule(scorer_id, scorer, rule.sample_rate, rule.filter))
    groups: dict[str, list[_Rule]] = {}
    for built_rule in built:
        groups.setdefault(built_rule.scorer_id, []).append(built_rule)
    return tuple(tuple(group) for group in groups.values())


def _missing_detail(missing: Sequence[str], content_missing: bool) -> str:
    """Why a run was skipped: the text it lacks, and whether its content was not captured."""
    texts = [need for need in missing if need != "ground_truth"]
    parts = [f"no {' or '.join(texts)} text"] if texts else []
    if "ground_truth" in missing:
        parts.append("no ground truth")
    capture = " (content capture off or redacted)" if content_missing and texts else ""
    return f"run has {' and '.join(parts)}{capture}"


class ScoringExecutor:
    """Scores agent runs by the configured rules and writes scores and decisions to ``sink``.

    Implements ``schemas.consumers.RunConsumer``. Lifecycle: ``start()``, ``consume_runs()``...,
    ``drain()`` to wait for everything submitted so far, ``shutdown()`` (idempotent, flushes).
    Rules name scorers of ``registry`` (default: ``scoring.registry.SCORERS``).
    """

    def __init__(
        self,
        config: ScoringConfig,
        sink: ScoreSink,
        metrics: ScoringMetrics,
        source: ScoreSource = "live",
        *,
        flush_interval: float = DEFAULT_FLUSH_INTERVAL_SECONDS,
        registry: Mapping[str, ScorerFactory] | None = None,
    ) -> None:
        self._config = config
        self._rule_groups = _build_rules(
            config.rules, registry, config.judge
        )  # a bad rule fails here, not later
        self._sink = sink
        self._metrics = metrics
        self._source: ScoreSource = source
        self._flush_interval = flush_interval
        self._queue: asyncio.Queue[_Job] = asyncio.Queue(maxsize=config.concurrency * QUEUE_SLOTS_PER_WORKER)
        self._records: list[ScoreRecord] = []
        self._decisions: list[Decision] = []
        self._flush_lock = asyncio.Lock()
        self._tasks: list[asyncio.Task[None]] = []
        self._state: Literal["new", "running", "stopping", "stopped"] = "new"
        self._stopped = asyncio.Event()
        self._producers = 0
        self._producers_idle = asyncio.Event()
        self._producers_idle.set()

    @property
    def scorer_ids(self) -> tuple[str, ...]:
        """The scorer ids this executor writes, in rule order; each run gets one decision per id."""
        return tuple(group[0].scorer_id for group in self._rule_groups)

    async def start(self) -> None:
        if self._state != "new":
            if self._state == "running":
                return
            raise RuntimeError("a ScoringExecutor cannot be restarted after shutdown")
        self._tasks = [
            asyncio.create_task(self._work(), name=f"scoring-worker-{i}")
            for i in range(self._config.concurrency)
        ]
        self._tasks.append(asyncio.create_task(self._flush_periodically(), name="scoring-flush"))
        self._state = "running"

    async def consume_runs(self, runs: Sequence[AgentRun]) -> None:
        """Route each run through the rules: one decision per scorer id; waits while the queue is full."""
        if self._state != "running":
            raise RuntimeError(f"ScoringExecutor.consume_runs while {self._state} (call start() first)")
        self._producers += 1
        self._producers_idle.clear()
        try:
            for run in runs:
                for group in self._rule_groups:
                    # Rules sharing a scorer id have disjoint filters: at most one matches.
                    rule = next((rule for rule in group if rule.matches(run)), None)
                    if rule is None:
                        self._add(None, self._decision(run, group[0], "filtered"))
                    elif not is_sampled(
                        f"{run.run_id}:{rule.scorer_id}", rule.sample_rate, self._config.sampling_salt
                    ):
                        self._add(None, self._decision(run, rule, "sampled_out"))
                    elif missing := rule.scorer.missing_needs(run):
                        detail = _missing_detail(missing, run.content_missing)
                        self._add(None, self._decision(run, rule, "skipped_empty", detail))
                    else:
                        await self._queue.put(_Job(run, rule))
        finally:
            self._producers -= 1
            if self._producers == 0:
                self._producers_idle.set()

    async def drain(self) -> None:
        """Wait until every run submitted so far is scored and its rows are written."""
        await self._producers_idle.wait()
        await self._queue.join()
        await self._flush()

    async def shutdown(self) -> None:
        """Finish queued and in-flight work, write what is buffered, stop. Idempotent."""
        if self._state in ("stopping", "stopped"):
            await self._stopped.wait()
            return
        was_running = self._state == "running"
        self._state = "stopping"
        try:
            if was_running:
                await self._producers_idle.wait()
                await self._queue.join()
            for task in self._tasks:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            try:
                await self._flush()
            except Exception:
                logger.exception(
                    "dropping %d score rows and %d decisions: the final write failed",
                    len(self._records),
                    len(self._decisions),
                )
        finally:
            self._state = "stopped"
            self._stopped.set()

    async def _work(self) -> None:
        while True:
            job = await self._queue.get()
            try:
                record, decision = await self._execute(job)
                self._add(record, decision)
            finally:
                self._queue.task_done()

    async def _execute(self, job: _Job) -> tuple[ScoreRecord | None, Decision]:
        timeout = self._config.timeout_seconds
        started = time.perf_counter()
        with metered() as usage:
            try:
                async with asyncio.timeout(timeout):
                    result = await job.rule.scorer.run(job.run)
                record = self._record(job, result, (time.perf_counter() - started) * 1000.0)
            except TimeoutError:
                self._count_usage(job.rule, usage, "failed")
                return None, self._decision(job.run, job.rule, "failed", f"timed out after {timeout:g} s")
            except Exception as exc:  # a failing scorer is a decision row, never a score
                detail = str(exc) if isinstance(exc, ScorerError) else f"{type(exc).__name__}: {exc}"
                logger.debug("scorer %s failed on run %s: %s", job.rule.scorer_id, job.run.run_id, detail)
                self._count_usage(job.rule, usage, "failed")
                return None, self._decision(job.run, job.rule, "failed", detail)
        self._count_usage(job.rule, usage, "scored")
        return record, self._decision(job.run, job.rule, "scored")

    def _count_usage(self, rule: _Rule, usage: JudgeUsage, outcome: DecisionKind) -> None:
        if not usage.calls:
            return
        tokens = self._metrics.judge_tokens
        tokens.labels(scorer=rule.scorer_id, outcome=outcome, direction="input").inc(usage.input_tokens)
        tokens.labels(scorer=rule.scorer_id, outcome=outcome, direction="output").inc(usage.output_tokens)
        self._metrics.judge_cost.labels(scorer=rule.scorer_id, outcome=outcome).inc(usage.cost_usd)

    def _record(self, job: _Job, result: ScorerResult, latency_ms: float) -> ScoreRecord:
        run = job.run
        return ScoreRecord(
            trace_id=run.trace_id,
            span_id=run.span_id,
            scorer_id=job.rule.scorer_id,
            score=result.score,
            reason=result.reason or "",
            step_results=result.step_results(),
            judge_model=result.judge_model or "",
            input_tokens=result.input_tokens,
            output_tokens=result.output_tokens,
            cost_usd=result.cost_usd,
            latency_ms=latency_ms,
            sample_rate=job.rule.sample_rate,
            source=self._source,
            agent_name=run.agent_name or "",
            service_name=run.service_name or "",
        )

    def _decision(self, run: AgentRun, rule: _Rule, kind: DecisionKind, detail: str = "") -> Decision:
        self._metrics.decisions.labels(scorer=rule.scorer_id, decision=kind).inc()
        return Decision(
            trace_id=run.trace_id,
            span_id=run.span_id,
            scorer_id=rule.scorer_id,
            decision=kind,
            detail=detail[:MAX_DETAIL_CHARS],
            sample_rate=rule.sample_rate,
            source=self._source,
        )

    def _add(self, record: ScoreRecord | None, decision: Decision) -> None:
        if record is not None:
            self._records.append(record)
        self._decisions.append(decision)

    async def _flush(self) -> None:
        async with self._flush_lock:
            if not self._records and not self._decisions:
                return
            records, decisions = self._records, self._decisions
            self._records, self._decisions = [], []
            try:
                await self._sink.write_scores(records, decisions)
            except BaseException:
                # Keep the rows (oldest first) for the next attempt, within the buffer bound.
                self._records[:0] = records
                self._decisions[:0] = decisions
                self._trim_buffers()
                raise
            self._metrics.scores_written.inc(len(records))

    def _trim_buffers(self) -> None:
        dropped_records = max(0, len(self._records) - MAX_BUFFERED_ROWS)
        dropped_decisions = max(0, len(self._decisions) - MAX_BUFFERED_ROWS)
        if dropped_records or dropped_decisions:
            self._metrics.rows_dropped.labels("score").inc(dropped_records)
            self._metrics.rows_dropped.labels("decision").inc(dropped_decisions)
            del self._records[:dropped_records]
            del self._decisions[:dropped_decisions]
            logger.error(
                "score sink unavailable: dropped the oldest %d score rows and %d decisions",
                dropped_records,
                dropped_decisions,
            )

    async def _flush_periodically(self) -> None:
        delay = self._flush_interval
        while True:
            await asyncio.sleep(delay)
            try:
                await self._flush()
            except Exception:
                delay = min(max(delay * 2, self._flush_interval), MAX_RETRY_DELAY_SECONDS)
                logger.exception("writing scores failed; retrying in %.1f s", delay)
            else:
                delay = self._flush_interval
