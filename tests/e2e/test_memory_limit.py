"""``memory_limit`` is a limit: a real ``tracescore serve`` at 512 MiB and at 2 GiB is sent the biggest
request allowed (about 20 MB of protobuf: 100,000 one-span traces, the most items a request may hold),
a flood of 16 clients, and both together. What it allocates stays under the limit all along -- its
anonymous resident memory, read from the kernel every 5 ms (the kernel's own high-water mark, VmHWM,
also counts the 300-400 MiB of library code mapped from files, which memory_limit does not: see
docs/operations/memory.md); every request is answered 200, or 429 with Retry-After after which the
client, as an OTLP exporter does, sends it again and it is taken; every acknowledged trace is stored.

A limit below what the service needs at rest is refused at start, naming the numbers and the fix.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import signal
import time
import urllib.request
from pathlib import Path

import aiohttp
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.support.otlp import agent_trace_requests, many_trace_requests
from tests.support.serve import kernel_peak, peak_allocated, start_serve, tracescore, wait_healthy
from tracescore.ingest.store.clickhouse import Store

MIB = 2**20
CLIENTS = 16
PROTOBUF = {"Content-Type": "application/x-protobuf"}
BIG_ITEMS = 100_000  # receiver.max_request_items
BIG_BYTES = 19_800_000  # just under receiver.max_request_bytes (20 MiB)


def big_request(first_trace: int) -> tuple[int, bytes]:
    """BIG_ITEMS one-span traces padded to BIG_BYTES: the most a request may hold, in the shape that
    takes the most memory per byte (small spans)."""
    request = ExportTraceServiceRequest()
    resource = request.resource_spans.add()
    resource.resource.attributes.add(key="service.name").value.string_value = "big"
    scope = resource.scope_spans.add()
    now = time.time_ns()
    for index in range(first_trace, first_trace + BIG_ITEMS):
        span = scope.spans.add(name="chat", start_time_unix_nano=now, end_time_unix_nano=now + 1)
        span.trace_id = (index + 1).to_bytes(16, "big")
        span.span_id = (index + 1).to_bytes(8, "big")
    pad = (BIG_BYTES - request.ByteSize()) // BIG_ITEMS - 8
    for span in scope.spans:
        span.attributes.add(key="p").value.string_value = "x" * pad
    body = request.SerializeToString()
    assert 19_000_000 < len(body) < 20 * MIB
    return BIG_ITEMS, body


def flood_requests(first_trace: int, requests: int) -> tuple[int, list[bytes]]:
    """Realistic agent runs (the demo's scenarios under fresh trace ids), 100 per request."""
    shapes = [ExportTraceServiceRequest.FromString(body) for _, body in agent_trace_requests(20, "flood")]
    bodies = []
    for number in range(requests):
        request = ExportTraceServiceRequest()
        for offset in range(100):
            trace_id = (first_trace + number * 100 + offset + 1).to_bytes(16, "big")
            for resource_spans in shapes[offset % len(shapes)].resource_spans:
                copy = request.resource_spans.add()
                copy.CopyFrom(resource_spans)
                for scope_spans in copy.scope_spans:
                    for span in scope_spans.spans:
                        span.trace_id = trace_id
        bodies.append(request.SerializeToString())
    return 100 * requests, bodies


async def send(session: aiohttp.ClientSession, base: str, body: bytes, answers: list[int]) -> None:
    """Send until acknowledged, waiting Retry-After after a 429 or 503, as OTLP exporters do."""
    while True:
        # A file-like body: aiohttp warns that a large bytes body is copied on the event loop.
        async with session.post(f"{base}/v1/traces", data=io.BytesIO(body), headers=PROTOBUF) as resp:
            await resp.read()
            answers.append(resp.status)
            if resp.status == 200:
                return
            assert resp.status in (429, 503), f"answered {resp.status}"
            await asyncio.sleep(float(resp.headers["Retry-After"]))


async def flood(base: str, bodies: list[bytes], big: bytes | None = None) -> list[int]:
    """CLIENTS clients sending ``bodies`` as fast as they are taken, and ``big`` meanwhile."""
    todo = list(bodies)
    answers: list[int] = []

    async def client(session: aiohttp.ClientSession) -> None:
        while todo:
            await send(session, base, todo.pop(), answers)

    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as session:
        work = [client(session) for _ in range(CLIENTS)]
        if big is not None:
            work.append(send(session, base, big, answers))
        await asyncio.gather(*work)
    return answers


def memory_health(base: str) -> dict[str, int | None]:
    with urllib.request.urlopen(f"{base}/healthz", timeout=10) as resp:
        memory: dict[str, int | None] = json.loads(resp.read())["memory"]
        return memory


def stored_traces(store_dir: Path) -> int:
    async def count() -> int:
        store = Store(str(store_dir))
        await store.start()
        try:
            rows = await store.query("SELECT uniqExact(TraceId) AS n FROM otel_traces")
            return int(rows[0]["n"])
        finally:
            await store.shutdown()

    return asyncio.run(count())


@pytest.mark.parametrize("limit_mib", [512, 2048])
def test_memory_stays_under_the_limit_with_the_biggest_request_a_flood_and_both(
    tmp_path: Path, limit_mib: int
) -> None:
    limit = limit_mib * MIB
    big_traces, big = big_request(first_trace=0)
    more_traces, big_again = big_request(first_trace=BIG_ITEMS)
    flood_traces, bodies = flood_requests(first_trace=2 * BIG_ITEMS, requests=4 * CLIENTS)
    store = tmp_path / "store"
    proc, http_port = start_serve(store, "--memory-limit", f"{limit_mib}MiB", "--idle", "0.5")
    try:
        base = wait_healthy(proc, http_port)
        with peak_allocated(proc.pid) as peak:
            answers = asyncio.run(flood(base, [], big))  # the biggest request alone
            half = len(bodies) // 2
            answers += asyncio.run(flood(base, bodies[:half]))  # a flood of 16 clients
            answers += asyncio.run(flood(base, bodies[half:], big_again))  # both together
        assert answers.count(200) == 2 + len(bodies)  # every request acknowledged in the end
        assert set(answers) <= {200, 429, 503}
        hwm = kernel_peak(proc.pid)
        measured = (
            f"allocated {peak[0] / MIB:.0f} MiB at its peak, {100 * peak[0] / limit:.0f}% of memory_limit "
            f"{limit_mib} MiB (VmHWM {hwm / MIB:.0f} MiB with library code); answers: "
            f"{answers.count(200)} x 200, {answers.count(429)} x 429, {answers.count(503)} x 503"
        )
        print(measured)
        assert peak[0] <= 1.05 * limit, measured
        memory = memory_health(base)  # what the operator reads: the limit, the rest size, the reservations
        assert memory["limit_bytes"] == limit and memory["reserved_bytes"] == 0
        rest, resident = memory["rest_bytes"], memory["resident_bytes"]
        assert rest is not None and resident is not None
        assert 0 < rest < resident + limit
    finally:
        os.kill(proc.pid, signal.SIGKILL)  # acknowledged means stored: no need to wait for the scoring
        proc.wait(timeout=30)
        if proc.stdout:
            proc.stdout.close()
    assert stored_traces(store) == big_traces + more_traces + flood_traces


def test_a_limit_below_what_the_service_needs_at_rest_is_refused_at_start(tmp_path: Path) -> None:
    done = tracescore(
        "serve", "--store", str(tmp_path / "store"), "--http-port", "0", "--grpc-port", "0",
        "--memory-limit", "300MiB",
    )  # fmt: skip
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("tracescore: error:")]
    assert len(errors) == 1, done.stderr
    match = re.fullmatch(
        r"tracescore: error: memory_limit 300 MiB is too low: tracescore holds (\d+) MiB before its store "
        r"opens, the store open and storing spans needs about (\d+) MiB more, and one request of "
        r"receiver.max_request_bytes \(20 MiB\) up to (\d+) MiB: set memory_limit to at least (\d+) MiB, "
        r"or lower receiver.max_request_bytes",
        errors[0],
    )
    assert match, errors[0]
    rest, working, request, needed = (int(group) for group in match.groups())
    assert 50 < rest < 300 and needed >= rest + working + request > 300


