"""The replicas table (heartbeats) and trace hand-offs between replicas sharing one store."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tracescore.ingest.store.clickhouse import Store

REPLICA_COLUMNS = ("ReplicaId", "Heartbeat", "Started", "State")
HANDOFF_COLUMNS = ("Owner", "Arrived", "TraceId", "First", "Root", "Sender")

LIVE = "live"
LEFT = "left"  # shut down cleanly: its traces were handed off
RETIRED = "retired"  # died: a survivor took over its traces


@dataclass(frozen=True)
class ReplicaRow:
    replica_id: str
    heartbeat: int  # ns since the epoch
    started: int
    state: str


@dataclass(frozen=True)
class Handoff:
    """A trace handed to its owner: when, its first item's arrival, and whether its root ended."""

    trace_id: str
    arrived: int
    first: int
    root_ended: bool
    sender: str


def handoff_row(owner: str, arrived: int, trace_id: str, first: int, root: bool, sender: str) -> list[object]:
    return [owner, arrived, trace_id, first, int(root), sender]


class ReplicaTable:
    """Reads and writes of ``replicas`` and ``trace_handoffs``."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def beat(self, replica_id: str, heartbeat: int, started: int, state: str = LIVE) -> None:
        await self._store.insert("replicas", [[replica_id, heartbeat, started, state]], REPLICA_COLUMNS)

    async def replicas(self) -> list[ReplicaRow]:
        """Each replica's latest row."""
        rows = await self._store.query(
            "SELECT ReplicaId, toUnixTimestamp64Nano(max(Heartbeat)) AS LastBeat, "
            "toUnixTimestamp64Nano(argMax(Started, Heartbeat)) AS StartedAt, "
            "argMax(State, Heartbeat) AS LastState "
            f"FROM {self._store.quoted_database}.replicas GROUP BY ReplicaId ORDER BY ReplicaId",
            {},
        )
        return [
            ReplicaRow(row["ReplicaId"], int(row["LastBeat"]), int(row["StartedAt"]), row["LastState"])
            for row in rows
        ]

    async def hand_off(self, rows: Sequence[list[object]]) -> None:
        if rows:
            await self._store.insert("trace_handoffs", list(rows), HANDOFF_COLUMNS)

    async def handoffs(self, owner: str, since_ns: int) -> list[Handoff]:
        """The traces handed to ``owner`` from ``since_ns`` on, oldest first."""
        rows = await self._store.query(
            "SELECT TraceId, toUnixTimestamp64Nano(Arrived) AS ArrivedNs, "
            "toUnixTimestamp64Nano(First) AS FirstNs, Root, Sender "
            f"FROM {self._store.quoted_database}.trace_handoffs "
            "WHERE Owner = {owner:String} AND Arrived >= fromUnixTimestamp64Nano({since:Int64}) "
            "ORDER BY Arrived",
            {"owner": owner, "since": since_ns},
        )
        return [
            Handoff(
                row["TraceId"], int(row["ArrivedNs"]), int(row["FirstNs"]), bool(row["Root"]), row["Sender"]
            )
            for row in rows
        ]
