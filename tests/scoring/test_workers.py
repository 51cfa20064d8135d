"""Steps in worker processes: a timed-out step is really stopped, a dead worker fails only its
step, errors keep their type, and a step that cannot be pickled still runs (in a thread)."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from pathlib import Path

import pytest

from tests.support.runs import agent_run
from tracescore.scoring import create_scorer
from tracescore.scoring.framework.scorer import Scorer, ScorerError
from tracescore.scoring.framework.step_workers import StepWorkerDied, StepWorkers
from tracescore.scoring.framework.steps import StepContext


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in state


def spinning_scorer(pid_file: Path) -> Scorer:
    def spin(ctx: StepContext) -> float:
        pid_file.write_text(str(os.getpid()))
        while True:  # a step that would never end on its own
            pass

    return create_scorer(id="spinner", description="d").generate_score(spin, killable=True)


async def test_a_timed_out_step_stops_its_worker(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    scorer = spinning_scorer(pid_file)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(3):
            await scorer.run(agent_run("q", "a"))
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while alive(pid):
        assert time.monotonic() < deadline, "the worker running the timed-out step still runs"
        await asyncio.sleep(0.05)
    # The pool goes on with a new worker.
    quick = create_scorer(id="quick", description="d").generate_score(lambda ctx: 0.25, killable=True)
    assert (await quick.run(agent_run("q", "a"))).score == 0.25


async def test_a_worker_that_dies_fails_only_its_step() -> None:
    def crash(ctx: StepContext) -> float:
        os._exit(3)

    crashing = create_scorer(id="crashing", description="d").generate_score(crash, killable=True)
    with pytest.raises(ScorerError, match=r"died \(exit code 3\)") as failed:
        await crashing.run(agent_run("q", "a"))
    assert isinstance(failed.value.__cause__, StepWorkerDied)
    quick = create_scorer(id="quick", description="d").generate_score(lambda ctx: 0.75, killable=True)
    assert (await quick.run(agent_run("q", "a"))).score == 0.75


async def test_an_error_in_a_worker_keeps_its_type() -> None:
    def fail(ctx: StepContext) -> float:
        raise KeyError("no such field")

    scorer = create_scorer(id="failing", description="d").generate_score(fail, killable=True)
    with pytest.raises(ScorerError, match="no such field") as failed:
        await scorer.run(agent_run("q", "a"))
    assert isinstance(failed.value.__cause__, KeyError)


async def test_a_step_that_cannot_be_pickled_runs_in_a_thread(caplog: pytest.LogCaptureFixture) -> None:
    lock = threading.Lock()  # a lock cannot travel to another process

    def locked(ctx: StepContext) -> float:
        with lock:
            return 0.5

    scorer = create_scorer(id="locked", description="d").generate_score(locked, killable=True)
    with caplog.at_level(logging.WARNING, logger="tracescore.scoring.framework.step_workers"):
        assert (await scorer.run(agent_run("q", "a"))).score == 0.5
        assert (await scorer.run(agent_run("q", "b"))).score == 0.5
    warnings = [r for r in caplog.records if "cannot be sent to a worker process" in r.getMessage()]
    assert len(warnings) == 1


async def test_steps_beyond_the_workers_wait_for_a_free_one() -> None:
    workers = StepWorkers(size=2)
    try:
        answers = await asyncio.gather(*(workers.run(_pid_after, 0.2) for _ in range(6)))
        pids = [pid for pid, _ in answers]
        assert len(set(pids)) == 2 and workers.started == 2 and os.getpid() not in pids
        # Each answer comes with the seconds the step ran in its worker, not the wait for one.
        assert all(0.2 <= seconds < 0.4 for _, seconds in answers)
    finally:
        workers.close()


def _pid_after(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()
