"""Trace ownership among replicas (rendezvous hashing) and the live set read from a real store."""

from __future__ import annotations

import time
from collections import Counter

import pytest
from pydantic import ValidationError

from tracescore.ingest.replication.membership import Membership, MembershipChange, owner_among
from tracescore.ingest.store.clickhouse import Store
from tracescore.ingest.store.replica_table import LEFT, RETIRED, ReplicaTable
from tracescore.schemas.config import ReplicaConfig

TRACES = [f"{i:032x}" for i in range(30_000)]


def test_every_order_of_the_live_set_names_the_same_owner() -> None:
    for trace_id in TRACES[:500]:
        owners = {owner_among(live, trace_id) for live in (("a", "b", "c"), ("c", "a", "b"), ("b", "c", "a"))}
        assert len(owners) == 1


def test_traces_spread_evenly() -> None:
    counts = Counter(owner_among(("a", "b", "c"), trace_id) for trace_id in TRACES)
    assert set(counts) == {"a", "b", "c"}
    for count in counts.values():
        assert abs(count / len(TRACES) - 1 / 3) < 0.02, counts


def test_a_leaving_replica_moves_only_its_own_traces() -> None:
    before = {trace_id: owner_among(("a", "b", "c"), trace_id) for trace_id in TRACES}
    after = {trace_id: owner_among(("a", "c"), trace_id) for trace_id in TRACES}
    moved = [trace_id for trace_id in TRACES if before[trace_id] != after[trace_id]]
    assert moved and all(before[trace_id] == "b" for trace_id in moved)
    assert len(moved) == sum(1 for owner in before.values() if owner == "b")


def test_a_joining_replica_takes_only_what_it_now_owns() -> None:
    before = {trace_id: owner_among(("a", "b"), trace_id) for trace_id in TRACES}
    after = {trace_id: owner_among(("a", "b", "d"), trace_id) for trace_id in TRACES}
    moved = [trace_id for trace_id in TRACES if before[trace_id] != after[trace_id]]
    assert all(after[trace_id] == "d" for trace_id in moved)
    assert abs(len(moved) / len(TRACES) - 1 / 3) < 0.02


def test_the_ttl_must_cover_two_heartbeats() -> None:
    with pytest.raises(ValidationError, match="twice"):
        ReplicaConfig(heartbeat_seconds=2, ttl_seconds=3)


class Clock:
    def __init__(self) -> None:
        self.now = time.time_ns()

    def __call__(self) -> int:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += int(seconds * 1e9)


def _member(store: Store, replica_id: str, clock: Clock, changes: list[MembershipChange]) -> Membership:
    member = Membership(
        ReplicaTable(store), ReplicaConfig(id=replica_id, heartbeat_seconds=1, ttl_seconds=5), clock_ns=clock
    )

    async def record(change: MembershipChange) -> None:
        changes.append(change)

    member.subscribe(record)
    return member


async def test_replicas_join_leave_and_die_as_their_heartbeats_say(store: Store) -> None:
    clock = Clock()
    seen_by_a: list[MembershipChange] = []
    a = _member(store, "a", clock, seen_by_a)
    b = _member(store, "b", clock, [])
    c = _member(store, "c", clock, [])
    await a.refresh()
    assert a.live == ("a",) and a.solo and a.owns(TRACES[0]) and not seen_by_a

    await b.refresh()
    await c.refresh()
    await a.refresh()
    a = a  # mypy keeps a.live as narrowed by the assert above, across calls, unless a is assigned
    assert a.live == ("a", "b", "c") and seen_by_a[-1].joined == ("b", "c")
    await b.refresh()  # b beat before c did
    assert b.live == a.live == c.live
    for trace_id in TRACES[:200]:
        owner = a.owner(trace_id)
        assert [m.owns(trace_id) for m in (a, b, c)].count(True) == 1
        assert owner == b.owner(trace_id) and a.successor(trace_id) in {"b", "c"}

    await b.leave()
    clock.advance(1)
    await a.refresh()
    await c.refresh()
    a = a  # as above
    change = seen_by_a[-1]
    assert a.live == ("a", "c") and [row.replica_id for row in change.left] == ["b"]
    assert change.left[0].state == LEFT and not change.died

    clock.advance(6)  # c's last heartbeat is now older than the ttl
    await a.refresh()
    a = a  # as above
    change = seen_by_a[-1]
    assert a.live == ("a",) and [row.replica_id for row in change.died] == ["c"] and not change.left
    rows = {row.replica_id: row.state for row in await ReplicaTable(store).replicas()}
    assert rows == {"a": "live", "b": LEFT, "c": RETIRED}

    # A replica starting later sees c retired, not dead: nobody takes it over twice.
    seen_by_d: list[MembershipChange] = []
    d = _member(store, "d", clock, seen_by_d)
    await d.refresh()
    await a.refresh()
    assert d.live == ("a", "d") and [change.died for change in seen_by_d] == [()]
    change = seen_by_a[-1]
    assert change.joined == ("d",) and not change.died


async def test_a_replica_found_dead_at_start_is_reported_once(store: Store) -> None:
    clock = Clock()
    ghost = _member(store, "ghost", clock, [])
    await ghost.refresh()
    clock.advance(60)  # it never beat again: crashed while nobody else ran
    seen: list[MembershipChange] = []
    a = _member(store, "a", clock, seen)
    await a.refresh()
    assert [row.replica_id for row in seen[-1].died] == ["ghost"]
    await a.refresh()
    assert len(seen) == 1


async def test_a_failed_listener_reports_the_change_again(store: Store) -> None:
    clock = Clock()
    config = ReplicaConfig(id="a", heartbeat_seconds=1, ttl_seconds=5)
    a = Membership(ReplicaTable(store), config, clock_ns=clock)
    calls: list[MembershipChange] = []

    async def flaky(change: MembershipChange) -> None:
        calls.append(change)
        if len(calls) == 1:
            raise RuntimeError("store down while handing off")

    a.subscribe(flaky)
    await a.refresh()
    await _member(store, "b", clock, []).refresh()
    with pytest.raises(RuntimeError):
        await a.refresh()
    assert a.live == ("a",)  # the view is not moved on until the change was handled
    await a.refresh()
    a = a  # mypy keeps a.live as narrowed by the assert above, across calls, unless a is assigned
    assert a.live == ("a", "b") and [change.joined for change in calls] == [("b",), ("b",)]
