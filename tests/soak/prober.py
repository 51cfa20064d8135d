"""The soak's health prober: ``GET /healthz`` on each given URL every half second, each on a new
connection with a 1 s timeout, as a kubelet probes.

It runs in a process of its own (``python -m tests.soak.prober NAME=URL ...``), so the soak's own load
(its clients, the flood it makes) never delays a probe: a late answer is the service's. It prints one
JSON line a probe (``{"at", "target", "status", "latency_s"}``, ``at`` in CLOCK_MONOTONIC seconds, the
clock of every process here) and ends when its stdin closes (the soak ended, however it ended).
``Prober`` starts it and collects the lines as ``Probe`` values."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from tests.soak.observations import NO_RESPONSE, Probe

EVERY_S = 0.5
TIMEOUT_S = 1.0
PROJECT_ROOT = str(Path(__file__).resolve().parents[2])


def probe_once(url: str, timeout_s: float) -> tuple[int, float]:
    started = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            resp.read()
            status = int(resp.status)
    except urllib.error.HTTPError as error:
        with error:
            status = int(error.code)
    except OSError:
        status = NO_RESPONSE
    return status, time.monotonic() - started


def _probe_forever(name: str, url: str, every_s: float, timeout_s: float, lock: threading.Lock) -> None:
    next_at = time.monotonic()
    while True:
        at = time.monotonic()
        status, latency = probe_once(url, timeout_s)
        line = json.dumps({"at": at, "target": name, "status": status, "latency_s": round(latency, 4)})
        with lock:
            print(line, flush=True)
        next_at = max(next_at + every_s, time.monotonic())
        time.sleep(max(0.0, next_at - time.monotonic()))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("targets", nargs="+", help="NAME=URL")
    parser.add_argument("--every", type=float, default=EVERY_S)
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S)
    args = parser.parse_args(argv)
    lock = threading.Lock()
    for target in args.targets:
        name, url = target.split("=", 1)
        thread = threading.Thread(
            target=_probe_forever, args=(name, url, args.every, args.timeout, lock), daemon=True
        )
        thread.start()
    sys.stdin.read()  # until the soak closes it, or ends
    os._exit(0)


class Prober:
    """The prober's process, and the probes it reported so far."""

    def __init__(
        self, targets: dict[str, str], every_s: float = EVERY_S, timeout_s: float = TIMEOUT_S
    ) -> None:
        argv = [f"{name}={url}" for name, url in targets.items()]
        self.probes: list[Probe] = []
        self._proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.soak.prober",
                *argv,
                f"--every={every_s}",
                f"--timeout={timeout_s}",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=PROJECT_ROOT,
        )
        self._reader = threading.Thread(target=self._read, name="soak-prober-reader", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            item = json.loads(line)
            self.probes.append(Probe(item["at"], item["target"], item["status"], item["latency_s"]))

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._reader.join(timeout=10)
        if self._proc.stdout is not None:
            self._proc.stdout.close()


if __name__ == "__main__":
    main()
