"""Recovery after a crash, end to end: the ``recovery_rate`` row.

A real ``tracescore serve`` on an embedded store takes ``HELD`` traces with a long idle window (none
is scored), is SIGKILLed, and starts again with the default idle: recovery finds them undecided in
the store and scores them while ``NEW`` new traces arrive. The row is recovery's rate -- the held
traces over the time from the start of its scan (``/healthz``) to the last of their decisions --
against the live rate of the same process afterwards: ``HELD`` more traces from the same batched
clients, over the time from the first request to the last decision, less the idle window each waits.
The detail has how long after sending the new traces were released, and recovery's ``/healthz``.

``python -m bench.recovery`` prints the row.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import aiohttp

from bench import procs, senders
from bench.report import Metric
from tracescore.schemas.config import DEFAULT_IDLE_SECONDS
from tracescore.schemas.scoring_config import DEFAULT_SCORERS

HELD = 10_000
NEW = 10
CLIENTS = 4
TRACES_PER_REQUEST = 100
POLL_SECONDS = 0.1
LIMIT_SECONDS = 300.0


async def _counts(session: aiohttp.ClientSession, base: str) -> tuple[float, float]:
    """(decisions made, rounds released as idle: new traces) from the service's /metrics."""
    async with session.get(f"{base}/metrics") as resp:
        text = await resp.text()
    decisions = idle = 0.0
    for line in text.splitlines():
        if line.startswith("tracescore_scoring_decisions_total{"):
            decisions += float(line.rsplit(" ", 1)[1])
        elif line.startswith('tracescore_traces_assembled_total{reason="idle"}'):
            idle = float(line.rsplit(" ", 1)[1])
    return decisions, idle


async def _until(session: aiohttp.ClientSession, base: str, decisions: float, idle: float = 0.0) -> float:
    """Wall time (s) once the service made ``decisions`` decisions and released ``idle`` idle rounds."""
    deadline = time.monotonic() + LIMIT_SECONDS
    while True:
        made, released = await _counts(session, base)
        if made >= decisions and released >= idle:
            return time.time()
        if time.monotonic() > deadline:
            raise RuntimeError(f"{made:.0f} of {decisions:.0f} decisions after {LIMIT_SECONDS:.0f} s")
        await asyncio.sleep(POLL_SECONDS)


class _Serve:
    def __init__(self, store: Path, log: Path, *flags: str) -> None:
        self.port = procs.free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        args = ["--store", str(store), "--http-port", str(self.port), "--grpc-port", str(procs.free_port())]
        self._log = log.open("ab")
        self.proc = procs.start(
            [sys.executable, "-m", "tracescore.ingest.cli", "serve", *args, *flags], self._log
        )

    async def ready(self) -> None:
        await procs.wait_http(f"{self.base}/healthz", self.proc)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        procs.stop(self.proc, sig=sig)
        self._log.close()


async def _measure() -> tuple[float, float, dict[str, Any]]:
    scorers = len(DEFAULT_SCORERS)
    with tempfile.TemporaryDirectory(prefix="tracescore-bench-recovery-") as data:
        store, log = Path(data) / "store", Path(data) / "serve.log"
        held = _Serve(store, log, "--idle", "60")
        try:
            await held.ready()
            await senders.send(f"{held.base}/v1/traces", HELD, TRACES_PER_REQUEST, CLIENTS)
        finally:
            held.stop(signal.SIGKILL)

        serve = _Serve(store, log)
        try:
            await serve.ready()
            async with aiohttp.ClientSession() as session:
                new_sent = time.time()
                await senders.send(f"{serve.base}/v1/traces", NEW, NEW, 1)
                new_released = await _until(session, serve.base, 0, idle=NEW)
                recovered = await _until(session, serve.base, scorers * (HELD + NEW))
                async with session.get(f"{serve.base}/healthz") as resp:
                    health = (await resp.json())["recovery"]
                live_sent = time.time()
                await senders.send(f"{serve.base}/v1/traces", HELD, TRACES_PER_REQUEST, CLIENTS)
                live_done = await _until(session, serve.base, scorers * (2 * HELD + NEW))
        finally:
            serve.stop()
    began = datetime.fromisoformat(health["started_at"]).timestamp()
    recovery_rate = HELD / (recovered - began)
    live_rate = HELD / (live_done - live_sent - DEFAULT_IDLE_SECONDS)
    detail = {
        "held_traces": HELD,
        "clients": CLIENTS,
        "traces_per_request": TRACES_PER_REQUEST,
        "recovery_seconds": round(recovered - began, 2),
        "new_traces_released_after_s": round(new_released - new_sent, 2),
        "idle_seconds": DEFAULT_IDLE_SECONDS,
        "healthz_recovery": health,
    }
    return recovery_rate, live_rate, detail


def metrics() -> list[Metric]:
    recovery_rate, live_rate, detail = asyncio.run(_measure())
    return [
        Metric(
            "recovery_rate",
            recovery_rate,
            "traces/s",
            live_rate,
            ">= 0.8",
            baseline_label="traces/s scored live by the same process, same clients",
            detail=detail,
        )
    ]


if __name__ == "__main__":
    for metric in metrics():
        print(metric.name, metric.as_json())
