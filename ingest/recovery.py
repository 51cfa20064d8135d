"""Recovery: the store is the truth, so after a crash the service finds its unfinished work there.

A durable low watermark is kept per owner (``ingest_watermarks``): every item that arrived before
it belongs to a decided round. It is the oldest arrival still open anywhere in the pipeline (a
commit not yet handed on, a tracked trace, a round whose decisions are not yet marked done), saved
every ``checkpoint_seconds``. On start, every trace with items that arrived after it (less a margin
for clock wobble) and no ``trace_done`` row covering them is adopted by the assembler, which
reassembles it from the span ledger when it is due. The same scan brings back traces the assembler
forgot when it tracked too many.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence

from ingest.assemble import TraceAssembler
from ingest.metrics import Metrics
from ingest.store.ledger import Ledger

log = logging.getLogger(__name__)

DEFAULT_OWNER = "default"
CHECKPOINT_SECONDS = 5.0
MARGIN_NS = 60 * 1_000_000_000  # the scan starts this much before the watermark (clock wobble)

OpenSince = Callable[[], int | None]
"""A component's oldest open arrival (ns since the epoch), or None when it holds nothing open."""


class Recovery:
    """Adopts undecided traces on start; keeps the watermark; rescans for forgotten traces."""

    def __init__(
        self,
        ledger: Ledger,
        assembler: TraceAssembler,
        open_since: Sequence[OpenSince],
        metrics: Metrics,
        *,
        owner: str = DEFAULT_OWNER,
        checkpoint_seconds: float = CHECKPOINT_SECONDS,
        scan_limit: int | None = None,
        clock_ns: Callable[[], int] = time.time_ns,
    ) -> None:
        self._ledger = ledger
        self._assembler = assembler
        self._open_since = open_since
        self._metrics = metrics
        self._owner = owner
        self._checkpoint_seconds = checkpoint_seconds
        self._scan_limit = scan_limit
        self._clock_ns = clock_ns
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    async def start(self) -> None:
        """Adopt what the store holds undecided, then keep the watermark in the background."""
        if self._task is not None:
            return
        saved = await self._ledger.watermark(self._owner)
        adopted = await self.scan(max(0, saved - MARGIN_NS) if saved else 0)
        if adopted:
            log.info("recovery: %d undecided trace(s) found in the store will be scored", adopted)
        self._task = asyncio.create_task(self._loop(), name="recovery-checkpoint")

    async def shutdown(self) -> None:
        """Stop, after a last checkpoint (the pipeline has flushed by now). Idempotent."""
        self._stop.set()
        if self._task is not None:
            await self._task
            self._task = None
            with contextlib.suppress(Exception):
                await self.checkpoint()

    def watermark(self) -> int:
        """The oldest arrival still open in the pipeline, or now when nothing is."""
        now = self._clock_ns()
        opens = [since for source in self._open_since if (since := source()) is not None]
        return min([now, *opens])

    async def checkpoint(self) -> None:
        watermark = self.watermark()
        await self._ledger.save_watermark(self._owner, watermark, self._clock_ns())
        self._metrics.watermark_lag.set(max(0.0, (self._clock_ns() - watermark) / 1e9))

    async def scan(self, since: int) -> int:
        """Adopt the undecided traces with items that arrived from ``since`` on; returns how many."""
        limit = self._scan_limit or self._assembler.max_traces
        room = max(0, limit - self._assembler.tracked)
        if not room:
            return 0
        forgotten_before = self._assembler.forgotten
        found = await self._ledger.undecided(since, room)
        adopted = self._assembler.adopt(found)
        self._metrics.traces_recovered.inc(adopted)
        complete = len(found) < room
        if complete:
            self._assembler.recovered(
                since, forgotten_meanwhile=self._assembler.forgotten != forgotten_before
            )
        return adopted

    async def _loop(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self._checkpoint_seconds)
            if self._stop.is_set():
                return
            try:
                await self.checkpoint()
                floor = self._assembler.forgotten_floor()
                if floor is not None:
                    await self.scan(floor)
            except Exception:  # a store outage: the next round tries again
                log.warning("recovery checkpoint failed", exc_info=True)
