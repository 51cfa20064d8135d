"""The store's free-space floor: below it, nothing is written, so a full disk is an outage, never a loss.

The embedded engine does not survive its disk running out: a part being written when the disk fills
can be committed with empty files, and a merge that hits the end of the disk replaces the parts it
merged with one that is set aside as broken on the next start -- taking spans acknowledged long
before with it. So tracescore never lets the engine get there (ClickHouse's own
``min_free_disk_bytes_to_perform_insert`` and Elasticsearch's flood-stage watermark do the same):

- The floor is ``max(store_min_free_bytes, store_min_free_ratio x the disk's size)``. Free space is
  read before every write (a ``statvfs`` of the data directory, a few microseconds) and every
  ``POLL_SECONDS`` in the background; for a ClickHouse server, from ``system.disks`` every
  ``SERVER_POLL_SECONDS``.
- Below the floor, every write is refused with ``StoreFull`` before it reaches the engine: OTLP
  clients get 503 / UNAVAILABLE with Retry-After, the Kafka consumer pauses, score rows wait in their
  buffer. The embedded engine's merges are stopped (``SYSTEM STOP MERGES`` also cancels the running
  ones, which then leave nothing behind), and ``/readyz`` says why.
- Once free space is back above the floor by ``RESUME_MARGIN``, merges start again and writes are
  taken, within ``POLL_SECONDS``.
- A write during which free space fell far below the floor (something else filled the disk at that
  moment) may be damaged: it is reported as failed (nothing it carried is acknowledged; the client
  sends it again) and counted.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from clickhouse_connect.driver.client import Client

from tracescore.schemas.errors import StoreFull

log = logging.getLogger(__name__)

POLL_SECONDS = 0.25
SERVER_POLL_SECONDS = 5.0
RESUME_MARGIN = 0.2  # writes resume at floor x (1 + margin): no flapping at the boundary
DAMAGED_SHARE = 0.25  # free space under floor x share right after a write: the write may be damaged
RETRY_AFTER_SECONDS = 5.0
# The embedded store's MergeTree settings (``ingest.store.schema_changes.merged_parts_settings``). chDB
# deletes the parts a merge replaced at once; they are kept a while, so that a merged part damaged by
# a full disk is set aside when the engine opens the store again (within a poll of the disk running
# out, see ``take_ran_out``) and the parts it came from take its place. Not a ClickHouse server's 480 s:
# every part an insert makes is merged away in time, and kept 480 s they took 3.5 GB of disk at 60
# traces a second (34,000 part directories) for a few MB of live data. The engine's cleanup deletes
# them; by default it runs only every 30 s to 300 s, and later still while a table has fewer than 300
# of them to delete (measured: parts merged away 3 minutes before still there), so here it runs every
# few seconds.
OLD_PARTS_LIFETIME_SECONDS = 10
MERGED_PARTS_SETTINGS = {
    "old_parts_lifetime": OLD_PARTS_LIFETIME_SECONDS,
    "cleanup_delay_period": 2,
    "max_cleanup_delay_period": 5,
    "cleanup_delay_period_random_add": 1,
}
MIB = 2**20


@dataclass(frozen=True)
class DiskSpace:
    free: int  # bytes a write may still use
    total: int


def local_space(path: str) -> DiskSpace:
    """Free and total bytes of the filesystem holding ``path`` (as an unprivileged writer sees them)."""
    stat = os.statvfs(path)
    return DiskSpace(free=stat.f_bavail * stat.f_frsize, total=stat.f_blocks * stat.f_frsize)


class FreeSpaceGuard:
    """Knows whether the store's disk is above its floor, and refuses writes while it is not.

    ``read`` gives the disk's space; for the embedded store it is a local ``statvfs`` (asked before
    every write, from any thread), for a server it is ``None`` and ``observe`` is fed by a poll of
    ``system.disks`` (the store stops and starts the embedded engine's merges as it changes)."""

    def __init__(
        self,
        min_free_bytes: int,
        min_free_ratio: float,
        *,
        read: Callable[[], DiskSpace] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._min_free_bytes = min_free_bytes
        self._min_free_ratio = min_free_ratio
        self._read = read
        self._clock = clock
        self._lock = threading.Lock()  # writes are checked on the store's worker thread
        self._space: DiskSpace | None = None
        self._refusing = False
        self._refused_since: float | None = None
        # Free space ran far below the floor (something else filled the disk): a write or merge of the
        # engine's may have met the end of the disk. The store opens the engine again once space is
        # back, so that it sets aside what is damaged (see ``take_ran_out``).
        self._ran_out = False
        self._ran_out_told = False  # of this time under the floor: the engine is opened again once
        self.refused_writes = 0
        self.damaged_writes = 0

    @property
    def enabled(self) -> bool:
        return self._min_free_bytes > 0 or self._min_free_ratio > 0

    @property
    def refusing(self) -> bool:
        return self._refusing

    @property
    def space(self) -> DiskSpace | None:
        return self._space

    def floor(self, space: DiskSpace | None = None) -> int:
        total = (space or self._space or DiskSpace(0, 0)).total
        return max(self._min_free_bytes, int(self._min_free_ratio * total))

    def refresh(self) -> bool:
        """Read the disk again (local stores); returns whether writes are refused now."""
        if self._read is not None:
            try:
                self.observe(self._read())
            except OSError as exc:  # the directory went away: the write itself will say so
                log.debug("reading the store's free space failed: %s", exc)
        return self._refusing

    def observe(self, space: DiskSpace) -> None:
        """Take a reading of the disk and move between taking and refusing writes."""
        if not self.enabled:
            self._space = space
            return
        floor = self.floor(space)
        with self._lock:
            self._space = space
            was = self._refusing
            if space.free < floor:
                self._refusing = True
                if space.free < floor * DAMAGED_SHARE:
                    self._note_ran_out()
            elif space.free >= floor * (1 + RESUME_MARGIN):
                self._refusing = False
                self._ran_out_told = False
            changed = was != self._refusing
            if changed:
                self._refused_since = self._clock() if self._refusing else None
        if not changed:
            return
        if self._refusing:
            log.warning(
                "the store's disk has %s free, under its floor of %s (store_min_free_bytes, "
                "store_min_free_ratio): refusing new spans and stopping merges until %s are free",
                _size(space.free),
                _size(floor),
                _size(int(floor * (1 + RESUME_MARGIN))),
            )
        else:
            log.warning(
                "the store's disk has %s free again: taking spans and merging again", _size(space.free)
            )

    def admit(self, what: str = "new spans") -> None:
        """Raise ``StoreFull`` while writes are refused (intake asks this before doing any work)."""
        if self._refusing:
            raise StoreFull(self.reason(what), retry_after_s=RETRY_AFTER_SECONDS)

    def check_write(self, what: str) -> None:
        """Before a write: raise ``StoreFull`` while the disk is under its floor."""
        if not self.enabled:
            return
        if self.refresh():
            self.refused_writes += 1
            raise StoreFull(self.reason(what), retry_after_s=RETRY_AFTER_SECONDS)

    def check_written(self, what: str) -> None:
        """After a write: if the disk ran almost out meanwhile (filled by something else), the write
        may be damaged: report it failed so that what it carried is not acknowledged."""
        if not self.enabled or self._read is None:
            return
        before = self._space
        self.refresh()
        space = self._space
        if space is None or before is None or space.free >= self.floor(space) * DAMAGED_SHARE:
            return
        self.damaged_writes += 1
        self._note_ran_out()
        log.error(
            "%s: the store's disk ran down to %s free while it was written; it counts as failed "
            "(its senders send it again)",
            what,
            _size(space.free),
        )
        raise StoreFull(self.reason(what), retry_after_s=RETRY_AFTER_SECONDS)

    def _note_ran_out(self) -> None:
        """The disk ran (almost) out: once each time writes are refused."""
        if not self._ran_out_told:
            self._ran_out = self._ran_out_told = True

    def take_ran_out(self) -> bool:
        """Whether the disk ran (almost) out since the last call (once each time it falls under the
        floor). The store opens its engine again at once, full disk or not: opening only renames (the
        damaged parts aside, the parts they were merged from back), and those are kept only
        ``OLD_PARTS_LIFETIME_SECONDS``."""
        if not self._ran_out:
            return False
        self._ran_out = False
        return True

    def reason(self, what: str = "writes") -> str:
        """Why writes are refused, for clients and ``/readyz`` (sizes only, no paths)."""
        space = self._space
        free = _size(space.free) if space is not None else "too little"
        return (
            f"{what} refused: the store's disk has {free} free, under its floor of {_size(self.floor())} "
            "(store_min_free_bytes); send again later"
        )

    def health(self) -> dict[str, object]:
        """``/healthz``: the disk's free and total bytes, the floor, and whether writes are refused."""
        space = self._space
        body: dict[str, object] = {
            "status": "refusing" if self._refusing else "ok",
            "free_bytes": space.free if space is not None else None,
            "total_bytes": space.total if space is not None else None,
            "floor_bytes": self.floor(),
            "refused_writes": self.refused_writes,
        }
        if self._refusing:
            body["reason"] = self.reason("new spans")
            if self._refused_since is not None:
                body["refusing_seconds"] = round(self._clock() - self._refused_since, 1)
        return body


def _size(value: int) -> str:
    if value >= 10 * 1024 * MIB:
        return f"{value / (1024 * MIB):.0f} GiB"
    return f"{value / MIB:.0f} MiB"


# -- the engine's side, on the store's worker thread --------------------------------------------------


def set_merges(client: Client, *, running: bool) -> None:
    """Start or stop the embedded engine's merges (stopping cancels those under way)."""
    client.command("SYSTEM START MERGES" if running else "SYSTEM STOP MERGES")


def server_space(client: Client) -> DiskSpace | None:
    """The tightest of a ClickHouse server's disks."""
    rows = client.query(
        "SELECT min(free_space) AS free, argMin(total_space, free_space) AS total "
        "FROM system.disks WHERE total_space > 0"
    ).result_rows
    if not rows or rows[0][1] in (None, 0):
        return None
    return DiskSpace(free=int(rows[0][0]), total=int(rows[0][1]))


def broken_parts(client: Client, database: str) -> set[str]:
    """The parts (table/part) the engine has set aside as damaged in ``database``."""
    rows = client.query(
        "SELECT table, name FROM system.detached_parts "
        "WHERE database = {db:String} AND startsWith(name, 'broken')",
        parameters={"db": database},
    ).result_rows
    return {f"{table}/{name}" for table, name in rows}
