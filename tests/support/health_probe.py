"""``/healthz`` probed from a process of its own, as the kubelet probes it: what the probe measures is
the service's answer, not the test process's own work beside it (its GIL, its sockets)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

_PROBE = """
import json, sys, time, urllib.request
url, period = sys.argv[1], float(sys.argv[2])
latencies = []
while True:
    started = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            resp.read()
        latencies.append(time.monotonic() - started)
    except OSError:
        latencies.append(float("inf"))
    print(json.dumps(latencies[-1]), flush=True)
    time.sleep(max(0.0, period - (time.monotonic() - started)))
"""


@contextmanager
def probed_health(base: str, period_s: float = 0.1) -> Iterator[list[float]]:
    """Probes ``base``/healthz every ``period_s`` while the block runs; the list holds every probe's
    latency in seconds (``inf`` for no answer) once the block is left."""
    latencies: list[float] = []
    probe = subprocess.Popen(
        [sys.executable, "-c", _PROBE, f"{base}/healthz", str(period_s)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        yield latencies
    finally:
        probe.terminate()
        out, _ = probe.communicate(timeout=30)
        lines = out.splitlines()
        if lines and not out.endswith("\n"):  # a line cut by the stop
            lines.pop()
        latencies.extend(float(json.loads(line)) for line in lines if line.strip())
