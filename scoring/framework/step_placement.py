"""Where a function step runs -- on the event loop, in a thread, or in a worker process -- from its
measured cost.

A sync step's running time is measured every time it runs and kept per size of run (a size class
is a power of two of the run's characters of text: a text comparison costs more on a longer run), as
an exponentially weighted mean, the way Dask's scheduler estimates the duration of a kind of task
from the ones that ran. From that estimate:

- measured under ``LOOP_BUDGET_SECONDS``: on the event loop, called right there (the hop to a
  thread or a process would cost a large share of such a step, and the loop waits no longer);
- measured at or over it: in a worker process (``scoring.framework.step_workers``), off the loop
  and its interpreter lock, where the round trip is a small share and a timeout kills the process;
- not yet measured at this size: in a thread, so that a first run that turns out slow holds the
  interpreter lock one switch interval at a time and the loop keeps turning; unless the step was
  already measured slow on smaller runs, then in a worker process straight away.

A step that was cancelled while it ran (the scorer's timeout) counts as having taken at least the
time it ran, so its next run goes to a worker process, where a timeout stops it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from enum import Enum
from typing import Any

# A step measured under this runs on the event loop: the loop's other work (intake, other scorers)
# waits at most about this long for it. At or over it, the step goes to a worker process, whose
# round trip (pickling the run and the answer: ~0.1-0.3 ms) is then a small share of the step.
LOOP_BUDGET_SECONDS = 0.001
# The weight of the newest measurement in the mean: one slow run (a preempted process, a garbage
# collection) moves the mean a quarter of the way, not all of it.
NEWEST_WEIGHT = 0.25


class Place(Enum):
    """Where a function step runs."""

    LOOP = "loop"
    THREAD = "thread"
    WORKER = "worker"


def size_class(chars: int) -> int:
    """The size class of a run of ``chars`` characters of text: runs in one class differ at most 2x."""
    return chars.bit_length()


class StepCost:
    """The measured running time of one step, by size class of run (see the module docstring)."""

    def __init__(self) -> None:
        self._seconds: dict[int, float] = {}

    def place(self, size: int) -> Place:
        """Where the step runs on a run of size class ``size``."""
        seconds = self._seconds.get(size)
        if seconds is None:  # cost does not shrink with size: slow on smaller runs is slow here
            slow_below = any(s >= LOOP_BUDGET_SECONDS for k, s in self._seconds.items() if k < size)
            return Place.WORKER if slow_below else Place.THREAD
        return Place.LOOP if seconds < LOOP_BUDGET_SECONDS else Place.WORKER

    def record(self, size: int, seconds: float) -> None:
        """Count one run of the step: ``seconds`` on a run of size class ``size``."""
        mean = self._seconds.get(size)
        self._seconds[size] = seconds if mean is None else mean + NEWEST_WEIGHT * (seconds - mean)

    def seconds(self, size: int) -> float | None:
        """The mean running time at size class ``size`` (None: not measured there)."""
        return self._seconds.get(size)


def timed_call(fn: Callable[[Any], Any], argument: Any) -> tuple[Any, float]:
    """``fn(argument)`` and the seconds it took, measured where it runs (loop, thread or worker)."""
    started = time.perf_counter()
    value = fn(argument)
    return value, time.perf_counter() - started
