"""Replicas sharing one store: who is live, and which of them owns a trace.

Each replica writes a heartbeat to ``replicas`` every ``replica.heartbeat_seconds`` and reads the
others' back. A replica is live while its last heartbeat is younger than ``replica.ttl_seconds`` and
it has not left. A trace belongs to one live replica, chosen by rendezvous (highest random weight)
hashing of its id: every replica computes the same owner from the same live set, and when a replica
joins or goes, only the traces it gains or loses change hands. Only the owner assembles and scores a
trace, so two replicas never pay a judge for the same run; items that reach another replica are
stored there and handed to the owner (``trace_handoffs``).

A change of the live set is reported to the subscribers: replicas that joined (their traces are
handed to them), replicas that left cleanly (they handed their traces off), and replicas that died
(their traces are taken over from the store; see ``ingest.replay.recovery``). A dead replica is marked
retired once taken over, so a replica starting later does not scan for it again.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from tracescore.ingest.observability.service_metrics import Metrics
from tracescore.ingest.store.replica_table import LEFT, LIVE, RETIRED, ReplicaRow, ReplicaTable
from tracescore.schemas.config import ReplicaConfig
from tracescore.schemas.errors import StoreFull

log = logging.getLogger(__name__)


def weight(replica_id: str, trace_id: str) -> int:
    """The rendezvous weight of a replica for a trace (the same in every process)."""
    digest = hashlib.blake2b(f"{replica_id}\x00{trace_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def owner_among(replicas: tuple[str, ...], trace_id: str) -> str:
    if len(replicas) == 1:
        return replicas[0]
    return max(replicas, key=lambda replica_id: weight(replica_id, trace_id))


@dataclass(frozen=True)
class MembershipChange:
    before: tuple[str, ...]
    after: tuple[str, ...]
    joined: tuple[str, ...]
    left: tuple[ReplicaRow, ...]  # shut down cleanly, having handed their traces off
    died: tuple[ReplicaRow, ...]  # gone without leaving: their traces must be taken over


Listener = Callable[[MembershipChange], Awaitable[None]]


class Membership:
    """This replica's view of the live replicas, refreshed with every heartbeat."""

    def __init__(
        self,
        table: ReplicaTable,
        config: ReplicaConfig,
        *,
        metrics: Metrics | None = None,
        clock_ns: Callable[[], int] = time.time_ns,
    ) -> None:
        self._metrics = metrics
        self.replica_id = config.id or socket.gethostname()
        self._table = table
        self._config = config
        self._clock_ns = clock_ns
        self._started = clock_ns()
        self._live: tuple[str, ...] = (self.replica_id,)
        self._listeners: list[Listener] = []
        self._taken_over: set[tuple[str, int]] = set()  # (replica, heartbeat) of dead ones handled
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._last_error: str | None = None
        self._left = False
        self._last_beat = 0

    @property
    def live(self) -> tuple[str, ...]:
        return self._live

    @property
    def ttl_seconds(self) -> float:
        return self._config.ttl_seconds

    @property
    def solo(self) -> bool:
        """This replica is the only live one (it owns every trace)."""
        return len(self._live) == 1

    def owner(self, trace_id: str) -> str:
        return owner_among(self._live, trace_id)

    def owns(self, trace_id: str) -> bool:
        return self.solo or self.owner(trace_id) == self.replica_id

    def successor(self, trace_id: str) -> str | None:
        """The owner of a trace among the other live replicas (None when this one is alone)."""
        others = tuple(replica_id for replica_id in self._live if replica_id != self.replica_id)
        return owner_among(others, trace_id) if others else None

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def health(self) -> dict[str, object]:
        return {"id": self.replica_id, "live": list(self._live), "last_error": self._last_error}

    async def start(self) -> None:
        """Announce this replica and read the others (a failure here fails the start)."""
        if self._task is not None:
            return
        await self.refresh()
        self._task = asyncio.create_task(self._loop(), name="replica-heartbeat")

    async def leave(self) -> None:
        """Stop the heartbeat and tell the others this replica left (its traces are handed off)."""
        self._stop.set()
        if self._task is not None:
            await self._task
            self._task = None
        if not self._left:
            self._left = True
            with contextlib.suppress(Exception):
                # Strictly after the last live beat: the latest row per replica is its state.
                at = max(self._clock_ns(), self._last_beat + 1)
                await self._table.beat(self.replica_id, at, self._started, LEFT)

    async def refresh(self) -> None:
        """Write a heartbeat, read the live set, and report a change to the subscribers. On a store
        whose disk is under its floor the heartbeat waits (nothing is written there, spans neither),
        and the live set is read all the same: a replica starts on such a store, refusing spans."""
        now = self._clock_ns()
        try:
            await self._table.beat(self.replica_id, now, self._started, LIVE)
        except StoreFull as exc:
            if self._last_error is None:
                log.warning("replica heartbeat waits: %s", exc)
            self._last_error = str(exc)
        else:
            self._last_beat = max(self._last_beat, now)
            self._last_error = None
        rows = {row.replica_id: row for row in await self._table.replicas()}
        ttl_ns = int(self._config.ttl_seconds * 1e9)
        live = {r.replica_id for r in rows.values() if r.state == LIVE and now - r.heartbeat <= ttl_ns}
        live.add(self.replica_id)
        after = tuple(sorted(live))
        before = self._live
        gone = [replica_id for replica_id in before if replica_id not in live]
        left = tuple(rows[r] for r in gone if r in rows and rows[r].state == LEFT)
        # Died: gone from the live set (whatever retired it), or found dead and not yet taken over.
        died = [rows[r] for r in gone if r in rows and rows[r].state != LEFT]
        died.extend(
            row
            for row in rows.values()
            if row.state == LIVE and row.replica_id not in live and row.replica_id not in gone
        )
        died = [row for row in died if (row.replica_id, row.heartbeat) not in self._taken_over]
        joined = tuple(replica_id for replica_id in after if replica_id not in before)
        self._live = after
        if self._metrics is not None:
            self._metrics.live_replicas.set(len(after))
        if joined or left or died:
            change = MembershipChange(before, after, joined, left, tuple(died))
            log.info(
                "replicas: live %s (joined %s, left %s, died %s)",
                ", ".join(after),
                ", ".join(joined) or "none",
                ", ".join(row.replica_id for row in left) or "none",
                ", ".join(row.replica_id for row in died) or "none",
            )
            try:
                for listener in self._listeners:
                    await listener(change)
            except BaseException:
                self._live = before  # the next beat reports the same change again
                raise
            for row in died:  # taken over: a replica starting later need not scan for it again
                self._taken_over.add((row.replica_id, row.heartbeat))
                if row.state == LIVE:
                    await self._table.beat(row.replica_id, row.heartbeat + 1, row.started, RETIRED)

    async def _loop(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self._config.heartbeat_seconds)
            if self._stop.is_set():
                return
            try:
                await self.refresh()
            except Exception as exc:  # a store outage: keep the last view; the next beat tries again
                if self._last_error is None:
                    log.warning("replica heartbeat failed: %s", exc)
                self._last_error = str(exc)
