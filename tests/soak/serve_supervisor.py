"""``tracescore serve`` under the soak, as a process supervisor runs it: started on the tmpfs (through
``nsenter`` into its namespace), watched, killed with SIGKILL when the schedule says and started again
at once on the same store and ports, started again when it exits by itself, stopped with SIGTERM at
the end. Each process is a ``Life``: when it came up (both ``/healthz`` answered 200), how it ended,
and the peak of its anonymous resident memory (``RssAnon``, sampled every 20 ms)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.soak.criteria import STOP_LIMIT_S
from tests.soak.observations import Ending, Life
from tests.soak.prober import probe_once
from tests.support.serve import peak_allocated, start_serve
from tests.support.tmpfs import Tmpfs

MEMORY_EVERY_S = 0.02
UP_LIMIT_S = 180.0  # a start that does not answer within this never came up (recovery included)
LANE_AFTER_OTLP_S = 30.0  # the health lane starts right after the OTLP/HTTP port
START_ATTEMPTS = 5  # starts in a row that do not come up before the supervisor gives up
RETRY_START_S = 2.0
CHILDREN_GONE_S = 10.0  # after a SIGKILL, for the health lane to see its stdin close and end


@dataclass(frozen=True)
class Ports:
    http: int
    grpc: int
    health: int

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.http}"

    @property
    def lane(self) -> str:
        return f"http://127.0.0.1:{self.health}"


class ServeSupervisor:
    def __init__(
        self, disk: Tmpfs, store: Path, flags: Sequence[str], env: dict[str, str], log: Path, ports: Ports
    ) -> None:
        self.disk, self.store, self.env, self.log, self.ports = disk, store, env, log, ports
        # start_serve picks an HTTP port of its own; a later --http-port wins (argparse keeps the last),
        # so every life answers on the same ports.
        self.flags = [*flags, "--http-port", str(ports.http), "--health-port", str(ports.health)]
        self.lives: list[Life] = []
        self.gave_up = False  # START_ATTEMPTS starts in a row did not come up
        self._proc: subprocess.Popen[str] | None = None
        self._sampling: contextlib.ExitStack | None = None
        self._peak: list[int] = [0]
        self._lock = asyncio.Lock()

    @property
    def life(self) -> Life | None:
        return self.lives[-1] if self.lives else None

    @property
    def up(self) -> bool:
        life = self.life
        return life is not None and life.up_at is not None and life.ended_at is None

    async def start(self) -> bool:
        """Start serve (again until it comes up, START_ATTEMPTS times at most); whether it came up."""
        async with self._lock:
            return await self._start_until_up()

    async def kill_and_restart(self) -> None:
        """SIGKILL, then start again at once on the same store and ports."""
        async with self._lock:
            if self._proc is None or self.gave_up:
                return
            await self._end(Ending.SIGKILL)
            await self._start_until_up()

    async def watch(self) -> None:
        """Until cancelled: a serve that exits by itself is recorded and started again."""
        while not self.gave_up:
            await asyncio.sleep(0.2)
            async with self._lock:
                if self._proc is not None and self._proc.poll() is not None and self.up:
                    await self._end(Ending.EXITED)
                    await self._start_until_up()

    async def terminate(self) -> None:
        """SIGTERM, and wait for the exit (STOP_LIMIT_S; then SIGKILL)."""
        async with self._lock:
            if self._proc is not None:
                await self._end(Ending.SIGTERM)

    def abandon(self) -> None:
        """The soak is ending early: SIGKILL whatever runs (synchronous, for cleanup)."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
            life = self.life
            if life is not None and life.ended_at is None:
                life.ended_at, life.ended_by, life.exit_code = (
                    time.monotonic(),
                    Ending.ABANDONED,
                    proc.returncode,
                )
        self._stop_sampling()

    # -- one life ---------------------------------------------------------------------------------------

    async def _start_until_up(self) -> bool:
        for attempt in range(START_ATTEMPTS):
            if attempt:
                await asyncio.sleep(RETRY_START_S)
            if await self._start_once():
                return True
        self.gave_up = True
        return False

    async def _start_once(self) -> bool:
        life = Life(number=len(self.lives) + 1, started_at=time.monotonic())
        self.lives.append(life)
        proc, _ = start_serve(
            self.store,
            *self.flags,
            grpc_port=self.ports.grpc,
            stderr_file=self.log,
            env=self.env,
            prefix=self.disk.inside(),
        )
        self._proc, life.pid = proc, proc.pid
        _drain(proc)
        self._sampling = contextlib.ExitStack()
        self._peak = self._sampling.enter_context(peak_allocated(proc.pid, every_s=MEMORY_EVERY_S))
        up_at = await asyncio.to_thread(_wait_up, proc, (self.ports.base, self.ports.lane))
        if up_at is None:
            await self._end(Ending.EXITED if proc.poll() is not None else Ending.NEVER_UP)
            return False
        life.up_at = up_at
        life.pid_is_serve = _is_serve(proc.pid)
        return True

    async def _end(self, how: Ending) -> None:
        proc, life = self._proc, self.life
        if proc is None or life is None:
            return
        self._proc = None
        life.ended_at, life.ended_by = time.monotonic(), how
        children = _children(proc.pid)
        if how is Ending.SIGTERM:
            proc.send_signal(signal.SIGTERM)
            try:
                life.exit_code = await asyncio.to_thread(proc.wait, STOP_LIMIT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                await asyncio.to_thread(proc.wait)
                life.exit_code = None
            life.stop_s = time.monotonic() - life.ended_at
        else:
            if proc.poll() is None:
                proc.kill()
            life.exit_code = await asyncio.to_thread(proc.wait)
        # The health lane ends when it sees its stdin close; a start before that could not take its port.
        await asyncio.to_thread(_until_gone, children, CHILDREN_GONE_S)
        self._stop_sampling()

    def _stop_sampling(self) -> None:
        sampling, self._sampling = self._sampling, None
        if sampling is not None:
            sampling.close()
            life = self.life
            if life is not None:
                life.peak_rss_anon = max(life.peak_rss_anon, self._peak[0])


def _wait_up(proc: subprocess.Popen[str], urls: Sequence[str]) -> float | None:
    """When ``/healthz`` had answered 200 on every URL (or, if one never does, when the first did);
    None if the process exits first or nothing answers within UP_LIMIT_S."""
    answered: dict[str, float] = {}
    deadline = time.monotonic() + UP_LIMIT_S
    while time.monotonic() < deadline and proc.poll() is None:
        for url in urls:
            if url not in answered and probe_once(f"{url}/healthz", 1.0)[0] == 200:
                answered[url] = time.monotonic()
        if len(answered) == len(urls):
            return max(answered.values())
        if answered and time.monotonic() > min(answered.values()) + LANE_AFTER_OTLP_S:
            return min(answered.values())
        time.sleep(0.1)
    return None


def _drain(proc: subprocess.Popen[str]) -> None:
    """Read serve's stdout (start_serve pipes it) so that it never blocks on a full pipe."""

    def read() -> None:
        if proc.stdout is not None:
            with contextlib.suppress(ValueError, OSError):
                for _ in proc.stdout:
                    pass

    threading.Thread(target=read, name="soak-serve-stdout", daemon=True).start()


def _is_serve(pid: int) -> bool:
    """Whether ``pid`` runs serve itself: nsenter with only -U -m execs it rather than forking."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"tracescore.ingest.cli" in argv and b"serve" in argv and not argv[0].endswith(b"nsenter")


def _children(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            found += [int(child) for child in (task / "children").read_text().split()]
    return found


def _until_gone(pids: Sequence[int], limit_s: float) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"
