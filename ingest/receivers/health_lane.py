"""The health lane: ``/healthz`` and ``/readyz`` on a port of their own (``receiver.health_port``),
served by a small process of its own, so a probe is answered within milliseconds however busy the
service is: a flood of connections on the OTLP ports, scoring threads, a big request. (A thread would
not do: it waits for the interpreter lock behind the service's busy threads; measured, 0.3 to over
1 s under a 20,000-connection flood on two shared cores.)

The service's loop sends the lane what the probes show every ``PUBLISH_EVERY_SECONDS``, one JSON line
on the lane's stdin: ``/healthz``'s body as a caller without the token sees it on the OTLP/HTTP port,
and readiness. The lane answers from the latest. If none has come for ``stalled_after_s`` the service's
loop is stuck, and both probes answer 503 saying so: a liveness probe then restarts a service that is
truly stuck, and only then. When the service ends, however it ends, the lane sees its stdin close and
ends too. Its connections pass a gate of their own (header and idle timeouts, a small cap, making room
by closing the longest stalled), so a crowd on the lane cannot shut the probes out either.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import signal
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from aiohttp import web

from tracescore.ingest.receivers.connections import ConnectionGate
from tracescore.ingest.receivers.listening import GatedSite, cannot_listen

log = logging.getLogger(__name__)

PUBLISH_EVERY_SECONDS = 0.5
# A service loop that has not published for this long is stuck (a healthy one runs every few
# milliseconds; the longest pause measured, storing a 90,000-span request, was a fraction of a second).
STALLED_AFTER_SECONDS = 5.0
# Connections the lane takes at once: probes open one each, now and then.
LANE_CONNECTIONS = 64
START_TIMEOUT_SECONDS = 30.0
STOP_TIMEOUT_SECONDS = 5.0
MAX_LINE_BYTES = 1024 * 1024
_dumps = partial(json.dumps, default=str)  # health values may hold datetimes

# Reads (on the service's loop) the public health body and whether the service is ready.
HealthSource = Callable[[], tuple[dict[str, Any], bool]]


class HealthLane:
    """The lane's process, seen from the service: started, fed, stopped."""

    def __init__(
        self,
        host: str,
        port: int,
        header_timeout_s: float,
        idle_timeout_s: float,
        source: HealthSource,
        stalled_after_s: float = STALLED_AFTER_SECONDS,
    ) -> None:
        self._argv = [
            sys.executable,
            "-m",
            __name__,  # ingest.receivers.health_lane, from the source tree or the installed package
            f"--host={host}",
            f"--port={port}",
            f"--header-timeout={header_timeout_s}",
            f"--idle-timeout={idle_timeout_s}",
            f"--stalled-after={stalled_after_s}",
        ]
        self._source = source
        self._proc: asyncio.subprocess.Process | None = None
        self._publisher: asyncio.TimerHandle | None = None
        self.port = 0

    async def start(self) -> None:
        """Start the lane and feed it; raises OSError naming the setting if it cannot listen."""
        if self._proc is not None:
            return
        proc = self._proc = await asyncio.create_subprocess_exec(
            *self._argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
        )
        assert proc.stdout is not None
        try:
            first = await asyncio.wait_for(proc.stdout.readline(), START_TIMEOUT_SECONDS)
            started = json.loads(first) if first else {"error": "the health lane exited as it started"}
            if "error" in started:
                raise OSError(started["error"])
        except BaseException:
            await self.shutdown()
            raise
        self.port = int(started["port"])
        self._publish()

    async def shutdown(self) -> None:
        """Stop feeding the lane; it ends when its stdin closes."""
        if self._publisher is not None:
            self._publisher.cancel()
            self._publisher = None
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), STOP_TIMEOUT_SECONDS)
        except TimeoutError:
            log.warning("the health lane did not stop within %g s: killed", STOP_TIMEOUT_SECONDS)
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()

    def _publish(self) -> None:
        """What the probes show now, sent to the lane; again in a moment."""
        proc = self._proc
        if proc is None or proc.stdin is None:
            return
        if proc.returncode is not None:
            log.error("the health lane exited (%s): its port serves no probes", proc.returncode)
            return
        health, ready = self._source()
        # A lane that reads nothing (stopped) is sent nothing more: its answers turn to "stalled".
        if proc.stdin.transport.get_write_buffer_size() == 0:
            proc.stdin.write(_dumps({"health": health, "ready": ready}).encode() + b"\n")
        self._publisher = asyncio.get_running_loop().call_later(PUBLISH_EVERY_SECONDS, self._publish)


# --- the lane's process -------------------------------------------------------------------------------


class _Latest:
    """What the probes show: the latest line from the service, and when it came."""

    def __init__(self, stalled_after_s: float) -> None:
        self.stalled_after_s = stalled_after_s
        self.at = time.monotonic()
        self.health: dict[str, Any] = {"status": "starting"}
        self.ready = False

    def update(self, line: bytes) -> None:
        published = json.loads(line)
        self.health, self.ready, self.at = published["health"], bool(published["ready"]), time.monotonic()

    def answer(self, *, need_ready: bool) -> web.Response:
        silent_for = time.monotonic() - self.at
        if silent_for > self.stalled_after_s:
            detail = f"the service's event loop has not run for {silent_for:.0f} s"
            return web.json_response({"status": "stalled", "detail": detail}, status=503)
        status = 503 if need_ready and not self.ready else 200
        return web.json_response(self.health, status=status, dumps=_dumps)


async def _serve(args: argparse.Namespace) -> None:
    latest = _Latest(args.stalled_after)
    gate = ConnectionGate(
        LANE_CONNECTIONS,
        LANE_CONNECTIONS,
        args.header_timeout,
        args.idle_timeout,
        lambda reason: None,  # logged once a minute by the gate; the metrics count OTLP/HTTP's
        name="health lane",
    )

    async def healthz(request: web.Request) -> web.Response:
        """Liveness: 200 with each component's state while the service's loop runs."""
        return latest.answer(need_ready=False)

    async def readyz(request: web.Request) -> web.Response:
        """Readiness: 200 when spans can be taken and scored now, else 503 with what is wrong."""
        return latest.answer(need_ready=True)

    app = web.Application(middlewares=[gate.middleware])
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    try:
        try:
            await GatedSite(runner, args.host, args.port, gate).start()
        except OSError as exc:
            print(json.dumps({"error": cannot_listen("health", args.host, args.port, exc)}), flush=True)
            return
        print(json.dumps({"port": runner.addresses[0][1]}), flush=True)
        reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
        loop = asyncio.get_running_loop()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        while line := await reader.readline():  # until the service closes it, or ends
            latest.update(line)
    finally:
        await runner.cleanup()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="tracescore's health lane (started by tracescore serve)")
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--header-timeout", type=float, required=True)
    parser.add_argument("--idle-timeout", type=float, required=True)
    parser.add_argument("--stalled-after", type=float, default=STALLED_AFTER_SECONDS)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # The service decides when the lane ends (by closing its stdin), not a signal to the process group.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    asyncio.run(_serve(args))


if __name__ == "__main__":
    main()
