"""Execute: score the units the router sends, under bounds, and write scores and decisions.

The executor wires small parts, each with one job:

- routing, here: each unit goes through each rule (``scoring.runtime.rule_routing``: filter, sample,
  needed content, size); a unit it decides without scoring (filtered, sampled out, skipped) gets its
  decision row at once, one to score becomes a ``ScoringJob``;
- cascades (``scoring.runtime.cascades``): gates are routed before the rules they gate; a gated
  rule's job waits on the trace's ``GateBoard`` until its gate decides the unit, then runs (on the
  worker that decided the gate) or is ``gated``; its round counts it as pending meanwhile;
- the queue and its bounds (``scoring.runtime.job_queue``): ``config.concurrency`` workers take jobs
  from a bounded queue; when it is full, or too many rows wait for the store or too many runs for
  their judge, ``consume_runs`` waits (backpressure up the pipeline, nothing is dropped);
- one attempt of a scorer on a unit (``scoring.runtime.scorer_attempt``): under a timeout and the
  judge guards; its outcome is decided (a score row and a ``scored`` decision, or ``failed`` with the
  reason, never a made-up score) or to be retried later, after a backoff, while the judge is down
  (``scoring.runtime.pending_runs``);
- the row buffer (``scoring.runtime.score_buffer``): rows written to the score sink soon after they
  are decided, kept and retried while the store fails, set aside (counted and logged) when it
  refuses them for good;
- the rounds (``scoring.runtime.round_tracker``): an assembled round is marked done once every
  decision of its units is written, so the service's watermark only passes decided traces.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Literal

from tracescore.schemas import AgentRun, ScoreSource, TraceRound
from tracescore.schemas.assembly_rounds import UnitOutcome
from tracescore.schemas.config import ScoringConfig
from tracescore.schemas.consumers import PriorOutcomes, ScoreSink, SpendStore
from tracescore.schemas.errors import is_retriable
from tracescore.schemas.trace_view import TraceView
from tracescore.scoring.judge import litellm_module
from tracescore.scoring.prebuilt.registry import ScorerFactory
from tracescore.scoring.runtime.cascades import GateBoard, held_by
from tracescore.scoring.runtime.failure_log import FailureLog
from tracescore.scoring.runtime.job_queue import JobQueue
from tracescore.scoring.runtime.outcomes import OutcomeRows, with_round
from tracescore.scoring.runtime.round_tracker import RoundState, RoundTracker
from tracescore.scoring.runtime.rule_guards import Guards
from tracescore.scoring.runtime.rule_routing import (
    Routed,
    RuleGroup,
    build_rules,
    gate_ids,
    is_own_judge_call,
    route,
    routing_order,
    thresholds,
    units_for,
)
from tracescore.scoring.runtime.score_buffer import ScoreBuffer
from tracescore.scoring.runtime.scorer_attempt import RetryLater, ScorerAttempts, ScoringJob
from tracescore.scoring.runtime.scoring_metrics import ScoringMetrics

logger = logging.getLogger(__name__)

DEFAULT_FLUSH_INTERVAL_SECONDS = 0.5


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
        self._routing_order = routing_order(self._rule_groups)  # gates first
        self._gate_ids = gate_ids(self._rule_groups)
        self._guards = Guards(config, self._rule_groups, metrics, spend=spend, replica_id=replica_id)
        self._sink = sink
        self._metrics = metrics
        self._flush_interval = flush_interval
        self._rows = OutcomeRows(metrics, source)
        self._rounds = RoundTracker()
        self._jobs: JobQueue[ScoringJob] = JobQueue(config.concurrency, config.retry_max_age_seconds)
        self._buffer = ScoreBuffer(sink, self._rounds, metrics, logger, on_change=self._update_room)
        self._failures = FailureLog(logger)
        may_retry = self._jobs.may_retry
        self._attempts = ScorerAttempts(config, self._guards, self._rows, self._failures, may_retry)
        self._tasks: list[asyncio.Task[None]] = []
        self._state: Literal["new", "running", "stopping", "stopped"] = "new"
        self._stopped = asyncio.Event()
        self._producers = 0
        self._producers_idle = asyncio.Event()
        self._producers_idle.set()

    @property
    def wants_llm_calls(self) -> bool:
        """Whether a rule scores single model calls or spans (the transform then builds call units)."""
        return any(group[0].target not in ("run", "session") for group in self._rule_groups)

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
        flushing = self._buffer.flush_periodically(self._flush_interval, self._housekeeping)
        self._tasks.append(asyncio.create_task(flushing, name="scoring-flush"))
        self._state = "running"

    @property
    def queued(self) -> int:
        return self._jobs.queued

    @property
    def waiting_for_judge(self) -> int:
        return self._jobs.waiting_for_judge

    @property
    def rows_buffered(self) -> int:
        return self._buffer.rows_buffered

    @property
    def write_error(self) -> str | None:
        """The last failure to write score and decision rows; None once a write succeeds again."""
        return self._buffer.write_error

    @property
    def write_waits_for_store(self) -> bool:
        """The last write failed only because the store refused writes for now (its disk under its
        floor): the rows are kept and tried again every moment."""
        return self._buffer.write_waits_for_store

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
        """Route each unit through the rules: one decision per scorer id; waits while the queue is full
        or new work must wait (too many rows for the store or runs for their judge: ``job_queue``).

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
            gates: GateBoard[ScoringJob] | None = GateBoard(self._gate_ids) if self._gate_ids else None
            for group in self._routing_order:
                for unit in units_for(group[0].target, group, runs, trace):
                    if unit.span_id not in own:
                        own[unit.span_id] = is_own_judge_call(unit, trace)
                        self._metrics.loop_guarded.inc(own[unit.span_id])
                    if own[unit.span_id]:
                        continue  # tracescore's own judge call: never scored (the loop guard)
                    await self._jobs.wait_for_room()
                    await self._route(unit, group, round, state, prior, trace, gates)
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
                self._buffer.note_finished_rounds()  # a round without jobs: its mark is due
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
        gates: GateBoard[ScoringJob] | None,
    ) -> None:
        key = (unit.span_id, group[0].scorer_id)
        earlier = prior.earlier.get(key)
        if key in prior.decided or earlier == "scored" or key in prior.scored_undecided:
            if key not in prior.decided and earlier != "scored":
                detail = "the score was written before a restart; its decision is written now"
                self._buffer.add(None, self._rows.decision(unit, group[0], "scored", detail))
            # Decided (or scored) by an earlier attempt: not judged again; its gated rules read it.
            stored = prior.outcomes.get(key) or UnitOutcome(earlier or "scored")
            await self._settle(gates, unit, group[0].scorer_id, stored)
            return
        routed = route(unit, group, self._config.sampling_salt, self._config.max_run_chars, trace)
        job = ScoringJob(unit, routed.rule, state, gates=gates)
        if routed.decision is None and routed.rule.when is not None and gates is not None:
            gate_id = routed.rule.gate_id
            if gates.will_decide(unit.span_id, gate_id):  # the gate is queued, or waits itself
                if state is not None:
                    self._rounds.queued(state)
                gates.expect(unit.span_id, routed.rule.scorer_id)
                gates.wait(unit.span_id, gate_id, job)  # decided when its gate is
                return
            held = held_by(routed.rule.when, gates.outcome(unit.span_id, gate_id))
            if held is not None:
                routed = Routed(routed.rule, "gated", held)
        if routed.decision is not None and routed.decision == earlier:
            await self._settle(gates, unit, routed.rule.scorer_id, UnitOutcome(routed.decision))
            return  # the same decision as before: nothing new to write
        if routed.decision is None:
            if state is not None:
                self._rounds.queued(state)
            if gates is not None:
                gates.expect(unit.span_id, routed.rule.scorer_id)
            await self._jobs.put(job)
        else:
            detail = with_round(routed.detail, round)
            self._buffer.add(None, self._rows.decision(unit, routed.rule, routed.decision, detail))
            await self._settle(gates, unit, routed.rule.scorer_id, UnitOutcome(routed.decision))

    async def _settle(
        self, gates: GateBoard[ScoringJob] | None, unit: AgentRun, scorer_id: str, outcome: UnitOutcome
    ) -> None:
        """A rule decided ``unit`` while routing: what waited for it is decided or queued."""
        for job in self._release(gates, unit, scorer_id, outcome):
            await self._jobs.put(job)

    def _release(
        self, gates: GateBoard[ScoringJob] | None, unit: AgentRun, scorer_id: str, outcome: UnitOutcome
    ) -> list[ScoringJob]:
        """The rule of ``scorer_id`` came to ``outcome`` on ``unit``: the rules waiting for it there
        that it holds get their ``gated`` decision (and release, in turn, the rules waiting for them);
        the jobs it lets through are returned, to run."""
        if gates is None:
            return []
        through: list[ScoringJob] = []
        settled = [(scorer_id, outcome)]
        while settled:
            gate_id, gate_outcome = settled.pop()
            for job in gates.settle(unit.span_id, gate_id, gate_outcome):
                assert job.rule.when is not None  # only gated rules wait
                held = held_by(job.rule.when, gate_outcome)
                if held is None:
                    through.append(job)
                    continue
                detail = with_round(held, job.round.round if job.round is not None else None)
                self._buffer.add(None, self._rows.decision(job.run, job.rule, "gated", detail))
                if job.round is not None:
                    self._rounds.decided(job.round)
                settled.append((job.rule.scorer_id, UnitOutcome("gated")))
        return through

    @property
    def thresholds(self) -> dict[str, tuple[float, str]]:
        """Each stored scorer id's pass threshold and direction (rules with a ``threshold``)."""
        return thresholds(self._rule_groups)

    async def drain(self) -> None:
        """Wait until every run submitted so far is scored and its rows are written."""
        await self._producers_idle.wait()
        await self._jobs.join()
        await self._buffer.flush()

    async def shutdown(self) -> None:
        """Finish queued and in-flight work, write what is buffered, stop. Idempotent."""
        if self._state in ("stopping", "stopped"):
            await self._stopped.wait()
            return
        was_running = self._state == "running"
        self._state = "stopping"
        try:
            if was_running:
                # Unless new work waits for room that only a write can make and the rows cannot be
                # written: then no more is taken, and what waits stays undecided in the store.
                await self._jobs.until_idle(self._producers_idle, self._unwritable)
            if waiting := self._jobs.stop_retries():
                # Their rounds are not marked done: after a restart, recovery scores them.
                logger.warning(
                    "%d run(s) waiting for their judge stay undecided until the next start", waiting
                )
            for task in self._tasks:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            self._failures.flush(final=True)
            await self._guards.sync(now=True)
            await self._buffer.final_flush()
        finally:
            self._state = "stopped"
            self._stopped.set()

    def _unwritable(self) -> str | None:
        """Why buffered rows cannot be written now, and how many there are (None: they can)."""
        error = self._buffer.write_error
        return None if error is None else f"{self._buffer.rows_buffered} score and decision rows ({error})"

    async def _work(self) -> None:
        while True:
            job = await self._jobs.get()
            try:
                to_run = [job]
                while to_run:  # a decided gate lets the jobs waiting for it run here, now
                    to_run.extend(await self._decide(to_run.pop(0)))
            finally:
                self._jobs.task_done()

    async def _decide(self, job: ScoringJob) -> list[ScoringJob]:
        """One attempt at ``job``: its rows buffered, or a retry scheduled; returns the gated jobs its
        outcome lets through."""
        decided = True
        try:
            outcome = await self._attempts.attempt(job)
            if isinstance(outcome, RetryLater):
                decided = False  # its round stays open until the run is decided
                self._jobs.retry_later(outcome.job, outcome.job.attempts, outcome.not_before_s)
                self._metrics.pending_retries.set(self._jobs.waiting_for_judge)
                self._update_room()
                return []
            self._buffer.add(outcome.record, outcome.decision)
            return self._release(job.gates, job.run, job.rule.scorer_id, outcome.unit_outcome)
        finally:
            if decided and job.round is not None:
                self._rounds.decided(job.round)

    async def _housekeeping(self) -> None:
        """What every periodic flush does first: summaries of repeated failures in the log, and the
        judge budgets' spend shared with the other replicas."""
        self._failures.flush()
        await self._guards.sync()

    def _update_room(self) -> None:
        self._jobs.update_room(self._buffer.rows_buffered)
