"""Execute: score the runs the router sends, under bounds, and write scores and decisions.

Each run is routed per scorer id (``scoring.runtime.rule_routing``); a run to score runs its scorer in a
bounded
async pool under a timeout. The result becomes a validated ``Score`` and then a score row
(``scored``); a scorer that raises, times out or returns a value outside its scale gets ``failed``
with the reason -- never a made-up or out-of-range score. Rows are buffered and written to the score
sink as soon as there are some, writes starting at least ``flush_interval`` seconds apart (one write
carries what gathered meanwhile), and on ``drain()`` and ``shutdown()``.

Bounds: ``config.concurrency`` workers take jobs from a bounded queue; when it is full
``consume_runs`` waits (backpressure up the pipeline, nothing is dropped). When the sink fails
with a retriable error (``schemas.errors.is_retriable``: the store unreachable, busy, out of disk or
memory) the rows stay buffered and are retried with backoff; beyond ``MAX_BUFFERED_ROWS`` new work
waits until they are written. A permanent error (the store refuses the rows themselves) would fail
the same way again and block every later row: those rows are set aside, counted and logged, and the
rounds they belong to are never marked done by this process -- they hold the watermark back, so the
next start finds those traces undecided and scores them again (``ingest.replay.recovery``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal, TypeVar

from tracescore.schemas import AgentRun, Decision, DecisionKind, ScoreRecord, ScoreSource, TraceRound
from tracescore.schemas.config import ScoringConfig
from tracescore.schemas.consumers import PriorOutcomes, ScoreSink, SpendStore
from tracescore.schemas.errors import Overloaded, is_retriable
from tracescore.schemas.score import JudgeExchange
from tracescore.schemas.trace_view import TraceView
from tracescore.scoring.framework.scorer import ScorerError, ScorerResult
from tracescore.scoring.judge import JudgeError, JudgeUsage, litellm_module, metered
from tracescore.scoring.judge.call_guard import guarded
from tracescore.scoring.judge.transcript import Transcript, transcribed
from tracescore.scoring.prebuilt.registry import ScorerFactory
from tracescore.scoring.runtime.failure_log import FailureLog
from tracescore.scoring.runtime.judge_budgets import BudgetExceeded
from tracescore.scoring.runtime.outcomes import count_score, count_usage, decision, score_record, with_round
from tracescore.scoring.runtime.pending_runs import PendingRetries
from tracescore.scoring.runtime.round_tracker import RoundState, RoundTracker
from tracescore.scoring.runtime.rule_guards import Guards
from tracescore.scoring.runtime.rule_routing import (
    Rule,
    RuleGroup,
    build_rules,
    is_own_judge_call,
    route,
    thresholds,
    units_for,
)
from tracescore.scoring.runtime.scoring_metrics import ScoringMetrics

logger = logging.getLogger(__name__)
E = TypeVar("E", bound=BaseException)

DEFAULT_FLUSH_INTERVAL_SECONDS = 0.2
QUEUE_SLOTS_PER_WORKER = 4  # queued jobs per worker before consume_runs waits
MAX_BUFFERED_ROWS = 10_000  # score and decision rows waiting to be written; new work waits beyond it
MAX_PENDING_RETRIES = 10_000  # runs waiting for their judge; new work waits beyond it
MAX_RETRY_DELAY_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class _Job:
    run: AgentRun
    rule: Rule
    round: RoundState | None = None
    attempts: int = 0  # failed attempts so far (a judge outage)
    first_failed: float | None = None  # monotonic time of the first


@dataclass(slots=True)
class _Write:
    """One flush: score and decision rows, then the rounds they complete."""

    records: list[ScoreRecord]
    decisions: list[Decision]
    finished: list[RoundState]
    rows_written: bool = False


class _RetryLater(Exception):
    """The judge is unavailable: try the job again later instead of failing it."""

    def __init__(self, job: _Job, not_before_s: float | None = None) -> None:
        self.job = job
        self.not_before_s = not_before_s  # the judge's Retry-After, or an open circuit's cooldown


class ScoringExecutor:
    """Scores agent runs by the configured rules and writes scores and decisions to ``sink``.

    Implements ``schemas.consumers.RunConsumer``. Lifecycle: ``start()``, ``consume_runs()``...,
    ``drain()`` to wait for everything submitted so far, ``shutdown()`` (idempotent, flushes).
    Rules name scorers of ``registry`` (default: ``scoring.prebuilt.registry.SCORERS``).
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
        spend: SpendStore | None = None,
        replica_id: str = "",
    ) -> None:
        self._config = config
        self._rule_groups = build_rules(config.rules, registry, config.judge)  # a bad rule fails here
        self._guards = Guards(config, self._rule_groups, metrics, spend=spend, replica_id=replica_id)
        self._sink = sink
        self._metrics = metrics
        self._source: ScoreSource = source
        self._flush_interval = flush_interval
        self._queue: asyncio.Queue[_Job] = asyncio.Queue(maxsize=config.concurrency * QUEUE_SLOTS_PER_WORKER)
        self._records: list[ScoreRecord] = []
        self._decisions: list[Decision] = []
        self._rounds = RoundTracker()
        self._room = asyncio.Event()  # set while the row buffers have room for more work
        self._room.set()
        self._retries: PendingRetries[_Job] = PendingRetries(self._queue.put, config.retry_max_age_seconds)
        self._failures = FailureLog(logger)
        self._flush_lock = asyncio.Lock()
        self._buffered = asyncio.Event()  # rows or finished rounds wait to be written
        # The last failure to write score and decision rows; None once a write succeeds again.
        self.write_error: str | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._state: Literal["new", "running", "stopping", "stopped"] = "new"
        self._stopped = asyncio.Event()
        self._producers = 0
        self._producers_idle = asyncio.Event()
        self._producers_idle.set()

    @property
    def wants_llm_calls(self) -> bool:
        """Whether a rule scores single model calls or spans (the transform then builds call units)."""
        return any(group[0].target != "run" for group in self._rule_groups)

    @property
    def rule_groups(self) -> tuple[RuleGroup, ...]:
        return self._rule_groups

    @property
    def scorer_ids(self) -> tuple[str, ...]:
        """The scorer ids this executor writes, in rule order; each run gets one decision per id."""
        return tuple(group[0].scorer_id for group in self._rule_groups)

    async def start(self) -> None:
        if self._state != "new":
            if self._state == "running":
                return
            raise RuntimeError("a ScoringExecutor cannot be restarted after shutdown")
        await self._guards.sync(now=True)
        if any(rule.scorer.judge_models for group in self._rule_groups for rule in group):
            # litellm takes seconds to import (tens on a busy machine): in a thread, before the first
            # judge call would import it on the event loop and stall every request and probe meanwhile.
            await asyncio.to_thread(litellm_module)
        self._tasks = [
            asyncio.create_task(self._work(), name=f"scoring-worker-{i}")
            for i in range(self._config.concurrency)
        ]
        self._tasks.append(asyncio.create_task(self._flush_periodically(), name="scoring-flush"))
        self._state = "running"

    @property
    def queued(self) -> int:
        return self._queue.qsize()

    @property
    def waiting_for_judge(self) -> int:
        return len(self._retries)

    @property
    def rows_buffered(self) -> int:
        return len(self._records) + len(self._decisions)

    def oldest_open(self) -> int | None:
        """The ``since`` (ns) of the oldest round whose decisions are not yet marked done."""
        return self._rounds.oldest_open()

    async def consume_runs(
        self,
        runs: Sequence[AgentRun],
        round: TraceRound | None = None,
        trace: TraceView | None = None,
        *,
        prior: PriorOutcomes | None = None,
    ) -> None:
        """Route each unit through the rules: one decision per scorer id; waits while the queue is full.

        A rule's units are the runs, or (``target``) the trace's model calls or the spans it names,
        which ``trace`` carries. With ``round``, the trace round is marked done
        (``ScoreSink.mark_done``) once every decision of its units is written; a resumed round reuses
        what an earlier attempt already wrote: ``round.prior`` when the assembler read it, else asked
        of the sink here; ``prior`` gives it directly (a backfill).
        """
        if self._state != "running":
            raise RuntimeError(f"ScoringExecutor.consume_runs while {self._state} (call start() first)")
        self._producers += 1
        self._producers_idle.clear()
        state = self._rounds.open(round) if round is not None else None
        try:
            if prior is None and round is not None and round.resumed:
                # Read with its release when the assembler has a store (in bulk); else asked here.
                prior = round.prior
                if prior is None:
                    prior = await self._sink.prior_outcomes(round.trace_id, round.through_unix_nano)
            if prior is None:
                prior = PriorOutcomes()
            if round is not None and round.unchanged:
                runs = []
            own: dict[str, bool] = {}  # the loop guard's answer per unit span
            for group in self._rule_groups:
                for unit in units_for(group[0].target, group, runs, trace):
                    if unit.span_id not in own:
                        own[unit.span_id] = is_own_judge_call(unit, trace)
                        self._metrics.loop_guarded.inc(own[unit.span_id])
                    if own[unit.span_id]:
                        continue  # tracescore's own judge call: never scored (the loop guard)
                    await self._room.wait()
                    await self._route(unit, group, round, state, prior, trace)
        except BaseException as exc:
            if state is not None:
                # Never marked done with decisions missing. A store that could not be read (retriable):
                # the round is dropped and the assembler, which gets the error, tries the trace again.
                # Anything else (a bug, shutdown): held open, so the next start scores the trace again.
                if is_retriable(exc):
                    self._rounds.abandon(state)
                else:
                    self._rounds.set_aside([state], set())
                state = None
            raise
        finally:
            if state is not None:
                self._rounds.routed(state)
                if self._rounds.has_finished():
                    self._buffered.set()  # a round without jobs: its mark is due
            self._producers -= 1
            if self._producers == 0:
                self._producers_idle.set()

    async def _route(
        self,
        unit: AgentRun,
        group: RuleGroup,
        round: TraceRound | None,
        state: RoundState | None,
        prior: PriorOutcomes,
        trace: TraceView | None,
    ) -> None:
        key = (unit.span_id, group[0].scorer_id)
        earlier = prior.earlier.get(key)
        if key in prior.decided or earlier == "scored":
            return  # decided by an earlier attempt at this round, or scored before: not judged again
        if key in prior.scored_undecided:
            detail = "the score was written before a restart; its decision is written now"
            self._add(None, self._decision(unit, group[0], "scored", detail))
            return
        routed = route(unit, group, self._config.sampling_salt, self._config.max_run_chars, trace)
        if routed.decision is not None and routed.decision == earlier:
            return  # the same decision as before: nothing new to write
        if routed.decision is None:
            if state is not None:
                self._rounds.queued(state)
            await self._queue.put(_Job(unit, routed.rule, state))
        else:
            detail = with_round(routed.detail, round)
            self._add(None, self._decision(unit, routed.rule, routed.decision, detail))

    @property
    def thresholds(self) -> dict[str, tuple[float, str]]:
        """Each stored scorer id's pass threshold and direction (rules with a ``threshold``)."""
        return thresholds(self._rule_groups)

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
            if waiting := self._retries.shutdown():
                # Their rounds are not marked done: after a restart, recovery scores them.
                logger.warning(
                    "%d run(s) waiting for their judge stay undecided until the next start", waiting
                )
            for task in self._tasks:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            self._failures.flush(final=True)
            await self._guards.sync(now=True)
            try:
                await self._flush()
            except Exception:
                # Their rounds are not marked done: the watermark stays below them, the next start
                # scores those traces again.
                logger.exception(
                    "the final write of %d score rows and %d decisions failed: their traces are scored "
                    "again on the next start",
                    len(self._records),
                    len(self._decisions),
                )
        finally:
            self._state = "stopped"
            self._stopped.set()

    async def _work(self) -> None:
        while True:
            job = await self._queue.get()
            decided = True
            try:
                record, decision = await self._execute(job)
                self._add(record, decision)
            except _RetryLater as later:
                decided = False  # its round stays open until the run is decided
                self._retries.schedule(later.job, later.job.attempts, later.not_before_s)
                self._metrics.pending_retries.set(len(self._retries))
                self._update_room()
            finally:
                if decided and job.round is not None:
                    self._rounds.decided(job.round)
                self._queue.task_done()

    async def _execute(self, job: _Job) -> tuple[ScoreRecord | None, Decision]:
        timeout = self._config.timeout_seconds
        if (refusal := self._guards.refusal(job.rule)) is not None:
            # A judge scorer whose budget is spent is not started (its first call would be refused).
            return None, self._decision(job.run, job.rule, "budget_exceeded", refusal)
        guard = self._guards.for_rule(job.rule)
        started = time.perf_counter()
        kept = transcribed() if self._config.record_judge_io else contextlib.nullcontext(Transcript())
        with metered() as usage, guarded(guard), kept as transcript:
            try:
                async with asyncio.timeout(timeout):
                    result = await job.rule.scorer.run(job.run)
                record = self._record(job, result, (time.perf_counter() - started) * 1000.0)
            except TimeoutError:
                self._count_usage(job.rule, usage, "failed")
                detail = f"timed out after {timeout:g} s"
                self._log_failure(job, "timeout", detail)
                return None, self._decision(job.run, job.rule, "failed", detail, transcript.kept())
            except Exception as exc:  # a failing scorer is a decision row, never a score
                if (over := _cause(exc, BudgetExceeded)) is not None:
                    self._count_usage(job.rule, usage, "budget_exceeded")
                    judge_io = transcript.kept()
                    return None, self._decision(job.run, job.rule, "budget_exceeded", str(over), judge_io)
                detail = str(exc) if isinstance(exc, ScorerError) else f"{type(exc).__name__}: {exc}"
                judge_error = _cause(exc, JudgeError)
                kind = judge_error.kind if judge_error is not None else _failure_kind(exc)
                tried = ""
                self._count_usage(job.rule, usage, "failed")
                if is_retriable(exc):
                    first = job.first_failed if job.first_failed is not None else time.monotonic()
                    if self._retries.may_wait(first):
                        self._log_failure(job, kind, _reason(exc), retrying=True)
                        raise _RetryLater(
                            replace(job, attempts=job.attempts + 1, first_failed=first),
                            judge_error.retry_after_s if judge_error is not None else None,
                        ) from exc
                    if job.attempts:
                        tried = f" (tried {job.attempts + 1} times over {time.monotonic() - first:.0f} s)"
                        detail += tried
                self._log_failure(job, kind, _reason(exc) + tried)
                return None, self._decision(job.run, job.rule, "failed", detail, transcript.kept())
        self._count_usage(job.rule, usage, "scored")
        round = job.round.round if job.round is not None else None
        detail = with_round("", round)
        return record, self._decision(job.run, job.rule, "scored", detail, transcript.kept())

    def _log_failure(self, job: _Job, kind: str, reason: str, *, retrying: bool = False) -> None:
        where = f"trace {job.run.trace_id} span {job.run.span_id}"
        self._failures.failed(job.rule.described, kind, where, reason, retrying=retrying)

    def _count_usage(self, rule: Rule, usage: JudgeUsage, outcome: DecisionKind) -> None:
        count_usage(self._metrics, rule, usage, outcome)

    def _record(self, job: _Job, result: ScorerResult, latency_ms: float) -> ScoreRecord:
        record = score_record(job.run, job.rule, result, latency_ms, self._source)
        count_score(self._metrics, job.rule, record)
        return record

    def _decision(
        self,
        run: AgentRun,
        rule: Rule,
        kind: DecisionKind,
        detail: str = "",
        judge_io: tuple[JudgeExchange, ...] = (),
    ) -> Decision:
        self._metrics.decisions.labels(scorer=rule.scorer_id, decision=kind).inc()
        return decision(run, rule, kind, detail, self._source, judge_io)

    def _add(self, record: ScoreRecord | None, decision: Decision) -> None:
        if record is not None:
            self._records.append(record)
        self._decisions.append(decision)
        self._buffered.set()
        self._update_room()

    async def _flush(self) -> None:
        """Write the buffered scores and decisions, then mark the rounds they complete as done."""
        async with self._flush_lock:
            if not self._records and not self._decisions and not self._rounds.has_finished():
                return
            batch = _Write(self._records, self._decisions, self._rounds.take_finished())
            self._records, self._decisions = [], []
            self._buffered.clear()
            write = asyncio.ensure_future(self._write(batch))
            try:
                # Shielded: the store's worker thread finishes a write it has begun whatever happens
                # here, so a flush cancelled at shutdown learns how it ended rather than guessing (a
                # guess of "not written" wrote every row a second time).
                await asyncio.shield(write)
            except asyncio.CancelledError:
                await asyncio.wait([write])
                if write.cancelled() or write.exception() is not None:
                    self._keep(batch)  # for the final flush
                else:
                    self._written(batch)
                raise
            except Exception as exc:
                self.write_error = f"{type(exc).__name__}: {exc}"
                if not is_retriable(exc):
                    written = batch.rows_written  # only the marks were refused: no row is set aside
                    self._set_aside(
                        [] if written else batch.records,
                        [] if written else batch.decisions,
                        batch.finished,
                        exc,
                    )
                    return
                self._keep(batch)  # a transient failure: try again what is not written
                raise
            self._written(batch)

    async def _write(self, batch: _Write) -> None:
        """Scores and decisions, then the marks of the rounds they complete (after them: a crash in
        between leaves the rounds undecided, and recovery reuses the rows)."""
        if not batch.rows_written:
            await self._sink.write_scores(batch.records, batch.decisions)
            batch.rows_written = True
        await self._sink.mark_done([state.round for state in batch.finished])

    def _written(self, batch: _Write) -> None:
        self._rounds.close(batch.finished)
        self.write_error = None
        self._metrics.scores_written.inc(len(batch.records))
        self._update_room()

    def _keep(self, batch: _Write) -> None:
        """Put what could not be written back in front of newer rows and rounds: the rows unless they
        were written (only the marks failed), the rounds to mark."""
        if not batch.rows_written:
            self._records[:0] = batch.records
            self._decisions[:0] = batch.decisions
        self._rounds.put_back(batch.finished)
        self._buffered.set()
        self._update_room()

    def _update_room(self) -> None:
        """New work waits while the buffers are full (the store is down) or too many runs wait for
        their judge (it is down): nothing is ever dropped."""
        if (
            len(self._records) + len(self._decisions) < MAX_BUFFERED_ROWS
            and len(self._retries) < MAX_PENDING_RETRIES
        ):
            self._room.set()
        else:
            self._room.clear()

    def _set_aside(
        self,
        records: list[ScoreRecord],
        decisions: list[Decision],
        finished: list[RoundState],
        exc: BaseException,
    ) -> None:
        """The store refuses these rows for good: trying them again would block every later row. Their
        rounds (and any open round of the same traces) stay open, so the watermark stays below them and
        the next start scores those traces again."""
        traces = {row.trace_id for row in records} | {row.trace_id for row in decisions}
        held = self._rounds.set_aside(finished, traces)
        self._metrics.rows_dropped.labels("score").inc(len(records))
        self._metrics.rows_dropped.labels("decision").inc(len(decisions))
        logger.error(
            "the store refused %d score rows and %d decisions for good (%s): their %d trace(s) stay "
            "undecided (%d round(s) held open) and are scored again on the next start",
            len(records),
            len(decisions),
            exc,
            len(traces),
            held,
        )
        self._update_room()

    async def _flush_periodically(self) -> None:
        """Write rows as soon as there are some, a write starting at least ``delay`` after the last one
        started (one that took longer is followed at once, with what gathered meanwhile); every
        ``delay`` anyway for the failure log and the budgets."""
        delay = self._flush_interval
        loop = asyncio.get_running_loop()
        started = loop.time()
        while True:
            await asyncio.sleep(max(0.0, started + delay - loop.time()))
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._buffered.wait()
            if self._buffered.is_set():
                started = loop.time()
            self._failures.flush()
            await self._guards.sync()
            try:
                await self._flush()
            except Exception as exc:
                delay = min(max(delay * 2, self._flush_interval), MAX_RETRY_DELAY_SECONDS)
                if isinstance(exc, Overloaded):  # the store's disk is under its floor: it says why
                    logger.warning("writing scores waits: %s; retrying in %.1f s", exc, delay)
                else:
                    logger.exception("writing scores failed; retrying in %.1f s", delay)
            else:
                delay = self._flush_interval


def _reason(exc: BaseException) -> str:
    """A failure's reason for the log line, which names the scorer already."""
    if isinstance(exc, ScorerError):
        return f"step {exc.step!r}: {exc.reason}" if exc.step else exc.reason
    return f"{type(exc).__name__}: {exc}"


def _failure_kind(exc: BaseException) -> str:
    """What makes two failures of a scorer the same for the log: the step and the root exception type."""
    root, seen = exc, {id(exc)}
    while root.__cause__ is not None and id(root.__cause__) not in seen:
        root = root.__cause__
        seen.add(id(root))
    step = exc.step if isinstance(exc, ScorerError) else None
    return f"{step or 'run'}: {type(root).__name__}"


def _cause(exc: BaseException, kind: type[E]) -> E | None:
    """``exc`` or the first of its causes that is a ``kind`` (scorers wrap what their steps raise)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
