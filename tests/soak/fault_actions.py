"""Carrying out the schedule's faults against the running soak: each at its time, each recorded with
when it really began and ended and what it did. A fault that lasts puts things back when it ends, also
when the soak is cut short (cancelled)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from tests.soak.agent_traces import PROTOBUF, TraceFactory, malformed_bodies
from tests.soak.http_exporters import Exporter, flood, send_malformed, session
from tests.soak.judge_backend import JudgeBackend, JudgeMode
from tests.soak.kafka_feed import KafkaFeed
from tests.soak.observations import Input, Window
from tests.soak.schedule import Fault, FaultKind
from tests.soak.serve_supervisor import ServeSupervisor
from tests.support.slow_clients import SlowClientsReport, loopback_sources, slow_clients
from tests.support.tmpfs import Tmpfs

SLOW_CLIENTS = 1_200
SLOW_CLIENT_ADDRESSES = 12  # 100 a source address: under the per-client cap, as a crowd of clients
MALFORMED_REQUESTS = 60
MALFORMED_RECORDS = 6


@dataclass
class Performed:
    """A fault as it happened: seconds after the load started."""

    kind: FaultKind
    planned_s: float
    began_s: float
    ended_s: float = 0.0
    detail: str = ""


@dataclass
class Rig:
    """What the faults act on."""

    supervisor: ServeSupervisor
    disk: Tmpfs
    judge: JudgeBackend
    exporter: Exporter
    factory: TraceFactory
    kafka: KafkaFeed
    seed: int
    started_at: float  # monotonic time the load started
    performed: list[Performed] = field(default_factory=list)
    fills: list[Window] = field(default_factory=list)
    malformed_trace_ids: set[str] = field(default_factory=set)
    malformed_outcomes: list[int] = field(default_factory=list)

    def since_start(self) -> float:
        return time.monotonic() - self.started_at


async def run_schedule(rig: Rig, faults: list[Fault]) -> None:
    """Every fault at its time, concurrently (they may overlap); returns when all have ended."""
    await asyncio.gather(*(_at_its_time(rig, fault) for fault in faults))


async def _at_its_time(rig: Rig, fault: Fault) -> None:
    await asyncio.sleep(max(0.0, rig.started_at + fault.at_s - time.monotonic()))
    done = Performed(fault.kind, fault.at_s, rig.since_start())
    rig.performed.append(done)
    try:
        done.detail = await ACTIONS[fault.kind](rig, fault)
    except asyncio.CancelledError:
        done.detail = "cut short: the soak ended"
        raise
    except Exception as error:  # a fault that could not be made is reported, the soak goes on
        done.detail = f"failed: {type(error).__name__}: {error}"
    finally:
        done.ended_s = rig.since_start()


async def _sigkill(rig: Rig, fault: Fault) -> str:
    before = len(rig.supervisor.lives)
    await rig.supervisor.kill_and_restart()
    life = rig.supervisor.life
    if life is None or len(rig.supervisor.lives) == before:
        return "nothing to kill (serve not running)"
    took = f"up again in {life.up_at - life.started_at:.1f} s" if life.up_at else "did not come up again"
    return f"killed life {before}; {took}"


async def _disk_fill(rig: Rig, fault: Fault) -> str:
    name = f"filler-{len(rig.fills)}"
    began = time.monotonic()
    window = Window(began, began)
    rig.fills.append(window)
    try:
        taken = await asyncio.to_thread(rig.disk.fill, name)
        left = rig.disk.free_bytes()
        await asyncio.sleep(fault.duration_s)
    finally:
        with contextlib.suppress(OSError):
            rig.disk.free(name)
        rig.fills[rig.fills.index(window)] = Window(began, time.monotonic())
    return f"took {taken / 2**20:.0f} MiB ({left / 2**20:.1f} MiB left) for {fault.duration_s:.0f} s"


async def _big_request(rig: Rig, fault: Fault) -> str:
    body = await asyncio.to_thread(rig.factory.big_request)
    started = time.monotonic()
    async with session() as http:
        status = await rig.exporter.export(http, body, Input.BIG)
    return (
        f"{len(body.data) / 1e6:.1f} MB, {len(body.trace_ids):,} traces: last answer {status or 'none'} "
        f"after {time.monotonic() - started:.1f} s"
    )


async def _slow_clients(rig: Rig, fault: Fault) -> str:
    """The clients run from a thread of their own (their workers start and report synchronously), which
    stops them when the fault's time is up, or at once when the soak is cut short."""
    sources = loopback_sources(SLOW_CLIENT_ADDRESSES)
    port = rig.supervisor.ports.http
    stop = threading.Event()
    reports: list[SlowClientsReport] = []

    def attack() -> None:
        with slow_clients(port, SLOW_CLIENTS, sources) as report:
            stop.wait(fault.duration_s)
        reports.append(report)

    thread = threading.Thread(target=attack, name="soak-slow-clients")  # not a daemon: always cleaned up
    thread.start()
    try:
        await asyncio.to_thread(thread.join)
    finally:
        stop.set()
    if not reports:
        return "the slow clients did not start"
    report = reports[0]
    return (
        f"{SLOW_CLIENTS:,} clients for {fault.duration_s:.0f} s: {report.connects:,} connections, "
        f"{report.closed_by_server:,} closed by the service"
    )


