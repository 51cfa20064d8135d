"""Scorer and judge failures in the log: one WARNING each, rate-limited per scorer.

Every failure is also a decision row with its reason; the log is for whoever watches the service.
Under a storm (a judge down, a scorer bug hitting every run) each scorer logs at most
``per_interval`` lines per ``interval_seconds``, then one line saying how many it held back.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from schemas.secrets import scrub

DEFAULT_PER_INTERVAL = 5
DEFAULT_INTERVAL_SECONDS = 60.0


@dataclass
class _Window:
    started: float
    logged: int = 0
    held_back: int = 0
    last_reason: str = ""


class FailureLog:
    def __init__(
        self,
        logger: logging.Logger,
        *,
        per_interval: int = DEFAULT_PER_INTERVAL,
        interval_seconds: float = DEFAULT_INTERVAL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._logger = logger
        self._per_interval = per_interval
        self._interval = interval_seconds
        self._clock = clock
        self._windows: dict[str, _Window] = {}

    def failed(self, scorer_id: str, run_id: str, reason: str, *, retrying: bool = False) -> None:
        reason = scrub(reason)
        now = self._clock()
        window = self._windows.get(scorer_id)
        if window is None or now - window.started >= self._interval:
            if window is not None and window.held_back:
                self._logger.warning(
                    "scorer %s failed %d more time(s) in the last %.0f s (last: %s)",
                    scorer_id,
                    window.held_back,
                    now - window.started,
                    window.last_reason,
                )
            window = self._windows[scorer_id] = _Window(now)
        if window.logged < self._per_interval:
            window.logged += 1
            what = "will be retried" if retrying else "failed"
            self._logger.warning("scorer %s on run %s %s: %s", scorer_id, run_id, what, reason)
        else:
            window.held_back += 1
            window.last_reason = reason
