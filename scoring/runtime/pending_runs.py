"""Runs waiting for their judge: a judge outage leaves a run pending, not failed.

When a scorer fails with a retriable error (the judge answered 429/5xx or timed out after its own
per-call retries), the job is tried again after an exponential backoff with jitter (the one
``RetryPolicy``: 1 s doubling up to a minute, each wait between half and all of that), for up to
``max_age_seconds`` after its first failure; then it is failed with the reason. Its round stays open
meanwhile, so a restart finds the run undecided and scores it.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Coroutine
from typing import Any, Generic, TypeVar

from tracescore.schemas.retry_policy import RetryPolicy

J = TypeVar("J")

BACKOFF_INITIAL_SECONDS = 1.0
BACKOFF_MAX_SECONDS = 60.0
BACKOFF_JITTER = 0.5
PENDING_RETRY = RetryPolicy(
    initial_s=BACKOFF_INITIAL_SECONDS, max_s=BACKOFF_MAX_SECONDS, jitter=BACKOFF_JITTER
)
# Runs that wait for the same hint (an open circuit's cooldown) are spread over this much more, so
# they do not all reach the judge at once.
HINT_SPREAD_SECONDS = 0.25


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
    """Seconds before the ``attempts``-th try of a run whose judge failed: ``PENDING_RETRY``'s wait;
    at least ``not_before_s`` (plus up to ``HINT_SPREAD_SECONDS``, within the cap) when the judge
    said when."""
    hint = None if not_before_s is None else not_before_s + random.uniform(0, HINT_SPREAD_SECONDS)
    return PENDING_RETRY.delay(max(0, attempts - 1), at_least=hint)