def _judge(mode: JudgeMode) -> Callable[[Rig, Fault], Awaitable[str]]:
    async def outage(rig: Rig, fault: Fault) -> str:
        before = rig.judge.calls[mode]
        rig.judge.mode = mode
        try:
            await asyncio.sleep(fault.duration_s)
        finally:
            if rig.judge.mode is mode:  # the next outage may have begun (hangs follow errors at once)
                rig.judge.mode = JudgeMode.OK
        return f"{rig.judge.calls[mode] - before:,} judge calls {mode.value} for {fault.duration_s:.0f} s"

    return outage


async def _flood(rig: Rig, fault: Fault) -> str:
    sent = rig.exporter.ledger.sent.get(Input.FLOOD, 0)
    acked = len(rig.exporter.ledger.acked(Input.FLOOD))
    await flood(rig.exporter, rig.factory, fault.duration_s)
    return (
        f"{rig.exporter.ledger.sent.get(Input.FLOOD, 0) - sent:,} traces sent in {fault.duration_s:.0f} s, "
        f"{len(rig.exporter.ledger.acked(Input.FLOOD)) - acked:,} acknowledged"
    )


async def _malformed(rig: Rig, fault: Fault) -> str:
    requests = malformed_bodies(rig.factory, MALFORMED_REQUESTS, rig.seed)
    # Protobuf only: the topic's encoding is otlp_proto.
    records = [
        b
        for b in malformed_bodies(rig.factory, MALFORMED_RECORDS, rig.seed + 1)
        if b.content_type == PROTOBUF
    ]
    for body in requests + records:
        rig.malformed_trace_ids.update(body.trace_ids)
    await asyncio.to_thread(rig.kafka.send_malformed, records)
    outcomes = await send_malformed(rig.exporter, requests)
    rig.malformed_outcomes += outcomes
    return (
        f"{len(requests)} malformed requests ({outcomes.count(400)} answered 400), "
        f"{len(records)} malformed Kafka records"
    )


ACTIONS: dict[FaultKind, Callable[[Rig, Fault], Awaitable[str]]] = {
    FaultKind.SIGKILL: _sigkill,
    FaultKind.DISK_FILL: _disk_fill,
    FaultKind.BIG_REQUEST: _big_request,
    FaultKind.SLOW_CLIENTS: _slow_clients,
    FaultKind.JUDGE_ERRORS: _judge(JudgeMode.ERRORS),
    FaultKind.JUDGE_HANGS: _judge(JudgeMode.HANGS),
    FaultKind.FLOOD: _flood,
    FaultKind.MALFORMED: _malformed,
}
