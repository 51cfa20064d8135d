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

On the loop, where a cheap step runs, its time is sampled: one run in ``SAMPLE_EVERY`` is timed (two
clock reads and a mean cost as much as a trivial step itself), which keeps the estimate current. And
one slow run of a step measured cheap is held back until the next run, which is timed: a process that
was preempted mid-step (a loaded machine) or a garbage collection would otherwise send a cheap step
to a worker process, whose round trips cost a hundred times the step, until the mean came down
again. A step that really became slow is slow again on that next run, and moves then.
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
# On the loop, one run in this many is timed (a step that slows down is seen within this many runs).
SAMPLE_EVERY = 8
# A measurement counts as at most this long: the mean only decides loop or worker, and one very
# slow run (a library imported on first use, hundreds of ms) would otherwise keep a cheap step in
# a worker for dozens of runs while the mean came down a quarter at a time (now about nine).
LONGEST_COUNTED_SECONDS = 10 * LOOP_BUDGET_SECONDS


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

    __slots__ = ("_seconds", "_held", "_until_sample", "loop_sizes")

    def __init__(self) -> None:
        self._seconds: dict[int, float] = {}
        # The size classes where the step runs on the loop (measured under the budget): a set
        # lookup per run, where ``place`` would cost a call and a comparison.
        self.loop_sizes: set[int] = set()
        # Size classes where the last timed run of a step measured cheap was slow (held back).
        self._held: set[int] = set()
        self._until_sample = 1

    def place(self, size: int) -> Place:
        """Where the step runs on a run of size class ``size``."""
        seconds = self._seconds.get(size)
        if seconds is None:  # cost does not shrink with size: slow on smaller runs is slow here
            slow_below = any(s >= LOOP_BUDGET_SECONDS for k, s in self._seconds.items() if k < size)
            return Place.WORKER if slow_below else Place.THREAD
        return Place.LOOP if seconds < LOOP_BUDGET_SECONDS else Place.WORKER

    def sampled(self) -> bool:
        """Whether to time this run on the loop (one in ``SAMPLE_EVERY``)."""
        self._until_sample -= 1
        if self._until_sample > 0:
            return False
        self._until_sample = SAMPLE_EVERY
        return True

    def record(self, size: int, seconds: float) -> None:
        """Count one run of the step: ``seconds`` on a run of size class ``size``."""
        seconds = min(seconds, LONGEST_COUNTED_SECONDS)
        mean = self._seconds.get(size)
        if mean is not None and seconds >= LOOP_BUDGET_SECONDS > mean and size not in self._held:
            self._held.add(size)  # one slow run of a cheap step: counted if the next is slow too,
            self._until_sample = 1  # and the next is timed, so a step that really slowed moves now
            return
        self._held.discard(size)
        mean = seconds if mean is None else mean + NEWEST_WEIGHT * (seconds - mean)
        self._seconds[size] = mean
        if mean < LOOP_BUDGET_SECONDS:
            self.loop_sizes.add(size)
        else:
            self.loop_sizes.discard(size)

    def seconds(self, size: int) -> float | None:
        """The mean running time at size class ``size`` (None: not measured there)."""
        return self._seconds.get(size)


def timed_call(fn: Callable[[Any], Any], argument: Any) -> tuple[Any, float]:
    """``fn(argument)`` and the seconds it took, measured where it runs (loop, thread or worker)."""
    started = time.perf_counter()
    value = fn(argument)
    return value, time.perf_counter() - started
