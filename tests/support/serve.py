"""``tracescore`` as users run it: a separate process on free loopback ports, the embedded store."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, AnyStr

from tests.support.background import every
from tracescore.ingest.store.clickhouse import Store

PROJECT_ROOT = str(Path(__file__).resolve().parents[2])
# The subprocess imports the project from the source tree (and ``tests.*`` for custom scorers).
ENV = {**os.environ, "PYTHONPATH": PROJECT_ROOT}


def tracescore(
    *args: str, cwd: Path | None = None, timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tracescore.ingest.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**(env or ENV), "COLUMNS": "200"},
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_serve(
    store: Path,
    *extra: str,
    grpc_port: int | None = None,
    stderr_file: Path | None = None,
    env: dict[str, str] | None = None,
    prefix: Sequence[str] = (),
) -> tuple[subprocess.Popen[str], int]:
    """``tracescore serve`` in its own process on free ports; returns it and its HTTP port.

    Its log (stderr) goes to ``stderr_file`` when given (a file: nothing blocks on a full pipe),
    else nowhere; ``env`` replaces the environment (default ``ENV``); ``prefix`` runs it through
    another command (e.g. into a mount namespace, which must exec it)."""
    http_port = free_port()
    log = stderr_file.open("a") if stderr_file is not None else None
    proc = subprocess.Popen(
        [
            *prefix,
            sys.executable,
            "-m",
            "tracescore.ingest.cli",
            "serve",
            "--store",
            str(store),
            "--grpc-port",
            str(grpc_port or free_port()),
            "--http-port",
            str(http_port),
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=log if log is not None else subprocess.DEVNULL,
        text=True,
        env=env or ENV,
    )
    if log is not None:
        log.close()  # the child has its own descriptor
    return proc, http_port


def stop(proc: subprocess.Popen[AnyStr]) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=30)
    finally:
        if proc.stdout:
            proc.stdout.close()


def wait_healthy(proc: subprocess.Popen[AnyStr], http_port: int, limit_s: float = 60.0) -> str:
    """Wait until ``/healthz`` answers (the service is up); returns the base URL. Fails if the process
    exits first."""
    base = f"http://127.0.0.1:{http_port}"
    deadline = time.monotonic() + limit_s
    while True:
        try:
            with urllib.request.urlopen(f"{base}/healthz", timeout=1) as resp:
                assert json.loads(resp.read())["status"] in ("ok", "degraded")
            return base
        except OSError:
            assert proc.poll() is None, "serve exited early"
            assert time.monotonic() < deadline, "serve did not come up"
            time.sleep(0.1)


def wait_ready(base: str, limit_s: float = 30.0) -> None:
    """Wait until ``/readyz`` answers 200 (a service comes up before it is ready: its store checked)."""
    deadline = time.monotonic() + limit_s
    while True:
        try:
            with urllib.request.urlopen(f"{base}/readyz", timeout=1) as resp:
                resp.read()
            return
        except OSError:
            assert time.monotonic() < deadline, "serve did not become ready"
            time.sleep(0.1)


def api_rows(url: str, timeout: float = 10) -> list[dict[str, Any]]:
    """The rows of ``GET /api/scores`` or ``/api/decisions`` of a trace: none while the service answers
    404 for it (not received yet, not yet scored: the body says which)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            rows: list[dict[str, Any]] = json.loads(resp.read())
            return rows
    except urllib.error.HTTPError as exc:
        with exc:
            if exc.code != 404:
                raise
            assert "status" in json.loads(exc.read()), url
        return []


def decision_outcome(
    store_dir: Path,
) -> tuple[dict[str, int], list[tuple[str, str, int]], list[tuple[str, str, int]]]:
    """Per trace, its decisions (FINAL); and every (span, scorer) with more than one current decision
    or score row -- which must be none."""

    async def read() -> tuple[dict[str, int], list[tuple[str, str, int]], list[tuple[str, str, int]]]:
        store = Store(str(store_dir))
        await store.start()
        try:
            per_trace = await store.query(
                "SELECT TraceId, count() AS n FROM score_decisions FINAL GROUP BY TraceId"
            )
            doubled_decisions = await store.query(
                "SELECT SpanId, ScorerId, count() AS n FROM score_decisions FINAL "
                "GROUP BY TraceId, SpanId, ScorerId HAVING n > 1"
            )
            doubled_scores = await store.query(
                "SELECT SpanId, ScorerId, count() AS n FROM scores FINAL "
                "GROUP BY TraceId, SpanId, ScorerId HAVING n > 1"
            )
        finally:
            await store.shutdown()
        return (
            {row["TraceId"]: int(row["n"]) for row in per_trace},
            [(r["SpanId"], r["ScorerId"], int(r["n"])) for r in doubled_decisions],
            [(r["SpanId"], r["ScorerId"], int(r["n"])) for r in doubled_scores],
        )

    return asyncio.run(read())


def ledger_spans_missing_from_otel_traces(store_dir: Path) -> list[tuple[str, str]]:
    """The spans ``span_ledger`` (what the scorers read) holds that ``otel_traces`` (what Grafana shows)
    does not -- which must be none."""

    async def read() -> list[tuple[str, str]]:
        store = Store(str(store_dir))
        await store.start()
        try:
            missing = await store.query(
                "SELECT TraceId, SpanId FROM span_ledger WHERE Kind = 1 "
                "AND (TraceId, SpanId) NOT IN (SELECT TraceId, SpanId FROM otel_traces)"
            )
        finally:
            await store.shutdown()
        return [(row["TraceId"], row["SpanId"]) for row in missing]

    return asyncio.run(read())


@contextmanager
def peak_allocated(pid: int, every_s: float = 0.005) -> Iterator[list[int]]:
    """The highest anonymous resident memory of process ``pid`` (``RssAnon``: what memory_limit bounds)
    while the block runs, read from the kernel every ``every_s``; yields a one-item list."""
    peak = [0]
    path = Path(f"/proc/{pid}/status")

    def sample() -> bool:
        try:
            match = re.search(r"^RssAnon:\s+(\d+) kB", path.read_text(), re.M)
        except OSError:  # the process is gone
            return False
        if match:
            peak[0] = max(peak[0], int(match.group(1)) * 1024)
        return True

    with every(every_s, sample, join_s=5):
        yield peak


def kernel_peak(pid: int) -> int:
    """VmHWM: the kernel's high-water mark of the whole resident set of process ``pid`` (the library
    code it maps from files included, which memory_limit does not count)."""
    match = re.search(r"^VmHWM:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.M)
    assert match, "no VmHWM in /proc"
    return int(match.group(1)) * 1024