NEEDED = re.compile(r"set memory_limit to at least (\d+) MiB")


def smallest_limit(store: Path) -> int:
    """The smallest memory_limit (MiB) ``serve`` accepts on ``store``, as its refusal of a limit too low
    names it."""
    done = tracescore(
        "serve", "--store", str(store), "--http-port", "0", "--grpc-port", "0", "--memory-limit", "300MiB"
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    match = NEEDED.search(done.stderr)
    assert match, done.stderr
    return int(match.group(1))


def test_a_limit_accepted_once_is_accepted_after_any_crash_and_a_limit_too_low_stays_refused(
    tmp_path: Path,
) -> None:
    """A start's rest size is measured before the store opens: what a crash leaves -- a store of more
    parts, traces recovery adopts -- is admitted work, not a reason to refuse the next start. Started at
    the smallest limit it accepts (and a little more), killed twice while traces are undecided, it comes
    up each time; a limit too low is refused the same way each time, before the store is touched."""
    store = tmp_path / "store"
    smallest = smallest_limit(store)
    assert not store.exists()  # refused before the store was opened, or made
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    env["TRACESCORE_MEMORY_LIMIT"] = f"{smallest + 8}MiB"
    # What is sent stays undecided until the kill.
    env["TRACESCORE_IDLE_SECONDS"] = env["TRACESCORE_MAX_WAIT_SECONDS"] = "3600"
    ids, bodies = many_trace_requests(400, 20, "crash-limit")
    sent = 0
    for kill in range(2):
        proc, port = start_serve(store, env=env, stderr_file=tmp_path / "serve.log")
        try:
            base = wait_healthy(proc, port)  # refused at start: "serve exited early"
            for traces, body in list(zip(ids, bodies, strict=True))[kill * 10 : (kill + 1) * 10]:
                request = urllib.request.Request(f"{base}/v1/traces", data=body, headers=PROTOBUF)
                with urllib.request.urlopen(request, timeout=30) as resp:
                    assert resp.status == 200
                sent += len(traces)
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            if proc.stdout:
                proc.stdout.close()
    proc, port = start_serve(store, env=env, stderr_file=tmp_path / "serve.log")
    try:
        base = wait_healthy(proc, port)
        with urllib.request.urlopen(f"{base}/healthz", timeout=5) as resp:
            memory = json.loads(resp.read())["memory"]
        assert memory["rest_bytes"] < memory["started_bytes"], memory  # recovery's adopted traces
        assert "recovery: 400 undecided trace(s)" in (tmp_path / "serve.log").read_text()
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        if proc.stdout:
            proc.stdout.close()
    assert sent == 400
    assert abs(smallest_limit(store) - smallest) <= 4  # measured the same way on a store that holds data
