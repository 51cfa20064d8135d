"""Honest health, from a real ``tracescore serve``: a Kafka broker that cannot be reached is retried
for as long as it takes, shown as failing in ``/healthz`` and ``/readyz`` (503), and picked up when
it comes; the service still stops promptly on SIGTERM."""

from __future__ import annotations

import json
import signal
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.support.kafka import free_port, start_broker, stop_broker
from tests.support.serve import start_serve, wait_healthy

EXAMPLE_CONFIG = Path(__file__).resolve().parents[2] / "deploy" / "tracescore.example.yaml"


def _get(url: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return int(resp.status), json.loads(resp.read())
    except urllib.error.HTTPError as error:
        return int(error.code), json.loads(error.read())


def test_an_unreachable_broker_is_degraded_retried_and_picked_up(tmp_path: Path) -> None:
    port = free_port()
    config = tmp_path / "tracescore.yaml"
    config.write_text("kafka: {session_timeout_ms: 6000}\n")
    proc, http_port = start_serve(
        tmp_path / "store",
        "--config",
        str(config),
        "--kafka-bootstrap",
        f"127.0.0.1:{port}",
        "--kafka-topic",
        "otlp_spans",
    )
    broker = None
    try:
        base = wait_healthy(proc, http_port)
        deadline = time.monotonic() + 30
        while True:
            status, body = _get(f"{base}/readyz")
            if body["kafka"]["status"] == "failing" or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert status == 503 and body["status"] == "degraded"
        assert body["kafka"]["status"] == "failing" and body["kafka"]["error"]
        assert body["store"]["status"] == "ok"
        alive, _ = _get(f"{base}/healthz")
        assert alive == 200  # degraded, but alive

        broker = start_broker(port)  # the broker comes up later, on the configured address
        deadline = time.monotonic() + 90
        while _get(f"{base}/readyz")[0] != 200:
            assert time.monotonic() < deadline, "the service never picked the broker up"
            time.sleep(0.5)
        assert _get(f"{base}/readyz")[1]["kafka"]["status"] == "assigned"
    finally:
        stopped = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
        took = time.monotonic() - stopped
        if proc.stdout:
            proc.stdout.close()
        if broker is not None:
            stop_broker(broker)
    assert code == 0 and took < 5.0


def test_sigterm_stops_promptly_while_the_broker_stays_unreachable(tmp_path: Path) -> None:
    proc, http_port = start_serve(
        tmp_path / "store", "--kafka-bootstrap", f"127.0.0.1:{free_port()}", "--kafka-topic", "otlp_spans"
    )
    try:
        wait_healthy(proc, http_port)
        time.sleep(3)  # a few connection attempts and backoffs
    finally:
        stopped = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
        took = time.monotonic() - stopped
        if proc.stdout:
            proc.stdout.close()
    assert code == 0 and took < 5.0


def test_a_sigterm_as_soon_as_health_answers_stops_cleanly(tmp_path: Path) -> None:
    """``/healthz`` answers while the start is still under way (drift, sessions, agreement passes come
    after the receivers): a SIGTERM right after its first answer -- a rollout, a test runner -- is a
    clean stop, exit 0, never the signal's default death."""
    for attempt in range(4):
        proc, http_port = start_serve(tmp_path / "store", "--config", str(EXAMPLE_CONFIG), "--no-kafka")
        try:
            base = f"http://127.0.0.1:{http_port}"
            deadline = time.monotonic() + 60
            while True:
                try:
                    with urllib.request.urlopen(f"{base}/healthz", timeout=1):
                        break
                except OSError:
                    assert proc.poll() is None and time.monotonic() < deadline, "serve did not come up"
                    time.sleep(0.005)
        finally:
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=60)
            if proc.stdout:
                proc.stdout.close()
        assert code == 0, f"attempt {attempt}: exited {code}"
