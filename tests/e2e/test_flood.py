"""A flood of 25,000 agent runs against a real ``tracescore serve`` with a 768 MiB ``memory_limit``.

The service must take it within its bound -- what it allocates (its anonymous resident memory, read
from the kernel every 5 ms) stays under the limit, admitting requests as their cost fits and slowing
clients down (429 with Retry-After) when they do not -- score nothing early, and score every
acknowledged trace once afterwards. The clients behave as OTLP exporters do: they send again after
Retry-After.
"""

from __future__ import annotations

import asyncio
import re
import time
import urllib.request
from pathlib import Path

import aiohttp

from tests.support.otlp import many_trace_requests
from tests.support.serve import decision_outcome, kernel_peak, peak_allocated, start_serve, stop, wait_healthy

TRACES = 25_000
PER_REQUEST = 100
CLIENTS = 8
MEMORY_LIMIT = 768 * 1024**2
SCORERS = 2  # the default rules
PROTOBUF = {"Content-Type": "application/x-protobuf"}


def flood_requests() -> tuple[list[str], list[bytes]]:
    """TRACES distinct runs (the demo's agent scenarios under fresh trace ids), PER_REQUEST each."""
    ids, bodies = many_trace_requests(TRACES, PER_REQUEST, "flood")
    return [trace_id for request in ids for trace_id in request], bodies


async def send_all(base: str, bodies: list[bytes]) -> tuple[int, int]:
    """Send every body, each until it is acknowledged; returns (acknowledged, refused answers)."""
    todo = list(reversed(bodies))
    acknowledged = refused = 0

    async def client(session: aiohttp.ClientSession) -> None:
        nonlocal acknowledged, refused
        while todo:
            body = todo.pop()
            while True:
                async with session.post(f"{base}/v1/traces", data=body, headers=PROTOBUF) as resp:
                    await resp.read()
                    if resp.status == 200:
                        acknowledged += 1
                        break
                    assert resp.status == 429, f"answered {resp.status}"
                    refused += 1
                    await asyncio.sleep(float(resp.headers["Retry-After"]))

    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        await asyncio.gather(*(client(session) for _ in range(CLIENTS)))
    return acknowledged, refused


def metrics(base: str) -> dict[str, float]:
    with urllib.request.urlopen(f"{base}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    return {m.group(1): float(m.group(2)) for m in re.finditer(r"^(tracescore_\S+) (\S+)$", text, re.M)}


def decided(values: dict[str, float]) -> float:
    return sum(v for k, v in values.items() if k.startswith("tracescore_scoring_decisions_total{"))


def test_a_flood_is_taken_under_the_memory_limit_and_scored_once_afterwards(tmp_path: Path) -> None:
    trace_ids, bodies = flood_requests()
    store = tmp_path / "store"
    proc, http_port = start_serve(store, "--memory-limit", str(MEMORY_LIMIT))
    try:
        base = wait_healthy(proc, http_port)
        with peak_allocated(proc.pid) as peak:
            acknowledged, refused = asyncio.run(send_all(base, bodies))
            assert acknowledged == len(bodies)

            deadline = time.monotonic() + 300
            while decided(values := metrics(base)) < SCORERS * TRACES:
                assert time.monotonic() < deadline, f"only {decided(values)} decisions after 300 s"
                time.sleep(1)
        assert values.get('tracescore_requests_refused_total{reason="memory"}', 0) == refused
        # Every trace was released because it was complete and quiet -- none early, none twice.
        released = {
            key: value for key, value in values.items() if key.startswith("tracescore_traces_assembled_total")
        }
        assert released == {'tracescore_traces_assembled_total{reason="idle"}': TRACES}
        hwm = kernel_peak(proc.pid)
        assert peak[0] < MEMORY_LIMIT, f"allocated {peak[0] / 2**20:.0f} MiB (VmHWM {hwm / 2**20:.0f} MiB)"
    finally:
        assert stop(proc) == 0

    per_trace, doubled_decisions, doubled_scores = decision_outcome(store)
    assert per_trace == dict.fromkeys(trace_ids, SCORERS)
    assert doubled_decisions == [] and doubled_scores == []
