"""The scoring jobs waiting for a worker, the runs waiting for their judge, and the bounds on both.

Workers take jobs from a queue of ``QUEUE_SLOTS_PER_WORKER`` slots per worker; when it is full,
``put`` waits (backpressure up the pipeline, nothing is dropped). A job whose judge is unavailable
waits for its backoff in ``scoring.runtime.pending_runs`` and is then put back in the queue.

New work is admitted (``wait_for_room``) only while fewer than ``MAX_BUFFERED_ROWS`` score and
decision rows wait to be written (the store is down) and fewer than ``MAX_PENDING_RETRIES`` runs
wait for their judge (it is down): past either bound new work waits until there is room again;
nothing is dropped. Whoever changes either count calls ``update_room``. At shutdown, when the rows
cannot be written (the store refuses them), ``stop_admitting`` ends the wait: what waited raises
``ScoringStopped`` and stays undecided in the store, for the next start.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Generic, TypeVar

from tracescore.schemas.errors import ScoringStopped
from tracescore.scoring.runtime.pending_runs import PendingRetries

J = TypeVar("J")

log = logging.getLogger(__name__)

QUEUE_SLOTS_PER_WORKER = 4  # queued jobs per worker before ``put`` waits
MAX_BUFFERED_ROWS = 10_000  # score and decision rows waiting to be written; new work waits beyond it
MAX_PENDING_RETRIES = 10_000  # runs waiting for their judge; new work waits beyond it
STUCK_CHECK_SECONDS = 0.5  # how often ``until_idle`` looks whether it waits for rows that cannot be written


class JobQueue(Generic[J]):
    def __init__(self, workers: int, retry_max_age_seconds: float) -> None:
        self._jobs: asyncio.Queue[J] = asyncio.Queue(maxsize=workers * QUEUE_SLOTS_PER_WORKER)
        self._retries: PendingRetries[J] = PendingRetries(self._jobs.put, retry_max_age_seconds)
        self._room = asyncio.Event()  # set while new work may be admitted
        self._room.set()
        self._stopped_admitting = False

    @property
    def queued(self) -> int:
        """Jobs waiting for a worker."""
        return self._jobs.qsize()

    @property
    def waiting_for_judge(self) -> int:
        """Jobs waiting for their backoff to end before they are queued again."""
        return len(self._retries)

    async def put(self, job: J) -> None:
        """Queue ``job``; waits while the queue is full."""
        await self._jobs.put(job)

    async def get(self) -> J:
        return await self._jobs.get()

    def task_done(self) -> None:
        """A job taken with ``get`` is decided, or waits for its judge again."""
        self._jobs.task_done()

    async def join(self) -> None:
        """Wait until every queued job is taken and done (not for the jobs waiting for their judge)."""
        await self._jobs.join()

    def may_retry(self, first_failed: float) -> bool:
        """Whether a job that first failed at ``first_failed`` (monotonic) may still be tried again."""
        return self._retries.may_wait(first_failed)

    def retry_later(self, job: J, attempts: int, not_before_s: float | None) -> None:
        """Queue ``job`` again after its backoff (see ``pending_runs.retry_delay``)."""
        self._retries.schedule(job, attempts, not_before_s)

    def stop_retries(self) -> int:
        """Stop waiting for the judge (those runs stay undecided in the store); returns how many were
        waiting."""
        return self._retries.shutdown()

    @property
    def has_room(self) -> bool:
        return self._room.is_set()

    async def wait_for_room(self) -> None:
        """Wait until new work may be admitted (see the module docstring); raises ``ScoringStopped``
        once no more is (``stop_admitting``)."""
        await self._room.wait()
        if self._stopped_admitting:
            raise ScoringStopped("scoring stopped at shutdown with rows it could not write")

    async def until_idle(self, producers_idle: asyncio.Event, unwritable: Callable[[], str | None]) -> None:
        """Wait until ``producers_idle`` is set and every queued job is done -- unless new work waits for
        room that only a write can make and the rows cannot be written (``unwritable`` says why): then
        no more work is admitted (``stop_admitting``), and the wait ends as what waited gives up."""

        async def idle() -> None:
            await producers_idle.wait()
            await self.join()

        done = asyncio.ensure_future(idle())
        try:
            while not done.done():
                await asyncio.wait({done}, timeout=STUCK_CHECK_SECONDS)
                why = unwritable()
                if not done.done() and why is not None and not self.has_room and not self._stopped_admitting:
                    log.warning(
                        "shutdown: %s cannot be written; taking no more work: the traces not decided stay "
                        "in the store and the next start scores them",
                        why,
                    )
                    self.stop_admitting()
            await done
        finally:
            done.cancel()

    def stop_admitting(self) -> None:
        """Admit no more work: what waits for room, and what comes, raises ``ScoringStopped``."""
        self._stopped_admitting = True
        self._room.set()

    def update_room(self, rows_buffered: int) -> None:
        """Admit new work, or make it wait, by the rows now buffered and the runs waiting for their
        judge."""
        if self._stopped_admitting or (
            rows_buffered < MAX_BUFFERED_ROWS and len(self._retries) < MAX_PENDING_RETRIES
        ):
            self._room.set()
        else:
            self._room.clear()
