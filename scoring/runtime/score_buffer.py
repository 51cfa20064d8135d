"""Score and decision rows waiting to be written, and their flushing to the score sink.

Each flush writes the buffered rows in one ``ScoreSink.write_scores``, then the ``trace_done`` marks
of the rounds they complete (``ScoreSink.mark_done``; ``scoring.runtime.round_tracker``): a crash
in between leaves those rounds undecided, and recovery reuses the rows. ``flush_periodically``
writes rows as soon as there are some, writes starting at least ``interval`` seconds apart (one
write carries what gathered meanwhile); the executor also flushes on ``drain()`` and ``shutdown()``.

When the sink fails with a retriable error (``schemas.errors.is_retriable``: the store unreachable,
busy, out of disk or memory) the rows stay buffered, before newer ones, and the periodic flush tries
again after a growing delay (``flush_retry_delay``); nothing is dropped (new work waits instead:
``scoring.runtime.job_queue``). A permanent error (the store refuses the rows themselves) would fail
the same way again and block every later row: those rows are set aside, counted and logged, and the
rounds they belong to are never marked done by this process -- they hold the watermark back, so the
next start finds those traces undecided and scores them again (``ingest.replay.recovery``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from tracescore.schemas import Decision, ScoreRecord
from tracescore.schemas.consumers import ScoreSink
from tracescore.schemas.errors import Overloaded, is_retriable
from tracescore.schemas.retry_policy import RetryPolicy
from tracescore.scoring.runtime.round_tracker import RoundState, RoundTracker
from tracescore.scoring.runtime.scoring_metrics import ScoringMetrics

MAX_RETRY_DELAY_SECONDS = 5.0
# A store refusing writes because its disk is under its floor says so before it does any work (a look
# at the disk): its rows are tried again this often, so they are written -- and the service is ready --
# within a moment of space coming back rather than after a backoff of seconds.
DISK_RETRY_SECONDS = 0.25


@dataclass(slots=True)
class _Write:
    """One flush: score and decision rows, then the rounds they complete."""

    records: list[ScoreRecord]
    decisions: list[Decision]
    finished: list[RoundState]
    rows_written: bool = False


class ScoreBuffer:
    """The rows of one executor until the sink has them; logs to the executor's ``logger``.

    ``on_change`` is called whenever the number of buffered rows may have changed (new work waits
    while there are too many).
    """

    def __init__(
        self,
        sink: ScoreSink,
        rounds: RoundTracker,
        metrics: ScoringMetrics,
        logger: logging.Logger,
        on_change: Callable[[], None],
    ) -> None:
        self._sink = sink
        self._rounds = rounds
        self._metrics = metrics
        self._logger = logger
        self._on_change = on_change
        self._records: list[ScoreRecord] = []
        self._decisions: list[Decision] = []
        self._flush_lock = asyncio.Lock()
        self._buffered = asyncio.Event()  # rows or finished rounds wait to be written
        # The last failure to write score and decision rows; None once a write succeeds again.
        self.write_error: str | None = None
        # The last failure was a store refusing for now (its disk under its floor): nothing else is wrong.
        self.write_waits_for_store = False

    @property
    def rows_buffered(self) -> int:
        return len(self._records) + len(self._decisions)

    def add(self, record: ScoreRecord | None, decision: Decision) -> None:
        """Buffer the rows of one decided unit: its decision, and its score row if it was scored."""
        if record is not None:
            self._records.append(record)
        self._decisions.append(decision)
        self._buffered.set()
        self._on_change()

    def note_finished_rounds(self) -> None:
        """Rounds may have finished without rows of their own (no jobs): their marks are due."""
        if self._rounds.has_finished():
            self._buffered.set()

    async def flush(self) -> None:
        """Write the buffered scores and decisions, then mark the rounds they complete as done.

        Raises the sink's retriable error (the rows are kept for the next flush); a permanent one
        sets the rows aside and is not raised."""
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
                self.write_waits_for_store = isinstance(exc, Overloaded)
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

    async def final_flush(self) -> None:
        """The last flush, at shutdown: a failure is logged, not raised."""
        try:
            await self.flush()
        except Overloaded as exc:  # the store's disk is under its floor: it says why
            self._logger.warning(
                "the final write of %d score rows and %d decisions waits no longer (%s): their traces "
                "are scored again on the next start",
                len(self._records),
                len(self._decisions),
                exc,
            )
        except Exception:
            # Their rounds are not marked done: the watermark stays below them, the next start
            # scores those traces again.
            self._logger.exception(
                "the final write of %d score rows and %d decisions failed: their traces are scored "
                "again on the next start",
                len(self._records),
                len(self._decisions),
            )

    async def flush_periodically(self, interval: float, housekeeping: Callable[[], Awaitable[None]]) -> None:
        """Write rows as soon as there are some, a write starting at least ``delay`` after the last one
        started (one that took longer is followed at once, with what gathered meanwhile); every
        ``delay`` anyway, after ``housekeeping``. ``delay`` is ``interval``, or after failed writes the
        shared retry policy's wait: doubling from twice ``interval`` up to ``MAX_RETRY_DELAY_SECONDS``."""
        write_retry = write_retry_policy(interval)
        delay, failed_writes = interval, 0
        loop = asyncio.get_running_loop()
        started = loop.time()
        while True:
            await asyncio.sleep(max(0.0, started + delay - loop.time()))
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._buffered.wait()
            if self._buffered.is_set():
                started = loop.time()
            await housekeeping()
            try:
                await self.flush()
            except Exception as exc:
                if isinstance(exc, Overloaded):  # the store's disk is under its floor: it says why
                    delay = min(interval, DISK_RETRY_SECONDS)
                    if not failed_writes:
                        self._logger.warning(
                            "writing scores waits: %s; trying again every %.2f s", exc, delay
                        )
                else:
                    delay = write_retry.delay(failed_writes)
                    self._logger.exception("writing scores failed; retrying in %.1f s", delay)
                failed_writes += 1
            else:
                if failed_writes:
                    self._logger.info(
                        "score and decision rows are written again (%d attempts waited)", failed_writes
                    )
                delay, failed_writes = interval, 0

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
        self.write_waits_for_store = False
        self._metrics.scores_written.inc(len(batch.records))
        self._on_change()

    def _keep(self, batch: _Write) -> None:
        """Put what could not be written back in front of newer rows and rounds: the rows unless they
        were written (only the marks failed), the rounds to mark."""
        if not batch.rows_written:
            self._records[:0] = batch.records
            self._decisions[:0] = batch.decisions
        self._rounds.put_back(batch.finished)
        self._buffered.set()
        self._on_change()

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
        self._logger.error(
            "the store refused %d score rows and %d decisions for good (%s): their %d trace(s) stay "
            "undecided (%d round(s) held open) and are scored again on the next start",
            len(records),
            len(decisions),
            exc,
            len(traces),
            held,
        )
        self._on_change()


def write_retry_policy(interval: float) -> RetryPolicy:
    """How the periodic flush waits after failed writes: twice ``interval`` first, doubling, at most
    ``MAX_RETRY_DELAY_SECONDS``, without jitter (one writer per process; nobody to spread from)."""
    first = min(2 * interval, MAX_RETRY_DELAY_SECONDS)
    return RetryPolicy(initial_s=first, max_s=MAX_RETRY_DELAY_SECONDS, multiplier=2, jitter=0)
