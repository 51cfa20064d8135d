"""Recovery: the store is the truth, so after a crash the service finds its unfinished work there.

A durable low watermark is kept per replica (``ingest_watermarks``): every item that arrived before
it, of a trace this replica owns, belongs to a decided round. It is the oldest arrival still open
anywhere in the pipeline (a commit not yet handed on, a tracked trace, a round whose decisions are
not yet marked done, hand-offs not yet read, a scan not yet finished), saved every
``checkpoint_seconds``. On start, every trace this replica owns with items that arrived after it
(less a margin for clock wobble) and no ``trace_done`` row covering them is adopted by the
assembler, which reassembles it from the span ledger when it is due. The same scan brings back
traces the assembler forgot when it tracked too many.

Recovery runs in bulk, beside new traffic: the scan reads pages of ``page_traces`` traces (the first
before the receivers start, the next whenever the assembler has released most of the last), the
assembler releases a few hundred adopted traces at a time after the new traces due, and each release
asks the store about all its traces at once. ``progress()`` reports it (``/healthz``).

With several replicas on one store (``ingest.replication.membership``), recovery also moves traces between
them:

- every second it reads the traces handed to this replica (items another replica stored) and adopts
  those still undecided; one it does not own (the live set changed meanwhile) is passed on;
- when a replica joins, the traces held here that it now owns are handed to it;
- when a replica dies, each survivor scans the store from the dead replica's watermark and adopts
  the undecided traces it now owns;
- on a clean shutdown, the traces held here are handed to their owners among the others instead of
  being scored early.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tracescore.ingest.assembly.assembler import TraceAssembler
from tracescore.ingest.assembly.trace_state import TracedItems
from tracescore.ingest.observability.service_metrics import Metrics
from tracescore.ingest.replication.membership import Membership, MembershipChange
from tracescore.ingest.store.ledger import Ledger
from tracescore.ingest.store.replica_table import ReplicaTable, handoff_row
from tracescore.ingest.store.rows import iso_from_nanos
from tracescore.schemas.errors import StoreFull

log = logging.getLogger(__name__)

CHECKPOINT_SECONDS = 5.0
HANDOFF_SECONDS = 1.0
# Undecided traces one scan adopts at most: a page takes the store a fraction of a second to find, so
# new spans committing meanwhile barely wait, and the adopted traces held at once stay few.
PAGE_TRACES = 10_000
PAGE_SECONDS = 0.2  # how often the next page is considered
MARGIN_NS = 60 * 1_000_000_000  # the scan starts this much before the watermark (clock wobble)
# Hand-off rows are read again this far back: a large commit becomes visible a while after its
# Arrived stamp. Rows read before are skipped.
HANDOFF_MARGIN_NS = 30 * 1_000_000_000

OpenSince = Callable[[], int | None]
"""A component's oldest open arrival (ns since the epoch), or None when it holds nothing open."""


@dataclass
class _Scan:
    """A scan for undecided traces under way, page by page: from ``floor`` on, next after the trace
    ``after`` whose first undecided item arrived at ``first``."""

    floor: int
    first: int
    after: str = ""
    forgotten: int = 0  # the assembler's count of forgotten traces when the scan began


@dataclass
class _Progress:
    """A recovery's work: traces adopted from the store, and when it began and ended (monotonic)."""

    found: int = 0
    released_before: int = 0  # adopted traces the assembler had released before it began
    started: float | None = None
    started_ns: int = 0
    finished: float | None = None


