"""Runs waiting for their judge: a judge outage leaves a run pending, not failed.

When a scorer fails with a retriable error (the judge answered 429/5xx or timed out after its own
per-call retries), the job is tried again after an exponential backoff with jitter, for up to
``max_age_seconds`` after its first failure; then it is failed with the reason. Its round stays open
meanwhile, so a restart finds the run undecided and scores it.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Coroutine
from typing import Any, Generic, TypeVar

J = TypeVar("J")

BACKOFF_INITIAL_SECONDS = 1.0
BACKOFF_MAX_SECONDS = 60.0


class PendingRetries(Generic[J]):
    def __init__(
        self,
        requeue: Callable[[J], Coroutine[Any, Any, None]],
        max_age_seconds: float,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._requeue = requeue
        self._max_age = max_age_seconds
        self._clock = clock
        self._waiting: dict[int, asyncio.TimerHandle] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._keys = 0

    def __len__(self) -> int:
        return len(self._waiting)

    def may_wait(self, first_failed: float) -> bool:
        """Whether a job that first failed at ``first_failed`` may still be tried again."""
        return self._clock() - first_failed < self._max_age

    def schedule(self, job: J, attempts: int, not_before_s: float | None = None) -> float:
        """Try ``job`` again after a backoff (seconds, returned), at least ``not_before_s`` (the judge's
        Retry-After, an open circuit's cooldown) when given, up to the backoff's cap."""
        delay = retry_delay(attempts, not_before_s)
        self._keys += 1
        key = self._keys
        self._waiting[key] = asyncio.get_running_loop().call_later(delay, self._due, key, job)
        return delay

    def shutdown(self) -> int:
        """Stop waiting (the runs stay undecided in the store); returns how many were waiting."""
        waiting = len(self._waiting)
        for handle in self._waiting.values():
            handle.cancel()
        self._waiting.clear()
        for task in self._tasks:
            task.cancel()
        return waiting

    def _due(self, key: int, job: J) -> None:
        self._waiting.pop(key, None)
        task = asyncio.create_task(self._requeue(job))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def retry_delay(attempts: int, not_before_s: float | None = None) -> float:
    """Seconds before the ``attempts``-th try of a run whose judge failed: exponential backoff from
    ``BACKOFF_INITIAL_SECONDS`` with half of it jittered, capped at ``BACKOFF_MAX_SECONDS``; at least
    ``not_before_s`` (plus up to 0.25 s of jitter, within the cap) when the judge said when."""
    delay = min(BACKOFF_MAX_SECONDS, BACKOFF_INITIAL_SECONDS * 2.0 ** max(0, attempts - 1))
    delay = delay / 2 + random.uniform(0, delay / 2)
    if not_before_s is not None:
        delay = max(delay, min(not_before_s + random.uniform(0, 0.25), BACKOFF_MAX_SECONDS))
    return delay
