"""Several replicas on one store: each trace is assembled and judged by one owner, however its spans
are spread over the replicas, when a replica joins, leaves, or dies.

chDB allows one process per data directory, so the replicas here are full services in one process,
each on its own event loop in its own thread (its own receivers, assembler, executor and store
client, as separate processes would have). A replica "dies" by having its event loop stopped: from
then on it does nothing at all, like a killed process, and its memory is lost to the others.

Spans reach the replicas over OTLP/HTTP. Every decision a replica makes is counted by its own
metrics, so a run judged twice would show as one decision too many; what the store ends with is
compared with what one replica alone makes of the same traces.
"""

from __future__ import annotations

import asyncio
import threading
import time
import urllib.request
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.support.otlp import agent_trace_requests
from tracescore.ingest.service import Service
from tracescore.ingest.store.clickhouse import Store
from tracescore.schemas.config import AssemblyConfig, ReceiverConfig, ReplicaConfig, ServiceConfig

T = TypeVar("T")
SCORERS = 2  # the default rules
PROTOBUF = {"Content-Type": "application/x-protobuf"}


class Replica:
    """A ``Service`` running on its own event loop in its own thread."""

    def __init__(self, store: Path, replica_id: str, idle_seconds: float) -> None:
        self.replica_id = replica_id
        self.config = ServiceConfig(
            store=str(store),
            receiver=ReceiverConfig(grpc_port=0, http_port=0),
            assembly=AssemblyConfig(idle_seconds=idle_seconds),
            replica=ReplicaConfig(id=replica_id, heartbeat_seconds=0.2, ttl_seconds=1.0),
        )
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name=f"replica-{replica_id}", daemon=True
        )
        self.thread.start()
        self.service: Service = self.call(self._make())
        self.call(self.service.start())
        self.base = f"http://127.0.0.1:{self.service.http.port}"
        self.dead = self.died = False

    async def _make(self) -> Service:
        return Service(self.config)

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float = 60) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def post(self, body: bytes) -> None:
        request = urllib.request.Request(f"{self.base}/v1/traces", data=body, headers=PROTOBUF)
        with urllib.request.urlopen(request, timeout=30) as resp:
            assert resp.status == 200

    def decided(self) -> float:
        """Every decision this replica made (each scorer, each kind), from its own metrics."""
        total = 0.0
        for family in self.service.metrics.registry.collect():
            if family.name == "tracescore_scoring_decisions":
                total += sum(s.value for s in family.samples if s.name.endswith("_total"))
        return total

    def counted(self, name: str, **labels: str) -> float:
        return self.service.metrics.registry.get_sample_value(name, labels) or 0.0

    def live(self) -> tuple[str, ...]:
        return self.service.membership.live

    def stop(self) -> None:
        """A clean shutdown."""
        if not self.dead:
            self.call(self.service.shutdown())
            self._halt()

    def die(self) -> None:
        """The event loop stops where it is: nothing of this replica runs again."""
        self.died = True
        self._halt()

    def bury(self) -> None:
        """After the test: let a dead replica's loop run once more to cancel what it was doing and
        close its receivers and store (chDB serves one data directory per process)."""
        if not self.died:
            self.loop.close()
            return
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.call(self._release())
        self._halt()
        self.loop.close()

    async def _release(self) -> None:
        await self.service.http.shutdown()
        await self.service.grpc.shutdown()
        current = asyncio.current_task()
        pending = [task for task in asyncio.all_tasks() if task is not current]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        await self.service.store.shutdown()

    def _halt(self) -> None:
        self.dead = True
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[Callable[[str, float], Replica]]:
    started: list[Replica] = []

    def start(replica_id: str, idle_seconds: float) -> Replica:
        replica = Replica(tmp_path / "store", replica_id, idle_seconds)
        started.append(replica)
        return replica

    yield start
    for replica in started:
        replica.stop()
        replica.bury()


def wait_until(condition: Callable[[], bool], limit_s: float, what: str) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def halves(body: bytes) -> tuple[bytes, bytes]:
    """One export request split in two: the first span, and the rest (the root among them)."""
    request = ExportTraceServiceRequest.FromString(body)
    first, rest = ExportTraceServiceRequest(), ExportTraceServiceRequest()
    first.CopyFrom(request)
    rest.CopyFrom(request)
    spans = [span for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans]
    assert len(spans) >= 2, "the split needs traces of several spans"
    for target, keep in ((first, spans[:1]), (rest, spans[1:])):
        ids = {span.span_id for span in keep}
        for rs in target.resource_spans:
            for ss in rs.scope_spans:
                kept = [span for span in ss.spans if span.span_id in ids]
                del ss.spans[:]
                ss.spans.extend(kept)
    return first.SerializeToString(), rest.SerializeToString()


