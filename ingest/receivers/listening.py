"""Listening sockets of the HTTP receivers: aiohttp's TCP site with a connection gate in front
(``ingest.receivers.connections``), its kernel queue and accept batches, and the message when a port
cannot be bound."""

from __future__ import annotations

import asyncio
import errno
import socket
import ssl

from aiohttp import web

from ingest.receivers.connections import ConnectionGate

# Connections the kernel queues before they are accepted (capped by net.core.somaxconn). With the
# default of 100, a burst of clients overflows the queue and a dropped SYN waits a second to be sent
# again: a health probe behind 2,000 stalled uploads took 1.03 s.
LISTEN_BACKLOG = 4096
# Connections asyncio accepts per turn of the event loop (it takes the listen backlog for this, too).
# A flood keeps the queue full: 4,096 set up and closed in one turn held the loop for over a second,
# and every other connection waited for it (measured: half of /healthz probes failed). In turns of
# 64, the loop serves the others in between.
ACCEPT_BATCH = 64


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
            backlog=ACCEPT_BATCH,
            ssl=self._ssl_context,
            # A TLS handshake is part of getting the request's headers in: the same deadline.
            ssl_handshake_timeout=self._gate.header_timeout_s if self._ssl_context else None,
        )
        for listening in self._server.sockets:  # the kernel's queue as long as before
            with socket.fromfd(listening.fileno(), listening.family, listening.type) as same:
                same.listen(LISTEN_BACKLOG)
        self._gate.start()

    async def stop(self) -> None:
        self._gate.stop()
        await super().stop()


# The flag and environment variable that choose each receiver's port, for the "port in use" message.
_PORT_SETTINGS = {
    "OTLP/gRPC": ("--grpc-port", "TRACESCORE_GRPC_PORT", "receiver.grpc_port"),
    "OTLP/HTTP": ("--http-port", "TRACESCORE_HTTP_PORT", "receiver.http_port"),
    "health": ("--health-port", "TRACESCORE_HEALTH_PORT", "receiver.health_port"),
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