class Recovery:
    """Adopts undecided traces on start; keeps the watermark; rescans for forgotten traces; moves
    traces between replicas."""

    def __init__(
        self,
        ledger: Ledger,
        assembler: TraceAssembler,
        open_since: Sequence[OpenSince],
        metrics: Metrics,
        membership: Membership,
        replicas: ReplicaTable,
        *,
        checkpoint_seconds: float = CHECKPOINT_SECONDS,
        handoff_seconds: float = HANDOFF_SECONDS,
        page_traces: int = PAGE_TRACES,
        clock_ns: Callable[[], int] = time.time_ns,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ledger = ledger
        self._assembler = assembler
        self._open_since = open_since
        self._metrics = metrics
        self._membership = membership
        self._replicas = replicas
        self._checkpoint_seconds = checkpoint_seconds
        self._handoff_seconds = handoff_seconds
        self._page_traces = page_traces
        self._clock_ns = clock_ns
        self._clock = clock
        self._scan: _Scan | None = None  # pages left to read
        self._small_page_at = -math.inf  # when the last page of less than half a page was read
        self._scanning = asyncio.Lock()  # one page read at a time
        self._progress = _Progress()
        self._tasks: list[asyncio.Task[None]] = []
        self._stop = asyncio.Event()
        self._handoff_cursor = clock_ns()
        self._handoffs_read: set[tuple[str, int]] = set()  # (trace, Arrived) of hand-offs read
        self._handing: list[TracedItems] = []  # traces taken out of the assembler, being handed off
        # Hand-off queues of replicas that went (replica -> read until, ns): a peer that had not yet
        # seen them go may still have handed them traces.
        self._orphaned: dict[str, int] = {}
        membership.subscribe(self.on_membership)

    @property
    def owner(self) -> str:
        return self._membership.replica_id

    async def start(self) -> None:
        """Adopt what the store holds undecided, then keep the watermark in the background."""
        if self._tasks:
            return
        saved = await self._ledger.watermark(self.owner)
        adopted = await self.scan(max(0, saved - MARGIN_NS) if saved else 0)
        if adopted:
            more = " (and more, read page by page)" if self._scan is not None else ""
            log.info("recovery: %d undecided trace(s) found in the store will be scored%s", adopted, more)
        self._tasks = [
            asyncio.create_task(self._checkpoint_loop(), name="recovery-checkpoint"),
            asyncio.create_task(self._handoff_loop(), name="recovery-handoffs"),
            asyncio.create_task(self._page_loop(), name="recovery-pages"),
        ]

    async def shutdown(self) -> None:
        """Stop, after a last checkpoint (the pipeline has flushed by now). Idempotent."""
        self._stop.set()
        if self._tasks:
            await asyncio.gather(*self._tasks)
            self._tasks = []
            with contextlib.suppress(Exception):
                await self.checkpoint()

    def watermark(self) -> int:
        """The oldest arrival still open in the pipeline, or now when nothing is."""
        now = self._clock_ns()
        opens = [since for source in self._open_since if (since := source()) is not None]
        opens.append(self._handoff_cursor - HANDOFF_MARGIN_NS)
        opens.extend(trace.since for trace in self._handing if trace.since)
        if self._scan is not None:  # traces not yet adopted have no item before it
            opens.append(self._scan.first)
        return min([now, *opens])

    async def checkpoint(self) -> None:
        watermark = self.watermark()
        await self._ledger.save_watermark(self.owner, watermark, self._clock_ns())
        self._metrics.watermark_lag.set(max(0.0, (self._clock_ns() - watermark) / 1e9))

    async def scan(self, since: int) -> int:
        """Adopt the undecided traces this replica owns with items that arrived from ``since`` on,
        a page of them; the next pages follow as the assembler releases them (``more_to_scan``).
        Returns how many were adopted."""
        async with self._scanning:
            scan = self._scan
            if scan is None:
                self._scan = _Scan(since, since, forgotten=self._assembler.forgotten)
            elif since < scan.first:  # traces before the pages read so far: read again from there
                self._scan = _Scan(min(since, scan.floor), since, forgotten=scan.forgotten)
            return await self._next_page()

    @property
    def more_to_scan(self) -> bool:
        """A scan has pages left: undecided traces in the store are not adopted yet."""
        return self._scan is not None

    async def scan_more(self) -> int:
        """Adopt the next page of the scan under way (none: 0). The page loop calls it once the
        assembler has released most of the last page."""
        async with self._scanning:
            return await self._next_page()

    async def _next_page(self) -> int:
        """Read and adopt the next page of the scan under way (the caller holds ``_scanning``)."""
        scan = self._scan
        if scan is None:
            return 0
        room = min(self._page_traces, max(0, self._assembler.max_traces - self._assembler.tracked))
        # With more traces open than max_traces (long-running agents), releases free a few places at a
        # time: a page that small costs a scan of the store all the same, so one is read at most
        # every checkpoint_seconds.
        small = room < min(self._page_traces, self._assembler.max_traces) // 2
        if not room or (small and self._clock() - self._small_page_at < self._checkpoint_seconds):
            return 0
        if small:
            self._small_page_at = self._clock()
        began, began_ns, released = self._clock(), self._clock_ns(), self._assembler.resumed_released
        found = await self._ledger.undecided(scan.first, room, after=scan.after)
        adopted = self._assembler.adopt([f for f in found if self._membership.owns(f.trace_id)])
        self._metrics.traces_recovered.inc(adopted)
        if adopted and (self._progress.started is None or self._progress.finished is not None):
            self._progress = _Progress(released_before=released, started=began, started_ns=began_ns)
        self._progress.found += adopted
        if len(found) < room:
            self._scan = None
            forgotten = self._assembler.forgotten != scan.forgotten
            self._assembler.recovered(scan.floor, forgotten_meanwhile=forgotten)
        else:
            scan.first, scan.after = found[-1].first_arrived, found[-1].trace_id
        self._assembler.read_back_new(self._scan is not None)
        self._finish_if_done()
        return adopted

    def progress(self) -> dict[str, object]:
        """The last recovery's progress (``/healthz``): idle (none yet), recovering, or done; the
        traces found undecided in the store, done (released to scoring), remaining, and the rate."""
        self._finish_if_done()
        progress = self._progress
        if progress.started is None:
            state, done, seconds, started_at = "idle", 0, 0.0, None
        else:
            state = "done" if progress.finished is not None else "recovering"
            done = self._assembler.resumed_released - progress.released_before
            seconds = (progress.finished or self._clock()) - progress.started
            started_at = iso_from_nanos(progress.started_ns)
        return {
            "state": state,
            "found": progress.found,
            "done": done,
            "remaining": self._assembler.resumed,
            "more_in_store": self._scan is not None,
            "traces_per_second": round(done / seconds, 1) if seconds > 0 else 0.0,
            "seconds": round(seconds, 3),
            "started_at": started_at,
        }

    def _finish_if_done(self) -> None:
        progress = self._progress
        if (
            progress.started is not None
            and progress.finished is None
            and self._scan is None
            and not self._assembler.resumed
        ):
            progress.finished = self._clock()
            seconds = progress.finished - progress.started
            log.info("recovery done: %d trace(s) in %.1f s", progress.found, seconds)

    async def read_handoffs(self) -> int:
        """Adopt the undecided traces handed to this replica since the last read; pass on those it
        no longer owns. Returns how many were adopted."""
        started = self._clock_ns()
        since = self._handoff_cursor - HANDOFF_MARGIN_NS
        rows = await self._replicas.handoffs(self.owner, since)
        self._orphaned = {replica: until for replica, until in self._orphaned.items() if until > started}
        for replica in self._orphaned:
            rows.extend(await self._replicas.handoffs(replica, since))
        fresh = [row for row in rows if (row.trace_id, row.arrived) not in self._handoffs_read]
        mine = sorted({row.trace_id for row in fresh if self._membership.owns(row.trace_id)})
        elsewhere = {
            row.trace_id: row for row in fresh if row.trace_id not in mine and not self._membership.solo
        }
        adopted = 0
        if mine:
            found = await self._ledger.undecided(0, len(mine), trace_ids=mine)
            adopted = self._assembler.adopt(found, resumed=False)
            self._metrics.traces_handed.labels("in").inc(len(mine))
        if elsewhere:
            owner = self._membership.owner
            await self._replicas.hand_off(
                [
                    handoff_row(owner(trace_id), started, trace_id, row.first, row.root_ended, self.owner)
                    for trace_id, row in elsewhere.items()
                ]
            )
            self._metrics.traces_handed.labels("out").inc(len(elsewhere))
        self._handoffs_read.update((row.trace_id, row.arrived) for row in fresh)
        floor = started - 2 * HANDOFF_MARGIN_NS
        self._handoffs_read = {key for key in self._handoffs_read if key[1] >= floor}
        self._handoff_cursor = started
        return adopted

    async def on_membership(self, change: MembershipChange) -> None:
        if change.joined:
            await self.hand_off(lambda trace_id: self._membership.owns(trace_id))
        for gone in (*change.left, *change.died):
            # Read what was handed to it from shortly before it went until every peer knows.
            until = self._clock_ns() + int(3 * self._membership.ttl_seconds * 1e9)
            self._orphaned[gone.replica_id] = until
            self._handoff_cursor = min(self._handoff_cursor, gone.heartbeat)
        for dead in change.died:
            saved = await self._ledger.watermark(dead.replica_id)
            since = max(0, (saved or dead.started) - MARGIN_NS)
            adopted = await self.scan(since)
            log.info(
                "replica %s is gone: %d of its undecided trace(s) taken over here", dead.replica_id, adopted
            )

    async def hand_off_all(self) -> int:
        """On shutdown, with other replicas live: hand every tracked trace to its owner among them
        instead of scoring it early. Returns how many were handed off."""
        if self._membership.solo:
            return 0
        return await self.hand_off(lambda trace_id: False, leaving=True)

    async def hand_off(self, keep: Callable[[str], bool], *, leaving: bool = False) -> int:
        """Hand the tracked traces ``keep`` refuses to their owners (they stay in the store)."""
        taken = self._assembler.take(keep)
        if not taken:
            return 0
        self._handing.extend(taken)
        now = self._clock_ns()
        owner = self._membership.successor if leaving else self._membership.owner
        rows = []
        for trace in taken:
            to = owner(trace.trace_id)
            if to is not None:
                rows.append(handoff_row(to, now, trace.trace_id, trace.since, trace.root_ended, self.owner))
        try:
            await self._replicas.hand_off(rows)
        except BaseException:
            self._assembler.retrack(taken)
            raise
        finally:
            self._handing = [trace for trace in self._handing if trace not in taken]
        self._metrics.traces_handed.labels("out").inc(len(rows))
        log.info("handed %d trace(s) to the replicas that own them", len(rows))
        return len(rows)

    async def _checkpoint_loop(self) -> None:
        while await self._wait(self._checkpoint_seconds):
            try:
                await self.checkpoint()
                floor = self._assembler.forgotten_floor()
                if floor is not None:
                    await self.scan(floor)
            except StoreFull as exc:  # the store's disk is under its floor: it says so once
                log.debug("recovery checkpoint waits: %s", exc)
            except Exception:  # a store outage: the next round tries again
                log.warning("recovery checkpoint failed", exc_info=True)

    async def _page_loop(self) -> None:
        """Read the next page once the assembler has released most of the last."""
        while await self._wait(PAGE_SECONDS):
            self._finish_if_done()
            if self._scan is None or self._assembler.resumed > self._page_traces // 2:
                continue
            try:
                await self.scan_more()
            except Exception:  # a store outage: the next round tries again
                log.warning("reading the next page of undecided traces failed", exc_info=True)

    async def _handoff_loop(self) -> None:
        while await self._wait(self._handoff_seconds):
            try:
                await self.read_handoffs()
            except Exception:
                log.warning("reading hand-offs failed", exc_info=True)

    async def _wait(self, seconds: float) -> bool:
        """Sleep ``seconds`` unless stopped; True to go on."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), seconds)
        return not self._stop.is_set()
