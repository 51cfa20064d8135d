"""The health lane answers from what the service's loop last published, in a process of its own: while
that loop is blocked it still answers, and once the loop has been silent too long it says so (503)."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.support.otlp import LOOPBACK, StaticHealth, running_http
from tests.support.serve import ENV
from tracescore.ingest.receivers import health_lane
from tracescore.ingest.receivers.health_lane import HealthLane


def get(url: str) -> tuple[int, dict[str, Any], float]:
    """Status, JSON body and how long the answer took."""
    started = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return int(resp.status), json.loads(resp.read()), time.monotonic() - started
    except urllib.error.HTTPError as error:
        with error:
            return int(error.code), json.loads(error.read()), time.monotonic() - started


async def test_the_lane_shows_health_and_readiness_as_published() -> None:
    state = {"ready": False}
    lane = HealthLane(LOOPBACK, 0, 10.0, 60.0, lambda: ({"status": "degraded", "store": "x"}, state["ready"]))
    await lane.start()
    try:
        base = f"http://{LOOPBACK}:{lane.port}"
        shown = {"status": "degraded", "store": "x"}
        assert (await asyncio.to_thread(get, f"{base}/healthz"))[:2] == (200, shown)
        assert (await asyncio.to_thread(get, f"{base}/readyz"))[:2] == (503, shown)
        state["ready"] = True
        await asyncio.sleep(health_lane.PUBLISH_EVERY_SECONDS * 2)
        assert (await asyncio.to_thread(get, f"{base}/readyz"))[0] == 200
    finally:
        await lane.shutdown()
    await lane.shutdown()  # idempotent


async def test_a_blocked_service_loop_does_not_hold_the_lane_and_a_stuck_one_is_reported() -> None:
    lane = HealthLane(LOOPBACK, 0, 10.0, 60.0, lambda: ({"status": "ok"}, True), stalled_after_s=1.0)
    await lane.start()
    base = f"http://{LOOPBACK}:{lane.port}"
    answers: list[tuple[float, int, dict[str, Any], float]] = []

    def probe() -> None:
        started = time.monotonic()
        while time.monotonic() - started < 1.8:
            status, body, took = get(f"{base}/healthz")
            answers.append((time.monotonic() - started, status, body, took))
            time.sleep(0.1)

    prober = threading.Thread(target=probe)
    try:
        prober.start()
        time.sleep(2.0)  # noqa: ASYNC251  # the service's loop blocked, as by a long synchronous call
        prober.join()
    finally:
        await lane.shutdown()
    assert answers and max(took for *_, took in answers) < 0.5  # answered all along
    early = [status for at, status, _, _ in answers if at < 0.8]
    late = [(status, body) for at, status, body, _ in answers if at > 1.3]
    assert early and set(early) == {200}
    assert late and {status for status, _ in late} == {503}
    assert late[0][1]["status"] == "stalled" and "has not run for" in late[0][1]["detail"]


async def test_the_receiver_serves_the_lane_with_the_public_view() -> None:
    health = StaticHealth(
        is_ready=False, body={"status": "degraded", "store": {"error": "disk full at /data/x"}}
    )
    async with running_http(health=health, health_port=0, auth_token="s3cret") as running:
        lane_port = running.receiver.health_port
        assert lane_port and lane_port != running.port
        status, body, _ = await asyncio.to_thread(get, f"http://{LOOPBACK}:{lane_port}/readyz")
    assert status == 503
    assert body == {"status": "degraded", "store": {"error": "[hidden: send the bearer token to see it]"}}


async def test_a_lane_port_in_use_names_its_setting() -> None:
    with socket.socket() as taken:
        taken.bind((LOOPBACK, 0))
        taken.listen()
        lane = HealthLane(LOOPBACK, taken.getsockname()[1], 10.0, 60.0, lambda: ({"status": "ok"}, True))
        with pytest.raises(OSError, match="health receiver cannot listen.*receiver.health_port"):
            await lane.start()


SERVICE_THAT_DIES = """
import asyncio, sys
from tracescore.ingest.receivers.health_lane import HealthLane

async def main():
    lane = HealthLane("127.0.0.1", 0, 10.0, 60.0, lambda: ({"status": "ok"}, True))
    await lane.start()
    print(lane.port, flush=True)
    await asyncio.sleep(60)

asyncio.run(main())
"""


def test_the_lane_ends_with_its_service_however_the_service_ends() -> None:
    service = subprocess.Popen(
        [sys.executable, "-c", SERVICE_THAT_DIES], stdout=subprocess.PIPE, text=True, env=ENV
    )
    try:
        assert service.stdout is not None
        port = int(service.stdout.readline())
        assert get(f"http://{LOOPBACK}:{port}/healthz")[0] == 200
    finally:
        service.kill()  # SIGKILL: no shutdown, the lane's stdin closes with the process
        service.wait()
        assert service.stdout is not None
        service.stdout.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection((LOOPBACK, port), timeout=1).close()
        except ConnectionRefusedError:
            return  # the lane is gone
        except ConnectionResetError:
            pass  # the lane is closing its port as we connect: it is going; look again
        time.sleep(0.1)
    raise AssertionError("the health lane outlived its service")
