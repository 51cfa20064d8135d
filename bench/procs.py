"""The processes a benchmark starts (a broker, ``tracescore serve``, a peer): on free loopback ports, their
output in a log file, and stopped at the end however the benchmark ends.

Each is started with ``PR_SET_PDEATHSIG``: if the benchmark itself is killed, the kernel stops what it
started. The signal follows the thread that forked, so start them from the main thread.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
_PR_SET_PDEATHSIG = 1


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> Callable[[], None] | None:
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)

    def preexec() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)

    return preexec


def start(
    args: list[str], log: IO[bytes] | None = None, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """``args`` as a child that stops when the benchmark does; its output to ``log``."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return subprocess.Popen(
        args,
        env={**os.environ, "PYTHONPATH": path, **(env or {})},
        stdout=log or subprocess.DEVNULL,
        stderr=subprocess.STDOUT if log else subprocess.DEVNULL,
        preexec_fn=_die_with_parent(),  # started from the main thread, see above
    )


def stop(proc: subprocess.Popen[bytes], grace: float = 30.0, sig: int = signal.SIGTERM) -> None:
    """Signal ``proc`` (SIGTERM) and wait; killed if it is still there after ``grace`` seconds."""
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) a process has used so far, every thread of it (None off Linux)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tail(log: IO[bytes], lines: int = 30) -> str:
    """The end of a child's log, for an error message."""
    log.flush()
    with open(log.name, "rb") as text:
        return b"".join(text.readlines()[-lines:]).decode(errors="replace")


async def wait_http(url: str, proc: subprocess.Popen[bytes], limit_s: float = 120.0) -> None:
    """Until ``url`` answers 200 (or ``proc`` exits, or ``limit_s`` passes)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit_s
    async with aiohttp.ClientSession() as session:
        while loop.time() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"{proc.args!r} exited with {proc.returncode}")
            try:
                async with session.get(url) as resp:
                    if resp.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError(f"{url} did not answer within {limit_s:.0f} s")
