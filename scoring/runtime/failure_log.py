"""Scorer and judge failures in the log: one WARNING line each, repeats summed up.

Every failure is also a decision row with its reason; the log is for whoever watches the service
(the store may be closed to them: embedded chDB admits one process). A failure is logged in full
once: the rule and scorer, the trace and span, the reason. The same scorer failing the same way again
-- the same ``kind``: a judge's 401, its timeouts, one exception type of a heuristic scorer -- within
``interval_seconds`` is counted instead; while such repeats go on, one line per interval says how many
there were, with the latest reason. After an interval without repeats, the next failure is logged in
full again. So a judge that refuses every call costs one line a minute per rule, not one per run.
When what failed works again (``recovered``), one line says so, with how many failures there were.
The Kafka receiver logs an unreachable broker the same way.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from tracescore.schemas.secrets import scrub

DEFAULT_INTERVAL_SECONDS = 60.0


@dataclass
class _Repeats:
    since: float  # when the line it sums up was logged (or the last summary)
    count: int = 0
    where: str = ""
    reason: str = ""
    started: float = 0.0  # when the first failure of the run of them was logged
    total: int = 1  # failures since then, that first one included


class FailureLog:
    def __init__(
        self,
        logger: logging.Logger,
        *,
        interval_seconds: float = DEFAULT_INTERVAL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._logger = logger
        self._interval = interval_seconds
        self._clock = clock
        self._repeats: dict[tuple[str, str, bool], _Repeats] = {}

    def failed(self, who: str, kind: str, where: str, reason: str, *, retrying: bool = False) -> None:
        """``who`` (``rule x (scorer y)``) failed on ``where`` (``trace t span s``) with ``reason``;
        ``kind`` groups repeats; ``retrying``: the run waits for its judge instead of failing."""
        self.flush()
        reason = " ".join(scrub(reason).split())  # one line, also for a multi-line validation error
        key = (who, kind, retrying)
        repeats = self._repeats.get(key)
        if repeats is None:
            now = self._clock()
            self._repeats[key] = _Repeats(now, started=now)
            what = "will be retried" if retrying else "failed"
            self._logger.warning("%s %s on %s: %s", who, what, where, reason)
            return
        repeats.count += 1
        repeats.total += 1
        repeats.where = where
        repeats.reason = reason

    def recovered(self, who: str, how: str) -> None:
        """``who`` works again (``how``: ``reached host:9092 again``): one line, if its failures were
        logged, with how many there were; the next failure is logged in full."""
        ended = [key for key in self._repeats if key[0] == who]
        if not ended:
            return
        runs = [self._repeats.pop(key) for key in ended]
        total = sum(repeats.total for repeats in runs)
        took = self._clock() - min(repeats.started for repeats in runs)
        self._logger.warning("%s %s after %d failure(s) in %.0f s", who, how, total, took)

    def flush(self, *, final: bool = False) -> None:
        """Log the summary of the repeats whose interval is over (all of them when ``final``)."""
        now = self._clock()
        for key, repeats in list(self._repeats.items()):
            if not final and now - repeats.since < self._interval:
                continue
            if repeats.count:
                who, _, retrying = key
                what = "run(s) left waiting for the judge" if retrying else "failure(s) of the same kind"
                self._logger.warning(
                    "%s: %d more %s in the last %.0f s; the latest on %s: %s",
                    who,
                    repeats.count,
                    what,
                    now - repeats.since,
                    repeats.where,
                    repeats.reason,
                )
            if repeats.count and not final:  # still failing: the next summary in an interval
                self._repeats[key] = _Repeats(now, started=repeats.started, total=repeats.total)
            else:
                del self._repeats[key]