def store_outcome(store: Path) -> dict[tuple[str, str, str], tuple[str, float | None]]:
    """(trace, span, scorer) -> (decision, score) of every current decision in the store."""

    async def read() -> dict[tuple[str, str, str], tuple[str, float | None]]:
        client = Store(str(store))
        await client.start()
        try:
            rows = await client.query(
                "SELECT d.TraceId AS TraceId, d.SpanId AS SpanId, d.ScorerId AS ScorerId, "
                "d.Decision AS Decision, s.Score AS Score "
                "FROM (SELECT * FROM score_decisions FINAL) AS d "
                "LEFT JOIN (SELECT * FROM scores FINAL) AS s "
                "ON d.SpanId = s.SpanId AND d.ScorerId = s.ScorerId "
                "SETTINGS join_use_nulls = 1"
            )
        finally:
            await client.shutdown()
        return {
            (r["TraceId"], r["SpanId"], r["ScorerId"]): (
                r["Decision"],
                None if r["Score"] is None else round(float(r["Score"]), 9),
            )
            for r in rows
        }

    return asyncio.run(read())


@pytest.fixture(scope="module")
def traces() -> list[tuple[str, bytes]]:
    return agent_trace_requests(150, service="replicas")


@pytest.fixture(scope="module")
def alone(tmp_path_factory: pytest.TempPathFactory, traces: list[tuple[str, bytes]]) -> dict[Any, Any]:
    """What one replica alone makes of the traces (each sent whole)."""
    store = tmp_path_factory.mktemp("alone") / "store"
    replica = Replica(store, "alone", idle_seconds=0.2)
    try:
        for _, body in traces:
            replica.post(body)
        wait_until(lambda: replica.decided() >= SCORERS * len(traces), 120, "the lone replica's decisions")
    finally:
        replica.stop()
    outcome = store_outcome(store)
    assert {trace_id for trace_id, _, _ in outcome} == {trace_id for trace_id, _ in traces}
    return outcome


def test_spans_of_a_trace_spread_over_two_replicas_are_judged_once_by_its_owner(
    tmp_path: Path,
    replicas: Callable[[str, float], Replica],
    traces: list[tuple[str, bytes]],
    alone: dict[Any, Any],
) -> None:
    a, b = replicas("a", 0.5), replicas("b", 0.5)
    wait_until(lambda: a.live() == b.live() == ("a", "b"), 10, "both replicas to see each other")
    for _, body in traces:  # every trace's first span to a, the rest to b
        first, rest = halves(body)
        a.post(first)
        b.post(rest)
    wait_until(lambda: a.decided() + b.decided() >= SCORERS * len(traces), 120, "every trace's decisions")
    time.sleep(1.0)  # a second judge of any run would show in the counts by now

    assert a.decided() + b.decided() == SCORERS * len(traces)
    assert a.decided() > 0 and b.decided() > 0  # the traces are shared out
    for replica in (a, b):  # each received spans of traces the other owns, and took over its own
        assert replica.counted("tracescore_traces_handed_total", direction="in") > 0
    assert store_outcome(tmp_path / "store") == alone  # whole runs, scored as one replica scores them


def test_a_replica_that_dies_has_its_traces_taken_over(
    tmp_path: Path,
    replicas: Callable[[str, float], Replica],
    traces: list[tuple[str, bytes]],
    alone: dict[Any, Any],
) -> None:
    a, b = replicas("a", 0.3), replicas("b", 60)  # b holds its traces unscored for a minute
    wait_until(lambda: a.live() == b.live() == ("a", "b"), 10, "both replicas to see each other")
    for _, body in traces:
        b.post(body)  # acknowledged by b: stored, and the traces a owns handed to it
    wait_until(lambda: a.decided() >= 1, 30, "a to score the traces it owns")
    assert b.decided() == 0
    b.die()

    wait_until(lambda: a.live() == ("a",), 10, "a to see b gone")
    wait_until(lambda: a.decided() >= SCORERS * len(traces), 120, "a to take over b's traces")
    time.sleep(1.0)
    assert a.decided() == SCORERS * len(traces)
    assert store_outcome(tmp_path / "store") == alone


def test_a_joining_replica_takes_its_share_and_a_leaving_one_hands_its_traces_over(
    tmp_path: Path,
    replicas: Callable[[str, float], Replica],
    traces: list[tuple[str, bytes]],
    alone: dict[Any, Any],
) -> None:
    a = replicas("a", 60)  # a never scores: what it holds goes to b when b joins, or when a leaves
    split = [halves(body) for _, body in traces]
    for first, _ in split:
        a.post(first)
    b = replicas("b", 0.3)
    wait_until(lambda: a.live() == b.live() == ("a", "b"), 10, "a to see b join")
    for _, rest in split:
        a.post(rest)
    assert a.decided() == 0
    a.stop()  # a clean shutdown before a's traces are due: handed to b, not scored early

    wait_until(lambda: b.decided() >= SCORERS * len(traces), 120, "b to score every trace")
    time.sleep(1.0)
    assert a.decided() == 0 and b.decided() == SCORERS * len(traces)
    assert a.counted("tracescore_traces_handed_total", direction="out") > 0
    assert store_outcome(tmp_path / "store") == alone
