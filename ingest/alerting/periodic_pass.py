"""A pass the service runs every interval (drift, agreement): on the replica that leads it, a failed
pass logged and counted, the next one trying again."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)


class PeriodicPass:
    """Runs ``work`` every ``interval`` seconds while ``leads()``; ``counted`` is told each pass's
    outcome, ``done`` or ``failed``."""

    def __init__(
        self,
        name: str,
        interval: float,
        work: Callable[[], Awaitable[None]],
        leads: Callable[[], bool],
        counted: Callable[[str], None],
    ) -> None:
        self._name = name
        self._interval = interval
        self._work = work
        self._leads = leads
        self._counted = counted
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Returns at once; the first pass comes after one interval."""
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name=self._name)

    async def shutdown(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            if not self._leads():
                continue
            try:
                await self._work()
            except Exception:  # logged and counted; the next pass tries again
                self._counted("failed")
                log.exception("%s pass failed", self._name)
                continue
            self._counted("done")
