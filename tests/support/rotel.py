"""A real OpenTelemetry collector for tests: rotel (PyPI ``rotel``, a Rust OTLP collector whose wheel ships
the ``rotel-agent`` binary), run in the foreground as a subprocess of the test.

It receives OTLP on free loopback ports (gRPC and HTTP) and writes what it receives to Kafka with its kafka
exporter: one OTLP protobuf export request per record (``ExportTraceServiceRequest`` on the traces
topic, ``ExportLogsServiceRequest`` on the logs topic), the records unkeyed -- as the OpenTelemetry
Collector's kafka exporter does with ``encoding: otlp_proto``. ``running_rotel`` starts it, waits until
both receivers listen, and stops it afterwards (SIGTERM, then SIGKILL), whatever the test did.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 10.0
# rotel batches what it receives this long (default 200ms) before it writes a Kafka record. Its batch
# size (--batch-max-size, 8192 spans) must stay above the spans of one export request: it drops a
# request it would have to split into too many batches ("Too many batch items split, dropping data").
BATCH_TIMEOUT_S = 0.1


def agent_binary() -> Path:
    """The collector binary inside the installed ``rotel`` package (without importing it)."""
    spec = importlib.util.find_spec("rotel")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the rotel package is not installed: pip install -e '.[test]'")
    binary = Path(next(iter(spec.submodule_search_locations))) / "rotel-agent"
    if not os.access(binary, os.X_OK):
        raise RuntimeError(f"{binary} is missing or not executable")
    return binary


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Rotel:
    proc: subprocess.Popen[bytes]
    grpc_endpoint: str  # HOST:PORT, for the OTLP gRPC exporter
    http_endpoint: str  # http://HOST:PORT, the base of /v1/traces and /v1/logs
    log: Path  # what the collector printed

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        return True
    except OSError:
        return False


def stop_rotel(rotel: Rotel) -> int | None:
    """SIGTERM (the collector flushes its batches and stops its exporters), SIGKILL if it hangs."""
    if rotel.proc.poll() is None:
        rotel.proc.terminate()
        try:
            rotel.proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            rotel.proc.kill()
            rotel.proc.wait()
    return rotel.proc.returncode


def start_rotel(
    workdir: Path,
    kafka_bootstrap: str,
    traces_topic: str = "otlp_spans",
    logs_topic: str = "otlp_logs",
    metrics_topic: str = "otlp_metrics",
    extra: tuple[str, ...] = (),
) -> Rotel:
    """rotel receiving OTLP on free loopback ports and exporting to Kafka at ``kafka_bootstrap`` in the
    protobuf format, ``extra`` flags added; returns once both receivers accept connections. It runs in
    the foreground (not ``--daemon``), so it is the test's own child; its output is kept in
    ``workdir``."""
    workdir.mkdir(parents=True, exist_ok=True)
    grpc_port, http_port = _free_port(), _free_port()
    log = workdir / "rotel.log"
    # rotel reads every flag from ROTEL_* too: none of the caller's may change what the test runs.
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROTEL_")}
    args = [
        str(agent_binary()),
        "start",
        "--pid-file", str(workdir / "rotel.pid"),
        "--log-file", str(workdir / "rotel-daemon.log"),  # only a daemon writes these two
        "--otlp-grpc-endpoint", f"127.0.0.1:{grpc_port}",
        "--otlp-http-endpoint", f"127.0.0.1:{http_port}",
        "--batch-timeout", f"{round(BATCH_TIMEOUT_S * 1000)}ms",
        "--exporter", "kafka",
        "--kafka-exporter-brokers", kafka_bootstrap,
        "--kafka-exporter-format", "protobuf",
        "--kafka-exporter-traces-topic", traces_topic,
        "--kafka-exporter-logs-topic", logs_topic,
        "--kafka-exporter-metrics-topic", metrics_topic,
        "--kafka-exporter-acks", "all",
        *extra,
    ]  # fmt: skip
    with log.open("wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env)
    rotel = Rotel(proc, f"127.0.0.1:{grpc_port}", f"http://127.0.0.1:{http_port}", log)
    deadline = time.monotonic() + START_TIMEOUT_S
    while not (_listening(grpc_port) and _listening(http_port)):
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_rotel(rotel)
            raise RuntimeError(f"rotel did not start (exit {proc.returncode}):\n{rotel.output()}")
        time.sleep(0.05)
    return rotel


@contextmanager
def running_rotel(
    workdir: Path,
    kafka_bootstrap: str,
    *extra: str,
    traces_topic: str = "otlp_spans",
    logs_topic: str = "otlp_logs",
) -> Iterator[Rotel]:
    """``start_rotel``, and the collector stopped afterwards whatever the test did."""
    rotel = start_rotel(workdir, kafka_bootstrap, traces_topic, logs_topic, extra=extra)
    try:
        yield rotel
    finally:
        stop_rotel(rotel)
