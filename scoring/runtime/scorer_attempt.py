"""One attempt of a scorer on one unit, and its outcome: decided, or to be tried again later.

A judge scorer whose budget is already spent is not started: ``budget_exceeded``. Otherwise the
scorer runs under its rule's judge guard (budgets, circuit breakers, redaction), metered, under
``timeout_seconds``. Its result becomes a validated ``Score`` and then a score row (``scored``); a
scorer that raises, times out or returns a value outside its scale gets ``failed`` with the reason
-- never a made-up or out-of-range score; one stopped by a budget during its run gets
``budget_exceeded``. Each of these is a ``Decided`` outcome. A retriable failure (the judge answered
429/5xx or timed out after its own per-call retries) within the retry window is ``RetryLater``: the
unit stays undecided and its job is tried again, not before the judge's Retry-After when it gave one.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TypeAlias, TypeVar

from tracescore.schemas import AgentRun, Decision, ScoreRecord
from tracescore.schemas.assembly_rounds import UnitOutcome
from tracescore.schemas.config import ScoringConfig
from tracescore.schemas.errors import is_retriable
from tracescore.scoring.framework.scorer import ScorerError
from tracescore.scoring.judge import JudgeError, JudgeUsage, metered
from tracescore.scoring.judge.call_guard import guarded
from tracescore.scoring.judge.transcript import Transcript, transcribed
from tracescore.scoring.runtime.cascades import GateBoard
from tracescore.scoring.runtime.failure_log import FailureLog
from tracescore.scoring.runtime.judge_budgets import BudgetExceeded
from tracescore.scoring.runtime.outcomes import OutcomeRows, with_round
from tracescore.scoring.runtime.round_tracker import RoundState
from tracescore.scoring.runtime.rule_guards import Guards
from tracescore.scoring.runtime.rule_routing import Rule

E = TypeVar("E", bound=BaseException)


@dataclass(frozen=True, slots=True)
class ScoringJob:
    """One unit (a run, a model call or a span) to score by one rule, and the round it belongs to."""

    run: AgentRun
    rule: Rule
    round: RoundState | None = None
    attempts: int = 0  # failed attempts so far (a judge outage)
    first_failed: float | None = None  # monotonic time of the first
    # The trace's cascades: the rules this one's outcome gates wait on it there (None: no cascade).
    gates: GateBoard[ScoringJob] | None = None


@dataclass(frozen=True, slots=True)
class Decided:
    """The unit is decided: its decision row, and its score row when it was scored."""

    decision: Decision
    record: ScoreRecord | None = None

    @property
    def unit_outcome(self) -> UnitOutcome:
        """The decision kind, with the score and label when it scored (what a cascade's gate gives)."""
        if self.record is None:
            return UnitOutcome(self.decision.decision)
        return UnitOutcome(self.decision.decision, self.record.score, self.record.label)


@dataclass(frozen=True, slots=True)
class RetryLater:
    """The judge is unavailable: try ``job`` (this failure counted in it) again later."""

    job: ScoringJob
    not_before_s: float | None = None  # the judge's Retry-After, or an open circuit's cooldown


AttemptOutcome: TypeAlias = Decided | RetryLater


class ScorerAttempts:
    """Runs one scorer on one unit (``attempt``) with the executor's guards, rows and failure log.

    ``may_retry(first_failed)`` says whether a job that first failed at that monotonic time may
    still wait for its judge.
    """

    def __init__(
        self,
        config: ScoringConfig,
        guards: Guards,
        rows: OutcomeRows,
        failures: FailureLog,
        may_retry: Callable[[float], bool],
    ) -> None:
        self._timeout = config.timeout_seconds
        self._record_judge_io = config.record_judge_io
        self._guards = guards
        self._rows = rows
        self._failures = failures
        self._may_retry = may_retry

    async def attempt(self, job: ScoringJob) -> AttemptOutcome:
        if (refusal := self._guards.refusal(job.rule)) is not None:
            # A judge scorer whose budget is spent is not started (its first call would be refused).
            return Decided(self._rows.decision(job.run, job.rule, "budget_exceeded", refusal))
        guard = self._guards.for_rule(job.rule)
        started = time.perf_counter()
        kept = transcribed() if self._record_judge_io else contextlib.nullcontext(Transcript())
        with metered() as usage, guarded(guard), kept as transcript:
            try:
                async with asyncio.timeout(self._timeout):
                    result = await job.rule.scorer.run(job.run)
                record = self._rows.score(job.run, job.rule, result, (time.perf_counter() - started) * 1000.0)
            except TimeoutError:
                return self._timed_out(job, usage, transcript)
            except Exception as exc:  # a failing scorer is a decision row, never a score
                return self._failed(job, exc, usage, transcript)
        self._rows.usage(job.rule, usage, "scored")
        detail = with_round("", job.round.round if job.round is not None else None)
        return Decided(self._rows.decision(job.run, job.rule, "scored", detail, transcript.kept()), record)

    def _timed_out(self, job: ScoringJob, usage: JudgeUsage, transcript: Transcript) -> Decided:
        self._rows.usage(job.rule, usage, "failed")
        detail = f"timed out after {self._timeout:g} s"
        self._log_failure(job, "timeout", detail)
        return Decided(self._rows.decision(job.run, job.rule, "failed", detail, transcript.kept()))

    def _failed(
        self, job: ScoringJob, exc: Exception, usage: JudgeUsage, transcript: Transcript
    ) -> AttemptOutcome:
        """The outcome of a scorer that raised ``exc``: over budget, waiting for its judge, or failed."""
        if (over := _cause(exc, BudgetExceeded)) is not None:
            self._rows.usage(job.rule, usage, "budget_exceeded")
            return Decided(
                self._rows.decision(job.run, job.rule, "budget_exceeded", str(over), transcript.kept())
            )
        detail = str(exc) if isinstance(exc, ScorerError) else f"{type(exc).__name__}: {exc}"
        judge_error = _cause(exc, JudgeError)
        kind = judge_error.kind if judge_error is not None else _failure_kind(exc)
        tried = ""
        self._rows.usage(job.rule, usage, "failed")
        if is_retriable(exc):
            first = job.first_failed if job.first_failed is not None else time.monotonic()
            if self._may_retry(first):
                self._log_failure(job, kind, _reason(exc), retrying=True)
                return RetryLater(
                    replace(job, attempts=job.attempts + 1, first_failed=first),
                    judge_error.retry_after_s if judge_error is not None else None,
                )
            if job.attempts:
                tried = f" (tried {job.attempts + 1} times over {time.monotonic() - first:.0f} s)"
                detail += tried
        self._log_failure(job, kind, _reason(exc) + tried)
        return Decided(self._rows.decision(job.run, job.rule, "failed", detail, transcript.kept()))

    def _log_failure(self, job: ScoringJob, kind: str, reason: str, *, retrying: bool = False) -> None:
        where = f"trace {job.run.trace_id} span {job.run.span_id}"
        self._failures.failed(job.rule.described, kind, where, reason, retrying=retrying)


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
