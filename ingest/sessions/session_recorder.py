"""The pipeline steps that remember which runs belong to which session, before their round is done.

``SessionRecorder`` wraps the next ``RunConsumer`` (the executor): it notes the runs of each round
that carry a session id and forwards the round. ``SessionRunsSink`` wraps the score sink: when the
executor marks rounds done (``trace_done``, after their decisions), the noted runs of those rounds get
their ``session_runs`` rows first (arrived now: a session is idle from its last decided run on), in
one insert per flush rather than one per trace. So a round
marked done always has its session rows; a round killed before its mark is replayed by recovery,
noted again and written then (rows of the same run replace one another).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from tracescore.ingest.sessions.session_store import ScoredSession, SessionStore
from tracescore.schemas import AgentRun, Decision, ScoreRecord, TraceRound
from tracescore.schemas.consumers import PriorOutcomes, RunConsumer, ScoreSink
from tracescore.schemas.trace_view import TraceView


class PendingSessionRuns:
    """The session runs of rounds not yet marked done, by trace (a later round of a trace replaces
    an earlier one's: it was built from every item of the trace so far)."""

    def __init__(self) -> None:
        self._by_trace: dict[str, tuple[int, list[AgentRun]]] = {}

    def note(self, round: TraceRound, runs: Sequence[AgentRun]) -> None:
        # Only what a session_runs row holds: a run's messages are not kept until its round's mark.
        held = [
            AgentRun(
                trace_id=run.trace_id,
                span_id=run.span_id,
                session_id=run.session_id,
                start_time=run.start_time,
            )
            for run in runs
            if run.session_id
        ]
        if held:
            self._by_trace[round.trace_id] = (round.through_unix_nano, held)

    def take(self, rounds: Sequence[TraceRound]) -> list[tuple[AgentRun, int]]:
        """The runs of these rounds with the time each arrived (its round's newest item)."""
        taken: list[tuple[AgentRun, int]] = []
        for round in rounds:
            found = self._by_trace.get(round.trace_id)
            if found is not None and found[0] <= round.through_unix_nano:
                del self._by_trace[round.trace_id]
                taken.extend((run, found[0]) for run in found[1])
        return taken

    def put_back(self, runs: Sequence[tuple[AgentRun, int]]) -> None:
        """Runs whose rows could not be written: held again for the next try of their marks."""
        for run, arrived in runs:
            through, held = self._by_trace.get(run.trace_id, (arrived, []))
            if through == arrived:
                self._by_trace[run.trace_id] = (arrived, [*held, run])

    @property
    def held(self) -> int:
        return sum(len(runs) for _, runs in self._by_trace.values())


class SessionMarks:
    """Implements ``ScoreSink`` for the session executor around ``next``: a session unit is handed to
    the executor as a round of its own, and when the executor marks that round done (after its score
    and decision rows are written, however long its judge took) the session gets its ``session_done``
    mark instead of a ``trace_done`` row."""

    def __init__(self, next: ScoreSink, sessions: SessionStore, on_marked: Callable[[int], object]) -> None:
        self._next = next
        self._sessions = sessions
        self._on_marked = on_marked  # told how many sessions each mark wrote
        self._open: dict[int, tuple[TraceRound, ScoredSession]] = {}  # by the round's identity

    def open(self, round: TraceRound, session: ScoredSession) -> None:
        self._open[id(round)] = (round, session)

    def drop(self, round: TraceRound) -> None:
        """A round the executor will never mark (it failed to route it): the session is due again."""
        self._open.pop(id(round), None)

    def in_flight(self) -> set[str]:
        """The sessions handed to the executor and not yet marked."""
        return {session.session_id for _, session in self._open.values()}

    async def write_scores(self, records: Sequence[ScoreRecord], decisions: Sequence[Decision]) -> None:
        await self._next.write_scores(records, decisions)

    async def mark_done(self, rounds: Sequence[TraceRound]) -> None:
        sessions = [self._open[id(r)][1] for r in rounds if id(r) in self._open]
        await self._sessions.mark_done(sessions)
        for round in rounds:
            self._open.pop(id(round), None)
        self._on_marked(len(sessions))

    async def prior_outcomes(self, trace_id: str, since_unix_nano: int) -> PriorOutcomes:
        return await self._next.prior_outcomes(trace_id, since_unix_nano)


class SessionRecorder:
    """Implements ``RunConsumer``: notes the session runs of each round, then forwards it."""

    def __init__(self, next: RunConsumer, pending: PendingSessionRuns) -> None:
        self._next = next
        self._pending = pending

    async def consume_runs(
        self, runs: Sequence[AgentRun], round: TraceRound | None = None, trace: TraceView | None = None
    ) -> None:
        if round is not None:
            self._pending.note(round, runs)
        await self._next.consume_runs(runs, round, trace)


class SessionRunsSink:
    """Implements ``ScoreSink`` around ``next``: a round's session rows are written before its mark."""

    def __init__(self, next: ScoreSink, pending: PendingSessionRuns, sessions: SessionStore) -> None:
        self._next = next
        self._pending = pending
        self._sessions = sessions

    async def write_scores(self, records: Sequence[ScoreRecord], decisions: Sequence[Decision]) -> None:
        await self._next.write_scores(records, decisions)

    async def mark_done(self, rounds: Sequence[TraceRound]) -> None:
        runs = self._pending.take(rounds)
        try:
            # A run reaches its session when it is decided, not when its first span came: a session
            # is idle from its last decided run on.
            now = time.time_ns()
            await self._sessions.record_runs([(run, now) for run, _ in runs])
        except BaseException:
            self._pending.put_back(runs)
            raise
        await self._next.mark_done(rounds)

    async def prior_outcomes(self, trace_id: str, since_unix_nano: int) -> PriorOutcomes:
        return await self._next.prior_outcomes(trace_id, since_unix_nano)
