"""A clock the tests move by hand, in place of ``time.monotonic``."""

from __future__ import annotations


class ManualClock:
    """A clock that moves only when told to; lets tests step through idle and max-wait times."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
