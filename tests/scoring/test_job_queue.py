"""The scoring job queue's bounds, and the two retry delays of the executor (the judge's backoff,
the score writes' backoff), pinned so that a change of policy is a visible one."""

from __future__ import annotations

import asyncio

import pytest

from tracescore.scoring.runtime import job_queue
from tracescore.scoring.runtime.job_queue import JobQueue
from tracescore.scoring.runtime.pending_runs import retry_delay
from tracescore.scoring.runtime.score_buffer import write_retry_policy


async def test_new_work_waits_while_too_many_runs_wait_for_their_judge(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(job_queue, "MAX_PENDING_RETRIES", 2)
    queue: JobQueue[str] = JobQueue(workers=1, retry_max_age_seconds=60)
    queue.retry_later("a", attempts=1, not_before_s=None)
    queue.update_room(rows_buffered=0)
    await asyncio.wait_for(queue.wait_for_room(), 1)  # one waiting: room left
    queue.retry_later("b", attempts=1, not_before_s=None)
    queue.update_room(rows_buffered=0)
    waiting = asyncio.create_task(queue.wait_for_room())
    await asyncio.sleep(0.05)
    assert not waiting.done() and queue.waiting_for_judge == 2
    assert sorted([await asyncio.wait_for(queue.get(), 3), await asyncio.wait_for(queue.get(), 3)]) == [
        "a",
        "b",
    ]
    queue.update_room(rows_buffered=0)  # both are back in the queue: room again
    await asyncio.wait_for(waiting, 1)
    assert queue.stop_retries() == 0


async def test_new_work_waits_while_too_many_rows_wait_for_the_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(job_queue, "MAX_BUFFERED_ROWS", 3)
    queue: JobQueue[str] = JobQueue(workers=1, retry_max_age_seconds=60)
    queue.update_room(rows_buffered=3)
    waiting = asyncio.create_task(queue.wait_for_room())
    await asyncio.sleep(0.05)
    assert not waiting.done()
    queue.update_room(rows_buffered=2)
    await asyncio.wait_for(waiting, 1)


def test_the_judge_backoff_doubles_with_jitter_up_to_a_minute_and_honours_retry_after() -> None:
    for attempts, low, high in ((1, 0.5, 1.0), (2, 1.0, 2.0), (4, 4.0, 8.0), (20, 30.0, 60.0)):
        delays = [retry_delay(attempts) for _ in range(200)]
        assert all(low <= delay <= high for delay in delays), attempts
        assert max(delays) - min(delays) > (high - low) / 4  # jittered, not one value
    assert all(30.0 <= retry_delay(1, not_before_s=30.0) <= 30.25 for _ in range(50))
    assert retry_delay(1, not_before_s=600.0) == 60.0  # the cap holds against a long Retry-After


def test_the_score_write_backoff_doubles_from_twice_the_flush_interval_up_to_five_seconds() -> None:
    policy = write_retry_policy(0.2)
    assert [policy.delay(n) for n in range(6)] == [0.4, 0.8, 1.6, 3.2, 5.0, 5.0]
    assert write_retry_policy(3.0).delay(0) == 5.0  # a long interval: the cap from the first wait
