"""Scorer steps in worker processes, so a step that outlives its timeout is really stopped.

A sync step measured slow (``scoring.framework.step_placement``), or declared ``killable``, runs in
one of ``STEP_WORKERS`` worker processes: off the service's event loop and off its interpreter lock,
so scoring cannot starve intake. The step and what it sees travel pickled with cloudpickle (a
scorer's steps are often closures over its options). When the wait for a step is cancelled -- the
scorer's timeout fired, or the service stops -- the worker running it is killed and a new one takes
its place: the step's work stops with it. A worker that dies on its own (a crash in native code, the
OOM killer) fails that step with the reason.

Workers are fresh interpreters (``python -m tracescore.scoring.framework.step_worker_process``, not
``fork``: the service's own
threads -- gRPC, chDB -- make forking unsafe, and unlike multiprocessing's ``spawn`` nothing of the
caller's ``__main__`` is run again), started on first use and shared by every event loop of the
process. Each waits on its pipe and exits when the service process is gone (the pipe closes), even
after a SIGKILL.

A step that cannot be pickled (it holds a lock or a socket) runs in a thread instead, with one
warning per step function; a thread cannot be stopped, so such a step must stay cheap. The same
threads run the steps not yet measured (``in_thread``).

Both return the step's value with the seconds it ran, measured where it ran.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import contextvars
import functools
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from typing import Any

import cloudpickle

from tracescore.scoring.framework.step_placement import timed_call

log = logging.getLogger(__name__)

STEP_WORKERS = 2  # worker processes (and threads) for the steps run off the loop, shared by all scorers
KILL_GRACE_SECONDS = 2.0


class StepWorkerDied(RuntimeError):
    """The worker process running a step died (not killed by us); the step failed."""


class _StepCancelled(Exception):
    """The wait for the step was cancelled before or while it ran (the worker was killed)."""


class _Worker:
    def __init__(self) -> None:
        request_read, request_write = os.pipe()
        answer_read, answer_write = os.pipe()
        # The worker imports what the steps need (by reference) from the same paths as this process.
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(path for path in sys.path if path)}
        try:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tracescore.scoring.framework.step_worker_process",
                    str(request_read),
                    str(answer_write),
                ],
                pass_fds=(request_read, answer_write),
                stdin=subprocess.DEVNULL,
                env=env,
            )
        finally:
            os.close(request_read)
            os.close(answer_write)
        self.requests = Connection(request_write, readable=False)
        self.answers = Connection(answer_read, writable=False)

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def call(self, payload: bytes) -> tuple[bool, Any, str]:
        self.requests.send_bytes(payload)
        reply: tuple[bool, Any, str] = cloudpickle.loads(self.answers.recv_bytes())
        return reply

    def kill(self) -> None:
        with contextlib.suppress(Exception):
            self.process.kill()

    def close(self) -> None:
        """Stop it and reap it."""
        self.kill()
        with contextlib.suppress(Exception):
            self.process.wait(KILL_GRACE_SECONDS)
        for conn in (self.requests, self.answers):
            with contextlib.suppress(Exception):
                conn.close()


class _Job:
    def __init__(self, payload: bytes) -> None:
        self.payload = payload
        self.lock = threading.Lock()
        self.cancelled = False
        self.worker: _Worker | None = None

    def cancel(self) -> None:
        with self.lock:
            self.cancelled = True
            if self.worker is not None:
                self.worker.kill()  # the step's work stops here; the waiting thread reaps it


class StepWorkers:
    """A fixed number of worker processes; ``run`` sends a step to an idle one and awaits its answer."""

    def __init__(self, size: int = STEP_WORKERS) -> None:
        self._size = size
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        # One thread per worker waits for its answer; a job beyond them waits for a free worker.
        self._waiters = ThreadPoolExecutor(max_workers=size, thread_name_prefix="tracescore-step-wait")
        self._threads = ThreadPoolExecutor(max_workers=size, thread_name_prefix="tracescore-step")
        self._unpicklable: set[str] = set()
        self.started = 0  # worker processes started so far (a replaced worker counts again)

    async def run(self, fn: Callable[[Any], Any], argument: Any) -> tuple[Any, float]:
        """``fn(argument)`` in a worker process, and the seconds it ran there; cancelling the wait
        kills the worker running it."""
        try:
            payload = cloudpickle.dumps((fn, argument))
        except Exception as exc:
            return await self._in_thread(fn, argument, exc)
        job = _Job(payload)
        waiting = asyncio.get_running_loop().run_in_executor(self._waiters, self._run_job, job)
        try:
            ok, value, text = await waiting
        except asyncio.CancelledError:
            job.cancel()
            raise
        if ok:
            timed: tuple[Any, float] = value
            return timed
        if isinstance(value, BaseException):
            raise value
        raise RuntimeError(text)

    def close(self) -> None:
        """Stop every idle worker (those running a step stop when it ends)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.close()

    def _run_job(self, job: _Job) -> tuple[bool, Any, str]:
        with job.lock:
            if job.cancelled:
                raise _StepCancelled()
            job.worker = worker = self._take()
        try:
            reply = worker.call(job.payload)
        except (EOFError, OSError) as exc:
            worker.close()
            with job.lock:
                if job.cancelled:
                    raise _StepCancelled() from None
            code = worker.process.returncode
            raise StepWorkerDied(f"the worker process running the step died (exit code {code})") from exc
        with self._lock:
            self._idle.append(worker)
        return reply

    def _take(self) -> _Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.alive:
                    return worker
                worker.close()
        self.started += 1
        return _Worker()

    async def _in_thread(self, fn: Callable[[Any], Any], argument: Any, why: Exception) -> tuple[Any, float]:
        name = getattr(fn, "__qualname__", repr(fn))
        if name not in self._unpicklable:
            self._unpicklable.add(name)
            log.warning(
                "step %s cannot be sent to a worker process (%s); it runs in a thread, "
                "where a timeout cannot stop it",
                name,
                why,
            )
        return await self.in_thread(fn, argument)

    async def in_thread(self, fn: Callable[[Any], Any], argument: Any) -> tuple[Any, float]:
        """``fn(argument)`` in one of the steps' threads, in the caller's context (its judge usage
        meter, its trace), and the seconds it ran there."""
        loop = asyncio.get_running_loop()
        call = functools.partial(contextvars.copy_context().run, timed_call, fn, argument)
        return await loop.run_in_executor(self._threads, call)


@functools.cache
def step_workers() -> StepWorkers:
    """The process's step workers (started on first use, shared by every event loop, stopped
    when the process exits)."""
    workers = StepWorkers()
    atexit.register(workers.close)
    return workers
