"""The completion pass: find the sessions that are complete, score each whole conversation, write.

Every ``session.interval`` the pass asks the store for complete sessions not scored since their newest
run (``SessionStore.due``: idle for ``session.idle``, or a run waiting ``session.max_duration``),
keeps those this replica owns (the rendezvous hash of ``session:<id>`` over the live replicas, as for
traces), rebuilds their runs from the stored spans (``span_ledger``), joins each session's runs into
one conversation unit (``ingest.transform.conversation``), removes the rows of an earlier scoring
that sit on another span (the conversation had fewer turns then: a session is never counted twice),
and hands each unit to the session executor (the ``target: session`` rules) as a round of its own.
The executor marks a round done once every decision of it is written, however long its judge takes
(``SessionMarks``): the session then gets its ``session_done`` mark. A session in the executor is
not handed on again; a judge that is down holds only its own sessions.

A kill at any point redoes no more than the unmarked sessions: the removal finds what is left to
remove, scored again their rows replace the ones written (the same span, scorer and ids), and the
mark comes last. Nothing is held only in memory.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter

from tracescore.ingest.alerting.periodic_pass import PeriodicPass
from tracescore.ingest.replay.backfill import stored_items
from tracescore.ingest.sessions.session_recorder import SessionMarks
from tracescore.ingest.sessions.session_store import DueSession, ScoredSession, SessionStore
from tracescore.ingest.store.ledger import Ledger
from tracescore.ingest.transform.conversation import conversation_unit
from tracescore.ingest.transform.scoring_units import build_units
from tracescore.schemas import AgentRun, TraceRound
from tracescore.schemas.consumers import ScoreSink, SpendStore
from tracescore.schemas.scoring_config import ScoringConfig
from tracescore.schemas.session_config import SessionConfig
from tracescore.schemas.trace_view import TraceView
from tracescore.scoring.runtime.executor import ScoringExecutor
from tracescore.scoring.runtime.rule_routing import is_session_rule
from tracescore.scoring.runtime.scoring_metrics import ScoringMetrics

log = logging.getLogger(__name__)

# The ring key a session is owned by among the replicas (``Membership.owns``).
SESSION_KEY_PREFIX = "session:"

RunKey = tuple[str, str]  # (trace id, root span id)


def split_session_rules(scoring: ScoringConfig) -> tuple[ScoringConfig, ScoringConfig | None]:
    """The scoring config of runs, model calls and spans, and that of whole conversations (None
    without ``target: session`` rules)."""
    sessions = [rule for rule in scoring.rules if is_session_rule(rule)]
    if not sessions:
        return scoring, None
    others = [rule for rule in scoring.rules if not is_session_rule(rule)]
    return scoring.model_copy(update={"rules": others}), scoring.model_copy(update={"rules": sessions})


class SessionMonitor:
    """The periodic completion pass of one service (``start``/``shutdown``), or one pass at a time
    (``run_pass``)."""

    def __init__(
        self,
        sessions: SessionStore,
        ledger: Ledger,
        config: SessionConfig,
        scoring: ScoringConfig,
        sink: ScoreSink,
        metrics: ScoringMetrics,
        *,
        spend: SpendStore | None = None,
        replica_id: str = "",
        owns: Callable[[str], bool] = lambda key: True,
        max_spans: int = 10_000,
        registry: CollectorRegistry | None = None,
    ) -> None:
        """``scoring``: the ``target: session`` rules (``split_session_rules``), run by an executor of
        their own that writes to ``sink`` and marks each session once its rows are written."""
        self._sessions = sessions
        self._ledger = ledger
        self._config = config
        self._owns = owns
        self._max_spans = max_spans
        scored = Counter(
            "tracescore_sessions_scored",
            "Complete sessions scored and marked (a resumed session counts again)",
            registry=registry if registry is not None else CollectorRegistry(),
        )
        self._marks = SessionMarks(sink, sessions, on_marked=scored.inc)
        self._executor = ScoringExecutor(
            scoring, self._marks, metrics, spend=spend, replica_id=f"{replica_id}/sessions"
        )
        # Passes on every replica: each completes the sessions it owns. Failures are logged by the loop.
        self._periodic = PeriodicPass(
            "session completion", config.interval, self._pass_while_full, lambda: True, lambda _: None
        )

    async def start(self) -> None:
        """Starts the session executor and the periodic passes; returns at once."""
        await self._executor.start()
        self._periodic.start()

    async def shutdown(self) -> None:
        """Stops the passes (a pass cut short is redone on the next start: what it left unmarked)."""
        await self._periodic.shutdown()

    async def shutdown_executor(self) -> None:
        """Stops the session executor once the passes have stopped: the sessions it holds are scored,
        written and marked (those waiting for a judge are left unmarked, and scored after a restart)."""
        await self._executor.shutdown()

    async def drain(self) -> None:
        """Wait until every session handed to the executor so far is scored, written and marked."""
        await self._executor.drain()

    async def _pass_while_full(self) -> None:
        """Passes until one hands on less than a full batch (a full one: more may be due). A failed pass
        is logged by the loop and tried again next interval; what it left is not marked."""
        while await self.run_pass() >= self._config.batch:
            pass

    async def run_pass(self, now_unix_nano: int | None = None) -> int:
        """Hand the complete sessions this replica owns (of at most ``session.batch`` due) that are not
        in the executor already to it; how many."""
        config = self._config
        due = await self._sessions.due(
            now_unix_nano if now_unix_nano is not None else time.time_ns(),
            idle=config.idle,
            max_duration=config.max_duration,
            lookback=config.lookback,
            limit=config.batch,
        )
        in_flight = self._marks.in_flight()
        mine = [
            session
            for session in due
            if session.session_id not in in_flight and self._owns(SESSION_KEY_PREFIX + session.session_id)
        ]
        if mine:
            await self._complete(mine)
        return len(mine)

    async def _complete(self, due: list[DueSession]) -> None:
        """Hand each of ``due`` to the executor as a round of its own (marked once its rows are written)."""
        runs_of = await self._sessions.runs_of([session.session_id for session in due])
        built = await self._rebuild({key for keys in runs_of.values() for key in keys})
        expired: list[ScoredSession] = []
        for session in due:
            runs = [built[key][0] for key in runs_of.get(session.session_id, []) if key in built]
            if not runs:  # its traces are gone from the store (expired): nothing to score, ever
                expired.append(ScoredSession(session.session_id, session.through_unix_nano, "", ""))
                continue
            unit = conversation_unit(session.session_id, runs)
            done = ScoredSession(session.session_id, session.through_unix_nano, unit.trace_id, unit.span_id)
            # An earlier scoring's rows on another span go first: no read ever counts a session twice.
            await self._sessions.remove_superseded(done)
            round = TraceRound(
                trace_id=unit.trace_id,
                since_unix_nano=0,
                through_unix_nano=done.through_unix_nano,
                reason="idle",
            )
            self._marks.open(round, done)
            try:
                await self._executor.consume_runs([unit], round, built[(unit.trace_id, unit.span_id)][1])
            except BaseException:
                self._marks.drop(round)
                raise
        await self._sessions.mark_done(expired)

    async def _rebuild(self, keys: set[RunKey]) -> dict[RunKey, tuple[AgentRun, TraceView]]:
        """The runs named by ``keys``, rebuilt from their stored traces, each with its trace's view."""
        stored = await self._ledger.load(sorted({trace_id for trace_id, _ in keys}))
        built: dict[RunKey, tuple[AgentRun, TraceView]] = {}
        for trace in stored.values():
            spans, logs = stored_items(trace, self._max_spans)
            runs, view = await asyncio.to_thread(build_units, spans, logs)
            for run in runs:
                if (run.trace_id, run.span_id) in keys:
                    built[(run.trace_id, run.span_id)] = (run, view)
        return built
