"""The completion pass: find the sessions that are complete, score each whole conversation, write.

Every ``session.interval`` the pass asks the store for complete sessions not scored since their newest
run (``SessionStore.due``: idle for ``session.idle``, or a run waiting ``session.max_duration``),
keeps those this replica owns (the rendezvous hash of ``session:<id>`` over the live replicas, as for
traces), rebuilds their runs from the stored spans (``span_ledger``), joins each session's runs into
one conversation unit (``ingest.transform.conversation``), removes the rows of an earlier scoring
that sit on another span (the conversation had fewer turns then: a session is never counted twice),
and hands the units to the session executor (the ``target: session`` rules). Once their score and
decision rows are written, each session gets its ``session_done`` mark.

A kill at any point redoes no more than the unmarked sessions: the removal finds what is left to
remove, scored again their rows replace the ones written (the same span, scorer and ids), and the
mark comes last. Nothing is held only in memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter

from tracescore.ingest.replay.backfill import stored_items
from tracescore.ingest.sessions.session_store import DueSession, ScoredSession, SessionStore
from tracescore.ingest.store.ledger import Ledger
from tracescore.ingest.transform.conversation import conversation_unit
from tracescore.ingest.transform.scoring_units import build_units
from tracescore.schemas import AgentRun
from tracescore.schemas.scoring_config import ScoringConfig
from tracescore.schemas.session_config import SessionConfig
from tracescore.schemas.trace_view import TraceView
from tracescore.scoring.runtime.executor import ScoringExecutor
from tracescore.scoring.runtime.rule_routing import is_session_rule

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
        executor: ScoringExecutor,
        *,
        owns: Callable[[str], bool] = lambda key: True,
        max_spans: int = 10_000,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self._sessions = sessions
        self._ledger = ledger
        self._config = config
        self._executor = executor
        self._owns = owns
        self._max_spans = max_spans
        self._scored = Counter(
            "tracescore_sessions_scored",
            "Complete sessions handed to the session rules (a resumed session counts again)",
            registry=registry if registry is not None else CollectorRegistry(),
        )
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Starts the session executor and the periodic passes; returns at once."""
        await self._executor.start()
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name="sessions")

    async def shutdown(self) -> None:
        """Stops the passes (a pass cut short is redone on the next start: nothing was marked)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def shutdown_executor(self) -> None:
        """Stops the session executor once the passes have stopped (its rows written)."""
        await self._executor.shutdown()

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self._config.interval)
            try:
                while await self.run_pass() >= self._config.batch:
                    pass  # a full batch scored: more may be due
            except Exception:  # logged; the next pass tries again (nothing was marked)
                log.exception("session completion pass failed")

    async def run_pass(self, now_unix_nano: int | None = None) -> int:
        """Score the complete sessions this replica owns (of at most ``session.batch`` due); how many it
        scored and marked (0 when their rows could not all be written: they are due again)."""
        config = self._config
        due = await self._sessions.due(
            now_unix_nano if now_unix_nano is not None else time.time_ns(),
            idle=config.idle,
            max_duration=config.max_duration,
            lookback=config.lookback,
            limit=config.batch,
        )
        mine = [session for session in due if self._owns(SESSION_KEY_PREFIX + session.session_id)]
        if not mine:
            return 0
        return len(mine) if await self._complete(mine) else 0

    async def _complete(self, due: list[DueSession]) -> bool:
        """Score ``due`` and mark them; False when their rows are not all written (none marked)."""
        runs_of = await self._sessions.runs_of([session.session_id for session in due])
        built = await self._rebuild({key for keys in runs_of.values() for key in keys})
        scored: list[ScoredSession] = []
        for session in due:
            runs = [built[key][0] for key in runs_of.get(session.session_id, []) if key in built]
            if not runs:  # its traces are gone from the store (expired): nothing to score, ever
                scored.append(ScoredSession(session.session_id, session.through_unix_nano, "", ""))
                continue
            unit = conversation_unit(session.session_id, runs)
            done = ScoredSession(session.session_id, session.through_unix_nano, unit.trace_id, unit.span_id)
            # An earlier scoring's rows on another span go first: no read ever counts a session twice.
            await self._sessions.remove_superseded(done)
            await self._executor.consume_runs([unit], None, built[(unit.trace_id, unit.span_id)][1])
            scored.append(done)
        await self._executor.drain()
        if self._executor.rows_buffered or self._executor.write_error:
            log.warning("session scores are not all written yet; the sessions are scored again later")
            return False
        await self._sessions.mark_done(scored)
        self._scored.inc(len(scored))
        return True

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
