"""Open connections of the OTLP/HTTP receiver, capped: a client that opens too many (or 20,000 slow
uploads) cannot exhaust the service's file descriptors. A connection beyond the cap is closed as soon
as it is accepted; refusals are counted and logged once a minute. The cap sits in front of aiohttp's
own protocol, which sees only the connections let through."""

from __future__ import annotations

import asyncio
import errno
import logging
import resource
import ssl
import time
from collections.abc import Callable

from aiohttp import web

log = logging.getLogger(__name__)

LOG_EVERY_SECONDS = 60.0
MAX_DEFAULT_CAP = 4_096


def default_cap() -> int:
    """Half the process's open-file limit (the rest is for the store, Kafka, logs), at most 4,096."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_DEFAULT_CAP
    return max(16, min(MAX_DEFAULT_CAP, soft // 2))


ProtocolFactory = Callable[[], asyncio.BaseProtocol]


class ConnectionGate:
    def __init__(self, cap: int, on_refused: Callable[[], None]) -> None:
        self.cap = cap
        self.open = 0
        self._on_refused = on_refused
        self._refused_since_log = 0
        self._logged_at = 0.0

    def wrap(self, factory: ProtocolFactory) -> Callable[[], asyncio.Protocol]:
        return lambda: _GatedProtocol(self, factory)

    def refuse(self) -> None:
        self._on_refused()
        self._refused_since_log += 1
        now = time.monotonic()
        if now - self._logged_at >= LOG_EVERY_SECONDS:
            log.warning(
                "OTLP/HTTP refused %d connection(s): %d are open, the cap (receiver.max_connections)",
                self._refused_since_log,
                self.open,
            )
            self._logged_at, self._refused_since_log = now, 0


class _GatedProtocol(asyncio.Protocol):
    """Lets a connection through to the real protocol while the gate has room; closes it otherwise."""

    def __init__(self, gate: ConnectionGate, factory: ProtocolFactory) -> None:
        self._gate = gate
        self._factory = factory
        self._inner: asyncio.Protocol | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if self._gate.open >= self._gate.cap:
            self._gate.refuse()
            transport.abort()  # type: ignore[attr-defined]  # a TCP transport
            return
        self._gate.open += 1
        inner = self._factory()
        assert isinstance(inner, asyncio.Protocol)
        self._inner = inner
        inner.connection_made(transport)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._inner is not None:
            self._gate.open -= 1
            self._inner.connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._inner is not None:
            self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received() if self._inner is not None else None

    def pause_writing(self) -> None:
        if self._inner is not None:
            self._inner.pause_writing()

    def resume_writing(self) -> None:
        if self._inner is not None:
            self._inner.resume_writing()


# Connections the kernel queues before they are accepted (capped by net.core.somaxconn). With the
# default of 100, a burst of clients overflows the queue and a dropped SYN waits a second to be sent
# again: a health probe behind 2,000 stalled uploads took 1.03 s.
LISTEN_BACKLOG = 4096


class GatedSite(web.BaseSite):
    """aiohttp's TCP site, with the connection gate in front of the server's protocol."""

    def __init__(
        self,
        runner: web.BaseRunner,
        host: str,
        port: int,
        gate: ConnectionGate,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        super().__init__(runner, ssl_context=ssl_context)
        self._host = host
        self._requested_port = port
        self._gate = gate

    @property
    def name(self) -> str:
        scheme = "https" if self._ssl_context else "http"
        return f"{scheme}://{self._host}:{self._requested_port}"

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None
        self._server = await asyncio.get_running_loop().create_server(
            self._gate.wrap(server),
            self._host,
            self._requested_port,
            reuse_address=True,
            backlog=LISTEN_BACKLOG,
            ssl=self._ssl_context,
        )


# The flag and environment variable that choose each receiver's port, for the "port in use" message.
_PORT_SETTINGS = {
    "OTLP/gRPC": ("--grpc-port", "TRACESCORE_GRPC_PORT", "receiver.grpc_port"),
    "OTLP/HTTP": ("--http-port", "TRACESCORE_HTTP_PORT", "receiver.http_port"),
}


def cannot_listen(receiver: str, host: str, port: int, exc: BaseException | None) -> str:
    """Why a receiver could not bind, naming the receiver and how to choose another port."""
    flag, variable, key = _PORT_SETTINGS[receiver]
    text = str(exc or "")
    busy = isinstance(exc, OSError) and exc.errno == errno.EADDRINUSE
    busy = busy or "in use" in text.lower() or exc is None or "Failed to bind" in text
    reason = "the port is in use (another tracescore or an OpenTelemetry Collector?)" if busy else text
    return (
        f"{receiver} receiver cannot listen on {host}:{port}: {reason}; "
        f"choose another port with {flag}, {variable} or {key}"
    )
