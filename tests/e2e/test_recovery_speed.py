"""A long recovery runs at live speed and new traffic flows meanwhile: a real ``tracescore serve``
holding thousands of acknowledged, undecided traces is SIGKILLed and restarted on the same store.

Three lives of the service on one embedded store:

1. the live rate, measured here, in this run (so a busy machine slows both sides alike): traces
   scored as they come, with a short idle;
2. ``HELD`` traces acknowledged and held undecided (a long idle), then SIGKILL;
3. a restart with the default idle: recovery adopts the held traces while new traces arrive.

When each trace was decided is read from the store afterwards (each decision's ``Timestamp`` is the
moment it was made), so measuring does not load the service with queries.
"""

from __future__ import annotations

import asyncio
import json
import math
import signal
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

from ingest.store.clickhouse import Store
from tests.support.otlp import agent_trace_requests
from tests.support.serve import decision_outcome, start_serve, stop, wait_healthy

HELD = 2_000  # undecided traces in the store at the restart
NEW = 10  # traces sent right after the restart, while recovery runs
PER_REQUEST = 50  # traces per export request (an SDK exporter's batch)
SCORERS = 2  # the default rules
IDLE_SECONDS = 2.0  # the default idle of the restarted service
# Recovery must reach this rate whatever the machine: 20 times what it managed when every recovered
# trace asked the store for its earlier outcomes alone (12-75 traces/s measured here), and a fraction
# of this run's own live rate.
FLOOR_PER_SECOND = 300.0
OF_LIVE = 0.5
NEW_TRACE_SLACK_SECONDS = 3.0  # past its idle window, a new trace is decided within this
PROTOBUF = {"Content-Type": "application/x-protobuf"}


def _post(base: str, requests: list[tuple[str, bytes]]) -> None:
    for start in range(0, len(requests), PER_REQUEST):
        # Serialized export requests concatenate into one (their resource_spans are a repeated field).
        body = b"".join(body for _, body in requests[start : start + PER_REQUEST])
        request = urllib.request.Request(f"{base}/v1/traces", data=body, headers=PROTOBUF)
        with urllib.request.urlopen(request, timeout=60) as resp:
            assert resp.status == 200


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.loads(resp.read())


def _decisions_made(base: str) -> float:
    """Every decision the running service made (all scorers, all kinds), from its metrics."""
    lines = _metric_lines(base, "tracescore_scoring_decisions_total{")
    return sum(float(line.rsplit(" ", 1)[1]) for line in lines)


def _metric_lines(base: str, name: str) -> list[str]:
    with urllib.request.urlopen(f"{base}/metrics", timeout=10) as resp:
        return [line for line in resp.read().decode().splitlines() if line.startswith(name)]


def _kill(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    if proc.stdout:
        proc.stdout.close()


def _wait_for_decisions(base: str, count: int, limit_s: float) -> bool:
    deadline = time.monotonic() + limit_s
    while _decisions_made(base) < count:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def _decided_at(store_dir: Path, trace_ids: list[str]) -> dict[str, int]:
    """When each trace's last decision was made (ns since the epoch), read from the stopped store."""

    async def read() -> dict[str, int]:
        store = Store(str(store_dir))
        await store.start()
        try:
            rows = await store.query(
                "SELECT TraceId, toUnixTimestamp64Nano(max(Timestamp)) AS At FROM score_decisions FINAL "
                "WHERE TraceId IN {ids:Array(String)} GROUP BY TraceId",
                {"ids": trace_ids},
            )
        finally:
            await store.shutdown()
        return {row["TraceId"]: int(row["At"]) for row in rows}

    return asyncio.run(read())


def test_recovery_of_thousands_of_traces_runs_at_live_speed_beside_new_traffic(tmp_path: Path) -> None:
    store = tmp_path / "store"
    live = agent_trace_requests(HELD, service="live")
    held = agent_trace_requests(HELD, service="held")
    new = agent_trace_requests(NEW, service="new")

    # 1. The live rate: from the first request sent to the last trace decided.
    proc, http_port = start_serve(store, "--idle", "0.2")
    try:
        base = wait_healthy(proc, http_port)
        live_started = time.time_ns()
        _post(base, live)
        assert _wait_for_decisions(base, SCORERS * HELD, 60), "live traces not decided in 60 s"
    finally:
        assert stop(proc) == 0

    # 2. Acknowledged, held undecided, killed.
    proc, http_port = start_serve(store, "--idle", "60")
    try:
        base = wait_healthy(proc, http_port)
        _post(base, held)
        assert _decisions_made(base) == 0
    finally:
        _kill(proc)

    # 3. Restarted: recovery and new traffic at once.
    proc, http_port = start_serve(store, stderr_file=tmp_path / "restarted.log")
    all_decided = False
    try:
        base = wait_healthy(proc, http_port)
        restarted = time.time_ns()  # recovery's scan is done once the service answers
        during = _get(f"{base}/healthz").get("recovery")
        new_sent = time.time_ns()
        _post(base, new)
        limit = HELD / FLOOR_PER_SECOND + IDLE_SECONDS + 5
        all_decided = _wait_for_decisions(base, SCORERS * (HELD + NEW), limit)
        after = _get(f"{base}/healthz").get("recovery")
        recovered_metric = _metric_lines(base, "tracescore_traces_recovered_total")
    finally:
        if all_decided:
            assert stop(proc) == 0
        else:  # what was decided so far is in the store; scoring the rest on shutdown takes long
            _kill(proc)

    live_at = _decided_at(store, [trace_id for trace_id, _ in live])
    held_at = _decided_at(store, [trace_id for trace_id, _ in held])
    new_at = _decided_at(store, [trace_id for trace_id, _ in new])
    live_rate = HELD / ((max(live_at.values()) - live_started) / 1e9)
    recovered = len(held_at)
    recovery_s = (max(held_at.values(), default=restarted) - restarted) / 1e9
    recovery_rate = recovered / max(recovery_s, 1e-3)
    new_delays = sorted(round((at - new_sent) / 1e9 - IDLE_SECONDS, 2) for at in new_at.values())
    numbers = (
        f"live {live_rate:.0f} traces/s; recovered {recovered} of {HELD} in {recovery_s:.1f} s "
        f"({recovery_rate:.0f} traces/s); new traces decided {new_delays} s past their idle window"
    )
    print(numbers)
    assert all_decided, f"not every trace decided within {limit:.0f} s of the restart: {numbers}"
    assert recovered == HELD, numbers
    assert recovery_rate >= FLOOR_PER_SECOND and recovery_rate >= OF_LIVE * live_rate, numbers
    assert len(new_at) == NEW and max(new_delays, default=math.inf) <= NEW_TRACE_SLACK_SECONDS, numbers

    # /healthz shows recovery's progress: under way right after the restart, done at the end.
    assert during is not None and during["state"] == "recovering" and during["found"] == HELD, during
    assert during["done"] + during["remaining"] == HELD, during
    assert after is not None and after["state"] == "done", after
    assert (after["found"], after["done"], after["remaining"]) == (HELD, HELD, 0), after
    assert after["traces_per_second"] > 0, after
    assert recovered_metric == [f"tracescore_traces_recovered_total {float(HELD)}"]

    # Exactly once: one decision per rule for every acknowledged trace, no score row twice.
    per_trace, doubled_decisions, doubled_scores = decision_outcome(store)
    everything = [trace_id for trace_id, _ in (*live, *held, *new)]
    assert per_trace == dict.fromkeys(everything, SCORERS)
    assert doubled_decisions == [] and doubled_scores == []
